"""KubeRay's `ray start` flags, derived exactly as KubeRay derives them, for the migrated Ray groups.

KubeRay (ray-operator/controllers/ray/common/pod.go, generateRayStartCommand and addWellKnownAcceleratorResources)
reads the Ray container's limits (containers[0]) in sorted key order: `num-gpus` from the first key it counts as a
GPU (utils.IsGPUResourceKey: a name ending in "gpu", or nvidia.com/mig-<n>g.<m>gb) with a non-zero value, unless
rayStartParams has num-gpus; and `resources` {"TPU": n} or {"neuron_cores": n} from the first custom accelerator
(google.com/tpu, aws.amazon.com/neuroncore), unless rayStartParams.resources names one already. Once fix moves that
limit into a claim, KubeRay sees nothing, so the group gets the same flag written out. The packs say which resource
KubeRay counts as a GPU (rayNumGpus) and which Ray resource a custom accelerator becomes (rayResource).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RayLimit:
    """One key of the Ray container's original limits, as KubeRay reads it."""

    key: str
    value: int | None  # the count Kubernetes reads (Quantity.Value()); None: one it refuses (nothing is derived)
    gpu: bool  # KubeRay counts it toward num-gpus
    ray_resource: str  # the Ray resource KubeRay makes of it ("TPU"), or ""


def ray_start_params(
    limits: list[RayLimit], migrated: set[str], existing: Any, accelerators: frozenset[str]
) -> dict[str, str]:
    """rayStartParams entries to write so that `ray start` gets what KubeRay derived from the migrated limits.
    `accelerators`: every Ray resource KubeRay makes of a custom accelerator (TPU, neuron_cores)."""
    from dramigrate.emit import go_json  # emit imports plan, which imports this module

    params = existing if isinstance(existing, dict) else {}
    out: dict[str, str] = {}
    ordered = sorted(limits, key=lambda lim: lim.key)
    if "num-gpus" not in params:
        first = next((lim for lim in ordered if lim.gpu and lim.value != 0), None)
        if first is not None and first.key in migrated and first.value is not None:
            out["num-gpus"] = str(int(first.value))
    current = _resources(params.get("resources"))
    if current is not None and not accelerators & set(current):
        first = next((lim for lim in ordered if lim.ray_resource and lim.value != 0), None)
        if first is not None and first.key in migrated and first.value is not None:
            merged = {**current, first.ray_resource: first.value}
            out["resources"] = "'" + go_json({k: _go_number(v) for k, v in merged.items()}) + "'"
    return out


def _resources(value: Any) -> dict[str, Any] | None:
    """rayStartParams.resources as KubeRay parses it (quotes and spaces trimmed, JSON); None when unreadable."""
    if value is None:
        return {}
    try:
        parsed = json.loads(str(value).strip("'\"` "))
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _go_number(value: Any) -> Any:
    """A number as Go's encoding/json writes a float64: 4.0 is 4."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
