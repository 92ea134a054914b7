"""Shapes of issue 7's dev set charts28: a StatefulSet per entry of a `range` asking for GPUs and EFA interfaces
(aws/sagemaker-hyperpod-recipes' Nova generation server), left to the user with a refusal that now names the line;
and a container whose resources deep-merge a defaults map and a service's own, both holding the device keys
(tembo-ai's inference services), rewritten when the counts tell which map the merge keeps, else refused by line.
Each chart here is written for the test, with the shape of the real one; renders are real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
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
services: {}
"""


def _services(big: str) -> str:
    return (
        f"services:\n  big:\n    resources:\n      limits:\n        nvidia.com/gpu: {big!r}\n  small:\n    image: x\n"
    )


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


def test_a_service_map_over_its_defaults_gets_its_own_claim(tmp_path: Path) -> None:
    """tembo-ai's services deep-merge their own map over the defaults: a service asking for 2 GPUs over the
    defaults' 1 was left as manual work (the device keys were in both maps). Now the map whose count the merge keeps
    (the service's) gets the claim: with the DRA variant of the user's file, the big service's pod claims 2 GPUs and
    the one that only inherits the defaults 1, and no pod asks for the device-plugin resource."""
    chart = chart_with(tmp_path, "tembo", {"templates/sts.yaml": MERGED, "values.yaml": MERGED_VALUES})
    user = tmp_path / "two.yaml"
    user.write_text(_services("2"))
    settings = Settings(kube_version="1.34", opt_in=True)
    options = ChartOptions(values_files=(user,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(user, tmp_path / "two-dra.yaml")))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "StatefulSet"}
    claimed = {n: counts[p["resourceClaims"][0]["resourceClaimTemplateName"]] for n, p in pods.items()}
    assert claimed == {"big": 2, "small": 1}
    assert "nvidia.com/gpu" not in str([p["containers"][0]["resources"] for p in pods.values()])


def test_device_keys_in_two_merged_maps_name_the_template_line_and_pattern(tmp_path: Path) -> None:
    """A service restating the defaults' count: the merge keeps either map's, and the pass-through does not guess
    which. Was 'StatefulSet/big container inference merges the values maps ...': the object only. Now the
    template's `resources:` line and its pattern come first, and the message says what the pass-through would get
    wrong."""
    values = MERGED_VALUES.replace("services: {}\n", _services("1"))
    chart = chart_with(tmp_path, "tembo", {"templates/sts.yaml": MERGED, "values.yaml": values})
    outcome = _fix(chart)
    assert not outcome.proven
    line = MERGED.splitlines().index("          resources:") + 1
    assert f"templates/sts.yaml:{line}: pattern B" in outcome.manual, outcome.manual
    assert "defaults.resources, services.big.resources" in outcome.manual
    assert "would keep another map's device key" in outcome.manual
