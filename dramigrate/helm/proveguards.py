"""The proof's value sets that turn the `if`s around a chart's device requests each way: a branch the rewrite
touched is rendered, not only the one the chart's values pick (lmenta's `if eq .Values.model.backend "ollama"`
writes the device key in both branches, and the values pick one).

Each `if`/`else if` chain around a device line (a device key, a `resources` action, a pod's `tolerations:`) is read
as a small condition: `.Values` keys taken as true or false, `eq`/`ne` of a key with literals, and `and`, `or`,
`not` of those. For each branch, a value set makes that branch's condition true and the earlier ones false: a
compared key is set to the literal, or to something else; a switch is flipped. Anything else in a condition (a
helper, a pipeline) is left as the values have it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

from dramigrate.helm.helper import Block, blocks, enclosing
from dramigrate.helm.patterns import _LITERAL_KEY, _grouped, _split_top, literal_entries
from dramigrate.helm.values import display, get_path, twin_path, with_paths
from dramigrate.rules import RuleSet

Path_ = tuple[str, ...]
Assignment = dict[Path_, Any]
Node = tuple[Any, ...]  # ("field", path) | ("lit", value) | ("call", name, [nodes]); None: not read

MAX_FLIPS = 6  # guard value sets a chart adds to its proof at most (each costs renders of both charts)

_VALUES_FIELD = re.compile(r"\$?\.Values((?:\.[A-Za-z_][\w-]*)+)")
_ROOTED_FIELD = re.compile(r"\$\.Values((?:\.[A-Za-z_][\w-]*)+)")
_DEVICE_LINE = re.compile(r"\{\{[^}]*[Rr]esources[^}]*\}\}|^\s*tolerations:|^\s*(?:-\s+)?[\"']?\{\{[^}]*\}\}[^:]*:\s")
_CALLS = ("and", "or", "not", "eq", "ne")
OTHER = "other"  # the string a compared key is set to so that no literal of the chart matches


def _parse(expr: str, rooted: bool) -> Node | None:
    """A condition as a tree, None where it is more than keys, literals and and/or/not/eq/ne. `rooted`: the dot
    is the chart's root (outside `with` and `range`), so `.Values.x` is a values key; else only `$.Values.x` is."""
    expr = expr.strip()
    if (inner := _grouped(expr)) is not None:
        return _parse(inner, rooted)
    if len(_split_top(expr, "|")) > 1:
        return None
    words = _split_top(expr, " ")
    if len(words) == 1:
        m = (_VALUES_FIELD if rooted else _ROOTED_FIELD).fullmatch(words[0])
        if m:
            return ("field", tuple(m.group(1).lstrip(".").split(".")))
        return _literal(words[0])
    if words and words[0] in _CALLS:
        return ("call", words[0], [_parse(w, rooted) for w in words[1:]])
    return None


def _literal(word: str) -> Node | None:
    if len(word) >= 2 and word[0] == word[-1] == '"':
        return ("lit", word[1:-1])
    if word in ("true", "false"):
        return ("lit", word == "true")
    if re.fullmatch(r"-?\d+", word):
        return ("lit", int(word))
    return None


def _truthy(value: Any) -> bool:
    return bool(value) if value is not None else False


def _compared(args: list[Node | None]) -> tuple[Path_, list[Any]] | None:
    """The key and the literals of an `eq`/`ne` (either order; `eq .Values.x "a" "b"` is true for either)."""
    fields = [a for a in args if a is not None and a[0] == "field"]
    literals = [a[1] for a in args if a is not None and a[0] == "lit"]
    if len(fields) != 1 or not literals or len(fields) + len(literals) != len(args):
        return None
    return fields[0][1], literals


@dataclass
class _Chart:
    values: dict[str, Any]
    known: dict[Path_, list[Any]] = field(default_factory=dict)  # each compared key's literals, over the chart
    texts: list[str] = field(default_factory=list)
    maps: dict[Path_, bool] = field(default_factory=dict)
    counts: set[Path_] = field(default_factory=set)  # the keys a device key of the templates writes as its count

    def a_map(self, path: Path_) -> bool:
        """Whether the templates read the key as a map or list (`.Values.x.y`, `toYaml .Values.x`, `range`): a key
        the values leave unset is then no switch to turn on."""
        if path not in self.maps:
            name = re.escape(".Values." + ".".join(path))
            deeper = re.compile(rf"{name}\.\w|(toYaml|toJson|range|index|hasKey)[^}}]*{name}\b|{name}\s*\|\s*toYaml")
            self.maps[path] = any(deeper.search(t) for t in self.texts)
        return self.maps[path]


