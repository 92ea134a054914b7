"""The proof's value set with a claim of the user's own in each pod-level `resourceClaims` value a chart may read:
a rewrite that writes the pod's `resourceClaims:` key beside one the template renders already (the chart's own
list, or the pass-through beside a map in a template whose literal key takes the `dra.enabled` switch) renders the
key twice when that value is set, and Helm keeps the last list only, dropping the user's claim without a word.
With the value set, the rewritten chart must render no repeated key, and, once the user's claims are taken out,
what it renders without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dramigrate.helm.passthrough import flat_maps, sibling_key
from dramigrate.helm.prove import ObjKey, new_repeats, objects, unrandom_pair
from dramigrate.helm.values import Path_, find_maps, get_path, put_path, resources_maps

if TYPE_CHECKING:
    from dramigrate.rules import RuleSet

CLAIM = {"name": "dramigrate-user-claim", "resourceClaimName": "dramigrate-user-claim"}
KEY = "resourceClaims"


def claims_key(key: str) -> bool:
    """Whether a values key may hold a pod's claims: `resourceClaims`, or a name ending so (`podResourceClaims`,
    `extraResourceClaims`, which a chart renders as the pod's `resourceClaims:` too)."""
    return key == KEY or key.endswith("ResourceClaims")


def _claims_lists(key: str, value: Any, path: Path_) -> list[Path_]:
    return [path] if claims_key(key) and (value is None or isinstance(value, list)) else []


def claim_paths(merged: dict[str, Any]) -> list[Path_]:
    """Where a user may give a pod's claims: each `resourceClaims` key of the values (`podResourceClaims` too:
    claims_key), the sibling of each resources map, and that sibling in every item of the map's collection
    (`models.<name>.resourceClaims` for each model, where only some have `resources`). Paths through lists are left
    out (a values file cannot set one item alone)."""
    out = dict.fromkeys(find_maps(merged, _claims_lists))
    for path in resources_maps(merged) + flat_maps(merged):
        sibling = sibling_key(str(path[-1]), KEY)
        out[(*path[:-1], sibling)] = None
        items = get_path(merged, path[:-2]) if len(path) >= 2 else None
        if isinstance(items, dict) and all(isinstance(v, dict) for v in items.values()):
            out.update({(*path[:-2], str(k), sibling): None for k in items})
    return [p for p in out if all(isinstance(part, str) for part in p)]


def own_paths(merged: dict[str, Any]) -> list[Path_]:
    """The chart's own `resourceClaims` values keys (a list, or null), which its templates may read, outside lists.
    (Not `podResourceClaims` and the like: beside the pass-through's claims, named in the DRA values, a claim of the
    user's named as those fails the install by name, a duplicate the API server refuses, not a claim dropped.)"""

    def own(key: str, value: Any, path: Path_) -> list[Path_]:
        return [path] if key == KEY and (value is None or isinstance(value, list)) else []

    return [p for p in find_maps(merged, own) if all(isinstance(part, str) for part in p)]


def named_like(rules: RuleSet) -> list[dict[str, str]]:
    """Claims of the user's own named as the migration names its claim for one device (each rule's request name:
    `gpu`, `neuron`...): the rewrite's claim must take another name beside them, as the migration's does (`gpu-2`)."""
    names = sorted({r.request for r in rules.resources if r.request and not r.report_only and r.device_class})
    return [{"name": n, "resourceClaimName": f"user-{n}"} for n in names]


def overlay(merged: dict[str, Any]) -> dict[str, Any]:
    """A values file that gives the user's claim in each place of claim_paths, after the claims the values give there
    ({} when there is none)."""
    out: dict[str, Any] = {}
    for path in claim_paths(merged):
        given = get_path(merged, path)  # the chart's own claims stay: the user's joins them
        put_path(out, path, [*(given if isinstance(given, list) else []), dict(CLAIM)])
    return out


def _claims(node: Any, out: list[Any]) -> list[Any]:
    """Every `resourceClaims` list of an object, in order, without the user's claim."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == KEY and isinstance(v, list):
                out.append([c for c in v if not (isinstance(c, dict) and c.get("name") == CLAIM["name"])])
            else:
                _claims(v, out)
    elif isinstance(node, list):
        for v in node:
            _claims(v, out)
    return out


def _claim_lists(objs: dict[ObjKey, list[Any]]) -> dict[ObjKey, list[Any]]:
    lists = {k: [_claims(d, []) for d in docs] for k, docs in objs.items()}
    return {k: [[x for x in found if x] for found in docs] for k, docs in lists.items()}


def unproven(case: str, with_claims: Any, without: Any, original: Any) -> str:
    """Why the rewritten chart's render with the user's claims (`with_claims`) is not proven ('' when it is): against
    its render without them (`without`, proven), and the original chart's with them (`original`, for the keys it
    repeats itself): no key written twice, and the pods' claims, the user's taken out, those of the render without
    them. Renders that fail are not compared (the values may not fit a schema)."""
    if with_claims.error or without.error or original.error:
        return ""
    if repeat := new_repeats(with_claims.stream, original.stream):
        return (
            f"{case}, the rewritten chart writes the pods' resourceClaims key twice: {repeat}; Helm keeps the last "
            "list only and drops the user's claims: merge the DRA claim into the pod's own resourceClaims list by hand"
        )
    # a name with a random part (`job-{{ randAlphaNum 5 }}`) differs between the two renders: paired by the rest
    mine, theirs = unrandom_pair(objects(with_claims.stream + with_claims.rest), objects(without.stream + without.rest))
    got, want = _claim_lists(mine), _claim_lists(theirs)
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            return (
                f"{case}, {key[1]}/{key[3]} claims other devices than without the user's claims, once they are taken "
                "out: the DRA claim does not join the pod's own resourceClaims list"
            )
    return ""
