"""The pass-through rewrite (patterns B and C) where the workloads that take the resources maps name their namespace
with the same values expression spaced differently (`{{ .Values.ns }}` in one template, `{{.Values.ns}}` in
another), as charts edited by several hands do. The spacing inside an action's delimiters means nothing to Helm, so
the claim-template file follows that one namespace; the rewrite used to refuse ("the workloads that take the
resources maps name different namespaces"). Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart


def _workload(name: str, namespace: str, resources: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}-{name}
  namespace: {namespace}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: {name}:1
          resources:
            {{{{- toYaml .Values.{resources} | nindent 12 }}}}
"""


VALUES = "ns: serving\nserver:\n  resources: {}\nworker:\n  resources: {}\n"
GPU = "server:\n  resources:\n    limits: {nvidia.com/gpu: 1}\nworker:\n  resources:\n    limits: {nvidia.com/gpu: 2}\n"


def _chart(tmp_path: Path, worker_namespace: str) -> Path:
    files = {
        "values.yaml": VALUES,
        "templates/server.yaml": _workload("server", "{{ .Values.ns }}", "server.resources"),
        "templates/worker.yaml": _workload("worker", worker_namespace, "worker.resources"),
    }
    return chart_with(tmp_path, "serving", files)


def test_one_namespace_spelled_with_other_spacing_gets_the_rewrite(tmp_path: Path) -> None:
    """Both workloads' claim templates are rendered in the namespace the workloads name, and each pod's claim
    asks for the count its map asked for (was: manual, "name different namespaces")."""
    chart = _chart(tmp_path, "{{.Values.ns}}")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    fix_chart(chart, values=(gpu,))
    files = (gpu, gpu.with_name("gpu-dra.yaml"))
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert templates and {d["metadata"]["namespace"] for d in templates} == {"serving"}
    counts = sorted(d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for d in templates)
    assert counts == [1, 2]
    for d in docs:
        if d["kind"] == "Deployment":
            assert "nvidia.com/gpu" not in (d["spec"]["template"]["spec"]["containers"][0]["resources"] or {}).get(
                "limits", {}
            )
