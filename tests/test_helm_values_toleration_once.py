"""A literal device key with a values count (pattern A) in a pod whose tolerations come from a values list: users of
GPU nodes often tolerate the device plugin's taint in that list themselves. The migration adds no toleration then,
so the DRA branch must not either (a second, identical one): a chart shipping such a values file was left manual.
The check is one line of the template, the DRA toleration under `not` its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: "llm:1.0"
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
GPU_NODES = """\
tolerations:
  - key: spot
    operator: Exists
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
"""


def _tolerations(chart: Path, values: tuple[Path, ...]) -> list[Any]:
    options = RenderOptions(values_files=values, set_values=("dra.enabled=true",))
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, options)]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
    return [t["key"] for t in pod["tolerations"]]


def test_the_dra_toleration_is_not_written_twice_where_the_values_tolerate_the_taint(tmp_path: Path) -> None:
    files = {"values.yaml": "gpus: 1\ntolerations: []\n", "values-gpu-nodes.yaml": GPU_NODES}
    chart = chart_with(tmp_path, "app", {**files, "templates/app.yaml": DEPLOYMENT})

    fix_chart(chart)  # the proof renders the shipped values-gpu-nodes.yaml too: it was left manual

    assert _tolerations(chart, (chart / "values-gpu-nodes.yaml",)) == ["spot", "nvidia.com/gpu"]
    assert _tolerations(chart, ()) == ["nvidia.com/gpu"]
    spot = tmp_path / "spot.yaml"
    spot.write_text("tolerations:\n  - key: spot\n    operator: Exists\n")
    assert _tolerations(chart, (spot,)) == ["spot", "nvidia.com/gpu"]


def test_a_users_values_that_tolerate_the_taint_still_give_other_values_the_toleration(tmp_path: Path) -> None:
    """The rewrite is read from the user's values, where the migration adds no toleration: other values need one."""
    chart = chart_with(tmp_path, "app", {"values.yaml": "gpus: 1\ntolerations: []\n", "templates/app.yaml": DEPLOYMENT})
    mine = tmp_path / "gpu-nodes.yaml"
    mine.write_text(GPU_NODES)

    fix_chart(chart, values=(mine,))  # the proof of the chart's defaults found no toleration: it was left manual

    assert _tolerations(chart, (mine,)) == ["spot", "nvidia.com/gpu"]
    assert _tolerations(chart, ()) == ["nvidia.com/gpu"]


def test_a_pod_that_writes_its_own_gpu_toleration_behind_a_switch_gets_it_with_the_switch_off(tmp_path: Path) -> None:
    """The chart tolerates the taint itself under `if .Values.gpuToleration.enabled`: with it on the migration adds
    none, with it off (the proof flips it) the pod needs the DRA toleration, which the rewrite left out."""
    own = DEPLOYMENT.replace(
        "{{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n",
        "{{- if .Values.gpuToleration.enabled }}\n      tolerations:\n"
        "        - key: {{ .Values.gpuToleration.key | quote }}\n          operator: Exists\n"
        "          effect: NoSchedule\n",
    )
    values = 'gpus: 1\ngpuToleration:\n  enabled: true\n  key: "nvidia.com/gpu"\n'
    chart = chart_with(tmp_path, "app", {"values.yaml": values, "templates/app.yaml": own})
    off = tmp_path / "off.yaml"
    off.write_text("gpuToleration:\n  enabled: false\n")

    fix_chart(chart)

    assert _tolerations(chart, ()) == ["nvidia.com/gpu"]
    assert _tolerations(chart, (off,)) == ["nvidia.com/gpu"]
