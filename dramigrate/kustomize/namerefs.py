"""A kustomize `configurations:` file that teaches nameReference: pod specs refer to ResourceClaimTemplates.

kustomize (checked with kubectl kustomize 1.32/kustomize 5.5 and 1.37/kustomize 5.8) has no name reference from
`resourceClaims[].resourceClaimTemplateName` to ResourceClaimTemplate for any kind, so a namePrefix or nameSuffix
renames the template but not the pods' reference. The file lists, for every workload kind of the workloads data
that accepts claims, the path of each pod spec's reference. kustomize paths have no wildcard for map keys
(`spec.pytorchReplicaSpecs.*`): those get one path per key the graph's objects use.
"""

from __future__ import annotations

from typing import Any

from dramigrate.rules import RuleSet

FILE_NAME = "dramigrate-claim-template-names.yaml"
REFERENCE = "resourceClaims/resourceClaimTemplateName"


def _segments(path: str) -> list[str]:
    return [s for s in path.split(".") if s]


def _paths(at: str, spec: str, map_keys: dict[str, set[str]]) -> list[str]:
    """kustomize field paths (sequences are walked implicitly) for one pod-spec location."""
    out = [""]
    for seg in _segments(at) + _segments(spec):
        seg = seg.removesuffix("[*]")
        if seg == "*":
            prefix_keys = sorted(map_keys.get("/".join(p for p in out[0].split("/") if p), set()))
            out = [f"{p}/{k}" if p else k for p in out for k in prefix_keys]
        else:
            out = [f"{p}/{seg}" if p else seg for p in out]
    return [f"{p}/{REFERENCE}" if p else REFERENCE for p in out]


def map_keys_of(objects: list[dict[str, Any]], rules: RuleSet) -> dict[str, set[str]]:
    """For each `*` map wildcard of the workloads data (by its kustomize path before the wildcard), the keys used."""
    out: dict[str, set[str]] = {}
    for obj in objects:
        kind = rules.workload(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if kind is None:
            continue
        for loc in kind.pod_specs:
            segs = _segments(loc.at)
            if "*" not in segs:
                continue
            before = [s.removesuffix("[*]") for s in segs[: segs.index("*")]]
            node: Any = obj
            for s in before:
                node = node.get(s) if isinstance(node, dict) else None
            if isinstance(node, dict):
                out.setdefault("/".join(before), set()).update(str(k) for k in node)
    return out


def configuration(rules: RuleSet, map_keys: dict[str, set[str]]) -> dict[str, Any]:
    """The configuration document: nameReference of ResourceClaimTemplate from every pod-spec location."""
    specs: list[dict[str, str]] = []
    for (group, kind), wk in sorted(rules.kinds.items()):
        if wk.accepts_claims is False:
            continue
        for loc in wk.pod_specs:
            for path in _paths(loc.at, loc.spec, map_keys):
                entry = {"kind": kind, "path": path}
                if group:
                    entry = {"group": group, **entry}
                if entry not in specs:
                    specs.append(entry)
    return {"nameReference": [{"kind": "ResourceClaimTemplate", "group": "resource.k8s.io", "fieldSpecs": specs}]}


def configuration_text(rules: RuleSet, map_keys: dict[str, set[str]]) -> str:
    import yaml

    head = (
        "# Written by dramigrate: kustomize renames ResourceClaimTemplates (namePrefix, nameSuffix) but has no\n"
        "# name reference for the pods' resourceClaimTemplateName; this teaches it, for every workload kind.\n"
    )
    return head + yaml.safe_dump(configuration(rules, map_keys), sort_keys=False, width=200)
