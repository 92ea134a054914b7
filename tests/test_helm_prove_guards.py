"""The proof renders each branch of the `if`s around a device request, not only the one the chart's values pick: a
template with a vLLM Deployment under `if ne .Values.backend "ollama"` and an ollama one in its `else` was proven on
the vLLM branch alone, and the ollama branch went without the device plugin's toleration (the vLLM pod writes its
own, so the migration of the rendered branch adds none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

POD = """\
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
    spec:{tolerations}
      containers:
        - name: {name}
          image: {name}:1.0
          resources:
            limits:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
"""
OWN_TOLERATION = """
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule"""
TEMPLATE = (
    '{{- if ne .Values.backend "ollama" }}\n'
    + POD.format(name="vllm", tolerations=OWN_TOLERATION)
    + "{{- else }}\n"
    + POD.format(name="ollama", tolerations="")
    + "{{- end }}\n"
)


def _pod(chart: Path, *sets: str) -> dict[str, Any]:
    options = RenderOptions(set_values=("dra.enabled=true", *sets))
    (doc,) = [d for m in render_chart(chart, options) if (d := yaml.safe_load(m.text)) and d["kind"] == "Deployment"]
    return doc["spec"]["template"]["spec"]


def test_the_branch_the_values_do_not_pick_is_proven_and_tolerates_the_taint(tmp_path: Path) -> None:
    files = {"values.yaml": "backend: vllm\ngpus: 1\n", "templates/model.yaml": TEMPLATE}
    chart = chart_with(tmp_path, "app", files)

    outcome = fix_chart(chart)

    assert 'backend changed to "ollama"' in outcome.report()
    for sets in ((), ("backend=ollama",)):
        pod = _pod(chart, *sets)
        assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"], sets
        assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], sets
