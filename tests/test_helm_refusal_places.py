"""Two shapes the idiomatic rewrite still leaves to the user (issue 7's dev set charts28), whose refusal now names
the template line and the pattern, not only the object: a StatefulSet per entry of a `range` asking for GPUs and
EFA interfaces (aws/sagemaker-hyperpod-recipes' Nova generation server), and a container whose resources deep-merge
a defaults map and a service's own, both holding the device keys (tembo-ai's inference services). Each chart here is
written for the test, with the shape of the real one; renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

PER_JOB = """\
{{- range $i, $job := .Values.jobList }}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $job.jobName }}
spec:
  serviceName: {{ $job.jobName }}
  selector:
    matchLabels:
      app: {{ $job.jobName }}
  template:
    metadata:
      labels:
        app: {{ $job.jobName }}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{ $job.devices }}
              vpc.amazonaws.com/efa: {{ $.Values.numEFADevices }}
            requests:
              nvidia.com/gpu: {{ $job.devices }}
              vpc.amazonaws.com/efa: {{ $.Values.numEFADevices }}
{{- end }}
"""

MERGED = """\
{{- range $name, $service := .Values.services }}
{{- $merged := mustMergeOverwrite (deepCopy $.Values.defaults) $service }}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $name }}
spec:
  serviceName: {{ $name }}
  selector:
    matchLabels:
      app: {{ $name }}
  template:
    metadata:
      labels:
        app: {{ $name }}
    spec:
      containers:
        - name: inference
          image: vllm:1
          resources:
            {{- toYaml $merged.resources | nindent 12 }}
{{- end }}
"""

MERGED_VALUES = """\
defaults:
  resources:
    limits:
      nvidia.com/gpu: "1"
services:
  big:
    resources:
      limits:
        nvidia.com/gpu: "2"
"""


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def test_gpus_and_efa_in_a_range_name_the_device_line_and_both_kinds(tmp_path: Path) -> None:
    """Was 'templates/ag.yaml: a pod asks for several device kinds, with device keys inside `range`': no line, no
    kinds. Now the first device key's line, both resources, and why."""
    values = "numEFADevices: 32\njobList:\n  - jobName: gen-ag\n    devices: 8\n"
    outcome = _fix(chart_with(tmp_path, "nova", {"templates/ag.yaml": PER_JOB, "values.yaml": values}))
    assert not outcome.proven
    line = PER_JOB.splitlines().index("              nvidia.com/gpu: {{ $job.devices }}") + 1
    assert f"templates/ag.yaml:{line}: a pod asks for several device kinds" in outcome.manual, outcome.manual
    assert "(nvidia.com/gpu, vpc.amazonaws.com/efa)" in outcome.manual


def test_device_keys_in_two_merged_maps_name_the_template_line_and_pattern(tmp_path: Path) -> None:
    """Was 'StatefulSet/big container inference merges the values maps ...': the object only. Now the template's
    `resources:` line and its pattern come first, and the message says what the pass-through would get wrong."""
    chart = chart_with(tmp_path, "tembo", {"templates/sts.yaml": MERGED, "values.yaml": MERGED_VALUES})
    outcome = _fix(chart)
    assert not outcome.proven
    line = MERGED.splitlines().index("          resources:") + 1
    assert f"templates/sts.yaml:{line}: pattern B" in outcome.manual, outcome.manual
    assert "defaults.resources, services.big.resources" in outcome.manual
    assert "would keep another map's device key" in outcome.manual
