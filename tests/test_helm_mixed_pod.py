"""One pod whose init container takes its device from a named helper (pattern D) and whose main container from
`toYaml .Values.resources` (pattern B), the shape of an ollama chart: the model-pull init container's helper writes
`nvidia.com/gpu` itself from `.Values.resources.limits`. The helper rewrite takes only the helper's container, so fix
refuses the chart and names both containers with their patterns and lines (it blamed a claims mismatch before)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "llm.pull" -}}
- name: pull
  image: llm:1
  resources:
    limits:
      {{- if index .Values.resources.limits "nvidia.com/gpu" }}
      nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}
      {{- end }}
{{- end }}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-llm
spec:
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      initContainers:
        {{- include "llm.pull" . | nindent 8 }}
      containers:
        - name: serve
          image: llm:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
VALUES = """\
resources:
  limits:
    memory: 1Gi
    nvidia.com/gpu: 1
"""


def test_a_pod_with_a_helper_container_and_a_values_map_container_names_both(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "llm", files)
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.proven
    assert "container pull at" in outcome.manual and "deployment.yaml:12: pattern D" in outcome.manual
    assert "container serve at" in outcome.manual and "deployment.yaml:17: pattern B" in outcome.manual
