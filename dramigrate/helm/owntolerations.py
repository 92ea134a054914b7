"""A chart's own literal tolerations of a device's taint in a pod's list, and the conditions they render under.

porter-dev's web and job charts tolerate `nvidia.com/gpu` themselves, as the last item of the pod's literal list, inside
`{{- if .Values.resources.requests.nvidiaGpu }}`, while the limit alone asks for the GPU too (Kubernetes takes the
request from it). The manifest migration adds the device plugin's toleration exactly when the pod asks for the device
and tolerates its taint in no other way (plan.covers); so the rewrite's DRA entry renders under the claim's condition
and `not` the conditions of the chart's own entries that tolerate that taint: with the request set the chart's entry
renders alone, with the limit alone the DRA one does, never both, never neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from dramigrate.helm.rewrite import _actions
from dramigrate.plan import covers

_IF = re.compile(r"\{\{-?\s*if\s+(.+?)\s*-?\}\}", re.S)
_ACTION = re.compile(r"\{\{.*?\}\}")
_PLACEHOLDER = "dramigrate-templated"  # an action's text in an item, read as YAML


@dataclass
class _Item:
    blocks: list[str | None]  # the `if` conditions open at the item, inside the list (None: a `with`, `range`, `else`)
    lines: list[str] = field(default_factory=list)
    split: bool = False  # a block opens or closes inside the item: its fields are not all written together


def own_gates(lines: list[str], start: int, stop: int, item: int, key: str) -> list[str] | None:
    """The conditions under which each of the chart's literal items in lines [start, stop) (a list's items, at indent
    `item`) that tolerates the `key:NoSchedule` taint renders, "" for one that always does; None when an item may
    tolerate it in a way not read here (inside a `with`, `range` or `else`, fields written by actions or under
    their own `if`)."""
    wanted = {"key": key, "effect": "NoSchedule"}
    blocks: list[str | None] = []
    items: list[_Item] = []
    current: _Item | None = None
    for line in lines[start:stop]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        words = [(line[s:e], word) for s, e, word in _actions(line)]
        if _ACTION.sub("", stripped).strip():  # YAML (maybe with values in actions): an item, or a line of one
            indent = len(line) - len(line.lstrip())
            if indent == item and stripped.startswith("- "):
                current = _Item(list(blocks), [line])
                items.append(current)
            elif indent > item and current is not None:
                current.lines.append(line)
                current.split = current.split or current.blocks != blocks
            else:
                current = None
        for text, word in words:
            if word == "if":
                m = _IF.fullmatch(text.strip())
                blocks.append(m.group(1) if m else None)
            elif word in ("with", "range"):
                blocks.append(None)
            elif word == "else" and blocks:
                blocks[-1] = None
            elif word == "end" and blocks:
                blocks.pop()
    gates: list[str] = []
    for it in items:
        tolerates = _tolerates(it, wanted)
        if tolerates is None or (tolerates and (it.split or None in it.blocks)):
            return None
        if tolerates:
            gates.append(_all(*(b for b in it.blocks if b)))
    return gates


def _tolerates(it: _Item, wanted: dict[str, str]) -> bool | None:
    """Whether the item tolerates the wanted taint; None when that depends on what its actions write."""
    text = "\n".join(it.lines)
    try:
        parsed = yaml.safe_load(_ACTION.sub(_PLACEHOLDER, text))
    except yaml.YAMLError:
        return None
    toleration: Any = parsed[0] if isinstance(parsed, list) and len(parsed) == 1 else None
    if not isinstance(toleration, dict):
        return None
    fields = {k: toleration.get(k) for k in ("key", "operator", "effect")}
    if not any(_PLACEHOLDER in str(v) for v in fields.values()):
        return covers(toleration, wanted)
    if (
        isinstance(fields["key"], str)
        and _PLACEHOLDER not in fields["key"]
        and fields["key"] not in ("", wanted["key"])
    ):
        return False  # another taint's key, whatever the rest writes (porter's node-group items)
    return None


def _all(*conds: str) -> str:
    return conds[0] if len(conds) == 1 else " ".join(["and", *(_grouped(c) for c in conds)]) if conds else ""


def _grouped(cond: str) -> str:
    return cond if re.fullmatch(r"[\w.$]+", cond) else f"({cond})"


def untolerated(gates: list[str]) -> str:
    """The condition that none of the chart's own entries (their `gates`, none of them "") renders: `(not X)`."""
    either = gates[0] if len(gates) == 1 else " ".join(["or", *(_grouped(g) for g in gates)])
    return f"(not {_grouped(either)})"
