"""Template variables that two pods of one template both set (`$gpucnt := ...` in the head group and again in a
worker group of a RayJob, as the generated charts of aws/sagemaker-hyperpod-recipes write them), read by the `if`
around each pod's device limit. The pod-level edits of the idiomatic rewrite (rayStartParams, resourceClaims, the
toleration) go above the container, where the variable is not set yet (the head) or still holds the head's value (a
worker group). The chart here is written for the test, with the shape of the real one. Renders are real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

GROUP = """\
      template:
        spec:
          containers:
          - name: ray-{name}
            image: rayproject/ray:2.9.0
            resources:
              requests:
                cpu: "1"
                nvidia.com/gpu: {{{{ .Values.{name}.gpu | quote }}}}
              {{{{- $cpulim := .Values.{name}.cpuLimit }}}}
              {{{{- $gpucnt := .Values.{name}.gpu }}}}
              {{{{- if or $cpulim $gpucnt }}}}
              limits:
                {{{{- if $cpulim }}}}
                cpu: {{{{ $cpulim | quote }}}}
                {{{{- end }}}}
                {{{{- if $gpucnt }}}}
                nvidia.com/gpu: {{{{ $gpucnt | quote }}}}
                {{{{- end }}}}
              {{{{- end }}}}
"""

RAYJOB = (
    """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: python train.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams:
        dashboard-host: "0.0.0.0"
"""
    + GROUP.format(name="head")
    + """\
    workerGroupSpecs:
    - groupName: workers
      replicas: 1
      rayStartParams: {}
"""
    + GROUP.format(name="workers")
)

VALUES = """\
head:
  cpuLimit: null
  gpu: '0'
workers:
  cpuLimit: null
  gpu: '8'
"""


def test_each_group_reads_its_own_assignment_of_a_variable_both_set(tmp_path: Path) -> None:
    """Before, the rewrite read `$gpucnt` above the head's container, where it is not declared: the rewritten chart
    did not render and fix left the chart as manual work. Now each pod-level edit reads the expression its own
    group's device key sees: the workers get a claim for 8 GPUs and `num-gpus`, the head (0 GPUs) none."""
    chart = chart_with(tmp_path, "verl", {"templates/job.yaml": RAYJOB, "values.yaml": VALUES})
    fix_chart(chart)
    docs = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    job = next(d for d in docs if d["kind"] == "RayJob")["spec"]["rayClusterSpec"]
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    worker = job["workerGroupSpecs"][0]
    claim = worker["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert templates[claim]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    assert claim.startswith("train-worker-group-")  # named after `workerGroupSpecs:`, its items at its own indent
    assert worker["rayStartParams"] == {"num-gpus": "8"}
    assert "nvidia.com/gpu" not in str(worker["template"]["spec"]["containers"][0]["resources"])
    head = job["headGroupSpec"]
    assert "resourceClaims" not in head["template"]["spec"]
    assert head["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert len(templates) == 1


def test_a_limit_counting_what_its_request_does_is_one_count(tmp_path: Path) -> None:
    """The limit reads `$gpucnt`, which holds the request's `.Values.workers.gpu`: the claim counts that key, with no
    check that the two differ (they cannot), where before the rewrite wrote `or (and (or $cpulim $gpucnt) $gpucnt
    $gpucnt) .Values.workers.gpu` in every condition and a `fail` comparing the key with itself."""
    chart = chart_with(tmp_path, "verl", {"templates/job.yaml": RAYJOB, "values.yaml": VALUES})
    fix_chart(chart)
    rewritten = "".join((chart / "templates" / f).read_text() for f in ("job.yaml", "resourceclaimtemplate.yaml"))
    assert "gt (int .Values.workers.gpu) 0" in rewritten
    assert "(or (and" not in rewritten
    assert "differs from its limit" not in rewritten
