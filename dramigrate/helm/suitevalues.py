"""The values a helm-unittest suite sets for a values file outside the chart (a suite can name only the files beside
it: helm-unittest reads `values:` relative to the suite file): the file trimmed to the keys the device request and its
claim come from, kept only when rendering proves them.

A case's values are tried smaller first: the keys the DRA values change (the device key, the claims, the claim
templates, the tolerations) and the device keys, with the booleans beside the maps on the way to them (the switch that
guards the request: `cronjobs.train.enabled`); then with every scalar there but beside the device key itself (a
schedule a CronJob needs to render); then with those too (`memory: 8Gi`); then the whole file. A trim is kept when
the tested template renders the same documents, with the same device requests and claims, and the claim templates'
file the same claim templates, as with the whole file (trimmed_case).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dramigrate.helm.values import Path_, differing, walk

_MISSING = object()
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")  # a key helm-unittest's `set:` path can name (no `.`, `[`, `=`)


def _at(values: Any, path: Path_) -> Any:
    node = values
    for part in path:
        if isinstance(part, int) or not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _to_list(path: Path_) -> Path_:
    """The path of the whole list a path reaches into (a list is set whole), else the path."""
    return path[: next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))]


def picked(values: dict[str, Any], paths: Iterable[Path_]) -> dict[str, Any]:
    """The part of `values` at `paths`, in the file's order (each path whole; its maps on the way created)."""
    wanted = set(paths)
    out: dict[str, Any] = {}
    for key, value in values.items():
        path: Path_ = (key,)
        if path in wanted:
            out[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and any(p[: len(path)] == path for p in wanted):
            inner = picked(value, {p[1:] for p in wanted if p[:1] == path})
            if inner:
                out[key] = inner
    return out


def changed_part(values: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """What `values` sets that `base` does not have so (a list whole), for a suite case named with `base`'s files."""
    return picked(values, [p for p in map(_to_list, differing(values, base)) if p and _at(values, p) is not _MISSING])


def _beside(values: dict[str, Any], paths: list[Path_], keep: Callable[[Any, bool], bool]) -> list[Path_]:
    """The keys whose value `keep` takes in each map on the way to `paths` (the top level's too); its second argument:
    whether the map is the one that holds the path's own key (`limits` beside `nvidia.com/gpu`)."""
    out = []
    for path in paths:
        for depth in range(len(path)):
            node = _at(values, path[:depth])
            if isinstance(node, dict):
                out += [(*path[:depth], k) for k, v in node.items() if keep(v, depth == len(path) - 1)]
    return out


def _scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


_TIERS: tuple[Callable[[Any, bool], bool], ...] = (
    lambda v, own: isinstance(v, bool),  # the switches on the way
    lambda v, own: isinstance(v, bool) or (_scalar(v) and not own),  # and what the workload needs to render
    lambda v, own: _scalar(v),  # and the device key's siblings (`memory: 8Gi` beside it)
)


def trims(
    values: dict[str, Any], other: dict[str, Any], resource: str, counts: Iterable[Path_] = ()
) -> list[dict[str, Any]]:
    """Smaller values to try for a case whose values are `values`, fewest keys first (module doc). `other`: the values
    of the suite's other case (the DRA values of the device-plugin values, and back); `resource`: the device key;
    `counts`: the keys a helper reads the count from, kept too."""
    changed = [_to_list(p) for p in differing(values, other)]
    devices = [_to_list(leaf.path[: leaf.path.index(resource) + 1]) for leaf in walk(values) if resource in leaf.path]
    found = [*changed, *devices, *map(_to_list, counts)]
    keys = list(dict.fromkeys(p for p in found if p and _at(values, p) is not _MISSING))
    if not keys:
        return []
    out: list[dict[str, Any]] = []
    for keep in _TIERS:
        trimmed = picked(values, [*keys, *_beside(values, keys, keep)])
        if trimmed != values and trimmed not in out:
            out.append(trimmed)
    return out


def set_keys(values: dict[str, Any]) -> dict[str, Any]:
    """`values` as a helm-unittest `set:`: each chain of maps written as one dotted key (`dra.enabled: true`), down to
    a map whose keys the path syntax cannot name (`nvidia.com/gpu`), which is set whole; helm-unittest merges each
    key's value into the values as Helm merges a values file."""
    out: dict[str, Any] = {}

    def flat(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            at = f"{prefix}.{key}" if prefix else str(key)  # a top-level key it cannot name: as it is
            named = all(_PLAIN.fullmatch(str(k)) for k in (key, *value)) if isinstance(value, dict) else False
            if value and named:
                flat(value, at)
            else:
                out[at] = value

    flat(values, "")
    return out


def requests(documents: list[dict[str, Any]]) -> list[Any]:
    """What a suite's asserts read of a template's documents: each document's kind and name (an assert without a
    documentSelector runs on every document; one picks by kind, else by name), its device keys, container claims and
    pod resourceClaims, and its labels when a selector would pick by them (unittest_suite.selector: kind and name
    shared with other documents)."""

    def parts(node: Any, labels: bool, at: Path_ = ()) -> list[tuple[Path_, Any]]:
        found: list[tuple[Path_, Any]] = []
        if isinstance(node, dict):
            for key, value in node.items():
                path = (*at, str(key))
                claims = key == "resourceClaims" or (key == "claims" and at[-1:] == ("resources",))
                device = at[-2:-1] == ("resources",) and at[-1] in ("limits", "requests") and "/" in str(key)
                if claims or device or (labels and key == "labels" and at[-1:] == ("metadata",)):
                    found.append((path, value))
                else:
                    found += parts(value, labels, path)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                found += parts(value, labels, (*at, i))
        return found

    ids = [(d.get("kind"), (d.get("metadata") or {}).get("name")) for d in documents]
    kinds, names = [k for k, _ in ids], [n for _, n in ids]
    held = [bool(parts(d, False)) for d in documents]
    labels = any(h and kinds.count(k) > 1 and names.count(n) > 1 for h, (k, n) in zip(held, ids, strict=True))
    return [(*i, parts(d, labels)) for i, d in zip(ids, documents, strict=True)]


@dataclass
class SuiteRender:
    """The rewritten chart (`root`, the proof's copy) rendered as a suite renders it, with a case's values and the
    run's release and Kubernetes version: a subchart alone (helm-unittest runs the suite of the chart it is in). Each
    render's documents by template, kept for the next template's suite; None when it does not render."""

    root: Path
    work: Any  # outcome.Workdir: where the values files go
    options: Any  # the run's RenderOptions: its values files and --set give way to the case's values
    _done: dict[tuple[str, str], dict[str, list[dict[str, Any]]] | None] = field(default_factory=dict)

    def documents(self, sub: str, values: dict[str, Any]) -> dict[str, list[dict[str, Any]]] | None:
        from dramigrate.helm.outcome import _by_template
        from dramigrate.helm.renderpool import cached_render
        from dramigrate.helm.rewrite import chart_name

        key = (sub, json.dumps(values, sort_keys=True, default=str))
        if key not in self._done:
            chart = self.root / sub if sub else self.root
            files = (self.work.values_file(values),)
            options = replace(self.options, values_files=files, set_values=(), set_string_values=())
            rendered = cached_render(chart, options)
            self._done[key] = (
                None if rendered.error else _by_template(rendered.stream + rendered.rest, chart_name(chart))
            )
        return self._done[key]


def trimmed_case(
    render: SuiteRender,
    sub: str,
    rels: tuple[str, str],
    values: dict[str, Any],
    other: dict[str, Any],
    resource: str,
    counts: Iterable[Path_] = (),
) -> dict[str, Any]:
    """The smallest of `trims` with which the chart (`sub`: its subchart) renders, in the tested template (`rels[0]`),
    the same documents with the same device requests and claims as with `values`, and in the claim templates' file
    (`rels[1]`, which may be the tested template) the same ResourceClaimTemplates; else `values`."""

    def seen(documents: dict[str, list[dict[str, Any]]]) -> tuple[list[Any], list[dict[str, Any]]]:
        claim_templates = [d for d in documents.get(rels[1], []) if d.get("kind") == "ResourceClaimTemplate"]
        return requests(documents.get(rels[0], [])), claim_templates

    whole = render.documents(sub, values)
    if whole is None:
        return values
    for trim in trims(values, other, resource, counts):
        got = render.documents(sub, trim)
        if got is not None and seen(got) == seen(whole):
            return trim
    return values
