"""A resources map built in template variables (pattern F) whose one DRA claim would ask for more than 32 devices: 8
GPUs and 32 EFA interfaces, or 40 GPUs. The scheduler allocates at most 32 devices to one claim, so such a pod would
stay pending with no word; the manifest migration gives each device kind a claim of its own there (and refuses one
kind over 32). The rewritten chart fails the render with the switch on, naming the limit and the way back (was: a
40-device claim rendered without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

BUILT = (
    '{{- $limits := dict "nvidia.com/gpu" .Values.gpus }}\n'
    "{{- if .Values.efa.enabled }}\n"
    '{{- $_ := set $limits "vpc.amazonaws.com/efa" .Values.efa.count }}\n'
    "{{- end }}\n"
    '{{- $resources := dict "limits" $limits }}\n'
    + deployment(
        "{{ .Release.Name }}-train",
        """\
      containers:
        - name: train
          image: train:1
          resources:
            {{- toYaml $resources | nindent 12 }}
""",
    )
)
FILES = {"values.yaml": "gpus: 8\nefa:\n  enabled: true\n  count: 4\n", "templates/train.yaml": BUILT}


def _render(chart: Path, sets: tuple[str, ...]) -> tuple[str, str]:
    try:
        options = RenderOptions(set_values=sets, kube_version="1.34")
        return "".join(m.text for m in render_chart(chart, options)), ""
    except Exception as exc:  # noqa: BLE001 - Helm's error is what the test reads
        return "", str(exc)


@pytest.mark.parametrize("sets", [("efa.count=32",), ("gpus=40", "efa.enabled=false")])
def test_a_claim_over_32_devices_fails_the_render_with_the_way_back(tmp_path: Path, sets: tuple[str, ...]) -> None:
    chart = chart_with(tmp_path, "train", FILES)
    fix_chart(chart)

    stream, error = _render(chart, sets)
    assert "at most 32" in error and "dra.enabled=false" in error, stream
    assert _render(chart, (*sets, "dra.enabled=false"))[1] == ""
    assert _render(chart, ("efa.count=24",))[1] == ""  # 32 devices: one claim, as the migration gives
