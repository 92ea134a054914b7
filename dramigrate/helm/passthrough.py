"""The idiomatic rewrite for patterns B and C: a container's `resources` passed through from values
(`{{- toYaml .Values.resources | nindent 12 }}`, `{{- with .Values.worker.resources }}`).

The shape chart maintainers chose for these (KubeRay's ray-cluster chart, PR #4290): the values carry the
DRA request, the templates only pass it through. So the rewrite is

- in the templates, a sibling key named after the map (`resources` -> `resourceClaims`, `worker.resources` ->
  `worker.resourceClaims`) rendered with `with`/`toYaml` into the pod spec whose containers take that map
  (which pod takes which map is found by rendering with a marker in each map, never by reading templates),
  unless the template renders it already;
- one new template, `templates/resourceclaimtemplates.yaml`, that renders the `resourceClaimTemplates` map of
  the values (name -> ResourceClaimTemplate spec), with `resourceClaimTemplates: {}` documented in values.yaml;
- a DRA variant of each values file that asks for devices (`gpu.yaml` -> `gpu-dra.yaml`, beside it): the same
  file with the device key replaced in it (not a null overlay: Helm deletes only chart-default keys), the
  container's `claims` in the map, the pod's `resourceClaims`, the toleration and KubeRay's `num-gpus` in
  the sibling keys, and the claim templates. The switch is the values file: `-f gpu.yaml` renders the
  device-plugin request as before, `-f gpu-dra.yaml` the claims;
- a container that copies a device key from a map another container of its pod takes whole (a helper's init
  container: `nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}`) writes no key with the DRA
  values and gets the map's `claims` (`{{- with .Values.resources.claims }}` after its `resources:` block).

What the DRA variant writes is read off the core's migration of the original render, so it cannot drift from
`fix -`; passthroughproof.py proves (L) byte-identical renders with the original values and (D) the migration with the
variants.
"""

from __future__ import annotations

import bisect
import copy
import difflib
import functools
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dramigrate.helm import unpin
from dramigrate.helm.arghelpers import arg_helpers, called_maps, expand_calls, tolerations_helpers
from dramigrate.helm.claimnamespaces import EACH_NAMESPACE, NAMESPACES, Namespaced, guards, many_namespaces
from dramigrate.helm.containerhelpers import container_helpers
from dramigrate.helm.conventions import conventions
from dramigrate.helm.helper import blocks
from dramigrate.helm.idiomatic import _comment_style, _open_blocks, capabilities_check
from dramigrate.helm.listindent import indented_tolerations
from dramigrate.helm.mapreads import default_chains, inline_bound, inline_chain, inline_merged, var_reads
from dramigrate.helm.patterns import PICKED_PROFILE, Pattern, _grouped, map_reads, whole_read
from dramigrate.helm.poddelta import _plugin_tolerations, kind_singles, pod_containers, shipped_rules
from dramigrate.helm.prove import objects, without_api_defaults
from dramigrate.helm.render import _merge_maps
from dramigrate.helm.rewrite import Change, RewriteError, chart_name
from dramigrate.helm.templatelines import (
    BLOCK_ACTION,
    BlockDumper,
    FlowList,
    FlowMap,
    action_body,
    bare,
    block_end,
    blocks_opened,
    enclosing_scope,
    is_control,
    is_key,
    item_key,
    line_indent,
    parent_line,
)
from dramigrate.helm.tolerationedits import joined_list_actions
from dramigrate.helm.values import Path_, display, find_maps, get_path, put_path, resources_maps, set_path
from dramigrate.helm.wholecontainers import pod_key_maps, whole_container
from dramigrate.plan import covers

TEMPLATE_FILE = "templates/resourceclaimtemplates.yaml"
VALUES_KEY = "resourceClaimTemplates"
MARKER = "dramigrate.io/map-"
# keys beside a resources map that the migration fills for the pod or group that takes the map
SIBLINGS = ("resourceClaims", "tolerations", "rayStartParams")
# the tolerations sibling under a name of its own (`resources` -> `resourceTolerations`), when the key beside the map
# is the chart's own tolerations list that pods not taking the map render too (toleration_places)
OWN_TOLERATIONS = "resourceTolerations"
# beside a resources map in the DRA values: the device keys' counts, for the template lines that read them
COUNTS = "deviceCounts"
# a need (not a values key): the map's device keys come from an umbrella's values only, so the DRA values' null for
# them reaches this subchart (kept_nulls) and the template drops null keys before it writes the map
DROP_NULLS = "drop nulls"
# a need (prefixed to a device key, `device nvidia.com/gpu`): a device key the DRA values drop from the map, which the
# template refuses to render beside the container's claims (device_check)
DEVICE = "device "
# a need (prefixed to the dotted keys of a values list, `joins worker.tolerations`): the list the pods that take the
# map render their tolerations from, which the toleration under its own key joins (toleration_places)
JOINS = "joins "
# a need: the map is a section's content (`limits:` then `toYaml .Values.resources`, flat_maps): it cannot hold the
# container's `claims`, which the template names after the pod's `resourceClaims` instead
SECTION_CONTENT = "section content"


class NotPassThrough(RewriteError):
    """The chart's device requests do not all come from values resources maps passed through whole."""


class LeftAlone(NotPassThrough):
    """A values map the migration moves to a claim in one container goes into another the migration leaves as it is
    (a pod spec dramigrate does not know in the kind: KServe's `predictor.workerSpec`): the DRA values would take its
    devices too, with no claim. `name` and `path`: the object's name and that container's path in it."""

    def __init__(self, message: str, name: str, path: str) -> None:
        super().__init__(message)
        self.name, self.path = name, path


@dataclass
class MapEdit:
    """What the migration changed for the containers and pod that take one values resources map."""

    path: Path_  # the resources map in the values
    removed: dict[str, list[str]] = field(default_factory=dict)  # section -> device keys gone
    claims: list[dict[str, Any]] = field(default_factory=list)  # the container's resources.claims
    siblings: dict[str, Any] = field(default_factory=dict)  # resourceClaims/tolerations added, rayStartParams keys
    # the device plugin's tolerations the migration adds none of, since the pod's values list tolerates the taint
    # already: the template adds them all the same where a later values file replaces that list (toleration_places)
    covered: list[dict[str, Any]] = field(default_factory=list)
    joins: Path_ = ()  # the values list the pods render their tolerations from, which OWN_TOLERATIONS joins
    # that list when it tolerates the taint (covered) in a shape no template line joins: a later list drops it (said)
    kept_in: Path_ = ()
    unpinned: set[str] = field(default_factory=set)  # node selection the migration drops (unpin.need), by pod path
    # where a sibling goes when not beside the map (sibling_path): a library's pod options (libvalues.py)
    places: dict[str, Path_] = field(default_factory=dict)
    group: str = ""  # the name of the group whose pods take the map, when not read off its path (group)
    flat: bool = False  # the map is the content of the sections (flat_maps): its device keys sit right in it

    def place(self, sibling: str) -> Path_:
        return self.places.get(sibling) or sibling_path(self.path, sibling)

    def section_path(self, section: str) -> Path_:
        """Where the values hold the section `limits` or `requests` of the container's resources."""
        return self.path if self.flat else (*self.path, section)

    def key_path(self, section: str, key: str) -> Path_:
        """Where the values hold a device key of a section."""
        return (*self.section_path(section), key)


def sibling_key(map_key: str, sibling: str) -> str:
    """`resources` -> `resourceClaims`; `gpuResources` -> `gpuResourceClaims` (and `deviceCounts` the same way);
    other siblings keep their name."""
    if sibling not in ("resourceClaims", COUNTS, OWN_TOLERATIONS):
        return sibling
    if map_key.endswith("Resources"):
        return map_key[: -len("Resources")] + sibling[0].upper() + sibling[1:]
    return map_key[: -len("resources")] + sibling if map_key.endswith("resources") else sibling


def keyed(path: Path_) -> bool:
    """A resources map picked by a key under `resources:` (`resources.gpu` or `resources.neuron`, chosen by the
    template's `if` on the accelerator)."""
    return len(path) >= 2 and isinstance(path[-1], str) and str(path[-2]).lower().endswith("resources")


def sibling_path(path: Path_, sibling: str) -> Path_:
    """Where a sibling of the map goes: beside it (`worker.resources` -> `worker.resourceClaims`); for a keyed map,
    `resourceClaims` under the same key (`resources.gpu` -> `resourceClaims.gpu`), the others beside `resources`."""
    if keyed(path):
        if sibling == "resourceClaims":
            return (*path[:-2], sibling_key(str(path[-2]), sibling), path[-1])
        return sibling_path(path[:-1], sibling)
    return (*path[:-1], sibling_key(str(path[-1]), sibling))


def _shaped(block: dict[str, Any]) -> bool:
    return "limits" in block or "requests" in block


def keyed_maps(merged: dict[str, Any]) -> list[Path_]:
    """The maps of resources keyed under `resources:` (`resources: {gpu: {limits: ..}, neuron: {limits: ..}}`)."""

    def match(key: str, value: Any, path: Path_) -> list[Path_]:
        shaped = [
            c for c, m in (value if isinstance(value, dict) else {}).items() if isinstance(m, dict) and _shaped(m)
        ]
        if key.lower().endswith("resources") and shaped and len(shaped) == len(value):
            return [(*path, c) for c in shaped]
        return []

    return find_maps(merged, match)


def flat(value: Any) -> bool:
    """A values map that holds quantities by resource name (`resources: {nvidia.com/gpu: "1"}`): a template writes it
    as a section's content (`limits:` then `toYaml .Values.resources`), not as a container's resources."""
    return isinstance(value, dict) and bool(value) and not any(isinstance(v, (dict, list)) for v in value.values())


def flat_maps(merged: dict[str, Any]) -> list[Path_]:
    """The flat maps (flat) under a key named `resources` (or `*Resources`)."""

    def match(key: str, value: Any, path: Path_) -> list[Path_]:
        return [path] if key.lower().endswith("resources") and flat(value) else []

    return find_maps(merged, match)


def _equal_map(merged: Any, want: Any, path: Path_ = (), keyed: bool = False) -> Path_ | None:
    """The values path of a map not keyed `resources` (nor `*Resources`; with `keyed`, any key) whose value is
    `want`, if there is one."""
    if isinstance(merged, dict):
        for k, v in merged.items():
            p = (*path, str(k))
            if isinstance(v, dict) and v and _plain(v) == want and (keyed or not str(k).lower().endswith("resources")):
                return p
            found = _equal_map(v, want, p, keyed)
            if found is not None:
                return found
    return None


def marked_values(
    merged: dict[str, Any], flats: bool = True, only: list[Path_] | None = None, more: list[Path_] | None = None
) -> tuple[dict[str, Any], list[Path_]]:
    """The values with a marker key in the limits of each resources map (`flats`: and in each flat map, which a
    template writes as the limits; `only`: those maps instead, a library's: libvalues.Placer.maps; `more`: and those,
    the maps a template passes whole under another name: wholemaps.py), and those maps in marker order."""
    maps = (
        only if only is not None else resources_maps(merged) + keyed_maps(merged) + (flat_maps(merged) if flats else [])
    )
    maps += [m for m in more or [] if m not in maps] if only is None else []
    out = copy.deepcopy(merged)
    for i, path in enumerate(maps):
        current = get_path(out, path)
        block = dict(current) if isinstance(current, dict) else {}
        if flat(current):
            block[f"{MARKER}{i}"] = "1"
        else:
            block["limits"] = {**dict(block.get("limits") or {}), f"{MARKER}{i}": "1"}
        put_path(out, path, block)
    return out, maps


def pod_specs(
    node: Any, out: list[tuple[list[Any], dict[str, Any]]], trail: list[Any], singles: tuple[str, ...] = ()
) -> None:
    """Every pod spec (a map with `containers`, or with one of the object kind's single containers: KServe's
    `predictor.model`) with the chain of maps above it (the group that holds it)."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list) or any(isinstance(node.get(k), dict) for k in singles):
            out.append((list(trail), node))
        for v in node.values():
            pod_specs(v, out, [*trail, node], singles)
    elif isinstance(node, list):
        for v in node:
            pod_specs(v, out, trail, singles)


def _pod_paths(node: Any, out: list[str], path: str, singles: tuple[str, ...] = ()) -> None:
    """The path of each pod spec pod_specs finds, in its order (`spec.predictor.workerSpec`)."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list) or any(isinstance(node.get(k), dict) for k in singles):
            out.append(path)
        for k, v in node.items():
            _pod_paths(v, out, f"{path}.{k}" if path else str(k), singles)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _pod_paths(v, out, f"{path}[{i}]", singles)


def single_containers(key: Any) -> tuple[str, ...]:
    """The single-container keys of the pod specs of an object (apiVersion, kind, ...)."""
    return kind_singles(key[0], key[1])


def feeds(marked_stream: str, maps: list[Path_]) -> dict[tuple[Any, int, int], tuple[Path_, ...]]:
    """(object key, pod index, container index) -> the values maps the container's resources come from (several when
    the template merges them: `mergeOverwrite $container.resources $topValues.resources`)."""
    out: dict[tuple[Any, int, int], tuple[Path_, ...]] = {}
    for key, docs in objects(marked_stream).items():
        for doc in docs[:1]:
            pods: list[tuple[list[Any], dict[str, Any]]] = []
            singles = single_containers(key)
            pod_specs(doc, pods, [], singles)
            for p, (_, pod) in enumerate(pods):
                for c, container in enumerate(pod_containers(pod, singles)):
                    limits = (container.get("resources") or {}).get("limits") or {}
                    marks = [int(k[len(MARKER) :]) for k in limits if str(k).startswith(MARKER)]
                    if marks:
                        out[(key, p, c)] = tuple(maps[m] for m in sorted(marks))
    return out


LIST_MARKER = "dramigrate.io/list-"


def undeclared_lists(edits: list[MapEdit], values: dict[str, Any]) -> tuple[Path_, ...]:
    """The tolerations lists beside the maps whose edits add a toleration (sibling_path) that `values` does not
    declare, under a map it does (marked_lists plants them)."""
    out = []
    for edit in edits:
        path = sibling_path(edit.path, "tolerations")
        parent = get_path(values, path[:-1])
        if "tolerations" in edit.siblings and isinstance(parent, dict) and path[-1] not in parent and path not in out:
            out.append(path)
    return tuple(out)


def unread_lists(planted: tuple[Path_, ...], texts: list[str]) -> tuple[Path_, ...]:
    """The planted lists (undeclared_lists) no template text reads by its dotted values path: a list one reads
    (`with .Values.server.tolerations`) is another pod's own even where this value set renders none of it (a pod
    chosen by another `framework`), so the toleration goes under a key of its own (toleration_places)."""
    return tuple(
        path
        for path in planted
        if not any(re.search(r"\.Values\." + re.escape(".".join(map(str, path))) + r"(?![\w.])", t) for t in texts)
    )


def marked_lists(
    marked: dict[str, Any], named: str = "", planted: tuple[Path_, ...] = ()
) -> tuple[dict[str, Any], list[Path_]]:
    """The values with a marker item (a toleration-shaped map) at the end of each list of maps under string keys
    (empty ones too; only those under the key `named` when given: a chart may fail on a marker in another list),
    and those lists in marker order: which of them a pod renders its tolerations from. `planted`: the lists beside
    the maps (sibling_path) the values do not declare, set to an empty list first, so a pod without the device
    that renders one too (Dell's agentic-smart-router: `.Values.tolerations`, in no values file) shows."""
    out = copy.deepcopy(marked)
    for path in planted:
        parent = get_path(out, path[:-1])
        if isinstance(parent, dict) and path[-1] not in parent:
            parent[path[-1]] = []
    lists: list[Path_] = []

    def visit(node: Any, path: Path_) -> None:
        for k, v in node.items() if isinstance(node, dict) else ():
            if v is None and k == "tolerations":  # `tolerations:` left empty (h2oGPT's): a list a user sets
                node[k] = v = []
            if isinstance(v, list) and all(isinstance(x, dict) for x in v) and named in ("", k):
                lists.append((*path, str(k)))
                v.append({"key": f"{LIST_MARKER}{len(lists) - 1}", "operator": "Exists"})
            visit(v, (*path, str(k)))

    visit(out, ())
    return out, lists


def _pods_with_marks(stream: str, maps: list[Path_], lists: list[Path_]) -> list[tuple[set[Path_], list[Path_ | None]]]:
    """Each pod of a render with both markers (marked_values, marked_lists): the resources maps its containers take
    and, per item of its tolerations, the values list it comes from (None: written otherwise)."""
    out = []
    for pod, singles in rendered_pods(stream):
        taken = marked_maps(pod, singles, maps)
        items = pod.get("tolerations") if isinstance(pod.get("tolerations"), list) else []
        keys = [str(x.get("key", "")) if isinstance(x, dict) else "" for x in items]
        out.append((taken, [lists[int(k[len(LIST_MARKER) :])] if k.startswith(LIST_MARKER) else None for k in keys]))
    return out


def marked_maps(pod: dict[str, Any], singles: tuple[str, ...], maps: list[Path_]) -> set[Path_]:
    """The resources maps (marked_values, `maps` in marker order) the containers of a pod of the marked render take."""
    return {
        maps[int(k[len(MARKER) :])]
        for c in pod_containers(pod, singles)
        for k in ((c.get("resources") or {}).get("limits") or {})
        if str(k).startswith(MARKER)
    }


def rendered_pods(stream: str) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """Each pod spec of a render, in the order of its objects (two renders of one chart list the same pods alike),
    with the containers its object holds one of (single_containers)."""
    out = []
    for key, docs in objects(stream).items():
        singles = single_containers(key)
        for doc in docs:
            pods: list[tuple[list[Any], dict[str, Any]]] = []
            pod_specs(doc, pods, [], singles)
            out += [(pod, singles) for _, pod in pods]
    return out


def _list_alone(
    unmarked: list[tuple[dict[str, Any], Any]],
    pods: list[tuple[set[Path_], list[Path_ | None]]],
    place: Path_,
    items: Any,
) -> bool:
    """Whether each pod that renders the values list `place` (in `pods`, read off the render with markers) renders,
    in the render without them (`unmarked`, the list's `items`), the items of that list beside only the tolerations
    it writes otherwise with the markers too: what the list holds changes nothing else, so the DRA values can carry
    it whole. groundx's pods render the tolerations of their service's node while the list is empty: the list whole
    in the DRA values would drop those. True when the two renders do not hold the same pods."""
    if len(unmarked) != len(pods):
        return True
    size = len(items) if isinstance(items, list) else 0
    for (_, marks), (pod, _) in zip(pods, unmarked, strict=True):
        if place in marks:
            others = sum(1 for m in marks if m is None)
            rendered = pod.get("tolerations") if isinstance(pod.get("tolerations"), list) else []
            if len(rendered) != others + size:
                return False
    return True


def toleration_places(
    stream: str,
    maps: list[Path_],
    lists: list[Path_],
    edits: list[MapEdit],
    rest: str = "",
    joined: frozenset[str] = frozenset(),
    listed: dict[str, Any] | None = None,
    planted: tuple[Path_, ...] = (),
    original: str | None = None,
    values: dict[str, Any] | None = None,
) -> None:
    """Where each edit's added tolerations go (MapEdit.places, or a key of their own): found in `stream`, the chart
    rendered with both markers (`rest`: its other objects). The pods that take the map render their tolerations from
    one values list (the items of that list come last): where a template joins that list with another (`joined`,
    joined_lists: `with`/`toYaml` of it under `tolerations:`), the toleration goes under its own key beside the map
    (`resources` -> `resourceTolerations`; `listed`: the values with the markers, every item of the pods' lists
    from that list), which the template adds to the pod's list unless that list tolerates the
    taint already, so a later values file of the user's that sets the list keeps it (Helm replaces lists); the
    device plugin's tolerations the list covered (MapEdit.covered) go there too. Else, when nothing but those pods
    renders the list, the DRA values carry it whole with the toleration at its end; otherwise the toleration stays
    beside the map (template_edits passes it through), under its own key when that is a list other pods render
    too (`planted`, marked_lists: one the values do not declare, only when a template renders it, or reads it:
    unread_lists). `original`: the value set's render without markers and `values` its values: a list carried whole
    must be all the pods render there (_list_alone)."""
    pods = _pods_with_marks(stream, maps, lists)
    unmarked = rendered_pods(original) if original is not None else None
    adds = {e.path: e.siblings.get("tolerations") for e in edits}

    def rendered(place: Path_) -> int:
        return len(re.findall(rf"{re.escape(LIST_MARKER)}{lists.index(place)}(?!\d)", stream + rest))

    for edit in edits:
        added = edit.siblings.get("tolerations")
        mine = [marks for taken, marks in pods if edit.path in taken]
        lasts = {marks[-1] if marks else None for marks in mine}
        place = lasts.pop() if len(lasts) == 1 else None
        size = get_path(listed, place) if listed is not None and place is not None else None
        valued = bool(mine) and isinstance(size, list) and all(len(marks) == len(size) for marks in mine)
        if place is not None and valued and joins(joined, place) and (added or edit.covered):
            edit.siblings[OWN_TOLERATIONS] = [*(added or []), *edit.covered]
            edit.siblings.pop("tolerations", None)
            edit.joins = place
            continue
        if place is not None and edit.covered and not added:
            edit.kept_in = place
            continue
        if not added:
            continue
        sharers = [(taken, marks.count(place)) for taken, marks in pods if place is not None and place in marks]
        alone = place is not None and rendered(place) == sum(n for _, n in sharers)
        if alone and unmarked is not None and place is not None:
            alone = _list_alone(unmarked, pods, place, get_path(values or {}, place))
        if alone and all(any(adds.get(p) == added for p in t) for t, _ in sharers):
            edit.places["tolerations"] = place
            continue
        beside = sibling_path(edit.path, "tolerations")
        if beside in lists and (beside not in planted or rendered(beside)):
            # beside the map is the chart's own list, rendered elsewhere too (fauxpilot's proxy pod, which takes no
            # device, renders `.Values.tolerations` as its GPU pod does), or by no template at all (hpe's
            # vulnerability-analysis declares `tolerations: []` and never reads it: passed through, a user's list
            # would render with the DRA values off too): the toleration goes under its own key
            edit.siblings[OWN_TOLERATIONS] = edit.siblings.pop("tolerations")


# a list the pass-through joined before (also a list with a default: `concat (($v.x | default $b.x) | default list)`)
_JOINED = re.compile(r"\bconcat \(([$.][\w.$]*|\([$.][\w.$]* \| default [$.][\w.$]*\)) \| default list\)")
# a call of a tolerations helper whose argument's list the pass-through joined before (_join_own)
_JOINED_CALL = re.compile(r'^(\s*\{\{-?\s*include\s+"([^"]+)"\s+)\(set \(omit ([$.][\w.$]*) "tolerations"\)')


def joined_lists(texts: list[str]) -> frozenset[str]:
    """The values lists (their expressions' keys, `worker.tolerations`) the templates render as a pod's whole
    `tolerations:`, in the shapes template_edits joins another list to (_joinable_list, or a call of a helper of
    tolerations_helpers given the list's map), or joined before."""
    out = set()
    heads = _pod_heads()
    called = tolerations_helpers(dict(enumerate(texts)))
    rewritten = any(f".Values.{VALUES_KEY}" in text for text in texts)  # by an earlier fix (template_edits)
    for text in texts:
        lines = text.splitlines()
        for j, line in enumerate(lines):
            call = _TOLERATIONS_CALL.match(line) or _JOINED_CALL.match(line)  # sim.tolerations, or joined before
            if call and call.group(2) in called and _beside(lines, j, heads) is not None:
                out.update(".".join(words) for words in _list_words(f"{call.group(3)}.tolerations"))
            if line.strip() != "tolerations:" or (pod := _beside(lines, j, heads)) is None:
                continue
            found = _joinable_list(lines, parent_line(lines, pod), line)
            if found is not None and rewritten and _passed_before(lines, parent_line(lines, pod), j):
                continue  # added by an earlier fix, or left as it was
            around = " ".join(lines[max(j - 1, 0) : j + 2])
            expr = found[2].group(2) if found else (m.group(1) if (m := _JOINED.search(around)) else "")
            out.update(".".join(words) for words in (_list_words(expr) if expr else []))
    return frozenset(out)


def _passed_before(lines: list[str], pod: int, at: int) -> bool:
    """Whether the pod's `tolerations:` at line `at`, from one values list, may be the block an earlier fix added to a
    pod that wrote none (_list_block: `{{- with X.tolerations }}`): the pod at line `pod` renders the claims that fix
    passed through, `{{- with X.resourceClaims }}` (`$dramigrateResourceClaims | uniq`) above `resourceClaims:`. Had
    that fix joined the list, it would read `with concat ...`: a second fix takes it as the first did, not as the
    chart's own to join (the DRA values carry it whole)."""
    ind = " " * line_indent(lines[at])
    opened = re.compile(rf"{ind}\{{\{{- with \S*(?:\.r|\$dramigrateR)esourceClaims\b.*")
    return any(lines[j] == f"{ind}resourceClaims:" and opened.fullmatch(lines[j - 1]) for j in _pod_span(lines, pod))


def _beside(lines: list[str], j: int, heads: set[str]) -> int | None:
    """The line of the pod's `containers:` (one of `heads`) in the block of line j, at its indent; None when none."""
    at = line_indent(lines[j])
    for step in (-1, 1):
        k = j + step
        while 0 <= k < len(lines):
            text = lines[k]
            if bare(text) in heads and line_indent(text) == at:
                return k
            if (
                not is_control(text) and line_indent(text) < at
            ):  # an action line (plex's `{{ toYaml ... | indent 6 }}` at
                break  # column 0) writes into the block
            k += step
    return None


def joins(joined: frozenset[str], place: Path_) -> bool:
    """Whether a template joins another list to the values list at `place` (joined_lists)."""
    return any(_ends_with(place, words.split(".")) for words in joined if words)


def _section_keys(block: Any) -> set[tuple[str, str]]:
    block = block if isinstance(block, dict) else {}
    return {(s, str(k)) for s in ("limits", "requests") for k in block.get(s) or {}}


