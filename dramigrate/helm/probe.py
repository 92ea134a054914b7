"""Which values keys drive the device requests of a chart: the device requests of a rendered stream (a light
scan, device_uses), and the chart rendered again with each likely values key changed (probe): a count that follows
the key, a request the key switches off, or one it adds. Keys that name no device are changed several to a render."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.findings import Finding
from dramigrate.helm import subchartless
from dramigrate.helm.prove import documents
from dramigrate.helm.renderpool import render_all
from dramigrate.helm.values import (
    Leaf,
    ValueSources,
    as_count,
    bumped,
    candidates,
    lowered,
    minimal_patch,
    names_device,
    with_paths,
)
from dramigrate.memo import remember
from dramigrate.rules import RuleSet

if TYPE_CHECKING:
    from dramigrate.helm.outcome import ChartOptions, Workdir


MAX_PROBES = 40  # values keys probed for the device requests they drive (most PROBE_GROUP to a render)


PROBE_GROUP = 8  # values keys changed in one probe render when none names a device (most drive no device request)


DeviceKey = tuple[str, str, str, str, str, str]  # kind, namespace, name, container path, container name, resource


def device_uses(stream: str, rules: RuleSet) -> dict[DeviceKey, Any]:
    """Every known device resource in a limits/requests map of the rendered objects, with its value."""
    out: dict[DeviceKey, Any] = {}
    try:
        docs = list(documents(stream))
    except yaml.YAMLError:
        return out
    for doc in docs:
        if isinstance(doc, dict):
            for key, value in _document_uses(doc, rules).items():
                out.setdefault(key, value)
    return out


def _document_uses(doc: dict[str, Any], rules: RuleSet) -> dict[DeviceKey, Any]:
    """device_uses of one document, walked once for the document object: prove.documents hands out one shared object
    per document text, and the proof asks for the device uses of every value set's render (a null count, nullcounts.py),
    whose documents are mostly the same from one value set to the next (sm-realtime: 511 documents, 121 distinct)."""
    known = _USES.get((id(doc), id(rules)))
    if known is not None:
        return known[2]
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ident = (str(doc.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    uses: dict[DeviceKey, Any] = {}
    _scan(doc, "", ident, rules, uses)
    remember(_USES, (id(doc), id(rules)), (doc, rules, uses), 20000)  # held: their ids stay theirs while kept
    return uses


_USES: dict[tuple[int, int], tuple[dict[str, Any], RuleSet, dict[DeviceKey, Any]]] = {}


def _scan(node: Any, path: str, ident: tuple[str, str, str], rules: RuleSet, out: dict[DeviceKey, Any]) -> None:
    if isinstance(node, dict):
        resources = node.get("resources")
        if isinstance(resources, dict):
            for section in ("limits", "requests"):
                values = resources.get(section)
                if not isinstance(values, dict):
                    continue
                for res, value in values.items():
                    if rules.is_device_candidate(str(res)) and rules.lookup(str(res)) is not None:
                        out.setdefault((*ident, path, str(node.get("name", "")), str(res)), value)
        for k, v in node.items():
            _scan(v, f"{path}.{k}" if path else str(k), ident, rules, out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _scan(v, f"{path}[{i}]", ident, rules, out)


def matches(f: Finding, key: DeviceKey) -> bool:
    kind, namespace, name, path, container, resource = key
    return (
        (kind, namespace, name, resource) == (f.kind, f.namespace, f.name, f.resource)
        and (not f.pod_template_path or path.startswith(f.pod_template_path + "."))
        and (not f.container or container == f.container)
    )


@dataclass
class Relation:
    leaf: Leaf
    kind: str  # "count": the count follows the value; "switch": the value turns the request off; "adds"
    keys: set[DeviceKey]
    changed: Any = None  # a count capped in the template (`min .Values.gpus 8`) follows one less, not one more


def probe(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    base: dict[DeviceKey, Any],
    rules: RuleSet,
    work: Workdir,
    limit: int = MAX_PROBES,
) -> list[Relation]:
    """Render again with each likely values key changed; which device requests follow it. The renders run in
    parallel (render_all): first every key changed, then one less for the counts that did not follow one more."""
    counts = {c for v in base.values() if (c := as_count(v)) is not None}
    device_names = {k[5] for k in base}
    leaves = candidates(sources.merged, counts, device_names, limit)
    ups = [(not leaf.value) if isinstance(leaf.value, bool) else bumped(leaf.value) for leaf in leaves]
    singles = [names_device(leaf, device_names) for leaf in leaves]
    firsts = _probe_grouped(root, copts, sources, base, rules, work, list(zip(leaves, ups, strict=True)), singles)
    downs: dict[int, Any] = {}
    for i, (leaf, changed) in enumerate(zip(leaves, firsts, strict=True)):
        if changed is None:
            continue
        follow = any(k in changed and as_count(changed[k]) != as_count(base[k]) for k in base)
        capped = not follow and as_count(leaf.value) in counts  # `min .Values.gpus 8` at 8: try one less
        if capped and (down := lowered(leaf.value)) is not None:
            downs[i] = down
    lowered_changes = [(leaves[i], d) for i, d in downs.items()]
    lowers = dict(
        zip(
            downs,
            _probe_grouped(root, copts, sources, base, rules, work, lowered_changes, [singles[i] for i in downs]),
            strict=True,
        )
    )
    out: list[Relation] = []
    for i, (leaf, changed) in enumerate(zip(leaves, firsts, strict=True)):
        if changed is None:
            continue
        follow = {k for k in base if k in changed and as_count(changed[k]) != as_count(base[k])}
        followed = None
        if i in downs and (lower := lowers[i]) is not None:
            follow = {k for k in base if k in lower and as_count(lower[k]) != as_count(base[k])}
            followed = downs[i]
        gone = {k for k in base if k not in changed}
        added = {k for k in changed if k not in base}
        if follow:
            out.append(Relation(leaf, "count", follow, followed))
        if gone:
            out.append(Relation(leaf, "switch", gone))
        if added:
            out.append(Relation(leaf, "adds", added))
    return out


def _probe_grouped(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    base: dict[DeviceKey, Any],
    rules: RuleSet,
    work: Workdir,
    changes: list[tuple[Leaf, Any]],
    singles: list[bool],
) -> list[dict[DeviceKey, Any] | None]:
    """The device requests with each leaf changed, as probe_renders gives them, in fewer renders: a leaf that names
    a device is changed alone, the others PROBE_GROUP at a time; a group whose render asks for the base's devices
    gives that for each of its leaves, one that asks for others is halved until each leaf is alone, one that does not
    render is split into single leaves (keys that fail the chart, however many, cost one render more a group).
    Most values keys drive no device request: groundx's 40 probes, 0.35 s a render, were 17 s of its lint."""
    out: list[dict[DeviceKey, Any] | None] = [None] * len(changes)
    rest = [i for i, alone in enumerate(singles) if not alone]
    spread = [i for i, alone in enumerate(singles) if alone and _spread_value(changes[i][1], 1) is not None]
    groups = [[i] for i, alone in enumerate(singles) if alone and (i not in spread or len(spread) == 1)]
    groups += [rest[k : k + PROBE_GROUP] for k in range(0, len(rest), PROBE_GROUP)]
    batch = spread if len(spread) > 1 else []
    while groups or batch:
        values = []
        for group in groups:
            values.append(with_paths(sources.merged, [(changes[i][0].path, changes[i][1]) for i in group]))
        if batch:
            spread_out = [(changes[i][0].path, _spread_value(changes[i][1], n)) for n, i in enumerate(batch)]
            values.append(with_paths(sources.merged, spread_out))
        renders = probe_renders(root, copts, values, sources, rules, work)
        halves: list[list[int]] = []
        if batch:
            told = _spread_uses(batch, renders.pop(), base, changes)
            for i in batch:
                if told is None:
                    halves.append([i])  # not told apart: each alone
                else:
                    out[i] = told[i]
            batch = []
        for group, uses in zip(groups, renders, strict=True):
            if len(group) == 1:
                out[group[0]] = uses
            elif uses == base:
                for i in group:
                    out[i] = dict(base)
            elif uses is None:  # a key that makes the chart fail would fail every half it is in: each alone
                halves += [[i] for i in group]
            elif (guess := likely_leaf(group, uses, base, changes)) is not None:
                halves += [[guess], [i for i in group if i != guess]]
            else:
                halves += [group[: len(group) // 2], group[len(group) // 2 :]]
        groups = halves
    return out


SPREAD = 100  # the counts of the device-naming leaves probed in one render: one more, then 100 apart


def _spread_value(changed: Any, n: int) -> Any:
    """The n-th device-naming count of a spread probe: its one-more value (n 0), then SPREAD more for each next one, so
    a count each follows tells the leaves apart; None for a value that is not a count."""
    if isinstance(changed, bool) or as_count(changed) is None:
        return None
    value = as_count(changed) + n * SPREAD
    return None if as_count(value) is None else (str(value) if isinstance(changed, str) else type(changed)(value))


def _spread_uses(
    batch: list[int], uses: dict[DeviceKey, Any] | None, base: dict[DeviceKey, Any], changes: list[tuple[Leaf, Any]]
) -> dict[int, dict[DeviceKey, Any]] | None:
    """Each device-naming leaf's device requests read off one render with them all changed to spread counts
    (_spread_value): a request whose count became a leaf's count follows that leaf. None when the render does not
    tell them apart (it fails, a request is gone or added, a count matches no leaf's or several): each is then
    rendered alone, as before."""
    if uses is None or uses.keys() != base.keys():
        return None
    counts = [as_count(_spread_value(changes[i][1], n)) for n, i in enumerate(batch)]
    told = {i: dict(base) for i in batch}
    for key in base:
        if as_count(uses[key]) == as_count(base[key]):
            continue
        owners = [i for i, c in zip(batch, counts, strict=True) if c == as_count(uses[key])]
        if len(owners) != 1:
            return None
        told[owners[0]][key] = uses[key]
    return told


_WORD = re.compile(r"[a-z0-9]+")


def likely_leaf(
    group: list[int], uses: dict[DeviceKey, Any], base: dict[DeviceKey, Any], changes: list[tuple[Leaf, Any]]
) -> int | None:
    """The leaf of a group whose render differs from the base that most likely made the difference, tried alone
    beside the rest of the group (one round where halving takes one per halving): the leaf whose keys share the most
    words with the names of the objects and containers that changed (`layout.inference.enabled` for a gone
    `layout-inference` Deployment), a switch turned off first when requests are gone (on when added). None for a
    group of two or fewer, or when no leaf shares a word. A wrong guess costs no render: the rest is halved as
    before."""
    if len(group) <= 2:
        return None
    moved = [k for k in {*base, *uses} if base.get(k) != uses.get(k)]
    words = {w for k in moved for part in (k[2], k[4]) for w in _WORD.findall(part.lower())}
    gone, added = any(k not in uses for k in moved), any(k not in base for k in moved)

    def score(i: int) -> tuple[int, bool]:
        leaf = changes[i][0]
        shared = len(words & {w for part in leaf.path for w in _WORD.findall(str(part).lower())})
        return shared, (gone and leaf.value is True) or (added and leaf.value is False)

    best = max(group, key=score)  # the first of equals: the group's order
    return best if score(best)[0] else None


def probe_renders(
    root: Path, copts: ChartOptions, changed: list[dict[str, Any]], sources: ValueSources, rules: RuleSet, work: Workdir
) -> list[dict[DeviceKey, Any] | None]:
    """The device requests of the chart rendered with each of the changed values (None where it does not render)."""
    options = [copts.render((work.values_file(override(sources, values)),), sets=False) for values in changed]
    found = subchartless.reach(root, copts, sources, rules, work)
    calls = []
    for o, values in zip(options, changed, strict=True):  # an umbrella's own keys: rendered without its subcharts
        pruned = found if found is not None and found.allows(sources.merged, values) else None
        calls.append(functools.partial(subchartless.probe_render, root, o, pruned))
    renders = render_all(calls)
    return [None if r.error else device_uses(r.stream, rules) for r in renders]


def override(sources: ValueSources, changed: dict[str, Any]) -> dict[str, Any]:
    """The user's values with just what differs between the merged values and `changed` on top."""
    from dramigrate.helm.render import _merge_maps

    return _merge_maps(sources.user, minimal_patch(sources.merged, changed))
