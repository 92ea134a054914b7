"""A container whose resources are a values map merged with a map of the template's own (`toYaml (merge (deepCopy
.Values.resources) $base)`, `$base` parsed from a helper) is not the map passed through as is, and fix refuses it:
the refusal said only "Deployment/x: the values map resources is not passed through as is", with no line to go to
and no word of why. It now names the template line that writes the map and what the template does to it."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
DEFAULTS = """\
{{- define "app.defaultResources" -}}
requests:
  cpu: 500m
{{- end -}}
"""
TEMPLATE = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          {{- $base := include "app.defaultResources" . | fromYaml }}
          resources:
            {{- toYaml (merge (deepCopy .Values.resources) $base) | nindent 12 }}
""",
)


def test_a_merged_map_is_refused_at_its_template_line(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_defaults.tpl": DEFAULTS, "templates/server.yaml": TEMPLATE}
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    line = next(n for n, text in enumerate(TEMPLATE.splitlines(), 1) if text.strip() == "resources:")
    assert f"templates/server.yaml:{line}:" in outcome.manual
    assert "the template merges another map into it" in outcome.manual