def _counts(block: Any, keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The device counts of a resources map at `keys` (section, key), as text ("2" and 2 alike)."""
    block = block if isinstance(block, dict) else {}
    return {(s, k): str((block.get(s) or {}).get(k)) for s, k in keys}


def device_map(
    found: tuple[Path_, ...], merged: dict[str, Any], old: dict[str, Any], new: dict[str, Any], what: str
) -> Path_ | None:
    """Of the values maps a container's resources merge (`found`), the one that holds the device keys the migration
    drops (its DRA values drop them there and put `resourceClaims` beside it); None when no map feeds it."""
    if len(found) <= 1:
        return found[0] if found else None
    gone = _section_keys(old) - _section_keys(new)
    holders = [p for p in found if gone & _section_keys(get_path(merged, p))]
    if len(holders) > 1:  # tembo-ai: a service's 2 GPUs over its defaults' 1: the map whose counts the merge kept
        holders = [p for p in holders if _counts(get_path(merged, p), gone) == _counts(old, gone)] or holders
    if len(holders) != 1 or not gone <= _section_keys(get_path(merged, holders[0])):
        raise NotPassThrough(
            f"{what} merges the values maps {', '.join(display(p) for p in found)} and the device keys are in "
            f"{'several' if holders else 'none'} of them: the pass-through drops them from one map only"
            + (
                " and puts resourceClaims beside it, so the merged resources would keep another map's device key"
                if holders
                else ""
            )
        )
    others = [_plain(get_path(merged, p) or {}) for p in found]
    if not any(_plain(old) in (_merge_maps(a, b), _merge_maps(b, a)) for a in others for b in others if a is not b):
        raise NotPassThrough(
            f"{what}: its resources are not the merge of the values maps {display(holders[0])} and another"
        )
    return holders[0]


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _as_text(value: Any) -> Any:
    """The value with each scalar as its text: a map passed through entry by entry with `{{ $v | quote }}` renders
    the quantity `1` as "1", the same request. A null key is left out: a values file's null deletes the chart's
    default (`nvidia.com/gpu: null` beside `amd.com/gpu: "1"`), and a null request renders as none."""
    if isinstance(value, dict):
        return {str(k): _as_text(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    return str(value)


def map_edits(
    original: str,
    migrated: str,
    fed: dict[tuple[Any, int, int], tuple[Path_, ...]],
    merged: dict[str, Any],
    hint: tuple[str, Pattern],
    copied: frozenset[tuple[Path_, str, str]] = frozenset(),
) -> tuple[list[MapEdit], dict[str, Any]]:
    """The values edits that make the chart render the migration, and the claim templates (name -> spec). `copied`:
    the device keys (map, section, key) a template line copies into a container from its map (copies): such a
    container follows the map another container of its pod takes whole."""
    before, after = objects(original), objects(migrated)
    claim_templates = {k[3]: docs[0] for k, docs in after.items() if k[1] == "ResourceClaimTemplate"}
    edits: dict[Path_, MapEdit] = {}
    left: dict[tuple[Any, int, int], tuple[str, dict[str, Any]]] = {}  # the containers the migration leaves as is
    for key, docs in before.items():
        if key not in after or len(docs) != 1 or len(after[key]) != 1:
            continue
        old_pods: list[tuple[list[Any], dict[str, Any]]] = []
        new_pods: list[tuple[list[Any], dict[str, Any]]] = []
        singles = single_containers(key)
        pod_specs(docs[0], old_pods, [], singles)
        pod_specs(after[key][0], new_pods, [], singles)
        paths_: list[str] = []
        _pod_paths(docs[0], paths_, "", singles)
        for p, ((old_trail, old), (new_trail, new)) in enumerate(zip(old_pods, new_pods, strict=False)):
            named = [
                *(
                    f"{k}[{i}]"
                    for k in ("initContainers", "containers")
                    for i, x in enumerate(old.get(k) or [])
                    if isinstance(x, dict)
                ),
                *(k for k in singles if isinstance(old.get(k), dict)),
            ]  # each container's path in its pod spec, in pod_containers' order
            changed = []
            for c, (o, n) in enumerate(zip(pod_containers(old, singles), pod_containers(new, singles), strict=False)):
                if o.get("resources") != n.get("resources"):
                    changed.append((c, o, n))
                elif p < len(paths_):
                    left[(key, p, c)] = (f"{paths_[p]}.{named[c]}".lstrip("."), o)
            if not changed:
                continue
            paths = set()
            claimed: dict[Path_, set[str]] = {}  # map -> the claims its containers in this pod name
            copiers: list[tuple[str, Path_]] = []
            for c, o, n in changed:
                what = f"{key[1]}/{key[3]} container {o.get('name')}"
                # a device count of 0 migrates to no key: a container with nothing else asks for no resources
                old_res, new_res = o.get("resources") or {}, n.get("resources") or {}
                if (key, p, c) not in fed and (source := _copied_from(old_res, new_res, copied, merged)):
                    copiers.append((what, source))
                    continue
                where = f"{hint[0]}:{hint[1].line}: {hint[1].describe()}: {what}"
                path = device_map(fed.get((key, p, c), ()), merged, old_res, new_res, where)
                merges = len(fed.get((key, p, c), ())) > 1
                if path is None:
                    why = "does not take its resources whole from one values map"
                    named = _equal_map(merged, _plain(old_res))
                    if named is not None:  # dell's `resources: {embedqa: {limits: ..}, nemotron: ..}`
                        why = (
                            f"takes its resources from the values map {display(named)}, which is not a key named "
                            "resources (or *Resources): the pass-through puts the pod's resourceClaims beside such a "
                            "key"
                        )
                        if len(named) > 1 and named[-2] == "resources":
                            why += ", and not every key under its `resources:` is a map with limits or requests"
                    raise NotPassThrough(
                        f"{hint[0]}:{hint[1].line}: {hint[1].describe()}: {key[1]}/{key[3]} container {o.get('name')} "
                        + why
                    )
                seen = old_res
                if not merges and (fallback := _fallback_map(path, merged, old_res)):
                    path, seen = fallback, _without_own_claims(old_res, get_path(merged, fallback))
                edit = edits.setdefault(path, MapEdit(path, flat=flat(get_path(merged, path))))
                if not merges and not _passed_as_is(edit, merged, seen):
                    raise NotPassThrough(f"{where}: {_not_as_is(path, merged, old_res, new_res)}")
                for section in ("limits", "requests"):
                    gone = [k for k in old_res.get(section) or {} if k not in (new_res.get(section) or {})]
                    gone = (
                        [k for k in gone if not any(k in keys for keys in edit.removed.values())] if edit.flat else gone
                    )
                    if gone:
                        edit.removed[section] = gone
                edit.claims = [c for c in new_res.get("claims") or [] if c not in (old_res.get("claims") or [])]
                claimed.setdefault(path, set()).update(str(c.get("name")) for c in edit.claims)
                paths.add(path)
            for what, source in copiers:
                if source not in paths:
                    raise NotPassThrough(
                        f"{what} copies its device keys from {display(source)}, which no container of its pod takes"
                    )
            shares = _pod_claims(old, new, {p: claimed[p] for p in paths}, f"{key[1]}/{key[3]}")
            for path, added in shares.items():
                edit = edits[path]
                for name, items in added.items():
                    if items:
                        edit.siblings[name] = items
                given = [t for t in old.get("tolerations") or [] if isinstance(t, dict)]
                edit.covered += [
                    t
                    for t in _plugin_tolerations(old, new)
                    if t not in edit.siblings.get("tolerations", []) + edit.covered and any(covers(g, t) for g in given)
                ]
                if edit.flat:
                    _claims_named_by_pod(edit, f"{key[1]}/{key[3]}")
                edit.unpinned.update(unpin.need(path) for path in unpin.dropped(old, new))
                for old_group, new_group in zip(reversed(old_trail), reversed(new_trail), strict=False):
                    old_params, new_params = (
                        old_group.get("rayStartParams") or {},
                        new_group.get("rayStartParams") or {},
                    )
                    if old_params != new_params:
                        edit.siblings["rayStartParams"] = {
                            k: v for k, v in new_params.items() if old_params.get(k) != v
                        }
                        break
    if not edits:
        raise NotPassThrough(f"{hint[0]}:{hint[1].line}: the migration changes no values resources map")
    _none_left(edits, fed, left)
    return list(edits.values()), claim_templates


def _none_left(
    edits: dict[Path_, MapEdit],
    fed: dict[tuple[Any, int, int], tuple[Path_, ...]],
    left: dict[tuple[Any, int, int], tuple[str, dict[str, Any]]],
) -> None:
    """Raises LeftAlone for a container that takes a map whose device keys the DRA values drop, when the migration
    leaves that container's device request as it is (rh-ai-quickstart's model-serving passes each model's
    `resources` to the InferenceService's predictor and to its `workerSpec`, which no workloads entry names)."""
    for (key, p, c), maps in fed.items():
        if (key, p, c) not in left:
            continue
        where, container = left[(key, p, c)]
        res = container.get("resources") or {}
        for path in maps:
            edit = edits.get(path)
            gone = [k for s, keys in (edit.removed.items() if edit else ()) for k in keys if k in (res.get(s) or {})]
            if gone:
                raise LeftAlone(
                    f"{key[1]}/{key[3]}: the values map {display(path)} goes into {where} ({container.get('name')}) "
                    f"too, whose {gone[0]} the migration leaves as it is: the DRA values that move it to a claim in "
                    "the other containers would take it from this one too, with no claim; give this container a "
                    "resources map of its own",
                    str(key[3]),
                    where,
                )


def _pod_claims(
    old: dict[str, Any], new: dict[str, Any], claimed: dict[Path_, set[str]], what: str
) -> dict[Path_, dict[str, list[Any]]]:
    """The pod-level lists the migration adds (`resourceClaims`, `tolerations`), for each values map its containers
    take. One map takes them whole. Several (h2oGPT and its vLLM server in one pod, each passing its own map): each
    map's `resourceClaims` sibling holds the claims its containers name (the migration's one claim with a request per
    container, in each), and each map takes the tolerations; the pod renders the lists together, each item once."""
    added = {n: [x for x in new.get(n) or [] if x not in (old.get(n) or [])] for n in ("resourceClaims", "tolerations")}
    if len(claimed) == 1:
        return {next(iter(claimed)): added}
    if any(not any(str(c.get("name")) in names for names in claimed.values()) for c in added["resourceClaims"]):
        raise NotPassThrough(f"{what}: one pod takes several values resources maps with devices, and a claim none")
    return {
        p: {**added, "resourceClaims": [c for c in added["resourceClaims"] if str(c.get("name")) in names]}
        for p, names in claimed.items()
    }


def _passed_as_is(edit: MapEdit, merged: dict[str, Any], resources: dict[str, Any]) -> bool:
    """Whether a container's resources are the values map as it is: the map whole, or, for a flat map, in each of the
    sections the container writes (beside keys the template writes itself: `memory: 1Gi`, then the map's entries)."""
    value = _as_text(get_path(merged, edit.path) or {})
    if not edit.flat:
        return value == _as_text(resources)
    sections = [_as_text(resources[s] or {}) for s in ("limits", "requests") if s in resources]
    return bool(sections) and all(s.items() >= value.items() for s in sections)


def _fallback_map(path: Path_, merged: dict[str, Any], resources: dict[str, Any]) -> Path_ | None:
    """The values map a container's resources come from when the map that feeds it (`path`, found with a marker in
    it) is empty and a helper or `default` takes another map then (nvcf's multi-node chart: `with .Values.resources`
    replaces the selected cluster profile's `resources`, else the profile's own): the one resources map whose value
    the container's resources are; None when the map is set, or no such map or several are."""
    if get_path(merged, path) or not resources:
        return None
    found = [
        p
        for p in resources_maps(merged)
        if p != path and (held := get_path(merged, p)) and _plain(held) == _plain(_without_own_claims(resources, held))
    ]
    return found[0] if len(found) == 1 else None


def _without_own_claims(resources: dict[str, Any], held: Any) -> dict[str, Any]:
    """A container's resources without the `claims` its template writes itself after the values map `held` (nvcf's
    RDMA claim of a profile that turns it on), when the map holds none: built_map_edits joins the map's to them."""
    if isinstance(held, dict) and "claims" not in held:
        return {k: v for k, v in resources.items() if k != "claims"}
    return resources


def _not_as_is(path: Path_, merged: dict[str, Any], old: dict[str, Any], new: dict[str, Any]) -> str:
    """Why the container's resources (`old`, migrated to `new`) are not the values map at `path` as it is, and what
    the chart's maintainer can do."""
    gone = _section_keys(old) - _section_keys(new)
    if gone and not gone & _section_keys(get_path(merged, path)):
        keys = ", ".join(sorted({k for _, k in gone}))
        # nvcf's multi-node chart: a helper takes the selected profile's map unless `resources` is set, which the marker
        # in `resources` does; the defaults render the profile's, so DRA values in `resources` would replace it whole
        if source := _equal_map(merged, _plain(old), keyed=True):
            return (
                f"the container's resources are the values map {display(path)} when it is set and another map when "
                f"it is empty, as here: its device keys ({keys}) come from {display(source)} (a helper picks one map "
                "or the other in a way the pass-through does not read), so there is no one map to put the DRA claims "
                "in and the pod's resourceClaims beside; to have fix rewrite it, make the template take the "
                "container's resources from one values map (`A | default B`, `or A B`, `coalesce A B` and an "
                "if/else between two maps are read)"
            )
        # nemo-retriever: `$resources := deepCopy $roleCfg.resources`, then `set ($resources.limits | default dict)
        # "nvidia.com/gpu" $gpuCount` under the role's `gpu.enabled`: no values map holds the key
        return (
            f"the container's resources are the values map {display(path)} with device keys ({keys}) that no values "
            "map holds: the template adds them to its copy of the map itself (a `set`, `merge` or `dict` of the key, "
            "its count from another value: see the related line), so DRA values in the map cannot take them away "
            "and the pass-through has nothing to move: the template builds the container's map, it does not pass "
            "one through"
        )
    return (
        f"the values map {display(path)} is not passed through as is (the container's resources are not that map: "
        "the template merges another map into it, defaults it or adds keys), so the claims the DRA values add to the "
        "map would not be the container's"
    )


def _claims_named_by_pod(edit: MapEdit, what: str) -> None:
    """A flat map cannot hold the container's `claims`: the template names them after the pod's `resourceClaims`
    (SECTION_CONTENT), which holds when the container claims each of the pod's new claims whole and no other."""
    names = [c.get("name") for c in edit.siblings.get("resourceClaims", [])]
    if [c for c in edit.claims if set(c) != {"name"}] or [c["name"] for c in edit.claims] != names:
        raise NotPassThrough(
            f"{what}: its container takes the values map {display(edit.path)} as its limits and requests, and "
            "claims other than the pod's new resourceClaims, each whole: the container's claims cannot go in that "
            "map, and the template names them after the pod's"
        )
    edit.claims = []


def _copied_from(
    old: dict[str, Any], new: dict[str, Any], copied: frozenset[tuple[Path_, str, str]], merged: dict[str, Any]
) -> Path_ | None:
    """The values map a container's dropped device keys are copied from, with the map's counts (copies), or None."""
    gone = _section_keys(old) - _section_keys(new)
    sources = {
        path
        for section, k in gone
        for path, s, key in copied
        if (s, key) == (section, k) and str(get_path(merged, (*path, section, key))) == str(old[section][k])
    }
    if not gone or len(sources) != 1:
        return None
    (path,) = sources
    return path if all((path, s, k) in copied for s, k in gone) else None


RELEASE_PREFIX = "{{ .Release.Name }}-"


def release_scoped(root: Path, rels: set[str]) -> bool:
    """Whether the chart's claim templates are named after the release: yes when the rewrite writes the pods'
    `resourceClaims` pass-through itself (it renders the names with `tpl`, so two releases in one namespace get
    their own templates); no when a template renders that key already with plain `toYaml` (KubeRay's)."""
    existing = root / TEMPLATE_FILE
    if existing.is_file():
        # (its metadata's `namespace: {{ $.Release.Namespace }}` is no name)
        return re.search(r"\.Release\.Name\b", existing.read_text(encoding="utf-8")) is not None
    return not any("resourceClaims" in (root / rel).read_text(encoding="utf-8") for rel in rels)


def group(edit: MapEdit, chart: str) -> str:
    """The values group whose pods take the map (`worker` for worker.resources, `deployment` for a map keyed under
    deployment.resources), or the chart's name at the top."""
    if edit.group:
        return edit.group
    return next((str(p) for p in reversed(edit.path[: -2 if keyed(edit.path) else -1]) if isinstance(p, str)), chart)


def claim_names(
    edits: list[MapEdit], claim_templates: dict[str, Any], chart: str, scoped: bool = False, alias: str = ""
) -> dict[str, Any]:
    """The `resourceClaimTemplates` values entries, named `<group>-<claim>-<hash>` (the spec hash the migration
    gave it), with the pods' `resourceClaims` following; `scoped`: the pods name them `{{ .Release.Name }}-<name>`,
    as the claim-template file renders them. Groups whose claims ask for the same (h2oGPT's runtime and its vLLM
    server a GPU each) share one template, named after the chart: each pod still gets a claim of its own from it.
    `alias`: the subchart's key in the umbrella's values, first in each name."""
    for claim in (c for e in edits for c in e.siblings.get("resourceClaims", [])):
        if claim.get("resourceClaimTemplateName") not in claim_templates:
            raise NotPassThrough(
                f"the migration's ResourceClaimTemplate {claim.get('resourceClaimTemplateName')} is not in the render"
            )

    def asks(claim: dict[str, Any]) -> str:
        return json.dumps([claim["name"], claim_templates[claim["resourceClaimTemplateName"]]["spec"]], sort_keys=True)

    groups: dict[str, set[str]] = {}  # what a claim asks for -> the groups whose pods ask it
    for edit in edits:
        for claim in edit.siblings.get("resourceClaims", []):
            groups.setdefault(asks(claim), set()).add(group(edit, chart))
    out: dict[str, Any] = {}
    for edit in edits:
        renamed = []
        for claim in edit.siblings.get("resourceClaims", []):
            old = claim["resourceClaimTemplateName"]
            owner = group(edit, chart) if len(groups[asks(claim)]) == 1 else chart
            suffix = old.rsplit("-", 1)[-1]
            base = re.sub(r"[^a-z0-9-]+", "-", f"{alias}-{owner}-{claim['name']}".lower()).strip("-")
            name = f"{base[: 62 - len(suffix)]}-{suffix}"
            out[name] = without_api_defaults(claim_templates[old]["spec"])
            renamed.append({**claim, "resourceClaimTemplateName": (RELEASE_PREFIX if scoped else "") + name})
        if renamed:
            edit.siblings["resourceClaims"] = renamed
    return out


def template_names(templates: dict[Path_, dict[str, Any]]) -> set[str]:
    """The names of the `resourceClaimTemplates` values entries (by the values scope that holds them)."""
    return {name for own in templates.values() for name in own}


def unused_templates(
    render: Any, names: set[str], release: str, copies: set[str] = frozenset()
) -> frozenset[tuple[str, str, str]]:
    """The ResourceClaimTemplates of a render, among the values entries `names` (values-dra.yaml's, with the maps
    under a switch the defaults leave off: a value set takes some of them), that no object of the render names: a
    claim template no pod names allocates nothing (each pod gets its claim from one), so the proof does not compare
    it; as (kind, namespace, name). Among `copies` (every values entry), those no object of their namespace names
    that one of another namespace does: the claim-template file renders each template in every namespace of the
    workloads (claimnamespaces.py), and a pod claims only from its own."""
    if not names and not copies:
        return frozenset()
    found = objects(render.stream + render.rest)
    named: dict[str, set[str]] = {}  # by namespace

    def walk(node: Any, namespace: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "resourceClaimTemplateName" and isinstance(v, str):
                    named.setdefault(namespace, set()).add(v)
                else:
                    walk(v, namespace)
        elif isinstance(node, list):
            for v in node:
                walk(v, namespace)

    for key, docs in found.items():
        if key[1] != "ResourceClaimTemplate":
            walk(docs, str(key[2] or ""))
    anywhere = set().union(*named.values())

    def ours(among: set[str]) -> set[str]:
        return among | {f"{release}-{n}" for n in among}

    return frozenset(
        key[1:]
        for key in found
        if key[1] == "ResourceClaimTemplate"
        and (
            (key[3] in ours(names) and key[3] not in anywhere)
            or (key[3] in ours(copies) and key[3] in anywhere and key[3] not in named.get(str(key[2] or ""), set()))
        )
    )


def superseded(
    edits: list[MapEdit],
    templates: dict[Path_, dict[str, Any]],
    defaults: list[MapEdit],
    default_templates: dict[Path_, dict[str, Any]],
) -> dict[Path_, dict[str, Any]]:
    """The claim templates of the chart defaults' `values-dra.yaml` (its map edits and claim templates by scope) that
    a values file's DRA variant (`edits`, `templates`) leaves unused when both are given, each set to null: the
    variant sets the pods' `resourceClaims` of the same maps (Helm replaces the list), so a default template it
    does not name would render beside its own (optimum-habana: `ci/multi-card-lora-clm-values.yaml` asks for 8
    Gaudi cards where the defaults ask for 1, and `-f values-dra.yaml -f ...-dra.yaml` rendered both); so are those
    of the maps that ask for no device with the file (aioneks' `resources.gpu` when the file picks `neuron`)."""
    mine = {e.path for e in edits if e.siblings.get("resourceClaims")}
    edited = {e.path for e in edits}
    stale = {
        str(c.get("resourceClaimTemplateName", "")).removeprefix(RELEASE_PREFIX)
        for e in defaults
        if e.path in mine or e.path not in edited
        for c in e.siblings.get("resourceClaims", [])
    }
    out: dict[Path_, dict[str, Any]] = {}
    for scope, names in default_templates.items():
        for name in names:
            if name in stale and name not in templates.get(scope, {}):
                out.setdefault(scope, {})[name] = None
    return out


def stale_lists(edits: list[MapEdit], defaults: list[MapEdit], merged: dict[str, Any]) -> dict[Path_, Any]:
    """The tolerations lists the chart defaults' `values-dra.yaml` (`defaults`) fills for maps that a values file's DRA
    variant (`edits`) leaves without a device when both are given, each set to the file's own list (Helm replaces
    lists): aioneks' values-dra.yaml tolerates nvidia.com/gpu for `resources.gpu`, and the neuron file's pod, which
    writes its neuron toleration itself, took that one too. The toleration under its own key (`resourceTolerations`)
    also where the file edits the map but adds none: its own tolerations list tolerates the taint already, and the
    defaults' key, which that list does not replace, would give the pod a second one."""
    edited = {e.path for e in edits}
    out: dict[Path_, Any] = {}
    for name in ("tolerations", OWN_TOLERATIONS):
        mine = {e.place(name) for e in edits if e.siblings.get(name)}
        for e in defaults:
            place = e.place(name)
            if e.siblings.get(name) and (e.path not in edited or name == OWN_TOLERATIONS) and place not in mine:
                current = get_path(merged, place)
                out[place] = current if isinstance(current, list) else []
    return out


# --- the DRA variant of a values file ------------------------------------------------------------------------


def variant_path(path: Path) -> Path:
    """`gpu.yaml` -> `gpu-dra.yaml`, beside it."""
    return path.with_name(f"{path.stem}-dra{path.suffix or '.yaml'}")


def variant_overlay(
    edits: list[MapEdit],
    templates: dict[Path_, dict[str, Any]],
    merged: dict[str, Any],
    lists: dict[Path_, Any] | None = None,
) -> dict[str, Any]:
    """The DRA overlay of a values file (`gpu.yaml` -> `gpu-dra.yaml`, given after it): only what DRA changes of
    `merged` (the chart's defaults under the file): the device keys set to null, the container's `claims`, the pod's
    siblings, the claim templates, a list that holds a device key copied whole (Helm replaces lists), and `lists`
    (stale_lists) set again. Helm deletes a null only for a key the chart's own values.yaml sets: a key only the file
    sets keeps its null, which the template drops from a map with claims (DROP_NULLS; kept nulls:
    passthroughproof.py)."""
    out = overlay_values(edits, templates, merged)
    for place, value in (lists or {}).items():
        out = set_path(out, place, copy.deepcopy(value))
    return out


def variant_overlay_text(path: Path, values: dict[str, Any]) -> str:
    """The overlay's text: a header that says how to use it, then the values (overlay_text's layout)."""
    head = (
        f"# DRA ResourceClaims (resource.k8s.io/v1, Kubernetes 1.34+) for the devices of {path.name}: give it after "
        f"that file, `-f {path.name} -f {variant_path(path).name}` (a null deletes a device key)\n"
    )
    return head + _dumped(values)


def variant_text(
    path: Path,
    edits: list[MapEdit],
    templates: dict[Path_, dict[str, Any]],
    merged: dict[str, Any],
    defaults: dict[str, Any] | None = None,
    lists: dict[Path_, Any] | None = None,
) -> str:
    """The values file with the DRA request in place of the device key, comments and layout kept. A device key
    the chart's defaults set too becomes null (Helm deletes a chart-default key a values file sets to null; a
    key left out would come back from the defaults). `templates`: the claim templates by the values key they go
    under (() for the chart itself; an umbrella passes each subchart's values under its name); `lists`: the lists
    it sets again (stale_lists)."""
    from ruamel.yaml.comments import CommentedMap

    from dramigrate.documents import start_edit

    yf, doc = _values_document(path, _without_key_comments(path, path.read_text(encoding="utf-8"), edits))
    start_edit(doc)
    root = doc.data

    def node_at(path_: Path_) -> Any:
        """The node at path_ in the file; a mapping the file leaves out is added when the chart's defaults set
        it (the file only adds to the defaults there: its variant carries the DRA edit of the defaults' map)."""
        node = root
        for n, part in enumerate(path_):
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    raise NotPassThrough(f"{path}: does not set {display(path_)}")
            elif isinstance(node, dict) and part not in node and isinstance(get_path(defaults or {}, path_), dict):
                node[part] = CommentedMap()
            elif not isinstance(node, dict) or part not in node:
                where = display(path_[: n + 1])
                raise NotPassThrough(f"{path}: does not set {where} (it sets the device key elsewhere)")
            node = node[part]
        return node

    for edit in edits:
        res = node_at(edit.path)
        for section, keys in edit.removed.items():
            block = res if edit.flat else res.get(section)
            if block is None and get_path(defaults or {}, (*edit.path, section)) is not None:
                block = res[section] = CommentedMap()  # the file leaves the section to the chart's defaults
            if block is None:
                raise NotPassThrough(f"{path}: the device key of {display(edit.path)}.{section} is set in another file")
            for k in keys:
                if k not in block and get_path(defaults or {}, edit.key_path(section, k)) is None:
                    raise NotPassThrough(f"{path}: {display(edit.key_path(section, k))} is set in another file")
                if get_path(defaults or {}, edit.key_path(section, k)) is not None:
                    block[k] = None
                    if hasattr(block, "yaml_add_eol_comment"):
                        after = (block.ca.items.get(k) or [None] * 3)[2]  # with the comment lines below the key
                        block.yaml_add_eol_comment("null deletes the chart's default: the claims ask for it", k)
                        if after is not None and "\n" in after.value.rstrip("\n"):
                            mine = block.ca.items[k][2]
                            mine.value = mine.value.rstrip("\n") + after.value[after.value.index("\n") :]
                else:
                    del block[k]
            left = [k for k in get_path(merged, edit.section_path(section)) or {} if k not in keys]
            if edit.flat:
                continue  # the map itself: emptied, it renders the sections empty, which Kubernetes reads as none
            if not left and get_path(defaults or {}, (*edit.path, section)) is not None:
                res[section] = None  # nothing else in it: the chart's default map goes whole, as the migration's
                if hasattr(res, "yaml_add_eol_comment"):
                    res.yaml_add_eol_comment("null deletes the chart's default: the claims ask for it", section)
            elif not block:
                del res[section]
        if edit.claims:
            res["claims"] = [*(res.get("claims") or []), *copy.deepcopy(edit.claims)]
        for name, added in edit.siblings.items():
            key = edit.place(name)
            holder = _common(edit.path[:-1], key[:-1])  # the mapping that holds `resources:` (or the pod options)
            parent = node_at(holder)
            for part in key[len(holder) : -1]:  # `resourceClaims:` keyed as `resources:` is
                parent = parent.setdefault(part, CommentedMap())
            current = get_path(merged, key)
            if isinstance(added, list):
                value = [*(current if isinstance(current, list) else []), *copy.deepcopy(added)]
            else:
                value = {**(current if isinstance(current, dict) else {}), **copy.deepcopy(added)}
            parent[key[-1]] = value
            if name == COUNTS and hasattr(parent, "yaml_add_eol_comment"):
                parent.yaml_add_eol_comment("the counts the claims ask for, for the templates that read them", key[-1])
    for place, value in (lists or {}).items():
        parent = root
        for part in place[:-1]:
            parent = parent.setdefault(part, CommentedMap())
        parent[place[-1]] = copy.deepcopy(value)
        if hasattr(parent, "yaml_add_eol_comment"):
            parent.yaml_add_eol_comment(
                f"not the list {OVERLAY} sets: these values need no toleration of it", place[-1]
            )
    for scope, own in templates.items():
        holder = root
        for part in scope:  # an umbrella chart passes the subchart's values under its name
            if not isinstance(holder.get(part), dict):
                holder[part] = {}
            holder = holder[part]
        holder[VALUES_KEY] = entries = CommentedMap({**(holder.get(VALUES_KEY) or {}), **copy.deepcopy(own)})
        for name in (name for name, spec in own.items() if spec is None):  # see superseded()
            entries.yaml_add_eol_comment(f"null drops the one {OVERLAY} adds: these values name their own", name)
    return _blanks_below(yf.text, yf.render())


def _blanks_below(original: str, text: str) -> str:
    """The variant with each block it adds right below blank lines of the original moved above them when the block
    is indented deeper than the line below it: those blank lines end the map the block belongs to (`claims:` of a
    resources map, `resourceClaims:` after the last key of its group), where a maintainer writes it. Unchanged when
    that would read differently (a block scalar above keeps its blank lines)."""
    import yaml

    o, t = original.splitlines(keepends=True), text.splitlines(keepends=True)
    out: list[str] = []
    for tag, _, i2, j1, j2 in difflib.SequenceMatcher(a=o, b=t, autojunk=False).get_opcodes():
        block = t[j1:j2]
        blank = next((n for n in range(len(out)) if out[len(out) - 1 - n].strip()), len(out))
        below = o[i2] if i2 < len(o) else ""
        if tag == "insert" and blank and below.strip() and line_indent(block[0]) > line_indent(below):
            out[len(out) - blank : len(out) - blank] = block
        else:
            out.extend(block)
    moved = "".join(out)
    try:
        return moved if list(yaml.safe_load_all(moved)) == list(yaml.safe_load_all(text)) else text
    except yaml.YAMLError:
        return text


def _values_document(path: Path, text: str) -> tuple[Any, Any]:
    """The values file's documents and the one that holds its values (a mapping)."""
    from dramigrate.documents import parse_document, split_documents

    yf = split_documents(str(path), text.encode("utf-8"))
    doc = next((d for d in yf.documents if parse_document(str(path), d) is not None), None)
    if doc is None or not isinstance(doc.data, dict):
        raise NotPassThrough(f"{path}: not a YAML mapping")
    return yf, doc


def _without_key_comments(path: Path, text: str, edits: list[MapEdit]) -> str:
    """The values file without the comment after each device key the DRA variant takes out (`nvidia.com/gpu: 2  #
    two cards`): it tells of the device-plugin request the claim replaces, and kept it would stand alone on a line
    of its own where the key was. Comment lines around the key stay."""
    _, doc = _values_document(path, text)
    lines = text.splitlines(keepends=True)
    for edit in edits:
        for section, keys in edit.removed.items():
            block = get_path(doc.data, edit.section_path(section))
            for k in keys if isinstance(block, dict) and hasattr(block, "ca") else ():
                comment = (block.ca.items.get(k) or [None] * 3)[2]
                if k in block and comment is not None and not comment.value.startswith("\n"):
                    n = doc.start_line - 1 + block.lc.key(k)[0]
                    lines[n] = lines[n][: comment.column].rstrip() + "\n"
    return "".join(lines)


def _common(a: Path_, b: Path_) -> Path_:
    """The longest path both start with."""
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[:n]


OVERLAY = "values-dra.yaml"
# the DRA values of a user's --set of a device count over values that ask for devices (values-dra.yaml, or a -f file's
# DRA variant, is for those values without the --set), given after the user's -f files in place of that --set
SET_OVERLAY = "values-set-dra.yaml"


def overlay_values(
    edits: list[MapEdit],
    templates: dict[Path_, dict[str, Any]],
    merged: dict[str, Any],
    start: dict[str, Any] | None = None,
    underneath: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The values that turn `merged` into the DRA request when given with `-f`: the device keys set to null (Helm
    deletes a chart-default key a values file sets to null), lists whole (Helm replaces lists). `start`: what the
    file holds besides (the other keys of the --set it stands for); `underneath`: the values under the file (a
    device key they leave out is left out, not set to null; None: the chart's defaults, which set them all)."""
    out = copy.deepcopy(start or {})

    def whole_lists(path: Path_) -> None:
        """Copy each list the path crosses whole into the file (Helm replaces lists, never merges into them)."""
        nonlocal out
        for i, part in enumerate(path):
            if isinstance(part, int) and not isinstance(get_path(out, path[:i]), list):
                out = set_path(out, path[:i], copy.deepcopy(get_path(merged, path[:i])))

    def gone(path: Path_) -> None:
        nonlocal out
        if any(isinstance(part, int) for part in path):  # inside a list the file holds whole: drop the key itself
            whole_lists(path)
            if isinstance(holder := get_path(out, path[:-1]), dict):
                holder.pop(path[-1], None)
        elif underneath is None or get_path(underneath, path) is not None:
            out = set_path(out, path, None)
        elif isinstance(holder := get_path(out, path[:-1]), dict):
            holder.pop(path[-1], None)

    for edit in edits:
        for section, keys in edit.removed.items():
            left = [k for k in get_path(merged, edit.section_path(section)) or {} if k not in keys]
            for k in keys if left or edit.flat else ():
                gone(edit.key_path(section, k))
            if (
                not left and not edit.flat
            ):  # nothing else in it: the whole map goes, as the migration drops an empty limits
                gone((*edit.path, section))
        whole_lists(edit.path)
        if edit.claims:
            current = get_path(merged, (*edit.path, "claims"))
            out = set_path(out, (*edit.path, "claims"), [*(current or []), *edit.claims])
        for name, added in edit.siblings.items():
            key = edit.place(name)
            current = get_path(merged, key)
            if isinstance(added, list):
                out = set_path(out, key, [*(current if isinstance(current, list) else []), *added])
            else:
                out = set_path(out, key, dict(added))
    for scope, own in templates.items():
        out = set_path(out, (*scope, VALUES_KEY), own)
    return out


SECTIONS = ("limits", "requests")


def null_map(kept: Path_) -> Path_:
    """The resources map of a kept null (kept_nulls): a device key's or a section's."""
    return kept[:-1] if kept[-1] in SECTIONS else kept[:-2]


def kept_nulls(
    values: Any, subcharts: dict[Path_, dict[str, Any]], path: Path_ = (), sections: bool = False
) -> list[Path_]:
    """The device keys the DRA overlay `values` sets to null that Helm keeps: it deletes a key a values file sets to
    null only where the chart that reads it sets it in its own values.yaml; under an umbrella's key for a subchart
    (`subcharts`: that key -> the subchart's own defaults), a null for a key only the umbrella's values set stays a
    null in the subchart's values and renders (`nvidia.com/gpu: null`) unless the template drops it (DROP_NULLS).
    `sections`: a whole section set to null too (`limits: null`, which renders, and Kubernetes reads as none)."""
    if isinstance(values, dict):
        return [kept for k, v in values.items() for kept in kept_nulls(v, subcharts, (*path, str(k)), sections)]
    section = sections and bool(path) and path[-1] in SECTIONS
    if values is not None or not (section or (len(path) >= 2 and path[-2] in SECTIONS)):
        return []
    for scope, defaults in subcharts.items():
        if tuple(path[: len(scope)]) == scope and get_path(defaults, path[len(scope) :]) is None:
            return [path]
    return []


def overlay_text(
    values: dict[str, Any],
    stands_for: tuple[str, ...] = (),
    switched: bool = False,
    switches: bool = False,
    after: tuple[str, ...] | None = None,
    also: tuple[str, ...] = (),
) -> str:
    """The chart's `values-dra.yaml` (overlay_values), for its defaults, in place of the `--set` expressions
    `stands_for` (`--set a=1`) that ask for the devices, or (`switched`) beside the `--set` that switch the
    defaults' device keys on; `switches`: for the defaults, with the maps under switches they leave off too.
    `after`: SET_OVERLAY, in place of `stands_for` over the defaults and the user's -f files of that name; `also`:
    the values files it serves too, given after them (they ask for the defaults' devices)."""
    if after is not None:
        sets = " ".join(stands_for)
        files = ", ".join(after)
        head = (
            f"# DRA ResourceClaims (resource.k8s.io/v1, Kubernetes 1.34+): `-f {SET_OVERLAY}` in place of `{sets}`"
            + (
                f", after -f {files} as they are (their -dra.yaml variants are for the values without that --set)\n"
                if after
                else f" ({OVERLAY} is for the chart's defaults without that --set)\n"
            )
        )
    elif switched:
        head = (
            f"# DRA (resource.k8s.io/v1, Kubernetes 1.34+): `-f {OVERLAY}` with your --set asks for the devices of "
            "the defaults they switch on through ResourceClaims (a null deletes a default key)\n"
        )
    elif stands_for:
        sets = " ".join(stands_for)
        head = f"# DRA ResourceClaims (resource.k8s.io/v1, Kubernetes 1.34+): `-f {OVERLAY}` in place of `{sets}`\n"
    else:
        switched_too = ", and of those the chart's switches turn on," if switches else ""
        after_files = f" (also after {', '.join(also)}, which ask for the same)" if also else ""
        head = (
            f"# DRA (resource.k8s.io/v1, Kubernetes 1.34+): `-f {OVERLAY}` asks for the devices of the "
            f"defaults{switched_too}{after_files} through ResourceClaims (a null deletes a default key)\n"
        )
        if not _claims_in(values):  # every count 0 (ibm autopilot's DaemonSet): no claim a later key could meet
            head += (
                "# The defaults ask for no device (a count of 0): a device key set after this file stays a "
                "device-plugin request; run dramigrate fix with values that ask for one to get their DRA values\n"
            )

    return head + _dumped(values)


def _claims_in(values: Any) -> bool:
    """Whether DRA values hold a claim: a non-empty `claims` list or `resourceClaimTemplates` map, at any depth."""
    if isinstance(values, dict):
        return any(
            (k in ("claims", VALUES_KEY) and bool(v)) or _claims_in(v) for k, v in values.items() if v is not None
        )
    if isinstance(values, list):
        return any(_claims_in(v) for v in values)
    return False


_FLOW_ITEMS = ("claims", "resourceClaims", "tolerations")  # lists whose scalar-only entries are one line each
_FLOW_MAPS = ("exactly", "cel")  # a claim request's device and a CEL selector: one line when their fields are scalars
# a resources section's device keys set to null (`limits: {nvidia.com/gpu: null}`, the section keeps its other keys)
_NULLED = ("limits", "requests")


def _scalars(node: Any, nulls: bool = False) -> bool:
    kinds = (str, int, float, bool, type(None)) if nulls else (str, int, float, bool)
    return isinstance(node, dict) and bool(node) and all(isinstance(v, kinds) for v in node.values())


def _compact(node: Any) -> Any:
    """`node` as the DRA values files write it, short as a maintainer would: each entry of a claims, resourceClaims
    or tolerations list (`tolerations`, `resourceTolerations`, ...) whose fields are all scalars on one line, a list
    of one such claim or toleration on its key's line, a request's `exactly` (a selector's `cel`) and the counts a
    template reads (`deviceCounts`) of scalars on one line, and a resources section of the device keys it drops
    (`limits: {nvidia.com/gpu: null}`) on one line; the rest in block style."""
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        name = str(key)
        listed = name in _FLOW_ITEMS or name.endswith("Tolerations")
        if listed and isinstance(value, list) and value and all(_scalars(t) for t in value):
            items = [FlowMap(t) for t in value]
            out[key] = FlowList(items) if len(items) == 1 and name != "resourceClaims" else items
        elif _scalars(value, nulls=name in _NULLED) and (
            name in (*_FLOW_MAPS, *_NULLED, COUNTS) or name.endswith("DeviceCounts")
        ):
            out[key] = FlowMap(value)
        else:
            out[key] = _compact(value)
    return out


def _dumped(values: dict[str, Any]) -> str:
    import yaml

    return yaml.dump(_compact(values), Dumper=BlockDumper, sort_keys=False, default_flow_style=False, width=1000)


def device_sets(
    expressions: tuple[str, ...], as_string: bool, edits: list[MapEdit]
) -> tuple[list[str], dict[str, Any]]:
    """The `--set` (or `--set-string`) expressions that set a device key the DRA values drop, and what they set
    besides it (the values file that stands for them carries that)."""
    from dramigrate.helm.render import _merge_maps, _SetParser

    found: list[str] = []
    rest: dict[str, Any] = {}
    for expression in expressions:
        parsed: dict[str, Any] = {}
        _SetParser(expression, as_string).parse_into(parsed)
        if any(
            get_path(parsed, e.key_path(section, k)) is not None
            for e in edits
            for section, keys in e.removed.items()
            for k in keys
        ):
            found.append(expression)
            rest = _merge_maps(rest, parsed)
    return found, rest


# --- the templates ---------------------------------------------------------------------------------------------

# `{{- $svcData := include $svcKey $ | fromYaml -}}` (or `fromYaml (include ...)`): a dict a helper builds
_HELPER_DICT = re.compile(r"\{\{-?\s*(\$\w+)\s*:?=\s*\(?\s*(?:include\s[^}]*\|\s*fromYaml|fromYaml\s+\(\s*include\s)")
# `{{- $rs := get $svcData "resources" -}}`, `index $svcData "resources"` or `$svcData.resources`: a map read from it
_DICT_MAP = r'\{{\{{-?\s*(\$\w+)\s*:?=\s*(?:(?:get|index)\s+{var}\s+"(\w*[Rr]esources)"|{var}\.(\w*[Rr]esources)\b)'


@dataclass(frozen=True)
class _BuiltMap:
    """A resources map read out of a dict a named helper builds (helper_built_map): 0-based lines."""

    made: int  # `{{- $svcData := include $svcKey $ | fromYaml -}}`
    read: int  # `{{- $rs := get $svcData "resources" -}}`
    dict_var: str
    map_var: str
    key: str


def _built_map(text: str) -> _BuiltMap | None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        made = _HELPER_DICT.search(line)
        if made is None:
            continue
        reads = re.compile(_DICT_MAP.format(var=re.escape(made.group(1))))
        for j in range(i + 1, len(lines)):
            if read := reads.search(lines[j]):
                return _BuiltMap(i, j, made.group(1), read.group(1), read.group(2) or read.group(3))
    return None


def helper_built_map(text: str) -> tuple[int, str] | None:
    """A template whose container resources map is read out of a dict a named helper builds and the template
    parses (`$svcData := include (printf "x.%s.settings" $entry) $ | fromYaml`, then `$rs := get $svcData
    "resources"`, groundx): no line reads a values map, so the pass-through has no values key to pass a sibling
    beside. The 1-based line of the read and a description of the shape, or None."""
    built = _built_map(text)
    if built is None:
        return None
    made = text.splitlines()[built.made].strip()
    return built.read + 1, (
        f"the container's resources map {built.map_var} is the `{built.key}` of {built.dict_var}, a dict a named "
        f"helper builds (line {built.made + 1}: `{made}`), not a values map the template reads: the "
        f"pass-through needs a values key to put `{sibling_key(built.key, 'resourceClaims')}` beside, and the "
        "helper rewrite a helper line that writes the device key"
    )


_DEFINE = re.compile(r'\{\{-?\s*define\s+"([^"]+)"')
_FORMAT_VERB = re.compile(r"%[-+# 0-9.]*[a-z]")


def _helper_names(text: str, made: str) -> re.Pattern[str]:
    """The names the include on line `made` can call: a quoted name, or the `printf` format of the variable it takes
    (`$svcKey := printf "groundx.%s.settings" $entry`, each verb any name part); any name otherwise."""
    called = re.search(r'\binclude\s+(?:"([^"]+)"|\(?\s*(\$\w+))', made)
    if called and called.group(1):
        return re.compile(re.escape(called.group(1)))
    assigned = re.search(rf'{re.escape(called.group(2))}\s*:?=\s*printf\s+"([^"]+)"', text) if called else None
    if assigned is None:
        return re.compile(".+")
    parts = _FORMAT_VERB.split(assigned.group(1))
    return re.compile("[\\w.-]+".join(re.escape(part) for part in parts))


def _reads_path(body: str, path: Path_) -> bool:
    """Whether a define's body names each key of a values map's path before the map (`.Values.layout`, `dig
    "inference"`), or picks it by a variable or a value from the map above it (`index .Values.clusterProfiles
    $profileName`, nvcf's multi-node chart): the helper that builds the dict for that map."""
    keys = [str(k) for k in path[:-1] if not isinstance(k, int)]

    def named(n: int) -> bool:
        k = re.escape(keys[n])
        if re.search(rf'(?:\.{k}\b|"{k}")', body):
            return True
        return n > 0 and re.search(rf"\bindex\s+\(?[$.\w]*\.{re.escape(keys[n - 1])}\s+[$.]\w", body) is not None

    return all(named(n) for n in range(len(keys)))


def helper_built_steps(root: Path, rel: str, text: str, maps: list[Path_]) -> str:
    """What to change by hand for a map read out of a helper-built dict (helper_built_map), for the values maps
    `maps` that ask for devices: the helper lines that copy the map into the dict (in the defines the include can
    call whose body names the map's keys), the template line the pod's sibling goes above, and the values keys."""
    built = _built_map(text)
    if built is None:
        return ""
    lines = text.splitlines()
    names = _helper_names(text, lines[built.made])
    sets = re.compile(rf'\bset\s+\$\w+\s+"{re.escape(built.key)}"\s')
    copies: list[str] = []
    for helper_rel, helper_text in _templates(root).items():
        name, body, start = "", "", 0
        for n, line in enumerate([*helper_text.splitlines(), None]):  # None: the end of the last define
            define = _DEFINE.search(line) if line is not None else None
            if define is None and line is not None:
                body += line + "\n"
                continue
            if name and names.fullmatch(name) and any(_reads_path(body, m) for m in maps):
                copies += [
                    f"{helper_rel}:{start + k + 1} (`{x.strip()}`)"
                    for k, x in enumerate(body.splitlines())
                    if sets.search(x)
                ]
            name, body, start = define.group(1) if define else "", "", n + 1
    uses = re.compile(rf"{re.escape(built.map_var)}(?![\w])")
    write = next((k for k in range(built.read + 1, len(lines)) if uses.search(lines[k])), None)
    pod = next((k for k in range(write or 0, -1, -1) if is_key(lines[k], "containers")), None) if write else None
    sibling = sibling_key(built.key, "resourceClaims")
    if not copies or pod is None:
        return ""
    where = ", ".join(".".join(str(k) for k in m) for m in maps)
    return (
        f"by hand: copy `{sibling}` into the dict where the helper copies `{built.key}` ({'; '.join(copies)}); in "
        f"{rel} above line {pod + 1} (`containers:`) write the pod's `resourceClaims` from the `{sibling}` of "
        f"{built.dict_var} (read as line {built.read + 1} reads `{built.key}`); then a DRA values file sets "
        f"`{sibling}` beside {where}, `claims` in each and the claim templates, the device key left out"
    )


def built_pod_tolerations(text: str) -> tuple[int, str] | None:
    """In a template whose container resources map is read out of a helper-built dict (helper_built_map), the first
    line after that read which writes the pod's tolerations some other way than a values list the template reads
    (groundx: `include "groundx.renderTolerations" (dict "ctx" $tl "node" $node ...)`, the dict's `tolerations` or
    else tolerations of its own): 1-based, with its text; None when the pod writes none."""
    built = _built_map(text)
    if built is None:
        return None
    for i, line in enumerate(text.splitlines()[built.read + 1 :], start=built.read + 2):
        if re.search(r"[Tt]olerations", line) and not re.search(r"\$\w+\s*:?=", line):
            return i, line.strip()
    return None


_WHOLE_INCLUDE = re.compile(r"\s*\{\{-?\s*(include\s+\"[^\"]+\"\s+[^{}|]+?)\s*-?\}\}\s*")


def built_tolerations_call(text: str) -> tuple[int, str] | None:
    """The pod's tolerations line (built_pod_tolerations) when it is one helper call alone on its line (groundx:
    `{{- include "groundx.renderTolerations" (dict "ctx" $tl "node" $node "indent" 6 "root" $) }}`): 0-based line
    and the call, which the pass-through renders again under an `if` (`.` as it is) to read the list it writes
    (fromYaml) and join the dict's tolerations to it."""
    written = built_pod_tolerations(text)
    if written is None:
        return None
    m = _WHOLE_INCLUDE.fullmatch(text.splitlines()[written[0] - 1])
    return (written[0] - 1, m.group(1)) if m else None


def own_key_for_calls(root: Path, rels: set[str], edits: list[MapEdit]) -> None:
    """The toleration the migration adds beside a map read out of a helper-built dict, in a template whose pod's
    tolerations one helper call writes (built_tolerations_call), goes under its own key (`resourceTolerations`),
    which the template joins to the list the call writes: beside the map as `tolerations`, the define would copy it
    into the dict's `tolerations`, which the call may read as the pod's own list (groundx's `$tl`) and then write
    in place of the tolerations it writes otherwise (those of the service's node)."""
    for rel in sorted(rels):
        path = root / rel
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        if not text or built_tolerations_call(text) is None:
            continue
        for edit in edits:
            if "tolerations" in edit.siblings and built_defines(root, text, [edit.path]):
                edit.siblings[OWN_TOLERATIONS] = edit.siblings.pop("tolerations")


def _joined_call(t: _Edits, ind: str, call: str, line: str, expr: str) -> list[str]:
    """The lines in place of a helper call that writes the pod's tolerations (built_tolerations_call): with the DRA
    list `expr`, one `tolerations:` key of the call's list and those of `expr` it does not tolerate already; else the
    call's line as it was."""
    own = "$dramigratePodTolerations"
    return [
        f"{{{{- if {expr} }}}}",
        f"{{{{- {own} := (({call}) | fromYaml).tolerations | default list }}}}",
        f"{ind}tolerations:",
        f"{ind}  {{{{- toYaml (concat {own} {_untolerated(t, own, expr)}) | nindent {len(ind) + 2} }}}}",
        "{{- else }}",
        line,
        "{{- end }}",
    ]


def built_tolerations_reason(text: str, written: tuple[int, str]) -> str:
    """Why the pass-through through a helper-built dict (built_map_edits) cannot migrate a pod whose tolerations line
    `written` (built_pod_tolerations) writes them some other way, when the migration adds a toleration."""
    built = _built_map(text)
    assert built is not None
    made = text.splitlines()[built.made].strip()
    return (
        f"the container's resources map {built.map_var} is the `{built.key}` of {built.dict_var}, a dict a named "
        f"helper builds from values (line {built.made + 1}: `{made}`): the pass-through through that dict would "
        f"carry the pod's claims, but not the toleration the migration adds: the pod's tolerations are written at "
        f"line {written[0]} (`{written[1]}`), not from a values list the template reads, so a DRA values file has no "
        "key to add it that keeps what that line writes"
    )


def built_defines(root: Path, text: str, maps: list[Path_]) -> dict[str, list[tuple[int, int]]]:
    """The defines the helper-built dict's include can call that read one of `maps` (helper_built_steps), by file:
    each copy of the map into the dict as (first line, end line) 0-based: the `set` line, with the `if` around it
    when that `if` holds only it."""
    built = _built_map(text)
    if built is None:
        return {}
    names = _helper_names(text, text.splitlines()[built.made])
    sets = re.compile(rf'\bset\s+\$\w+\s+"{re.escape(built.key)}"\s')
    out: dict[str, list[tuple[int, int]]] = {}
    for helper_rel, helper_text in _templates(root).items():
        lines = helper_text.splitlines()
        name, body, start = "", "", 0
        for n, line in enumerate([*lines, None]):  # None: the end of the last define
            define = _DEFINE.search(line) if line is not None else None
            if define is None and line is not None:
                body += line + "\n"
                continue
            if name and names.fullmatch(name) and any(_reads_path(body, m) for m in maps):
                for k, x in enumerate(body.splitlines()):
                    if sets.search(x):
                        at = start + k
                        wrapped = 0 < at < len(lines) - 1 and re.match(r"\s*\{\{-?\s*(?:if|with)\b", lines[at - 1])
                        closed = wrapped and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[at + 1])
                        out.setdefault(helper_rel, []).append((at - 1, at + 2) if closed else (at, at + 1))
            name, body, start = define.group(1) if define else "", "", n + 1
    return out


def built_map_edits(
    root: Path, rel: str, text: str, needs: dict[Path_, set[str]], scoped: bool, chart: str = ""
) -> tuple[str, dict[str, str]]:
    """The pass-through for a container resources map read out of a dict a named helper builds (helper_built_map):
    the pod renders each sibling the migration fills (`resourceClaims`, the `tolerations` of a pod that writes none)
    from the dict, above its `containers:`, and each define that copies a device map into the dict copies the
    siblings beside it the same way. A pod whose tolerations one helper call writes (built_tolerations_call) renders
    that call's list joined with the dict's when the dict has one. The template's text, and each helper file's text
    by path. Raises NotPassThrough for a sibling it cannot pass so, or a pod whose tolerations are written otherwise
    (built_pod_tolerations). `chart`: the chart's name (the tolerations the pod's list lacks: _untolerated)."""
    built = _built_map(text)
    if built is None:
        return text, {}
    maps = [p for p in needs if p and p[-1] == built.key]
    need = set().union(*(needs[p] for p in maps)) if maps else set()
    passed = [n for n in ("resourceClaims", "tolerations", OWN_TOLERATIONS) if n in need]
    if extra := sorted(n for n in need - set(passed) if not n.startswith(DEVICE)):
        raise NotPassThrough(f"{rel}:{built.read + 1}: the helper-built dict cannot pass `{extra[0]}` through")
    if "tolerations" in passed and OWN_TOLERATIONS in passed:
        raise NotPassThrough(f"{rel}:{built.read + 1}: the helper-built dict cannot pass two tolerations lists through")
    siblings = [sibling_key(built.key, n) for n in passed]
    lines = text.splitlines()
    uses = re.compile(rf"{re.escape(built.map_var)}(?![\w])")
    write = next((k for k in range(built.read + 1, len(lines)) if uses.search(lines[k])), None)
    heads = _pod_heads()
    pod = next((k for k in range(write, -1, -1) if bare(lines[k]) in heads), None) if write is not None else None
    if pod is None:
        raise NotPassThrough(f"{rel}:{built.read + 1}: no `containers:` line above the line that writes the map")
    edits = _Edits(text, rel, scoped, heads, lines, chart=chart)
    ind = " " * line_indent(lines[pod])
    spec = parent_line(lines, pod)
    call, joins = None, None
    if set(passed) & {"tolerations", OWN_TOLERATIONS} and (written := built_pod_tolerations(text)):
        call = built_tolerations_call(text)
        # the pod's own values list (`{{- with .Values.tolerations }}`, nvcf's multi-node chart): the DRA list joins it
        joins = _own_list(edits, spec, f"{ind}tolerations:") if call is None else None
        if call is None and joins is None:
            raise NotPassThrough(
                f"{rel}:{written[0]}: the pod's tolerations are written by `{written[1]}`, not from a values list "
                "the template reads: the toleration the migration adds has no values key to go in beside the map "
                "that keeps what that line writes"
            )
    for sibling, name in zip(siblings, passed, strict=True):
        expr = f'get {built.dict_var} "{sibling}"'
        if name != "resourceClaims" and call is not None:
            edits.replaced[call[0]] = "\n".join(_joined_call(edits, ind, call[1], lines[call[0]], expr))
        elif name != "resourceClaims" and joins is not None:
            _join_own(edits, joins, f"({expr} | default list)")  # `get` gives "" for a key the dict lacks
        elif name == "resourceClaims":
            _container_claims_joined(edits, built.map_var, write)
            if not _join_pod_claims(edits, spec, f"{ind}{name}:", expr, False):  # else joined to the pod's own list
                edits.inserts.setdefault(pod, []).extend(_list_block(edits, name, ind, expr))
        else:
            key = "tolerations" if name == OWN_TOLERATIONS else name
            edits.inserts.setdefault(pod, []).extend(_list_block(edits, key, ind, expr))
    helpers: dict[str, str] = {}
    # the define copies each sibling where it copies the map, but the pod's own list the DRA one joins: beside a values
    # map it replaces the dict's with (`with .Values.resources`), that list is the one the pod renders already
    siblings = [s for s, name in zip(siblings, passed, strict=True) if name == "resourceClaims" or joins is None]
    copies = built_defines(root, text, maps)
    if not copies:
        raise NotPassThrough(f"{rel}:{built.made + 1}: no define the include calls copies the map into the dict")
    key = re.compile(rf"\b{re.escape(built.key)}\b")
    for helper_rel, spans in copies.items():
        own = (root / helper_rel).read_text(encoding="utf-8").splitlines(keepends=True)
        for first, end in sorted(spans, reverse=True):
            block = own[first:end]
            own[end:end] = [key.sub(sibling, line) for sibling in siblings for line in block]
        helpers[helper_rel] = "".join(own)
    return edits.out(), helpers


def _container_claims_joined(t: _Edits, var: str, at: int) -> None:
    """Where the container writes the map `var` whole (`toYaml .` inside `with $resources`, from line `at` on) and
    then its own `claims:` only under an `if` of the pod's (nvcf's multi-node chart: its RDMA claim): the map's claims
    the DRA values add join that list, and the map is written without them (a second `claims:` key would keep one
    list). Nothing for a container that writes no claims of its own; NotPassThrough for another shape of them."""
    from dramigrate.helm.tolerationedits import _listed_items

    lines = t.lines
    writes = re.compile(rf"\btoYaml\s+(?:\.|{re.escape(var)})\s*\|")
    written = next((k for k in range(at, len(lines)) if writes.search(lines[k])), None)
    if written is None:
        return
    head = " " * int(m.group(1)) + "claims:" if (m := re.search(r"\bnindent\s+(\d+)", lines[written])) else None
    end = next((k for k in range(written + 1, len(lines)) if lines[k].strip() and not is_control(lines[k])), None)
    if head is None or end is None or lines[end] != head:
        return
    enclosed = _enclosed(_listed_items(lines, end), head)
    if enclosed is None:
        raise NotPassThrough(
            f"{t.rel}:{end + 1}: the container writes its own `claims:` after the map {var}, in a shape the DRA claims "
            "of the map do not join (a second key would drop one of the lists): join them by hand"
        )
    within = re.compile(rf"(\{{\{{-?\s*with\s+){re.escape(var)}(\s*-?\}}\}})")
    if not (written and within.search(lines[written - 1]) and re.search(r"\btoYaml\s+\.\s*\|", lines[written])):
        raise NotPassThrough(
            f"{t.rel}:{written + 1}: the container writes its own `claims:` after the map {var}, which is not written "
            f"as `with {var}` then `toYaml .`: the DRA claims of the map would be a second `claims:` key"
        )
    # the map without its claims: a map of claims alone writes nothing there, as an empty one did
    t.replaced[written - 1] = within.sub(rf'\g<1>omit {var} "claims"\g<2>', lines[written - 1], count=1)
    _join_own(t, enclosed, f"{var}.claims")


_MAP_EXPR = re.compile(
    r"(?:\bwith|\btoYaml|\brange\s+\$\w+\s*,\s*\$\w+\s*:=)\s*\(?(\$?[\w.]*?)\.?(\b[A-Za-z]*[Rr]esources)"
    r"(?:\.([A-Za-z_]\w*))?\b(?![.\w])"
)  # a map, or a map keyed under it (`.resources.gpu`), or one of its sections (`range $k, $v := .resources.limits`)


def _dot_context(lines: list[str], i: int) -> str | None:
    """What `.` is at line i: "" at the top, `.Values.x` inside `with .Values.x` (`$.Values.x` as written),
    `.Values.x[]` (each item) inside `range .Values.x`; None inside a `define` or a range over anything else (a
    helper's argument, not a values path the rewrite can name)."""
    scope = enclosing_scope(lines, i)
    if scope is None:
        return ""
    j, word, expr = scope
    if word == "range":
        over = re.fullmatch(r"(?:\$\w*\s*(?:,\s*\$\w*\s*)?:=\s*)?(\.Values(?:\.[\w]+)+)", expr.strip())
        return f"{over.group(1)}[]" if over else None
    if word in ("define", "block"):
        return None
    path = expr.split()[0] if expr.split() else ""
    if path.startswith((".Values", "$.Values")):
        return path
    if path.startswith(".") and (outer := _dot_context(lines, j)) is not None:
        return f"{outer}{path}"
    return None


def _dollar_context(lines: list[str], i: int) -> bool:
    """Whether the `with .Values.x` chain that sets `.` at line i (_dot_context) starts where `.` is `$` (the top of
    the file or of a define, no `with` or `range` around it): `$.Values.x` then reads what `.` is here."""
    scope = enclosing_scope(lines, i)
    if scope is None or scope[1] != "with":
        return False
    j, _, expr = scope
    path = expr.split()[0] if expr.split() else ""
    if path.startswith("$.Values"):
        return True
    if path.startswith(".Values"):
        above = enclosing_scope(lines, j)
        return above is None or above[1] in ("define", "block")
    return path.startswith(".") and _dollar_context(lines, j)


def _from_root(text: str, base: str) -> str:
    """A map's base read from the root where it is the root's: `$.Values`, or `$root.Values` with `{{- $root := . }}`
    at the template's top (inside a `range`, where `.` is the item) -> `.Values`; else the base as it is."""
    m = re.fullmatch(r"\$(\w*)(\..*)?", base)
    if m is None:
        return base
    if re.match(r"\.Values(?:\.|$)", m.group(2) or ""):  # only the root has `.Values`: `$root.Values` in a define too
        return m.group(2)  # (`$root.Values` alone: a top-level map, `toYaml $root.Values.resources`)
    if m.group(1) and not re.search(r"\{\{-?\s*\$" + m.group(1) + r"\s*:=\s*[.$]\s*-?\}\}", text):
        return base
    return m.group(2) or ""


_PICKED_MAP = re.compile(rf"(?:\bwith|\btoYaml)\s+({PICKED_PROFILE})\.(\w*[Rr]esources)\b(?![.\w])")
_INDEX_MAP = re.compile(r'\bindex\s+(\$\w*|\.Values)((?:\s+"[^"]+")+)')
_QUOTED = re.compile(r'"([^"]+)"')
_INDEX_SET = re.compile(r'\{\{-?\s*(\$\w+)\s*:?=\s*index\s+(\$\w*|\.Values)((?:\s+"[^"]+")+)\s*-?\}\}')


def _index_variables(text: str) -> dict[str, list[str]]:
    """Template variables set to a values map by `index` (`{{- $module := index .Values "modules" "t2v" -}}`),
    each with its values path (keys under .Values); chains through earlier variables."""
    out: dict[str, list[str]] = {}
    for var, base, keys in _INDEX_SET.findall(text):
        if base == ".Values":
            out[var] = _QUOTED.findall(keys)
        elif base in out:
            out[var] = [*out[base], *_QUOTED.findall(keys)]
    return out


def _ends_with(path: Path_, words: list[str]) -> bool:
    """Whether a values path ends in these keys (`*`: any list index, a `range` item)."""
    tail = path[-len(words) :]
    return len(path) >= len(words) and all(w in ("*", str(x)) for w, x in zip(words, tail, strict=True))


def _depth_at(lines: list[str], pod: int, at: int) -> int:
    """How many `if`/`with`/`range` blocks of the pod's own are open at line `at`."""
    depth = 0
    for line in lines[pod + 1 : at] if pod >= 0 else lines[:at]:
        for word, _ in BLOCK_ACTION.findall(line):
            depth += 1 if word in ("if", "with", "range") else -1 if word == "end" and depth else 0
    return depth


def _renders_key(lines: list[str], pod: int, key_line: str) -> bool:
    """Whether the pod's block writes this key outside any `if`/`with`/`range` of its own: a pod whose `tolerations:`
    are written only for another accelerator (`if eq .Values.accelerator "neuron"`) takes the pass-through too."""
    from dramigrate.helm.templatelines import block_end

    depth = 0
    for line in lines[pod + 1 : block_end(lines, pod)] if pod >= 0 else lines:
        for word, _ in BLOCK_ACTION.findall(line):
            depth += 1 if word in ("if", "with", "range") else -1 if word == "end" and depth else 0
        if line == key_line and not depth:
            return True
    return False


def template_edits(
    text: str,
    rel: str,
    needs: dict[Path_, set[str]],
    scoped: bool = False,
    helpers: dict[str, str] | None = None,
    within: PodDefine | None = None,
    chart: str = "",
    called: frozenset[str] = frozenset(),
) -> str:
    """The template with a pod-level pass-through (`resourceClaims`, and `tolerations` where the migration adds
    one and the pod renders none) beside each values map of `needs` that it passes into a container (itself or
    through one of the `helpers`, map_helpers), unless it renders that sibling already. `within`: only the reads in
    that define's pod (pod_defines), its claim names rendered with its root context. `called`: the helpers that write a
    pod's tolerations from their argument's list (tolerations_helpers)."""
    variables, ranges = _index_variables(text), _range_variables(text)
    # `.Values.x | toYaml` read as `toYaml .Values.x`, `toYaml $merged` as the merge of maps it holds
    read = map_reads(inline_merged(inline_bound(map_reads(expand_map_helpers(text, helpers or {})))))
    read_lines = read.splitlines()
    root = within.root if within else "$"
    edits = _Edits(text, rel, scoped, _pod_heads(), text.splitlines(), root=root, chart=chart, called=called)
    found = []
    chains = default_chains(text)
    built = _built_map(text)  # its reads pass the dict's siblings through (built_map_edits), not a values map's
    built_read = re.compile(rf"{re.escape(built.map_var)}(?!\w)") if built else None
    for i in within.lines if within else range(len(edits.lines)):
        if built_read and built and i > built.read and built_read.search(edits.lines[i]):
            continue
        if _BRANCH_OPEN.match(edits.lines[i]) and _branch_chain(edits.lines, i + 1):
            continue  # `{{- with A }}` of a with/else between two maps: its branches' lines read the chain
        for ref in _chain_refs(edits.lines, i, chains, ranges) or _map_refs(read, read_lines, i, variables, ranges):
            words, key, under = ref[0], ref[1], ref[2]
            target = next((p for p in needs if _ends_with(p, [*words, key, *([under] if under else [])])), None)
            if target is None and under in ("limits", "requests"):  # `limits:` written from `resources.limits`
                target = next((p for p in needs if _ends_with(p, [*words, key])), None)
                ref = (words, key, _SECTION, ref[3], ref[4])
            if target is not None and (within is None or within.takes(ref[3]("").rstrip("."), [key], target)):
                found.append((i, ref, target))
    items = {}  # line -> the container (or its fields) it writes whole from a values map that holds one of `needs`
    for i in within.lines if within else range(len(edits.lines)):
        if within is None and (whole := whole_container(edits.lines, i, ranges)) is not None:
            candidates, ranged, item = whole
            for target in needs:
                words = next((w for w in candidates if len(target) == len(w) + 1 and _ends_with(target[:-1], w)), None)
                if words is None:
                    continue

                def item_expr(sibling: str, item: str = item) -> str:
                    return f"{item}.{sibling}" if item != "." else f".{sibling}"

                found.append((i, (words, str(target[-1]), None, item_expr, ranged), target))
                items[i] = item
    if within is None and found:  # a define that writes the whole object, given the root in a dict (`$root := .root`)
        edits.root = _define_root(text, [i for i, _, _ in found]) or root
    # the most specific reads of a map only: `$top.resources` merged into `$container.resources` is another map
    longest = {t: max(len(r[0]) for _, r, u in found if u == t) for _, _, t in found}
    done: set[tuple[int, SiblingExpr]] = set()  # a `default` chain's maps share one pass-through (_chain_refs)
    for i, ref, target in found:
        if len(ref[0]) == longest[target] and (i, ref[3]) not in done:
            done.add((i, ref[3]))
            _pass_through(edits, i, ref, needs[target], item=i in items)
            device_check(edits, i, ref, needs[target], target)
            if i in items:
                _omit_siblings(edits, i, items[i], ref[1], needs[target])
    out = edits.out()
    # the DRA values add a toleration to the pods that take the map: a list the chart writes outside its key would not
    # render (listindent.py)
    return indented_tolerations(out) if out != text else out


def _omit_siblings(t: _Edits, i: int, item: str, key: str, need: set[str]) -> None:
    """The item line i writes whole without the keys the DRA values put beside its map `key` (the pod's
    `resourceClaims`, the toleration, the counts): they are the pod's, not the container's fields. Without them in
    the values, `omit` leaves the item as it was."""
    keys = [sibling_key(key, s) for s in ("resourceClaims", OWN_TOLERATIONS, COUNTS) if s in need]
    keys += ["tolerations"] if "tolerations" in need else []
    line = t.replaced.get(i, t.lines[i])
    quoted = " ".join(json.dumps(k) for k in dict.fromkeys(keys))
    if quoted:
        t.replaced[i] = re.sub(rf"toYaml\s+{re.escape(item)}(?=\s)", f"toYaml (omit {item} {quoted})", line, count=1)


def _define_root(text: str, at: list[int]) -> str | None:
    """The chart's root context in the one define that holds every line of `at` (0-based): the variable it reads
    `.Values` from (`$root` of `{{- $root := .root -}}`), or `$`; None when the lines are in no define, or in two."""
    lines = text.splitlines()
    held = {b.start: b for b in blocks(text) if b.word == "define" for i in at if b.start < i < b.end}
    if len(held) != 1:
        return None
    ((start, block),) = held.items()
    return next((v for v in _ROOT_VAR.findall("\n".join(lines[start + 1 : block.end])) if v != "$"), "$")


def _pod_heads() -> set[str]:
    """The lines the pod-level keys go before: the pod's (init) containers, or a single container (KServe's
    `model:`)."""
    singles = {k for kind in shipped_rules().kinds.values() for k in kind.single_containers}
    return {"containers:", "- containers:", "initContainers:", "- initContainers:", *(f"{k}:" for k in singles)}


@dataclass(frozen=True)
class PodDefine:
    """A define that writes a pod's containers and passes a resources map into one (pod_defines)."""

    lines: range  # 0-based lines of its body from its `containers:` on
    root: str  # the expression of the chart's root context in it: `$root` (`{{- $root := .root -}}`) or `$`
    # its variables set from a field of its argument (`{{- $obj := .obj -}}`), each with the values paths the
    # templates fix changes pass in that field (`(dict "obj" $task)` inside `range $task := .Values.batchTasks`:
    # batchTasks.*); a variable some caller passes anything else is not here
    known: dict[str, list[list[str]]] = field(default_factory=dict)

    def takes(self, base: str, tail: list[str], target: Path_) -> bool:
        """Whether a read of `<base>.<tail...>` in the define can be the values map `target`."""
        var = re.fullmatch(r"(\$\w+)((?:\.\w+)*)", base)
        if var is None or var.group(1) not in self.known:
            return True
        fields = var.group(2).split(".")[1:]
        return any(_ends_with(target, [*words, *fields, *tail]) for words in self.known[var.group(1)])


_INCLUDED = re.compile(r'\b(?:include|template)\s+"([^"]+)"')
_ARG_FIELD = re.compile(r"\{\{-?\s*(\$\w+)\s*:=\s*\.(\w+)\s*-?\}\}")
_DICT_ENTRY = re.compile(r'"(\w+)"\s+([$.][\w.$]*)')


def _values_words(expr: str, ranges: dict[str, tuple[list[str], int]]) -> list[str] | None:
    """The values path (keys under .Values, `*` for a list item) of an expression a template passes, or None."""
    if m := re.fullmatch(r"\$?\.Values((?:\.\w+)+)", expr):
        return m.group(1).split(".")[1:]
    if (m := re.fullmatch(r"(\$\w+)((?:\.\w+)*)", expr)) and m.group(1) in ranges:
        return [*ranges[m.group(1)][0], *m.group(2).split(".")[1:]]
    return None


def _argument_paths(body: str, name: str, templates: dict[str, str]) -> dict[str, list[list[str]]]:
    """The define's variables set from a field of its argument, with the values paths each call of `templates` (the
    ones fix changes) passes in that field (`include "x.podSpec" (dict "obj" $task)`); a variable is left out when
    a call passes anything else."""
    calls = re.compile(rf'\b(?:include|template)\s+"{re.escape(name)}"\s+(\(dict\s[^()]*\)|[^\s)}}]+)')
    passed: list[tuple[dict[str, str], dict[str, tuple[list[str], int]]]] = []
    for text in templates.values():
        ranges = _range_variables(text)
        passed += [(dict(_DICT_ENTRY.findall(c.group(1))), ranges) for c in calls.finditer(text)]
    out: dict[str, list[list[str]]] = {}
    for var, key in _ARG_FIELD.findall(body):
        paths = [_values_words(args[key], ranges) if key in args else None for args, ranges in passed]
        if paths and all(p is not None for p in paths):
            out[var] = [p for p in paths if p is not None]
    return out


_ROOT_VAR = re.compile(r"(\$\w*)\.(?:Values|Release|Chart|Capabilities)\b")


def pod_defines(templates: dict[str, str], rels: set[str]) -> dict[str, list[PodDefine]]:
    """The helper files (rel -> defines) whose defines, included from a template of `rels` (or from such a define),
    write a pod's `containers:` and a resources map below it (`toYaml $profile.resources` in a pod-spec helper
    given `(dict "root" $ "profile" $profile)`): the pass-through's pod-level keys go in the define."""
    heads = _pod_heads()
    defined = {
        b.cond.strip('"'): (rel, b) for rel, text in templates.items() for b in blocks(text) if b.word == "define"
    }
    called = {n for rel in rels for n in _INCLUDED.findall(templates.get(rel, ""))}
    seen: set[str] = set()
    out: dict[str, list[PodDefine]] = {}
    while called - seen:
        name = min(called - seen)
        seen.add(name)
        if name not in defined or defined[name][0] in rels:
            continue
        rel, block = defined[name]
        lines = templates[rel].splitlines()[: block.end]
        body = "\n".join(lines[block.start + 1 :])
        called |= set(_INCLUDED.findall(body))
        head = next((i for i in range(block.start + 1, block.end) if bare(lines[i]) in heads), None)
        if head is not None and _MAP_EXPR.search("\n".join(lines[head:])):
            root = next((v for v in _ROOT_VAR.findall(body) if v != "$"), "$")
            known = _argument_paths(body, name, {r: t for r, t in templates.items() if r in rels})
            out.setdefault(rel, []).append(PodDefine(range(head, block.end), root, known))
    return out


_SECTION = "<section>"  # a read of one section of the map (`toYaml .Values.resources.limits`), not of the whole map


def _claims_beside_sections(t: _Edits, i: int, claims: str, named: str = "") -> None:
    """A container `resources:` block that writes the map's sections one by one (`limits:` from `toYaml
    .Values.resources.limits`, or a `range` over it; the read at line i) renders none of the `claims` the DRA
    values add to the map: `claims` from the map, first under that `resources:` (nothing when the map has none).
    `named` (the map's expression): `claims` is the pod's `resourceClaims` list, each claimed by its name (a map
    that is the sections' content holds no claims, SECTION_CONTENT); an `if` on the map alone around `resources:`
    takes that list too."""
    lines = t.lines
    top = -1
    for j in range(i - 1, -1, -1):  # the nearest `resources:` above, within the pod's containers
        if bare(lines[j]) in t.heads or item_key(lines[j]) == "resources:":
            top = j if bare(lines[j]) not in t.heads else -1
            break
    child = next((j for j in range(top + 1, len(lines)) if not _CONTROL.match(lines[j]) and lines[j].strip()), -1)
    if top < 0 or child < 0 or line_indent(lines[child]) <= line_indent(lines[top]):
        raise NotPassThrough(f"{t.rel}:{i + 1}: a section of the resources map is written outside a `resources:` key")
    ind = " " * line_indent(lines[child])
    block = [f"{ind}{{{{- with {claims} }}}}", f"{ind}claims:", f"{ind}  {{{{- toYaml . | nindent {len(ind) + 2} }}}}"]
    if block[0] in lines[top + 1 : block_end(lines, top)]:
        return  # fix passed them in before: a second fix adds nothing
    if named:
        items = [f"{ind}  {{{{- range . }}}}", f"{ind}  - name: {{{{ .name }}}}", f"{ind}  {{{{- end }}}}"]
        block = [*block[:2], *items]
        guard = re.fullmatch(r"(\s*\{\{-?\s*if\s+)([$.][\w.]+)(\s*-?\}\}\s*)", lines[top - 1]) if top else None
        if guard and guard.group(2) == named and top - 1 not in t.replaced:
            # `{{- if .Values.resources }}`: the DRA values may leave the map empty, the claims render all the same
            t.replaced[top - 1] = f"{guard.group(1)}or {guard.group(2)} {claims}{guard.group(3)}"
    if block[0] not in t.inserts.get(top + 1, []):
        t.inserts.setdefault(top + 1, [])[:0] = [*block, f"{ind}{{{{- end }}}}"]


_WHOLE_DOT = re.compile(r"\btoYaml\s+\.\s*(?:\||-?\}\})|\{\{-?\s*\.\s*\|\s*toYaml\b")


def _sections_within(lines: list[str], i: int) -> int | None:
    """The `resources:` line of a container written inside `with` the map (line i) section by section (plex's `{{-
    with .Values.pms.resources }}`, `resources:`, `limits:` then `{{- with .limits }}{{ toYaml . ...}}`), never the
    map whole: the `claims` the DRA values add to the map need a line of their own there; None otherwise."""
    if not _WITH_LINE.match(bare(lines[i])):
        return None
    depth, end, whole = 0, len(lines), False
    for j in range(i, len(lines)):
        # `.` is the map where no other `with`/`range` rebinds it: `toYaml .` there writes it whole
        rebound = re.search(r"\{\{-?\s*(?:with|range)\b", lines[j])
        whole = whole or (
            j > i and depth == 1 and bool(_WHOLE_DOT.search(lines[j][: rebound.start() if rebound else None]))
        )
        depth += blocks_opened(lines[j])
        if depth <= 0:
            end = j
            break
    body = lines[i + 1 : end]
    res = next((i + 1 + n for n, line in enumerate(body) if not is_control(line) and line.strip()), -1)
    if whole or res < 0 or not is_key(lines[res], "resources") or any(".claims" in line for line in body):
        return None
    return res if any(re.search(r"(?<![\w$)\]])\.(?:limits|requests)\b", line) for line in body) else None


SiblingExpr = Callable[[str], str]


def _map_refs(
    text: str, lines: list[str], i: int, variables: dict[str, list[str]], ranges: dict[str, tuple[list[str], int]]
) -> list[tuple[list[str], str, str | None, SiblingExpr, int]]:
    """The values maps line i passes into a container: (the values path's keys before the map, the map's key, a key
    under it, how the template reads a sibling of it, the line of the `range` that sets the map's variable or -1)."""
    line = lines[i]
    m = _MAP_EXPR.search(line)
    indexed = _INDEX_MAP.search(line) if not m and "toYaml" in line else None
    if indexed and re.search(r"[Rr]esources$", (keys := _QUOTED.findall(indexed.group(2)))[-1]):
        # `index $module "resources" | toYaml` (keys with dashes): the variable's values path, if assigned
        base, key = indexed.group(1), keys[-1]
        words = [*variables.get(base, []), *keys[:-1]] if base != ".Values" else keys[:-1]

        def indexed_expr(sibling: str, base: str = base, keys: list[str] = keys) -> str:
            return f"index {base} " + " ".join(f'"{k}"' for k in [*keys[:-1], sibling])

        return [(words, key, None, indexed_expr, -1)]
    picked = _PICKED_MAP.search(line)
    if picked:  # `with (index .Values.configs .Values.device).resources`: the profile the value picks, any of them
        profile, words = picked.group(1), [*picked.group(2).split(".")[1:], "*"]

        def picked_expr(sibling: str, profile: str = profile) -> str:
            return f"{profile}.{sibling}"

        return [(words, picked.group(3), None, picked_expr, -1)]
    found = [(m.group(1), m.group(2), m.group(3))] if m else []
    above = next((j for j in range(i - 1, -1, -1) if lines[j].strip()), -1)
    if not found and above >= 0 and (whole := whole_read(lines, above)):  # `resources:` then `toYaml .Values.flavor`
        root = re.search(r"(\$\w+)\.Values\.", line)  # `$root.Values.x` in a define given the root in a dict
        found = [(".".join([root.group(1) if root else "", "Values", *whole[:-1]]), whole[-1], None)]
    merged = _MERGED.search(line) if "toYaml" in line else None
    if merged:  # `toYaml (mergeOverwrite $container.resources (default dict $topValues.resources))`: each map
        found += [(r.group(1), r.group(2), None) for r in _MAP_REF.finditer(line[merged.end() :])]
    out = []
    for base, key, under in dict.fromkeys(found):
        own = base  # the expression as written here: its siblings are read the same way
        ranged = -1
        if (var := re.fullmatch(r"(\$\w+)((?:\.\w+)*)", base)) and var.group(1) in ranges:
            held, ranged = ranges[var.group(1)]  # a variable set from values (`range $name, $c := $containers`)
            words = [*held, *var.group(2).split(".")[1:]]
        else:
            if not base.startswith((".Values", "$")):
                context = _dot_context(lines, i)  # `.resources` is a field of whatever `.` is here
                if context is None:
                    continue  # inside a define (or a range over no values list): not a values map fix can name
                if context.endswith("[]") and not base and (over := enclosing_scope(lines, i)) is not None:
                    ranged = over[0]  # `.resources` of each item of `range .Values.containers`: gathered over it
                base = f"{context}{base}"
                if "[]" not in context:
                    # a field of `with .Values.x`: its siblings read from the root (`$.Values.x.resourceClaims`), as
                    # the pod's keys go above the `with` (or inside it, where `.Values` is not the root's)
                    own = f"${base}" if _dollar_context(lines, i) and not base.startswith("$") else base
            words = [w for w in base.replace("[]", ".*").split(".") if w and not w.startswith("$")]
            words = words[1 if _from_root(text, base).startswith(".Values") else 0 :]

        def sibling_expr(sibling: str, base: str = own) -> str:
            return f"{base}.{sibling}" if base else f".{sibling}"

        out.append((words, key, under, sibling_expr, ranged))
    return out


_TOYAML_CHAIN = re.compile(r"\btoYaml\s+(\$\w+)(?![\w.])")


def _chain_refs(
    lines: list[str], i: int, chains: dict[str, list[str]], ranges: dict[str, tuple[list[str], int]]
) -> list[tuple[list[str], str, str | None, SiblingExpr, int]]:
    """The values maps line i passes into a container as `toYaml $var` of a variable that holds the first map of a
    `default` chain that is not empty (default_chains), or as `toYaml (<the chain>)` written in the line
    (inline_chain; `or A B` and `coalesce A B` are such chains), each as _map_refs gives one, all with one reading of a
    sibling: the sibling of the map the variable took (`$resources := $worker.resources | default
    $defaults.resources`: `ternary $defaults.resourceClaims $worker.resourceClaims (empty $worker.resources)`), the
    map itself as the variable. [] for any other line, or a chain of maps not all read from values under one key."""
    m = _TOYAML_CHAIN.search(lines[i])
    inline = None if m else inline_chain(lines[i])  # `toYaml (A | default B)`: the chain written in the line
    branch = None if m or inline else _branch_chain(lines, i)  # `if A`, `toYaml A`, `else`, `toYaml B`
    maps = chains.get(m.group(1), []) if m else inline[1] if inline else branch[1] if branch else []
    parts = [re.fullmatch(r"(\$\w*(?:\.Values)?|\.Values)((?:\.\w+)*)\.(\w*[Rr]esources)", w) for w in maps]
    if not maps or any(p is None or p.group(3) != parts[0].group(3) for p in parts):
        return []
    key, sources = parts[0].group(3), []
    for p in parts:
        head, fields = p.group(1), p.group(2).split(".")[1:]
        if head in ranges:
            held, ranged = ranges[head]
            sources.append(([*held, *fields], head + p.group(2), ranged))
        elif head in (".Values", "$.Values") and _dot_context(lines, i) is not None:
            sources.append((fields, "$.Values" + p.group(2), -1))
        else:
            return []  # a map the rewrite cannot name from the pod's lines
    # the map as the line writes it (a branch's, from the root: `toYaml .` in `with A` is A)
    var = m.group(1) if m else _grouped(inline[0]) or inline[0] if inline else f"{sources[branch[0]][1]}.{key}"

    def sibling_expr(sibling: str) -> str:
        if sibling == key:
            return var
        expr = f"{sources[-1][1]}.{sibling}"
        for _, base, _ in reversed(sources[:-1]):
            expr = f"ternary {'(' + expr + ')' if ' ' in expr else expr} {base}.{sibling} (empty {base}.{key})"
        return f"({expr})"

    ranged = max(r for _, _, r in sources)
    return [(words, key, None, sibling_expr, ranged) for words, _, _ in sources]


_BRANCH_OPEN = re.compile(r"^\s*\{\{-?\s*(if|with)\s+([$.][\w.$]*)\s*-?\}\}\s*$")
_BRANCH_ELSE = re.compile(r"^\s*\{\{-?\s*else\s*-?\}\}\s*$")
_BRANCH_END = re.compile(r"^\s*\{\{-?\s*end\s*-?\}\}\s*$")
_BRANCH_MAP = re.compile(r"\btoYaml\s+([$.][\w.$]*)(?![\w.$])")


def _branch_chain(lines: list[str], i: int) -> tuple[int, list[str]] | None:
    """The default chain an `if`/`else` (or `with`/`else`) around line i writes: `{{- if A }}`, `toYaml A` (`toYaml
    .` in a `with`), `{{- else }}`, `toYaml B`, `{{- end }}`, each branch that one line, is `A | default B`, line i
    being one of the two writes: which of the maps [A, B] line i writes, and the maps; None for any other line."""
    at = next((j for j in (i - 1, i - 3) if 0 <= j < len(lines) and _BRANCH_OPEN.match(lines[j])), None)
    if at is None or at + 4 >= len(lines) or i not in (at + 1, at + 3):
        return None
    opened, first, between, second, end = (_BRANCH_OPEN.match(lines[at]), *lines[at + 1 : at + 5])
    if opened is None or not _BRANCH_ELSE.match(between) or not _BRANCH_END.match(end):
        return None
    word, tested = opened.groups()
    a, b = _BRANCH_MAP.search(first), _BRANCH_MAP.search(second)
    if a is None or b is None or a.group(1) != (tested if word == "if" else "."):
        return None
    return (0 if i == at + 1 else 1), [tested, b.group(1)]


# a line that is only a control action (`{{- if .Values.gpu.enabled }}`, `{{- else }}`): it writes no YAML
_CONTROL = re.compile(r"^\s*\{\{-?\s*(?:if|else|end|with|range)\b[^{}]*-?\}\}\s*$")
_MERGED = re.compile(r"\b(?:mergeOverwrite|merge)\s")
_MAP_REF = re.compile(r"(\$?[\w.]*?)\.?(\b[A-Za-z]*[Rr]esources)\b(?![.\w])")
_VARIABLE_SET = re.compile(r"\{\{-?\s*(range\s+(?:\$\w*\s*,\s*)?)?(\$\w+)\s*:=\s*([$.][\w.$]*)\s*-?\}\}")


def _range_variables(text: str) -> dict[str, tuple[list[str], int]]:
    """Template variables that hold a values map or an item of one (`{{- $top := .Values }}`, `{{- range $name, $app
    := $top.apps }}`, `{{- $containers := $app.containers }}`): their values path (`*` for a ranged item) and the
    line of the `range` that sets the variable itself (-1 for an assignment)."""
    out: dict[str, tuple[list[str], int]] = {}
    for i, line in enumerate(text.splitlines()):
        for ranged, var, expr in _VARIABLE_SET.findall(line):
            head, *fields = expr.removeprefix("$.").split(".") if expr.startswith("$.") else expr.split(".")
            if expr.startswith((".Values", "$.Values")) and (expr.startswith("$.") or head == ""):
                words = expr.split(".")[2:]
            elif head in out:
                words = [*out[head][0], *fields]
            else:
                continue
            out[var] = ([*words, "*"], i) if ranged else (words, -1)
    return out


@dataclass
class _Edits:
    """A template's lines and what the pass-through inserts before (and replaces at) which of them."""

    text: str
    rel: str
    scoped: bool
    heads: set[str]
    lines: list[str] = field(default_factory=list)
    inserts: dict[int, list[str]] = field(default_factory=dict)
    replaced: dict[int, str] = field(default_factory=dict)
    root: str = "$"  # the chart's root context where the edits go (a define's `$root := .root`)
    chart: str = ""  # the chart's name, that of the defines the claim-template file holds (helper_defines)
    called: frozenset[str] = frozenset()  # the helpers that write a pod's tolerations from their argument's list

    lists: dict[tuple[int, str], list[_PodList]] = field(default_factory=dict)  # by (pod line, pod key)
    joined: dict[int, list[str]] = field(default_factory=dict)  # by line: the DRA lists joined to a pod's list there

    @functools.cached_property
    def offsets(self) -> list[int]:
        """Where each line of the text starts, and one past its end (the text itself is never edited)."""
        return list(itertools.accumulate((len(line) for line in self.text.splitlines(keepends=True)), initial=0))

    def out(self) -> str:
        for (pod, name), reads in self.lists.items():
            _pod_list(self, pod, name, reads)
        out: list[str] = []
        for i, line in enumerate([*self.lines, None]):  # None: the end of the file, after its last line
            block = self.inserts.get(i, [])
            at = len(out)
            while block and block[0].lstrip().startswith("{{-") and at and not out[at - 1].strip():
                at -= 1  # `{{-` would chomp the blank lines above it: it goes above them, they stay as they were
            out[at:at] = block
            if line is not None:
                out.append(self.replaced.get(i, line))
        return "\n".join(out) + ("\n" if self.text.endswith("\n") else "")


@dataclass(frozen=True)
class _PodList:
    """A values list the pod-level key (`resourceClaims`, `tolerations`) renders, beside a map line `read` passes
    into a container under the pod's `containers` head (indent `ind`); `ranged`: the line of a `range` over the
    containers that sets the map's variable, or -1."""

    read: int
    containers: int
    ind: str
    expr: str
    ranged: int
    switched: bool = False  # the container is rendered under an `if` of its own inside the pod (_switched_container)


def _list_block(t: _Edits, name: str, ind: str, expr: str) -> list[str]:
    # the claim names carry `{{ .Release.Name }}` (release_scoped): rendered with tpl
    render = f"tpl (toYaml .) {t.root}" if t.scoped and name == "resourceClaims" else "toYaml ."
    return [
        f"{ind}{{{{- with {expr} }}}}",
        f"{ind}{name}:",
        f"{ind}  {{{{- {render} | nindent {len(ind) + 2} }}}}",
        f"{ind}{{{{- end }}}}",
    ]


def _pod_list(t: _Edits, pod: int, name: str, reads: list[_PodList]) -> None:
    """One `name:` key for the pod (at line `pod`) whose containers take the maps of `reads`. One values list:
    rendered before the containers (gathered over a `range` over them). Several (one map per container, or a keyed
    map picked by an `if`): each read adds its list to a variable where the template passes its map, so only the maps
    the template picks count, and the one key is rendered after the containers; a YAML key written twice keeps only
    the last. So too for one list read by a container under an `if` of its own (_switched_container): the pod renders
    the list only when that container renders. Tolerations the pod writes itself after that (_own_list) take the
    gathered list joined to theirs, not a second key beside them (NVIDIA's blueprint subcharts: `{{- with
    $topValues.tolerations }}` after a `range` over the containers, each with its own map)."""
    first = reads[0]
    var = f"$dramigrate{name[0].upper()}{name[1:]}"
    own = _own_list(t, pod, f"{first.ind}{name}:") if name == "tolerations" else None
    if len({r.expr for r in reads}) == 1 and not any(r.switched for r in reads):
        expr, gather = first.expr, []
        if first.ranged > first.containers:  # `range $name, $container := $containers` inside the pod
            each = BLOCK_ACTION.search(t.lines[first.ranged])
            if each is None:
                raise NotPassThrough(f"{t.rel}:{first.ranged + 1}: the range over the containers is not one action")
            add = f"{{{{- {var} = concat {var} ({expr} | default list) }}}}"
            gather = [
                f"{first.ind}{{{{- {var} := list }}}}",
                f"{first.ind}{{{{- range {each.group(2)} }}}}{add}{{{{- end }}}}",
            ]
            expr = f"{var} | uniq"
        head = first.containers if gather else _unswitched_head(t, pod, reads)
        if not gather and head and t.lines[head - 1].rstrip().endswith("-}}"):
            # the line above trims the newline before the head (a define's first line: `{{- define "app.podSpec" -}}`
            # then `containers:`), which the key's `{{- end }}` there would keep: the key goes after the containers
            head = _containers_end(t.lines, head)
        if own is not None and own.start > head:
            t.inserts.setdefault(head, []).extend(gather)
            _join_own(t, own, expr)
            return
        t.inserts.setdefault(head, []).extend(
            [*gather, *_unwritten(t, pod, name, _list_block(t, name, first.ind, expr))]
        )
        return
    heads = sorted({r.containers for r in reads})
    t.inserts.setdefault(_pod_scope(t, pod, heads[0]), []).append(f"{first.ind}{{{{- {var} := list }}}}")
    for r in reads:
        at = " " * line_indent(t.lines[r.read])
        t.inserts.setdefault(r.read, []).append(f"{at}{{{{- {var} = concat {var} ({r.expr} | default list) }}}}")
    end = max(_containers_end(t.lines, h) for h in heads)
    if own is not None and own.start >= end:
        _join_own(t, own, f"{var} | uniq")
        return
    t.inserts.setdefault(end, [])[:0] = _unwritten(t, pod, name, _list_block(t, name, first.ind, f"{var} | uniq"))


def _pod_scope(t: _Edits, pod: int, head: int) -> int:
    """Where a variable of the pod at line `pod` is set: before its containers head `head`, or before the outermost
    block opened in the pod spec around that head (`{{- with $app.initContainers }}`), whose `end` would end the
    variable's scope before the containers after it add to it."""
    from dramigrate.helm.idiomatic import _open_blocks

    opened = [start for start, _ in _open_blocks(t.text, t.offsets[head]) if start >= t.offsets[pod + 1]]
    return bisect.bisect_right(t.offsets, min(opened)) - 1 if opened else head


def _unwritten(t: _Edits, pod: int, name: str, block: list[str]) -> list[str]:
    """The pod-level key's block (_list_block), failing the render where a map the pod spec writes whole among its
    keys (`{{- toYaml $final_predictor_config | nindent 4 }}`, Wikimedia's KServe predictor) holds that key too: YAML
    would keep one of the two lists."""
    ind = block[0][: line_indent(block[0])]
    fails = []
    for n, var in pod_key_maps(t.lines, pod, _pod_span(t.lines, pod).stop, len(ind)):
        var = re.sub(r"^\.Values\b", "$.Values", var)  # read after the containers, where `.` may be an item
        if not var.startswith("$"):
            continue
        said = (
            f"{t.rel}:{n + 1} writes the pod's {name} from {var} and the DRA values add more: put the DRA values' "
            f"{name} into that map's values instead"
        )
        fails.append(
            f'{ind}{{{{- if hasKey ({var} | default dict) "{name}" }}}}{{{{ fail {json.dumps(said)} }}}}{{{{ end }}}}'
        )
    return [block[0], *fails, *block[1:]]


def _unswitched_head(t: _Edits, pod: int, reads: list[_PodList]) -> int:
    """The containers head of `reads` the pod-level key goes before: the first one that no `if`, `with` or `range`
    opened inside the pod spec holds (an Ollama pod's `initContainers:` under `if .Values.models`, its `containers:`
    under none), so that the key renders whenever a container that takes the map does; the first head when each is
    under one."""
    from dramigrate.helm.idiomatic import _open_blocks

    heads = sorted({r.containers for r in reads})
    free = (h for h in heads if not any(start >= t.offsets[pod + 1] for start, _ in _open_blocks(t.text, t.offsets[h])))
    return next(free, reads[0].containers)


def _switched_container(t: _Edits, containers: int, i: int) -> bool:
    """Whether the container whose line i reads a map is written under an `if` opened inside the pod's `containers:`
    block (h2oGPT's vLLM container, in the h2oGPT pod only with `stack.enabled`; else in a Deployment of its own in
    the same file), with no `with` or `range` between: the pod takes the map's siblings only when it renders."""
    lines = t.lines
    first = next((j for j in range(containers + 1, i + 1) if not is_control(lines[j])), -1)
    if first < 0 or not lines[first].lstrip().startswith("- "):
        return False
    top = line_indent(lines[first])  # the containers' items: `- name:` at this column (an env list's items deeper)
    item = next(
        j for j in range(i, first - 1, -1) if lines[j].lstrip().startswith("- ") and line_indent(lines[j]) == top
    )
    opened = [w for start, w in _open_blocks(t.text, t.offsets[item]) if start >= t.offsets[containers + 1]]
    return bool(opened) and set(opened) == {"if"}


def _containers_end(lines: list[str], head: int) -> int:
    """One past the last line of the `containers:` block at `head`, with the actions that close inside it (the
    `{{- end }}` of a container rendered under an `if`). Items at the column of `containers:` (an indentless list)
    belong to it, and so do the `end`s of the blocks opened among them."""
    base = line_indent(lines[head])
    first = next((j for j in range(head + 1, len(lines)) if not is_control(lines[j])), -1)
    if first >= 0 and line_indent(lines[first]) == base and lines[first].lstrip().startswith("- "):
        end, depth = head + 1, 0
        for j in range(head + 1, len(lines)):
            line = lines[j]
            if not line.strip():
                continue
            if not is_control(line):
                if line_indent(line) < base or (line_indent(line) == base and not line.lstrip().startswith("- ")):
                    break
                end = j + 1
                continue
            if not depth and line_indent(line) < base:
                break  # an action of the lines after the pod spec (the next section's variables), left of the list
            depth += blocks_opened(line)
            if depth < 0:
                break
            end = j + 1 if depth == 0 else end
        return end
    end = block_end(lines, head)
    while (
        end < len(lines)
        and lines[end].strip()
        and is_control(lines[end])
        and line_indent(lines[end]) > line_indent(lines[head])
    ):
        end += 1
    # a `range` over the containers at the column of `containers:` (nvcf's charts): its `end` closes the block too
    depth = sum(blocks_opened(line) for line in lines[head + 1 : end])
    while depth > 0 and end < len(lines) and is_control(lines[end]):
        depth += blocks_opened(lines[end])
        end += 1
    # and a helper's containers after them (`{{- include "x.sidecar" . | indent 8 }}`, deeper than `containers:`)
    while end < len(lines) and (more := _INDENTED.match(lines[end])) and int(more.group(1)) > line_indent(lines[head]):
        end += 1
    return end


_INDENTED = re.compile(r"^\s*\{\{-?\s*include\b[^{}]*\|\s*n?indent\s+(\d+)\s*-?\}\}\s*$")


def _pass_through(
    t: _Edits, i: int, ref: tuple[list[str], str, str | None, SiblingExpr, int], need: set[str], item: bool = False
) -> None:
    """The pod-level keys for the map line i passes into a container (`ref`, _map_refs), before the pod's
    `containers:`; a map read through the variable of a `range` over the containers is gathered over that range.
    `item`: line i writes the container whole (`- {{- toYaml . | nindent 8 }}`), maybe as deep as its head."""
    from dramigrate.helm.templatelines import parent_line

    lines, (_, key, under, sibling_expr, ranged) = t.lines, ref
    at = line_indent(lines[i]) + (1 if item else 0)
    if DROP_NULLS in need and _device_check_line(t, i, ref, need) is None:  # else the check's define drops them
        _drop_nulls(t, i, sibling_expr(key) + (f".{under}" if under else ""))
    head = next((j for j in range(i - 1, -1, -1) if not (_CONTROL.match(lines[j]) or _checked(lines[j]))), -1)
    if lines[i].lstrip().startswith("{{") and head >= 0 and bare(lines[head]).endswith(":"):
        # `resources:` then `{{ ... | toYaml | indent 10 }}` at column 0, maybe inside `{{- if }}`/`{{- else }}`
        at = max(at, line_indent(lines[head]) + 1)
    containers = next((j for j in range(i - 1, -1, -1) if bare(lines[j]) in t.heads and line_indent(lines[j]) < at), -1)
    if containers < 0:
        raise NotPassThrough(f"{t.rel}:{i + 1}: no `containers:` line above the resources map")
    ind = " " * line_indent(lines[containers])
    pod = parent_line(lines, containers)
    for name in ("resourceClaims", "tolerations"):
        own = name == "tolerations" and OWN_TOLERATIONS in need  # the values key has a name of its own
        if name not in need and not own:
            continue
        expr = sibling_expr(sibling_key(key, OWN_TOLERATIONS if own else name))
        if under and under != _SECTION and name == "resourceClaims":
            expr += f".{under}"  # keyed as the map: `resourceClaims.gpu` for `resources.gpu` (sibling_path)
        if re.search(rf"{re.escape(expr)}(?![\w-])", t.text):
            continue  # rendered already (KubeRay's chart has `worker.resourceClaims`)
        if own and not _joins_here(lines, pod, f"{ind}{name}:", need):
            continue  # a pod that renders another list (its container of the map under an `if` the values leave off)
        if name == "resourceClaims" and _join_pod_claims(t, pod, f"{ind}{name}:", expr, ranged > containers):
            continue  # the pod writes its own claims list (`extraResourceClaims`): the DRA claims join it
        found = _own_list(t, pod, f"{ind}{name}:") if name == "tolerations" else None
        # a map variable the container's own lines set (`$container_config := merge ...`): gathered there, too
        switched = _switched_container(t, containers, i) or (item and ranged < 0)
        after = found is not None and found.start >= _containers_end(lines, containers)
        if found is not None and (ranged > containers or (switched and after)):
            # the map of a `range` over the containers, or of a container under an `if` of its own: its lists gathered
            # where the container renders join the pod's after them (_pod_list)
            t.lists.setdefault((pod, name), []).append(_PodList(i, containers, ind, expr, ranged, switched))
            continue
        if found is not None:
            _join_own(t, found, expr)
            _join_duplicates(t, pod, f"{ind}{name}:", expr)
            continue
        if _renders_key(lines, pod, f"{ind}{name}:"):
            continue  # written in a shape that takes no other list
        t.lists.setdefault((pod, name), []).append(_PodList(i, containers, ind, expr, ranged, switched))
    if SECTION_CONTENT in need and "resourceClaims" in need:
        _claims_beside_sections(t, i, sibling_expr(sibling_key(key, "resourceClaims")), named=sibling_expr(key))
    elif under == _SECTION and "resourceClaims" in need:
        _claims_beside_sections(t, i, f"{sibling_expr(key)}.claims")
    elif "resourceClaims" in need and (res := _sections_within(lines, i)) is not None:
        _claims_beside_sections(t, res + 1, ".claims")
    if ranged <= containers:  # the literal node selection the claims replace: only where there are none
        cond = sibling_expr(sibling_key(key, "resourceClaims")) + (f".{under}" if under and under != _SECTION else "")
        for start, stop in unpin.blocks(lines, pod, unpin.needed(need)):
            opened = f"{' ' * line_indent(lines[start])}{{{{- if not {cond} }}}}"
            if start and lines[start - 1].rstrip() == opened:  # under it already (an earlier fix): not again
                continue
            if opened not in t.inserts.get(start, []):
                t.inserts.setdefault(start, []).append(opened)
                t.inserts.setdefault(stop, []).insert(0, f"{' ' * line_indent(lines[start])}{{{{- end }}}}")
    params = _empty_params(lines, pod) if "rayStartParams" in need else None
    literal = _literal_params(lines, pod) if "rayStartParams" in need and params is None else None
    if literal is not None:
        # `rayStartParams:` with literal keys (`disable-usage-stats: "true"`): the sibling's keys (num-gpus) after them
        end, ind = literal
        expr = sibling_expr("rayStartParams")
        line = f"{ind}{{{{- with {expr} }}}}{{{{- toYaml . | nindent {len(ind)} }}}}{{{{- end }}}}"
        if line not in t.inserts.get(end, []):
            t.inserts.setdefault(end, []).append(line)
    if params is not None and params not in t.replaced:
        # `rayStartParams: {}` written in the group: the sibling's keys (num-gpus) when set, else `{}` as before
        head = lines[params][: lines[params].index(":") + 1]
        expr = sibling_expr("rayStartParams")
        t.replaced[params] = (
            f"{head} {{{{- with {expr} }}}}{{{{- toYaml . | nindent {line_indent(lines[params]) + 2} }}}}"
            "{{- else }} {}{{- end }}"
        )


def _join_pod_claims(t: _Edits, pod: int, head: str, expr: str, ranged: bool) -> bool:
    """Where the pod spec at line `pod` writes `resourceClaims:` (`head`) itself, the values list `expr` of the DRA
    claims joins that list, as the DRA toleration joins the pod's tolerations (a second key would keep only the last
    list: the user's claims, or the DRA ones, dropped without a word): after a literal list's items, or concatenated
    to the one values list it renders (`with X`, `if X` or a bare `toYaml X`). True when joined; False when the pod
    writes no such key; any other shape (or a map read per container of a `range`, which only the containers see)
    raises NotPassThrough."""
    lines = t.lines
    if not any(line == head for line in lines[pod + 1 : _pod_end(lines, pod)]):
        return False
    if (items := _literal_list(lines, pod, head)) is not None and _renders_key(lines, pod, head):
        end, item = items
        block = [
            f"{item}{{{{- with {expr} }}}}",
            f"{item}{{{{- toYaml . | nindent {len(item)} }}}}",
            f"{item}{{{{- end }}}}",
        ]
        if block[0] not in t.inserts.get(end, []):
            t.inserts.setdefault(end, [])[:0] = block
        return True
    if not ranged and (enclosed := _enclosed_list(lines, pod, head)) is not None:
        _join_own(t, enclosed, expr)  # nvcf's multi-node chart: its own claim only `if $resourceClaimTemplateEnabled`
        return True
    read = _toyaml_list(lines, pod, head) if _renders_key(lines, pod, head) else None
    cond, own = _if_list(lines, pod, head), _with_list(lines, pod, head)
    if ranged or (read is None and cond is None and own is None):
        at = next(j for j in range(pod + 1, len(lines)) if lines[j] == head)
        raise NotPassThrough(
            f"{t.rel}:{at + 1}: the pod writes its own `resourceClaims:` in a shape the DRA claims of `{expr}` do not "
            "join (a second key would drop one of the lists): join them by hand"
        )
    if read is not None:  # `resourceClaims:` then `{{- toYaml .Values.podClaims | nindent 8 }}` (`[]` stays `[]`)
        j, m = read
        t.replaced[j] = (
            lines[j][: m.start(2)]
            + f"({_claims_joined(t, j, m.group(2), expr)} | default {m.group(2)})"
            + lines[j][m.end(2) :]
        )
    elif cond is not None:  # `{{- if .Values.podClaims }}`, the key, then `toYaml .Values.podClaims`
        j, m, k, given = cond
        t.replaced[j] = lines[j][: m.start(2)] + f"or {m.group(2)} {expr}" + lines[j][m.end(2) :]
        joined = _claims_joined(t, k, given.group(2), expr)
        t.replaced[k] = lines[k][: given.start(2)] + f"({joined})" + lines[k][given.end(2) :]
    elif own is not None:  # `{{- with .Values.podClaims }}`, the key, then `toYaml .`
        j, m = own
        t.replaced[j] = lines[j][: m.start(2)] + _claims_joined(t, j, _operand(m.group(2)), expr) + lines[j][m.end(2) :]
    return True


def _claims_joined(t: _Edits, j: int, given: str, expr: str) -> str:
    """The pod's own claims list `given` and every DRA claims list joined at line j so far (two maps in one pod)."""
    exprs = t.joined.setdefault(j, [])
    if expr not in exprs:
        exprs.append(expr)
    return "concat " + " ".join(f"({e} | default list)" for e in [given, *exprs])


def _pod_end(lines: list[str], pod: int) -> int:
    from dramigrate.helm.templatelines import block_end

    return block_end(lines, pod) if pod >= 0 else len(lines)


def _joins_here(lines: list[str], pod: int, head: str, need: set[str]) -> bool:
    """Whether the pod spec at line `pod` renders its tolerations from a values list the DRA toleration joins (need's
    JOINS entries, toleration_places), or writes them in a shape that joins none."""
    found = _joinable_list(lines, pod, head)
    places = [n[len(JOINS) :].split(".") for n in need if n.startswith(JOINS)]
    if found is None or not places:
        return True
    return any(_ends_with(tuple(p), words) for p in places for words in _list_words(found[2].group(2)))


@dataclass(frozen=True)
class _OwnList:
    """Where a pod spec writes its own `tolerations:` from one list in a shape the DRA values' list joins (_own_list).
    `shape`: "literal" (`- key: dedicated` items: the list goes after them, at `line`, items indented `item`),
    "toyaml" (`{{- toYaml .Values.tolerations | nindent 6 }}` under the key, at `line`), "if" (that under `{{- if
    .Values.tolerations }}` at `cond`), "with" (`{{- with .Values.tolerations }}` above the key, at `line`), "call"
    (`{{- include "sim.tolerations" .Values.ollama | nindent 6 }}`, a helper of tolerations_helpers, at `line`),
    "enclosed" (literal items written only inside the pod's own `if` blocks, without `else`: the list goes after them,
    at `line`, and alone, under `not` their condition `guard`, above the outermost `if` at `cond`)."""

    shape: str
    line: int
    match: re.Match[str] | None = None
    item: str = ""
    cond: int = -1
    cond_match: re.Match[str] | None = None
    guard: str = ""  # "enclosed": the condition of the pod's `if` blocks around the literal list (outermost at `cond`)
    head: str = ""  # "enclosed": the `tolerations:` line

    @property
    def start(self) -> int:
        """The first line the join edits: the DRA list must be gathered above it."""
        return self.cond if self.shape == "enclosed" else self.line


# the call of a helper that writes the pod's `tolerations:` from its argument's list, at the pod's keys
_TOLERATIONS_CALL = re.compile(
    r'^(\s*\{\{-?\s*include\s+"([^"]+)"\s+)([$.][\w.$]*)(\s*\|\s*nindent\s+(\d+)\s*-?\}\}\s*)$'
)


def _own_list(t: _Edits, pod: int, head: str) -> _OwnList | None:
    """How the pod spec at line `pod` writes its own `tolerations:` (`head`, at its keys' indent), when in a shape
    the DRA values' list joins; None otherwise (none, or another shape)."""
    from dramigrate.helm.tolerationedits import _listed_items

    lines = t.lines
    heads = [j for j in _pod_span(lines, pod) if lines[j] == head]
    if len(heads) > 1:  # scubbo's jellyfin: a literal list, and below it `{{- with .Values.tolerations }}` a second
        # key (a duplicate, only where the values set a list): the DRA list joins the one written whatever the values
        heads = [j for j in heads if not _depth_at(lines, pod, j)]
    listed = _listed_items(lines, heads[0]) if len(heads) == 1 else None
    if _renders_key(lines, pod, head):
        if listed is not None and not listed[2]:  # literal items, maybe with values expressions in their fields
            return _OwnList("literal", listed[0], item=" " * listed[1])
        if (read := _toyaml_list(lines, pod, head)) is not None:
            return _OwnList("toyaml", read[0], read[1])
        return None
    if listed is not None and listed[2]:  # smartx h2pc's bind taints, unless another scheduler places the pod
        return _enclosed_list(lines, pod, head)
    if len(heads) == 1 and (within := _enclosed(_listed_items(lines, heads[0], alone_with=True), head)) is not None:
        return within  # the list written only inside one `with` of the pod's
    if (cond := _if_list(lines, pod, head)) is not None:
        return _OwnList("if", cond[2], cond[3], cond=cond[0], cond_match=cond[1])
    if (own := _with_list(lines, pod, head)) is not None:
        return _OwnList("with", own[0], own[1])
    if (call := _tolerations_call(t, pod, head)) is not None:
        return _OwnList("call", call[0], call[1])
    if (inline := _inline_list(lines, pod, head)) is not None:
        return _OwnList("inline", inline[0], inline[1], cond=inline[2], cond_match=inline[3])
    return None


def _enclosed_list(lines: list[str], pod: int, head: str) -> _OwnList | None:
    """The pod's own list under `head` when it is written with list items only inside the pod's own `if` blocks,
    without `else` (_OwnList "enclosed"); None for any other shape."""
    from dramigrate.helm.tolerationedits import _listed_items

    heads = [j for j in _pod_span(lines, pod) if lines[j] == head]
    return _enclosed(_listed_items(lines, heads[0]) if len(heads) == 1 else None, head)


def _enclosed(listed: tuple[int, int, list[tuple[int, str]]] | None, head: str) -> _OwnList | None:
    """The "enclosed" _OwnList of a list under `head` that _listed_items read (its end, items' indent and the `if`
    blocks open at it), when some `if` of the pod's is open at it."""
    if listed is None or not listed[2]:
        return None
    end, item, opens = listed
    guard = opens[0][1] if len(opens) == 1 else f"and {' '.join(_operand(c) for _, c in opens)}"
    return _OwnList("enclosed", end, item=" " * item, cond=opens[0][0], guard=guard, head=head)


# `tolerations:` and the action that writes the list on the same line: `{{- toYaml X | nindent 8 }}`, `{{- tpl (toYaml
# X) $ | nindent 8 }}`, or bitnami's `{{- include "common.tplvalues.render" (dict "value" X "context" $) | nindent 8 }}`
_INLINE_LIST = re.compile(
    r'^(\s*tolerations:\s*\{\{-?\s*(?:toYaml\s+|tpl\s+\(\s*toYaml\s+|include\s+"[^"]+"\s+\(\s*dict\s+"value"\s+))'
    r"([$.][\w.$]*)([\s)].*\|\s*n?indent\s+\d+\s*-?\}\}\s*)$"
)


def _inline_list(lines: list[str], pod: int, head: str) -> tuple[int, re.Match[str], int, re.Match[str] | None] | None:
    """(the line, its match, the line of an `{{- if X }}` right above or -1, that match) of the one `tolerations:`
    line of the pod spec at line `pod` that writes the list on that line from one values list X (_INLINE_LIST), alone
    or under `if X` that ends right after it."""
    found = [j for j in _pod_span(lines, pod) if lines[j].startswith(head + " ") and _INLINE_LIST.match(lines[j])]
    if len(found) != 1:
        return None
    j = found[0]
    m = _INLINE_LIST.match(lines[j])
    assert m is not None
    cond = _IF_LINE_OF.match(lines[j - 1]) if j else None
    end = j + 1 < len(lines) and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[j + 1]) is not None
    if cond is not None and cond.group(2) == m.group(2) and end:
        return j, m, j - 1, cond
    return (j, m, -1, None) if _renders_key(lines, pod, lines[j]) else None


def _tolerations_call(t: _Edits, pod: int, head: str) -> tuple[int, re.Match[str]] | None:
    """The line (and its match, group 3 the argument) of the one call of a tolerations helper (_Edits.called) that
    the pod spec at line `pod` writes at its keys' indent (that of `head`), outside any `if`/`with`/`range` of its
    own, with a values map or a variable's field as its argument."""
    from dramigrate.helm.templatelines import block_end

    if not t.called or pod < 0:
        return None
    at, depth, found = line_indent(head), 0, []
    for j in range(pod + 1, block_end(t.lines, pod)):
        line = t.lines[j]
        m = _TOLERATIONS_CALL.match(line)
        if m and not depth and m.group(2) in t.called and int(m.group(5)) == at and m.group(3) not in (".", "$"):
            found.append((j, m))
        for word, _ in BLOCK_ACTION.findall(line):
            depth += 1 if word in ("if", "with", "range") else -1 if word == "end" and depth else 0
    return found[0] if len(found) == 1 else None


def _join_own(t: _Edits, own: _OwnList, expr: str) -> None:
    """The pod's own tolerations list (`own`) joined with the DRA values' list `expr` (only those of its tolerations
    the pod's list does not tolerate already, but for a literal list): one `tolerations:` key, which a user's later
    values file that sets the pod's list keeps the device's toleration in."""
    lines, j, m = t.lines, own.line, own.match
    if own.shape in ("literal", "enclosed"):
        inside = expr  # inside a `with` of the pod's, `.` is not the root: the values are read from it
        if own.shape == "enclosed" and re.match(r"\s*\{\{-?\s*with\b", lines[own.cond]):
            inside = re.sub(r"(?<![\w$])\.Values\b", f"{t.root}.Values", expr)
        t.inserts.setdefault(j, [])[:0] = [
            f"{own.item}{{{{- with {inside} }}}}",
            f"{own.item}{{{{- toYaml . | nindent {len(own.item)} }}}}",
            f"{own.item}{{{{- end }}}}",
        ]
        if own.shape == "enclosed":  # where the pod's `if` blocks write no list, the DRA one alone
            ind = " " * line_indent(own.head)
            name = own.head.strip().rstrip(":")  # `tolerations`, or the pod's `resourceClaims`
            alone = [f"{ind}{{{{- if not {_operand(own.guard)} }}}}", *_list_block(t, name, ind, expr)]
            t.inserts.setdefault(own.cond, []).extend([*alone, f"{ind}{{{{- end }}}}"])
        return
    assert m is not None
    if own.shape == "toyaml":
        given = m.group(2)
        joined = f"(concat ({given} | default list) {_joined(t, j, given, expr)} | default {given})"
        t.replaced[j] = lines[j][: m.start(2)] + joined + lines[j][m.end(2) :]
    elif own.shape == "if":
        c = own.cond_match
        assert c is not None
        t.replaced[own.cond] = lines[own.cond][: c.start(2)] + f"or {c.group(2)} {expr}" + lines[own.cond][c.end(2) :]
        joined = f"(concat ({m.group(2)} | default list) {_joined(t, j, m.group(2), expr)})"
        t.replaced[j] = lines[j][: m.start(2)] + joined + lines[j][m.end(2) :]
    elif own.shape == "with":
        given = _operand(m.group(2))
        joined = f"concat ({given} | default list) {_joined(t, j, given, expr)}"
        t.replaced[j] = lines[j][: m.start(2)] + joined + lines[j][m.end(2) :]
    elif own.shape == "inline":  # the list read on the `tolerations:` line itself, under `if` of it or not
        if own.cond_match is not None:
            c = own.cond_match
            t.replaced[own.cond] = (
                lines[own.cond][: c.start(2)] + f"or {c.group(2)} {expr}" + lines[own.cond][c.end(2) :]
            )
        given = m.group(2)
        joined = f"(concat ({given} | default list) {_joined(t, j, given, expr)}"
        joined += ")" if own.cond_match is not None else f" | default {given})"  # as it was without DRA: `[]`, null
        t.replaced[j] = lines[j][: m.start(2)] + joined + lines[j][m.end(2) :]
    else:  # "call": the helper gets its argument with the list joined, the rest of it as it was
        arg, given = m.group(3), f"{m.group(3)}.tolerations"
        joined = f"(concat ({given} | default list) {_joined(t, j, given, expr)})"
        t.replaced[j] = lines[j][: m.start(3)] + f'(set (omit {arg} "tolerations") "tolerations" {joined})'
        t.replaced[j] += lines[j][m.end(3) :]


def _join_duplicates(t: _Edits, pod: int, head: str, expr: str) -> None:
    """Each second `tolerations:` (`head`) the pod spec at line `pod` writes below `{{- with <values list> }}`, beside
    the one the DRA list joined (_own_list: scubbo's jellyfin writes a literal list, then the values' under `with`):
    a duplicate key, rendered only where the values set that list, which YAML readers take over the first. The DRA
    list joins it too, inside its `with` (it renders no key where the values list is empty)."""
    lines = t.lines
    root = f"${expr}" if expr.startswith(".Values.") else expr if expr.startswith("$.") else ""  # read inside `with`
    span = _pod_span(lines, pod)
    heads = [j for j in span if lines[j] == head and _depth_at(lines, pod, j)]
    if not root or len(heads) + 1 != sum(lines[j] == head for j in span):
        return
    for j in heads:
        body = re.fullmatch(r"(\s*)\{\{-?\s*(?:toYaml \.|\. \| toYaml) \| nindent (\d+)\s*-?\}\}\s*", lines[j + 1])
        end = j + 2 < len(lines) and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[j + 2])
        if not (_WITH_LINE.match(lines[j - 1]) and body and end):
            continue
        ind = body.group(1)
        t.inserts.setdefault(j + 2, []).extend(
            [
                f"{ind}{{{{- with {_untolerated(t, '.', root)} }}}}",
                f"{ind}{{{{- toYaml . | nindent {body.group(2)} }}}}",
                f"{ind}{{{{- end }}}}",
            ]
        )


def _joined(t: _Edits, j: int, given: str, expr: str) -> str:
    """_untolerated of every DRA list joined at line j so far, `expr` too: two maps in one pod (h2oGPT's stack pod,
    its own container's and vLLM's) each join their list to the pod's; one edit of the line would keep the last."""
    exprs = t.joined.setdefault(j, [])
    if expr not in exprs:
        exprs.append(expr)
    both = " ".join(f"({e} | default list)" for e in exprs)
    return _untolerated(t, given, expr if len(exprs) == 1 else f"(concat {both} | uniq)")


def _untolerated(t: _Edits, given: str, expr: str) -> str:
    """The expression of the tolerations of the list `expr` (the DRA values') that the pod's own list `given` does not
    tolerate already (the migration adds none for a taint the pod tolerates), read by the claim-template file's
    define (helper_defines); the list whole when the chart's name is not known."""
    if not t.chart:
        return f"({expr} | default list)"
    return f'(include "{t.chart}.{TOLERATIONS_DEFINE}" (list {_operand(given)} {_operand(expr)}) | fromYamlArray)'


def device_check(
    t: _Edits, i: int, ref: tuple[list[str], str, str | None, SiblingExpr, int], need: set[str], path: Path_
) -> None:
    """Before line i, which passes the values map `path` into a container: a line that fails the render when the map
    holds one of the device keys the DRA values drop beside the claims they add (a values file of the user's given
    after the -dra.yaml file put it back): the container would ask for the device twice, through the device plugin
    and its claim. Nothing for a map whose sections are read one by one, or without the chart's name. The check's
    define first drops the keys and sections the map holds as null beside its claims (a DRA overlay's, which Helm
    keeps where the chart's values.yaml lacks the key: DROP_NULLS)."""
    line = _device_check_line(t, i, ref, need, path)
    # not again: an earlier fix's check is among the actions right above (the claims' `concat` after it, in a pod
    # with several maps), its chomping as the line above it was then (TGI's `{{ ... -}}` below `resources: `)
    above = {action_body(a.strip()) for a in itertools.takewhile(is_control, reversed(t.lines[:i]))}
    if line is not None and line not in t.inserts.get(i, []) and action_body(line.strip()) not in above:
        t.inserts.setdefault(i, []).append(line)


def _device_check_line(
    t: _Edits, i: int, ref: tuple[list[str], str, str | None, SiblingExpr, int], need: set[str], path: Path_ = ()
) -> str | None:
    """device_check's line before line i, None where it writes none."""
    _, key, under, sibling_expr, _ = ref
    devices = sorted(n[len(DEVICE) :] for n in need if n.startswith(DEVICE))
    if not t.chart or not devices or SECTION_CONTENT in need or under in (_SECTION, "limits", "requests"):
        return None
    expr = sibling_expr(key) + (f".{under}" if under else "")
    rooted = re.match(r"\$?\.Values\.", expr) and not any(isinstance(p, int) for p in path)
    # the line's own map where it is another values map than `path` (a branch of an if/else between two maps)
    own = re.fullmatch(r"\$?\.Values\.([\w.]+)", expr)
    if own and not _ends_with(path, own.group(1).split(".")):
        path = tuple(own.group(1).split("."))
    shown = display(path) + ("" if rooted else " (or another item's)")  # a map of a `range` over the values
    keys = " ".join(json.dumps(d) for d in devices)
    said = f"remove {', '.join(devices)} from {shown} (set after the -dra.yaml values): {DEVICE_TWICE}"
    # the map only with the DRA values' claim templates: a user's own claims beside a device, without them, render
    mine = f"and {t.root}.Values.{VALUES_KEY} " + (f"({expr})" if " " in expr else expr)
    call = f'include "{t.chart}.{DEVICES_DEFINE}" (list ({mine} | default dict) {json.dumps(said)} {keys})'
    here, above = t.lines[i], t.lines[i - 1] if i else ""
    if here.lstrip().startswith("{{-") or above == above.rstrip():  # the chomp takes no blank the line ends in
        return f"{' ' * line_indent(here)}{{{{- {call} }}}}"
    if not line_indent(here):  # `resources: ` then `{{ toYaml .resources | indent 10 }}` (TGI's)
        return f"{{{{ {call} -}}}}"
    return None


def _checked(line: str) -> bool:
    """Whether the line is an earlier fix's device_check line (at column 0 above horovod's `{{ toYaml .Values.resources
    | indent 10 }}`, under the `resources:` key the map is written for)."""
    return is_control(line) and f'.{DEVICES_DEFINE}" (list ' in line


def _drop_nulls(t: _Edits, i: int, expr: str) -> None:
    """Before line i, which writes the map `expr`: a line that deletes the keys its sections hold as null. Helm
    keeps a values file's null for a key the subchart's own values.yaml does not set (the umbrella's values.yaml
    sets it) or that only a user's -f file sets (values-set-dra.yaml after a shipped values-gpu.yaml), so the DRA
    values cannot delete the device key without it; values without a null
    render as before, and so do values with a null but no claims beside it (the device-plugin values with a user's
    null for the device's request render byte-identical to the original chart)."""
    ind = " " * line_indent(t.lines[i])
    drop = (
        f'{ind}{{{{- with {expr} }}}}{{{{- if and (kindIs "map" .) (hasKey . "claims") }}}}'
        "{{- $dramigrateMap := . }}{{- range $dramigrateName, $dramigrateSection := . }}"
        '{{- if kindIs "invalid" $dramigrateSection }}{{- $_ := unset $dramigrateMap $dramigrateName }}'
        '{{- else if kindIs "map" $dramigrateSection }}'
        "{{- range $dramigrateKey, $dramigrateValue := $dramigrateSection }}"
        '{{- if kindIs "invalid" $dramigrateValue }}{{- $_ := unset $dramigrateSection $dramigrateKey }}'
        "{{- end }}{{- end }}{{- end }}{{- end }}{{- end }}{{- end }}"
    )
    comment = (
        f"{ind}{{{{- /* with the DRA claims, delete the keys and sections a values file sets to null: Helm keeps such "
        "a null where this chart's values.yaml lacks the key */}}"
    )
    if drop not in t.inserts.get(i, []):
        t.inserts.setdefault(i, []).extend([comment, drop])


def _literal_list(lines: list[str], pod: int, head: str) -> tuple[int, str] | None:
    """(one past its last line, the items' indent) of the list the pod spec at line `pod` writes under `head` with
    literal items only, indented under it; None for any other shape (a toYaml, an action, a compact list)."""
    from dramigrate.helm.templatelines import block_end

    at = next((j for j in _pod_span(lines, pod) if lines[j] == head), None)
    if at is None:
        return None
    end = block_end(lines, at)
    body = [line for line in lines[at + 1 : end] if line.strip()]
    if not body or not body[0].lstrip().startswith("- ") or any("{{" in line for line in body):
        return None
    return end, " " * line_indent(body[0])


_TOYAML_LINE = re.compile(r"^(\s*\{\{-?\s*toYaml\s+)([$.][\w.$]*)(\s*\|\s*n?indent\s+\d+\s*-?\}\}\s*)$")


def _toyaml_list(lines: list[str], pod: int, head: str) -> tuple[int, re.Match[str]] | None:
    """The line (and its match) of the one `{{- toYaml <expr> | nindent N }}` that the pod spec at line `pod` writes
    under `head`, if that is all it writes there."""
    from dramigrate.helm.templatelines import block_end

    at = next((j for j in _pod_span(lines, pod) if lines[j] == head), None)
    if at is None:
        return None
    body = [j for j in range(at + 1, block_end(lines, at)) if lines[j].strip()]
    m = _TOYAML_LINE.match(lines[body[0]]) if len(body) == 1 else None
    return (body[0], m) if m else None


# a values list, or a list item's own list defaulting to one (weaviate's modules: `index $module "tolerations" |
# default .Values.tolerations`)
_INDEX_DEFAULT = r'index \$\w* "[\w-]+" \| default [$.][\w.$]*'
# a component's list defaulting to the chart's (`with (.Values.worker.tolerations | default .Values.tolerations)`),
# or a ranged item's to a template's, without the parentheses (`with $v.tolerations | default $baseTpl.tolerations`)
_LIST_DEFAULT = r"\([$.][\w.$]* \| default [$.][\w.$]*\)|[$.][\w.$]* \| default [$.][\w.$]*"
_WITH_LINE = re.compile(rf"^(\s*\{{\{{-?\s*with\s+)([$.][\w.$]*|{_INDEX_DEFAULT}|{_LIST_DEFAULT})(\s*-?\}}\}}\s*)$")
_INDEX_PARTS = re.compile(r'index (\$\w*) "([\w-]+)" \| default ([$.][\w.$]*)')
_DEFAULT_PARTS = re.compile(r"\(([$.][\w.$]*) \| default ([$.][\w.$]*)\)|([$.][\w.$]*) \| default ([$.][\w.$]*)")


def _list_words(expr: str) -> list[list[str]]:
    """The values keys each list an expression of _WITH_LINE may read ends in: `worker.tolerations` for
    `$.Values.worker.tolerations` (a variable's keys are not known), two for an item's list with a default or a list
    with a default."""
    m = _INDEX_PARTS.fullmatch(expr)
    d = _DEFAULT_PARTS.fullmatch(expr)
    parts = [f"{m.group(1)}.{m.group(2)}", m.group(3)] if m else [g for g in d.groups() if g] if d else [expr]
    return [[w for w in p.split(".") if w and not w.startswith("$") and w != "Values"] for p in parts]


def _operand(expr: str) -> str:
    """An expression as an argument of a function: a pipeline in parentheses (once)."""
    return f"({expr})" if " " in expr and _grouped(expr) is None else expr


# a key's list written on the key's own line inside `with`: ` {{ toYaml . | nindent 8 }}` after `tolerations:`
_TOYAML_DOT = r"\{\{-?\s*(?:toYaml \.|\. \| toYaml) \| nindent \d+\s*-?\}\}"  # `{{- toYaml . | nindent 8 }}`
_WITH_INLINE = re.compile(rf"[ \t]+{_TOYAML_DOT}\s*")
_WITH_BODY = re.compile(rf"\s*{_TOYAML_DOT}\s*|\s*\{{\{{\s*toYaml \. \| indent \d+\s*-?\}}\}}\s*")


def _pod_span(lines: list[str], pod: int) -> range:
    """The lines of the pod spec at line `pod`: its block, or the whole template when its keys have no YAML parent
    (-1: a define that writes a pod spec at column 0, ai-workloads' `ai-workloads.podSpec`)."""
    return range(pod + 1, block_end(lines, pod)) if pod >= 0 else range(len(lines))


def _with_list(lines: list[str], pod: int, head: str) -> tuple[int, re.Match[str]] | None:
    """The line (and its match) of `{{- with <expr> }}` right above the one `head` of the pod spec at line `pod`,
    when the block writes `{{- toYaml . | nindent N }}` under it, or on the key's own line (zw's video-poc:
    `tolerations: {{ toYaml . | nindent 8 }}`), and ends."""

    span = _pod_span(lines, pod)
    inline = [j for j in span if lines[j].startswith(head) and _WITH_INLINE.fullmatch(lines[j][len(head) :])]
    heads = [j for j in span if lines[j] == head] + inline
    if len(heads) != 1 or not 0 < heads[0] < len(lines) - 2:
        return None
    j = heads[0]
    m = _WITH_LINE.match(lines[j - 1])
    # `{{- toYaml . | nindent 8 }}`, or `{{- . | toYaml | nindent 8 }}` (dask's)
    # or `{{ toYaml . | indent 2 }}` at column 0 (ai-workloads' pod spec define), its line break kept
    body = j + 1 if j in inline else j + 2 if _WITH_BODY.fullmatch(lines[j + 1]) else _range_items_end(lines, j + 1)
    end = body < len(lines) and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[body])
    return (j - 1, m) if m and body and end else None


