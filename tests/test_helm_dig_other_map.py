"""A chart whose Deployments range over one values map of named items (`deployments`), each taking its `resources`
whole, and whose ConfigMap ranges over another (`jobs`), reading the GPU count of each job's resources merged with a
template's through `dig "limits" "nvidia.com/gpu" "" $merged`. The DRA values drop the device key from a Deployment
item's map only, so the ConfigMap renders as before. When a proof failed, fix's message blamed any such `dig` ("reads
... itself, in a form fix does not rewrite: give that count a value of its own"), sending the maintainer to the wrong
template; it now follows the variable to the values maps it is set from, and blames a `dig` of the edited map only."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.helm.passthrough import device_key_reads

DEPLOYMENTS = """\
{{- range $k, $v := .Values.deployments }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $k | kebabcase }}
spec:
  selector:
    matchLabels: {app: {{ $k | kebabcase }}}
  template:
    metadata:
      labels: {app: {{ $k | kebabcase }}}
    spec:
      containers:
        - name: worker
          image: worker
          resources:
            {{- toYaml $v.resources | nindent 12 }}
{{- end }}
"""
CONFIGMAP = """\
{{- $base := .Values.jobTemplate }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: jobs
data:
{{- range $name, $job := .Values.jobs }}
  {{- $merged := merge (deepCopy ($job.resources | default dict)) ($base.resources | default dict) }}
  {{- $gpu := not (empty (dig "limits" "nvidia.com/gpu" "" $merged)) }}
  {{ $name }}: {{ ternary "gpu" "cpu" $gpu | quote }}
{{- end }}
"""
REMOVED = {(("deployments", "gpu", "resources"), "limits", "nvidia.com/gpu")}


def test_a_dig_of_a_variable_set_from_other_values_maps_is_not_blamed(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "ops", {"templates/d.yaml": DEPLOYMENTS, "templates/cm.yaml": CONFIGMAP})

    assert device_key_reads(chart, REMOVED) == ""


def test_a_dig_of_a_variable_not_known_to_hold_another_map_is_still_blamed(tmp_path: Path) -> None:
    unknown = CONFIGMAP.replace("$job.resources", ".resources")  # `.` of the range: not followed, so not cleared
    chart = chart_with(tmp_path, "ops", {"templates/d.yaml": DEPLOYMENTS, "templates/cm.yaml": unknown})

    assert device_key_reads(chart, REMOVED).startswith("templates/cm.yaml:9 reads deployments.gpu.resources.limits")
