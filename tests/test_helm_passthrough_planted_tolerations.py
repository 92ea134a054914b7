"""The pass-through rewrite (pattern B) of a chart whose one resources map is taken by two workload templates, one
chosen by a values switch (`framework`): one pod renders a tolerations list beside the map (`server.tolerations`,
which values.yaml does not declare; only a shipped values file sets it), the other renders no tolerations at all.
The toleration the migration adds goes under its own key (`server.resourceTolerations`) for both pods, in every
values file's DRA variant; the variant of a file whose pod renders no list put it in `server.tolerations`, which
that pod does not read, and the proof failed ("the rewritten chart has none"). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart


def _workload(framework: str, tolerations: str) -> str:
    return f"""\
{{{{- if eq .Values.framework "{framework}" }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {framework}
spec:
  selector:
    matchLabels: {{app: {framework}}}
  template:
    metadata:
      labels: {{app: {framework}}}
    spec:
{tolerations}      containers:
        - name: {framework}
          image: {framework}:1
          resources:
            {{{{- toYaml .Values.server.resources | nindent 12 }}}}
{{{{- end }}}}
"""


TOLERATED = """\
      {{- with .Values.server.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
VALUES = "framework: plain\nserver:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
SHIPPED = """\
framework: tolerated
server:
  resources:
    limits:
      nvidia.com/gpu: 4
  tolerations:
    - {key: dedicated, operator: Exists}
"""
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _pod(chart: Path, *files: Path) -> dict[str, Any]:
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, RenderOptions(values_files=files))]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    return pod


def test_a_pod_without_a_tolerations_list_gets_the_toleration_beside_one_that_renders_it(tmp_path: Path) -> None:
    """Both pods tolerate the GPU taint with the DRA values (the one with its list keeps its own toleration too), and
    neither renders a toleration with the device-plugin values."""
    files = {
        "values.yaml": VALUES,
        "tolerated.yaml": SHIPPED,
        "templates/plain.yaml": _workload("plain", ""),
        "templates/tolerated.yaml": _workload("tolerated", TOLERATED),
    }
    chart = chart_with(tmp_path, "app", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("server:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    fix_chart(chart, values=(gpu,))  # was: manual, "the rewritten chart renders differently ... has none"
    plain = _pod(chart, gpu, tmp_path / "gpu-dra.yaml")
    assert plain["tolerations"] == [GPU_TOLERATION] and plain["resourceClaims"]
    shipped = chart / "tolerated.yaml"
    tolerated = _pod(chart, shipped, chart / "tolerated-dra.yaml")
    assert {"key": "dedicated", "operator": "Exists"} in tolerated["tolerations"]
    assert GPU_TOLERATION in tolerated["tolerations"] and tolerated["resourceClaims"]
    assert "tolerations" not in _pod(chart, gpu)
    assert "nvidia.com/gpu" not in str(plain["containers"][0]["resources"].get("limits"))