_RANGE_DOT = re.compile(r"\s*\{\{-?\s*range\s+(?:\$\w+\s*:=\s*)?\.\s*-?\}\}\s*")


def _range_items_end(lines: list[str], at: int) -> int:
    """One past the `end` of a `{{- range $t := . }}` at line `at` that writes the list's items field by field
    (speechmatics' sm-gpu: `- key: {{ $t.key }}`, `operator: ...`), or 0 when line `at` is not such a range."""
    if not _RANGE_DOT.fullmatch(lines[at]):
        return 0
    depth = 0
    for i in range(at, len(lines)):
        for word, _ in BLOCK_ACTION.findall(lines[i]):
            depth += -1 if word == "end" else 1
        if depth == 0:
            return i + 1
    return 0


_IF_LINE_OF = re.compile(r"^(\s*\{\{-?\s*if\s+)([$.][\w.$]*)(\s*-?\}\}\s*)$")


def _if_list(lines: list[str], pod: int, head: str) -> tuple[int, re.Match[str], int, re.Match[str]] | None:
    """(the line of `{{- if <expr> }}` right above the one `head` of the pod spec at line `pod`, its match, the line of
    the `{{- toYaml <expr> | nindent N }}` under the head, its match) when the block writes that alone and ends."""

    heads = [j for j in _pod_span(lines, pod) if lines[j] == head]
    if len(heads) != 1 or not 0 < heads[0] < len(lines) - 2:
        return None
    j = heads[0]
    cond, read = _IF_LINE_OF.match(lines[j - 1]), _TOYAML_LINE.match(lines[j + 1])
    end = re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[j + 2])
    return (j - 1, cond, j + 1, read) if cond and read and end and cond.group(2) == read.group(2) else None


