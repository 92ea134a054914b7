"""What the manifest migration (`fix -`) adds to each pod of the chart's own render: the claims, the tolerations and the
ResourceClaimTemplate spec, grouped by the pod templates of a workload kind. The idiomatic rewrites write exactly
this into the DRA branch, so a chart cannot drift from the manifest migration.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from dramigrate.helm import unpin
from dramigrate.helm.model import PodDelta
from dramigrate.helm.rewrite import RewriteError
from dramigrate.plan import covers
from dramigrate.rules import RuleSet


@functools.cache
def shipped_rules() -> RuleSet:
    from dramigrate.rules import load_rules

    return load_rules()


def kind_singles(api_version: str, kind: str) -> tuple[str, ...]:
    """The keys of one container each in the pod specs of an object of this kind, as rules/workloads.yaml declares
    them (KServe's InferenceService: model, pytorch, ...)."""
    found = shipped_rules().workload(api_version, kind)
    return found.single_containers if found is not None else ()


def pod_containers(pod: dict[str, Any], singles: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The containers of a pod spec: its lists, then the single containers of its object's kind."""
    listed = [c for key in ("initContainers", "containers") for c in pod.get(key) or [] if isinstance(c, dict)]
    return listed + [pod[k] for k in singles if isinstance(pod.get(k), dict)]


def pod_groups(
    node: Any, out: list[tuple[Any, dict[str, Any]]], parent: Any = None, singles: tuple[str, ...] | None = None
) -> list[tuple[Any, dict[str, Any]]]:
    """(the object whose `template` holds the pod, or None; the pod spec) for each pod spec, in document order: a map
    with a `containers` list, or with one of the single containers the document's kind declares (KServe's
    `predictor.model`)."""
    if singles is None:
        doc = node if isinstance(node, dict) else {}
        singles = kind_singles(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list) or any(isinstance(node.get(k), dict) for k in singles):
            out.append((parent, node))
        for k, v in node.items():
            holder = node if k == "template" else None
            if isinstance(v, dict) and holder is None and parent is not None and k == "spec":
                holder = parent  # template.spec: the group is the template's holder
            pod_groups(v, out, holder if k in ("template", "spec") else None, singles)
    elif isinstance(node, list):
        for v in node:
            pod_groups(v, out, None, singles)
    return out


def claim_delta(
    old: dict[str, Any], new: dict[str, Any], claim_templates: dict[str, Any], error: type[RewriteError]
) -> PodDelta | None:
    """What the migration added to one pod spec (`old` before, `new` after), or None when it added no claim; a
    pod given several claims, or a claim whose template is not in the render, raises `error`."""
    own = old.get("resourceClaims") or []
    claims = [c for c in new.get("resourceClaims") or [] if c not in own]  # the pod's own claims stay as they are
    if not claims:
        return None
    if len(claims) != 1 or "resourceClaimTemplateName" not in claims[0]:
        raise error("the migration gives this pod several claims")
    name = claims[0]["resourceClaimTemplateName"]
    template = claim_templates.get(name)
    if template is None:
        raise error(f"the migration's ResourceClaimTemplate {name} is not in the render")
    old_tol = old.get("tolerations") or []
    added = [t for t in new.get("tolerations") or [] if t not in old_tol]
    before, after = old.get("nodeSelector") or {}, new.get("nodeSelector") or {}
    moved = {str(k): str(v) for k, v in before.items() if k not in after} if isinstance(before, dict) else {}
    kept = {str(k): str(v) for k, v in before.items() if k in after} if isinstance(before, dict) else {}
    namespaced = bool(template["metadata"].get("namespace"))
    affinity = [p for p in unpin.dropped(old, new) if p[0] == "affinity"]
    covered = [t for t in _plugin_tolerations(old, new) if t not in added and any(covers(o, t) for o in old_tol)]
    return PodDelta(claims[0]["name"], added, template["spec"], namespaced, name, moved, affinity, covered, kept=kept)


def _plugin_tolerations(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The toleration the device plugin's admission gave the pod for each resource the migration took out of its
    containers."""

    def resources(node: Any) -> set[str]:  # of every container, a KServe predictor's `model:` too
        if isinstance(node, list):
            return {r for v in node for r in resources(v)}
        if not isinstance(node, dict):
            return set()
        own = node.get("resources") if isinstance(node.get("resources"), dict) else {}
        found = {str(k) for s in ("limits", "requests") if isinstance(own.get(s), dict) for k in own[s]}
        return found | {r for k, v in node.items() if k != "resources" for r in resources(v)}

    return [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in sorted(resources(old) - resources(new))]


def pod_delta(
    original: list[dict[str, Any]], migrated: list[dict[str, Any]], claim_templates: dict[str, Any]
) -> list[PodDelta]:
    """What the migration added to each pod of a template that got a claim, in document order."""
    before = [group for doc in original for group in pod_groups(doc, [])]
    after = [group for doc in migrated for group in pod_groups(doc, [])]
    out = []
    for (old_group, old), (new_group, new) in zip(before, after, strict=False):
        if (delta := claim_delta(old, new, claim_templates, RewriteError)) is not None:
            params = (old_group or {}).get("rayStartParams") or {}
            changed = {k: v for k, v in ((new_group or {}).get("rayStartParams") or {}).items() if params.get(k) != v}
            out.append(dataclasses.replace(delta, params=changed))
    if not out:
        raise RewriteError("the migration adds no claim to this template's pods")
    return out
