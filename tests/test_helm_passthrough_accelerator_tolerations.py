"""A pass-through chart (pattern B) that picks a resources map by accelerator and writes the tolerations of one
accelerator itself (aioneks' vLLM chart: `resources.gpu` or `resources.neuron` by `if eq .Values.accelerator`, and a
literal `aws.amazon.com/neuron` toleration under `if eq .Values.accelerator "neuron"`). The defaults' values-dra.yaml
tolerates nvidia.com/gpu through the pod's new values list; a neuron values file's DRA variant, given after it,
inherited that list, and the neuron pod rendered `tolerations:` twice (fix left the chart manual). The variant now
sets the list again to its own."""

from __future__ import annotations

from pathlib import Path

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


def test_a_neuron_values_file_does_not_take_the_gpu_toleration_of_values_dra(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/model.yaml": DEPLOYMENT})
    neuron = chart / "values-neuron.yaml"
    neuron.write_text("accelerator: neuron\n")

    fix_chart(chart, values=(neuron,))  # was manual: the DRA render wrote `tolerations:` twice

    files = (chart / "values-dra.yaml", neuron, chart / "values-neuron-dra.yaml")
    (pod,) = [
        doc["spec"]["template"]["spec"]
        for m in render_chart(chart, RenderOptions(values_files=files))
        if (doc := yaml.safe_load(m.text)) and doc["kind"] == "Deployment"
    ]
    assert pod["tolerations"] == [{"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