def _joinable_list(lines: list[str], pod: int, head: str) -> tuple[int, int, re.Match[str]] | None:
    """Where the pod spec at line `pod` writes its `tolerations:` (`head`) from one values list in a shape
    template_edits joins the DRA values' list to: (the line it reads the list at, a line above it to change too or
    -1, the match of the read, group 2 the list's expression); None for any other shape."""
    if (read := _toyaml_list(lines, pod, head)) is not None and _renders_key(lines, pod, head):
        return read[0], -1, read[1]
    if (own := _with_list(lines, pod, head)) is not None:
        return own[0], -1, own[1]
    if (cond := _if_list(lines, pod, head)) is not None:
        return cond[2], cond[0], cond[3]
    return None


def _params_lines(lines: list[str], pod: int, shape: str) -> list[int]:
    """The lines of a KubeRay group's `rayStartParams` (`shape`: the rest of the line after the key) beside the
    `template:` that holds the pod spec at line `pod`."""
    from dramigrate.helm.templatelines import block_end, parent_line

    template = parent_line(lines, pod)
    group = parent_line(lines, template) if template >= 0 and lines[template].strip() == "template:" else -1
    if group < 0:
        return []
    at = line_indent(lines[template])
    head = re.compile(rf"\s*(?:-\s+)?rayStartParams:{shape}")
    return [
        j for j in range(group, block_end(lines, group)) if line_indent(lines[j]) == at and head.fullmatch(lines[j])
    ]


