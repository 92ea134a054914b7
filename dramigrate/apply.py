"""Apply: minimal edits on the parsed round-trip document for one pod plan."""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from dramigrate.plan import PodPlan
from dramigrate.workloads import resolve


def _seq(items: list[dict[str, Any]]) -> CommentedSeq:
    return CommentedSeq(CommentedMap(i) for i in items)


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
            changes.append(f"added toleration {t['key']}:{t['effect']} (was added by ExtendedResourceToleration)")
    if plan.ray_num_gpus is not None:
        path = pa.ref.location.ray_start_params
        found = [p for p, _, _ in resolve(pa.ref.owner, path)]
        if not found:
            pa.ref.owner[path] = found_params = CommentedMap()
            found = [found_params]
        if isinstance(found[0], dict) and "num-gpus" not in found[0]:
            found[0]["num-gpus"] = str(plan.ray_num_gpus)
            changes.append(f'set {path}.num-gpus: "{plan.ray_num_gpus}"')
    return changes
