"""A library chart's define that fix rewrites for one chart (pattern A in a define the chart includes whole:
converged-computing's flux-apps-helm `kubeflow-template`) is the define of every other chart built on the same
library folder too. Those charts have no `dra:` values block, and a bare `.Values.dra.enabled` fails their render
(`nil pointer evaluating interface {}.enabled`) once their charts/ copy is built from the changed folder. So the
define reads the switch as `and .Values.dra .Values.dra.enabled`: Go templates' `and` stops at its first empty
argument, so without the block the switch is off and nothing after it is read (no other `dra.*` key, no define
only the rewritten chart has, such as its claim template's name): such a chart renders as it did before."""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePosixPath

from dramigrate.helm.rewrite import Change

_WHOLE_IF = re.compile(r"\s*-?\}\}")  # the end of the action right after the switch: `{{- if .Values.dra.enabled }}`


def nil_safe_switch(text: str, key: str = "dra") -> str:
    """`text` with each read of the switch `<key>.enabled` from the root (`.Values`, `$.Values`, `$root.Values`) safe
    for values without `<key>:`: a term of an `and` (or a whole `if` condition) becomes two terms (`and .Values.dra
    .Values.dra.enabled (gt ...)`), any other read `(and .Values.dra .Values.dra.enabled)` (`else if not (and ...)`)."""

    def safe(m: re.Match[str]) -> str:
        both = f"{m[1] or ''}.Values.{key} {m[1] or ''}.Values.{key}.enabled"
        if text.endswith("and ", 0, m.start()):
            return both
        if text.endswith("if ", 0, m.start()) and _WHOLE_IF.match(text, m.end()):
            return f"and {both}"
        return f"(and {both})"

    return re.sub(rf"(?<![\w.)\]])(\$\w*)?\.Values\.{re.escape(key)}\.enabled\b", safe, text)


def library_safe(changes: list[Change], key: str) -> list[Change]:
    """The changes of a chart (not an umbrella's subchart, whose own values.yaml gets the block), with the switch
    read nil-safe (nil_safe_switch) in each file of a chart unpacked in its charts/ (a library's define) and in the
    `file://` folder that chart is built from (an absolute path): other charts may be built on that library."""
    out = []
    for c in changes:
        path = PurePosixPath(c.rel)
        if c.after is not None and (path.is_absolute() or (len(path.parts) > 2 and path.parts[0] == "charts")):
            c = dataclasses.replace(c, after=nil_safe_switch(c.after, key))
        out.append(c)
    return out
