"""A library chart's define that fix rewrites for one chart (pattern A in a define the chart includes whole:
converged-computing's flux-apps-helm `kubeflow-template`) is the define of every other chart built on the same
library folder too. Those charts have no `dra:` values block, and a bare `.Values.dra.enabled` fails their render
(`nil pointer evaluating interface {}.enabled`) once their charts/ copy is built from the changed folder. So the
define reads the switch as `and .Values.dra .Values.dra.enabled`: Go templates' `and` stops at its first empty
argument, so without the block the switch is off and nothing after it is read (no other `dra.*` key, no define
only the rewritten chart has, such as its claim template's name): such a chart renders as it did before. The proof
checks it with the chart's own value sets: the original chart with only the library's files rewritten (no `dra:`
block, no claim template) renders byte for byte what the original did (others_unchanged)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from dramigrate.helm.outcome import _not_identical
from dramigrate.helm.renderpool import agains
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


def shared(rel: str) -> bool:
    """Whether the change `rel` is to a chart other charts may be built on: a file of a chart unpacked in the chart's
    charts/ (a library's define), or of the `file://` folder that chart is built from (an absolute path)."""
    path = PurePosixPath(rel)
    return path.is_absolute() or (len(path.parts) > 2 and path.parts[0] == "charts")


def library_safe(changes: list[Change], key: str) -> list[Change]:
    """The changes of a chart (not an umbrella's subchart, whose own values.yaml gets the block), with the switch
    read nil-safe (nil_safe_switch) in each file other charts may be built on (shared)."""
    return [
        dataclasses.replace(c, after=nil_safe_switch(c.after, key)) if c.after is not None and shared(c.rel) else c
        for c in changes
    ]


def others_unchanged(root: Path, expected: list[Any], library_only: Callable[[Any], Any]) -> str:
    """Why a chart built on the rewritten library without the `dra:` block would not render as before ('' when it
    would), read from this chart: `library_only(options)` renders it with only the library's files rewritten, which
    must be byte-identical to the original's render of each value set of `expected` (the proof's)."""
    seconds = agains(root, [v.options for v, *_ in expected])
    for (v, original, *_), again in zip(expected, seconds, strict=True):
        new = library_only(v.options)
        if original.error and new.error:
            continue
        case = f"with {v.label} and only the library's files rewritten (a chart built on it without the dra: block)"
        if new.error:
            return f"{case}, the chart does not render: {new.error}"
        if why := _not_identical(case, original, again, new):
            return why
    return ""
