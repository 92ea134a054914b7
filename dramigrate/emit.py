"""Emit: DRA objects for the target Kubernetes version, with names that carry a hash of their spec."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from dramigrate.plan import PodPlan, RequestPlan
from dramigrate.rules import DeviceClassInfo
from dramigrate.versions import Target

DNS_SUBDOMAIN_MAX = 253


def go_json(value: Any) -> str:
    """JSON exactly as Go's encoding/json writes a map (and so Helm's toJson): sorted keys, no spaces,
    and <, >, &, U+2028, U+2029 escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def spec_hash(spec: Any) -> str:
    """First 8 hex digits of the SHA-256 of the spec as Go JSON (`toJson | sha256sum | trunc 8` in a chart)."""
    return hashlib.sha256(go_json(spec).encode("utf-8")).hexdigest()[:8]


# Placeholders a launch script or Terraform substitutes before `kubectl apply`: ${JOB_NAME}, ${var.name}, $(VAR),
# $VAR. They stay in the template name verbatim, so each substitution gets its own template.
PLACEHOLDER = re.compile(r"\$\{[^{}\s]+\}|\$\([A-Za-z_][A-Za-z0-9_]*\)|\$[A-Za-z_][A-Za-z0-9_]*")
STAND_IN = "x"  # what a placeholder becomes for validation: a valid DNS label character


def name_base(workload: str, suffix: str) -> str:
    raw = f"{workload}-{suffix}" if suffix else workload
    literals = PLACEHOLDER.split(raw)
    holders = PLACEHOLDER.findall(raw)
    parts = [re.sub(r"[^a-z0-9.-]+", "-", literal.lower()) for literal in literals]
    base = "".join(p + h for p, h in zip(parts, [*holders, ""], strict=True))
    base = re.sub(r"-{2,}", "-", base).strip("-.")
    if holders:  # its length is known only once substituted; validation uses a stand-in
        return base
    return base[: DNS_SUBDOMAIN_MAX - 9].rstrip("-.") or "claim"


def stand_in(text: str) -> str:
    """text with each placeholder replaced by a valid stand-in, to validate what a substitution would give."""
    return PLACEHOLDER.sub(STAND_IN, text)


def _exact(device_class: str, selectors: tuple[str, ...], count: int) -> dict[str, Any]:
    exact: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        exact["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    exact["allocationMode"] = "ExactCount"
    exact["count"] = count
    return exact


def request_object(req: RequestPlan, target: Target) -> dict[str, Any]:
    flat = target.api_version.endswith("v1beta1")  # v1beta1: flat request shape
    if req.alternatives:
        classes = req.alternative_classes or [req.device_class] * len(req.alternatives)
        subs = [{"name": n, **_exact(c, sel, req.count)} for (n, sel), c in zip(req.alternatives, classes, strict=True)]
        return {"name": req.name, "firstAvailable": subs}
    exact = _exact(req.device_class, req.selectors, req.count)
    return {"name": req.name, **exact} if flat else {"name": req.name, "exactly": exact}


def claim_template(plan: PodPlan, target: Target) -> dict[str, Any]:
    info = plan.analysis.info
    devices: dict[str, Any] = {"requests": [request_object(r, target) for r in plan.requests]}
    if plan.constraints:
        devices["constraints"] = plan.constraints
    config = [{"requests": [r.name], **c} for r in plan.requests for c in r.config]
    if config:
        devices["config"] = config
    spec = {"spec": {"devices": devices}}
    base = name_base(info.name or info.generate_name, plan.analysis.ref.name_suffix)
    metadata: dict[str, Any] = {"name": f"{base}-{spec_hash(spec)}"}
    if info.namespace:
        metadata["namespace"] = info.namespace
    return {"apiVersion": target.api_version, "kind": "ResourceClaimTemplate", "metadata": metadata, "spec": spec}


def device_class(cls: DeviceClassInfo, target: Target) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if cls.selectors:
        spec["selectors"] = [{"cel": {"expression": s}} for s in cls.selectors]
    if cls.config:
        spec["config"] = list(cls.config)
    if cls.extended_resource_name:
        spec["extendedResourceName"] = cls.extended_resource_name
    return {"apiVersion": target.api_version, "kind": "DeviceClass", "metadata": {"name": cls.name}, "spec": spec}
