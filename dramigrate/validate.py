"""Validate: strict Kubernetes schemas (kubernetes-validate) plus the API server's semantic rules they miss."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from dramigrate.memo import remember

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_REQUESTS = 32
MAX_SELECTORS = 32
MAX_FIRST_AVAILABLE = 8
MAX_CEL_LENGTH = 10 * 1024
MAX_DEVICES_PER_CLAIM = 32  # AllocationResultsMaxSize: the scheduler's allocator refuses a claim asking for more


@cache
def _validator(version: str, kind: str, api_version: str) -> Any:
    import jsonschema
    from kubernetes_validate.utils import SchemaNotFoundError, all_versions, major_minor, schema_contents
    from referencing import Registry, Resource

    schema_version = [v for v in all_versions() if major_minor(v) <= major_minor(version)][-1]
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    folder = f"v{schema_version}-local-strict"
    try:
        schema = schema_contents(f"kubernetes-json-schema/{folder}/{kind.lower()}-{group_version}.json", version)
    except FileNotFoundError as exc:
        raise SchemaNotFoundError(version=major_minor(version), kind=kind, api_version=api_version) from exc
    registry = _definitions(folder, version) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


@cache
def _definitions(folder: str, version: str) -> Any:
    """The definitions every kind's schema of a version refers to (1.5 MB of JSON), read once for all kinds: a proof
    validates a dozen kinds for two versions, and reading them for each kind was most of its validation time."""
    from kubernetes_validate.utils import schema_contents
    from referencing import Resource

    return Resource.from_contents(schema_contents(f"kubernetes-json-schema/{folder}/_definitions.json", version))


_CHECKED: dict[tuple[str, str], list[str]] = {}  # (object as JSON, version) -> its schema errors (schema_errors)
_CHECKED_MAX = 4096


def schema_errors(obj: dict[str, Any], version: str) -> list[str]:
    """Every strict-schema error of an object for a Kubernetes version, as 'path: message'. An object is checked
    once per version and run: a chart's proof migrates a dozen value sets whose pod specs and emitted claim
    templates are mostly the same, and the schema's walk was a fifth of a proof's migration time. The key is the
    object as JSON, its keys in their order (an error message lists unexpected keys in that order); an object JSON
    does not write as it is (a value of another type) is checked every time."""
    text = object_json(obj)
    if text is None:
        return _schema_errors(obj, version)
    key = (text, version)
    found = _CHECKED.get(key)
    if found is None:
        found = remember(_CHECKED, key, _schema_errors(obj, version), _CHECKED_MAX)
    return list(found)  # the caller's to extend


def object_json(obj: dict[str, Any]) -> str | None:
    """An object as JSON, its keys in their order: its strict-schema errors are a function of this text alone (an
    error message lists unexpected keys in that order). None for an object JSON does not write as it is (a value of
    another type)."""
    import json

    try:
        return json.dumps(obj, default=_not_json)
    except (TypeError, ValueError):
        return None


def _not_json(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _schema_errors(obj: dict[str, Any], version: str) -> list[str]:
    from kubernetes_validate.utils import SchemaNotFoundError

    try:
        validator = _validator(version, str(obj.get("kind")), str(obj.get("apiVersion")))
    except SchemaNotFoundError:
        return [f"{obj.get('apiVersion')} {obj.get('kind')} does not exist in Kubernetes {version}"]
    out = []
    for err in validator.iter_errors(obj):
        path = ".".join(str(p) for p in err.absolute_path) or "(top)"
        out.append(f"{path}: {err.message}")
    return sorted(out)


def pod_spec_errors(spec: dict[str, Any], version: str, claim_templates: dict[str, dict[str, Any]]) -> list[str]:
    """Errors of a pod spec, wrapped in a v1 PodTemplate for the schema, plus DRA semantic rules."""
    wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}, "template": {"spec": spec}}
    return schema_errors(wrapped, version) + pod_claim_errors(spec, claim_templates)


def pod_claim_errors(spec: dict[str, Any], claim_templates: dict[str, dict[str, Any]]) -> list[str]:
    """The API server's checks of claims and their use in containers; parts of the wrong type are the schema's to
    report (a container that is a number, a claims list that is a string) and are skipped here."""
    out = []
    claims = _items(spec.get("resourceClaims"))
    names: dict[str, dict[str, Any]] = {}
    for i, c in claims:
        name = str(c.get("name", ""))
        if not DNS_LABEL.match(name) or len(name) > 63:
            out.append(f"resourceClaims[{i}].name: {name!r} is not a DNS label")
        if name in names:
            out.append(f"resourceClaims[{i}].name: duplicate claim name {name!r}")
        names[name] = c
        if bool(c.get("resourceClaimName")) == bool(c.get("resourceClaimTemplateName")):
            out.append(f"resourceClaims[{i}]: exactly one of resourceClaimName or resourceClaimTemplateName")
    for list_key in ("initContainers", "containers"):
        for ci, container in _items(spec.get(list_key)):
            resources = container.get("resources")
            entries = _items(resources.get("claims")) if isinstance(resources, dict) else []
            seen: set[tuple[str, str]] = set()
            for ei, e in entries:
                where = f"{list_key}[{ci}].resources.claims[{ei}]"
                name, request = str(e.get("name", "")), str(e.get("request") or "")
                if name not in names:
                    out.append(f"{where}: must be one of the names in pod.spec.resourceClaims")
                    continue
                if (name, request) in seen or (name, "") in seen or (not request and any(n == name for n, _ in seen)):
                    out.append(f"{where}: duplicate claim entry for {name!r}")
                seen.add((name, request))
                template = claim_templates.get(str(names[name].get("resourceClaimTemplateName")))
                if request and template is not None and request.split("/")[0] not in _request_names(template):
                    out.append(f"{where}.request: {request!r} is not a request of the claim's template")
    return out


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The mappings of a list with their indexes; nothing when value is not a list."""
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []


