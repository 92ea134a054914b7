"""A pod whose tolerations are an item's own list falling back to a template's, written without parentheses:
`{{- with $v.tolerations | default $base.tolerations }}` (a Deployment per item of a values map, each item overriding
the template's pod options, and a warm-up Job per item that renders the same list, so the DRA toleration goes under a
key of its own that the Deployment's list joins). The pass-through joined only the parenthesized form, `with (A |
default B)`, and beside any other form wrote a second `tolerations:` key, rendered wherever the user's item sets its
list: fix refused the chart (the key written twice). Both forms are one pipeline in Go templates, and now both join
the DRA toleration to the pod's one list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import assert_second_fix_quiet, chart_with, fix_chart, with_original

from dramigrate.helm.render import RenderOptions, render_chart

DEPLOYMENTS = """\
{{- $base := .Values.template }}
{{- range $k, $v := .Values.deployments }}
{{- $resources := merge (dict) ($v.resources | default dict) ($base.resources | default dict) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $k | kebabcase }}
spec:
  selector:
    matchLabels: {app: {{ $k | kebabcase }}}
  template:
    metadata:
      labels: {app: {{ $k | kebabcase }}}
    spec:
      containers:
        - name: worker
          image: worker
          resources:
            {{- toYaml $resources | nindent 12 }}
      {{- with $v.tolerations | default $base.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
"""
# a warm-up Job per item, which takes no resources map and renders the item's tolerations too
WARMUP = """\
{{- $base := .Values.template }}
{{- range $k, $v := .Values.deployments }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $k | kebabcase }}-warmup
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: warmup
      {{- with $v.tolerations | default $base.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
"""
VALUES = "deployments:\n  main: {}\ntemplate:\n  resources: {}\n  tolerations: []\n"
GPU = """\
deployments:
  gpu:
    resources:
      limits:
        nvidia.com/gpu: 1
    tolerations:
      - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}
"""


def _pods(chart: Path, files: tuple[Path, ...]) -> dict[str, Any]:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


def test_an_items_list_defaulting_without_parentheses_takes_the_dra_toleration(tmp_path: Path) -> None:
    chart = chart_with(
        tmp_path,
        "ops",
        {"templates/deployments.yaml": DEPLOYMENTS, "templates/warmup.yaml": WARMUP, "values.yaml": VALUES},
    )
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    before = _pods(chart, (gpu,))

    fix_chart(chart, values=(gpu,))  # was: refused, `tolerations:` written twice in one mapping

    assert _pods(chart, (gpu,)) == before
    pod = _pods(chart, with_original(tmp_path / "gpu-dra.yaml"))["gpu"]
    assert pod["resourceClaims"] and "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    assert pod["tolerations"] == [
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_a_second_fix_takes_the_joined_list_as_joined(tmp_path: Path) -> None:
    """No other pod renders the list: a second fix read the line the first joined, `with concat (($v.tolerations |
    default $base.tolerations) | default list) ...`, as no list, put the DRA toleration under `tolerations` instead of
    `resourceTolerations`, and refused: "gpu-dra.yaml exists already", manual work, exit 1."""
    chart = chart_with(tmp_path, "ops", {"templates/deployments.yaml": DEPLOYMENTS, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    fix_chart(chart, values=(gpu,))
    assert "resourceTolerations:" in (tmp_path / "gpu-dra.yaml").read_text()
    assert_second_fix_quiet(chart, "-f", str(gpu))
