"""A chart whose every render stays under the per-render time limit still cannot hold the run: all the renders of one
chart (lint's probes, fix's proof: dozens) share a time limit (DRAMIGRATE_HELM_CHART_TIMEOUT). A hostile chart with a
slow loop in a folder of good files is named with chart-render-limit and the good file is still fixed. Real renders."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli, chart_with

SLOW = """\
{{- range $i := until (int .Values.spin) }}{{- range $j := until 2000 }}{{- end }}{{- end }}
apiVersion: v1
kind: Pod
metadata:
  name: slow
spec:
  containers:
    - name: main
      image: x
      resources:
        limits:
          nvidia.com/gpu: {{ .Values.gpus }}
"""


def test_a_chart_whose_renders_are_each_slow_is_stopped_as_a_whole(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: each render (about a second here, up to the 30 s limit per render) ran to its end, and diff or fix ran
    the dozens of renders of the chart's proof one after another: minutes for one chart."""
    chart_with(tmp_path, "slow", {"templates/pod.yaml": SLOW, "values.yaml": "gpus: 1\nspin: 20000\n"})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    monkeypatch.setenv("DRAMIGRATE_HELM_CHART_TIMEOUT", "2")
    started = time.monotonic()
    code, _, err = run_cli(["fix", tmp_path], timeout=300)
    took = time.monotonic() - started
    assert code == 2, err
    assert "[chart-render-limit] the chart's renders took longer than 2 s in all" in err
    assert "nvidia.com/gpu" in (tmp_path / "slow/templates/pod.yaml").read_text()
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert took < 60, took
