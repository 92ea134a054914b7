"""Pattern A whose request and limit device keys each sit under `if` their own count (`if .Values.resources.requests.
gpu` around `"nvidia.com/gpu": {{ .Values.resources.requests.gpu }}`, the limit the same): the claim's count gate covers
those conditions, the limit is the claim's count, and a request that differs from its limit fails the render with
the DRA switch on. Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, dra_render, fix_chart

from dramigrate.helm.render import HelmError

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            requests:
              cpu: {{ .Values.resources.requests.cpu | quote }}
              {{- if .Values.resources.requests.gpu }}
              "nvidia.com/gpu": {{ .Values.resources.requests.gpu }}
              {{- end }}
            limits:
              cpu: {{ .Values.resources.limits.cpu | quote }}
              {{- if .Values.resources.limits.gpu }}
              "nvidia.com/gpu": {{ .Values.resources.limits.gpu }}
              {{- end }}
"""
VALUES = "resources:\n  requests: {{cpu: 1, gpu: {request}}}\n  limits: {{cpu: 2, gpu: {limit}}}\n"
ON = "dra: {enabled: true}\n"


def test_keys_under_their_own_counts_take_the_limit_as_the_claim_count(tmp_path: Path) -> None:
    files = {"templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES.format(request=1, limit=1)}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)  # was manual: "the device keys sit under different conditions"
    on = tmp_path / "on.yaml"
    on.write_text(VALUES.format(request=3, limit=3) + ON)
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [3] and "nvidia.com/gpu" not in str(pods["server"]["containers"])
    on.write_text(VALUES.format(request="null", limit=0) + ON)
    _, counts, pods = dra_render(chart, on)
    assert not counts and "tolerations" not in pods["server"]  # no device asked for: no claim, no toleration
    on.write_text(VALUES.format(request=2, limit=1) + ON)
    with pytest.raises(HelmError, match="request differs from its limit"):
        dra_render(chart, on)
