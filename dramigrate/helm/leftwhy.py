"""Device requests the migration of a render leaves as it is: the core reports such a request (a shared device, a
kind whose controller drops claims, a CRD that prunes them) and keeps its device-plugin count. The chart rewrite
follows it: the pods it leaves with the user's values get no DRA branch (left_lines), a switch stays off where a
values key pins the pods to a shared product (shared_guards), and a chart with nothing else says so (nothing_left).
Where the switch still turns such a request into a claim, left_refusal says why the rewrite cannot match the
migration: the object, its container, the migration's reason and what the maintainer can do. Read from the findings
of that migration (Variation.left) and the renders' objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from dramigrate.detect import SHARED_BY_LABEL
from dramigrate.findings import Finding
from dramigrate.helm.prove import ObjKey, _object_name

LEFT_AS_IS = "left as is"  # how the core's findings on a request it keeps end their reason (detect.py)

# values under which the migration takes the request, by the reason it left it (a reason values cannot change: none)
_OTHER_VALUES = {
    SHARED_BY_LABEL: "turn it on only with values that pin the pods to a product that is not shared (no -SHARED/-MIG-)",
}


def left_requests(findings: list[Finding]) -> tuple[Finding, ...]:
    """The findings of a render's migration that leave a device request as it is and say why (`left as is`)."""
    return tuple(f for f in findings if f.resource and not f.fixable and LEFT_AS_IS in f.message)


def nothing_left(findings: list[Finding]) -> str:
    """Why fix writes nothing for a chart whose every device request the migration of the render leaves as it is
    (each with its finding and reason, as `fix -` gives them); '' when it migrates one, or there is none."""
    left = left_requests(findings)
    if not left or any(f.resource and (f.fixable or f.fixed) for f in findings):
        return ""
    rules = ", ".join(dict.fromkeys(f.rule for f in left))
    return (
        f"the manifest migration leaves each of its {len(left)} device request(s) as it is ({rules}: "
        f"{_reason(left[0])}), "
        "so no template changes; each finding says what to do instead"
    )


def left_lines(findings: list[Finding], display: str) -> dict[str, frozenset[int]]:
    """The template lines (1-based) of the device keys the migration of the render leaves as they are, by the
    chart's template (`templates/x.yaml`, its findings named under `display`): the rewrite leaves their pods as
    they are too, on the device plugin."""
    out: dict[str, set[int]] = {}
    for f in left_requests(findings):
        if f.line and f.file.startswith(f"{display}/"):
            out.setdefault(f.file[len(display) + 1 :], set()).add(f.line)
    return {rel: frozenset(lines) for rel, lines in out.items()}


def shared_guards(
    expected: list[Any], reference: Any, rules: Any, sources: Callable[[], Any]
) -> tuple[dict[str, str], dict[str, str]]:
    """Conditions that keep the DRA switch off where the values pin the pods to a product the migration reads as
    shared while the user's values do not (the chart's default `gpu.product: NVIDIA-L40S-SHARED`, the user's file
    NVIDIA-L40S): the rule's own pattern on the values key that writes the product label of the user's render
    (`reference`: its Variation and Render; `sources()`: its values, read only then), so the chart leaves the request
    as `fix -` does, each with that label (only the pods that select on it need the guard); and, per proof label, the
    note saying so. None when no value set of the proof leaves such a request that the user's migrates."""
    from dramigrate.helm.goexpr import values_expr
    from dramigrate.helm.labelleaves import label_leaves
    from dramigrate.helm.values import display

    def shared(v: Any) -> set[tuple[str, str, str]]:
        return {(f.kind, f.namespace, f.name) for f in v.left if SHARED_BY_LABEL in f.message}

    yours = shared(reference[0])
    labels = [v.label for v, *_ in expected if shared(v) - yours]
    if not labels:
        return {}, {}
    leaves = label_leaves(reference[1].stream, rules, sources().merged)
    guards, notes = {}, {}
    for r in rules.resources:
        label, pattern = r.sharing.get("nodeLabel"), r.sharing.get("sharedValuePattern")
        leaf = leaves.get(label) if label and pattern else None
        if leaf is None or not leaf.path:
            continue
        guards[f"(not (regexMatch {json.dumps(pattern.pattern)} (toString {values_expr(leaf.path)})))"] = label
        for at in labels:
            notes[at] = (
                f"{at}: {display(leaf.path)} pins the pods to a {label} value the migration reads as shared, so it "
                "leaves the request on the device plugin, and the DRA switch does too"
            )
    return guards, notes


def left_refusal(left: tuple[Finding, ...], expected: dict[ObjKey, list[Any]], got: dict[ObjKey, list[Any]]) -> str:
    """The reason (a clause ending in `; `) naming the first object the migration left a device request of as it is
    (`left`, its findings) that the rewritten chart renders otherwise; '' when there is none."""
    for f in left:
        key = next((k for k in sorted(expected) if k[1:] == (f.kind, f.namespace, f.name)), None)
        if key is None or expected[key] == got.get(key) or f.resource not in _asked(expected[key]):
            continue
        other = next((f"{text}, " for said, text in _OTHER_VALUES.items() if said in f.message), "")
        return (
            f"{key[1]} {_object_name(key[3])} container {f.container}: the migration of the original render leaves "
            f"its {f.resource} request as it is ({f.rule}: {_reason(f)}), but the DRA switch of the rewritten template "
            f"takes it into a claim all the same: keep the DRA switch off with such values, {other}or migrate it by "
            f"hand as lint's {f.rule} finding describes; "
        )
    return ""


def _reason(f: Finding) -> str:
    """The migration's reason for leaving the request as it is: its finding's message up to `left as is`."""
    return re.split(rf"[;.]\s*{LEFT_AS_IS}", f.message, maxsplit=1)[0]


def _asked(docs: list[Any]) -> set[str]:
    """The extended resources the `limits`/`requests` maps of the objects ask for."""
    from dramigrate.helm.outcome import _extended

    return {name for doc in docs for _, names in _extended(doc) for name in names}