def _request_names(template: dict[str, Any]) -> set[str]:
    return {str(r.get("name")) for r in template["spec"]["spec"]["devices"].get("requests", [])}


def claim_template_errors(obj: dict[str, Any], version: str) -> list[str]:
    """Schema errors of an emitted ResourceClaimTemplate plus the API server's semantic checks."""
    out = schema_errors(obj, version)
    name = str(obj["metadata"].get("name", ""))
    if not DNS_SUBDOMAIN.match(name) or len(name) > 253:
        out.append(f"metadata.name: {name!r} is not a DNS subdomain")
    devices = obj["spec"]["spec"]["devices"]
    requests = devices.get("requests", [])
    if not 0 < len(requests) <= MAX_REQUESTS:
        out.append(f"spec.spec.devices.requests: between 1 and {MAX_REQUESTS} requests, not {len(requests)}")
    names: set[str] = set()
    for i, r in enumerate(requests):
        where = f"spec.spec.devices.requests[{i}]"
        name = str(r.get("name", ""))
        if not DNS_LABEL.match(name) or len(name) > 63:
            out.append(f"{where}.name: {name!r} is not a DNS label")
        if name in names:
            out.append(f"{where}.name: duplicate request name {name!r}")
        names.add(name)
        flat = "deviceClassName" in r  # v1beta1
        exact = r if flat else r.get("exactly")
        if not flat and bool(exact) == bool(r.get("firstAvailable")):
            out.append(f"{where}: exactly one of `exactly` or `firstAvailable` is required")
        for sub in [exact] if exact else r.get("firstAvailable") or []:
            out.extend(_exact_errors(sub, where))
        if len(r.get("firstAvailable") or []) > MAX_FIRST_AVAILABLE:
            out.append(f"{where}.firstAvailable: at most {MAX_FIRST_AVAILABLE} subrequests")
    for i, c in enumerate(devices.get("constraints", []) + devices.get("config", [])):
        for ref in c.get("requests", []):
            if ref.count("/") > 1 or ref.split("/")[0] not in names:
                out.append(f"spec.spec.devices constraint/config {i}: request {ref!r} does not exist")
    least = sum(_least_devices(r) for r in requests)
    if least > MAX_DEVICES_PER_CLAIM:
        out.append(
            f"spec.spec.devices: the claim asks for {least} devices, and the scheduler allocates at most"
            f" {MAX_DEVICES_PER_CLAIM} per claim (AllocationResultsMaxSize), so the pod would never be scheduled"
        )
    return out


def _least_devices(request: dict[str, Any]) -> int:
    """The fewest devices a request can be given, as the allocator counts it before allocating."""
    subs = request.get("firstAvailable") or [request.get("exactly") or request]
    counts = [s.get("count", 1) if s.get("allocationMode", "ExactCount") == "ExactCount" else 1 for s in subs]
    return min((c for c in counts if isinstance(c, int)), default=1)


def _exact_errors(req: dict[str, Any], where: str) -> list[str]:
    out = []
    if not DNS_SUBDOMAIN.match(str(req.get("deviceClassName", ""))):
        out.append(f"{where}: deviceClassName {req.get('deviceClassName')!r} is not a DNS subdomain")
    mode = req.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        out.append(f"{where}: allocationMode must be ExactCount or All, not {mode!r}")
    count = req.get("count")
    if mode == "ExactCount" and count is not None and (not isinstance(count, int) or count <= 0):
        out.append(f"{where}: count must be greater than zero")
    if mode == "All" and count is not None:
        out.append(f"{where}: count must not be set with allocationMode All")
    selectors = req.get("selectors") or []
    if len(selectors) > MAX_SELECTORS:
        out.append(f"{where}: at most {MAX_SELECTORS} selectors")
    for s in selectors:
        out.extend(f"{where}: {e}" for e in cel_errors(s["cel"]["expression"]))
    return out


def cel_errors(expression: str) -> list[str]:
    if len(expression) > MAX_CEL_LENGTH:
        return [f"CEL expression longer than {MAX_CEL_LENGTH} characters"]
    from dramigrate.cel import CelError, compile_selector

    try:
        compile_selector(expression)
    except CelError as exc:
        return [f"CEL does not compile: {exc}"]
    return []


def device_class_errors(obj: dict[str, Any], version: str) -> list[str]:
    out = schema_errors(obj, version)
    name = str(obj["metadata"].get("name", ""))
    if not DNS_SUBDOMAIN.match(name):
        out.append(f"metadata.name: {name!r} is not a DNS subdomain")
    for s in obj.get("spec", {}).get("selectors", []):
        out.extend(cel_errors(s["cel"]["expression"]))
    return out
