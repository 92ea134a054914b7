"""A pass-through chart (pattern B) whose pod writes a literal tolerations list only inside an `if` of its own, with
another block of the pod right after that `if` closes (aoe-inference's diffusers pod: the neuron toleration under
`if eq .Values.accelerator "neuron"`, then `if .Values.instanceType` around its nodeSelector). The list's end was
read past the `{{- end }}` closing the list's `if` and into the next block's `if`, so the DRA toleration meant for
the list's end was written inside the nodeSelector's block: a GPU pod given an instance type rendered the device
toleration twice (its own list's and that one), and the proof refused the chart. The list ends where its `if` does.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

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
  name: model
spec:
  selector:
    matchLabels:
      app: model
  template:
    metadata:
      labels:
        app: model
    spec:
      containers:
        - name: worker
          image: worker:1.0
          resources:
            {{- if eq .Values.accelerator "gpu" }}
            {{- toYaml .Values.resources.gpu | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.resources.neuron | nindent 12 }}
            {{- end }}
      {{- if eq .Values.accelerator "neuron" }}
      tolerations:
        - key: aws.amazon.com/neuron
          operator: Exists
          effect: NoSchedule
      {{- end }}
      {{- if .Values.instanceType }}
      nodeSelector:
        node.kubernetes.io/instance-type: {{ .Values.instanceType }}
      {{- end }}
"""
VALUES = """\
accelerator: gpu
instanceType: ""
resources:
  gpu:
    limits:
      nvidia.com/gpu: 1
  neuron:
    limits:
      aws.amazon.com/neuron: 1
"""
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NEURON = {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}


def _pod(chart: Path, *files: Path) -> dict[str, Any]:
    (pod,) = [
        doc["spec"]["template"]["spec"]
        for m in render_chart(chart, RenderOptions(values_files=files))
        if (doc := yaml.safe_load(m.text)) and doc["kind"] == "Deployment"
    ]
    return pod


def test_a_gpu_pod_with_a_block_after_its_own_guarded_list_tolerates_the_taint_once(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/model.yaml": DEPLOYMENT})
    sized = chart / "values-sized.yaml"
    sized.write_text("instanceType: g6e.2xlarge\n")
    neuron = chart / "values-neuron.yaml"
    neuron.write_text("accelerator: neuron\ninstanceType: inf2.xlarge\n")

    fix_chart(chart, values=(sized, neuron))  # was manual: the sized GPU pod tolerated nvidia.com/gpu twice

    dra = chart / "values-dra.yaml"
    pod = _pod(chart, dra, sized, chart / "values-sized-dra.yaml")
    assert pod["tolerations"] == [GPU]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "g6e.2xlarge"}
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
    assert _pod(chart, dra)["tolerations"] == [GPU]
    assert _pod(chart, dra, neuron, chart / "values-neuron-dra.yaml")["tolerations"] == [NEURON]
    assert "tolerations" not in _pod(chart, sized)  # without the DRA values, as the chart was