def _other(literals: list[Any], chart: _Chart, path: Path_) -> Any:
    """A value of the key that none of `literals` equals: another literal the chart compares it with, else one of
    the literals' type no branch names."""
    for value in chart.known.get(path, []):
        if value not in literals and type(value) is type(literals[0]):
            return value
    first = literals[0]
    if isinstance(first, bool):
        return not first
    if isinstance(first, int):
        return max(v for v in literals if isinstance(v, int)) + 1
    return OTHER


def _solve(node: Node | None, want: bool, chart: _Chart) -> Assignment | None:
    """The keys to set so that the condition is `want` ({} when it is already, or cannot be read: left as is);
    None when no setting is found."""
    if node is None or node[0] == "lit":
        return {}
    if node[0] == "field":
        current = get_path(chart.values, node[1])
        if _truthy(current) == want:
            return {}
        if isinstance(current, bool) or (current is None and not (want and chart.a_map(node[1]))):
            return {node[1]: want}
        if isinstance(current, (int, float)):
            return {node[1]: 1 if want else 0}
        if want:  # a device count left empty (a Ray head's `gpuCount: ""`): one device
            return {node[1]: "1"} if current == "" and node[1] in chart.counts else None
        return {node[1]: "" if isinstance(current, str) else None}  # a map or list off: null (Helm drops the key)
    name, args = node[1], node[2]
    if name == "not" and len(args) == 1:
        return _solve(args[0], not want, chart)
    if name in ("eq", "ne"):
        found = _compared(args)
        if found is None:
            return {}
        path, literals = found
        holds = (get_path(chart.values, path) in literals) == (name == "eq")
        if holds == want:
            return {}
        equal = want == (name == "eq")
        return {path: literals[0] if equal else _other(literals, chart, path)}
    if name in ("and", "or") and args:
        if (name == "and") == want:  # `and` true and `or` false need every part so; else one part will do
            return _every(args, want, chart)
        parts = [_solve(a, want, chart) for a in args]
        return min((p for p in parts if p is not None), key=len, default=None)
    return {}


def _every(args: list[Node | None], want: bool, chart: _Chart) -> Assignment | None:
    """The keys to set so that each of `args` is `want`: each part solved with the settings of the parts before it,
    the parts in their order or else the other way round (`not (and .gpu.enabled (eq .gpu.type "nvidia"))` and then
    `and .gpu.enabled (eq .gpu.type "intel")`: the second's type, not the first's switch off), and the settings
    checked against every part, as far as a part can be read."""
    for order in (args, args[::-1]):
        out: Assignment = {}
        for a in order:
            part = _solve(a, want, _with(chart, out))
            if part is None or any(k in out and out[k] != v for k, v in part.items()):
                break
            out.update(part)
        else:
            values = _with(chart, out).values
            if all(_holds(a, values) in (want, None) for a in args):
                return out
    return None


def _with(chart: _Chart, settings: Assignment) -> _Chart:
    return dataclasses.replace(chart, values=with_paths(chart.values, settings.items()))


def _holds(node: Node | None, values: dict[str, Any]) -> bool | None:
    """Whether the condition is true with `values`; None where it cannot be read."""
    if node is None:
        return None
    if node[0] in ("field", "lit"):
        return _truthy(get_path(values, node[1]) if node[0] == "field" else node[1])
    name, args = node[1], node[2]
    if name == "not" and len(args) == 1:
        inner = _holds(args[0], values)
        return None if inner is None else not inner
    if name in ("eq", "ne"):
        found = _compared(args)
        return None if found is None else (get_path(values, found[0]) in found[1]) == (name == "eq")
    parts = [_holds(a, values) for a in args]
    if name == "and" and args:
        return False if False in parts else None if None in parts else True
    if name == "or" and args:
        return True if True in parts else None if None in parts else False
    return None


def _literals(node: Node | None, out: dict[Path_, list[Any]]) -> None:
    if node is None or node[0] != "call":
        return
    if node[1] in ("eq", "ne") and (found := _compared(node[2])) is not None:
        out.setdefault(found[0], []).extend(v for v in found[1] if v not in out.get(found[0], []))
    for arg in node[2]:
        _literals(arg, out)


