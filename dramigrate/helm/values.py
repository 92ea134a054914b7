"""Chart values: what a render used, which keys drive device requests, and where those keys are written.

Which values key sets a device count is found by rendering again with that key changed, not by reading
templates: it works whatever the template does with the value (`toYaml .Values.resources`,
`gpu.number | default 1`, helpers, `tpl`, `.Files.Get`). Candidate keys are numbers and booleans of
the merged values, most likely first (keys that name a device resource or GPU-ish words, values equal to
a count seen in the output); the probes are capped so a large chart stays quick.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dramigrate.findings import Location

Path_ = tuple[str | int, ...]
_WORDS = re.compile(
    r"gpu|accelerat|device|tpu|neuron|gaudi|habana|xpu|mig|nvidia|amd|intel|dra|claim|resource|limit|count|number"
    r"|enable",
    re.IGNORECASE,
)
MAX_COUNT = 4096


@dataclass(frozen=True)
class Leaf:
    path: Path_
    value: Any


@dataclass
class ValueSources:
    """The values of one render, and the files that set them (for locations)."""

    merged: dict[str, Any]  # chart defaults (with subcharts') under the user's values
    user: dict[str, Any]  # -f files and --set, merged as helm does
    files: list[tuple[str, Path]] = field(default_factory=list)  # (display name, path), lowest precedence first
    set_keys: list[str] = field(default_factory=list)  # --set/--set-string expressions


def walk(values: Any, path: Path_ = ()) -> Iterator[Leaf]:
    if isinstance(values, dict):
        for k, v in values.items():
            yield from walk(v, (*path, str(k)))
    elif isinstance(values, list):
        for i, v in enumerate(values):
            yield from walk(v, (*path, i))
    else:
        yield Leaf(path, values)


def get_path(values: Any, path: Path_) -> Any:
    node = values
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return None
        elif not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def set_path(values: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    """A deep copy of values with the leaf at path set (intermediate maps created)."""
    out = copy.deepcopy(values)
    put_path(out, path, value)
    return out


def with_paths(values: dict[str, Any], settings: Iterable[tuple[Path_, Any]]) -> dict[str, Any]:
    """values with each leaf set in turn, as set_path one after the other, but only the maps and lists on the paths
    copied: the rest is values' own, so the result is for reading. A guard's settings are tried by the hundred, each
    with a deep copy of the chart's values (loom: 214 copies of its 35 KB values.yaml per fix)."""
    out = copy.copy(values)
    for path, value in settings:
        node: Any = out
        for part, nxt in zip(path[:-1], path[1:], strict=True):
            child = node[part] if isinstance(part, int) else node.get(part)
            if isinstance(child, (dict, list)):
                node[part] = child = copy.copy(child)
            elif not isinstance(part, int):
                node[part] = child = [] if isinstance(nxt, int) else {}
            node = child
        node[path[-1]] = value
    return out


def put_path(values: dict[str, Any], path: Path_, value: Any) -> None:
    """Set the leaf at path in values itself (intermediate maps created): for a loop over its own copy, where a deep
    copy per path cost a 400-map umbrella chart 40 s."""
    node: Any = values
    for part, nxt in zip(path[:-1], path[1:], strict=True):
        if isinstance(part, int):
            node = node[part]
            continue
        if not isinstance(node.get(part), (dict, list)):
            node[part] = [] if isinstance(nxt, int) else {}
        node = node[part]
    node[path[-1]] = value


def differing(a: Any, b: Any, path: Path_ = ()) -> list[Path_]:
    """The paths where two values trees differ, into maps and into the items of lists of one length."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in dict.fromkeys([*a, *b]) for p in differing(a.get(k), b.get(k), (*path, str(k)))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in differing(x, y, (*path, i))]
    return [] if a == b else [path]


def minimal_patch(before: Any, after: Any) -> Any:
    """The values that turn `before` into `after` when Helm merges them over it: changed map keys only
    (maps merge), whole lists (lists are replaced). Chart defaults stay where they are, so a rewritten
    chart's own values.yaml still counts."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = {}
        for key, value in after.items():
            if key not in before:
                out[key] = copy.deepcopy(value)
            elif value != before[key]:
                out[key] = minimal_patch(before[key], value)
        return out
    return copy.deepcopy(after)


