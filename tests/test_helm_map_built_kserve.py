"""Pattern F (the container's resources a map built in template variables, mapvars.py) in a KServe InferenceService,
whose predictor holds one container under `model:` instead of a `containers:` list (rh-ai-quickstart's llm-service:
a model's values `resources` map copied with `deepCopy`, the accelerator key added with `set` when the map lacks
it). The single-container keys come from rules/workloads.yaml (`singleContainers`). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

ISVC = """\
{{- range $key, $model := .Values.models }}
{{- if $model.enabled }}
{{- $deviceConfig := index $.Values.deviceConfigs ($model.device | default $.Values.device) }}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {{ $key }}
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    model:
      modelFormat:
        name: vLLM
      resources:
        {{- $acceleratorType := $deviceConfig.acceleratorType }}
        {{- $customResources := $model.resources | deepCopy }}
        {{- if and $acceleratorType (not (hasKey $customResources.limits $acceleratorType)) }}
          {{- $_ := set $customResources.limits $acceleratorType ($model.accelerators | default "1") }}
        {{- end }}
        {{- toYaml $customResources | nindent 8 }}
{{- end }}
{{- end }}
"""
VALUES = """\
device: gpu
deviceConfigs:
  gpu:
    acceleratorType: nvidia.com/gpu
  hpu:
    acceleratorType: habana.ai/gaudi
models:
  small:
    enabled: true
    accelerators: 2
    resources:
      limits:
        memory: 8Gi
"""


def _render(chart: Path, values: str) -> list[Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def test_a_map_built_for_a_kserve_model_container_takes_the_claim(tmp_path: Path) -> None:
    """Was: manual, `the values map models.small.resources is not passed through as is` (a map built in variables
    was looked for under a `containers:` list only). Now the predictor gets the claim beside `model:` behind the
    dra.enabled switch, and the switch off keeps the device-plugin request."""
    chart = chart_with(tmp_path, "llm", {"templates/isvc.yaml": ISVC, "values.yaml": VALUES})
    fix_chart(chart)
    docs = _render(chart, "dra: {enabled: true}\n")
    predictor = next(d for d in docs if d["kind"] == "InferenceService")["spec"]["predictor"]
    claim = predictor["resourceClaims"][0]
    assert predictor["model"]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": claim["name"]}]}
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    off = _render(chart, "dra: {enabled: false}\n")
    predictor = next(d for d in off if d["kind"] == "InferenceService")["spec"]["predictor"]
    assert predictor["model"]["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert "resourceClaims" not in predictor and [d["kind"] for d in off] == ["InferenceService"]


def test_a_device_the_values_pick_otherwise_takes_a_claim_named_as_the_migration_names_it(tmp_path: Path) -> None:
    """The values name a Gaudi accelerator too (`deviceConfigs.hpu`), whose claim the migration names `gaudi`, not
    `gpu`: the DRA branch names the claim after the device it took from the map (was: manual, `the migration of
    habana.ai/gaudi adds more than the claim and its toleration`)."""
    chart = chart_with(tmp_path, "llm", {"templates/isvc.yaml": ISVC, "values.yaml": VALUES})
    fix_chart(chart)
    for device, claim in (("gpu", "gpu"), ("hpu", "gaudi")):
        docs = _render(chart, f"dra: {{enabled: true}}\ndevice: {device}\n")
        predictor = next(d for d in docs if d["kind"] == "InferenceService")["spec"]["predictor"]
        assert [c["name"] for c in predictor["resourceClaims"]] == [claim]
        assert predictor["model"]["resources"]["claims"] == [{"name": claim}]
        template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
        assert [r["name"] for r in template["spec"]["spec"]["devices"]["requests"]] == [claim]
