"""The values-only rewrite of a chart whose objects a packed library chart writes from values (bjw-s `common` from
5.0.1, under app-template and the charts built like it: `templates/common.yaml` only calls the library's loader).

The library is left as it is (a change in the packed archive would be undone by `helm dependency update`), so
the rewrite is the pass-through's (passthrough.py) without its template edits: the library passes a container's
`resources` through whole (`controllers.<controller>.containers.<container>.resources`, where the DRA values put
`claims`) and renders the pod options of that container's controller (`controllers.<controller>.pod`, where they
put `resourceClaims` and the toleration). The chart gets only `templates/resourceclaimtemplates.yaml` (the
pass-through's, rendering `resourceClaimTemplates` from values) and the DRA variants of its GPU values files. The
places are data (rules/library-values.json); run.py proves the rewrite as the pass-through's, (L) and (D).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from dramigrate.helm.passthrough import MapEdit, NotPassThrough
from dramigrate.helm.values import Path_, display, get_path

# the entry of the chart's `artifacthub.io/changes` (passthrough.build)
CHANGE = "DRA ResourceClaimTemplates from values (resourceClaimTemplates), named in the pod options of the DRA values"


def _bind(pattern: str, path: Path_) -> dict[str, str] | None:
    """The names a dotted pattern (`controllers.<controller>.pod`) binds in a values path, or None if it does not
    match it."""
    parts = pattern.split(".")
    if len(parts) != len(path):
        return None
    bound: dict[str, str] = {}
    for part, key in zip(parts, path, strict=True):
        if part.startswith("<") and part.endswith(">") and isinstance(key, str):
            bound[part] = key
        elif part != key:
            return None
    return bound


def _fill(pattern: str, bound: dict[str, str]) -> Path_:
    return tuple(bound.get(part, part) for part in pattern.split("."))


def placer(title: str, places: dict[str, Any], chart: str) -> Callable[[list[MapEdit], dict[str, Any]], None]:
    """What moves each map edit's pod-level siblings into the library's pod options (MapEdit.places), given the
    library (`common 5.0.1`), its entry of rules/library-values.json and the chart's name. The library renders a pod
    option from the controller's `pod:` when set there, else from its defaults for every pod (lists are replaced, not
    merged): a toleration the defaults hold is kept in front of the added one. The claim templates are named after
    the chart and the controller (`draw-things-main-gpu-<hash>`): the library renders the pods' claims without
    `tpl`, so the names cannot take the release's."""

    def place(edits: list[MapEdit], merged: dict[str, Any]) -> None:
        for edit in edits:
            bound = next((b for p in places["container_resources"] if (b := _bind(p, edit.path)) is not None), None)
            if bound is None:
                raise NotPassThrough(
                    f"library chart {title}: the device keys are in {display(edit.path)}, not in a container's "
                    f"resources it passes through ({', '.join(places['container_resources'])})"
                )
            pod = _fill(places["pod_options"], bound)
            edit.group = "-".join([chart, *(v for k, v in bound.items() if k != "<container>")])
            for name in list(edit.siblings):
                if name not in places["pod_option_keys"]:
                    raise NotPassThrough(f"library chart {title} has no pod option for the {name} the migration sets")
                key = (*pod, name)
                edit.places[name] = key
                default = get_path(merged, (*places["default_pod_options"].split("."), name))
                if get_path(merged, key) is not None or not default:
                    continue
                if name == "resourceClaims":  # the pod names claims of its own already, from the defaults
                    raise NotPassThrough(
                        f"library chart {title}: {places['default_pod_options']}.resourceClaims names claims every "
                        f"pod takes, and the DRA values would replace them in {display(key)}"
                    )
                kept = copy.deepcopy(default if isinstance(default, list) else [])
                edit.siblings[name] = [*kept, *(x for x in edit.siblings[name] if x not in kept)]

    return place
