"""A GPU container that comes whole from a values list (`containers:` then `{{- toYaml .Values.containers | nindent 8
}}`) is not a shape the idiomatic rewrites take: a DRA values file would repeat the whole list. The refusal said "no
line of a helper in this chart writes the device key" (the chart has no such helper); it now names the values list,
its template line, and the shape that is taken."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "containers:\n  - name: main\n    image: main:1\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
TEMPLATE = deployment(
    '{{ include "app.name" . }}',
    """\
      containers:
        {{- toYaml .Values.containers | nindent 8 }}
""",
)
HELPERS = '{{- define "app.name" -}}{{ .Release.Name }}-app{{- end -}}\n'


def test_containers_from_a_values_list_are_refused_with_the_list_and_its_line(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/app.yaml": TEMPLATE}
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    line = next(n for n, text in enumerate(TEMPLATE.splitlines(), 1) if "toYaml .Values.containers" in text)
    assert f"the containers come whole from the values list `.Values.containers` (line {line})" in outcome.manual
    assert "no line of a helper" not in outcome.manual
