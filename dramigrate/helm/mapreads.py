"""A template's own read of a device key through a template variable that holds a values resources map, merged or
copied (voxel51's delegated operators: `$mergedResources := merge (dict) ($v.resources | default dict)
($baseTpl.resources | default dict)` in a `range $k, $v := .Values.x.deployments`, then `dig "limits"
"nvidia.com/gpu" "" $mergedResources` decides the telemetry sidecar's env).

The pass-through's DRA values drop the device key from the map and keep its count in `deviceCounts` beside it
(passthrough.count_siblings); the read is rewritten to take the count from there first:
`dig "nvidia.com/gpu" (dig "limits" "nvidia.com/gpu" "" $mergedResources) ($v.deviceCounts | default dict)`. With
the device-plugin values `deviceCounts` is unset and the read is what it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dramigrate.helm.patterns import _grouped, _map_of, _split_top

Path_ = tuple[object, ...]

# `{{ $x := expr }}`, and `{{ with $x := expr }}` (the variable exists only inside the with, where it is expr)
_ASSIGN = re.compile(r"\{\{-?\s*(?:with\s+)?(\$\w+)\s*(:?=)\s*(.+?)\s*-?\}\}")
_RANGE = re.compile(r"\{\{-?\s*range\s+(?:\$\w+\s*,\s*)?(\$\w+)\s*:=\s*(.+?)\s*-?\}\}")
_WORD = re.compile(r"(\$\w*|\$?\.Values)((?:\.[A-Za-z_]\w*)*)")
_MERGES = {"merge": False, "mustMerge": False, "mergeOverwrite": True, "mustMergeOverwrite": True}
_DEFAULT = r'(?:"[^"]*"|\d+|nil|dict|list|false|true|\(\s*(?:dict|list)\s*\))'


class _Bindings:
    """The variables of a template: each assigned once with `:=` (never again with `=`), and each `range` value."""

    def __init__(self, text: str) -> None:
        seen: dict[str, list[str]] = {}
        for m in _ASSIGN.finditer(text):
            seen.setdefault(m.group(1), []).append(m.group(3) if m.group(2) == ":=" else "")
        self.assigned = {var: exprs[0] for var, exprs in seen.items() if len(exprs) == 1 and exprs[0]}
        self.ranges = {m.group(1): m.group(2) for m in _RANGE.finditer(text)}

    def path(self, word: str, depth: int = 0) -> tuple[str, ...] | None:
        """The values path a word reads (`*` for any key of a `range`d map or list): `$v.resources` in `range $k, $v
        := .Values.x.deployments` reads x.deployments.*.resources; None when it is not read from values."""
        m = _WORD.fullmatch(word)
        if m is None or depth > 8:
            return None
        head, fields = m.group(1), tuple(m.group(2).split(".")[1:])
        if head in (".Values", "$.Values"):
            return fields
        if head in self.ranges and head not in self.assigned:
            base = self.path(self.ranges[head].strip(), depth + 1)
            return None if base is None else (*base, "*", *fields)
        if head in self.assigned:
            base = self.path(_map_of(self.assigned[head]), depth + 1)
            return None if base is None else (*base, *fields)
        return None

    def sources(self, var: str) -> list[str]:
        """The words of the maps a variable holds, the one whose keys win first (`merge A B`: A, B;
        `mergeOverwrite A B`: B, A); [] for a variable not built from maps this way."""
        expr = _map_of(self.assigned.get(var, ""))
        inner = _grouped(expr)
        words = _split_top(inner, " ") if inner is not None else [expr]
        if len(words) > 1 and words[0] in _MERGES:
            maps = [w for w in words[1:] if w not in ("dict", "(dict)")]
            return maps[::-1] if _MERGES[words[0]] else maps
        return words if len(words) == 1 and _WORD.fullmatch(words[0]) else []


def _matches(pattern: tuple[str, ...], path: Path_) -> bool:
    return len(pattern) == len(path) and all(p in ("*", str(q)) for p, q in zip(pattern, path, strict=True))


def _reads(var: str, section: str, key: str) -> re.Pattern[str]:
    """A read of the device key from the map in `var`: `dig "<section>" "<key>" <default> $var`,
    `index $var "<section>" "<key>"` or `index $var.<section> "<key>"`."""
    v, s, k = re.escape(var), re.escape(section), re.escape(key)
    return re.compile(
        rf'\bdig\s+"{s}"\s+"{k}"\s+{_DEFAULT}\s+{v}(?![\w.])'
        rf'|\bindex\s+{v}\s+"{s}"\s+"{k}"|\bindex\s+{v}\.{s}\s+"{k}"'
    )


def var_reads(text: str, path: Path_, section: str, key: str, sibling: Callable[[str], str]) -> dict[int, str]:
    """The 0-based lines of `text` that read the device key `key` of `section` of the values map `path` through a
    template variable, each rewritten to take the count from the sibling (`sibling` names it after the map's key:
    `resources` -> `deviceCounts`) of the maps the variable is built from first; a line a fix already rewrote so is
    returned as it is (a second fix)."""
    bindings = _Bindings(text)
    lines = text.splitlines()
    out: dict[int, str] = {}
    for var in bindings.assigned:
        words = [w for w in bindings.sources(var) if (p := bindings.path(w)) is not None and _matches(p, path)]
        if not words:
            continue
        siblings = [re.sub(r"\.([A-Za-z_]\w*)$", lambda m: "." + sibling(m.group(1)), w) for w in words]
        pattern = _reads(var, section, key)
        for n, line in enumerate(lines):
            if pattern.search(line):
                lines[n] = out[n] = pattern.sub(
                    lambda m, s=siblings, t=line: _counted_once(m.group(0), key, s, t), line
                )
    return out


def _counted_once(read: str, key: str, siblings: list[str], line: str) -> str:
    """_counted, or the read as it is where its line already takes it from the siblings (a chart fix rewrote)."""
    counted = _counted(read, key, siblings)
    return read if counted in line else counted


def _counted(read: str, key: str, siblings: list[str]) -> str:
    """The read taking the count from each sibling in turn, the first one's first."""
    for sibling in reversed(siblings):
        read = f'dig "{key}" ({read}) ({sibling} | default dict)'
    return read


