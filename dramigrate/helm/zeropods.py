"""Pods whose device keys all ask for a literal 0 (a node agent's `nvidia.com/gpu: 0  # uses no GPU compute`, beside a
server that asks for GPUs from values). The manifest migration drops such a key and gives the pod no claim, but keeps
the toleration the ExtendedResourceToleration admission plugin gave it for the key (the plugin reads the names of the
resources a pod asks for, whatever their count) and the pod's node labels (no request to move them into). The rewrite
of such a template is the key behind the switch and that toleration in the DRA branch: no claim, no claim template."""

from __future__ import annotations

import json
import re
from typing import Any

from dramigrate.helm.calltolerations import joined_call, tolerations_calls
from dramigrate.helm.goexpr import and_all, as_arg, from_root
from dramigrate.helm.model import Device
from dramigrate.helm.poddelta import pod_groups
from dramigrate.helm.rewrite import RewriteError
from dramigrate.helm.templatelines import Edit, block_end, line_indent, parent_line
from dramigrate.helm.tolerationedits import (
    _dump_list,
    _joined,
    _merge_tolerations,
    _pod_key_lines,
    _wrap,
    last_written_first,
)

_ZERO = re.compile(r"""(["']?)0+\1""")


def asks_for_none(devices: list[Device]) -> bool:
    """Whether every device key of a template is a literal count of 0 (no values count, no name from values)."""
    return bool(devices) and all(
        _ZERO.fullmatch(d.count.strip()) and not d.name and d.loop is None and not d.branch_conditions for d in devices
    )


def _added(original: list[dict[str, Any]], migrated: list[dict[str, Any]], rel: str) -> list[dict[str, Any]]:
    """The tolerations the migration adds to the template's rendered pods it changed (one list for all of them)."""
    before = [pod for doc in original for _, pod in pod_groups(doc, [])]
    after = [pod for doc in migrated for _, pod in pod_groups(doc, [])]
    found: dict[str, list[dict[str, Any]]] = {}
    for old, new in zip(before, after, strict=False):
        if old == new:
            continue
        if new.get("resourceClaims") != old.get("resourceClaims"):
            raise RewriteError(f"{rel}: the migration gives a pod asking for 0 devices a claim")
        own = old.get("tolerations") or []
        added = [t for t in new.get("tolerations") or [] if t not in own]
        found[json.dumps(added, sort_keys=True)] = added
    if len(found) != 1:
        why = "renders no pod with the device key" if not found else "gives its pods different tolerations"
        raise RewriteError(f"{rel}: the migration of this template's keys of count 0 {why}")
    return next(iter(found.values()))


def rewrite(
    rel: str,
    text: str,
    devices: list[Device],
    original: list[dict[str, Any]],
    migrated: list[dict[str, Any]],
    guards: tuple[str, ...],
    helpers: str,
) -> list[Edit]:
    """The edits of a template whose device keys all ask for 0 devices (asks_for_none): each key under `if not
    .Values.dra.enabled`, and the tolerations the migration adds in each pod's DRA branch."""
    from dramigrate.helm.idiomatic import _containers_line, _inside_with, _resources_line

    lines = text.splitlines()
    tolerations = _added(original, migrated, rel)
    on = and_all(".Values.dra.enabled", *guards)
    edits: list[Edit] = []
    pods: dict[int, list[Device]] = {}  # the pod's first `containers:` (`initContainers:`) line -> its keys
    for d in devices:
        containers = _containers_line(lines, _resources_line(lines, d, rel))
        if containers < 0:
            raise RewriteError(f"{rel}:{d.index + 1}: no `containers:` line above the device key")
        pod = parent_line(lines, containers)
        first = next((at for at in pods if parent_line(lines, at) == pod), containers)
        pods.setdefault(first, []).append(d)
    runs: list[list[Device]] = []  # adjacent keys (a request and its limit of 0) share one `if`
    for d in sorted(devices, key=lambda d: d.index):
        if runs and d.index == runs[-1][-1].index + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    for run in runs:
        off = as_arg(from_root(on) if run[0].scoped else on)
        if not _joined(edits, lines, run[0].index, run[-1].index + 1, f"(not {off})"):
            _wrap(edits, lines, run[0].index, run[-1].index + 1, f"if not {off}")
    if not tolerations:
        return edits
    for containers, own in pods.items():
        pod = parent_line(lines, containers)
        p = " " * line_indent(lines[containers])
        pod_end = block_end(lines, pod) if pod >= 0 else len(lines)
        shared = [c for c in own[0].conditions if all(c in d.conditions for d in own)]
        cond = and_all(on, *shared)
        cond = from_root(cond) if _inside_with(text, containers) else cond
        tol_text = [f"{p}  {t}" for t in _dump_list(tolerations)]
        existing = last_written_first(lines, _pod_key_lines(lines, pod, pod_end, p, "tolerations"))
        calls = [] if existing else tolerations_calls(lines, pod, pod_end, len(p), helpers)
        if existing:
            key = str(tolerations[0].get("key", "")) if len(tolerations) == 1 else ""
            keys = tuple(str(t.get("key", "")) for t in tolerations) if len(tolerations) > 1 else ()
            merged = _merge_tolerations(lines, existing[0], p, cond, tol_text, rel, key, enclosed=True, keys=keys)
            if merged is None:
                raise RewriteError(f"{rel}:{existing[0] + 1}: the pod's tolerations take no DRA toleration here")
            edits.append(merged)
        elif calls:
            edits += [joined_call(lines, at, cond, tolerations) for at in calls]
        else:
            block = [f"{p}{{{{- if {cond} }}}}", f"{p}tolerations:", *tol_text, f"{p}{{{{- end }}}}"]
            edits.append(Edit(containers, containers, block))
    return edits
