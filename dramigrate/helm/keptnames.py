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
from dramigrate.helm.poddelta import kind_singles, pod_containers, pod_groups
from dramigrate.helm.values import display, get_path
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


def kept_names(
    keys: Iterable[NameKey], values: dict[str, Any], rules: RuleSet, rendered: set[str]
) -> dict[tuple[str, ...], str]:
    """The values keys among `keys` whose value (or the template's default for it) names a resource the packs leave
    on its device plugin, each with that resource: a report-only one (a shared RDMA HCA, a time-sliced GPU), or one no
    pack knows that the render asks for (`rendered`, every resource the template's containers ask for): a placeholder
    default that the user's values replace with a GPU is the GPU's key."""
    out = {}
    for path, default in keys:
        value = get_path(values, path)
        value = default if value in (None, "") else value
        if not isinstance(value, str) or "/" not in value:
            continue
        match = rules.lookup(value)
        if (match is None and value in rendered) or (match is not None and match.rule.report_only):
            out[path] = value
    return out


def several_named(keys: Iterable[NameKey], values: dict[str, Any], rules: RuleSet) -> str:
    """Why a template whose device keys are each named by a values key, naming several device kinds the migration
    moves (a GPU and an EFA NIC), is manual work, and what to change; "" for other templates."""
    named: dict[str, tuple[str, ...]] = {}
    for path, default in keys:
        value = get_path(values, path)
        value = default if value in (None, "") else value
        match = rules.lookup(value) if isinstance(value, str) else None
        if match is not None and not match.rule.report_only:
            named.setdefault(str(value), path)
    if len(named) < 2:
        return ""
    listed = ", ".join(f"{display(path)} ({resource})" for resource, path in named.items())
    literal = ", ".join(f"`{resource}: <count>`" for resource in named)
    return (
        f"the device keys are named by the values keys {listed}: {len(named)} device kinds the migration moves to "
        "claims, and the rewrite takes one resource name from values alone, several device kinds in one pod as "
        f"literal keys; write these keys literally ({literal}) and fix rewrites them"
    )


def asked_for(docs: list[dict[str, Any]]) -> set[str]:
    """Every resource the containers of these rendered objects ask for in their limits or requests."""
    out = set()
    for doc in docs:
        for _, pod in pod_groups(doc, []):
            for c in pod_containers(pod, kind_singles(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))):
                res = c.get("resources")
                for section in ("limits", "requests"):
                    own = res.get(section) if isinstance(res, dict) else None
                    out |= {str(k) for k in own} if isinstance(own, dict) else set()
    return out
