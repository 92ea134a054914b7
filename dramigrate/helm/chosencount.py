"""A pod's device keys of one resource with a count each, under conditions of which no two hold together (IBM's
wmlce chart: `if .Values.ddl.enabled` writes `nvidia.com/gpu: {{ .Values.ddl.gpuPerHost }}`, `else if
.Values.paiDistributed.mode` the same key with `.Values.paiDistributed.gpuPerHost`, `else` with
`.Values.resources.gpu`): at most one key renders, so the claim's count is the count of the key that does.

That count is `or (and <conditions of the first key> <its count>) (and <those of the second> <its count>) ...`: the
count of the key that renders where it is above 0, else a false value (`int` reads 0), so the claim's gate
(`gt (int X) 0`) holds exactly where the rendered key asks for a device. Whether the count is set at all (a null
count renders the key with no device, and no toleration) is asked of each key under its own conditions.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dramigrate.helm.model import Device


@dataclass(frozen=True)
class Chosen:
    """The keys of one device resource that no two render together, as one: `count`, the count of the one that
    renders (a false value where none does, or its count is 0); `is_set`, whether that key's count is set."""

    resource: str
    count: str
    is_set: str
    first: int  # the line of the first of those keys


def _apart(a: Device, b: Device) -> bool:
    """Whether keys `a` and `b` never render together: one's conditions hold the `not` of one of the other's (the
    branches of one `if`/`else if` chain), or both compare one value with two literals."""
    from dramigrate.helm.idiomatic import _negates, _other_literal

    return any(_negates(x, y) or _negates(y, x) or _other_literal(x, y) for x in a.conditions for y in b.conditions)


def chosen_counts(keys: list[Device]) -> dict[str, Chosen]:
    """By device resource, the keys with two counts or more of which no two render together, as one count."""
    from dramigrate.helm.goexpr import grouped
    from dramigrate.helm.idiomatic import _as_rendered, _set

    by_resource: dict[str, list[Device]] = {}
    for d in keys:
        by_resource.setdefault(d.resource, []).append(d)
    out = {}
    for resource, own in by_resource.items():
        if len({d.count for d in own}) < 2 or not all(_apart(a, b) for a, b in itertools.combinations(own, 2)):
            continue
        shared = [c for c in own[0].conditions if all(c in d.conditions for d in own)]
        count = "or " + " ".join(_as_rendered(d, shared) for d in own)
        is_set = " ".join(
            f"(and {' '.join(grouped(c) for c in d.conditions if c not in shared)} {_set(d.count)})" for d in own
        )
        out[resource] = Chosen(resource, count, f"(or {is_set})", own[0].index)
    return out


def as_one(keys: list[Device], chosen: dict[str, Chosen]) -> list[Device]:
    """The keys with those of each chosen resource as one key: the first's line, the chosen count, and the
    conditions all of them share."""
    out: list[Device] = []
    for d in keys:
        one = chosen.get(d.resource)
        if one is None:
            out.append(d)
        elif d.index == one.first:
            own = [k for k in keys if k.resource == d.resource]
            shared = [c for c in d.conditions if all(c in k.conditions for k in own)]
            out.append(dataclasses.replace(d, count=one.count, conditions=shared, branch=None, branch_conditions=[]))
    return out