def _device_lines(text: str, rules: RuleSet) -> list[int]:
    """The lines of a template that write a device request or what the rewrite puts beside one: a device key (or an
    entry added to a map, `dict "nvidia.com/gpu" 1`; not a toleration's `dict "key" "nvidia.com/gpu"`), a `resources`
    action, a templated key (a device name from values), a pod's `tolerations:`; none in a template that writes no
    device key and no values `resources`."""
    lines = text.splitlines()

    def device(name: str) -> bool:
        return rules.is_device_candidate(name) and rules.lookup(name) is not None

    keys = [
        i
        for i, line in enumerate(lines)
        if ((m := _LITERAL_KEY.match(line)) and device(m.group(2)))
        or any(device(name) for name in literal_entries(line))
    ]
    near = [i for i, line in enumerate(lines) if _DEVICE_LINE.search(line)]
    if not keys and not any("esources" in lines[i] for i in near):
        return []
    return sorted({*keys, *near})


def _device_counts(texts: list[str], rules: RuleSet) -> set[Path_]:
    """The values keys that a literal device key of the templates writes as its count (`nvidia.com/gpu: "{{
    .Values.head.gpuCount }}"`)."""
    return {
        tuple(m.group(1).lstrip(".").split("."))
        for text in texts
        for line in text.splitlines()
        if (key := _LITERAL_KEY.match(line)) and rules.lookup(key.group(2))
        for m in [_VALUES_FIELD.search(key.group(3))]
        if m
    }


def _requirements(all_blocks: list[Block], at: int) -> list[tuple[list[Node | None], list[list[Node | None]]]]:
    """Each `if` chain around line `at`, outermost first: the conditions of the branch the line sits in (the earlier
    branches' negated), and those of each other branch (the chain's last, with no `else`: every branch false)."""
    out = []
    rooted = True
    for b in enclosing(all_blocks, at):
        if b.word in ("with", "range"):
            rooted = False
        if b.word != "if" or b.chained_with:
            continue
        chain = _chain(b, rooted)
        taken = sum(1 for line, _ in b.branches if line < at)
        ways = [_branch(chain, k) for k in range(len(chain) + 1)]  # the last: the `else`, or no branch
        out.append((ways[taken], [w for k, w in enumerate(ways) if k != taken]))
    return out


def _chain(b: Block, rooted: bool) -> list[Node | None]:
    """The conditions of an `if` and its `else if`s (an `else` has none)."""
    return [_parse(c, rooted) for c in [b.cond, *(c for _, c in b.branches if c is not None)]]


def _branch(chain: list[Node | None], k: int) -> list[Node | None]:
    """What renders branch k of a chain: the earlier conditions false, its own true (k past the conditions: else)."""
    nots: list[Node | None] = [("call", "not", [c]) for c in chain[:k]]
    return nots + chain[k : k + 1]


def guard_flips(texts: list[str], merged: dict[str, Any], rules: RuleSet) -> list[tuple[str, dict[str, Any]]]:
    """The value sets (label, values) that render the branches around each device line of the templates that the
    values do not render, at most MAX_FLIPS: each branch of each chain (the chains outside it as the device line
    needs them), then each key a chain compares set to each of its literals and to something else; when there are
    more, one value set more renders each device line's branch at once (where their settings agree)."""
    wanted: list[list[Node | None]] = []
    reaches: list[list[Node | None]] = []
    for text in texts:
        lines = _device_lines(text, rules)
        all_blocks = blocks(text) if lines else []
        for at in lines:
            outer: list[Node | None] = []
            for taken, others in _requirements(all_blocks, at):
                wanted += [outer + taken, *(outer + other for other in others)]
                outer = outer + taken
            reaches.append(outer)
    chart = _Chart(merged, texts=texts, counts=_device_counts(texts, rules))
    for conditions in wanted:
        for c in conditions:
            _literals(c, chart.known)
    found: list[Assignment] = [s for c in wanted if (s := _solve(("call", "and", c), True, chart))]
    for conditions in reaches:
        compared: dict[Path_, list[Any]] = {}
        for c in conditions:
            _literals(c, compared)
        reach = _solve(("call", "and", conditions), True, chart) or {}
        for path, literals in compared.items():
            # each literal, and (where the values match one) another value
            other = [_other(literals, chart, path)] if get_path(merged, path) in literals else []
            found += [{**reach, path: v} for v in [*literals, *other]]
    out, seen = _value_sets(merged, found)
    if len(out) > MAX_FLIPS:  # the branches past the limit in one more value set: each device line's branch at once
        # (a chart with one template per serving profile, each under its own switch, has more of them than flips)
        together = _together([_solve(("call", "and", c), True, chart) for c in reaches])
        changed = _applied(merged, together)
        if json.dumps(changed, sort_keys=True, default=str) not in seen:
            label = _label({p: v for p, v in together.items() if get_path(merged, p) != v})
            return [*out[:MAX_FLIPS], (f"{label} (each branch around a device line at once)", changed)]
    return out[:MAX_FLIPS]


