"""Containers a template writes whole from values, their resources map inside: a list item (`- {{- toYaml . | nindent
8 }}` in a `range` over `$app.initContainers`: NVIDIA's NVCF charts) or a map variable written as a container's fields
(`{{- toYaml $container_config | nindent 6 }}` after `- name:`, the variable set to `merge ($custom.container |
default dict) ($generic.container | default dict)`: Wikimedia's KServe charts).

The pass-through puts the pod's resourceClaims and the toleration beside the container's resources map in the DRA
values, so inside the map written whole: the template writes it without them (`omit`, passthrough._omit_siblings) and
gathers them for the pod. This module finds such lines and the values paths of the map they write.

Where the pod's keys are a values map written whole too (`{{- toYaml $final_predictor_config | nindent 4 }}` at the
predictor's keys), the DRA values need no template change at all: the container's claims go in its map's
`resources`, the pod's resourceClaims and toleration in the pod's map (whole_places, for libvalues.Placer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dramigrate.helm.patterns import WHOLE_FIELDS, WHOLE_ITEM
from dramigrate.helm.templatelines import bare, enclosing_scope, is_control, item_key, line_indent, parent_line
from dramigrate.helm.values import Path_

Words = list[str]  # a values path, `*` for any key or index (a `range` item)

_RANGE = re.compile(r"\{\{-?\s*range\s+(?:\$\w+\s*,\s*)?(\$\w+)\s*:=\s*(.+?)\s*-?\}\}")


def whole_container(
    lines: list[str], i: int, ranges: dict[str, tuple[Words, int]]
) -> tuple[list[Words], int, str] | None:
    """When line i writes a container, or a container's fields, whole from a values map: the values paths that map may
    come from (several for a merge), the line of the `range` over the containers that sets it (-1 if none) and the
    map as the line reads it (`.`, `$c`, `$container_config`); else None. `ranges`: the template's variables set from
    values (passthrough._range_variables)."""
    if m := WHOLE_ITEM.match(lines[i]):
        if m.group(1) != ".":
            words, ranged = ranges.get(m.group(1), ([], -1))
            return ([words], ranged, m.group(1)) if ranged >= 0 else None
        scope = enclosing_scope(lines, i)
        if scope is None or scope[1] != "range":
            return None
        over = re.fullmatch(r"(?:\$\w*\s*(?:,\s*\$\w*\s*)?:=\s*)?(.+)", scope[2].strip())
        found = origins(lines, scope[0], over.group(1) if over else "")
        return ([[*w, "*"] for w in found], scope[0], ".") if found else None
    m = WHOLE_FIELDS.match(lines[i])
    if m is None or not _container_fields(lines, i, int(m.group(3))):
        return None
    var = m.group(1) or m.group(2)
    found = origins(lines, i, var)
    return (found, -1, var) if found else None


def dot_map(lines: list[str], i: int) -> str:
    """What `.` is at line i when a `with` sets it (`{{- with .Values.container }}`): that expression; else ""."""
    scope = enclosing_scope(lines, i)
    return scope[2] if scope and scope[1] == "with" else ""


def _container_fields(lines: list[str], i: int, indent: int) -> bool:
    """Whether line i, indented `indent`, writes keys of the list item (a container) that starts above it, two
    columns to the left."""
    for j in range(i - 1, -1, -1):
        if is_control(lines[j]):
            continue
        if line_indent(lines[j]) < indent:
            return line_indent(lines[j]) == indent - 2 and lines[j].lstrip().startswith("- ")
    return False


def origins(lines: list[str], at: int, expr: str, depth: int = 0) -> list[Words]:
    """The values paths `expr`, read at line `at`, may hold: through `| default dict`, `merge`/`mergeOverwrite` (each
    map merged), `get $x "k"`, `index $x "k"`, `$x.field` and the assignments (`:=`, `=`) and `range`s above that set
    a variable; [] for anything else (a `dict` the template builds, a helper's output)."""
    expr = _unwrapped(re.sub(r"\s*\|\s*default\s+(?:\(dict\)|dict)\s*$", "", _unwrapped(expr.strip())))
    if depth > 8 or not expr:
        return []
    if expr == ".":
        return origins(lines, at, dot_map(lines, at), depth + 1) if dot_map(lines, at) else []
    words = _tokens(expr)
    if words and words[0] in ("merge", "mergeOverwrite"):
        return [w for arg in words[1:] for w in origins(lines, at, arg, depth + 1)]
    if len(words) >= 3 and words[0] in ("get", "index") and all(re.fullmatch(r'"[^"]+"', w) for w in words[2:]):
        return [[*w, *(k.strip('"') for k in words[2:])] for w in origins(lines, at, words[1], depth + 1)]
    path = re.fullmatch(r"(\$?)(\w*)((?:\.[\w-]+)*)", expr)
    if len(words) != 1 or path is None:
        return []
    fields = [f for f in path.group(3).split(".") if f]
    if not path.group(2):
        return [fields[1:]] if fields[:1] == ["Values"] else []  # `$.Values.x`, `.Values.x`
    if not path.group(1):
        return []  # a function's name (`dict`)
    var = f"${path.group(2)}"
    sets = re.compile(rf"\{{\{{-?\s*{re.escape(var)}\s*:?=\s*(.+?)\s*-?\}}\}}")
    out: list[Words] = []
    for j in range(at, -1, -1):
        for m in _RANGE.finditer(lines[j]):
            if m.group(1) == var:
                out += [[*w, "*"] for w in origins(lines, j, m.group(2), depth + 1)]
        for m in sets.finditer(lines[j]):
            out += origins(lines, j - 1, m.group(1), depth + 1)
    return [list(w) for w in dict.fromkeys(tuple([*w, *fields]) for w in out)]  # an `if`/`else` sets it twice


def _unwrapped(expr: str) -> str:
    """The expression without parentheses around all of it."""
    while expr.startswith("(") and expr.endswith(")") and _closing(expr) == len(expr) - 1:
        expr = expr[1:-1].strip()
    return expr


def _closing(expr: str) -> int:
    """Where the parenthesis that opens `expr` closes."""
    depth = 0
    for n, ch in enumerate(expr):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return n
    return -1


def _tokens(expr: str) -> list[str]:
    """The expression's words at the top level: a parenthesised argument or a quoted string is one word."""
    out, depth, word, quoted = [], 0, "", False
    for ch in expr:
        if ch == '"':
            quoted = not quoted
        if not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        if ch.isspace() and not depth and not quoted:
            if word:
                out.append(word)
            word = ""
            continue
        word += ch
    return [*out, word] if word else out


def whole_places(root: Path, rels: Iterable[str], counts: list[Path_]) -> dict[str, Any] | None:
    """The values places (libvalues.Placer's) of pods whose container fields and pod keys the templates write whole
    from values maps: each device count (`counts`, lint's perturbation) in the `resources` of a container map written
    whole (`toYaml $container_config`), whose pod writes its keys whole from a map of the same values item
    (`toYaml $final_predictor_config`, set from `merge ($custom.config | default dict) ($generic.config | default
    dict)`). The pattern's `*` keys are named by position (`<k1>`), so the pod's map binds the container's item; a map
    of the pod's merge with no `*` is the defaults every pod takes. None for another shape, or two."""
    from dramigrate.helm.passthrough import _range_variables

    found: set[tuple[str, str, str]] = set()
    for rel in rels:
        text = (root / rel).read_text(encoding="utf-8")
        lines, ranges = text.splitlines(), _range_variables(text)
        for i in range(len(lines)):
            whole = whole_container(lines, i, ranges)
            if whole is None or whole[1] >= 0 or (pod := _pod_keys(lines, i)) is None:
                continue
            for container in whole[0]:
                if not any(_under(path, container) for path in counts):
                    continue
                item = [w for w in pod if len(w) >= len(container) - 1 and _same_items(w, container)]
                defaults = [w for w in pod if "*" not in w]
                if len(item) == 1 and len(defaults) <= 1:
                    found.add(
                        (_named(container + ["resources"]), _named(item[0]), ".".join(defaults[0] if defaults else []))
                    )
    if len(found) != 1:
        return None
    resources, pod, defaults = next(iter(found))
    if not all(_under(path, _unnamed(resources)[:-1]) for path in counts):
        return None  # another device count elsewhere: not this shape alone
    return {
        "container_resources": [resources],
        "pod_options": pod,
        "default_pod_options": defaults,
        "pod_option_keys": ["resourceClaims", "tolerations"],
    }


def _pod_keys(lines: list[str], i: int) -> list[Words] | None:
    """The values paths of the map the pod spec around the container at line i writes whole among its keys, at the
    column of its `containers:` (`{{- toYaml $final_predictor_config | nindent 4 }}` under `predictor:`), or None."""
    head = next((j for j in range(i - 1, -1, -1) if item_key(lines[j]) == "containers:"), -1)
    if head < 0:
        return None
    maps = pod_key_maps(lines, parent_line(lines, head), head, line_indent(lines[head]))
    return origins(lines, maps[0][0], maps[0][1]) if maps else None


def pod_key_maps(lines: list[str], pod: int, stop: int, indent: int) -> list[tuple[int, str]]:
    """The maps the pod spec at line `pod` writes whole among its keys (at column `indent`) before line `stop`: each
    one's line and the map as read there (`$final_predictor_config`; for `toYaml .` in a `with`, the with's map). A
    map that is a key's value (`volumes:` then `toYaml $volumes`) is not among them."""
    out = []
    for n in range(pod + 1, stop):
        m = WHOLE_FIELDS.match(lines[n])
        if m is None or int(m.group(3)) != indent:
            continue
        key = next((lines[j] for j in range(n - 1, pod, -1) if not is_control(lines[j])), "")
        if bare(key).endswith(":") and line_indent(key) >= indent:
            continue
        var = m.group(1) or m.group(2)
        out.append((n, dot_map(lines, n) if var == "." else var))
    return out


def _under(path: Path_, words: Words) -> bool:
    """Whether a values path is under `words` then `resources`, `*` matching any key."""
    return (
        len(path) > len(words) + 1
        and path[len(words)] == "resources"
        and all(w in ("*", str(k)) for w, k in zip(words, path, strict=False))
    )


def _same_items(a: Words, b: Words) -> bool:
    """Whether two values paths take the same `range` items: equal up to the last `*` of each, at the same place."""
    last = max((n for n, w in enumerate(a) if w == "*"), default=-1)
    return last >= 0 and a[: last + 1] == b[: last + 1]


def _named(words: Words) -> str:
    return ".".join(f"<k{n}>" if w == "*" else w for n, w in enumerate(words))


def _unnamed(pattern: str) -> Words:
    return ["*" if re.fullmatch(r"<k\d+>", w) else w for w in pattern.split(".")]
