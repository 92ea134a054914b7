"""Fewer lines for the `if not <dra switch>` guards the chart rewrites put around device-plugin keys.

The rewrites guard each device key (or each map of them) with its own two lines; where the chart already holds the
key under an `if` of its own, or one branch per vendor, that doubles the `if`s a maintainer reads:

    {{- if .Values.worker.gpu.enabled }}            {{- if and .Values.worker.gpu.enabled (not .Values.dra.enabled) }}
    {{- if eq .Values.worker.gpu.type "nvidia" }}    {{- if eq .Values.worker.gpu.type "nvidia" }}
    {{- if not .Values.dra.enabled }}               nvidia.com/gpu: 1
    nvidia.com/gpu: 1                          ->   {{- else if eq .Values.worker.gpu.type "amd" }}
    {{- end }}                                      amd.com/gpu: 1
    {{- else if eq .Values.worker.gpu.type "amd" }}  {{- end }}
    {{- if not .Values.dra.enabled }}               {{- end }}
    amd.com/gpu: 1
    {{- end }}
    {{- end }}
    {{- end }}

Three steps, each rendering the same text for any values (the lines removed are `{{- ...}}` actions alone on their
line, which trim the line end before them and write nothing), applied until none applies:
- a chain of branches each holding only the guard, with the same condition: one guard around the chain;
- an `if` (no `else`) holding only the guard: the guard's condition joins the `if`'s, `and C (not X)`;
- a guard closed and the next line opening one with the same condition (a `limits:` and a `requests:` map): one;
- an `if C` (no `else`) closed and the next line opening a guard `if not X`, C true only while X is (the container's
  `claims:` right before its device keys): one chain, `else` where C is X, else `else if not X`:

    {{- if and .Values.dra.enabled (gt (int .Values.gpus) 0) }}
    claims:
      - name: gpu
    {{- else if not .Values.dra.enabled }}
    limits:
      nvidia.com/gpu: {{ .Values.gpus }}
    {{- end }}

- an `if C` (no `else`) holding only an `if D` (no `else`), both opened on lines the rewrite wrote (the DRA branch
  of a helper's pod around the check that the values list lacks the toleration): one `if and C D`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from dramigrate.helm.rewrite import Change, _actions, _terms

_GUARD = re.compile(r"\{\{- if not (?P<x>.+?) \}\}")
# the switch, or the define that states it with its guards (oneswitch; not a chart's own `.Values.draEnabled`)
_SWITCH = re.compile(r'\bdra\b|\.draEnabled"')
_IF = re.compile(r"\{\{- if (?P<c>.+?) \}\}")
_VARIABLE = re.compile(r"\$\w")  # a template variable (`$.Values` is the root)
_OPENS = ("if", "range", "with", "define", "block")


@dataclass
class _Block:
    """An `if`/`range`/... block: its opening action, its `else` actions and its `end` (start, end offsets)."""

    word: str
    opening: tuple[int, int]
    elses: list[tuple[int, int]] = field(default_factory=list)
    end: tuple[int, int] = (-1, -1)
    children: list[_Block] = field(default_factory=list)
    parent: _Block | None = None


def _blocks(text: str) -> list[_Block] | None:
    """Every block of the template, outermost first; None when they do not nest (a define's text cut in two)."""
    out: list[_Block] = []
    stack: list[_Block] = []
    for start, end, word in _actions(text):
        if word in _OPENS:
            block = _Block(word, (start, end), parent=stack[-1] if stack else None)
            if stack:
                stack[-1].children.append(block)
            stack.append(block)
            out.append(block)
        elif word == "else" and stack:
            stack[-1].elses.append((start, end))
        elif word == "end":
            if not stack:
                return None
            stack.pop().end = (start, end)
    return out if not stack else None


def _alone(text: str, span: tuple[int, int]) -> bool:
    """The action is the only thing on its line and trims only the line end before it (`{{- ... }}`)."""
    start, end = span
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    action = text[start:end]
    return (
        not text[line_start:start].strip()
        and not text[end:line_end].strip()
        and action.startswith("{{-")
        and not action.endswith("-}}")
    )


def _line(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The offsets of the line holding the action, its line end included."""
    start = text.rfind("\n", 0, span[0]) + 1
    end = text.find("\n", span[1])
    return start, len(text) if end < 0 else end + 1


def _guard(text: str, block: _Block) -> str | None:
    """The condition of a guard the rewrite wrote (`if not X`, X reading the DRA switch), alone on its lines."""
    m = _GUARD.fullmatch(text[block.opening[0] : block.opening[1]])
    if not (m and block.word == "if" and not block.elses and _SWITCH.search(m["x"])):
        return None
    if not (_alone(text, block.opening) and _alone(text, block.end)) or text[slice(*block.end)] != "{{- end }}":
        return None
    return m["x"]


def _only(text: str, start: int, stop: int, child: _Block) -> bool:
    """The text from `start` to `stop` is `child` and blank space."""
    return not text[start : child.opening[0]].strip() and not text[child.end[1] : stop].strip()


def _branches(block: _Block) -> list[tuple[int, int]]:
    """The (start, stop) of each branch's body."""
    bounds = [block.opening, *block.elses, block.end]
    return [(bounds[k][1], bounds[k + 1][0]) for k in range(len(bounds) - 1)]


def _sole_guard(text: str, block: _Block, start: int, stop: int) -> tuple[_Block, str] | None:
    """The guard that is the whole of a branch's body, and its condition."""
    inside = [c for c in block.children if start <= c.opening[0] and c.end[1] <= stop]
    if len(inside) != 1 or not _only(text, start, stop, inside[0]):
        return None
    x = _guard(text, inside[0])
    return (inside[0], x) if x else None


def _cut(text: str, spans: list[tuple[int, int]], inserts: dict[int, str] | None = None) -> str:
    """`text` without the lines of the actions at `spans`, with `inserts` (offset -> text) added."""
    edits = [(*_line(text, s), "") for s in spans] + [(at, at, new) for at, new in (inserts or {}).items()]
    for start, stop, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[stop:]
    return text


def _step(text: str, fresh: frozenset[str] = frozenset()) -> str | None:
    """The template with one guard folded, or None when none folds; `fresh`: the lines the rewrite wrote."""
    blocks = _blocks(text)
    if blocks is None:
        return None
    for block in blocks:
        if block.word != "if" or not _alone(text, block.opening) or not _alone(text, block.end):
            continue
        if any(not _alone(text, e) for e in block.elses):
            continue
        guards = [_sole_guard(text, block, *b) for b in _branches(block)]
        if any(g is None for g in guards):
            continue
        conditions = {g[1] for g in guards if g}
        if len(conditions) != 1:
            continue
        (x,) = conditions
        spans = [s for g in guards if g for s in (g[0].opening, g[0].end)]
        if block.elses:  # a chain: one guard around it
            start, _ = _line(text, block.opening)
            _, stop = _line(text, block.end)
            indent = text[start : block.opening[0]]
            inserts = {start: f"{indent}{{{{- if not {x} }}}}\n", stop: f"{indent}{{{{- end }}}}\n"}
            return _cut(text, spans, inserts)
        m = _IF.fullmatch(text[slice(*block.opening)])
        if m and not block.elses and ":=" not in m["c"] and not re.search(r"(?<![=!<>])=(?!=)", m["c"]):
            c = m["c"]
            joined = f"{c} (not {x})" if c.startswith("and ") else f"and {_arg(c)} (not {x})"
            head = text[: block.opening[0]] + f"{{{{- if {joined} }}}}" + text[block.opening[1] :]
            return _cut(head, [(s + len(head) - len(text), e + len(head) - len(text)) for s, e in spans])
    for block in blocks:  # a guard closed, the next line opening one with the same condition
        x = _guard(text, block)
        if x is None or _VARIABLE.search(x.replace("$.", "")):
            continue
        _, stop = _line(text, block.end)
        after = next((b for b in blocks if b.opening[0] >= stop), None)
        if after is None or after.parent is not block.parent or _line(text, after.opening)[0] != stop:
            continue
        if _guard(text, after) == x:
            return _cut(text, [block.end, after.opening])
    return _chained(text, blocks) or _nested(text, blocks, fresh)


def _chained(text: str, blocks: list[_Block]) -> str | None:
    """The template with an `if C` block and the guard on the line after it made one chain (see the module's
    docstring), or None when no such pair is there."""
    for block in blocks:
        m = _IF.fullmatch(text[slice(*block.opening)])
        if not m or block.word != "if" or block.elses or text[slice(*block.end)] != "{{- end }}":
            continue
        if not (_alone(text, block.opening) and _alone(text, block.end)):
            continue
        start, stop = _line(text, block.end)
        after = next((b for b in blocks if b.opening[0] >= stop), None)
        if after is None or after.parent is not block.parent or _line(text, after.opening)[0] != stop:
            continue
        x = _guard(text, after)
        # X read again after C's body ran: a template variable the body sets could change it (`$.Values` is the root)
        if x is None or _VARIABLE.search(x.replace("$.", "")) or not set(_conjuncts(x)) <= set(_conjuncts(m["c"])):
            continue
        word = "else" if _conjuncts(x) == _conjuncts(m["c"]) else f"else if not {x}"
        _, after_stop = _line(text, after.opening)
        return text[:start] + text[start : block.end[0]] + f"{{{{- {word} }}}}\n" + text[after_stop:]
    return None


def _nested(text: str, blocks: list[_Block], fresh: frozenset[str]) -> str | None:
    """The template with an `if C` holding only an `if D`, both opened on lines in `fresh`, made one `if and C D`; or
    None when there is none (a chart's own nested `if`s stay as the chart wrote them)."""
    for block in blocks:
        if block.word != "if" or block.elses or len(block.children) != 1:
            continue
        inner = block.children[0]
        if inner.word != "if" or inner.elses or not _only(text, block.opening[1], block.end[0], inner):
            continue
        pair = (block, inner)
        if not all(
            _alone(text, b.opening) and _alone(text, b.end) and text[slice(*b.end)] == "{{- end }}" for b in pair
        ):
            continue
        if not all(text[slice(*_line(text, b.opening))].strip() in fresh for b in pair):
            continue
        conditions = [m["c"] for b in pair if (m := _IF.fullmatch(text[slice(*b.opening)]))]
        if len(conditions) != 2 or any(":=" in c or re.search(r"(?<![=!<>])=(?!=)", c) for c in conditions):
            continue
        parts = [t if len(_terms(t)) == 1 else f"({t})" for c in conditions for t in _conjuncts(c)]
        head = text[: block.opening[0]] + f"{{{{- if and {' '.join(parts)} }}}}" + text[block.opening[1] :]
        shift = len(head) - len(text)
        return _cut(
            head, [(inner.opening[0] + shift, inner.opening[1] + shift), (inner.end[0] + shift, inner.end[1] + shift)]
        )
    return None


def _conjuncts(cond: str) -> list[str]:
    """The parts of a condition that must all be true (`and .a (gt .b 0)` -> `.a`, `gt .b 0`), parentheses around
    the whole and around each part dropped (`(include "x.draEnabled" .)` as a part and as a whole condition)."""
    cond = _bare(cond)
    terms = _terms(cond)
    return [_bare(t) for t in terms[1:]] if terms[:1] == ["and"] else [cond]


def _bare(term: str) -> str:
    """The term without parentheses around the whole of it."""
    while term.startswith("(") and _terms(term) == [term]:
        term = term[1:-1]
    return term


def _arg(expr: str) -> str:
    """An expression as a function argument: parenthesised unless it is one term."""
    return expr if re.fullmatch(r"[\w.$]+", expr) else f"({expr})"


def fold_guards(text: str, before: str = "") -> str:
    """The template with the rewrite's guards folded where they can be (see the module's docstring); `before`: the
    template as the chart had it."""
    if "\r" in text:
        return text
    old = {line.strip() for line in before.splitlines()}
    fresh = frozenset(line.strip() for line in text.splitlines() if line.strip() not in old)
    for _ in range(200):
        folded = _step(text, fresh)
        if folded is None:
            return text
        text = folded
    return text


def folded(changes: list[Change]) -> list[Change]:
    """The changes with the guards of each rewritten template folded."""
    out = []
    for c in changes:
        path = PurePosixPath(c.rel)
        if "templates" in path.parts and path.suffix in (".yaml", ".yml", ".tpl") and c.after is not None:
            c = Change(c.rel, c.before, fold_guards(c.after, c.before or ""))
        out.append(c)
    return out
