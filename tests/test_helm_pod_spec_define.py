"""A pod spec written by a define of the chart that a Deployment and a Job both include under their pod's `spec:`
(`{{- include "app.podSpec" . | nindent 6 }}`, the define writing `containers:` and `toYaml .Values.resources`):
the finding mapped to the template's `spec:` line, which writes none of it, read as a helper of unknown shape (D), and
fix refused ("no line of a helper in this chart writes the device key"). It now maps into the define, whose lines the
include indents, and the pass-through puts the pod's keys there; proven by (L) and (D). So too with the map read in a
`with` (C), and for a define that writes the whole pod template under `template:`. A define there that writes the
device key itself, or includes a helper that does, stays the helper rewrite's (test_helm_helper_pod_template,
test_helm_helper_chain). Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import DEPLOYMENT_HEAD, chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 2\nnodeSelector: {}\n"
POD = """\
{{- define "app.podSpec" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: server
    image: server:1
    resources:
      {{- toYaml .Values.resources | nindent 6 }}
{{- end -}}
"""
DEPLOYMENT = deployment("{{ .Release.Name }}-server", '      {{- include "app.podSpec" . | nindent 6 }}\n')
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-bench
spec:
  template:
    spec:
      restartPolicy: Never
      {{- include "app.podSpec" . | nindent 6 }}
"""
FILES = {
    "values.yaml": VALUES,
    "templates/_pod.tpl": POD,
    "templates/deployment.yaml": DEPLOYMENT,
    "templates/job.yaml": JOB,
}
# the map read in a `with` (pattern C), and a define that writes the whole pod template under the pod's `template:`
WITH = POD.replace(
    "    resources:\n      {{- toYaml .Values.resources | nindent 6 }}\n",
    "    {{- with .Values.resources }}\n    resources:\n      {{- toYaml . | nindent 6 }}\n    {{- end }}\n",
)
POD_TEMPLATE = """\
{{- define "app.podTemplate" -}}
metadata:
  labels: {app: server}
spec:
  containers:
    - name: server
      image: server:1
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
{{- end -}}
"""
UNDER_TEMPLATE = (
    DEPLOYMENT_HEAD.format(name="{{ .Release.Name }}-server", app="server").removesuffix(
        "    metadata:\n      labels: {app: server}\n    spec:\n"
    )
    + '    {{- include "app.podTemplate" . | nindent 4 }}\n'
)
WORKLOADS = (("Deployment", "release-name-server"), ("Job", "release-name-bench"))


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


@pytest.mark.parametrize(
    ("files", "workloads"),
    [
        (FILES, WORKLOADS),
        ({**FILES, "templates/_pod.tpl": WITH}, WORKLOADS),
        (
            {"values.yaml": VALUES, "templates/_pod.tpl": POD_TEMPLATE, "templates/deployment.yaml": UNDER_TEMPLATE},
            WORKLOADS[:1],
        ),
    ],
    ids=["toYaml-under-spec", "with-under-spec", "pod-template-under-template"],
)
def test_a_pod_define_takes_the_pass_through(
    tmp_path: Path, files: dict[str, str], workloads: tuple[tuple[str, str], ...]
) -> None:
    """Was refused: 'no line of a helper in this chart writes the device key' (pattern D at the template's `spec:` or
    `template:`)."""
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)
    docs = _docs(chart, (chart / "values-dra.yaml",))
    for kind, name in workloads:
        pod = docs[kind, name]["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
        (claim,) = pod["resourceClaims"]
        assert docs["ResourceClaimTemplate", claim["resourceClaimTemplateName"]]


def test_lint_points_at_the_defines_resources_line_and_each_include(tmp_path: Path) -> None:
    """Was the template's `spec:` line, pattern D, which writes none of the pod."""
    chart = chart_with(tmp_path, "app", FILES)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "lint")
    requests = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    resources = POD.splitlines().index("    resources:") + 1
    assert {(Path(f.file).name, f.line) for f in requests} == {("_pod.tpl", resources)}
    assert all("[chart pattern B " in f.message for f in requests)
    includes = {(Path(r.file).name, r.line) for f in requests for r in f.related if "includes" in r.note}
    assert includes == {("deployment.yaml", DEPLOYMENT.count("\n")), ("job.yaml", JOB.count("\n"))}