def _empty_params(lines: list[str], pod: int) -> int | None:
    """The line of a KubeRay group's literal `rayStartParams: {}` beside the `template:` that holds the pod spec at
    line `pod`, if the group writes it so."""
    return next(iter(_params_lines(lines, pod, r"\s*\{\}\s*")), None)


def _literal_params(lines: list[str], pod: int) -> tuple[int, str] | None:
    """(one past its last line, its keys' indent) of a KubeRay group's `rayStartParams:` block beside the `template:`
    that holds the pod spec at line `pod`, when it writes literal keys only and no `num-gpus` (the migration's key)."""
    from dramigrate.helm.templatelines import block_end

    heads = _params_lines(lines, pod, r"\s*")
    if len(heads) != 1:
        return None
    end = block_end(lines, heads[0])
    body = [line for line in lines[heads[0] + 1 : end] if line.strip()]
    if not body or any("{{" in line or re.match(r"\s*['\"]?num-gpus\b", line) for line in body):
        return None
    return end, " " * line_indent(body[0])


_ROOT_DOT = re.compile(r"(?<![\w$)\]\.])\.(?=[A-Za-z_])")  # `.Values` at the chart's root, not `$x.y` nor `(..).y`
_DOT_ARG = re.compile(r"(?<=\s)\.(?=\s|\)|-?\}\})")  # `.` alone as an argument (`include "x.namespace" .`)


