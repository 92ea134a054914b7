"""The proof: a rewritten overlay's build must equal the migration of its original build.

ResourceClaimTemplates are compared by content (namespace and spec), not by name: the migration of a build
names a template after the transformed workload (`big-trainer-<hash>`), the rewritten tree after the base's
(`trainer-<hash>`, then renamed by the overlay's prefix/suffix), and labels or annotations an overlay adds to
every object are not the template's content. Pod references are compared through the same content ids.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import yaml

from dramigrate.emit import spec_hash
from dramigrate.rules import RuleSet
from dramigrate.validate import DNS_SUBDOMAIN, claim_template_errors, pod_spec_errors
from dramigrate.workloads import pod_specs

ObjKey = tuple[str, str, str, str]
RCT = "ResourceClaimTemplate"


def load(text: str) -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict)]


def _is_rct(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == RCT and str(obj.get("apiVersion", "")).startswith("resource.k8s.io/")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


# Lists the migration writes in the order of a container's device keys, which `kustomize build` sorts (a base file's
# `nvidia.com/mig-2g.10gb` before `nvidia.com/mig-1g.5gb` builds the other way round): a claim's device requests, a
# container's claims, a pod's tolerations. Their order means nothing to the API server or the scheduler, so the proof
# compares them in one order.
_UNORDERED = ("requests", "claims", "tolerations")


def _in_order(node: Any, key: str = "") -> Any:
    if isinstance(node, dict):
        return {k: _in_order(v, k) for k, v in node.items()}
    if isinstance(node, list):
        items = [_in_order(v) for v in node]
        if key in _UNORDERED and all(isinstance(v, dict) for v in items):
            items.sort(key=lambda v: json.dumps(v, sort_keys=True, default=str))
        return items
    return node


def canonical(objects: list[dict[str, Any]]) -> dict[ObjKey, list[Any]]:
    """Objects by (apiVersion, kind, namespace, name), templates renamed to their content id, lists whose order
    means nothing in one order (_UNORDERED)."""
    ids: dict[tuple[str, str], str] = {}
    out: dict[ObjKey, list[Any]] = {}
    objects = [_in_order(obj) for obj in objects]
    for obj in objects:
        if _is_rct(obj):
            ns = str(_meta(obj).get("namespace") or "")
            cid = f"content-{spec_hash(obj.get('spec'))}"
            ids[(ns, str(_meta(obj).get("name") or ""))] = cid
            key = (str(obj["apiVersion"]), RCT, ns, cid)
            if key not in out:
                out[key] = [{"spec": obj.get("spec")}]
    for obj in objects:
        if _is_rct(obj):
            continue
        ns = str(_meta(obj).get("namespace") or "")
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), ns, str(_meta(obj).get("name") or ""))
        out.setdefault(key, []).append(_rename(obj, ns, ids))
    for docs in out.values():
        docs.sort(key=lambda d: json.dumps(d, sort_keys=True, default=str))
    return out


def _rename(node: Any, ns: str, ids: dict[tuple[str, str], str]) -> Any:
    if isinstance(node, dict):
        return {
            k: (ids.get((ns, v), v) if k == "resourceClaimTemplateName" and isinstance(v, str) else _rename(v, ns, ids))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rename(v, ns, ids) for v in node]
    return node


def differences(expected: dict[ObjKey, list[Any]], actual: dict[ObjKey, list[Any]]) -> list[tuple[ObjKey, str, str]]:
    """Every difference as (object, field path, words), in a stable order."""
    out: list[tuple[ObjKey, str, str]] = []
    for key in sorted(set(expected) | set(actual)):
        e, a = expected.get(key), actual.get(key)
        what = f"{key[1]} {key[2] + '/' if key[2] else ''}{key[3]}"
        if e is None:
            out.append((key, "", f"{what}: the rewritten tree builds it, the migration of the original build has none"))
        elif a is None:
            out.append((key, "", f"{what}: the migration of the original build has it, the rewritten tree does not"))
        elif len(e) != len(a):
            out.append((key, "", f"{what}: {len(e)} object(s) expected, {len(a)} built"))
        else:
            for x, y in zip(e, a, strict=True):
                _diff(x, y, "", key, what, out)
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _diff(x: Any, y: Any, path: str, key: ObjKey, what: str, out: list[tuple[ObjKey, str, str]]) -> None:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in y:
                out.append((key, sub, f"{what}: {sub}: expected {_show(x[k])}, the rewritten tree has none"))
            elif k not in x:
                out.append((key, sub, f"{what}: {sub}: not expected, the rewritten tree has {_show(y[k])}"))
            else:
                _diff(x[k], y[k], sub, key, what, out)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            _diff(a, b, f"{path}[{i}]", key, what, out)
    elif x != y:
        out.append((key, path, f"{what}: {path}: expected {_show(x)}, the rewritten tree has {_show(y)}"))


def invalid(objects: list[dict[str, Any]], rules: RuleSet, versions: tuple[str, ...]) -> str:
    """'' when every template and every pod spec that claims devices is strict-valid for each version.

    Checked by content: a template's spec (its name is checked as a DNS subdomain on its own) and a pod spec with
    its template references replaced by content ids; many overlays share them, so each is validated once."""
    templates: dict[str, dict[str, Any]] = {}
    ids: dict[tuple[str, str], str] = {}
    for o in objects:
        if _is_rct(o):
            name = str(_meta(o).get("name"))
            if not DNS_SUBDOMAIN.match(name) or len(name) > 253:
                return f"ResourceClaimTemplate {name}: the name is not a DNS subdomain"
            cid = f"content-{spec_hash(o.get('spec'))}"
            ids[(str(_meta(o).get("namespace") or ""), name)] = cid
            templates[cid] = {"apiVersion": o["apiVersion"], "kind": RCT, "metadata": {"name": cid}, "spec": o["spec"]}
    for version in versions:
        for cid, rct in templates.items():
            errors = _template_errors(json.dumps(rct, sort_keys=True), version)
            if errors:
                return f"ResourceClaimTemplate with spec {cid} is not valid for Kubernetes {version}: {errors[0]}"
        for obj in objects:
            kind = rules.workload(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
            if kind is None:
                continue
            ns = str(_meta(obj).get("namespace") or "")
            for ref in pod_specs(obj, kind):
                if not isinstance(ref.spec, dict) or not ref.spec.get("resourceClaims"):
                    continue
                spec = _rename(ref.spec, ns, ids)
                used = sorted({str(c.get("resourceClaimTemplateName")) for c in spec["resourceClaims"]})
                key = json.dumps([spec, {u: templates.get(u) for u in used}], sort_keys=True, default=str)
                errors = _pod_errors(key, version)
                if errors:
                    return (
                        f"{obj.get('kind')} {_meta(obj).get('name')} {ref.path} is not valid for Kubernetes "
                        f"{version}: {errors[0]}"
                    )
    return ""


@lru_cache(maxsize=4096)
def _template_errors(text: str, version: str) -> tuple[str, ...]:
    return tuple(claim_template_errors(json.loads(text), version))


@lru_cache(maxsize=4096)
def _pod_errors(key: str, version: str) -> tuple[str, ...]:
    spec, templates = json.loads(key)
    return tuple(pod_spec_errors(spec, version, {k: v for k, v in templates.items() if v is not None}))
