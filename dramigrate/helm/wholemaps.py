"""Values maps a template passes whole as a container's resources under a name of their own.

SciLifeLab's Serve app charts write `resources:` then `{{- toYaml .Values.flavor | nindent 10 }}`: the platform sets
`flavor` (limits and requests, `nvidia.com/gpu` among them). That is pattern B as `toYaml .Values.resources` is, but
the map is not keyed `resources`, so the pass-through did not look for it among the values maps (values.py
resources_maps) and the classifier called it "another template shape". A map counts here when a template's
`resources:` key holds nothing but the `toYaml` of one values path and the values give that path the shape of a
container's resources (a `limits` or `requests` map); which pods take it is still found by rendering (passthrough.py).
"""

from __future__ import annotations

from typing import Any

from dramigrate.helm.patterns import whole_read
from dramigrate.helm.values import Path_, get_path, sectioned


def whole_maps(templates: list[str], merged: dict[str, Any]) -> list[Path_]:
    """The values maps, not keyed `resources` (resources_maps finds those), the templates pass whole as a container's
    resources (`toYaml .Values.flavor`, and a sectioned `*Resources` map: `toYaml $root.Values.ray.workerResources`,
    which no other finder marks), in the order first read."""
    out: list[Path_] = []
    for text in templates:
        lines = text.splitlines()
        for i in range(len(lines)):
            path = whole_read(lines, i)
            if path and path[-1] != "resources" and path not in out and sectioned(get_path(merged, path)):
                out.append(path)
    return out
