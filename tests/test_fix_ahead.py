"""fix of a large tree runs ahead: the files grep keeps go to the worker pool during the walk, and the kustomize
graphs are built, migrated and proven in a thread beside the pool, while the files are done. What fix writes and
reports for the graphs is what a small run gives, where the graphs come after the files: proven graphs written,
an unprovable one and one with a suppressed request left as they are."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli
from test_kustomize import A100_PATCH, FILES, STACKS, make_repo, snapshot

from dramigrate import prefilter

SUPPRESSION = "      # dramigrate: disable=kustomize-device-patch\n"
SUPPRESSED = A100_PATCH.replace("      containers:", SUPPRESSION + "      containers:")
GRAPHS = {
    **STACKS,  # a proven stack of overlays, an unprovable CPU overlay, an overlay on a remote base
    **{f"left/{rel}": text for rel, text in FILES.items()},
    "left/overlays/a100/gpus.yaml": SUPPRESSED,  # a graph fix leaves alone
}
# enough files for grep and the pool: device pods and ConfigMaps
PADDING = {
    f"pad/team-{i % 7}/f-{i}.yaml": ONE_GPU_POD.format(name=f"pod-{i}")
    if i % 5 == 0
    else f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{i}\ndata:\n  a: b\n"
    for i in range(prefilter.MIN_FILES + 40)
}


def _fix(repo: Path, run_cli: RunCli) -> tuple[int, list[dict], dict[str, str]]:
    """fix's exit code, its findings outside pad/ (the repository's path left out) and the files after it."""
    code, out, err = run_cli(["fix", ".", "--format", "json"], cwd=repo)
    findings = [
        json.loads(json.dumps(f).replace(str(repo), "<repo>"))
        for f in json.loads(out)["findings"]
        if not f["file"].startswith("pad/")
    ]
    return code, findings, snapshot(repo)


@pytest.mark.skipif(prefilter._grep() is None or shutil.which("git") is None, reason="no GNU grep with -P, or no git")
def test_fix_of_a_large_tree_writes_and_reports_its_graphs_as_a_small_run(tmp_path: Path, run_cli: RunCli) -> None:
    small = make_repo(tmp_path / "small", GRAPHS)
    large = make_repo(tmp_path / "large", {**GRAPHS, **PADDING})
    code, findings, files = _fix(small, run_cli)
    large_code, large_findings, large_files = _fix(large, run_cli)
    assert large_code == code
    assert large_findings == findings
    assert {p: t for p, t in large_files.items() if not p.startswith("pad/")} == files
    written = {p for p, t in files.items() if GRAPHS.get(p) != t}
    assert "stack/base/train.yaml" in written, "the stack is proven and written"
    assert not {p for p in written if p.startswith(("cpu/", "left/"))}, "nothing of the other graphs is written"
    assert "resourceClaims" in large_files["pad/team-0/f-0.yaml"], "the files beside the graphs are migrated"


def _diff_outside_pad(text: str) -> str:
    """diff's output without the files under pad/ (each file's part starts at its `--- a/` line)."""
    parts = re.split(r"(?m)^(?=--- )", text)
    return "".join(p for p in parts if not p.startswith(("--- a/pad/", "--- /dev/null\n+++ b/pad/")))


@pytest.mark.skipif(prefilter._grep() is None or shutil.which("git") is None, reason="no GNU grep with -P, or no git")
def test_diff_of_a_large_tree_shows_its_graphs_as_a_small_run_and_writes_nothing(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """diff runs ahead as fix does (its graphs migrated beside the pool, their builds' migrations in the pool)."""
    small = make_repo(tmp_path / "small", GRAPHS)
    large = make_repo(tmp_path / "large", {**GRAPHS, **PADDING})
    before = snapshot(large)
    code, out, err = run_cli(["diff", "."], cwd=small)
    large_code, large_out, large_err = run_cli(["diff", "."], cwd=large)
    assert snapshot(large) == before, "diff writes nothing"
    assert large_code == code, large_err
    assert "+++ b/stack/base/train.yaml" in out and "resourceClaims" in out, "the stack is proven and shown"
    assert _diff_outside_pad(large_out) == out
    assert "+++ b/pad/team-0/f-0.yaml" in large_out, "the files beside the graphs are shown too"
