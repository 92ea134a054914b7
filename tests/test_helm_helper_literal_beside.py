"""A chart whose one workload gets its device key from a resources helper and another writes its own literal key
(the shape of chrisys code-doc-assistant: an ollama StatefulSet that includes `app.ollamaResources`, a vLLM
Deployment with `nvidia.com/gpu` in its template). The helper rewrite and the pattern-A rewrite of the other
template read one `dra.enabled` from values.yaml. Real renders; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

HELPERS = """\
{{- define "app.ollamaResources" -}}
limits:
  cpu: "2"
  nvidia.com/gpu: {{ .Values.ollama.gpus }}
{{- end }}
"""
OLLAMA = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: ollama
spec:
  serviceName: ollama
  selector:
    matchLabels: {app: ollama}
  template:
    metadata:
      labels: {app: ollama}
    spec:
      containers:
        - name: ollama
          image: ollama
          resources:
            {{- include "app.ollamaResources" . | nindent 12 }}
"""
VLLM = deployment(
    "vllm",
    """\
      containers:
        - name: vllm
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.vllm.gpus }}
""",
)
VALUES = "ollama:\n  gpus: 1\nvllm:\n  gpus: 2\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/ollama.yaml": OLLAMA,
        "templates/vllm.yaml": VLLM,
        "values.yaml": VALUES,
    }
    chart = chart_with(tmp_path_factory.mktemp("literal-beside"), "app", files)
    return chart, fix_chart(chart)  # was: manual, 'templates/vllm.yaml: a device request there does not come from'


def _render(chart: Path, extra: str) -> dict[str, Any]:
    from dramigrate.helm.render import RenderOptions, render_chart

    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    docs = [d for m in render_chart(chart, RenderOptions(values_files=(values,))) for d in yaml.safe_load_all(m.text)]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


def _pod(objects: dict[str, Any], key: str) -> dict[str, Any]:
    return objects[key]["spec"]["template"]["spec"]


def test_one_switch_moves_both_workloads_to_claims(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    assert yaml.safe_load((chart / "values.yaml").read_text())["dra"]["enabled"] is True
    objects = _render(chart, "ollama:\n  gpus: 3\n")
    counts = sorted(
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for key, d in objects.items()
        if key.startswith("ResourceClaimTemplate/")
    )
    assert counts == [2, 3]
    for key in ("StatefulSet/ollama", "Deployment/vllm"):
        pod = _pod(objects, key)
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
        assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])


def test_switched_off_both_keep_their_device_plugin_requests(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    objects = _render(chart, "dra:\n  enabled: false\n")
    assert not [key for key in objects if key.startswith("ResourceClaimTemplate/")]
    assert _pod(objects, "StatefulSet/ollama")["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert _pod(objects, "Deployment/vllm")["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_the_device_class_in_values_yaml_is_each_claims(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    objects = _render(chart, "dra:\n  deviceClassName: gpu-h100.example.com\n")
    classes = [
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
        for key, d in objects.items()
        if key.startswith("ResourceClaimTemplate/")
    ]
    assert classes == ["gpu-h100.example.com"] * 2


def test_a_literal_template_under_its_own_switch_is_rewritten_beside_the_helper(tmp_path: Path) -> None:
    """The vLLM Deployment only renders with `backend: vllm`, which the values leave off and the proof turns on."""
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/ollama.yaml": OLLAMA,
        "templates/vllm.yaml": '{{- if eq .Values.backend "vllm" }}\n' + VLLM + "{{- end }}\n",
        "values.yaml": "backend: ollama\n" + VALUES,
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)  # was: manual, 'with backend changed to "vllm" ... renders differently from the migrated original'
    pod = _pod(_render(chart, "backend: vllm\n"), "Deployment/vllm")
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
