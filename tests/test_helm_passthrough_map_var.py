"""A values resources map merged into a template variable and passed through whole (`toYaml $merged`), the template
reading the device key back from that variable for another container (voxel51's delegated operators: one Deployment
per item of a values map, `$merged := merge (dict) ($v.resources | default dict) ($base.resources | default dict)`,
the telemetry sidecar's env set when `dig "limits" "nvidia.com/gpu" "" $merged` is not empty). The DRA values drop
the device key, keep its count in `deviceCounts` beside the map, and the read takes it from there; the pod gets the
item's `resourceClaims`. Proven by (L) and (D)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import assert_second_fix_quiet, chart_with, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

DEPLOYMENTS = """\
{{- $base := .Values.ops.template }}
{{- range $k, $v := .Values.ops.deployments }}
{{- $merged := MERGED }}
{{- $gpu := not (empty (READ)) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $k }}
spec:
  selector:
    matchLabels: {app: {{ $k }}}
  template:
    metadata:
      labels: {app: {{ $k }}}
    spec:
      containers:
        - name: main
          image: main:1
          resources:
            {{- toYaml $merged | nindent 12 }}
        - name: sidecar
          image: sidecar:1
          env:
            - name: NVIDIA_VISIBLE_DEVICES
              value: {{ ternary "all" "none" $gpu | quote }}
{{- end }}
"""
VALUES = """\
ops:
  template:
    resources:
      limits: {memory: 1Gi}
  deployments:
    cpu: {}
"""
GPU = """\
ops:
  deployments:
    gpu:
      resources:
        limits:
          nvidia.com/gpu: 2
"""
MERGE = "merge (dict) ($v.resources | default dict) ($base.resources | default dict)"
OVERWRITE = "mergeOverwrite (dict) (deepCopy ($base.resources | default dict)) ($v.resources | default dict)"


@pytest.mark.parametrize(
    ("merged", "read"),
    [
        (MERGE, 'dig "limits" "nvidia.com/gpu" "" $merged'),
        (OVERWRITE, 'dig "limits" "nvidia.com/gpu" "" $merged'),
        (MERGE, 'index $merged "limits" "nvidia.com/gpu"'),
    ],
)
def test_a_device_key_read_back_from_a_merged_map_variable(tmp_path: Path, merged: str, read: str) -> None:
    """Was: "reads ops.deployments.gpu.resources.limits["nvidia.com/gpu"] itself, which the DRA values file removes,
    in a form fix does not rewrite", and the pod got no resourceClaims (the merge in a variable was not read as the
    item's map), nothing written."""
    template = DEPLOYMENTS.replace("MERGED", merged).replace("READ", read)
    original = chart_with(tmp_path / "original", "ops", {"values.yaml": VALUES, "templates/ops.yaml": template})
    chart = shutil.copytree(original, tmp_path / "fixed" / "ops")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    fix_chart(chart, "1.36", (gpu,))

    def render(root: Path, values: Path) -> list[str]:
        return [m.text for m in render_chart(root, RenderOptions(values_files=(values,)))]

    assert render(chart, gpu) == render(original, gpu)  # the device-plugin values: byte-identical
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    pod = pods["gpu"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert pod["containers"][1]["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]  # as it was
    (claim,) = pod["resourceClaims"]
    assert counts[claim["resourceClaimTemplateName"]] == 2
    assert pods["cpu"]["containers"][1]["env"][0]["value"] == "none" and "resourceClaims" not in pods["cpu"]
    # a second fix leaves the read it rewrote to take deviceCounts as it is (was: wrapped in a second `dig`)
    assert_second_fix_quiet(chart, "-f", str(gpu), "--kube-version", "1.36")
