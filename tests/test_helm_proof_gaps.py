"""Rewrites the proof called proven while the rewritten chart, with the DRA switch on, was wrong for values a user
could pass; each is now refused (nothing written) with the reason. Renders are real.

- Two workloads of one name in two templates (a Deployment and a warm-up Job, `{{ .Release.Name }}-app`) asking for
  the same devices: each template rendered the same ResourceClaimTemplate, and Helm fails the install on the second
  (`already exists`); the proof reads claim templates alike as one.
- A pod whose tolerations a helper writes from a values list the chart's values leave unset: a user's own list made
  the pod's `tolerations:` twice, and Helm kept the DRA branch's, dropping the user's; the proof set only the
  tolerations lists the values have."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
      {pod_head}containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
"""
SCHEDULING = """\
{{- define "app.scheduling" -}}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
"""


def _fix(chart: Path) -> object:
    return run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")


def test_two_workloads_of_one_name_would_render_their_claim_template_twice(tmp_path: Path) -> None:
    name = "{{ .Release.Name }}-app"
    files = {
        "templates/deployment.yaml": deployment(name, POD.format(pod_head="")),
        "templates/job.yaml": JOB.format(name=name),
        "values.yaml": "gpus: 1\n",
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    assert not outcome.proven  # was: proven, and `helm install` failed on the second
    why = outcome.manual
    assert "ResourceClaimTemplate release-name-app-" in why and "is rendered 2 times" in why
    assert "Deployment/release-name-app (app/templates/deployment.yaml)" in why and "Job/release-name-app" in why
    files["templates/job.yaml"] = JOB.format(name=name + "-warmup")  # named apart: proven
    assert _fix(chart_with(tmp_path / "apart", "app", files)).proven


def test_tolerations_a_helper_writes_from_an_unset_values_list(tmp_path: Path) -> None:
    head = '{{- include "app.scheduling" . | nindent 6 }}\n      '
    files = {
        "templates/_helpers.tpl": SCHEDULING,
        "templates/deployment.yaml": deployment("server", POD.format(pod_head=head)),
        "values.yaml": "gpus: 1\n",  # no `tolerations:`
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    assert not outcome.proven  # was: proven, and a user's tolerations were dropped with the switch on
    why = outcome.manual
    assert "every tolerations list of the values set to [example.com/dedicated]" in why
    assert "`tolerations:` is written twice in one mapping" in why
