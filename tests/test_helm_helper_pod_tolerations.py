"""Pattern A in a pod whose keys a helper writes (`{{- include "job.podDefaults" . | nindent 6 }}`: `nodeSelector`,
`tolerations` and `affinity` from values, through a second define), one helper in each branch of an `if`. The rewrite
wrote the DRA toleration as a `tolerations:` key of its own, a second one wherever the values set the helper's list,
so the proof failed and fix wrote nothing. The toleration now joins the helper's list in the call's DRA branch.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPERS = """\
{{- define "job.podDefaultsFor" -}}
enableServiceLinks: false
{{- with .Values.scheduling.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.scheduling.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "job.podDefaults" -}}
{{- include "job.podDefaultsFor" . }}
{{- end }}

{{- define "job.spreadDefaults" -}}
{{- include "job.podDefaultsFor" . }}
affinity: {}
{{- end }}
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-run
spec:
  template:
    spec:
      {{- if .Values.spread }}
      {{- include "job.spreadDefaults" . | nindent 6 }}
      {{- else }}
      {{- include "job.podDefaults" . | nindent 6 }}
      {{- end }}
      restartPolicy: Never
      containers:
        - name: run
          image: run:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
"""
VALUES = "gpus: 2\nspread: false\nscheduling:\n  nodeSelector: {}\n  tolerations: []\n"
DEDICATED = {"key": "example.com/dedicated", "operator": "Exists", "effect": "NoSchedule"}


def _pod(chart: Path, given: Path, *sets: str) -> dict:
    options = RenderOptions(values_files=(given,), set_values=sets)
    docs = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    (job,) = [d for d in docs if d["kind"] == "Job"]
    return job["spec"]["template"]["spec"]


def test_the_toleration_joins_the_list_a_pod_helper_writes(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/job.yaml": JOB}
    chart = chart_with(tmp_path, "job", files)
    given = tmp_path / "dedicated.yaml"
    given.write_text(yaml.safe_dump({"scheduling": {"tolerations": [DEDICATED]}}))
    before = {spread: _pod(chart, given, f"spread={spread}") for spread in ("false", "true")}

    fix_chart(chart)

    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    for spread in ("false", "true"):
        pod = _pod(chart, given, f"spread={spread}")
        assert pod["tolerations"] == [DEDICATED, gpu]
        assert pod["resourceClaims"] and pod["enableServiceLinks"] is False
        assert _pod(chart, given, f"spread={spread}", "dra.enabled=false") == before[spread]
