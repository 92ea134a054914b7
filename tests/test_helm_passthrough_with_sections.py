"""The pass-through (pattern C) of a container written inside `with` its values map section by section, beside a
device key the chart adds itself when its switch is on and the map's limits lack the key (plex-media-server:
`{{- with .Values.pms.resources }}`, `limits:` then `{{- with .limits }}`, and `nvidia.com/gpu: 1` under `if and
$.Values.pms.gpu.nvidia.enabled (not (hasKey .limits "nvidia.com/gpu"))`), with the user's count in the map.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import chart_with, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

MEDIA = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-media
spec:
  selector:
    matchLabels: {app: media}
  template:
    metadata:
      labels: {app: media}
    spec:
      tolerations:
        {{- toYaml .Values.tolerations | nindent 8 }}
      containers:
      - name: media
        image: media:1
        env:
        {{- if .Values.media.gpu.enabled }}
        - name: GPU_DEVICES
          value: all
        {{- end }}
        {{- with .Values.media.resources }}
        resources:
          limits:
          {{- with .limits }}
            {{ toYaml . | indent 12 | trim }}
          {{- end }}
          {{- if and $.Values.media.gpu.enabled (not (hasKey .limits "nvidia.com/gpu")) }}
            nvidia.com/gpu: 1
          {{- end }}
          {{- if .requests }}
          requests:
            {{ toYaml .requests | indent 12 | trim }}
          {{- end }}
        {{- end }}
"""
VALUES = "media:\n  gpu:\n    enabled: false\n  resources: {}\ntolerations: []\n"
TWO = "media:\n  gpu:\n    enabled: true\n  resources:\n    limits:\n      cpu: 2\n      nvidia.com/gpu: 2\n"


def test_a_count_in_the_map_beside_the_charts_own_key_is_passed_through(tmp_path: Path) -> None:
    """The user's 2 GPUs in the map, the chart's switch on: the DRA values render the container's claims, which the
    template wrote no line for, and the chart's own `nvidia.com/gpu: 1` stays out, its `hasKey` reading the counts
    the DRA values keep beside the map (was: manual, the claims missing and the chart's own key back in the pod)."""
    chart = chart_with(tmp_path, "media", {"values.yaml": VALUES, "templates/media.yaml": MEDIA})
    values = tmp_path / "gpu.yaml"
    values.write_text(TWO)
    fix_chart(chart, values=(values,))
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "limits": {"cpu": 2}}, pod
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"], pod
    assert list(counts.values()) == [2]
    # the chart's own key, with the switch and no count in the map, renders as before with the device-plugin values
    _, _, plain = dra_render(chart, values)
    assert plain[next(iter(plain))]["containers"][0]["resources"]["limits"] == {"cpu": 2, "nvidia.com/gpu": 2}


# the pod's volumes end with a user's list written at column 0 (plex's extraVolumes), between its tolerations and
# its containers
VOLUMES = """\
      volumes:
      - name: transcode
        emptyDir: {}
      {{- if .Values.extraVolumes }}
{{ toYaml .Values.extraVolumes | indent 6 }}
      {{- end }}
      containers:
"""
POOL = "tolerations:\n  - key: pool\n    operator: Exists\n"
GPU_TOLERATION = "tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n"


@pytest.mark.parametrize("own", ["", GPU_TOLERATION], ids=["gpu values", "gpu values that tolerate the taint"])
def test_a_users_later_tolerations_keep_the_gpu_toleration_past_an_action_at_column_0(tmp_path: Path, own: str) -> None:
    """`-f gpu-dra.yaml -f pool.yaml` with an action line at column 0 in the pod spec: the pod keeps the GPU
    toleration beside the user's (was: the toleration only in the DRA values' copy of the list, which the user's list
    replaced, and with a values file tolerating the taint itself, manual: the proof refused the chart)."""
    media = MEDIA.replace("      containers:\n", VOLUMES)
    chart = chart_with(tmp_path, "media", {"values.yaml": VALUES + "extraVolumes: []\n", "templates/media.yaml": media})
    values = tmp_path / "gpu.yaml"
    values.write_text(TWO + own)
    fix_chart(chart, values=(values,))
    later = tmp_path / "pool.yaml"
    later.write_text(POOL)

    pods = [
        d["spec"]["template"]["spec"]
        for m in render_chart(chart, RenderOptions(values_files=(tmp_path / "gpu-dra.yaml", later)))
        for d in yaml.safe_load_all(m.text)
        if d and d["kind"] == "Deployment"
    ]
    assert [[t["key"] for t in pod["tolerations"]] for pod in pods] == [["pool", "nvidia.com/gpu"]], pods
    _, _, alone = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert [t["key"] for t in next(iter(alone.values()))["tolerations"]] == ["nvidia.com/gpu"]
