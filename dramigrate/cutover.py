"""Cutover guidance (issue 9 item 6): the order of operations for the classes a run uses, and autoscalers that may
leave migrated pods Pending.

A node cannot serve the same devices from a device plugin and a DRA driver (the NVIDIA DRA driver chart refuses
it: "this DRA driver cannot be deployed alongside the standard GPU device plugin on the same node"), so a pod
migrated to claims schedules only on converted nodes and a pod not yet migrated only on device-plugin nodes.
Once per run, the cutover plan gives the order: in the report's footer (text, Markdown) and as the JSON report's
`cutover` object, not as a finding, because it is about the rollout, not about a line (a SARIF result or an
annotation on whichever request came first would be noise a gate has to suppress). Each migrated workload gets a
warning `autoscaler-claims`, at its own line, when a node autoscaler that is known not to provision for claim-only
pods is in the paths.
The autoscaler facts are data: rules/autoscalers.yaml.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import Finding
from dramigrate.rules import RuleSet

DOCS = "docs/migration.md#rolling-out"
MAX_SCAN_BYTES = 8 * 1024 * 1024  # an autoscaler manifest is small; do not parse huge files twice


@dataclass(frozen=True)
class Autoscaler:
    name: str
    problem: str
    objects: tuple[tuple[str, str], ...] = ()  # (API group, kind)
    images: tuple[str, ...] = ()  # container image substrings
    enabled_by: str = ""  # an argument that makes it handle claims (then no warning)


@dataclass(frozen=True)
class Seen:
    autoscaler: Autoscaler
    file: str
    line: int
    what: str  # e.g. NodePool/default


@cache
def autoscalers() -> tuple[Autoscaler, ...]:
    data = yaml.safe_load(files("dramigrate.rules_data").joinpath("autoscalers.yaml").read_text(encoding="utf-8"))
    return tuple(
        Autoscaler(
            name=str(a["name"]),
            problem=" ".join(str(a["problem"]).split()),
            objects=tuple((str(o["group"]), str(o["kind"])) for o in a.get("objects") or []),
            images=tuple(str(i) for i in a.get("images") or []),
            enabled_by=str(a.get("enabledBy") or ""),
        )
        for a in data["autoscalers"]
    )


def needles() -> list[bytes]:
    """The byte strings a file holding an autoscaler holds (its object groups and images)."""
    out: list[bytes] = []
    for a in autoscalers():
        out.extend(g.encode() for g, _ in a.objects)
        out.extend(i.encode() for i in a.images)
    return out


def _containers(node: Any) -> Iterable[dict[str, Any]]:
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            if isinstance(cur.get("image"), str):
                yield cur
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)


def _seen_in(text: str, path: str) -> list[Seen]:
    out: list[Seen] = []
    try:
        nodes = list(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        docs = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError:
        return out  # the pipeline reports bad YAML on its own
    for node, doc in zip(nodes, docs, strict=False):
        if not isinstance(doc, dict):
            continue
        line = (node.start_mark.line + 1) if node is not None else 1
        group = str(doc.get("apiVersion") or "").rpartition("/")[0]
        kind = str(doc.get("kind") or "")
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        what = f"{kind}/{meta.get('name') or '?'}"
        for a in autoscalers():
            if (group, kind) in a.objects:
                out.append(Seen(a, path, line, what))
                continue
            for c in _containers(doc):
                if not any(i in str(c["image"]) for i in a.images):
                    continue
                args = " ".join(str(x) for key in ("command", "args") for x in (c.get(key) or []))
                if a.enabled_by and a.enabled_by in args:
                    continue  # told to handle claims
                out.append(Seen(a, path, line, what))
                break
    return out


def seen_autoscalers(paths: Iterable[str], stdin: bytes | None = None, hits: set[str] | None = None) -> list[Seen]:
    """Autoscalers in the given files (one quick byte check each, YAML parsed only where it hits). hits: a superset
    of the files holding a needle (the grep pre-filter's, on a large tree): only those are read."""
    found = needles()
    out: list[Seen] = []
    sources: list[tuple[str, bytes]] = []
    for name in paths if hits is None else [p for p in paths if p in hits]:
        p = Path(name)
        try:
            if not p.is_file() or p.stat().st_size > MAX_SCAN_BYTES:
                continue
            raw = p.read_bytes()
        except OSError:
            continue
        sources.append((name, raw))
    if stdin is not None:
        sources.append(("-", stdin))
    for name, raw in sources:
        if any(n in raw for n in found):
            out.extend(_seen_in(raw.decode("utf-8", "replace"), name))
    return out


@dataclass(frozen=True)
class Plan:
    """The run's cutover plan: the drivers and DeviceClasses its claims need, and the order of operations."""

    drivers: tuple[str, ...]
    device_classes: tuple[str, ...]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "drivers": list(self.drivers),
            "deviceClasses": list(self.device_classes),
            "plan": self.message,
            "docs": DOCS,
        }


