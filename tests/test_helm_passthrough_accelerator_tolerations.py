"""A pass-through chart (pattern B) that picks a resources map by accelerator and writes the tolerations of one
accelerator itself (aioneks' vLLM chart: `resources.gpu` or `resources.neuron` by `if eq .Values.accelerator`, and a
literal `aws.amazon.com/neuron` toleration under `if eq .Values.accelerator "neuron"`). The defaults' values-dra.yaml
tolerates nvidia.com/gpu through the pod's new values list; a neuron values file's DRA variant, given after it,
inherited that list, and the neuron pod rendered `tolerations:` twice (fix left the chart manual). The variant now
sets the list again to its own.

With another block of the pod right after the neuron `if` closes (aoe-inference's diffusers pod: `if
.Values.instanceType` around its nodeSelector), the literal list's end was read past that `{{- end }}` and into the
next block's `if`, so the DRA toleration meant for the list's end was written inside the nodeSelector's block too: a
GPU pod given an instance type (a values file that sets only that) tolerated nvidia.com/gpu twice and the proof
refused the chart. The list ends where its `if` does."""

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
        - name: vllm
          image: vllm:1.0
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
"""
VALUES = """\
accelerator: gpu
resources:
  gpu:
    limits:
      nvidia.com/gpu: 1
  neuron:
    limits:
      aws.amazon.com/neuron: 1
"""
SIZED = """\
      {{- if .Values.instanceType }}
      nodeSelector:
        node.kubernetes.io/instance-type: {{ .Values.instanceType }}
      {{- end }}
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


def test_a_neuron_values_file_does_not_take_the_gpu_toleration_of_values_dra(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/model.yaml": DEPLOYMENT})
    neuron = chart / "values-neuron.yaml"
    neuron.write_text("accelerator: neuron\n")

    fix_chart(chart, values=(neuron,))  # was manual: the DRA render wrote `tolerations:` twice

    pod = _pod(chart, chart / "values-dra.yaml", neuron, chart / "values-neuron-dra.yaml")
    assert pod["tolerations"] == [NEURON]
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]


def test_a_gpu_pod_with_a_block_after_the_neuron_list_tolerates_the_gpu_taint_once(tmp_path: Path) -> None:
    chart = chart_with(
        tmp_path, "app", {"values.yaml": f'{VALUES}instanceType: ""\n', "templates/model.yaml": DEPLOYMENT + SIZED}
    )
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
