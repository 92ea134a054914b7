"""A device request written by a library chart's `define` (NVIDIA's NIM charts: `templates/base.yaml` is only
`{{ include "nim.common.v1.deployment" . }}`, and the library in charts/ writes `toYaml .Values.resources`).

The finding points at the define's line in the library chart (the include line is related), and fix rewrites that
define as pattern B, proven by rendering (a library that charts/ also holds packed: test_helm_library_twins.py). A
small chart modelled on the NIM ones; one fix per case.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LIBRARY = """\
{{/*
lib.deployment writes the app's Deployment
*/}}
{{- define "lib.deployment" -}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
spec:
  selector:
    matchLabels: {app: nim}
  template:
    metadata:
      labels: {app: nim}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: nim:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
{{- end -}}
"""
VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1  # Number of GPUs\n"


def _chart(root: Path) -> Path:
    files = {"values.yaml": VALUES, "templates/base.yaml": '{{ include "lib.deployment" . }}\n'}
    chart = chart_with(root, "nim", files, version="1.0.0")
    library = {
        "Chart.yaml": "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
        "templates/_deployment.tpl": LIBRARY,
    }
    chart_with(chart / "charts", "library_chart", library)
    return chart


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def _pod(chart: Path, *files: Path) -> dict[str, Any]:
    manifests = render_chart(chart, RenderOptions(values_files=files, kube_version="1.34"))
    docs = [d for m in manifests for d in yaml.safe_load_all(m.text) if d]
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("library-define")
    original = _chart(root / "original")
    chart = shutil.copytree(original, root / "fixed" / "nim")
    return original, chart, fix_chart(chart)


def test_the_finding_points_at_the_library_define_line(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, outcome = fixed
    finding = next(f for f in outcome.findings if f.rule == "legacy-device-request")
    line = LIBRARY.splitlines().index("          resources:") + 1
    assert (finding.file, finding.line) == (f"{chart}/charts/library_chart/templates/_deployment.tpl", line)
    assert (f"{chart}/templates/base.yaml", 1) in [
        (r.file, r.line) for r in finding.related if "lib.deployment" in r.note
    ]


def test_the_library_define_gets_the_pass_through(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, chart, outcome = fixed
    assert "charts/library_chart/templates/_deployment.tpl" in {c.rel for c in outcome.changes}
    assert (chart / "templates" / "base.yaml").read_text() == (original / "templates" / "base.yaml").read_text()
    assert _pod(chart) == _pod(original)  # the values as they were: the device-plugin request
    pod = _pod(chart, chart / "values-dra.yaml")
    claim = pod["containers"][0]["resources"]["claims"][0]["name"]
    assert "limits" not in pod["containers"][0]["resources"]
    assert [c["name"] for c in pod["resourceClaims"]] == [claim]
