"""A container whose resources are a map built in variables when the item has one, and otherwise written key by key
in the template: the device key (its name looked up in values by the item's device) beside cpu under both `limits:`
and `requests:`, the last section ending in an `if` of its own (rh-ai llm-service's InferenceService, one per
model of a values map); the pod's tolerations written by `toYaml` at the column of their `tolerations:` key. Both
branches get the DRA claim behind dra.enabled, the other keys stay, and the DRA toleration lines up with the
chart's items; proven by (L) and (D). The same template in an umbrella's subchart takes the switch under the
subchart's key (the RAG umbrella, which vendors llm-service)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

MODELS = """\
{{- range $name, $model := .Values.models }}
{{- if $model.enabled }}
{{- $type := index $.Values.accelerators ($model.device | default $.Values.device) }}
{{- $count := $model.gpus | default "1" }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: server
          image: server:1
          {{- if $model.resources }}
          resources:
            {{- $res := deepCopy $model.resources }}
            {{- if $type }}
            {{- $_ := set $res.limits $type $count }}
            {{- end }}
            {{- toYaml $res | nindent 12 }}
          {{- else }}
          resources:
            limits:
              cpu: "2"
              {{- if $type }}
              {{ $type }}: {{ $count | quote }}
              {{- end }}
            requests:
              cpu: "1"
              {{- if $type }}
              {{ $type }}: {{ $count | quote }}
              {{- end }}
              {{- if $model.storage }}
              ephemeral-storage: {{ $model.storage }}
              {{- end }}
          {{- end }}
      {{- $tolerations := $model.tolerations | default list }}
      {{- if $tolerations }}
      tolerations:
      {{- toYaml $tolerations | nindent 6 }}
      {{- end }}
{{- end }}
{{- end }}
"""
VALUES = """\
device: gpu
accelerators:
  gpu: nvidia.com/gpu
  cpu: null
models:
  mapped:
    enabled: true
    gpus: 2
    resources: {limits: {memory: 8Gi}}
  plain:
    enabled: true
    storage: 10Gi
    tolerations: [{key: spot, operator: Exists}]
  bare:
    enabled: true
  small:
    enabled: false
    device: cpu
"""


def _render(chart: Path, sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


def _docs(chart: Path, sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [d for _, text in _render(chart, sets) for d in yaml.safe_load_all(text) if d]


def _pods(chart: Path, sets: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    docs = _docs(chart, sets)
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


def _fix(chart: Path) -> Any:
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return outcome


def test_a_device_key_beside_other_keys_in_both_sections(tmp_path: Path) -> None:
    """Was: "the pod also writes a device key outside the map the template builds (a branch without the map), in a
    form the rewrite does not take (the sections hold other keys beside it)", nothing written."""
    original = chart_with(tmp_path / "original", "models", {"values.yaml": VALUES, "templates/models.yaml": MODELS})
    chart = shutil.copytree(original, tmp_path / "fixed" / "models")
    _fix(chart)
    assert _render(chart, ("dra.enabled=false",)) == _render(original)  # with the switch off: byte-identical
    pods = _pods(chart)
    plain = pods["plain"]
    assert plain["containers"][0]["resources"] == {
        "limits": {"cpu": "2"},
        "requests": {"cpu": "1", "ephemeral-storage": "10Gi"},
        "claims": [{"name": "gpu"}],
    }
    # without the storage `if` the last section ends in, the claim is still written
    assert pods["bare"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"},
        "requests": {"cpu": "1"},
        "claims": [{"name": "gpu"}],
    }
    # the DRA toleration after the values' own, in one list
    assert [t["key"] for t in plain["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert pods["mapped"]["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}
    # a model on a device without an accelerator: no claim, nothing else changed
    cpu = ("models.small.enabled=true",)
    assert _pods(chart, cpu)["small"] == _pods(original, cpu)["small"]


@pytest.mark.parametrize("alias", ["", "llm"])
def test_the_same_template_in_an_umbrella_subchart(tmp_path: Path, alias: str) -> None:
    """Was: "pattern F (another template shape): the idiomatic rewrites take a literal device key ..." at the
    subchart's template, nothing written; now the subchart is rewritten, its switch under its key in the umbrella
    (its alias when it has one)."""
    key = alias or "serving"
    original = chart_with(
        tmp_path / "original",
        "stack",
        {
            "values.yaml": f"{key}:\n  device: gpu\n",
            "charts/serving/Chart.yaml": "apiVersion: v2\nname: serving\nversion: 0.3.0\n",
            "charts/serving/values.yaml": VALUES,
            "charts/serving/templates/models.yaml": MODELS,
        },
    )
    (original / "Chart.yaml").write_text(
        "apiVersion: v2\nname: stack\nversion: 0.1.0\ndependencies:\n"
        "  - name: serving\n    version: 0.3.0\n    repository: https://charts.example.com\n"
        + (f"    alias: {alias}\n" if alias else "")
    )
    chart = shutil.copytree(original, tmp_path / "fixed" / "stack")
    outcome = _fix(chart)
    assert f"{key}.dra.enabled" in outcome.usage, outcome.usage
    assert _render(chart, (f"{key}.dra.enabled=false",)) == _render(original)
    pods = _pods(chart)
    assert pods["plain"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    claims = {d["metadata"]["name"]: d for d in _docs(chart) if d["kind"] == "ResourceClaimTemplate"}
    (mapped,) = pods["mapped"]["resourceClaims"]
    (request,) = claims[mapped["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 2
    # the umbrella's version is bumped, not the subchart's (the umbrella pins it)
    assert yaml.safe_load((chart / "Chart.yaml").read_text())["version"] == "0.1.1"
    assert yaml.safe_load((chart / "charts/serving/Chart.yaml").read_text())["version"] == "0.3.0"