_TOYAML_VAR = re.compile(r"(\btoYaml\s+)(\$\w+)(?![\w.$])")


def inline_merged(text: str) -> str:
    """The template with each `toYaml $var` of a variable assigned once a merge of values maps read as `toYaml
    (<that merge>)`, line for line (voxel51's `toYaml $mergedResources` after `$mergedResources := merge (dict)
    ($v.resources | default dict) ($baseTpl.resources | default dict)`): the pass-through finds the maps it takes."""
    if "toYaml" not in text:
        return text
    bindings = _Bindings(text)

    def inline(m: re.Match[str]) -> str:
        expr = bindings.assigned.get(m.group(2), "")
        merged = _grouped(_map_of(expr)) or ""
        return f"{m.group(1)}({expr})" if merged.split(" ", 1)[0] in _MERGES else m.group(0)

    return _TOYAML_VAR.sub(inline, text)


_SCOPE = re.compile(r"\{\{-?\s*(if|with|range|define|block|end)\b")
# a call that changes a map in place (`set $res.limits "nvidia.com/gpu" 1`, `merge $res (dict ...)`): a variable
# given to one holds more than the values map it was set from (mapvars.py takes such maps)
_MUTATES = re.compile(r"\b(?:set|unset|merge|mergeOverwrite|mustMerge|mustMergeOverwrite)\s+\(?\s*(?:index\s+)?(\$\w+)")


def _at_top(text: str, at: int) -> bool:
    """Whether offset `at` of the template is outside every `with`, `range` and `define` (only `if`s around it), where
    `.Values` is the root's."""
    stack: list[str] = []
    for m in _SCOPE.finditer(text, 0, at):
        if m.group(1) == "end":
            if stack:
                stack.pop()
        else:
            stack.append(m.group(1))
    return all(word == "if" for word in stack)


