"""One older-cluster check for the claim-template file of the pattern-A rewrite.

Each pod's claim template came with its own check, two lines that fail the render on a cluster older than
Kubernetes 1.34 where that pod takes a claim; a chart with three GPU workloads (triton's multi-node leader, workers
and converter Job) had the same `fail` three times. Where every check sits at the file's top level and what each reads
keeps its value up to the last one (no template variable it reads is set again in between), the checks become one,
in the first one's place (the last one's where the later ones read variables set after it), under `or` of what each
tested:

    {{- if and .Values.dra.enabled (or (gt (int .Values.head.gpu) 0) (gt (int .Values.worker.gpu) 0)) (not ...) }}

The render fails for the same values as before, with the same message.
"""

from __future__ import annotations

import re

from dramigrate.helm.idiomatic import _terms
from dramigrate.helm.rewrite import _actions

_VARIABLE = re.compile(r"\$([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"^\{\{-?\s*\$([A-Za-z_]\w*)\s*:?=")
_BLOCKS = ("if", "with", "range", "define", "block")


def _scan(text: str) -> tuple[dict[int, int], list[tuple[int, str]]]:
    """The block depth at each action's start, and each assignment to a template variable outside a define (offset,
    variable): a define has variables of its own."""
    depths: dict[int, int] = {}
    assigned: list[tuple[int, str]] = []
    stack: list[str] = []
    for start, end, word in _actions(text):
        depths[start] = len(stack)
        if word in _BLOCKS:
            stack.append(word)
        elif word == "end" and stack:
            stack.pop()
        elif not {"define", "block"} & set(stack) and (m := _ASSIGNED.match(text[start:end])):
            assigned.append((start, m.group(1)))
    return depths, assigned


def _either(parts: list[list[str]]) -> list[str]:
    """The terms of an `and` that holds when all terms of one of `parts` hold: those they share, then `or` of the
    rest."""
    shared = [t for t in parts[0] if all(t in p for p in parts)]
    rests = list(dict.fromkeys(tuple(t for t in p if t not in shared) for p in parts))
    if any(not rest for rest in rests):
        return shared
    either = [rest[0] if len(rest) == 1 else f"(and {' '.join(rest)})" for rest in rests]
    return [*shared, either[0] if len(either) == 1 else f"(or {' '.join(either)})"]


def one_check(text: str, served: str, fail: str) -> str:
    """`text` (a claim-template file) with its top-level older-cluster checks (`{{- if and ... (not <served>) }}`, then
    the `fail` line) made one, in the first one's place or the last one's; as it was where a variable a check reads
    is set again between it and the last one."""
    first = re.compile(
        r"^\{\{- if and (?P<cond>.*) \(not " + re.escape(served) + r"\) \}\}\n  " + re.escape(fail) + r"\n", re.M
    )
    depths, assigned = _scan(text)
    checks = [(m.start(), m.end(), _terms(m["cond"])) for m in first.finditer(text) if depths.get(m.start()) == 0]
    if len(checks) < 2:
        return text
    last = checks[-1][0]
    for start, _, terms in checks[:-1]:
        reads = set(_VARIABLE.findall(" ".join(terms)))
        if any(start < at < last and name in reads for at, name in assigned):
            return text
    cond = " ".join(_either([terms for _, _, terms in checks]))
    reads = set(_VARIABLE.findall(cond))
    # the first check's place, where what it reads is all set above it (a file that opens with it reads best)
    at = 0 if all(offset < checks[0][0] for offset, name in assigned if name in reads) else len(checks) - 1
    merged = f"{{{{- if and {cond} (not {served}) }}}}\n  {fail}\n"
    out = text
    for k, (start, end, _) in reversed(list(enumerate(checks))):
        out = out[:start] + (merged if k == at else "") + out[end:]
    return out
