"""A workload named by an action that quotes the name (`name: {{ $name | quote }}`, `{{ quote .Values.name }}`),
pattern A. The claim template's name goes on from the workload's (`<name>-<spec hash>`), and fix copied the action with
its quoting: `"eval"-1a2b3c4d` is no YAML, so with the DRA switch on the rewritten chart did not render ("did not
find expected key") and fix wrote nothing. The name now goes on from the action without its quoting.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

JOB = """\
{{- $name := .Values.job.name }}
apiVersion: batch/v1
kind: Job
metadata:
  name: NAME
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: run
          image: run:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.job.gpus }}
"""
VALUES = "job:\n  name: eval\n  gpus: 2\n"


@pytest.mark.parametrize("name", ["{{ $name | quote }}", "{{ quote $name }}", "{{ $name | squote }}"])
def test_a_claim_template_named_after_a_quoted_name_renders(tmp_path: Path, name: str) -> None:
    chart = chart_with(tmp_path, "run", {"values.yaml": VALUES, "templates/job.yaml": JOB.replace("NAME", name)})

    fix_chart(chart)

    docs = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    (job,) = [d for d in docs if d["kind"] == "Job"]
    assert template["metadata"]["name"].startswith("eval-")
    (claim,) = job["spec"]["template"]["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert job["metadata"]["name"] == "eval"