def twin_path(merged: dict[str, Any], path: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The same device count in the other section of one resources map (`limits` for `requests` and the reverse),
    when the values set both to the same value: changing one alone renders a pod the API server rejects (an
    extended resource needs requests equal to limits) and the migration leaves as it is (vllm's chart-helm). A
    section may be the count itself (devtron's `gpu.resources.limits: 1`, `requests: 1`, the key named elsewhere)."""
    other = {"limits": "requests", "requests": "limits"}
    if len(path) >= 2 and path[-2] in other:
        twin = (*path[:-2], other[path[-2]], path[-1])
    elif path and path[-1] in other and not isinstance(get_path(merged, path), (dict, list)):
        twin = (*path[:-1], other[path[-1]])
    else:
        return None
    here, there = get_path(merged, path), get_path(merged, twin)
    return twin if there is not None and str(there) == str(here) else None


def display(path: Path_) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out


def as_count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and 0 <= value <= MAX_COUNT:
        return value
    if isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_COUNT:
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,4}", value.strip()):
        return int(value)
    return None


def bumped(value: Any) -> Any:
    """The value one more (same type), for a probe."""
    if isinstance(value, str):
        return str(int(value.strip()) + 1)
    if isinstance(value, float):
        return value + 1.0
    return int(value) + 1


def lowered(value: Any) -> Any | None:
    """The value one less (same type), for a probe of a count capped in the template (`min .Values.gpus 8`
    at 8 does not follow a bump); None when it is 1 or less (0 is the switched-off probe)."""
    count = as_count(value)
    if count is None or count <= 1:
        return None
    if isinstance(value, str):
        return str(count - 1)
    return type(value)(count - 1)


def zero(value: Any) -> Any:
    return "0" if isinstance(value, str) else type(value)(0)


def candidates(merged: dict[str, Any], counts: set[int], device_names: set[str], limit: int) -> list[Leaf]:
    """Number and boolean leaves most likely to drive device requests, best first, at most limit."""
    scored: list[tuple[int, str, Leaf]] = []
    for leaf in walk(merged):
        names = [p for p in leaf.path if isinstance(p, str)]
        if isinstance(leaf.value, bool):
            score = 2 if any(_WORDS.search(n) for n in names[-2:]) else 0
        elif as_count(leaf.value) is not None:
            score = 1
            if names_device(leaf, device_names):
                score += 4
            if any(_WORDS.search(n) for n in names):
                score += 2
            if as_count(leaf.value) in counts:
                score += 1
        else:
            continue
        scored.append((-score, display(leaf.path), leaf))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [leaf for _, _, leaf in scored[:limit]]


def names_device(leaf: Leaf, device_names: set[str]) -> bool:
    """Whether a key on the leaf's path is a device resource name (`nvidia.com/gpu`, any `vendor/name`)."""
    return any(isinstance(n, str) and (n in device_names or "/" in n) for n in leaf.path)


def find_maps(merged: dict[str, Any], match: Callable[[str, Any, Path_], list[Path_]]) -> list[Path_]:
    """The paths match gives for the values under each key (key, value, its path), depth first; below a key where
    match gives any, nothing more is looked at."""
    out: list[Path_] = []

    def visit(node: Any, path: Path_) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                p = (*path, str(k))
                if found := match(str(k), v, p):
                    out.extend(found)
                else:
                    visit(v, p)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                visit(v, (*path, i))

    visit(merged, ())
    return out


def sectioned(value: Any) -> bool:
    """Whether a values map has a container's resources sections: `limits` or `requests`, each a map or empty
    (`limits: 1` is a count, not a section)."""
    sections = [value[k] for k in ("limits", "requests") if isinstance(value, dict) and k in value]
    return bool(sections) and all(s is None or isinstance(s, dict) for s in sections)


def resources_maps(merged: dict[str, Any]) -> list[Path_]:
    """Paths of values that look like a container's resources (key `resources`, a map or empty)."""

    def match(key: str, value: Any, path: Path_) -> list[Path_]:
        shaped = value is None or (isinstance(value, dict) and (not value or sectioned(value)))
        return [path] if key == "resources" and shaped else []

    return find_maps(merged, match)


def resource_sections(node: Any) -> Iterator[tuple[dict[str, Any], str]]:
    """Each `limits` and `requests` map in a tree of rendered objects (or values), as (the map that holds it, its
    key), in document order: the holder's entry may be replaced before the walk goes on into it."""
    if isinstance(node, dict):
        for section in ("limits", "requests"):
            if isinstance(node.get(section), dict):
                yield node, section
        for v in node.values():
            yield from resource_sections(v)
    elif isinstance(node, list):
        for v in node:
            yield from resource_sections(v)


def tolerations_lists(merged: dict[str, Any]) -> list[Path_]:
    """Paths of values that look like a pod's tolerations (key `tolerations`, a list or empty)."""

    def match(key: str, value: Any, path: Path_) -> list[Path_]:
        return [path] if key == "tolerations" and (value is None or isinstance(value, list)) else []

    return find_maps(merged, match)


_READ_TOLERATIONS = re.compile(r"(?<![\w)\]])\$?\.Values((?:\.[A-Za-z_]\w*)*\.tolerations)\b")


def read_tolerations(templates: list[str], merged: dict[str, Any]) -> list[Path_]:
    """Paths of `tolerations` values the templates (helpers included) read that the values do not set, in a map the
    values have (`.Values.tolerations` where values.yaml has no `tolerations:`): a user's own list there renders a
    pod's `tolerations:` the default values never show."""
    out: list[Path_] = []
    for text in templates:
        for m in _READ_TOLERATIONS.finditer(text):
            path: Path_ = tuple(m.group(1).lstrip(".").split("."))
            parent = get_path(merged, path[:-1]) if len(path) > 1 else merged
            if isinstance(parent, dict) and path[-1] not in parent and path not in out:
                out.append(path)
    return out


def inject(merged: dict[str, Any], paths: list[Path_], resource: str, count: int = 1) -> dict[str, Any]:
    """Values with `limits: {resource: count}` added to each resources map."""
    out = copy.deepcopy(merged)
    for path in paths:
        current = get_path(out, path)
        block = dict(current) if isinstance(current, dict) else {}
        limits = dict(block.get("limits") or {})
        limits[resource] = count
        block["limits"] = limits
        put_path(out, path, block)
    return out


def locate(path: Path_, sources: ValueSources) -> Location:
    """Where the effective value of path is set: a --set flag, the last -f file that sets it, or a
    chart's values.yaml; with the key's line."""
    key = display(path)
    for expr in reversed(sources.set_keys):
        name = expr.split("=", 1)[0]
        if _set_key_matches(name, path):
            return Location("--set", 0, 0, f"{key} set on the command line ({expr})")
    for name, file in reversed(sources.files):
        line = key_line(file, path)
        if line:
            return Location(name, line, 0, key)
    return Location("", 0, 0, key)


def _set_key_matches(name: str, path: Path_) -> bool:
    parts = [p.replace("\\.", ".") for p in re.split(r"(?<!\\)\.", re.sub(r"\[(\d+)\]", r".\1", name))]
    return parts == [str(p) for p in path]


def key_line(file: Path, path: Path_) -> int:
    """1-based line of the key at path in a YAML file, 0 when the file does not set it."""
    try:
        stat = file.stat()  # keyed by the absolute path: a relative name can mean another file after a chdir
        data = _load_rt(str(file.absolute()), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return 0
    node = data
    line = 0
    for part in path:
        lc = getattr(node, "lc", None)
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return 0
            if lc is not None:
                line = lc.item(part)[0] + 1
        else:
            if not isinstance(node, dict) or part not in node:
                return 0
            line = _key_line(node, part) or line
        node = node[part]
    return line


def _key_line(node: Any, key: str) -> int:
    """1-based line of a key of a round-trip map, found in the map a merge key (`<<: *base`) brings it from when the
    map does not set it itself; 0 when unknown."""
    lc = getattr(node, "lc", None)
    if lc is not None and key in lc.data:
        return int(lc.key(key)[0]) + 1
    bases = [m[-1] if isinstance(m, tuple) else m for m in getattr(node, "merge", [])]  # (index, map) before 0.18
    return next((line for base in bases if (line := _key_line(base, key))), 0)


_RT_CACHE: dict[tuple[str, int, int], Any] = {}


def _load_rt(name: str, mtime: int, size: int) -> Any:
    key = (name, mtime, size)
    if key not in _RT_CACHE:
        from ruamel.yaml import YAML

        from dramigrate.longints import lenient_round_trip_constructor

        yaml = YAML(typ="rt")
        yaml.Constructor = lenient_round_trip_constructor()
        try:
            _RT_CACHE[key] = yaml.load(Path(name).read_text(encoding="utf-8"))
        except Exception:  # a values file Helm read but ruamel does not: no line, not an error
            _RT_CACHE[key] = None
    return _RT_CACHE[key]


# --- values.schema.json: the keys a rewrite adds to values objects that forbid unknown keys ---------------------


def _deref(document: Any, node: Any) -> Any:
    """A schema node with its local `$ref` (`#/definitions/x`, `#/$defs/x`) followed; None when it cannot be."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 16:
        ref, seen = node["$ref"], seen + 1
        if not ref.startswith("#/"):
            return None
        node = document
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _closed(node: dict[str, Any]) -> bool:
    return node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False


def schema_with(document: Any, additions: list[tuple[Path_, str, dict[str, Any]]]) -> tuple[bool, list[str]]:
    """Declare in `document` (values.schema.json, changed in place) each key a rewrite adds to a values object
    (the object's values path, the key, its schema) where that object's schema forbids unknown keys
    (`additionalProperties: false`), as Helm would refuse the values otherwise. Returns whether it changed, and the
    keys it cannot place: the object's schema is closed or cannot be told (anyOf, a remote $ref) on the way."""
    changed, unplaced = False, []
    for path, key, entry in additions:
        node, closed_on_way, reached = _deref(document, document), False, True
        for part in path:
            if node is None or any(k in node for k in ("anyOf", "oneOf", "allOf")) and "properties" not in node:
                reached = False
                break
            closed_on_way |= _closed(node)
            if isinstance(part, int):
                node = _deref(document, node.get("items"))
            elif isinstance(node.get("properties"), dict) and part in node["properties"]:
                node = _deref(document, node["properties"][part])
            elif isinstance(node.get("additionalProperties"), dict):
                node = _deref(document, node["additionalProperties"])
            else:
                node = None  # an open object without a schema for this key: anything goes below it
                break
        alternatives = [_deref(document, a) for k in ("anyOf", "oneOf", "allOf") for a in (node or {}).get(k) or []]
        if reached and node is not None and "properties" not in node and any(a and _closed(a) for a in alternatives):
            unplaced.append(display((*path, key)))  # one of the object's alternatives is closed: which one is it?
        elif node is not None and reached:
            if _closed(node) and key not in (node.get("properties") or {}):
                node.setdefault("properties", {})[key] = entry
                changed = True
        elif not reached and closed_on_way:
            unplaced.append(display((*path, key)))
    return changed, unplaced
