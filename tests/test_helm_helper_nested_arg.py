"""Pattern D where the call site builds the helper's argument with a nested call
(`include "app.res" (fromYaml (include "app.cfg" .))`): the argument is read with its nested parentheses, so every
template of the rewrite, proven or only suggested, parses (was: the argument cut at the inner parenthesis,
`(include "app.res.dra" (fromYaml)`, and the shown patch failed with "unclosed left paren"). Real renders."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "app.cfg" -}}
gpu: {{ .Values.gpu }}
{{- end -}}
{{- define "app.res" -}}
limits:
  cpu: "1"
  nvidia.com/gpu: {{ .gpu | quote }}
{{- end -}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
spec:
  selector:
    matchLabels: {app: serve}
  template:
    metadata:
      labels: {app: serve}
    spec:
      containers:
        - name: serve
          image: serve
          resources:
            {{- include "app.res" (fromYaml (include "app.cfg" .)) | nindent 12 }}
"""


def nested_chart(root: Path) -> Path:
    files = {"templates/_helpers.tpl": HELPERS, "templates/serve.yaml": DEPLOYMENT, "values.yaml": "gpu: 1\n"}
    return chart_with(root, "app", files)


def fix_outcome(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def test_the_patch_for_a_nested_call_argument_parses(tmp_path: Path) -> None:
    chart = nested_chart(tmp_path)
    outcome = fix_outcome(chart)
    assert "unclosed" not in outcome.report(), outcome.report()
    assert outcome.changes, outcome.report()
    for change in outcome.changes:  # the patch `diff` shows, applied by hand
        (chart / change.rel).write_text(change.after, encoding="utf-8")
    rendered = "".join(m.text for m in render_chart(chart, RenderOptions(kube_version="1.34")))
    assert 'include "app.res.dra" (fromYaml (include "app.cfg" .))' in (chart / "templates/serve.yaml").read_text()
    assert "nvidia.com/gpu" in rendered


def test_an_argument_that_does_not_close_on_its_line_is_refused_with_the_line(tmp_path: Path) -> None:
    chart = nested_chart(tmp_path)
    split = DEPLOYMENT.replace('(fromYaml (include "app.cfg" .))', '(fromYaml\n              (include "app.cfg" .))')
    (chart / "templates/serve.yaml").write_text(split, encoding="utf-8")
    outcome = fix_outcome(chart)
    assert not outcome.proven
    assert "templates/serve.yaml:16: the argument of the include of app.res does not close on its line" in (
        outcome.manual
    ), outcome.report()
