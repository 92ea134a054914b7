"""On a cluster older than Kubernetes 1.34 the DRA switch fails the render with a clear message, since claims would
never be served there; the rewritten chart failed whatever the values, also where no pod takes a claim (a count of 0,
a GPU switched off: a CPU-only install), which installed before and with the switch on still renders nothing of DRA
but the device's toleration. The check now sits under the claim's own conditions (pattern A and the map-built
rewrite; the helper rewrite already had it so). Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

POD = """\
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              memory: 1Gi
              {{- if .Values.gpu.enabled }}
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- end }}
"""
BUILT = """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- $own := deepCopy .Values.own }}
            {{- $_ := set $own.limits .Values.gpu.resourceName .Values.gpu.count }}
            {{- toYaml $own | nindent 12 }}
"""
OLD = "DRA ResourceClaims need Kubernetes 1.34\\+"


def _render(chart: Path, tmp_path: Path, values: str, kube: str = "1.33") -> str:
    given = tmp_path / "given.yaml"
    given.write_text(values)
    return "".join(m.text for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version=kube)))


@pytest.mark.parametrize(
    ("pod", "values"),
    [
        (POD, "gpu: {{enabled: {enabled}, count: {count}}}\n"),
        (BUILT, "gpu: {{resourceName: nvidia.com/gpu, count: {count}}}\nown: {{limits: {{memory: 1Gi}}}}\n"),
    ],
    ids=["pattern A", "map built"],
)
def test_an_older_cluster_fails_only_where_a_pod_takes_a_claim(tmp_path: Path, pod: str, values: str) -> None:
    given = values.format(enabled="true", count=1)
    files = {"templates/deployment.yaml": deployment("server", pod), "values.yaml": given}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)  # the switch on by default
    for count in (0, "null"):  # no device: renders on 1.33 as before (was: the render failed)
        out = _render(chart, tmp_path, values.format(enabled="true", count=count))
        assert "resourceClaims" not in out and "ResourceClaimTemplate" not in out
    if "enabled" in values:
        assert "nvidia.com/gpu" not in _render(chart, tmp_path, values.format(enabled="false", count=2))
    with pytest.raises(HelmError, match=OLD):  # a pod that takes a claim still fails, clearly
        _render(chart, tmp_path, values.format(enabled="true", count=2))
    assert "ResourceClaimTemplate" in _render(chart, tmp_path, values.format(enabled="true", count=2), kube="1.34")
