"""Pattern-E keys the rewrite leaves as the chart writes them: a key whose name is a values key set to a resource the
manifest migration leaves on its device plugin. Azure's AI-infrastructure charts write
`{{ .Values.gpuResource }}: {{ .Values.gpusPerNode }}` beside `{{ .Values.rdmaResource }}: {{ .Values.gpusPerNode }}`,
the second `rdma/ib`, a shared RDMA HCA that rules/networking.yaml reports and never moves to a claim (DESIGN.md:
shared RDMA HCAs are not rewritten by default). Like a cpu key beside the GPU's, that key stays as written with the DRA
switch on; the key naming the GPU is the rewrite's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dramigrate.helm.chartvalues import chart_defaults
from dramigrate.helm.values import get_path
from dramigrate.rules import RuleSet

# a values key and the literal `default` the template gives its name (None without one)
NameKey = tuple[tuple[str, ...], "str | None"]


def template_values(root: Path, rel: str) -> dict[str, Any]:
    """The defaults a template of the chart at `root` reads its `.Values` from: the chart's, or for a template under
    `charts/<dir>/` that subchart's own (the parent's overrides of it are the proof's to check)."""
    parts = Path(rel).parts
    chart = root
    while len(parts) > 2 and parts[0] == "charts":
        chart, parts = chart / "charts" / parts[1], parts[2:]
    return chart_defaults(chart)


def kept_names(keys: Iterable[NameKey], values: dict[str, Any], rules: RuleSet) -> dict[tuple[str, ...], str]:
    """The values keys among `keys` whose value (or the template's default for it) names a resource the packs leave
    on its device plugin (report only: a shared RDMA HCA, a time-sliced GPU; or no pack's), each with that resource."""
    out = {}
    for path, default in keys:
        value = get_path(values, path)
        value = default if value in (None, "") else value
        if not isinstance(value, str) or "/" not in value:
            continue
        match = rules.lookup(value)
        if match is None or match.rule.report_only:
            out[path] = value
    return out
