"""Unshare anchored and merged `resources` maps before an edit, so each container keeps exactly its own devices.

YAML anchors (`resources: &r`, then `resources: *r`) and merge keys (`<<: *r`) make several containers hold the
same map in memory: an edit for one container would edit them all (each would get every container's claims,
or lose a device it still asks for). Before fix edits a pod, the `resources` map of every container it edits
that shares any node with another place in the document is replaced by its own copy, merge keys written out.
The same goes for the pod-level fields fix edits (claims, tolerations, node selection) and the Ray start
parameters: a pod that shares its `tolerations` or `nodeSelector` with a pod asking for no device must not gain
the device toleration or lose its node pinning.
Anchors elsewhere in the document are kept: the original object stays wherever it is still used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq, merge_attrib


def references(root: Any) -> dict[int, int]:
    """How many times each mapping or sequence is reached in the document (aliases and merges count again)."""
    counts: dict[int, int] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict | list):
            continue
        counts[id(node)] = counts.get(id(node), 0) + 1
        if counts[id(node)] > 1:
            continue
        if isinstance(node, dict):
            stack.extend(node.values())  # merged values too: they are reached a second time through the merge
            stack.extend(merged_maps(node))
        else:
            stack.extend(node)
    return counts


def merged_maps(mapping: Any) -> list[Any]:
    """The maps a mapping's merge keys bring in (ruamel keeps them as maps or as (index, map) pairs)."""
    return [m[1] if isinstance(m, tuple) else m for m in getattr(mapping, "merge", None) or []]


def _shared(node: Any, counts: dict[int, int]) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if counts.get(id(n), 0) > 1 or getattr(n, "merge", None):
                return True
            stack.extend(n.values())
        elif isinstance(n, list):
            if counts.get(id(n), 0) > 1:
                return True
            stack.extend(n)
    return False


def own_copy(node: Any) -> Any:
    """A copy of a mapping or sequence tree with merge keys written out, no anchors, comments and style kept."""
    if isinstance(node, dict):
        out = CommentedMap()
        for key, value in node.items():  # own keys first in their order, then the merged ones
            out[key] = own_copy(value)
        _keep_format(node, out)
        return out
    if isinstance(node, list):
        seq = CommentedSeq(own_copy(v) for v in node)
        _keep_format(node, seq)
        return seq
    return node


def _keep_format(src: Any, dst: Any) -> None:
    ca = getattr(src, "ca", None)
    if ca is not None:
        dst.ca.items.update(ca.items)
        dst.ca.comment = ca.comment
    fa = getattr(src, "fa", None)
    if fa is not None and fa.flow_style():
        dst.fa.set_flow_style()


def write_out_merge(mapping: CommentedMap) -> None:
    """Turn a mapping's merge keys (`<<: *base`) into its own keys, in place (others hold this object)."""
    items = list(mapping.items())
    if hasattr(mapping, merge_attrib):
        delattr(mapping, merge_attrib)
    for key, value in items:
        if key not in mapping._ok:
            mapping[key] = value


def unshare_fields(root: Any, owners: Iterable[tuple[Any, Iterable[str]]]) -> int:
    """Give each (mapping, keys) its own copy of those keys' values when they are shared; returns how many."""
    counts = references(root)
    done = 0
    for mapping, keys in owners:
        for key in keys if isinstance(mapping, dict) else ():
            value = mapping.get(key)
            if isinstance(value, dict | list) and _shared(value, counts):
                mapping[key] = own_copy(value)
                done += 1
    return done


def unshare_resources(root: Any, containers: Iterable[Any]) -> int:
    """Give each of these container mappings its own `resources` map when it shares one; returns how many."""
    counts = references(root)
    done = 0
    seen: set[int] = set()
    for container in containers:
        if id(container) in seen or not isinstance(container, dict):
            continue
        seen.add(id(container))
        if getattr(container, "merge", None):
            write_out_merge(container)
            done += 1
        resources = container.get("resources")
        if isinstance(resources, dict) and _shared(resources, counts):
            container["resources"] = own_copy(resources)
            done += 1
    return done
