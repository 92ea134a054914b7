"""A device key whose name is a template variable the chart sets itself, to a literal and then, when an item of the
`range` around the pod says so, to that item's device type (`$gpuName := "nvidia.com/gpu"`, `$gpuName =
$svc.resources.limits.gpuType`): one name per item, which no idiomatic rewrite takes. The refusal said only that
the line is "none of" the shapes taken; it now names the variable, each assignment and its line, that the name is
per item, and what to write by hand."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TEMPLATE = """\
{{- range $name, $svc := .Values.services }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $name | lower }}
spec:
  selector:
    matchLabels: {app: {{ $name | lower }}}
  template:
    metadata:
      labels: {app: {{ $name | lower }}}
    spec:
      containers:
        - name: main
          image: app:1
          {{- if $svc.resources }}
          resources:
            {{- $gpuName := "nvidia.com/gpu" }}
            {{- if $svc.resources.limits.gpuType }}
            {{- $gpuName = $svc.resources.limits.gpuType }}
            {{- end }}
            limits:
              {{ $gpuName }}: "{{ $svc.resources.limits.gpu }}"
          {{- end }}
{{- end }}
"""
LINES = TEMPLATE.splitlines()
DEFAULT = LINES.index('            {{- $gpuName := "nvidia.com/gpu" }}') + 1
OVERRIDE = LINES.index("            {{- $gpuName = $svc.resources.limits.gpuType }}") + 1
KEY = LINES.index('              {{ $gpuName }}: "{{ $svc.resources.limits.gpu }}"') + 1
VALUES = "services:\n  worker:\n    resources:\n      limits:\n        gpu: 1\n"


def test_a_name_the_template_sets_per_item_is_refused_with_what_to_do(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"templates/app.yaml": TEMPLATE, "values.yaml": VALUES})

    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.changes
    for said in (
        f"templates/app.yaml:{KEY}:",
        "the device resource name `$gpuName` is a variable the template sets itself: "
        f'`"nvidia.com/gpu"` (line {DEFAULT}), '
        f"then `$svc.resources.limits.gpuType` (line {OVERRIDE})",
        "reads the item of the `range` around the key",
        "a ResourceClaimTemplate for each item of the `range`",
        "--strategy extended-resource",
    ):
        assert said in outcome.manual, outcome.manual
