"""The node labels the rendered pods select devices with (a nodeSelector key, a node-affinity expression's key) and
the values leaves that set them: read by the label rewrites (run.py), why a label cannot move into a claim
(labelwhy.py) and the switch's shared-product guard (leftwhy.py)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from dramigrate.helm.prove import documents
from dramigrate.helm.values import Leaf
from dramigrate.rules import RuleSet


def pod_labels(stream: str) -> dict[str, set[str]]:
    """Node label keys the rendered objects select on (nodeSelector keys and node-affinity expression keys), each
    with the values they select (a nodeSelector value, the `values` of an expression)."""
    labels: dict[str, set[str]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            selector = node.get("nodeSelector")
            if isinstance(selector, dict):
                for k, v in selector.items():
                    labels.setdefault(str(k), set()).add(str(v))
            exprs = node.get("matchExpressions")
            if isinstance(exprs, list):
                for e in exprs:
                    if isinstance(e, dict):
                        found = e.get("values") if isinstance(e.get("values"), list) else []
                        own = labels.setdefault(str(e.get("key")), set())
                        own.update(str(v) for v in found if isinstance(v, (str, int, float)))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    try:
        for doc in documents(stream):
            walk(doc)
    except yaml.YAMLError:
        pass
    return labels


def label_leaves(stream: str, rules: RuleSet, merged: dict[str, Any]) -> dict[str, Leaf | None]:
    """Each device-selecting node label the rendered pods use, with the values leaf that sets it (a key named after
    the label, or a value equal to it; or, for a label key the template writes itself, the leaf holding each value
    it selects: triton's `nvidia.com/gpu.product In [{{ .Values.gpu }}]`), None when the label does not come from
    values."""
    from dramigrate.helm.values import walk

    leaves = list(walk(merged))
    out: dict[str, Leaf | None] = {}
    for key, selected in sorted(pod_labels(stream).items()):
        if key not in rules.labels:
            continue
        out[key] = next((leaf for leaf in leaves if (leaf.path and leaf.path[-1] == key) or leaf.value == key), None)
        named = [
            v for v in selected if re.search(r"[A-Za-z]", v) and v.lower() not in ("true", "false")
        ]  # not 1, "true"
        holders = [
            next((leaf for leaf in leaves if isinstance(leaf.value, str) and leaf.value == v), None) for v in named
        ]
        if out[key] is None and holders and len(named) == len(selected) and None not in holders:
            out[key] = next(leaf for leaf in leaves if leaf in holders)  # the first in the values (`selected` a set)
        elif out[key] is None and selected and not named:
            out[key] = _number_holder(selected, leaves)
    return out


def _number_holder(selected: set[str], leaves: list[Leaf]) -> Leaf | None:
    """The values leaf that holds the numbers a label selects (lightray's `nvidia.com/gpu.memory Gt
    {{ .Values.worker.minGpuMemory | quote }}`), when exactly one leaf holds each, the first in the values; else None.
    A number is paired only so (a count of 1 is in many leaves); _labels_set_by then checks that the leaf sets it."""
    if not all(re.fullmatch(r"-?\d+(\.\d+)?", v) for v in selected):
        return None
    holders = []
    for v in selected:
        same = [
            leaf
            for leaf in leaves
            if isinstance(leaf.value, (int, float, str)) and not isinstance(leaf.value, bool) and str(leaf.value) == v
        ]
        if len(same) != 1:
            return None
        holders += same
    return next(leaf for leaf in leaves if leaf in holders)
