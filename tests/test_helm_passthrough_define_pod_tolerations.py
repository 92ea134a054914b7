"""A pod spec written by a define at column 0 and included with `indent` (ai-workloads' `ai-workloads.podSpec`, under
mkefly's nightly batch CronJob), whose tolerations come from a profile map beside the resources map:
`{{- with $profile.tolerations }}` / `tolerations:` / `{{ toYaml . | indent 2 }}`. The pass-through added a second
`tolerations:` key beside that one (fix refused: "`tolerations:` is written twice in one mapping"); the DRA
toleration now joins the pod's own list. The chart also ships a render of itself (`out.yaml`): the template's device
check still fails with its own message, not hidden as an echo of a chart file (the render's `# Source:` lines quote
the template's path, which Helm's message names).

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, with_original

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
{{- define "batch.profile" -}}
{{- index .Values.profiles .task.profile | default dict | toYaml -}}
{{- end -}}
{{- define "batch.podSpec" -}}
{{- $root := .root -}}
{{- $profile := .profile -}}
restartPolicy: Never
serviceAccountName: {{ $root.Values.serviceAccount }}
{{- with $profile.tolerations }}
tolerations:
{{ toYaml . | indent 2 }}
{{- end }}
containers:
  - name: {{ .name }}
    image: worker:1
{{- if $profile.resources }}
    resources:
{{ toYaml $profile.resources | indent 6 }}
{{- end }}
{{- end }}
"""
JOB = """\
{{- range $task := .Values.tasks }}
{{- $profile := fromYaml (include "batch.profile" (dict "Values" $.Values "task" $task)) }}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ $task.name }}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
{{- $annotations := $task.podAnnotations | default dict }}
{{- if $annotations }}
        metadata:
          annotations:
{{ toYaml $annotations | indent 12 }}
{{- end }}
        spec:
{{ include "batch.podSpec" (dict "root" $ "profile" $profile "name" $task.name) | indent 10 }}
{{- end }}
"""
VALUES = """\
serviceAccount: batch
profiles:
  gpu:
    resources:
      limits:
        nvidia.com/gpu: 1
    tolerations:
      - key: sku
        operator: Equal
        value: gpu
        effect: NoSchedule
  cpu:
    resources:
      limits:
        cpu: "1"
tasks:
  - name: nightly
    profile: gpu
    podAnnotations:
      team: ml
  - name: cleanup
    profile: cpu
"""
# what `helm template` printed for this chart once, kept in the chart's folder by its author
OUT = """\
---
# Source: batch/templates/job.yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
{{- $annotations := $task.podAnnotations | default dict }}
{{- if $annotations }}
        metadata:
          annotations:
{{ toYaml $annotations | indent 12 }}
{{- end }}
        spec:
          containers:
            - name: nightly
              resources:
                limits:
                  nvidia.com/gpu: 1
"""


def _pods(chart: Path, files: tuple[Path, ...] = ()) -> dict[str, Any]:
    stream = "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=files)))
    return {
        d["metadata"]["name"]: d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        for d in yaml.safe_load_all(stream)
        if d and d.get("kind") == "CronJob"
    }


def test_the_device_toleration_joins_the_list_of_a_pod_spec_define(tmp_path: Path) -> None:
    chart = chart_with(
        tmp_path,
        "batch",
        {"templates/_pod.tpl": POD, "templates/job.yaml": JOB, "values.yaml": VALUES, "out.yaml": OUT},
    )
    before = _pods(chart)

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()  # was: refused, `tolerations:` written twice in one mapping
    write_changes(outcome)

    assert _pods(chart) == before
    pods = _pods(chart, with_original(chart / "values-dra.yaml"))
    assert [(t["key"], t["operator"]) for t in pods["nightly"]["tolerations"]] == [
        ("sku", "Equal"),
        ("nvidia.com/gpu", "Exists"),
    ]
    assert [c["name"] for c in pods["nightly"]["resourceClaims"]] == ["gpu"]
    assert "nvidia.com/gpu" not in str(pods["nightly"]["containers"][0]["resources"])
    assert pods["cleanup"] == before["cleanup"]


def test_a_render_the_chart_ships_is_no_values_file(tmp_path: Path) -> None:
    """mkefly's chart keeps a `helm template` render of itself (`out.yaml`, Kubernetes objects naming nvidia.com/gpu):
    it was taken for a GPU values file, proven as one and given an `out-dra.yaml` with values keys written into its
    first object. Only real values files count."""
    from types import SimpleNamespace

    from dramigrate.helm.outcome import shipped_files

    gpu = "profiles:\n  gpu:\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n"
    chart = chart_with(tmp_path, "batch", {"values.yaml": VALUES, "out.yaml": OUT, "ci/gpu-values.yaml": gpu})
    outcome = SimpleNamespace(display="batch")

    found = shipped_files(outcome, chart, ChartOptions(), load_rules())  # type: ignore[arg-type]

    assert [p.relative_to(chart).as_posix() for p in found] == ["ci/gpu-values.yaml"]  # was: out.yaml too
