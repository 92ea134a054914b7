"""Chart.yaml conventions. A chart with its own DRA switch, fixed without a -f file: the switch goes on in the
chart's values.yaml, a change to the chart's defaults, so Chart.yaml gets the patch bump and the
`artifacthub.io/changes` entry every other rewrite gets (issue 7's chart conventions). With -f the user's file
changes and the chart is left as it is. The `artifacthub.io/changes` entry is written in the format the chart's
list uses. Real renders."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import RunCli, chart_with, deployment, dramigrate_in_process, fix_chart


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


DEPLOYMENT = deployment(
    "app",
    """\
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
""",
)
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


@pytest.mark.parametrize(
    ("entries", "added"),
    [
        ("    - Added a Service selector\n", "DRA ResourceClaims behind the dra.enabled switch"),
        (
            "    - kind: fixed\n      description: an older fix\n",
            {"kind": "added", "description": "DRA ResourceClaims behind the dra.enabled switch"},
        ),
    ],
)
def test_artifacthub_changes_extended_in_the_format_the_chart_uses(tmp_path: Path, entries: str, added: object) -> None:
    """Artifact Hub reads `artifacthub.io/changes` as a list of objects (kind, description) or as a list of plain
    strings, never both (ParseChangesAnnotation: one yaml.Unmarshal, then the other): tvarr's strings got a
    `- kind: added` object appended, which Artifact Hub rejects as an invalid changes annotation."""
    from test_helm_idiomatic import write_chart

    chart = write_chart(tmp_path)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\nannotations:\n  artifacthub.io/changes: |\n" + entries
    )
    fix_chart(chart)
    changes = yaml.safe_load(
        yaml.safe_load((chart / "Chart.yaml").read_text())["annotations"]["artifacthub.io/changes"]
    )
    assert len(changes) == 2 and changes[-1] == added and {type(c) for c in changes} == {type(added)}
