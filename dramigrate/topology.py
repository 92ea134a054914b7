"""Topology a migrated container loses (B6), reported as info: DRA claims keep the device count, not the placement.

- The kubelet's Topology Manager aligns device-plugin devices with the exclusive CPUs the CPU manager gives an
  integer-CPU container of a Guaranteed pod; DRA-managed devices do not take part in its decisions
  (kubernetes/website#56232: "Kubernetes does not guarantee NUMA alignment between DRA-managed devices and CPU
  or memory").
- A device plugin's GetPreferredAllocation picks a connected set when a container asks for several devices
  (the NVIDIA plugin picks NVLink-connected GPUs); a claim takes any N matching devices. Which plugins do this is
  vendor data: the pack entry's `preferredAllocation`.
"""

from __future__ import annotations

import re
from typing import Any

from dramigrate.detect import DeviceUse, PodAnalysis
from dramigrate.workloads import ContainerRef

_CPU = re.compile(r"^\s*(?:(?P<cores>[0-9]+)|(?P<milli>[0-9]+)m)\s*$")


def _integer_cpu(value: Any) -> bool:
    """A CPU quantity of whole cores (2, "2", "2000m"): what the static CPU manager gives exclusive CPUs."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value > 0
    m = _CPU.match(str(value)) if isinstance(value, str) else None
    if m is None:
        return False
    return int(m["cores"]) > 0 if m["cores"] else int(m["milli"]) > 0 and int(m["milli"]) % 1000 == 0


def _guaranteed(ctrs: list[dict[str, Any]]) -> bool:
    """Guaranteed QoS: every container has CPU and memory limits, and requests equal to them (or unset)."""
    if not ctrs:
        return False
    for c in ctrs:
        res = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
        requests = res.get("requests") if isinstance(res.get("requests"), dict) else {}
        for name in ("cpu", "memory"):
            if name not in limits or str(requests.get(name, limits[name])) != str(limits[name]):
                return False
    return True


def _pod_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c
        for key in ("initContainers", "containers")
        for c in (spec.get(key) if isinstance(spec.get(key), list) else [])
        if isinstance(c, dict)
    ]


def lost_alignment(pa: PodAnalysis) -> list[tuple[ContainerRef, str]]:
    """(container, what it loses) for each container whose devices the plugin placed with topology in mind."""
    guaranteed = _guaranteed(_pod_containers(pa.ref.spec))
    by_container: dict[str, list[DeviceUse]] = {}
    for u in pa.uses:
        if u.count > 0:
            by_container.setdefault(u.container.path, []).append(u)
    out = []
    for uses in by_container.values():
        ctr = uses[0].container
        reasons = []
        res = ctr.container.get("resources") if isinstance(ctr.container.get("resources"), dict) else {}
        limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
        if guaranteed and _integer_cpu(limits.get("cpu")):
            reasons.append(
                "its exclusive CPUs (Guaranteed pod, whole CPUs) and its devices were NUMA-aligned by the kubelet's "
                "Topology Manager, which does not align DRA-managed devices (kubernetes/website#56232)"
            )
        for u in uses:
            if u.count > 1 and u.match.rule.preferred_allocation:
                reasons.append(f"for {u.count} {u.resource}, {u.match.rule.preferred_allocation}")
        if reasons:
            out.append((ctr, "; ".join(reasons)))
    return out
