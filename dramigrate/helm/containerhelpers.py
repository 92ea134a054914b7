"""Pattern B through a container helper: a define that writes a container (or some of its keys) whose `resources:`
is the `toYaml` of one values resources map read from the chart's root (`{{- define "app.container" -}}`, `- name:
main`, ..., `resources:` then `{{- toYaml .Values.resources | nindent 4 }}`; or `{{- with .Values.resources }}`,
`resources:` and `{{- toYaml . | nindent 4 }}`), included under a pod's `containers:` with the root context; or the
`resources` map of its argument (`toYaml .resources`), included with a values path (`include "app.container"
.Values.worker`), as arghelpers reads it.

The map reaches the container whole, so its `claims` pass through the helper as they pass through a template's own
`toYaml`: the pass-through (passthrough.py) reads the include as that `toYaml` (map_helpers), and the pod's
`resourceClaims` go above the template's `containers:`, where the include is. A define that writes a pod's
`containers:` itself is passthrough.pod_defines'; one that writes a device key, or reads into the map (a count from
`.Values.resources.limits`), the helper rewrite's or nobody's."""

from __future__ import annotations

import re

from dramigrate.helm.helper import blocks
from dramigrate.helm.patterns import map_reads
from dramigrate.helm.templatelines import is_key

_MAP = r"\.Values(?:\.[A-Za-z_]\w*)*\.[A-Za-z_]*[Rr]esources|(?<![\w)\]$])\.resources"
_INDENTED = r"\s*\|\s*n?indent\s+[1-9]\d*\s*"
_TOYAML = re.compile(rf"\{{\{{-?\s*toYaml\s+({_MAP}){_INDENTED}-?\}}\}}")
_TOYAML_DOT = re.compile(rf"\{{\{{-?\s*toYaml\s+\.{_INDENTED}-?\}}\}}")
_WITH = re.compile(rf"\{{\{{-?\s*with\s+({_MAP})\s*-?\}}\}}")
_POD_KEYS = re.compile(r"^\s*(?:-\s+)?(?:containers|initContainers):", re.M)
_DEVICE_KEY = re.compile(r"""^\s*(?:-\s+)?["']?[\w.-]+\.[a-z]{2,}/[\w.-]+["']?\s*:""", re.M)
_ANY_MAP = re.compile(rf"\$?(?:{_MAP})(?![\w])")


def container_helpers(templates: dict[str, str]) -> dict[str, str]:
    """The chart's defines (name -> the values map, `.Values.resources`, or `.resources` for their argument's) that
    write a container's `resources:` as the `toYaml` of one resources map, read nowhere else in them, and write no pod
    `containers:` and no device key."""
    out = {}
    for text in templates.values():
        lines = text.splitlines()
        for b in blocks(text):
            name = re.fullmatch(r'"([^"]+)"', b.cond)
            if b.word != "define" or name is None:
                continue
            body = [map_reads(line) for line in lines[b.start + 1 : b.end]]
            joined = "\n".join(body)
            if _POD_KEYS.search(joined) or _DEVICE_KEY.search(joined):
                continue
            written = set()
            for j, line in enumerate(body[:-1]):
                if not is_key(line, "resources"):
                    continue
                below = body[j + 1].strip()
                if m := _TOYAML.fullmatch(below):
                    written.add(m.group(1))
                elif _TOYAML_DOT.fullmatch(below) and j and (w := _WITH.fullmatch(body[j - 1].strip())):
                    written.add(w.group(1))
            if len(written) != 1:
                continue
            (read,) = written
            if {m.group(0).removeprefix("$") for m in _ANY_MAP.finditer(joined)} != written or f"{read}." in joined:
                continue  # another map read, or a read into the map (a count): not the map passed through alone
            out[name.group(1)] = read
    return out
