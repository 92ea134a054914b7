"""Pattern D in a subchart: an umbrella that vendors a chart whose named helper writes the device key (vLLM
production-stack's `chart.resources`, given each `servingEngineSpec.modelSpec` entry, in etalab's and SUSE's
umbrellas), beside a template of its own with a literal device key. The charts here are written for the test, with
the shape of vllm-stack 0.1.8: its pods write their tolerations under `if X` and again `with X`. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPERS = """\
{{- define "engine.resources" -}}
{{- $spec := . -}}
requests:
  memory: 1Gi
  {{- if gt (int $spec.requestGPU) 0 }}
  {{- $gpuType := default "nvidia.com/gpu" $spec.requestGPUType }}
  {{ $gpuType }}: {{ $spec.requestGPU | quote }}
  {{- end }}
limits:
  memory: 1Gi
  {{- if gt (int $spec.requestGPU) 0 }}
  {{- $gpuType := default "nvidia.com/gpu" $spec.requestGPUType }}
  {{ $gpuType }}: {{ $spec.requestGPU | quote }}
  {{- end }}
{{- end }}
"""
ENGINE = """\
{{- range $spec := .Values.modelSpec }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ $.Release.Name }}-{{ $spec.name }}-engine"
spec:
  selector:
    matchLabels:
      model: {{ $spec.name }}
  template:
    metadata:
      labels:
        model: {{ $spec.name }}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai
          resources: {{- include "engine.resources" $spec | nindent 12 }}
      {{- if $.Values.tolerations }}
      {{-   with $.Values.tolerations }}
      tolerations:
        {{-   toYaml . | nindent 8 }}
      {{-   end }}
      {{- end }}
{{- end }}
"""
ENGINE_VALUES = "modelSpec: []\ntolerations: []\n"
MODELS = {"modelSpec": [{"name": "big", "requestGPU": 4}]}
EMBED = deployment(
    "{{ .Release.Name }}-embed",
    """\
      containers:
        - name: embed
          image: tei
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.embed.gpu }}
""",
)


def _engine(root: Path) -> Path:
    return chart_with(
        root,
        "engine",
        {"templates/_helpers.tpl": HELPERS, "templates/engine.yaml": ENGINE, "values.yaml": ENGINE_VALUES},
    )


def _pods(chart: Path, values: dict[str, Any], tmp: Path) -> dict[str, dict[str, Any]]:
    given = tmp / f"values-{len(list(tmp.glob('values-*.yaml')))}.yaml"
    given.write_text(yaml.safe_dump(values))
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, RenderOptions(values_files=(given,)))]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"}


def test_a_pod_whose_tolerations_sit_under_if_and_with_of_one_list_gets_the_device_toleration(tmp_path: Path) -> None:
    """Was: manual, 'the rewritten chart has no tolerations' (vllm-stack 0.1.8's engine writes its values list under
    `if X` and `with X`: the DRA toleration went inside the `if`, so it rendered only beside a list of the user's).
    Now the DRA branch writes the list whether the values give one or not."""
    chart = _engine(tmp_path)
    values = tmp_path / "models.yaml"
    values.write_text(yaml.safe_dump(MODELS))
    fix_chart(chart, values=(values,))
    pods = _pods(chart, MODELS, tmp_path)
    assert pods["release-name-big-engine"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert "nvidia.com/gpu" not in str(pods["release-name-big-engine"]["containers"][0]["resources"])


@pytest.mark.parametrize("own", [True, False], ids=["beside-its-own-literal-key", "alone"])
def test_an_umbrella_whose_vendored_subchart_helper_writes_the_key_is_rewritten(tmp_path: Path, own: bool) -> None:
    """Was: manual, 'no line of a helper in this chart writes the device key' (the helper rewrite took a chart
    alone). Now the subchart's helper is rewritten where it is vendored, each model its own switch
    (`engine.modelSpec[].dra.enabled`), and the umbrella's own literal key (etalab's embeddings; SUSE's umbrella has
    none) takes `dra.enabled` in its values."""
    files = {"values.yaml": "embed:\n  gpu: 1\nengine:\n  tolerations: []\n"}
    umbrella = chart_with(tmp_path, "stack", {**files, "templates/embed.yaml": EMBED} if own else files)
    (umbrella / "Chart.yaml").write_text(
        "apiVersion: v2\nname: stack\nversion: 0.1.0\n"
        "dependencies:\n  - name: engine\n    version: 0.1.0\n    repository: https://charts.example.org\n"
    )
    _engine(umbrella / "charts")
    user = {"engine": MODELS}
    values = tmp_path / "user.yaml"
    values.write_text(yaml.safe_dump(user))
    original = _pods(umbrella, user, tmp_path)
    fix_chart(umbrella, values=(values,))
    pods = _pods(umbrella, user, tmp_path)
    claims = {
        name: [c["resourceClaimTemplateName"] for c in pod.get("resourceClaims", [])] for name, pod in pods.items()
    }
    assert all(len(own) == 1 for own in claims.values()), claims
    assert all("nvidia.com/gpu" not in str(pod["containers"][0]["resources"]) for pod in pods.values())
    docs = [yaml.safe_load(m.text) for m in render_chart(umbrella, RenderOptions(values_files=(values,)))]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d and d["kind"] == "ResourceClaimTemplate"
    }
    assert sorted(counts.values()) == ([1, 4] if own else [4])
    off = {
        "dra": {"enabled": False},
        "engine": {"modelSpec": [{**spec, "dra": {"enabled": False}} for spec in MODELS["modelSpec"]]},
    }
    assert _pods(umbrella, off, tmp_path) == original