# An action's delimiters with the spacing inside them, which Helm ignores (`{{.Values.ns}}` is `{{ .Values.ns }}`);
# a trim marker's dash is kept, for it trims the text outside.
_ACTION_SPACING = re.compile(r"\{\{(-\s)?\s*|\s*(\s-)?\}\}")


def _spaced(m: re.Match[str]) -> str:
    """One delimiter of _ACTION_SPACING written as `{{ `, `{{- `, ` }}` or ` -}}`."""
    if m.group(0).lstrip().startswith("{{"):
        return "{{- " if m.group(1) else "{{ "
    return " -}}" if m.group(2) else " }}"


def namespace_expr(root: Path, rels: set[str]) -> tuple[str, str]:
    """The namespace the workloads that take the maps render (`{{ .Values.namespace }}`), as the claim-template
    file reads it inside its `range` (`{{ $.Values.namespace }}`), with the assignments of the variables it reads
    as the template sets them above its `namespace:` line (pattern A's claim template carries the same);
    `{{ $.Release.Namespace }}` when the workloads name none. Where they name different ones (another expression, or
    the same variable set otherwise), each item of the file's list of them (claimnamespaces.py)."""
    from dramigrate.helm.idiomatic import _definitions, _metadata_line

    found: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Namespaced] = {}  # by the expression spaced alike,
    for rel in sorted(rels):  # what it reads and where it renders
        text = (root / rel).read_text(encoding="utf-8")
        lines = text.splitlines(True)
        own = _metadata_line([line.rstrip("\n") for line in lines], "namespace")
        if own is not None:
            at = next((i for i, line in enumerate(lines) if line.rstrip("\n") == f"  namespace: {own}"), 0)
            offset = len("".join(lines[:at])) or len(text)
            guarded = guards(text, offset) if at else ()
            defs = tuple(_definitions(text, rel, own, offset))
            read = tuple(_definitions(text, rel, own + "".join(f"{{{{ {g} }}}}" for g in guarded), offset))
            rooted = re.sub(
                r"\{\{.*?\}\}", lambda m: _DOT_ARG.sub("$", _ROOT_DOT.sub("$.", m.group(0))), own, flags=re.S
            )
            key = (_ACTION_SPACING.sub(_spaced, own), defs, guarded)
            found[key] = Namespaced(own, rooted, rel, at + 1, defs, guarded, read)
    if not found:
        return "", "{{ $.Release.Namespace }}"
    if len({k[:2] for k in found}) == 1:  # one namespace wherever the workloads render
        found = dict(list(found.items())[:1])
    return many_namespaces(sorted(found.values(), key=lambda n: (n.rel, n.line)))


