"""The pattern-D proof renders the chart as written, with its `dra.enabled` switch turned against its default
through the values the rewrite tells the user to set (values.yaml, or each values object a call site's helper gets:
`steps.<name>`), not a second build of the chart with the other default. A switch that no value reaches (the
helper's `.Values` is a preset, not the chart's values), or that sits in an object no values path names, left the
user a chart that could never be turned on (with --opt-in) or off; it was called proven. Real renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RESOURCES = '{{- define "llm.resources" -}}\nlimits:\n  nvidia.com/gpu: {{ .Values.gpus }}\n{{- end -}}\n'
POD = deployment(
    "{{ .Release.Name }}-llm",
    """\
      containers:
        - name: llm
          image: llm:1
          resources:
            {{- include "llm.resources" . | nindent 12 }}
""",
)
# the helper's `.Values` is the chosen preset, not the chart's values: `dra.enabled` in values.yaml never reaches it
PRESET = (
    '{{- $ctx := dict "Values" (index .Values.presets .Values.preset) "Release" .Release -}}\n'
    "{{- with $ctx }}\n" + POD + "{{- end }}\n"
)
PRESET_VALUES = "preset: big\npresets:\n  big:\n    gpus: 1\n"

STEP_RESOURCES = '{{- define "app.resources" -}}\nlimits:\n  nvidia.com/gpu: {{ .gpus }}\n{{- end -}}\n'
STEPS = """\
{{- range $name, $step := .Values.steps }}
{{- $spec := mergeOverwrite (deepCopy $.Values.stepDefaults) $step }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: step-{{ $name }}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: {{ $name }}
          image: step
          resources:
            {{- include "app.resources" $spec | nindent 12 }}
{{- end }}
"""
STEPS_VALUES = "stepDefaults:\n  gpus: 1\nsteps:\n  train: {}\n"


def _fix(chart: Path, opt_in: bool) -> ChartOutcome:
    settings = Settings(kube_version="1.34", opt_in=opt_in)
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def _fix_with(chart: Path, values: str) -> ChartOutcome:
    """fix --opt-in with one values file of `values` beside the chart."""
    gpu = chart.parent / "gpu.yaml"
    gpu.write_text(values)
    settings = Settings(kube_version="1.34", opt_in=True)
    options = ChartOptions(kube_version="1.34", values_files=(gpu,))
    return run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")


def _render(chart: Path, values: str) -> list[dict[str, Any]]:
    extra = chart.parent / "extra.yaml"
    extra.write_text(values)
    options = RenderOptions(kube_version="1.34", values_files=(extra,))
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


@pytest.mark.parametrize("opt_in", [True, False], ids=["opt-in", "on-by-default"])
def test_a_values_switch_that_never_reaches_the_helper_is_not_proven(tmp_path: Path, opt_in: bool) -> None:
    files = {"templates/_helpers.tpl": RESOURCES, "templates/llm.yaml": PRESET, "values.yaml": PRESET_VALUES}
    chart = chart_with(tmp_path, "llm", files)
    outcome = _fix(chart, opt_in)
    # was: proven, and written: with --opt-in `dra.enabled: true` rendered the device-plugin request, without it
    # `dra.enabled: false` rendered the claim
    assert not outcome.proven and not outcome.changes, outcome.report()
    turned = f"dra.enabled={'true' if opt_in else 'false'} set in values.yaml"
    assert turned in outcome.manual, outcome.manual
    if not opt_in:  # the switch "off" still renders the claim template beside the Deployment
        assert "templates/llm.yaml renders 1 document(s) before, 2 after" in outcome.manual, outcome.manual


def test_a_switch_in_an_object_no_values_path_names_is_not_proven(tmp_path: Path) -> None:
    files = {"templates/_helpers.tpl": STEP_RESOURCES, "templates/steps.yaml": STEPS, "values.yaml": STEPS_VALUES}
    chart = chart_with(tmp_path, "app", files)
    outcome = _fix(chart, opt_in=True)
    # was: proven, with values documentation that said `dra.enabled` sits in 'each object the "$spec" argument of
    # the helper's include names', where no user could set it
    assert not outcome.proven and not outcome.changes, outcome.report()
    assert "templates/steps.yaml:16: the helper app.resources gets `$spec`" in outcome.manual, outcome.manual


MODELS = """\
{{- range $i, $model := .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: model-{{ $i }}
spec:
  selector:
    matchLabels: {app: model-{{ $i }}}
  template:
    metadata:
      labels: {app: model-{{ $i }}}
    spec:
      containers:
        - name: model
          image: model
          resources:
            {{- include "app.resources" $model | nindent 12 }}
{{- end }}
"""


def test_a_helper_given_each_item_of_a_list_documents_and_proves_the_switch_in_each_item(tmp_path: Path) -> None:
    files = {"templates/_helpers.tpl": STEP_RESOURCES, "templates/models.yaml": MODELS, "values.yaml": "models: []\n"}
    chart = chart_with(tmp_path, "app", files)
    outcome = _fix_with(chart, "models:\n  - gpus: 2\n")
    # was: documented as `dra.enabled` in "each models.<name>", a map entry, for a list (and proven without ever
    # setting it); now proven with models[0] given `dra.enabled: true`, as the comment says
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert "`dra.enabled: true` in each models[] requests" in " ".join((chart / "values.yaml").read_text().split())
    on = _render(chart, "models:\n  - gpus: 2\n    dra: {enabled: true}\n")
    assert sorted(d["kind"] for d in on) == ["Deployment", "ResourceClaimTemplate"]
    assert not any(d["kind"] == "ResourceClaimTemplate" for d in _render(chart, "models:\n  - gpus: 2\n"))


ONE_MODEL = (
    MODELS.replace("{{- range $i, $model := .Values.models }}", "{{- $model := .Values.model }}")
    .replace("{{ $i }}", "one")
    .removesuffix("{{- end }}\n")
)


@pytest.mark.parametrize("again", [False, True], ids=["set-once", "set-again"])
def test_a_helper_given_a_variable_set_once_to_a_values_object_proves_the_switch_in_that_object(
    tmp_path: Path, again: bool
) -> None:
    """A fork of vLLM's production stack serves one model, `$modelSpec := .Values.servingEngineSpec.modelSpec`, where
    the upstream ranges over a list: the switch sits in that object (`model.dra.enabled`). Was: manual, 'gets
    `$model`, an object no values path names'. A variable the template sets again may hold another object there,
    so that one stays manual."""
    template = ONE_MODEL + ("{{- $model = .Values.other }}\n" if again else "")
    files = {"templates/_helpers.tpl": STEP_RESOURCES, "templates/model.yaml": template, "values.yaml": "model: {}\n"}
    chart = chart_with(tmp_path, "app", files)
    outcome = _fix_with(chart, "model:\n  gpus: 2\n")
    if again:
        assert not outcome.proven and not outcome.changes, outcome.report()
        assert "gets `$model`, an object no values path names" in outcome.manual, outcome.manual
        return
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert "`dra.enabled: true` in model requests" in " ".join((chart / "values.yaml").read_text().split())
    on = _render(chart, "model:\n  gpus: 2\n  dra: {enabled: true}\n")
    assert sorted(d["kind"] for d in on) == ["Deployment", "ResourceClaimTemplate"]
    claim = next(d for d in on if d["kind"] == "ResourceClaimTemplate")
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    pod = next(d for d in on if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"].get("limits", {})
    assert not any(d["kind"] == "ResourceClaimTemplate" for d in _render(chart, "model:\n  gpus: 2\n"))
