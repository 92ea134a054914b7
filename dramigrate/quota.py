"""Quotas: ResourceQuotas gain the DRA device-class key; other device quotas and defaults are reported."""

from __future__ import annotations

from typing import Any

from dramigrate.detect import Detector, ObjectInfo
from dramigrate.documents import Document
from dramigrate.findings import Finding
from dramigrate.quantity import device_count, plain_source

DRA_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"

# (group, kind) of scheduler and autoscaler objects that count devices, and where.
REPORTED_QUOTAS = {
    ("kueue.x-k8s.io", "ClusterQueue"): "Kueue counts DRA devices only through deviceClassMappings "
    "(and not with TAS, firstAvailable or direct claims)",
    ("karpenter.sh", "NodePool"): "Karpenter ignores DRA claims when provisioning (karpenter#2384)",
    ("scheduling.run.ai", "Queue"): "KAI counts claims of classes whose name contains 'gpu' only, "
    "without shared claims or firstAvailable",
    ("", "LimitRange"): "LimitRange defaults for device resources do not apply to claims",
}


def check_quota(det: Detector, doc: Document, info: ObjectInfo, fix: bool, drop_legacy: bool) -> list[Finding]:
    group = info.api_version.rpartition("/")[0] if "/" in info.api_version else ""
    if (group, info.kind) == ("", "ResourceQuota"):
        return _resource_quota(det, doc, info, fix, drop_legacy)
    reason = REPORTED_QUOTAS.get((group, info.kind))
    if reason is None:
        return []
    out = []
    for holder, key in _device_keys(det, info.obj):
        name = str(holder[key]) if isinstance(key, int) or key == "name" else str(key)
        out.append(
            det.finding(
                "scheduler-quota",
                f"{info.kind} counts {name}: {reason}; adjust it by hand when the workloads move to claims",
                doc,
                holder,
                key,
                info,
                resource=name,
            )
        )
    return out


def _device_keys(det: Detector, node: Any) -> list[tuple[Any, Any]]:
    """(mapping, key) pairs for mapping keys or string list items that name a device resource a pack knows."""
    out: list[tuple[Any, Any]] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            for k, v in cur.items():
                if _known(det, str(k)) or (k == "name" and isinstance(v, str) and _known(det, v)):
                    out.append((cur, k))
                stack.append(v)
        elif isinstance(cur, list):
            for i, v in enumerate(cur):
                if isinstance(v, str) and _known(det, v):
                    out.append((cur, i))
                else:
                    stack.append(v)
    return sorted(out, key=lambda hk: hk[0].lc.line if hasattr(hk[0], "lc") else 0)


def _known(det: Detector, name: str) -> bool:
    name = name.removeprefix("requests.").removeprefix("limits.")
    return det.rules.is_device_candidate(name) and det.rules.lookup(name) is not None


def _resource_quota(det: Detector, doc: Document, info: ObjectInfo, fix: bool, drop_legacy: bool) -> list[Finding]:
    spec = info.obj.get("spec")
    hard = spec.get("hard") if isinstance(spec, dict) else None  # `spec: text` is the API server's to refuse
    if not isinstance(hard, dict):
        return []
    if det.settings.strategy == "extended-resource":
        # The pods keep their extended resources and the classes map them (extendedResourceName): the API server
        # charges claims on a mapped class to requests.<name> (pkg/quota/v1/evaluator/core/resource_claims.go,
        # addExtendedResourceQuota), so the legacy keys keep limiting them; a device-class key would name the
        # vendor class, which these claims do not use (review C5).
        return []
    totals: dict[str, int] = {}
    legacy: dict[str, list[str]] = {}
    narrowed: list[tuple[str, str, str]] = []  # (key, class, resource): the resource is a part of its class
    bad: list[str] = []
    for key, value in hard.items():
        res = str(key).removeprefix("requests.")
        match = det.rules.lookup(res) if det.rules.is_device_candidate(res) else None
        if match is None or match.rule.report_only:
            continue
        count = device_count(value, plain_source(det.lines_of(doc), hard, key)).value
        if count is None:
            bad.append(str(key))
            continue
        cls = match.rule.device_class
        if match.selectors:
            narrowed.append((str(key), cls, res))
            continue
        totals[cls] = totals.get(cls, 0) + count
        legacy.setdefault(cls, []).append(str(key))
    out: list[Finding] = []
    for cls, total in totals.items():
        dra_key = cls + DRA_QUOTA_SUFFIX
        first = legacy[cls][0]
        if dra_key in hard and not drop_legacy:
            continue
        rule = "quota-legacy-device"
        if dra_key in hard:
            msg = f"legacy quota {', '.join(legacy[cls])} beside {dra_key}: --drop-legacy-quota removes it"
        elif (covered := _covered_by_extended_resource(det, cls, legacy[cls])) is not None:
            rule = "quota-legacy-covered"
            msg = (
                f"on Kubernetes {det.target.text} the quota on {', '.join(legacy[cls])} also limits claims on class "
                f"{cls}, which maps it by extendedResourceName{covered}, with the DRAExtendedResource gate on; "
                f"{dra_key}: {total} limits them with any chart: fix adds it"
            )
        else:
            msg = f"quota on {', '.join(legacy[cls])} does not cover DRA claims: add {dra_key}: {total}" + (
                " (summed)" if len(legacy[cls]) > 1 else ""
            )
        f = det.finding(rule, msg, doc, hard, first, info, resource=first, fixable=True)
        if fix:
            if dra_key not in hard:
                # Same style as the legacy value: a quoted "8" stays a string.
                legacy_value = hard[first]  # same style: a "quoted" count stays a string with the same quotes
                hard[dra_key] = type(legacy_value)(str(total)) if isinstance(legacy_value, str) else total
            if drop_legacy:
                for key in legacy[cls]:
                    del hard[key]
            f.fixed = True
        out.append(f)
    for key, cls, res in narrowed:
        # A DRA quota counts devices per DeviceClass; this resource is only the part of its class its selectors
        # pick (one MIG profile of mig.nvidia.com, one partition mode of gpu.amd.com), so a class key would count
        # every other part too: per-profile limits would merge into one (review B10). Reported, never guessed.
        out.append(
            det.finding(
                "quota-per-profile",
                f"quota {key}: {res} is one part of class {cls} (its claims carry a selector), and a DRA quota "
                f"counts devices per class: {cls}{DRA_QUOTA_SUFFIX} would count every {cls} device together. To "
                f"keep this limit, add a DeviceClass that selects only {res} and quota "
                f"<that class>{DRA_QUOTA_SUFFIX}, or size {cls}{DRA_QUOTA_SUFFIX} for all of them by hand",
                doc,
                hard,
                key,
                info,
                resource=key,
            )
        )
    for key in bad:
        out.append(
            det.finding(
                "invalid-count",
                f"quota {key}: {hard[key]} is not an integer device count",
                doc,
                hard,
                key,
                info,
                resource=key,
            )
        )
    return out


def _covered_by_extended_resource(det: Detector, cls: str, keys: list[str]) -> str | None:
    """When the API server already charges claims on `cls` to the one legacy key (KEP-5004 quota, 1.36+): the
    class's caveat (which chart releases carry the mapping), else None."""
    info = det.rules.classes.get(cls)
    if info is None or not info.shipped_by or not det.target.enabled("DRAExtendedResource") or len(keys) != 1:
        return None
    if keys[0] != "requests." + info.extended_resource_name:
        return None
    return f" ({info.extended_resource_caveat})" if info.extended_resource_caveat else ""