TOLERATIONS_DEFINE = "draTolerations"  # the claim-template file's define of the tolerations a pod's list lacks
DEVICES_DEFINE = "draDevices"  # and the one that fails on a device key beside the claims (device_check)
DEVICE_TWICE = "the container would ask for it twice, by device plugin and DRA claim"  # ends its message


def helper_defines(chart: str, used: str, have: str = "") -> str:
    """The defines of the claim-template file that the changed templates (`used`, their text) include: the DRA
    values' tolerations a pod's own list does not tolerate already (as plan.covers reads one), and the check that a
    container's map holds no device key the DRA values drop beside its claims. Those the file has (`have`) left out.
    """
    out = ""
    if f'"{chart}.{TOLERATIONS_DEFINE}"' in used and f'define "{chart}.{TOLERATIONS_DEFINE}"' not in have:
        out += (
            f'{{{{- define "{chart}.{TOLERATIONS_DEFINE}" -}}}}'
            "{{- /* of the DRA tolerations (index . 1), those the pod's list (index . 0) lacks */}}\n"
            "{{- $given := index . 0 | default list }}{{ range $t := index . 1 }}{{ $tolerated := false }}\n"
            '  {{- range $given }}{{ if and (eq (.operator | default "Equal") "Exists") (has (.key | default "") '
            '(list "" $t.key)) (has (.effect | default "") (list "" $t.effect)) }}{{ $tolerated = true }}{{ end }}'
            "{{ end }}\n"
            "  {{- if not $tolerated }}{{ list $t | toYaml | nindent 0 }}{{ end }}{{ end }}{{ end }}\n"
        )
    if f'"{chart}.{DEVICES_DEFINE}"' in used and f'define "{chart}.{DEVICES_DEFINE}"' not in have:
        out += (
            f'{{{{- define "{chart}.{DEVICES_DEFINE}" -}}}}'
            "{{- /* a map with claims (index . 0): drop the keys and sections a values file sets to null (Helm "
            "keeps such a null where values.yaml lacks the key), then fail with (index . 1) on a device key (index . 2 "
            "on) */}}\n"
            '{{- $map := index . 0 }}{{ if $map.claims }}{{ range $s, $keys := $map }}{{ if kindIs "invalid" $keys }}'
            '{{ $_ := unset $map $s }}{{ else if kindIs "map" $keys }}{{ range $k, $v := $keys }}'
            '{{ if kindIs "invalid" $v }}{{ $_ := unset $keys $k }}{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}\n'
            '{{- range $key := slice . 2 }}{{ range $section := list "limits" "requests" }}'
            "{{ if and (index $ 0).claims (index (get (index $ 0) $section | default dict) $key) }}\n"
            "  {{- fail (index $ 1) }}{{ end }}{{ end }}{{ end }}{{ end }}\n"
        )
    return out


def claim_template_file(namespace: tuple[str, str] | None, scoped: bool = False, defines: str = "") -> str:
    """`namespace`: the assignments the namespace expression reads and the expression (namespace_expr), or None
    when the workloads render without a namespace."""
    named = "<release>-<name>" if scoped else "<name>"
    head = f"{{{{- /* DRA ResourceClaimTemplates from .Values.{VALUES_KEY} (name -> spec, null drops it), "
    head += f"named {named} */}}}}\n"
    many = namespace is not None and namespace[1] == EACH_NAMESPACE  # in each of the workloads' namespaces
    body = (
        (namespace[0] if namespace else "")
        + (
            f"{{{{- range $namespace := {NAMESPACES} | compact | uniq }}}}"
            f"{{{{ range $name, $spec := $.Values.{VALUES_KEY} }}}}"
            if many
            else f"{{{{- range $name, $spec := .Values.{VALUES_KEY} }}}}"
        )
        + "{{ if $spec }}\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata:\n"
        + ("  name: {{ $.Release.Name }}-{{ $name }}\n" if scoped else "  name: {{ $name }}\n")
        + (f"  namespace: {namespace[1]}\n" if namespace else "")
        + "spec:\n"
        "  {{- toYaml $spec | nindent 2 }}\n"
        "{{- end }}{{ end }}" + "{{ end }}" * many + "\n"
    )
    return (
        head
        + capabilities_check(".Values.resourceClaimTemplates", "use the values without DRA (not the *-dra.yaml file)")
        + body
        + defines
    )


def _doc_lines(style: str, key: str, text: str, ind: str) -> list[str]:
    import textwrap

    lines = textwrap.wrap(text, max(40, 100 - len(ind)), break_on_hyphens=False, break_long_words=False)
    if style == "bitnami":
        return [f"{ind}## @param {key} {lines[0]}", *(f"{ind}## {x}" for x in lines[1:])]
    lead = "# -- " if style == "helm-docs" else "# "
    return [f"{ind}{lead if i == 0 else '# '}{x}" for i, x in enumerate(lines)]


def claims_docs(
    values: str,
    values_path: Path,
    map_paths: list[Path_],
    counted: frozenset[Path_] = frozenset(),
    flats: frozenset[Path_] = frozenset(),
    named: str = "",
) -> str:
    """values.yaml with `resourceClaims: []` (the sibling each pass-through renders) documented right after each
    resources map the chart's values.yaml sets, in the chart's comment style; an empty list renders nothing.
    `counted`: the maps whose device counts a template reads, which get `deviceCounts: {}` (reread) too; `flats`:
    the maps that are the sections' content, whose containers claim the pod's claims by name; `named`: the map whose
    claims name them, when not the one they are documented beside (a library's `container.resources`, beside the
    top-level `resources` it renders as the pod's own)."""
    from dramigrate.helm.values import key_line

    lines = values.splitlines()
    inserts: dict[int, list[str]] = {}
    style = _comment_style(values)
    done: set[Path_] = set()
    for path in map_paths:
        if not path or not all(isinstance(p, str) for p in path):
            continue
        counts = path in counted
        by_key = keyed(path)  # `resources.gpu`: `resourceClaims: {}` beside `resources`, keyed as it is
        path = path[:-1] if by_key else path
        found = next(((path[k:], n) for k in range(len(path)) if (n := key_line(values_path, path[k:]))), None)
        if found is None:
            continue
        own, line = found
        sibling = sibling_path(own, "resourceClaims")
        if key_line(values_path, sibling) or not 0 < line <= len(lines) or sibling in done:
            continue
        done.add(sibling)
        ind = line_indent(lines[line - 1])
        end = line  # the map's block: deeper lines, comments included (a commented-out example)
        for j in range(line, len(lines)):
            text = lines[j]
            if not text.strip() or (line_indent(text) <= ind and text.lstrip().startswith("#")):
                continue  # a comment at the key's column inside the map (a commented-out device key) ends nothing
            if line_indent(text) <= ind:
                break
            end = j + 1
        claimed = named or own[-1]
        doc = f"DRA ResourceClaims of the pod (resource.k8s.io/v1, Kubernetes 1.34+), named in {claimed}.claims"
        if path in flats:
            doc = (
                "DRA ResourceClaims of the pod (resource.k8s.io/v1, Kubernetes 1.34+), each claimed by the containers "
                f"that take {own[-1]}"
            )
        if by_key:
            doc = f"DRA ResourceClaims of the pod (resource.k8s.io/v1, Kubernetes 1.34+), by the keys of {own[-1]}"
        # keys apart by a blank line: the next key beside the map is below one (not a shallower key, as after the
        # last key of archana's `configs.fp8`, whose blank line parts the top-level keys)
        after = next((j for j in range(end, len(lines)) if lines[j].strip()), len(lines))
        apart = after > end and after < len(lines) and line_indent(lines[after]) == ind
        blank = [""] if apart else []
        empty = "{}" if by_key else "[]"
        inserts.setdefault(end, []).extend(
            [*blank, *_doc_lines(style, ".".join(sibling), doc, " " * ind), f"{' ' * ind}{sibling[-1]}: {empty}"]
        )
        if len(sibling) == 1 and not any(x.startswith(f"{VALUES_KEY}:") for more in inserts.values() for x in more):
            inserts[end] += templates_doc(style)  # the claim templates beside the pod's claims they name
        if counts:
            key = sibling_path(own, COUNTS)
            doc = (
                f"Device counts of the DRA claims (key -> count): templates read them instead of the keys in {own[-1]}"
            )
            inserts[end] += [*_doc_lines(style, ".".join(key), doc, " " * ind), f"{' ' * ind}{key[-1]}: {{}}"]
    if not inserts:
        return values
    out = []
    for i, text in enumerate(lines, start=1):
        out.append(text)
        out.extend(inserts.get(i, []))
    return "\n".join(out) + ("\n" if values.endswith("\n") else "")


_SCHEMA_ENTRIES: dict[str, dict[str, Any]] = {
    "resourceClaims": {
        "type": "array",
        "description": "DRA ResourceClaims of the pod (resource.k8s.io/v1, Kubernetes 1.34+)",
        "items": {"type": "object"},
    },
    "tolerations": {"type": "array", "items": {"type": "object"}},
    OWN_TOLERATIONS: {
        "type": "array",
        "description": "Tolerations the DRA claims add to the pod",
        "items": {"type": "object"},
    },
    COUNTS: {"type": "object", "description": "Device counts the DRA claims ask for, by device key"},
    "rayStartParams": {"type": "object"},
    "claims": {
        "type": "array",
        "description": "DRA claims of the container, by the pod's resourceClaims name",
        "items": {"type": "object"},
    },
}


def schema_keys(values_path: Path, map_paths: dict[Path_, set[str]]) -> tuple[tuple[Path_, str, dict[str, Any]], ...]:
    """The keys the rewrite and its -dra.yaml values add beside and inside each resources map (object path in the
    chart's own values, key, schema entry): `resourceClaims` (and the other siblings) beside it, `claims` in it."""
    from dramigrate.helm.values import key_line

    out = []
    for path, siblings in map_paths.items():
        own = next((path[k:] for k in range(len(path)) if key_line(values_path, path[k:])), path)
        for sibling in sorted({"resourceClaims", *siblings} & set(_SCHEMA_ENTRIES)):
            out.append((own[:-1], sibling_key(str(own[-1]), sibling), _SCHEMA_ENTRIES[sibling]))
        if SECTION_CONTENT not in siblings:  # the map holds its container's claims
            out.append((own, "claims", _SCHEMA_ENTRIES["claims"]))
    return tuple(out)


def templates_doc(style: str) -> list[str]:
    """The lines of `resourceClaimTemplates: {}`, documented in the chart's comment style."""
    text = "DRA ResourceClaimTemplates, name -> spec (resource.k8s.io/v1, Kubernetes 1.34+; see *-dra.yaml)"
    return [*_doc_lines(style, VALUES_KEY, text, ""), f"{VALUES_KEY}: {{}}"]


def values_doc(values: str, pod_claims: str = "") -> str:
    """values.yaml with `resourceClaimTemplates: {}` documented at its end, unless claims_docs put it beside a
    top-level `resourceClaims: []`; a blank line before it unless the file ends in one or has nothing else. With
    `pod_claims` (the map whose `claims` name them: `resources`), `resourceClaims: []` documented before it."""
    if re.search(rf"^{VALUES_KEY}:", values, re.M):
        return values
    sep = "" if values.endswith("\n") or not values else "\n"
    blank = "" if values.endswith("\n\n") or not values.strip() else "\n"
    style = _comment_style(values)
    claims = f"DRA ResourceClaims of the pod (resource.k8s.io/v1, Kubernetes 1.34+), named in {pod_claims}.claims"
    pod = [*_doc_lines(style, "resourceClaims", claims, ""), "resourceClaims: []"] if pod_claims else []
    return values + sep + blank + "\n".join([*pod, *templates_doc(style)]) + "\n"


# a helper whose whole body writes one values resources map (`{{- define "chart.resources" -}}` then
# `{{- toYaml .Values.resources -}}`, vllm-xe): an include of it passes that map through as `toYaml` does
_MAP_HELPER = re.compile(
    r'\{\{-?\s*define\s+"([^"]+)"\s*-?\}\}\s*'
    r"(?:\{\{-?\s*(if|with)\s+(\.Values\.[\w.]*[Rr]esources)\s*-?\}\}\s*)?"
    r"(^resources:[ \t]*\n\s*)?"
    r"\{\{-?\s*toYaml\s+(\.Values\.[\w.]*[Rr]esources|\.)(\s*\|\s*n?indent\s+[1-9]\d*)?\s*-?\}\}\s*"
    r"(\{\{-?\s*end\s*-?\}\}\s*)?\{\{-?\s*end\s*-?\}\}",
    re.M,
)


def _map_helper(m: re.Match[str]) -> str | None:
    """The values map a _MAP_HELPER match writes whole, or None when its parts do not fit: a guard (`if M` then
    `toYaml M`, `with M` then `toYaml .`, gsampaio's llmbench vLLM) tests the map it writes and has its `end`;
    `toYaml .` only under `with`; the map indented under a `resources:` key the helper writes (at its column 0), or
    neither."""
    guard, tested, keyed, written, indented, closed = m.group(2, 3, 4, 5, 6, 7)
    if bool(keyed) != bool(indented):
        return None
    if guard is None:
        return written if written != "." and closed is None else None
    if closed is None or written != ("." if guard == "with" else tested):
        return None
    return tested


_INCLUDE = re.compile(r'\b(?:include|template)\s+"([^"]+)"\s+[.$](?=[\s|)}])')


def map_helpers(root: Path) -> dict[str, str]:
    """The chart's helpers whose whole body is a `toYaml` of one values resources map: name -> the map's expression
    (`.Values.resources`); those that write a container with that map as its `resources:` (containerhelpers); and
    those that write `resources:` from their argument's map (arghelpers): name -> `.resources`."""
    templates = _templates(root)
    found = (m for text in templates.values() for m in _MAP_HELPER.finditer(text))
    own = {m.group(1): expr for m in found if (expr := _map_helper(m))}
    return {**dict.fromkeys(arg_helpers(templates), ".resources"), **container_helpers(templates), **own}


def expand_map_helpers(text: str, helpers: dict[str, str]) -> str:
    """The template with each include of a map helper (map_helpers) read as the `toYaml` it writes: called with the
    chart's context (`include "chart.resources" .` -> `toYaml .Values.resources`), or with a values path for a helper
    of its argument's map (`include "sim.resources" .Values.ollama` -> `toYaml .Values.ollama.resources`), line for
    line."""
    if not helpers:
        return text
    rooted = {name for name, expr in helpers.items() if expr.startswith(".Values")}
    text = _INCLUDE.sub(lambda m: f"toYaml {helpers[m.group(1)]}" if m.group(1) in rooted else m.group(0), text)
    return expand_calls(text, helpers.keys() - rooted)


def helper_claims(root: Path, rels: set[str], map_paths: dict[Path_, set[str]]) -> dict[str, str]:
    """The helper files (rel -> text) with the map's `claims` under the `resources:` of each arg helper (arghelpers)
    that writes the map's sections one by one and is called by a template of `rels` with a map that gets claims."""
    templates = _templates(root)
    helpers = arg_helpers(templates)
    edits: dict[str, _Edits] = {}
    for rel in sorted(rels):
        for name, path in sorted(called_maps(templates.get(rel) or (root / rel).read_text(encoding="utf-8"), helpers)):
            helper = helpers[name]
            if helper.section >= 0 and "resourceClaims" in map_paths.get(path, set()):
                text = templates[helper.rel]
                t = edits.setdefault(helper.rel, _Edits(text, helper.rel, False, set(), text.splitlines()))
                _claims_beside_sections(t, helper.section, ".resources.claims")
    return {rel: t.out() for rel, t in edits.items()}


def parent_templates(root: Path) -> dict[str, str]:
    """The template files with defines of the charts above a subchart unpacked in charts/, by path from `root`
    (`../../templates/_deployment.tpl`): Helm shares defines across the chart tree, so a subchart's template may
    include one its umbrella holds (sensity-api's subcharts each `{{ include "sensity-api.deployment" . }}`)."""
    out: dict[str, str] = {}
    up, hops = root, ""
    while up.parent.name == "charts" and (up.parent.parent / "Chart.yaml").is_file():
        up, hops = up.parent.parent, f"{hops}../../"
        out.update({f"{hops}{rel}": text for rel, text in _templates(up).items() if "define" in text})
    return out


