"""The pass-through rewrite (pattern B) of a resources map keyed by accelerator (`resources: {gpu: {...}, neuron:
{...}}`, one picked by the template's `if` on the accelerator) whose device count a helper reads itself
(`mul (index .Values.server.resources.neuron.limits "aws.amazon.com/neuron") 2` for a tensor-parallel argument).
The DRA values drop that key, so the read now takes the count from `deviceCounts` beside `resources` when the DRA
values set it, as it already did for a map not keyed; it used to refuse ("reads ... itself, which the DRA values
file removes, in a form fix does not rewrite"). Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          args: ["--shards", "{{ include "app.shards" . }}"]
          resources:
            {{- if eq .Values.accelerator "neuron" }}
            {{- toYaml .Values.server.resources.neuron | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.server.resources.gpu | nindent 12 }}
            {{- end }}
""",
)
HELPERS = """\
{{- define "app.shards" -}}
{{- if eq .Values.accelerator "neuron" }}
{{- mul (index .Values.server.resources.neuron.limits "aws.amazon.com/neuron") 2 }}
{{- else }}
{{- index .Values.server.resources.gpu.limits "nvidia.com/gpu" }}
{{- end }}
{{- end }}
"""
VALUES = """\
accelerator: gpu
server:
  resources:
    gpu:
      limits:
        nvidia.com/gpu: 1
    neuron:
      limits:
        aws.amazon.com/neuron: 1
"""
NEURON = "accelerator: neuron\nserver:\n  resources:\n    neuron:\n      limits:\n        aws.amazon.com/neuron: 2\n"


def _server(chart: Path, *files: Path) -> dict[str, Any]:
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, RenderOptions(values_files=files))]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    return pod["containers"][0]


def test_a_helper_reading_the_count_of_a_keyed_map_keeps_its_argument(tmp_path: Path) -> None:
    """With the DRA values the container asks through its claim and the helper still renders twice the neuron
    count; with the device-plugin values the chart renders as before."""
    files = {"values.yaml": VALUES, "templates/server.yaml": SERVER, "templates/_helpers.tpl": HELPERS}
    chart = chart_with(tmp_path, "app", files)
    neuron = tmp_path / "neuron.yaml"
    neuron.write_text(NEURON)
    fix_chart(chart, values=(neuron,))
    before = _server(chart, neuron)
    assert before["args"] == ["--shards", "4"] and before["resources"]["limits"] == {"aws.amazon.com/neuron": 2}
    after = _server(chart, neuron, tmp_path / "neuron-dra.yaml")
    assert after["args"] == ["--shards", "4"]
    assert after["resources"]["claims"] and "aws.amazon.com/neuron" not in (after["resources"].get("limits") or {})
