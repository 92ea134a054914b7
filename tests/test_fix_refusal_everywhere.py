"""A file fix refuses to write (read-only, hard-linked, another user's; for a chart or a kustomize graph, any file of
it that fix would write) is called fixable by no report of any command: lint and diff said so already, and fix's own
report still called the refused request `(fixable)` and counted it, in the text summary and the JSON report, right
after naming the file as not written. Each says what the others say: not fixable, the file, fix's reason, --force."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_in_process
from test_hostile_sweep32 import REFUSALS, _counted_chart, _refused_by_fix


def _requests(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix) and "[legacy-device-request]" in line]


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_fix_does_not_call_fixable_a_file_it_refused(tmp_path: Path, kind: str) -> None:
    tree, bad = _refused_by_fix(tmp_path, kind)
    before = bad.read_bytes()

    code, _, err = dramigrate_in_process(["fix", "tree"], cwd=tmp_path)
    json_code, out, _ = dramigrate_in_process(["fix", "tree", "--format", "json"], cwd=tmp_path)

    assert code == 2 and json_code == 2 and "Traceback" not in err, err
    assert bad.read_bytes() == before
    refused = _requests(err, "tree/bad.yaml:")
    assert refused and all("(fixable)" not in line for line in refused), err
    assert all(f"fix did not write tree/bad.yaml: {REFUSALS[kind]}" in line and "--force" in line for line in refused)
    assert "fixable with `dramigrate fix`" not in err, err  # the good file is fixed: nothing else is left to fix
    doc = json.loads(out)
    assert not [f for f in doc["findings"] if f["file"] == "tree/bad.yaml" and f["fixable"]], doc["findings"]
    assert doc["summary"]["fixable"] == 0, doc["summary"]


@pytest.mark.parametrize("refused", ["templates/pod.yaml", "values.yaml"])
def test_fix_does_not_call_fixable_a_chart_it_refused(tmp_path: Path, refused: str) -> None:
    chart = _counted_chart(tmp_path)
    (chart / refused).chmod(0o444)

    code, _, err = dramigrate_in_process(["fix", "c"], cwd=tmp_path)
    _, out, _ = dramigrate_in_process(["fix", "c", "--format", "json"], cwd=tmp_path)

    assert code == 2 and "Traceback" not in err, err
    request = _requests(err, "c/templates/pod.yaml:")
    assert request and all("(fixable)" not in line for line in request), err
    assert all(f"fix did not write c/{refused}: read-only file" in line for line in request), err
    assert "fixable with" not in err, err
    assert json.loads(out)["summary"]["fixable"] == 0, out


KUSTOMIZE = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def kustomize_tree(root: Path) -> Path:
    """A git checkout holding a kustomize base with a 4-GPU Deployment and an overlay whose inline JSON6902 patch sets
    2 GPUs, plus a plain GPU manifest beside them: fix rewrites the base's files, the overlay's kustomization and
    both kustomization files."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "base").mkdir()
    (root / "base" / "train.yaml").write_text(ONE_GPU_POD.format(name="train").replace("gpu: 1", "gpu: 4"))
    (root / "base" / "kustomization.yaml").write_text("resources:\n- train.yaml\n")
    (root / "overlay").mkdir()
    (root / "overlay" / "kustomization.yaml").write_text(
        "resources:\n- ../base\nnameSuffix: -small\npatches:\n- target: {kind: Pod, name: train}\n  patch: |-\n"
        "    - op: replace\n      path: /spec/containers/0/resources/limits/nvidia.com~1gpu\n      value: 2\n"
    )
    (root / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    return root


@KUSTOMIZE
@pytest.mark.parametrize("refused", ["base/kustomization.yaml", "overlay/kustomization.yaml", "base/train.yaml"])
def test_fix_does_not_call_fixable_a_kustomize_graph_it_refused(tmp_path: Path, refused: str) -> None:
    tree = kustomize_tree(tmp_path / "tree")
    (tree / refused).chmod(0o444)

    code, _, err = dramigrate_in_process(["fix", "."], cwd=tree)

    assert code == 2 and "Traceback" not in err, err
    graph = [
        line for line in err.splitlines() if line.startswith(("base/", "overlay/")) and "] " in line and "error" in line
    ]
    assert graph and all("(fixable)" not in line for line in graph), err
    assert all(f"{refused}: read-only file" in line for line in graph), err
    assert "fixable with" not in err and "resourceClaimTemplateName" in (tree / "good.yaml").read_text(), err


GRAPH_FILES = ["base/kustomization.yaml", "overlay/kustomization.yaml", "base/train.yaml"]


@KUSTOMIZE
@pytest.mark.parametrize("refused", GRAPH_FILES)
def test_lint_names_a_kustomize_graph_fix_would_refuse(tmp_path: Path, refused: str) -> None:
    """A kustomize graph is written whole or not at all. lint called its requests `(fixable)` when fix would refuse a
    read-only kustomization.yaml it writes (the base's, which gains `configurations:`, or the overlay's, whose device
    patch it rewrites), and when a base's manifest was read-only it still called the overlay's device patch fixable."""
    tree = kustomize_tree(tmp_path / "tree")
    (tree / refused).chmod(0o444)

    code, out, err = dramigrate_in_process(["lint", "."], cwd=tree)
    fix_code, _, fix_err = dramigrate_in_process(["fix", "."], cwd=tree)

    assert f"bad input {refused}: read-only file" in fix_err and fix_code == 2  # what fix does, as lint must say it
    graph = [line for line in out.splitlines() if line.startswith(("base/", "overlay/")) and "error [" in line]
    assert len(graph) == 2 and all("(fixable)" not in line for line in graph), out
    assert all(f"{refused}: read-only file" in line and "--force" in line for line in graph), out
    assert all("fix would not write" in line for line in graph), out
    assert "1 fixable with `dramigrate fix`" in out.splitlines()[-1] and code == 1, out + err  # good.yaml


@KUSTOMIZE
@pytest.mark.parametrize("refused", GRAPH_FILES)
def test_diff_says_why_each_file_of_a_refused_kustomize_graph_is_not_written(tmp_path: Path, refused: str) -> None:
    """diff named the refused file with fix's reason, but each other file of its graph only with `and X is not`:
    why not, and the way out (--force), was said by fix alone."""
    tree = kustomize_tree(tmp_path / "tree")
    (tree / refused).chmod(0o444)

    code, _, err = dramigrate_in_process(["diff", "."], cwd=tree)

    assert code == 2, err
    said = [line for line in err.splitlines() if line.startswith("bad input")]
    assert len(said) >= 3 and all(refused in line and "read-only file" in line for line in said), err
    assert all("--force writes it anyway" in line for line in said), err


@KUSTOMIZE
def test_lint_does_not_name_a_read_only_overlay_fix_leaves_alone(tmp_path: Path) -> None:
    """An overlay with no device patch of its own (a name prefix) is not rewritten: read-only, it is no refusal."""
    tree = kustomize_tree(tmp_path / "tree")
    plain = tree / "plain"
    plain.mkdir()
    (plain / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: dev-\n")
    (plain / "kustomization.yaml").chmod(0o444)

    _, out, _ = dramigrate_in_process(["lint", "."], cwd=tree)
    fix_code, _, fix_err = dramigrate_in_process(["fix", "."], cwd=tree)

    assert fix_code == 0, fix_err
    assert "fix would not write" not in out and "3 fixable with `dramigrate fix`" in out.splitlines()[-1], out
