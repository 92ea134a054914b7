"""A container helper that writes the resources map of a model picked from a values map by a values key
(intel-gaudi's infaas-inference: `with $model := index .Values.models .Values.deployedModel`, then
`{{- $model.resources | toYaml | nindent 12 }}`). No helper line names the device key and the map is not built in
variables, so before the chart was manual work ("no line of a helper writes the device key"). Now the toYaml line
writes a copy of that map, which the DRA branch edits as it edits a map the helper builds (the device key dropped,
the claim added; the values left as they are), and the count is read from the model the values pick, so another
model asks for its own count. Real renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPER = """\
{{- define "app.containers" }}
{{- with $model := index .Values.models .Values.deployedModel }}
        - name: server
          image: {{ $model.image }}
          resources:
            {{- $model.resources | toYaml | nindent 12 }}
{{- end }}
{{- end }}
"""
DEPLOYMENT = """\
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
        {{- include "app.containers" . }}
        - name: proxy
          image: proxy:1
"""
VALUES = """\
deployedModel: small
models:
  small:
    image: small:1
    resources:
      limits:
        cpu: "2"
        nvidia.com/gpu: 1
  large:
    image: large:1
    resources:
      limits:
        nvidia.com/gpu: 4
      requests:
        nvidia.com/gpu: 4
"""


def _objects(chart: Path, *sets: str) -> dict[str, Any]:
    docs = [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text)]
    return {d["kind"]: d for d in docs if d}


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    files = {"templates/_helpers.tpl": HELPER, "templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES}
    original = chart_with(tmp_path_factory.mktemp("original"), "app", files)
    fixed = chart_with(tmp_path_factory.mktemp("fixed"), "app", files)
    fix_chart(fixed)  # asserts the proof
    return original, fixed


@pytest.mark.parametrize("model", ["small", "large"])
def test_the_picked_model_asks_for_its_devices_through_a_claim(charts: tuple[Path, Path], model: str) -> None:
    original, fixed = charts
    before = _objects(original, f"deployedModel={model}")["Deployment"]["spec"]["template"]["spec"]
    wanted = before["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    after = _objects(fixed, f"deployedModel={model}")
    pod = after["Deployment"]["spec"]["template"]["spec"]
    server = pod["containers"][0]["resources"]
    assert server["claims"] == [{"name": "gpu"}] and "nvidia.com/gpu" not in str(server)
    if model == "small":
        assert server["limits"] == {"cpu": "2"}  # the rest of the map is kept
    (claim,) = pod["resourceClaims"]
    template = after["ResourceClaimTemplate"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == wanted


def test_switched_off_the_chart_renders_as_before(charts: tuple[Path, Path]) -> None:
    original, fixed = charts
    for model in ("small", "large"):
        was = _objects(original, f"deployedModel={model}")
        assert _objects(fixed, f"deployedModel={model}", "dra.enabled=false") == was
