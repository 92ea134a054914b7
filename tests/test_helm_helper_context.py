"""Pattern D where the helper's context is not the chart's root (amd-aim-llm's shape): the workload is a named
template included inside `with $ctx`, `$ctx` a dict whose Values are the chart's values merged over a platform
preset (a plain map, not Helm's Values), and the resources helper writes its device key in the `else` of
`if .Values.resources`.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "llm.merged" -}}
{{- mergeOverwrite (index .Values.presets .Values.preset | deepCopy) (deepCopy .Values) | toYaml -}}
{{- end -}}

{{- define "llm.resources" -}}
{{- if .Values.resources -}}
{{- toYaml .Values.resources -}}
{{- else -}}
{{- if .Values.gpus }}
limits:
  cpu: "{{ mul .Values.gpus 4 }}"
  amd.com/gpu: "{{ .Values.gpus }}"
{{- else -}}
limits:
  cpu: "2"
{{- end -}}
{{- end -}}
{{- end -}}
"""
DEPLOYMENT = """\
{{ define "llm.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-llm
spec:
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
    spec:
      containers:
        - name: llm
          image: llm:1
          resources:
            {{- include "llm.resources" . | nindent 12 }}
{{- end -}}

{{- $merged := include "llm.merged" . | fromYaml -}}
{{- $ctx := merge (dict "Values" $merged) (omit . "Values") -}}
{{- with $ctx -}}
{{ include "llm.deployment" . }}
{{- end -}}
"""
VALUES = "preset: big\npresets:\n  big:\n    gpus: 1\n  small:\n    gpus: 0\nresources: {}\n"


def _render(chart: Path, values: str = "") -> list[dict[str, Any]]:
    files: tuple[Path, ...] = ()
    if values:
        extra = chart.parent / f"extra-{abs(hash(values))}.yaml"
        extra.write_text(values)
        files = (extra,)
    manifests = render_chart(chart, RenderOptions(values_files=files))
    return [d for m in manifests for d in yaml.safe_load_all(m.text) if d]


def _fix(chart: Path) -> Any:
    settings = Settings(kube_version="1.36", opt_in=True)
    return run_chart(chart, ChartOptions(), load_rules(), settings, Target.parse("1.36"), "fix")


def test_helper_given_a_merged_values_context_is_rewritten_and_proven(tmp_path: Path) -> None:
    """The switch was read with `$.Values.AsMap`, which a plain map of values does not have: the rewritten chart
    did not render ("interface {} is nil"). And the count was taken as if the key were in the `if` branch: with
    the switch on, no claim. Now the rewrite is proven; the switch off renders as before, on it asks for the
    preset's GPUs through a claim."""
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "llm", files)
    before = _render(chart)
    outcome = _fix(chart)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _render(chart) == before
    on = _render(chart, "dra:\n  enabled: true\npresets:\n  big:\n    gpus: 2\n")
    (deployment,) = [d for d in on if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "8"}, "claims": [{"name": "gpu"}]}, container
    (claim,) = [d for d in on if d["kind"] == "ResourceClaimTemplate"]
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2, claim


SERVER_HELPER = '{{- define "srv.resources" -}}\nlimits:\n  nvidia.com/gpu: {{ .gpus }}\n{{- end -}}\n'
SERVER = """\
{{- with .Values.server }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: srv
spec:
  selector:
    matchLabels: {app: srv}
  template:
    metadata:
      labels: {app: srv}
    spec:
      containers:
        - name: srv
          image: srv:1
          resources:
            {{- include "srv.resources" . | nindent 12 }}
{{- end }}
"""


def test_helper_given_a_dot_that_is_no_values_object_is_refused_with_the_call_site(tmp_path: Path) -> None:
    """`include "srv.resources" .` inside `with .Values.server`: the helper's `.` is the server map, which holds
    no `.Values` for the switch. Was: the rewritten chart did not render ("wrong type for value" at `$.Values`);
    now fix says where and why, and writes nothing."""
    files = {
        "values.yaml": "server:\n  gpus: 1\n",
        "templates/_helpers.tpl": SERVER_HELPER,
        "templates/deployment.yaml": SERVER,
    }
    outcome = _fix(chart_with(tmp_path, "srv", files))
    assert not outcome.proven and not outcome.changes
    assert "templates/deployment.yaml:17: the helper srv.resources gets `.` inside `with .Values.server`" in (
        outcome.manual
    ), outcome.manual
