"""Device requests a chart renders only on a cluster: a literal device key inside a block whose condition reads what
`helm template` cannot know (`lookup`, empty outside a cluster; `.Capabilities`, the API versions and Kubernetes
version of the cluster; `.Release.IsUpgrade`, `.Release.Revision`). dramigrate renders the chart as `helm template`
does, so such a branch is never rendered and the request had no finding: lint exited 0 on a chart whose
`helm install` gives a pod a GPU (`{{- if lookup "v1" "Namespace" "" "kube-system" }}` holds on every cluster).
Each such key no rendered finding covers is a legacy-device-request of its own, at its template line, that fix
does not migrate."""

from __future__ import annotations

import re
from pathlib import Path

from dramigrate.findings import RULES, Finding
from dramigrate.helm.helper import Block, blocks, enclosing
from dramigrate.helm.patterns import _LITERAL_KEY
from dramigrate.rules import RuleSet

_CLUSTER = re.compile(r"\blookup\b|\.Capabilities\b|\.Release\.(?:IsUpgrade|IsInstall|Revision)\b")
_MAX_TEMPLATE = 1 << 20


def cluster_gated(root: Path, display: str, findings: list[Finding], rules: RuleSet) -> list[Finding]:
    """A finding for each literal device key of the chart's (and its unpacked subcharts') template files that sits
    in a block whose condition reads the cluster, when no finding falls inside that block."""
    out = []
    for path in sorted(root.glob("templates/**/*")) + sorted(root.glob("charts/*/templates/**/*")):
        if path.name.startswith("_") or path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_TEMPLATE:
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if not _CLUSTER.search(text):
            continue
        lines = text.splitlines()
        all_blocks = blocks(text)
        covered = [f.line for f in findings for where in (f, *f.related) if where.file == f"{display}/{rel}"]
        for index, line in enumerate(lines):
            key = _LITERAL_KEY.match(line)
            if not key or not rules.is_device_candidate(key.group(2)) or rules.lookup(key.group(2)) is None:
                continue
            gate = next((b for b in enclosing(all_blocks, index) if _CLUSTER.search(_conditions(b))), None)
            if gate is None or any(gate.start < at - 1 < gate.end for at in covered):
                continue
            reads = _CLUSTER.findall(_conditions(gate))[0]
            out.append(
                Finding(
                    "legacy-device-request",
                    RULES["legacy-device-request"][0],
                    f"{key.group(2)} is a device-plugin request in a branch that renders only on a cluster: its "
                    f"condition (line {gate.start + 1}) reads `{reads}`, which `helm template` and dramigrate cannot "
                    "know, so no render here holds it and fix leaves it as it is; migrate it by hand, or make the "
                    "branch depend on values",
                    f"{display}/{rel}",
                    index + 1,
                    line.index(key.group(2)) + 1,
                    resource=key.group(2),
                )
            )
    return out


def _conditions(block: Block) -> str:
    """The condition of a block and of each `else if` of its chain."""
    return " ".join([block.cond, *(c or "" for _, c in block.branches)])
