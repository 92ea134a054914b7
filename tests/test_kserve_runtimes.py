"""KServe ServingRuntime and ClusterServingRuntime: pod templates KServe merges into each InferenceService's predictor
pods, the InferenceService's container resources winning key by key, so a claim asked for there leaves the runtime's
device key in the pod. They are reported with that reason and what to do, never rewritten (was: `unknown-kind`,
which told the user to add the kind to a workloads file and so migrate it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dramigrate import commands
from dramigrate.commands import Options

RUNTIME = """\
apiVersion: serving.kserve.io/v1alpha1
kind: {kind}
metadata:
  name: nim-embedding
spec:
  supportedModelFormats:
  - name: nvidia-nim-embedding
    autoSelect: true
  containers:
  - name: kserve-container
    image: nvcr.io/example/embedding:24.02
    resources:
      limits:
        nvidia.com/gpu: 1
  workerSpec:
    containers:
    - name: worker-container
      image: nvcr.io/example/embedding:24.02
      resources:
        limits:
          nvidia.com/gpu: 2
"""


@pytest.mark.parametrize("kind", ["ServingRuntime", "ClusterServingRuntime"])
def test_a_serving_runtime_is_reported_with_what_to_do_and_left(tmp_path: Path, kind: str) -> None:
    f = tmp_path / "runtime.yaml"
    f.write_text(RUNTIME.format(kind=kind))
    report = tmp_path / "lint.json"
    commands.do_lint(Options([str(f)], format=["json"], output=report), None)
    findings = [x for x in json.loads(report.read_text())["findings"] if x.get("resource")]
    assert [(x["rule"], x["line"]) for x in findings] == [("report-only-kind", 14), ("report-only-kind", 21)]
    assert all("resources of each InferenceService" in x["message"] for x in findings)
    commands.do_fix(Options([str(f)], format=["json"], output=tmp_path / "fix.json"))
    assert f.read_text() == RUNTIME.format(kind=kind)