def _migrated(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.rule == "legacy-device-request" and f.fixable and f.device_class]


def cutover_plan(findings: list[Finding], rules: RuleSet) -> Plan | None:
    """The plan for the classes the run migrates to, or None when it migrates nothing."""
    classes = sorted({f.device_class for f in _migrated(findings)})
    if not classes:
        return None
    drivers = tuple(sorted({rules.classes[c].driver for c in classes if c in rules.classes}))
    return Plan(drivers, tuple(classes), plan_message(classes, rules))


def autoscaler_findings(findings: list[Finding], seen: list[Seen]) -> list[Finding]:
    """`autoscaler-claims` once per migrated workload, at its first migrated request, when an autoscaler is seen."""
    if not seen:
        return []
    names = "; ".join(f"{s.autoscaler.name} ({s.what} at {s.file}:{s.line}): {s.autoscaler.problem}" for s in seen)
    workloads: dict[tuple[str, str, str, str], Finding] = {}
    for f in sorted(_migrated(findings), key=Finding.sort_key):
        workloads.setdefault((f.file, f.kind, f.namespace, f.name), f)
    out: list[Finding] = []
    for f in workloads.values():
        w = f.recast(
            "autoscaler-claims",
            f"once migrated, this workload's pods ask for devices only through claims, and an autoscaler in the "
            f"paths may not add nodes for them, so they stay Pending when no node is free: {names}. Keep "
            "--strategy extended-resource for workloads that depend on scale-up, or enable DRA in the autoscaler "
            f"first ({DOCS})",
        )
        w.container = w.resource = w.device_class = ""
        out.append(w)
    return out


def plan_message(classes: list[str], rules: RuleSet) -> str:
    drivers = sorted({rules.classes[c].driver for c in classes if c in rules.classes})
    shipped = [
        f"{c} ({rules.classes[c].shipped_by})"
        if c in rules.classes and rules.classes[c].shipped_by
        else f"{c} (from --classes-file: no driver chart ships it)"
        for c in classes
    ]
    resources = sorted({r.match for r in rules.resources if r.match and r.device_class in classes})
    er = ", ".join(resources) or "the device-plugin resources"
    return (
        "rolling out the claims this run migrates to: "
        f"(1) on each node to convert, remove the device plugin for these devices, then install the DRA driver "
        f"({', '.join(drivers)}): one node cannot serve the same devices from both; "
        f"(2) make sure the DeviceClasses exist: {', '.join(shipped)}; "
        "(3) migrated pods schedule only on converted nodes and pods not yet migrated only on device-plugin "
        "nodes: convert each node pool before or with the workloads that run on it, and pin migrated pods to "
        "converted nodes (a node label) while the fleet is mixed; "
        f"(4) for a fleet that stays mixed, --strategy extended-resource is the safer path: pods keep asking for "
        f"{er} and DeviceClasses with extendedResourceName let converted nodes serve them too (Kubernetes 1.34+, "
        f"on by default from 1.36) ({DOCS})"
    )
