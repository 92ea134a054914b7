"""Device counts set to null (`--set gpus=null`, `gpus: ~` in a values file): the proof's value sets that unset each
count the values drive, and the migration's reference for them.

A chart's `nvidia.com/gpu: {{ .Values.gpus }}` renders `nvidia.com/gpu:` (null) when the count is unset: the pod asks
for no device, so with the DRA switch on the rewritten chart must render no claim, no claim template and no toleration
for it. The manifest migration calls a null count a finding (it never guesses a count) and leaves the whole pod as it
is, which would leave that pod out of proof (D); `reference_stream` gives the migration the render with those null
device keys blanked out instead (the comparison already reads a null key as absent), so the other containers of the pod
are migrated as usual and the pod is compared.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.helm.probe import device_uses
from dramigrate.helm.prove import objects, without_nulls
from dramigrate.helm.values import Path_, display, with_paths
from dramigrate.rules import RuleSet

NULL = "set to null"  # the label of a proof value set that unsets a count: `gpus set to null`


def null_sets(merged: dict[str, Any], counts: list[tuple[Path_, Path_ | None]]) -> list[tuple[str, dict[str, Any]]]:
    """Each count's values path (with its twin, the request of the same device, set alike) set to null in the merged
    values: (label, values)."""
    out = []
    for path, twin in counts:
        changed = with_paths(merged, [(path, None)] + ([(twin, None)] if twin is not None else []))
        label = f"{display(path)} {NULL}"
        if twin is not None:
            label += f" (and {display(twin)})"
        out.append((label, changed))
    return out


def reference_stream(stream: str, rules: RuleSet) -> str:
    """The render with each device key whose count is null blanked out (its line left empty, so that the lines of
    the migration's findings still point where they did), or the render itself when it has none, or when blanking
    would change anything else of the objects (a line alike inside a block scalar)."""
    names = {key[5] for key, value in device_uses(stream, rules).items() if value is None}
    if not names:
        return stream
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    null_key = re.compile(rf"""^[ \t]*(["']?)(?:{alternatives})\1[ \t]*:[ \t]*(?:~|null|Null|NULL)?[ \t]*$""")
    lines = stream.split("\n")
    blanked = "\n".join("" if null_key.match(line) else line for line in lines)
    try:
        same = without_nulls(objects(blanked)) == without_nulls(objects(stream))
    except (yaml.YAMLError, InputError):  # a render that no longer parses is left as it was
        same = False
    return blanked if same else stream
