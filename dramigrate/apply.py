"""Apply: minimal edits on the parsed round-trip document for one pod plan."""

from __future__ import annotations

import json
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from dramigrate.plan import PodPlan
from dramigrate.workloads import pod_metadata, resolve


def _seq(items: list[dict[str, Any]]) -> CommentedSeq:
    return CommentedSeq(CommentedMap(i) for i in items)


def _forget_comment_of_anchor(root: Any, mapping: Any, key: Any) -> None:
    """Before fix removes mapping[key], an anchored value still aliased elsewhere: ruamel keeps comments per node and
    an alias is the same node, so every key aliasing it holds the comment after the anchored line too, and the dump
    would write it where the anchor moves (under the alias's key). The comment stays with the removed line, whose
    comments the merge keeps."""
    from ruamel.yaml.anchor import Anchor

    value = mapping[key]
    slots = getattr(mapping, "ca", None) and mapping.ca.items.get(key)
    if not slots or not slots[2] or not getattr(getattr(value, Anchor.attrib, None), "value", None):
        return
    token, stack, done = slots[2], [root], set()
    while stack:
        node = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in done:
            continue
        done.add(id(node))
        for other in getattr(getattr(node, "ca", None), "items", {}).values():
            if other and other[2] is token:
                other[2] = None
        stack.extend(node.values() if isinstance(node, dict) else node)


def apply_plan(plan: PodPlan, template_name: str | None) -> list[str]:
    """Edit the pod spec in place; returns what changed, for the report."""
    pa = plan.analysis
    spec = pa.ref.spec
    changes: list[str] = []
    for use in plan.removals:
        resources = use.container.container["resources"]
        for section in ("limits", "requests"):
            values = resources.get(section)
            if isinstance(values, dict) and use.resource in values:
                _forget_comment_of_anchor(pa.info.obj, values, use.resource)
                del values[use.resource]
                if not values:
                    del resources[section]
        if not resources and not plan.container_claims.get(id(use.container.container)):
            del use.container.container["resources"]
        changes.append(f"{use.container.name}: removed {use.resource}: {use.count}")
    if plan.needs_claim and template_name:
        claims = spec.get("resourceClaims")
        if not isinstance(claims, list):
            claims = spec["resourceClaims"] = CommentedSeq()
        claims.append(CommentedMap(name=plan.claim_name, resourceClaimTemplateName=template_name))
        for use in pa.uses:
            entries = plan.container_claims.pop(id(use.container.container), None)
            if entries is None:
                continue
            resources = use.container.container.setdefault("resources", CommentedMap())
            existing = resources.get("claims")
            if not isinstance(existing, list):
                existing = resources["claims"] = CommentedSeq()
            for entry in entries:
                if entry not in [dict(e) for e in existing if isinstance(e, dict)]:
                    existing.append(CommentedMap(entry))
        changes.append(f"added claim {plan.claim_name} from ResourceClaimTemplate {template_name}")
    if plan.tolerations:
        tolerations = spec.get("tolerations")
        if not isinstance(tolerations, list):
            tolerations = spec["tolerations"] = CommentedSeq()
        for t in plan.tolerations:
            tolerations.append(CommentedMap(t))
            changes.append(
                f"added toleration {t['key']}:{t['effect']} (was added by ExtendedResourceToleration; "
                "--no-extended-resource-toleration leaves it out on clusters without that admission plugin)"
            )
    if not plan.primary:  # a further claim of the same pod: the pod-wide edits below were made with the first
        return changes
    if pa.drop_annotations and plan.needs_claim:
        meta = pod_metadata(pa.info.obj, pa.ref.path)
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        for key in pa.drop_annotations:
            if isinstance(annotations, dict) and key in annotations:
                del annotations[key]
                changes.append(f"removed annotation {key}: the SR-IOV DRA driver attaches that network (VfConfig)")
        if isinstance(annotations, dict) and not annotations:
            del meta["annotations"]
    if pa.selection is not None:
        changes.extend(apply_selection(spec, pa.selection))
    if plan.ray_params:
        path = pa.ref.location.ray_start_params
        found = [p for p, _, _ in resolve(pa.ref.owner, path)]
        if not found or found[0] is None:  # `rayStartParams: null` (a chart's toYaml of a null map) is no map
            pa.ref.owner[path] = found_params = CommentedMap()
            found = [found_params]
        if isinstance(found[0], dict):
            for key, value in plan.ray_params.items():
                found[0][key] = value
                changes.append(f"set {path}.{key}: {json.dumps(value)}")
    return changes


def apply_selection(spec: Any, sel: Any) -> list[str]:
    """Remove the node-label hacks the claim's selectors now state, and the tolerations asked to go."""
    changes: list[str] = []
    ns = spec.get("nodeSelector")
    for key in sel.drop_node_selector:
        if isinstance(ns, dict) and key in ns:
            del ns[key]
            changes.append(f"moved nodeSelector {key} into the claim's selectors")
    if isinstance(ns, dict) and not ns and sel.drop_node_selector:
        del spec["nodeSelector"]
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    emptied = False  # only a node affinity this migration emptied goes: `affinity: {}` as written stays
    if isinstance(node, dict) and node:
        required_key = "requiredDuringSchedulingIgnoredDuringExecution"
        if sel.drop_required and required_key in node:
            del node[required_key]
            changes.append("moved required node affinity into the claim's selectors")
        elif sel.required_terms is not None:
            terms = node[required_key]["nodeSelectorTerms"]
            keep = {idx: drop for idx, drop in sel.required_terms}
            for idx in reversed(range(len(terms))):
                if idx not in keep:
                    del terms[idx]
                    continue
                exprs = terms[idx].get("matchExpressions")
                for j in sorted(keep[idx], reverse=True):
                    del exprs[j]
                if exprs is not None and not exprs:
                    del terms[idx]["matchExpressions"]
            changes.append("moved device labels of required node affinity into the claim's selectors")
        preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
        if sel.drop_preferred and isinstance(node.get(preferred_key), list):
            for i in sorted(sel.drop_preferred, reverse=True):
                del node[preferred_key][i]
            if not node[preferred_key]:
                del node[preferred_key]
            changes.append("moved preferred device models into the claim's firstAvailable list")
        if not node:
            del affinity["nodeAffinity"]
            emptied = True
    if emptied and isinstance(affinity, dict) and not affinity:
        del spec["affinity"]
    tolerations = spec.get("tolerations")
    for i in sorted(sel.drop_tolerations, reverse=True):
        changes.append(f"dropped toleration {tolerations[i].get('key')}")
        del tolerations[i]
    return changes