def inline_bound(text: str) -> str:
    """The template with each `toYaml $var` of a variable assigned once, at the template's top, from a values
    resources map (`{{- $resources := .Values.resources }}`, `.Values.x.resources | default dict`, `deepCopy
    .Values.x.resources`) and never changed in place, read as `toYaml $.Values.resources`, line for line: the
    pass-through finds the map it passes through and names its siblings from the root (a variable that holds a
    values object, `$app := .Values.vllm` read as `toYaml $app.resources`, is passthrough._range_variables')."""
    if "toYaml" not in text or ":=" not in text:
        return text
    bindings = _Bindings(text)
    changed = {m.group(1) for m in _MUTATES.finditer(text)}
    rooted: dict[str, str] = {}
    for m in _ASSIGN.finditer(text):
        var, expr = m.group(1), bindings.assigned.get(m.group(1))
        if expr is None or var in changed or not _at_top(text, m.start()):
            continue
        word = _map_of(expr)
        w = _WORD.fullmatch(word)
        if w and w.group(1) in (".Values", "$.Values") and re.search(r"\.[A-Za-z_]*[Rr]esources$", w.group(2)):
            rooted[var] = "$.Values" + w.group(2)

    def inline(m: re.Match[str]) -> str:
        base = rooted.get(m.group(2))
        return m.group(0) if base is None else f"{m.group(1)}{base}"

    return _TOYAML_VAR.sub(inline, text)


_EMPTY_MAP = ("dict", "(dict)")
_FIRST_SET = ("or", "coalesce")  # `or A B`, `coalesce A B`: the first argument that is not empty, as `A | default B`


def _chain(expr: str) -> list[str] | None:
    """The maps a `default` chain tries, the first tried first (`A | default B`, `default B A`, `or A B`, `coalesce A
    B`: A then B), each a field chain; a last `default dict` (or `dict` argument) adds nothing. None for anything
    else."""
    expr = _grouped(expr.strip()) or expr.strip()
    stages = _split_top(expr, "|")
    if len(stages) == 1:
        words = _split_top(expr, " ")
        if len(words) == 3 and words[0] == "default":
            first, then = _chain(words[2]), _chain(words[1]) if words[1] not in _EMPTY_MAP else []
            return None if first is None or then is None else [*first, *then]
        if len(words) >= 3 and words[0] in _FIRST_SET:
            tried = [_chain(w) for w in words[1:-1]] + ([] if words[-1] in _EMPTY_MAP else [_chain(words[-1])])
            return None if None in tried else [w for maps in tried if maps for w in maps]
        return [expr] if (word := _WORD.fullmatch(expr)) and word.group(2) else None  # a map: `$worker.resources`
    out = _chain(stages[0])
    for n, stage in enumerate(stages[1:], 2):
        words = _split_top(stage, " ")
        if out is None or len(words) != 2 or words[0] != "default":
            return None
        if words[1] in _EMPTY_MAP and n == len(stages):
            break
        more = _chain(words[1])
        out = None if more is None else [*out, *more]
    return out


_TOYAML_GROUP = re.compile(r"\btoYaml\s+\(")


def inline_chain(line: str) -> tuple[str, list[str]] | None:
    """The chain of maps a line passes to `toYaml` inline (`toYaml (.Values.server.resources | default
    .Values.defaults.resources)`, `toYaml (or A B)`): the parenthesized expression as written and the maps it tries,
    the first tried first; None for any other line."""
    m = _TOYAML_GROUP.search(line)
    if m is None:
        return None
    depth = 0
    for end in range(m.end() - 1, len(line)):
        depth += 1 if line[end] == "(" else -1 if line[end] == ")" else 0
        if depth == 0:
            break
    else:
        return None
    group = line[m.end() - 1 : end + 1]
    maps = _chain(group)
    return (group, maps) if maps is not None and len(maps) > 1 else None


def default_chains(text: str) -> dict[str, list[str]]:
    """The variables of a template assigned once a `default` chain of maps (nt-platform's firewall workers: `$resources
    := $workerCfg.resources | default $defaults.resources`), each with the maps it tries, the first tried first: the
    variable holds the first of them that is not empty."""
    chains = {var: _chain(expr) for var, expr in _Bindings(text).assigned.items()}
    return {var: words for var, words in chains.items() if words is not None and len(words) > 1}
