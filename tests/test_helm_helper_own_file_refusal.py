"""A define that writes a whole workload for each item of a values list (`range $p := .Values.pools`, then `include
"pools.pool" (dict "context" $context "pool" (merge (dict "containerName" "worker") $p))`), its container's resources
a variable built from the item's map (`$resources := default dict $pool.resources`, the device set to 0 in a branch).
The helper rewrite (pattern D) counted the define's own file among the templates that ask for a device some other way
and refused with "templates/_pool.tpl: a device request there does not come from pools.pool", which is false and
names no line. The refusal now names the pattern and the include line, with the helper rewrite's own reason.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POOL = """\
{{- define "pools.pool" -}}
{{- $context := .context }}
{{- $pool := .pool }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $context.Release.Name }}-{{ $pool.name }}
spec:
  selector:
    matchLabels: {app: {{ $pool.name }}}
  template:
    metadata:
      labels: {app: {{ $pool.name }}}
    spec:
      containers:
        - name: {{ $pool.containerName }}
          image: w:1
          {{- $resources := default dict $pool.resources }}
          {{- if $pool.shared }}
          {{- $limits := deepCopy ($resources.limits | default dict) }}
          {{- $resources = deepCopy $resources }}
          {{- $_ := set $limits "nvidia.com/gpu" 0 }}
          {{- $ignored := set $resources "limits" $limits }}
          {{- end }}
          resources:
            {{- toYaml $resources | nindent 12 }}
{{- end }}
"""
POOLS = """\
{{- $context := . }}
{{- range $p := .Values.pools }}
---
{{ include "pools.pool" (dict "context" $context "pool" (merge (dict "containerName" "worker") $p)) }}
{{- end }}
"""
VALUES = "pools:\n  - name: a\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n"


def test_a_define_writing_the_workload_is_refused_at_its_include(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_pool.tpl": POOL, "templates/pools.yaml": POOLS}
    chart = chart_with(tmp_path, "pools", files)

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")

    include = POOLS.splitlines().index(next(x for x in POOLS.splitlines() if "include" in x)) + 1
    assert not outcome.proven
    assert outcome.manual.startswith(f"pattern D (pools.pool): templates/pools.yaml:{include}: "), outcome.manual
    assert "does not come from" not in outcome.manual
    assert {p.name for p in (chart / "templates").iterdir()} == {"_pool.tpl", "pools.yaml"}
