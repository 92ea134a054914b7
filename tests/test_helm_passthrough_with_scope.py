"""The pass-through (pattern B) of a pod written whole inside `with` its values section (tke-ai-playbook's vLLM
chart: `{{- with .Values.server }}` around the Deployment, `toYaml .resources` in the container): the pod-level
keys the rewrite adds sit inside the `with`, where `.Values` is no longer the root's, so they read the map's
siblings from the root (`$.Values.server.resourceClaims`).

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, dra_render, fix_chart

SERVER = """\
{{- with SECTION }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-server
spec:
  replicas: {{ .replicas }}
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
      - name: server
        image: {{ .image }}
        resources:
          {{- toYaml .resources | nindent 10 }}
{{- end }}
"""
VALUES = "server:\n  replicas: 1\n  image: vllm:1\n  resources:\n    limits:\n      cpu: 2\n      nvidia.com/gpu: 2\n"


@pytest.mark.parametrize("section", [".Values.server", "$.Values.server"])
def test_a_pod_inside_with_its_values_section_gets_its_claims(tmp_path: Path, section: str) -> None:
    """fix proves the rewrite and the DRA values give the pod its claim for the 2 GPUs, the device key gone (was: the
    rewritten chart did not render, `nil pointer evaluating interface {}.server` at the pod's `resourceClaims`; with
    `$.Values.server`: manual)."""
    chart = chart_with(
        tmp_path, "srv", {"values.yaml": VALUES, "templates/server.yaml": SERVER.replace("SECTION", section)}
    )
    fix_chart(chart)
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "limits": {"cpu": 2}}, pod
    (claim,) = pod["resourceClaims"]
    assert claim["resourceClaimTemplateName"] in counts, (claim, counts)
    assert list(counts.values()) == [2]
    # the chart's own values render the pod as before: the device-plugin request, no claims
    _, _, plain = dra_render(chart, chart / "values.yaml")
    assert plain[next(iter(plain))]["containers"][0]["resources"] == {"limits": {"cpu": 2, "nvidia.com/gpu": 2}}
    assert "resourceClaims" not in plain[next(iter(plain))]