def _templates(root: Path) -> dict[str, str]:
    """The chart's template files (rel -> text), helpers included."""
    out = {}
    for path in sorted((root / "templates").rglob("*")):
        try:
            out[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def _read_pattern(path: Path_, section: str, key: str) -> re.Pattern[str] | None:
    """A template's own read of a device key the DRA values drop, by the map's dotted values path followed by the
    key (`index .Values.resources.limits "nvidia.com/gpu"`, `hasKey $.Values.x.resources.limits "amd.com/gpu"`),
    matching the map expression (a map keyed by accelerator, `resources.neuron`, too: its counts sit beside
    `resources`); None for a path that is not dotted."""
    words = [*path, section]
    if not all(isinstance(w, str) and re.fullmatch(r"[A-Za-z_]\w*", w) for w in words):
        return None
    dotted = r"\.Values\." + r"\.".join(re.escape(str(w)) for w in words)
    return re.compile(rf"(\$?){dotted}(?![\w.])(?=\s+\"{re.escape(key)}\")")


def _action(body: str) -> str:
    return r"\{\{-?\s*" + body + r"\s*-?\}\}\s*"


def _with_read_pattern(path: Path_, section: str, key: str) -> re.Pattern[str] | None:
    """A line's assignment of a dropped device key read from `.` inside `with`s of its map and section, all closed on
    that line (`{{- with .Values.resources -}}{{- with .limits -}}{{- $gpu = index . "nvidia.com/gpu" -}}{{- end
    -}}{{- end -}}`): with the DRA values the section may be gone, and the assignment with it."""
    pattern = _read_pattern(path, section, key)
    if pattern is None:
        return None
    dotted = r"\.Values\." + r"\.".join(re.escape(str(w)) for w in path)
    assign = r"(\{\{-?\s*\$\w+\s*=[^{}]*?\bindex\s+\.\s+\"" + re.escape(key) + r"\"[^{}]*\}\})\s*"
    return re.compile(
        _action(rf"with\s+(\$?){dotted}") + _action(rf"with\s+\.{re.escape(section)}") + assign + _action("end") * 2
    )


def reads_count(text: str, path: Path_, section: str, key: str) -> bool:
    """Whether the template reads a dropped device key in a form reread rewrites."""
    return _reads_count(text, tuple(path), section, key)


@functools.lru_cache(maxsize=8192)
def _reads_count(text: str, path: Path_, section: str, key: str) -> bool:
    """reads_count, once per template text and map: the proof asks it of every value set's edits, mostly the same
    (groundx's 11 value sets spent 4 s on the same questions)."""
    found = (_read_pattern(path, section, key), _with_read_pattern(path, section, key), _reread_before(path, key))
    return (
        any(p is not None and p.search(text) for p in found)
        or bool(_var_reads(text, path, section, key))
        or bool(_scoped_reads(text, path, section, key))
        or bool(_held_reads(text, path, section, key))
    )


def _reread_before(path: Path_, key: str) -> re.Pattern[str]:
    """A read of the device key an earlier fix rewrote to take the counts beside the map (reread's
    `(.Values.deviceCounts | default .Values.resources.limits) "nvidia.com/gpu"`, _scoped_reads' `default .limits`): a
    second fix reads the counts there still, and keeps them in the DRA values."""
    counts = r"\.".join(re.escape(str(p)) for p in sibling_path(path, COUNTS))
    return re.compile(rf'\.Values\.{counts} \| default [^()]*\)\s+"{re.escape(key)}"')


def _scoped_reads(text: str, path: Path_, section: str, key: str) -> dict[int, str]:
    """The lines of a template (outside defines) that read the device key from the section of `.` where `.` is the
    map (plex's `{{- if and $.Values.pms.gpu.nvidia.enabled (not (hasKey .limits "nvidia.com/gpu")) }}`, inside
    `with .Values.pms.resources`), rewritten to read the counts beside the map when the values set them."""
    pattern = _read_pattern(path, section, key)
    if pattern is None or f'"{key}"' not in text:
        return {}
    from dramigrate.helm.idiomatic import _enclosing, with_scope

    read = re.compile(rf'(?<![\w$)\]])\.{re.escape(section)}(?=\s+"{re.escape(key)}")')
    counts = ".".join(str(p) for p in sibling_path(path, COUNTS))
    out, offset = {}, 0
    for n, line in enumerate(text.splitlines(keepends=True)):
        scoped = read.search(line) and "define" not in _enclosing(text, n)
        if scoped and with_scope(text, offset) == ".Values." + ".".join(str(p) for p in path):
            out[n] = read.sub(f"($.Values.{counts} | default .{section})", line.rstrip("\r\n"))
        offset += len(line)
    return out


def _var_reads(text: str, path: Path_, section: str, key: str) -> dict[int, str]:
    """The lines that read the device key through a variable holding the map, rewritten (mapreads.py)."""
    return var_reads(text, path, section, key, lambda map_key: sibling_key(map_key, COUNTS))


def reread(text: str, reads: set[tuple[Path_, str, str]]) -> str:
    """The template with each read of a dropped device key taking its map from the DRA values' `deviceCounts` beside
    the resources map when they set it (`index (.Values.deviceCounts | default .Values.resources.limits)
    "nvidia.com/gpu"`): with the device-plugin values `deviceCounts` is unset and the line reads as before; with
    the DRA values it reads the count the claims ask for (leapfrogai's `runtimeClassName` and `GPU_REQUEST`). An
    assignment inside `with`s of the map (_with_read_pattern) is followed by the same assignment inside `with` the
    counts (castai's sglang: the per-node GPU count its multi-node check asks for). The lines that copy the device
    key into another container (copies) are left: with the key gone they write none."""
    lines = text.splitlines(keepends=True)
    kept = _copy_block_lines(text)
    for path, section, key in sorted(reads, key=repr):
        pattern, within = _read_pattern(path, section, key), _with_read_pattern(path, section, key)
        if pattern is not None and within is not None:
            counts = ".".join(str(p) for p in sibling_path(path, COUNTS))
            for n, line in enumerate(lines):
                if n not in kept:
                    line = within.sub(lambda m, c=counts: _counted_within(m, c), line)
                    lines[n] = pattern.sub(lambda m, c=counts: _counted(m, c), line)
        for n, line in _var_reads("".join(lines), path, section, key).items():
            if n not in kept:  # through a variable holding the map (voxel51's `dig ... $mergedResources`)
                lines[n] = line + lines[n][len(lines[n].rstrip("\r\n")) :]
        for n, line in _scoped_reads("".join(lines), path, section, key).items():
            if n not in kept:  # from `.` inside `with` the map (plex's `hasKey .limits "nvidia.com/gpu"`)
                lines[n] = line + lines[n][len(lines[n].rstrip("\r\n")) :]
        for n, line in _held_reads("".join(lines), path, section, key).items():
            if n not in kept:  # through variables set to values paths (`index $training.gpu.resources.limits $name`)
                lines[n] = line + lines[n][len(lines[n].rstrip("\r\n")) :]
    return "".join(lines)


# `index` of a map reached through a variable (`$training.gpu.resources.limits`), by a quoted key or a variable
_HELD_INDEX = re.compile(r'(\bindex\s+)\(?(\$\w+)((?:\.[\w]+)*)\)?(\s+)("[^"]*"|\$\w+)')


def _held_reads(text: str, path: Path_, section: str, key: str) -> dict[int, str]:
    """The lines that index the map's section reached through variables the template set to values paths, by the
    device key or by a variable naming the resource (adorsys' webank training: `$training := .Values.training`, then
    `index $training.gpu.resources.limits $gpuResourceName | default 0` for a check that fails below 1), rewritten
    to take the section from the DRA values' `deviceCounts` first, as reread does for `.Values` paths."""
    if not all(isinstance(w, str) for w in (*path, section)):
        return {}
    held = _values_variables(text)
    dotted = ".Values." + ".".join(str(w) for w in (*path, section))
    counts = ".".join(str(p) for p in sibling_path(path, COUNTS))

    def counted(m: re.Match[str]) -> str:
        head, var, fields, gap, arg = m.groups()
        if held.get(var) and f"{held[var]}{fields}" == dotted and (arg == f'"{key}"' or arg.startswith("$")):
            return f"{head}($.Values.{counts} | default {var}{fields}){gap}{arg}"
        return m.group(0)

    # a read an earlier fix rewrote: read still (the DRA values keep the counts), not rewritten again
    before = re.compile(rf"\bindex\s+\(\$\.Values\.{re.escape(counts)} \| default (\$\w+)((?:\.\w+)*)\)")
    out = {}
    for n, line in enumerate(text.splitlines()):
        if any(held.get(m.group(1)) and f"{held[m.group(1)]}{m.group(2)}" == dotted for m in before.finditer(line)):
            out[n] = line
        elif (new := _HELD_INDEX.sub(counted, line)) != line:
            out[n] = new
    return out


def _counted(m: re.Match[str], counts: str) -> str:
    return f"({m.group(1)}.Values.{counts} | default {m.group(0)})"


def _counted_within(m: re.Match[str], counts: str) -> str:
    whole = m.group(0).rstrip()
    again = f"{{{{- with {m.group(1)}.Values.{counts} }}}}{m.group(2).rstrip()}{{{{- end }}}}"
    return f"{whole}{again}{m.group(0)[len(whole) :]}"


# a line that writes a device key with the count of the same key in a values resources map, a container copying it
# from the map another container takes whole (gsampaio's ollama: its model-pull init container, from a helper,
# `nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}` beside `toYaml .Values.resources`)
_COPY_LINE = re.compile(r"""^\s*(["']?)(?P<key>[\w.-]+/[\w.-]+)\1\s*:\s*(["']?)\{\{-?(?P<body>[^{}]*?)-?\}\}\3\s*$""")
_COPY_READ = re.compile(
    r"""(?P<root>\$?)\.Values\.(?P<path>[A-Za-z_][\w.]*)\.(?P<section>limits|requests)\s+"(?P<key>[^"]+)\""""
)
_IF_LINE = re.compile(r"^\s*\{\{-?\s*if\s+(?P<cond>[^{}]*?)\s*-?\}\}\s*$")
_END_LINE = re.compile(r"^\s*\{\{-?\s*end\s*-?\}\}\s*$")


@dataclass(frozen=True)
class Copy:
    """A template line that copies a device key from a values resources map (_COPY_LINE)."""

    rel: str
    line: int  # 0-based
    path: Path_  # the values map
    section: str  # limits or requests
    key: str
    root: str  # "$" when the line reads `$.Values`

    @property
    def read(self) -> tuple[Path_, str, str]:
        return self.path, self.section, self.key


def _copies_in(rel: str, text: str) -> list[Copy]:
    out = []
    for n, line in enumerate(text.splitlines()):
        m = _COPY_LINE.match(line)
        r = _COPY_READ.search(m.group("body")) if m else None
        if m and r and r.group("key") == m.group("key"):
            path = tuple(r.group("path").split("."))
            out.append(Copy(rel, n, path, r.group("section"), m.group("key"), r.group("root")))
    return out


def copies(root: Path) -> list[Copy]:
    """The template lines (helpers included) that copy a device key from a values resources map."""
    return [c for rel, text in _templates(root).items() for c in _copies_in(rel, text)]


def _copy_block_lines(text: str) -> set[int]:
    """The 0-based lines of each copy and of the `if`s right around it that read the same values section (`if index
    .Values.resources.limits "nvidia.com/gpu"`), with their `end`s: with the DRA values the key and its guard go."""
    lines = text.splitlines()
    out: set[int] = set()
    for c in _copies_in("", text):
        out.add(c.line)
        section = ".Values." + ".".join(str(p) for p in c.path)
        above = c.line - 1
        while above >= 0 and (m := _IF_LINE.match(lines[above])) and section in m.group("cond"):
            out.add(above)
            above -= 1
        below = c.line + 1
        for _ in range(c.line - 1 - above):
            if below < len(lines) and _END_LINE.match(lines[below]):
                out.add(below)
                below += 1
    return out


def copy_claims(text: str, rel: str, dropped: set[tuple[Path_, str, str]]) -> str:
    """The template with the values map's `claims` passed into each container whose device keys it copies from a map
    the DRA values drop them from: `{{- with .Values.resources.claims }}` after the container's `resources:` block
    (with the device-plugin values the map has no claims: the render is unchanged)."""
    lines = text.splitlines()
    by_block: dict[int, Copy] = {}
    for c in _copies_in(rel, text):
        if c.read not in dropped:
            continue
        section = parent_line(lines, c.line)
        owner = parent_line(lines, section) if section >= 0 else -1
        if section < 0 or not is_key(lines[section], c.section) or not is_key(lines[owner], "resources"):
            raise NotPassThrough(
                f"{rel}:{c.line + 1} copies {display((*c.path, c.section, c.key))} outside a container's resources "
                "block"
            )
        if by_block.setdefault(owner, c).path != c.path:
            raise NotPassThrough(f"{rel}:{c.line + 1}: one container copies device keys from two values maps")
    out = list(lines)
    for owner, c in sorted(by_block.items(), reverse=True):
        end, depth = block_end(lines, owner), 0
        for line in lines[owner:end]:
            depth += blocks_opened(line)
        while depth > 0 and end < len(lines) and is_control(lines[end]) and _END_LINE.match(lines[end]):
            end, depth = end + 1, depth - 1
        pad = " " * (line_indent(lines[owner]) + 2)
        claims = f"{c.root}.Values.{'.'.join(str(p) for p in c.path)}.claims"
        if f"{pad}{{{{- with {claims} }}}}" in lines[owner:end]:
            continue  # fix passed them in before: a second fix adds nothing
        out[end:end] = [
            f"{pad}{{{{- with {claims} }}}}",
            f"{pad}claims:",
            f"{pad}  {{{{- toYaml . | nindent {len(pad) + 2} }}}}",
            f"{pad}{{{{- end }}}}",
        ]
    return "\n".join(out) + ("\n" if text.endswith("\n") and out else "")


def count_siblings(
    root: Path, edits: list[MapEdit], merged: dict[str, Any], scopes: dict[str, list[Path_]] | None = None
) -> None:
    """`deviceCounts` beside each map whose dropped device keys a template reads itself (reread): the DRA values keep
    the count there (the values' own, so those lines render as with the device-plugin values). `scopes`: the charts
    fix changes (an umbrella's subchart folder, "" for the chart itself) and the values keys each takes its values
    under; a map is read by the templates of the chart whose key it is under, by its path from that key (castai's
    umbrella: `sglang.resources` is the sglang subchart's `.Values.resources`)."""
    scopes = scopes or {"": [()]}
    texts = {sub: [_without_copies(t) for t in _templates(root / sub).values()] for sub in scopes}
    for edit in edits:
        owners = [(len(k), sub, k) for sub, keys in scopes.items() for k in keys if tuple(edit.path[: len(k)]) == k]
        if not owners:
            continue
        _, sub, scope = max(owners)
        path = edit.path[len(scope) :]
        counts = {
            k: get_path(merged, edit.key_path(section, k))
            for section, keys in edit.removed.items()
            for k in keys
            if not edit.flat and any(reads_count(t, path, section, k) for t in texts[sub])
        }
        if counts:
            edit.siblings[COUNTS] = counts


def _without_copies(text: str) -> str:
    """The template without its copies of device keys and their guards (_copy_block_lines): the reads left."""
    kept = _copy_block_lines(text)
    return "\n".join(line for n, line in enumerate(text.splitlines()) if n not in kept)


_DIG_VAR = r'\bdig\s+"{section}"\s+"{key}"\s+(?:"[^"]*"|[\w.]+|\(\w+\))\s+(\$\w+)'
_REF = re.compile(r"(\$\w*)?((?:\.\w+)+)|(\$\w+)")


def _digs_other_maps(text: str, line: str, section: str, key: str, path: Path_) -> bool:
    """Whether each `dig "<section>" "<key>" <default> $var` of the line reads a variable that every assignment in
    the template sets from values maps other than `path` (fiftyone's job templates: `$mergedResources := merge
    (deepCopy ($jobConfig.resources | default dict)) ($baseTpl.resources)` over `range $jobConfig :=
    .Values.delegatedOperatorJobTemplates.jobs`, beside a Deployment map under another key): the DRA values leave
    those maps as they are, so the line renders as before. False when a read is not resolved to values paths."""
    found = re.findall(_DIG_VAR.format(section=re.escape(section), key=re.escape(key)), line)
    if not found:
        return False
    ranges = _range_variables(text)
    want = [str(p) for p in path]
    for var in found:
        exprs = re.findall(rf"{re.escape(var)}\s*:?=\s*(.*?)\s*-?\}}\}}", text)
        if not exprs:
            return False
        for expr in exprs:
            for head, fields, alone in _REF.findall(expr):
                head = head or alone
                words = fields.split(".")[1:]
                if head in ("", "$") and words[:1] == ["Values"]:
                    words = words[1:]
                elif head in ranges:
                    words = [*ranges[head][0], *words]
                else:
                    return False  # `.` of a `with`/`range`, or a variable not read here: not known to differ
                if all(a == b or "*" in (a, b) for a, b in zip(words, want, strict=False)):
                    return False  # the map itself, inside it, or a map holding it
    return True


def device_key_reads(root: Path, removed: set[tuple[Path_, str, str]], within: str = "") -> str:
    """The first template line that reads a device key the DRA values drop from its map by name, not through the
    map's toYaml, in a way reread does not rewrite (`index .Values "resources" "limits" "nvidia.com/gpu"`, a keyed
    map, `dig "limits" "nvidia.com/gpu" "" $merged` of a map the template merged from it): with the key gone that
    line renders differently, so the chart needs its count in a value of its own first; "" if none. `within`: the
    subchart folder `root` is of an umbrella, which the line's file is named from."""
    for rel, text in _templates(root).items():
        rel = f"{within}/{rel}" if within else rel
        copied = _copy_block_lines(text)
        through = {  # rewritten: read from deviceCounts
            (n, read) for read in removed for reads in (_var_reads, _held_reads) for n in reads(text, *read)
        }
        for n, line in enumerate(text.splitlines(), start=1):
            if n - 1 in copied:
                continue  # a copy of the key writes none with the DRA values (copy_claims)
            for path, section, key in sorted(removed, key=repr):
                if (n - 1, (path, section, key)) in through:
                    continue
                words = [str(p) for p in (*path, section)]
                dotted = ".Values." + ".".join(words)
                indexed = re.search(r"index\s+\.Values((?:\s+\"[^\"]+\")+)\s+\"" + re.escape(key) + '"', line)
                if reread(line, {(path, section, key)}) != line:
                    continue  # rewritten to read deviceCounts
                if (
                    (f'"{key}"' in line and re.search(re.escape(dotted) + r"(?![\w.])", line))
                    or (indexed and _QUOTED.findall(indexed.group(1)) == words)
                    or _reads_through_with(line, words[-2:], key)
                    or (
                        re.search(rf'\bdig\s+"{re.escape(section)}"\s+"{re.escape(key)}"\s', line)
                        and not _digs_other_maps(text, line, section, key, path)
                    )
                ):
                    return (
                        f"{rel}:{n} reads {display((*path, section, key))} itself, which the DRA values file "
                        'removes, in a form fix does not rewrite (only `<func> .Values.<dotted path> "<key>"`, '
                        'or `dig "<section>" "<key>" <default> $var`/`index $var "<section>" "<key>"` of a variable '
                        "that holds or merges the map, or `index $v.<path> <key>` of one set to the map's values path, "
                        f"reads {display(path[:-1] + (sibling_key(str(path[-1]), COUNTS),))} when the DRA values set "
                        "it): give that count a value of its own (the template and the device key both read it)"
                    )
    return ""


_ASSIGNED = re.compile(r"\{\{-?\s*(\$\w+)\s*:?=\s*(\$\w*(?:\.[\w]+)+|\.Values(?:\.[\w]+)*)\s*-?\}\}")


def _values_variables(text: str) -> dict[str, str]:
    """The template's variables set to a values path (`{{- $training := .Values.training -}}`, `{{- $gpu :=
    $training.gpu -}}`), each as its dotted `.Values` path; a variable set twice to different paths is left out."""
    out: dict[str, str] = {}
    twice: set[str] = set()
    for var, expr in _ASSIGNED.findall(text):
        head, _, rest = expr.partition(".")
        path = expr if expr.startswith(".Values") else (f"{out[head]}.{rest}" if head in out else "")
        if not path or out.get(var, path) != path:
            twice.add(var)
        out[var] = path
    return {v: p for v, p in out.items() if v not in twice and p}


def _reads_through_with(line: str, words: list[str], key: str) -> bool:
    """Whether the line reads the device key from `.` inside `with`s of the map and its section on that line
    (`{{- with .Values.resources }}{{- with .limits }}{{- $gpu = index . "nvidia.com/gpu" }}`): with the DRA values
    the section may be gone (the device key was all it held), and the `with` around the read renders nothing."""
    read = re.search(rf'\b(?:index|hasKey|get)\s+\.\s+"{re.escape(key)}"', line)
    withs = re.findall(r"\bwith\s+\$?[\w.]*\.(\w+)\s*-?\}\}", line[: read.start()] if read else "")
    return read is not None and all(w in withs for w in words)


def _reads_edited(text: str, rel: str, reads: set[tuple[Path_, str, str]]) -> str:
    """The template's own reads of the dropped device keys edited: counts read from `deviceCounts` (reread), the map's
    claims passed to the containers that copy the keys (copy_claims)."""
    return copy_claims(reread(text, reads), rel, reads)


def build(
    root: Path,
    rels: set[str],
    map_paths: dict[Path_, set[str]],
    namespaced: bool,
    device_class: str,
    scoped: bool = False,
    reads: set[tuple[Path_, str, str]] | None = None,
    change: str = f"DRA ResourceClaimTemplates from values ({VALUES_KEY}) and resourceClaims beside resources maps",
    documented: tuple[Path_, ...] = (),
    named: str = "",
) -> list[Change]:
    """The chart's own changes (templates, the claim-template file, values.yaml, Chart.yaml, schema). `reads`: the
    dropped device keys (values map, section, key) whose reads in the templates take `deviceCounts` (reread);
    `change`: the entry of the chart's `artifacthub.io/changes`; `documented`: more maps values.yaml documents the
    pod's `resourceClaims` beside (a library's map, whose pod claims a define of the chart renders: libvalues.py),
    `named`: the map whose `claims` name them there (claims_docs)."""
    values_path = root / "values.yaml"
    values = values_path.read_text(encoding="utf-8") if values_path.is_file() else ""
    changes = []
    helpers = map_helpers(root)
    chart = chart_name(root)
    called = tolerations_helpers(_templates(root))
    built: dict[str, str] = {}  # the helper files a helper-built dict's pass-through changes (built_map_edits)
    for rel in sorted(rels):
        text = (root / rel).read_text(encoding="utf-8")
        source = joined_list_actions(text)  # renders the same; the edits read the pod's tolerations action whole
        after, copied = built_map_edits(root, rel, source, map_paths, scoped, chart)
        built.update(copied)
        after = template_edits(after, rel, map_paths, scoped, helpers, chart=chart, called=called)
        after = _reads_edited(after, rel, reads or set())
        if after != source:
            changes.append(Change(rel, text, after))
    claimed = helper_claims(root, rels, map_paths)
    texts = _templates(root)
    shared = parent_templates(root)  # a pod define of the umbrella the subchart's template includes
    defines = pod_defines({**shared, **{rel: claimed.get(rel, text) for rel, text in texts.items()}}, rels)
    for rel, text in {**texts, **shared}.items():  # a helper that reads the count (`UCX_NET_DEVICES`) or copies the key
        if rel in rels or (rel in shared and rel not in defines):
            continue
        after = built.get(rel, claimed.get(rel, text))
        # an umbrella's define renders in each subchart that includes it: the defines its new lines include are
        # named after the umbrella and written beside it, so they load wherever it does
        owner = chart_name(root / re.match(r"(?:\.\./)*", rel).group(0)) if rel in shared else chart
        for define in sorted(defines.get(rel, []), key=lambda d: -d.lines.start):  # the lines above stay as they are
            after = template_edits(after, rel, map_paths, scoped, helpers, define, owner, called)
        if rel in shared and (more := helper_defines(owner, after, after)):
            after += ("" if after.endswith("\n") else "\n") + more
        if (after := _reads_edited(after, rel, reads or set())) != text:
            changes.append(Change(rel, text, after))
    existing = root / TEMPLATE_FILE
    used = "".join(c.after or "" for c in changes)
    if existing.is_file() and f".Values.{VALUES_KEY}" in (had := existing.read_text(encoding="utf-8")):
        # rewritten before: only the values files of this run need their DRA variants (and the defines a rewrite by
        # an earlier dramigrate did not write)
        if more := helper_defines(chart, used, had):
            changes.append(Change(TEMPLATE_FILE, had, had + ("" if had.endswith("\n") else "\n") + more))
        return changes
    if existing.exists():
        raise NotPassThrough(f"{TEMPLATE_FILE} exists already")
    if re.search(rf"^{VALUES_KEY}:", values, re.M):
        raise NotPassThrough(f"values.yaml already has a top-level `{VALUES_KEY}:` key")
    namespace = namespace_expr(root, rels) if namespaced else None
    defines = helper_defines(chart, used)
    changes.append(Change(TEMPLATE_FILE, None, claim_template_file(namespace, scoped, defines)))
    changes += conventions(
        root,
        device_class,
        True,
        change=change,
        schema=(
            VALUES_KEY,
            {"type": "object", "description": "DRA ResourceClaimTemplates by name (resource.k8s.io/v1)"},
        ),
        nested=schema_keys(values_path, map_paths),
    )
    counted = frozenset(p for p, siblings in map_paths.items() if COUNTS in siblings)
    flats = frozenset(p for p, siblings in map_paths.items() if SECTION_CONTENT in siblings)
    maps = [*(p for p, siblings in map_paths.items() if "resourceClaims" in siblings), *documented]
    documented_values = claims_docs(values, values_path, maps, counted, flats, named) if values else values
    if documented and values and not re.search(r"^resourceClaims:", documented_values, re.M):
        # a library's pod claims, rendered by a template of the chart, and no top-level map to document them beside
        # (jellyfin's `resources` only in a comment): at the end, the claim templates after them
        documented_values = values_doc(documented_values, pod_claims=named or str(documented[0][-1]))
    changes.append(Change("values.yaml", values if values_path.is_file() else None, values_doc(documented_values)))
    return changes
