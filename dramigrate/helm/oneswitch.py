"""The DRA switch stated once where values keep it off (idiomatic.kind_guards, leftwhy.shared_guards).

Each guard joins the switch in every condition the rewrite writes, `and .Values.dra.enabled (not (regexMatch
"-(SHARED|...)$" (toString .Values.gpu.product))) (gt (int .Values.x.gpu) 0)`, in each template and each claim
template. A chart maintainer states it once: a define in the claim-template file says whether DRA is on, and every
condition includes it, `and (include "<chart>.draEnabled" .) (gt (int .Values.x.gpu) 0)` (`$` where `.` is rebound).
The define renders `true` or nothing, so each condition is true for exactly the values it was before."""

from __future__ import annotations

import dataclasses

from dramigrate.helm.goexpr import and_all, from_root
from dramigrate.helm.rewrite import Change

SWITCH = ".Values.dra.enabled"


def define_name(chart: str) -> str:
    return f"{chart}.draEnabled"


def stated_once(
    chart: str, changes: list[Change], guards: tuple[str, ...], claim_file: str, taken: str
) -> list[Change]:
    """`changes` with the switch and its `guards` read through one define, written at the end of `claim_file` (the
    rel of the rewrite's claim-template file, among `changes`); `changes` as they are without guards, or where the
    chart's own text (`taken`) names a define so already."""
    name = define_name(chart)
    if not guards or f'"{name}"' in taken:
        return changes
    replaced: list[Change] = []
    for c in changes:
        after = c.after
        for root, dot in (("", "."), ("$", "$")):
            terms = " ".join(from_root(t) if root else t for t in (SWITCH, *guards))
            call = f'(include "{name}" {dot})'
            after = after.replace(f"not (and {terms})", f"not {call}")  # the device-plugin branch's `else if`
            after = after.replace(f"if and {terms} }}}}", f"if {call} }}}}")  # the switch and its guards alone
            after = after.replace(terms, call)
        if c.rel == claim_file:
            after += (
                f'{{{{- define "{name}" -}}}}\n'
                f"{{{{- if {and_all(SWITCH, *guards)} }}}}true{{{{ end }}}}\n"
                "{{- end }}\n"
            )
        replaced.append(dataclasses.replace(c, after=after))
    return replaced