def _value_sets(
    merged: dict[str, Any], found: list[Assignment], note: str = ""
) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
    """Each assignment as a value set (label, values), once, leaving out those the values already are; and the values
    seen (as JSON)."""
    out: list[tuple[str, dict[str, Any]]] = []
    seen = {json.dumps(merged, sort_keys=True, default=str)}
    for settings in found:
        changed = _applied(merged, settings)
        key = json.dumps(changed, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append((_label({p: v for p, v in settings.items() if get_path(merged, p) != v}) + note, changed))
    return out, seen


def _applied(merged: dict[str, Any], settings: Assignment) -> dict[str, Any]:
    """The values with each key of `settings` set (a request and its limit change together), for reading."""
    pairs = [(p, v) for path, v in settings.items() for p in (path, twin_path(merged, path)) if p is not None]
    return with_paths(merged, pairs)


def _together(settings: list[Assignment | None]) -> Assignment:
    """The settings merged in order, each one that agrees with those before it on every key it sets."""
    out: Assignment = {}
    for one in settings:
        if one is not None and all(out.get(p, v) == v for p, v in one.items()):
            out.update(one)
    return out


def _label(settings: Assignment) -> str:
    return ", ".join(
        f"{display(path)} {'flipped to' if isinstance(value, bool) else 'changed to'} {json.dumps(value)}"
        for path, value in settings.items()
    )


_QUOTED = re.compile(r'"([^"\s]+/[^"\s]+)"')
VENDOR = "a vendor of the device choice"  # the label's tail of a value set vendor_flips adds


def _named_devices(line: str, merged: dict[str, Any], rules: RuleSet) -> set[str]:
    """The device resources a template line names: a literal key or quoted name, or a values key whose value is one
    (`{{- .Values.gpu.amdResource }}` with `amdResource: amd.com/gpu`)."""

    def device(name: Any) -> bool:
        return isinstance(name, str) and rules.is_device_candidate(name) and rules.lookup(name) is not None

    names = set(_QUOTED.findall(line))
    if m := _LITERAL_KEY.match(line):
        names.add(m.group(2))
    read = (get_path(merged, tuple(f.group(1).lstrip(".").split("."))) for f in _VALUES_FIELD.finditer(line))
    return {n for n in [*names, *read] if device(n)}


def _choice_lines(text: str, all_blocks: list[Block], merged: dict[str, Any], rules: RuleSet) -> list[int]:
    """The lines inside an `if`/`else if` chain whose branches name different device resources (a vendor choice of
    the device key, perhaps in a helper that maps the choice to a values key), each naming one."""
    lines = text.splitlines()
    named = {i: found for i, line in enumerate(lines) if (found := _named_devices(line, merged, rules))}
    out: set[int] = set()
    for b in all_blocks:
        if b.word != "if" or not b.branches or b.chained_with:
            continue
        bounds = [b.start, *(at for at, _ in b.branches), b.end]
        spans = [[i for i in named if lo < i < hi] for lo, hi in zip(bounds, bounds[1:], strict=False)]
        per_branch = [set().union(*(named[i] for i in span)) for span in spans]
        if sum(1 for s in per_branch if s) > 1 and len(set().union(*per_branch)) > 1:
            out |= {i for span in spans for i in span}
    return sorted(out)


def vendor_flips(texts: list[str], merged: dict[str, Any], rules: RuleSet) -> list[tuple[str, dict[str, Any]]]:
    """The value sets (label, values) that render each branch of a vendor choice of the device key (ericzadara's
    `gpuResourceKey`: `if eq .Values.gpu.type "nvidia"` ... `else if eq .Values.gpu.type "amd"`, each branch a
    values key naming another device resource) that the values do not render: the proof renders each with the DRA
    switch on, so a DRA branch that covers only the vendor the values pick cannot pass."""
    found: list[Assignment] = []
    chart = _Chart(merged, texts=texts, counts=_device_counts(texts, rules))
    for text in texts:
        all_blocks = blocks(text)
        for at in _choice_lines(text, all_blocks, merged, rules):
            conditions = [c for taken, _ in _requirements(all_blocks, at) for c in taken]
            if (settings := _solve(("call", "and", conditions), True, chart)) is not None:
                found.append(settings)
    return _value_sets(merged, found, f" ({VENDOR})")[0]
