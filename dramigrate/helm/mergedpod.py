"""The pod's claims in a values map the chart merges whole over the pod spec it renders, for a resources map no
template of the chart reads.

gimlet's onechart renders its pod spec from its library's define and merges a values map of its own over it
(`{{- $podSpec := mergeOverwrite (include "common.podSpec.tpl" . | fromYaml) .Values.podSpec }}`, then
`toYaml $podSpec`); the library writes `.Values.resources` into the container whole. The pass-through finds no line
of the chart that reads the map, so it adds no `resourceClaims` beside it, and the values key beside the map renders
nowhere: the DRA values must name the claims in the map the chart merges over the pod. Which map that is, is found by
rendering (a marker claim in each map a template merges from values, read off the pods that take the resources map);
the templates only say which maps to try.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from dramigrate.helm.passthrough import MapEdit, marked_maps, rendered_pods
from dramigrate.helm.values import Path_, get_path, put_path

# `mergeOverwrite $podSpecTpl .Values.podSpec`, `merge $x $.Values.pod.spec`: a values map merged over another
_MERGED = re.compile(r"\b(?:must)?[mM]erge(?:Overwrite)?\s+[$.][\w.$]*\s+\$?\.Values\.([\w.]+)")
CLAIM_MARKER = "dramigrate-merged-claims-"


def merged_maps(templates: list[str], merged: dict[str, Any]) -> list[Path_]:
    """The values maps (a map, or left empty) a template merges over another, in the order first read."""
    out: list[Path_] = []
    for text in templates:
        for m in _MERGED.finditer(text):
            path = tuple(m.group(1).split("."))
            value = get_path(merged, path)
            if path not in out and (value is None or isinstance(value, dict)):
                out.append(path)
    return out


def unread(templates: list[str], path: Path_) -> bool:
    """Whether no template reads the values map `path` itself (`.Values.resources`): a library's define does."""
    read = re.compile(r"\.Values\." + re.escape(".".join(map(str, path))) + r"(?![\w.])")
    return not any(read.search(t) for t in templates)


def marked_claims(marked: dict[str, Any], candidates: list[Path_]) -> dict[str, Any]:
    """The values with a marker claim in `resourceClaims` of each candidate map."""
    out = copy.deepcopy(marked)
    for i, path in enumerate(candidates):
        block = dict(get_path(out, path) or {})
        block["resourceClaims"] = [{"name": f"{CLAIM_MARKER}{i}", "resourceClaimName": f"{CLAIM_MARKER}{i}"}]
        put_path(out, path, block)
    return out


def claims_places(stream: str, maps: list[Path_], candidates: list[Path_], edits: list[MapEdit]) -> None:
    """For each edit whose pod claims would go beside its map, the candidate map (merged_maps) whose marker claim every
    pod that takes the map renders, and no other pod: the claims go in that map's `resourceClaims` (MapEdit.places).
    `stream`: the chart rendered with a marker in each resources map (`maps`, marker order) and in each candidate."""
    pods = []
    for pod, singles in rendered_pods(stream):
        claims = pod.get("resourceClaims") if isinstance(pod.get("resourceClaims"), list) else []
        names = [str(c.get("name", "")) for c in claims if isinstance(c, dict)]
        marks = {candidates[int(n[len(CLAIM_MARKER) :])] for n in names if n.startswith(CLAIM_MARKER)}
        pods.append((marked_maps(pod, singles, maps), marks))
    for edit in edits:
        if "resourceClaims" not in edit.siblings or "resourceClaims" in edit.places:
            continue
        mine = [marks for taken, marks in pods if edit.path in taken]
        common = set.intersection(*mine) if mine else set()
        others = set().union(*(marks for taken, marks in pods if edit.path not in taken))
        chosen = sorted(common - others, key=candidates.index)
        if chosen:
            edit.places["resourceClaims"] = (*chosen[0], "resourceClaims")
