"""A container whose `resources:` is written twice, each time with the device key: first by a define of a packed
library chart the pod includes, then again by a define of the chart itself (TrueNAS' ix-chart layout). Helm keeps
the second whole and drops the first, so a DRA branch in either define leaves the device-plugin request in the
other's text. fix refuses, and says to write the resources once (was: a message about the library's define alone,
telling the maintainer to override it, which would have left the chart's own copy of the request). A tiny library
chart packed in the test; renders are real."""

from __future__ import annotations

import tarfile
from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LIMITS = """\
{{- define "lib.limits" }}
resources:
  limits:
    cpu: 1
    {{- toYaml .Values.gpus | nindent 4 }}
{{- end }}
"""
OWN = """\
{{- define "app.resources" }}
{{- if .Values.gpus }}
resources:
  limits:
    {{- toYaml .Values.gpus | nindent 4 }}
{{- end }}
{{- end }}
"""
POD = """\
      containers:
        - name: main
          image: busybox
          {{- include "lib.limits" . | nindent 10 }}
          {{- include "app.resources" . | nindent 10 }}
"""


def _chart(root: Path) -> Path:
    lib = chart_with(root / "src", "lib", {"templates/_limits.tpl": LIMITS})
    (lib / "Chart.yaml").write_text("apiVersion: v2\nname: lib\ntype: library\nversion: 1.0.0\n")
    chart = chart_with(
        root,
        "app",
        {"templates/_resources.tpl": OWN, "templates/deployment.yaml": deployment("{{ .Release.Name }}", POD)},
    )
    (chart / "values.yaml").write_text("gpus:\n  nvidia.com/gpu: 1\n")
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 1.0.0\n"
        "  repository: https://charts.example.com\n"
    )
    (chart / "charts").mkdir()
    with tarfile.open(chart / "charts" / "lib-1.0.0.tgz", "w:gz") as tar:
        tar.add(lib, arcname="lib")
    return chart


def test_resources_written_twice_with_the_device_say_to_write_them_once(tmp_path: Path) -> None:
    chart = _chart(tmp_path)
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.changes
    assert "the container writes `resources:` twice, each with nvidia.com/gpu" in outcome.manual, outcome.report()
    assert "once from lib.limits of the library chart lib 1.0.0" in outcome.manual
    assert "Write the container's resources once: drop one of the two includes" in outcome.manual
    assert any(f.rule == "chart-duplicate-key" for f in outcome.findings)


def test_resources_written_once_by_the_library_keep_the_library_message(tmp_path: Path) -> None:
    """The chart's own define writes nothing (no second `resources:`): the library's define is the request."""
    chart = _chart(tmp_path)
    (chart / "templates" / "_resources.tpl").write_text('{{- define "app.resources" }}{{- end }}\n')
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert "its define lib.limits" in outcome.manual, outcome.report()
    assert "writes `resources:` twice" not in outcome.manual
