"""A values switch that makes the chart render its GPU in a kind the migration leaves as is: runai-cli's `runai`
chart renders a RunaiJob (run.ai/v1) with `isRunaiJob: true`, a Job otherwise. `fix -` reports the RunaiJob as
`unknown-kind` and leaves it on the device plugin, so the chart's DRA switch must too: the rewrite guards its DRA
branch with `(not .Values.isRunaiJob)`, found by the proof's own flip of that key. A copy of the corpus chart (with
its `file://` dependency in charts/); skipped when ../shared is absent.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS, CORPUS_MISSING

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SETS = "gpuInt=2,gitSync.sync=false,image=ubuntu"


def _copy(dest: Path) -> Path:
    root = dest / "runai"
    shutil.copytree(CORPUS / "runai-cli/charts/runai", root)
    shutil.copytree(CORPUS / "runai-cli/charts/runai-common", root / "charts" / "runai-common")
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # the corpus is read-only
    return root


def _objects(root: Path, *sets: str) -> list[dict[str, Any]]:
    manifests = render_chart(root, RenderOptions(set_values=(SETS, *sets)))
    return [d for m in manifests for d in yaml.safe_load_all(m.text) if isinstance(d, dict)]


@pytest.fixture(scope="module")
def runai(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    root = _copy(tmp_path_factory.mktemp("runai"))
    options = ChartOptions(set_values=(SETS + ",isRunaiJob=false",))
    outcome = run_chart(root, options, load_rules(), Settings(kube_version="1.36"), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    return {"outcome": outcome, "root": root}


def test_the_job_gets_the_claim(runai: dict[str, Any]) -> None:
    (job,) = [d for d in _objects(runai["root"], "isRunaiJob=false") if d["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])


def test_the_runaijob_stays_on_the_device_plugin(runai: dict[str, Any]) -> None:
    docs = _objects(runai["root"], "isRunaiJob=true")
    (job,) = [d for d in docs if d["kind"] == "RunaiJob"]
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert "resourceClaims" not in pod and not [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert any("RunaiJob" in label and "unknown-kind" in label for label in runai["outcome"].checked)
