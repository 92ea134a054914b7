"""One pod whose init container takes its device from a named helper (pattern D) and whose main container from
`toYaml .Values.resources` (pattern B), the shape of an ollama chart. When the helper copies the device key from the
values map the main container takes (`nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}`), the
pass-through takes the pod: the DRA values drop the key from the map, so the copy writes none, and the helper's
container gets the map's claims; fix refused the chart before. A helper that writes its own key is still refused,
with both containers named by pattern and line."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import assert_second_fix_quiet, chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

COPYING_HELPER = """\
{{- define "llm.pull" -}}
- name: pull
  image: llm:1
  resources:
    limits:
      memory: 1Gi
      {{- if index .Values.resources.limits "nvidia.com/gpu" }}
      nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}
      {{- end }}
{{- end }}
"""
OWN_KEY_HELPER = """\
{{- define "llm.pull" -}}
- name: pull
  image: llm:1
  resources:
    limits:
      nvidia.com/gpu: 1
{{- end }}
"""
DEPLOYMENT = deployment(
    "{{ .Release.Name }}-llm",
    """\
      initContainers:
        {{- include "llm.pull" . | nindent 8 }}
      containers:
        - name: serve
          image: llm:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)
VALUES = """\
resources:
  limits:
    memory: 1Gi
    nvidia.com/gpu: 1
"""


def _pod(chart: Path, values: tuple[Path, ...]) -> dict:
    for m in render_chart(chart, RenderOptions(values_files=values, kube_version="1.34")):
        for doc in yaml.safe_load_all(m.text):
            if doc and doc["kind"] == "Deployment":
                return doc["spec"]["template"]["spec"]
    raise AssertionError("no Deployment rendered")


def test_a_helper_container_copying_the_values_map_key_gets_the_maps_claims(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": COPYING_HELPER, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "llm", files)

    fix_chart(chart)

    pod = _pod(chart, (chart / "values-dra.yaml",))
    pull, serve = pod["initContainers"][0]["resources"], pod["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in pull["limits"] and "nvidia.com/gpu" not in serve["limits"]
    assert pull["claims"] == serve["claims"] == [{"name": "gpu", "request": "gpu"}]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert _pod(chart, ())["initContainers"][0]["resources"] == {"limits": {"memory": "1Gi", "nvidia.com/gpu": 1}}
    # was: the second fix passed the claims into the helper's container again, "`claims:` is written twice", exit 1
    assert_second_fix_quiet(chart)


def test_a_helper_container_with_its_own_device_key_beside_a_values_map_names_both(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": OWN_KEY_HELPER, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "llm", files)
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.proven
    assert "container pull at" in outcome.manual and "deployment.yaml:12: pattern D" in outcome.manual
    assert "container serve at" in outcome.manual and "deployment.yaml:17: pattern B" in outcome.manual
