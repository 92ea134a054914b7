"""A chart with its own DRA switch, fixed without a -f file: the switch goes on in the chart's values.yaml, a change to
the chart's defaults, so Chart.yaml gets the patch bump and the `artifacthub.io/changes` entry every other rewrite gets
(issue 7's chart conventions). With -f the user's file changes and the chart is left as it is. Real renders."""

from __future__ import annotations

from pathlib import Path

from conftest import RunCli, chart_with

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      {{- if .Values.gpu.draEnabled }}
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: app-gpu
      {{- end }}
      containers:
        - name: main
          image: busybox
          resources:
            {{- if .Values.gpu.draEnabled }}
            claims:
              - name: gpu
            {{- else }}
            limits:
              nvidia.com/gpu: 1
            {{- end }}
{{- if .Values.gpu.draEnabled }}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: app-gpu
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
            allocationMode: ExactCount
            count: 1
{{- end }}
"""
CHART = """\
apiVersion: v2
name: app
version: 1.2.3
annotations:
  artifacthub.io/changes: |
    - kind: fixed
      description: an older fix
"""


def _chart(tmp_path: Path) -> Path:
    chart = chart_with(
        tmp_path, "app", {"templates/deployment.yaml": DEPLOYMENT, "values.yaml": "gpu:\n  draEnabled: false\n"}
    )
    (chart / "Chart.yaml").write_text(CHART)
    return chart


def test_own_switch_written_into_the_chart_values_bumps_the_chart(run_cli: RunCli, tmp_path: Path) -> None:
    chart = _chart(tmp_path)
    code, _, err = run_cli(["fix", str(chart)])
    assert code == 0 and "set gpu.draEnabled=true" in err, err
    assert (chart / "values.yaml").read_text() == "gpu:\n  draEnabled: true\n"
    text = (chart / "Chart.yaml").read_text()
    assert "\nversion: 1.2.4\n" in text and text.count("- kind:") == 2, text
    assert run_cli(["fix", str(chart)])[0] == 0 and (chart / "Chart.yaml").read_text() == text  # once


def test_own_switch_written_into_a_users_file_leaves_the_chart(run_cli: RunCli, tmp_path: Path) -> None:
    chart = _chart(tmp_path)
    mine = tmp_path / "mine.yaml"
    mine.write_text("gpu: {}\n")
    code, _, err = run_cli(["fix", str(chart), "-f", str(mine)])
    assert code == 0 and "draEnabled: true" in mine.read_text(), err
    assert (chart / "Chart.yaml").read_text() == CHART
