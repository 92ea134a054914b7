"""A chart whose pod template is a define, included bare (a Deployment or a Job) or wrapped by another define in a
custom kind the migration leaves on its device plugin (silogen's `kaiwo.enabled` renders a KaiwoService or a
KaiwoJob holding the Deployment or the Job), run with the user's values file turning the wrapper ON. `fix -` of
that render leaves the wrapper alone (`unknown-kind`), while the defaults render the bare pod, which it migrates.
Before, the chart was manual work with those values: the rewrite's DRA branch was not guarded by the wrapper key
(only the proof's flip of a key the values leave off could find that guard), so the ResourceClaimTemplate it adds
at the end of the define came out indented inside the wrapper (a YAML parse error), or, for a literal key, the
wrapper's finding made the template look like a helper included in two pods. Now the values given renders that
wrapper and the flip the pod, so the switch is guarded by `(not .Values.wrapper.enabled)`. Real renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPER = """\
{{- define "app.resources" -}}
requests:
  cpu: "1"
  {{- if .Values.gpus }}
  nvidia.com/gpu: "{{ .Values.gpus }}"
  {{- end }}
limits:
  {{- if .Values.gpus }}
  nvidia.com/gpu: "{{ .Values.gpus }}"
  {{- end }}
{{- end -}}
"""
HELPER_RESOURCES = """\
          resources:
            {{- include "app.resources" . | nindent 12 }}"""
LITERAL_RESOURCES = """\
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}"""
DEPLOYMENT = """\
{{- define "app.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: app:1
RESOURCES
{{- end -}}

{{- define "app.wrapped" -}}
apiVersion: example.com/v1alpha1
kind: Wrapper
metadata:
  name: app
spec:
  deployment:
    {{- include "app.deployment" . | nindent 4 }}
{{- end -}}

{{- if .Values.wrapper.enabled -}}
{{- include "app.wrapped" . }}
{{- else -}}
{{- include "app.deployment" . }}
{{- end -}}
"""
VALUES = "gpus: 1\nwrapper:\n  enabled: false\n"
WRAPPED = "wrapper:\n  enabled: true\ngpus: 2\n"


def _objects(chart: Path, *files: Path, sets: tuple[str, ...] = ()) -> dict[str, Any]:
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=files, set_values=sets))
        for d in yaml.safe_load_all(m.text)
    ]
    return {d["kind"]: d for d in docs if d}


def _chart(tmp: Path, helper: bool) -> Path:
    files = {
        "templates/app.yaml": DEPLOYMENT.replace("RESOURCES", HELPER_RESOURCES if helper else LITERAL_RESOURCES),
        "values.yaml": VALUES,
        "wrapped.yaml": WRAPPED,
    }
    if helper:
        files["templates/_helpers.tpl"] = HELPER
    return chart_with(tmp, "app", files)


@pytest.mark.parametrize("helper", [True, False], ids=["helper-writes-the-key", "literal-key-in-the-define"])
def test_values_that_turn_the_wrapper_on_get_a_proven_rewrite(tmp_path: Path, helper: bool) -> None:
    chart = _chart(tmp_path, helper)
    wrapped = chart / "wrapped.yaml"
    before = _objects(chart, wrapped)
    outcome = fix_chart(chart, values=(wrapped,))  # asserts the proof
    assert any("Wrapper" in label and "unknown-kind" in label for label in outcome.checked)
    after = _objects(chart, wrapped)
    assert after == before  # the wrapper stays on its device plugin, as `fix -` leaves it
    pod = _objects(chart)["Deployment"]["spec"]["template"]["spec"]  # the defaults: the bare Deployment
    resources = pod["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "gpu"}] and "nvidia.com/gpu" not in str(resources)
    assert "ResourceClaimTemplate" in _objects(chart)
    off = _objects(chart, sets=("dra.enabled=false",))["Deployment"]["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" in str(off["containers"][0]["resources"])
