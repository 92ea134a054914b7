"""A pod whose `tolerations:` key writes its list on the same line (bitnami's `tolerations: {{- include
"common.tplvalues.render" (dict "value" .Values.tolerations "context" $) | nindent 8 }}` under `if .Values.tolerations`,
or `tolerations: {{- toYaml .Values.tolerations | nindent 8 }}`): the pass-through did not see the pod's own list and
added a second `tolerations:` key, so with a toleration of the user's and the DRA values the render had the key twice
(Helm keeps the last: one list dropped without a word) and fix refused. The DRA toleration now joins the pod's own list
on that line; proven by (L) and (D). Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\ntolerations: []\n"
MINE = "tolerations:\n  - key: dedicated\n    operator: Exists\n"
RENDER = """\
{{- define "app.tplvalues.render" -}}
{{- if typeIs "string" .value }}
  {{- tpl .value .context }}
{{- else }}
  {{- tpl (.value | toYaml) .context }}
{{- end }}
{{- end -}}
"""
TPLVALUES = """\
      {{- if .Values.tolerations }}
      tolerations: {{- include "app.tplvalues.render" (dict "value" .Values.tolerations "context" $) | nindent 8 }}
      {{- end }}
"""
TOYAML = """\
      tolerations: {{- toYaml .Values.tolerations | nindent 8 }}
"""
# the action carried on to the next line (moophlo's stable-diffusion chart): the DRA toleration went into a second
# `tolerations:` key, and the proof refused the render that wrote the key twice
TOYAML_TWO_LINES = """\
      tolerations: {{- toYaml .Values.tolerations
          | nindent 8 }}
"""

# the key and its list on one line inside `with` (zw's video-poc): the DRA toleration went into a second key
WITH_ON_KEY_LINE = """\
      {{- with .Values.tolerations }}
      tolerations: {{ toYaml . | nindent 8 }}
      {{- end }}
"""


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


@pytest.mark.parametrize(
    "tolerations",
    [TPLVALUES, TOYAML, TOYAML_TWO_LINES, WITH_ON_KEY_LINE],
    ids=["tplvalues-under-if", "toyaml", "toyaml-two-lines", "with-on-key-line"],
)
def test_the_dra_toleration_joins_a_list_written_on_the_key_line(tmp_path: Path, tolerations: str) -> None:
    template = deployment(
        "{{ .Release.Name }}-server",
        tolerations
        + """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
    )
    files = {"values.yaml": VALUES, "templates/_tplvalues.tpl": RENDER, "templates/server.yaml": template}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    mine = tmp_path / "mine.yaml"
    mine.write_text(MINE)
    outcome = run_chart(
        chart, ChartOptions(values_files=(mine,)), load_rules(), Settings(), Target.parse("1.36"), "fix"
    )
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart, (mine,)) == _docs(original, (mine,))
    pod = _docs(chart, (mine, tmp_path / "mine-dra.yaml"))["Deployment", "release-name-server"]["spec"]["template"]
    keys = [t["key"] for t in pod["spec"]["tolerations"]]
    assert sorted(keys) == ["dedicated", "nvidia.com/gpu"]  # the user's toleration kept, the device's beside it


FALLBACK_VALUES = """\
worker:
  tolerations: []
  resources:
    limits:
      nvidia.com/gpu: 1
tolerations:
  - key: spot
    operator: Exists
"""


def test_the_dra_toleration_joins_a_component_list_that_defaults_to_the_charts(tmp_path: Path) -> None:
    """`with (.Values.worker.tolerations | default .Values.tolerations)`: the pass-through added a second
    `tolerations:` key beside it, written twice with the DRA values (fix refused); the DRA toleration now joins the list
    the `with` picks, the chart's `spot` toleration kept."""
    template = deployment(
        "{{ .Release.Name }}-worker",
        """\
      {{- with (.Values.worker.tolerations | default .Values.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: worker
          image: worker:1
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
""",
    )
    original = chart_with(tmp_path / "original", "app", {"values.yaml": FALLBACK_VALUES, "templates/w.yaml": template})
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)
    pod = _docs(chart, (chart / "values-dra.yaml",))["Deployment", "release-name-worker"]["spec"]["template"]["spec"]
    assert sorted(t["key"] for t in pod["tolerations"]) == ["nvidia.com/gpu", "spot"]
