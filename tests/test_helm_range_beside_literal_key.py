"""A container whose resources write the device key literally in each branch of an `if` and merge the user's
values maps entry by entry in a `range` beside it (geekxflood's ersatztv chart: `nvidia.com/gpu: {{ .Values.gpu.count
}}` then `{{ $key }}: {{ $value }}` over `.Values.resources.limits`). With the values maps empty, the finding used to
be placed on the `range`'s line (any `x: y` line matches it) and the chart refused as a values map "not passed through
as is"; the finding is now placed on the literal key, and the pattern-A rewrite is proven. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

POD = """\
      containers:
        - name: transcode
          image: example/transcode:1
          livenessProbe:
            httpGet:
              path: /
              port: 8409
          resources:
            {{- if .Values.gpu.enabled }}
            {{- if or .Values.resources.limits .Values.resources.requests }}
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- range $key, $value := .Values.resources.limits }}
              {{ $key }}: {{ $value }}
              {{- end }}
            requests:
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- range $key, $value := .Values.resources.requests }}
              {{ $key }}: {{ $value }}
              {{- end }}
            {{- else }}
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
            requests:
              nvidia.com/gpu: {{ .Values.gpu.count }}
            {{- end }}
            {{- else }}
            {{- toYaml .Values.resources | nindent 12 }}
            {{- end }}
"""
VALUES = "gpu:\n  enabled: false\n  count: 1\nresources: {}\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranged")
    chart = chart_with(
        root, "transcode", {"templates/deploy.yaml": deployment("transcode", POD), "values.yaml": VALUES}
    )
    gpu = root / "gpu.yaml"
    gpu.write_text("gpu: {enabled: true}\n")
    # was: manual, "Deployment/transcode: the values map resources is not passed through as is"
    fix_chart(chart, values=(gpu,))
    return chart


def _pod(chart: Path, values: str) -> dict[str, Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    docs = [d for m in rendered for d in yaml.safe_load_all(m.text) if d]
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


@pytest.mark.parametrize("resources", ["{}", "{limits: {memory: 4Gi}, requests: {cpu: 500m}}"])
def test_the_pod_claims_the_gpu_with_or_without_the_values_maps(fixed: Path, resources: str) -> None:
    pod = _pod(fixed, f"gpu: {{enabled: true, count: 2}}\nresources: {resources}\ndra: {{enabled: true}}\n")
    container = pod["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in {**container.get("limits", {}), **container.get("requests", {})}
    assert container["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]


def test_the_switch_off_keeps_the_device_plugin_request(fixed: Path) -> None:
    pod = _pod(fixed, "gpu: {enabled: true, count: 2}\ndra: {enabled: false}\n")
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "resourceClaims" not in pod
