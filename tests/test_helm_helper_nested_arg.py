"""Pattern D where the call site builds the helper's argument with a nested call: the argument is read with its
nested parentheses (was: cut at the inner parenthesis, and the shown patch failed with "unclosed left paren").
A `dict` built there gets the chart's `dra` block threaded in; an object built by another call
(`fromYaml (include "app.cfg" .)`) is refused, since no values key could turn its switch. Real renders."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
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
DEPLOYMENT = deployment(
    "serve",
    """\
      containers:
        - name: serve
          image: serve
          resources:
            {{- include "app.res" (fromYaml (include "app.cfg" .)) | nindent 12 }}
""",
)


DICT_ARG = '(dict "gpu" (int .Values.gpu))'


def nested_chart(root: Path, arg: str = '(fromYaml (include "app.cfg" .))') -> Path:
    serve = DEPLOYMENT.replace('(fromYaml (include "app.cfg" .))', arg)
    files = {"templates/_helpers.tpl": HELPERS, "templates/serve.yaml": serve, "values.yaml": "gpu: 1\n"}
    return chart_with(root, "app", files)


def fix_outcome(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def render(chart: Path, **sets: str) -> str:
    options = RenderOptions(kube_version="1.34", set_values=tuple(f"{k}={v}" for k, v in sets.items()))
    return "".join(m.text for m in render_chart(chart, options))


def test_a_dict_argument_with_a_nested_call_gets_the_switch_threaded_in(tmp_path: Path) -> None:
    chart = nested_chart(tmp_path, DICT_ARG)
    original = render(chart)
    outcome = fix_outcome(chart)
    assert outcome.proven, outcome.report()
    for change in outcome.changes:
        (chart / change.rel).write_text(change.after, encoding="utf-8")
    assert 'dict "gpu" (int .Values.gpu) "dra"' in (chart / "templates/serve.yaml").read_text()
    assert "resourceClaims" in (on := render(chart)) and 'nvidia.com/gpu: "1"' not in on
    assert render(chart, **{"dra.enabled": "false"}) == original  # the user can turn it off


def test_an_object_built_by_another_call_is_refused_since_no_value_turns_its_switch(tmp_path: Path) -> None:
    outcome = fix_outcome(nested_chart(tmp_path))
    assert not outcome.proven and not outcome.changes
    assert "unclosed" not in outcome.report(), outcome.report()
    assert 'the helper app.res gets `(fromYaml (include "app.cfg" .))`, an object built at the call site' in (
        outcome.manual
    ), outcome.report()


def test_an_argument_that_does_not_close_on_its_line_is_refused_with_the_line(tmp_path: Path) -> None:
    chart = nested_chart(tmp_path)
    split = DEPLOYMENT.replace('(fromYaml (include "app.cfg" .))', '(fromYaml\n              (include "app.cfg" .))')
    (chart / "templates/serve.yaml").write_text(split, encoding="utf-8")
    outcome = fix_outcome(chart)
    assert not outcome.proven
    assert "templates/serve.yaml:16: the argument of the include of app.res does not close on its line" in (
        outcome.manual
    ), outcome.report()
