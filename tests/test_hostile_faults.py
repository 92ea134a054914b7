"""Hostile items and faults of the fifth sweep (issue 11's acceptance check run from outside the repo), each one a
thing a user would notice: a process left running after a kill -9, a metadata change on rewrite, a secret in a
message, a good file left unmigrated because of its neighbour."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_executable, processes_with

CHART_YAML = "apiVersion: v2\nname: {name}\nversion: 0.1.0\n"


def _kustomize_tree(root: Path) -> Path:
    base = root / "base"
    base.mkdir(parents=True)
    (base / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (base / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    overlay = root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: o-\n")
    return root


def _chart(root: Path) -> Path:
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(CHART_YAML.format(name="chart"))
    (chart / "values.yaml").write_text("gpus: 1\n")
    pod = ONE_GPU_POD.format(name="pod").replace("gpu: 1", "gpu: {{ .Values.gpus }}")
    (chart / "templates" / "pod.yaml").write_text(pod)
    return chart


@pytest.mark.parametrize("flag", ["--kustomize-binary", "--helm-binary"])
def test_a_kill_9_of_dramigrate_also_ends_the_programs_it_runs(tmp_path: Path, flag: str) -> None:
    """`kubectl kustomize` and a `--helm-binary` (with whatever they start: helm plugins, kustomize's helm) used to
    run on after a kill -9 of dramigrate, until their own time limit of minutes."""
    started = tmp_path / "started"
    program = tmp_path / ("kustomize" if flag == "--kustomize-binary" else "helm")
    program.write_text(f"#!/bin/sh\ntouch {started}\nsleep 300 &\nwait\n")  # a child of its own, like a plugin
    program.chmod(0o755)
    tree = _kustomize_tree(tmp_path / "tree") if flag == "--kustomize-binary" else _chart(tmp_path)
    marker = f"DRAMIGRATE_TEST_MARK={tmp_path}"
    env = {**os.environ, "DRAMIGRATE_TEST_MARK": str(tmp_path)}
    parent = subprocess.Popen(
        [dramigrate_executable(), "diff", str(tree), flag, str(program)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            if started.exists():
                break
            time.sleep(0.05)
        else:
            pytest.fail("the program was never started")
        time.sleep(0.2)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    for _ in range(100):
        if not processes_with(marker):
            break
        time.sleep(0.05)
    assert processes_with(marker) == []
