"""Pattern A (the device key written in the template) in a KServe InferenceService, whose predictor holds one
container under `model:` instead of a `containers:` list: the rewrite puts `resourceClaims` in the predictor (beside
`model:`) and `claims` under `model.resources`, where the manifest migration puts them. The single-container keys
come from rules/workloads.yaml (`singleContainers`), not from code per kind. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {{ .Release.Name }}-asr
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    minReplicas: 1
    {{- with .Values.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    model:
      modelFormat:
        name: vLLM
      storageUri: oci://example/asr
      resources:
        limits:
          memory: {{ .Values.memory }}
          nvidia.com/gpu: {{ .Values.gpus | quote }}
"""
VALUES = "memory: 8Gi\ngpus: 2\nnodeSelector: {}\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chart = chart_with(tmp_path_factory.mktemp("kserve"), "asr", {"templates/isvc.yaml": ISVC, "values.yaml": VALUES})
    # was: manual, "the migration adds no claim to this template's pods" (a pod was only a map with `containers`)
    fix_chart(chart)
    return chart


def _render(chart: Path, values: str) -> list[Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def test_the_predictor_gets_the_claim_beside_its_model_container(fixed: Path) -> None:
    docs = _render(fixed, "dra: {enabled: true}\n")
    predictor = next(d for d in docs if d["kind"] == "InferenceService")["spec"]["predictor"]
    claim = predictor["resourceClaims"][0]
    assert predictor["model"]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": claim["name"]}]}
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert [t["key"] for t in predictor["tolerations"]] == ["nvidia.com/gpu"]


def test_the_switch_off_keeps_the_device_plugin_request(fixed: Path) -> None:
    docs = _render(fixed, "dra: {enabled: false}\n")
    predictor = next(d for d in docs if d["kind"] == "InferenceService")["spec"]["predictor"]
    assert predictor["model"]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert "resourceClaims" not in predictor
    assert [d["kind"] for d in docs] == ["InferenceService"]


DEPLOYMENT = deployment(
    "convert",
    """\
      containers:
        - resources:
            limits:
                memory: 4Gi
                nvidia.com/gpu: {{ .Values.gpus }}
          name: convert
          image: convert:1
""",
)


def test_resources_as_the_first_key_of_a_container_item(tmp_path: Path) -> None:
    """`- resources:` opening the container's list item (exported manifests sort `resources` first): the claims go in
    at the map's own key column (here four spaces deeper), the rewrite is proven (was: manual, "pattern F: the
    container's resources are templated")."""
    chart = chart_with(tmp_path, "convert", {"templates/d.yaml": DEPLOYMENT, "values.yaml": "gpus: 1\n"})
    fix_chart(chart)
    docs = _render(chart, "dra: {enabled: true}\n")
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    claim = pod["resourceClaims"][0]["name"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "4Gi"}, "claims": [{"name": claim}]}
    assert pod["containers"][0]["name"] == "convert"


def test_two_templates_with_one_file_name_in_two_folders(tmp_path: Path) -> None:
    """Two workload templates named alike in two folders (`cloud/isvc.yaml`, `local/isvc.yaml`): the rewritten chart
    renders (was: it did not, "multiple definition of template", the two helpers named alike), each service naming
    a claim template that renders; asking alike, they share one (sharedtemplate.py)."""
    files = {
        "templates/cloud/isvc.yaml": ISVC.replace("-asr", "-cloud"),
        "templates/local/isvc.yaml": ISVC.replace("-asr", "-local"),
        "values.yaml": VALUES,
    }
    chart = chart_with(tmp_path, "pair", files)
    fix_chart(chart)
    docs = _render(chart, "dra: {enabled: true}\n")
    claims = {
        d["metadata"]["name"]: d["spec"]["predictor"]["resourceClaims"][0]["resourceClaimTemplateName"]
        for d in docs
        if d["kind"] == "InferenceService"
    }
    templates = {d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    assert set(claims) == {"release-name-cloud", "release-name-local"}
    assert set(claims.values()) == templates and len(templates) == 1


HELPERS = (
    '{{- define "srv.models" -}}{{ toJson (merge (.Values.extraModels | default dict) .Values.models) }}{{- end }}\n'
)
PER_MODEL = """\
{{- $models := include "srv.models" . | fromJson }}
{{- range $key, $model := $models }}
{{- if $model.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $key }}
spec:
  selector:
    matchLabels: {app: {{ $key }}}
  template:
    metadata:
      labels: {app: {{ $key }}}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: 1
{{- end }}
{{- end }}
"""


def test_one_pod_per_item_of_a_map_a_helper_builds(tmp_path: Path) -> None:
    """A pod per enabled item of a map the template assigns from a helper (`$models := include ... | fromJson`, then
    `range $key, $model := $models`): the claim template assigns the map the same way, and every rendered pod gets a
    claim from it (was: manual, "the device key is inside `range $key, $model := $models`")."""
    values = "models:\n  small: {enabled: true}\n  large: {enabled: false}\n"
    files = {"templates/_helpers.tpl": HELPERS, "templates/models.yaml": PER_MODEL, "values.yaml": values}
    chart = chart_with(tmp_path, "models", files)
    fix_chart(chart)
    docs = _render(chart, "dra: {enabled: true}\nmodels: {large: {enabled: true}}\n")
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    templates = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert sorted(pods) == ["large", "small"] and len(templates) == 1
    for pod in pods.values():
        assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == templates[0]
        assert pod["containers"][0]["resources"] == {"claims": [{"name": pod["resourceClaims"][0]["name"]}]}
    assert [d["kind"] for d in _render(chart, "dra: {enabled: true}\nmodels: {small: {enabled: false}}\n")] == []
