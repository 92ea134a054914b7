"""A path named on the command line that is, or goes through, a symlink to a folder outside the tree (`fix sd`,
sd -> ../elsewhere): fix writes nothing through it and diff says so, each with the same finding; a link that stays
inside the tree is still followed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

CHART_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-gpu
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
"""
REFUSED = "whose target is outside the tree; not written through it"


def _snapshot(top: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(top.rglob("*")) if p.is_file()}


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """tree/ holding good.yaml, sd -> ../elsewhere (a folder of GPU manifests and a chart) and inner -> real/ (a
    folder inside the tree); returns tree/."""
    outside, tree = tmp_path / "elsewhere", tmp_path / "tree"
    (outside / "sub").mkdir(parents=True)
    (outside / "pod.yaml").write_text(ONE_GPU_POD.format(name="outside"))
    (outside / "sub" / "pod.yaml").write_text(ONE_GPU_POD.format(name="deeper"))
    chart_with(outside, "app", {"templates/pod.yaml": CHART_POD, "values.yaml": "gpus: 1\n"})
    (tree / "real").mkdir(parents=True)
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "real" / "pod.yaml").write_text(ONE_GPU_POD.format(name="inner"))
    (tree / "sd").symlink_to("../elsewhere")
    (tree / "chart").symlink_to("../elsewhere/app")
    (tree / "inner").symlink_to("real")
    return tree


@pytest.mark.parametrize("named", ["sd", "sd/", "sd/sub", "sd/pod.yaml", "chart"])
def test_fix_and_diff_of_a_named_link_out_of_the_tree_write_nothing_and_say_why(linked: Path, named: str) -> None:
    outside = linked.parent / "elsewhere"
    before = _snapshot(outside)

    for command, what in (("diff", "fix would not write it"), ("fix", "not written")):
        code, out, err = run_dramigrate([command, named], cwd=linked)

        assert code == 2, err
        assert f"{what}: reached through the symlink {named.split('/')[0]} -> ../elsewhere" in err, err
        assert REFUSED in err and "Traceback" not in err
        assert "+++" not in out  # diff shows no change fix would not make
        assert _snapshot(outside) == before


def test_a_named_link_that_stays_in_the_tree_is_followed(linked: Path) -> None:
    code, out, err = run_dramigrate(["diff", "inner", "good.yaml"], cwd=linked)
    assert code == 0 and "+++ b/inner/pod.yaml" in out and "+++ b/good.yaml" in out, err

    code, _, err = run_dramigrate(["fix", "inner", "good.yaml"], cwd=linked)

    assert code == 0, err
    assert "resourceClaimTemplateName" in (linked / "real" / "pod.yaml").read_text()
    assert "resourceClaimTemplateName" in (linked / "good.yaml").read_text()


def test_a_named_file_link_out_of_the_tree_is_refused_by_diff_as_by_fix(linked: Path) -> None:
    """diff showed the change and exited 0 where fix refused the same link."""
    (linked / "fl.yaml").symlink_to("../elsewhere/pod.yaml")
    before = _snapshot(linked.parent / "elsewhere")

    code, out, err = run_dramigrate(["diff", "fl.yaml", "good.yaml"], cwd=linked)

    assert code == 2 and "fl.yaml: fix would not write it: a symlink whose target is outside the tree" in err, err
    assert "+++ b/good.yaml" in out and "fl.yaml" not in out
    assert _snapshot(linked.parent / "elsewhere") == before


def test_a_kustomize_graph_behind_a_named_link_out_of_the_tree_is_not_written(tmp_path: Path) -> None:
    """`fix sd`, sd -> ../elsewhere holding a kustomize base and overlay: the graph names its files by their real
    paths, which no symlink check saw, and fix rewrote the base and added files in it, outside the tree."""
    outside, tree = tmp_path / "elsewhere", tmp_path / "tree"
    (outside / "base").mkdir(parents=True)
    (outside / "overlay").mkdir()
    (outside / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (outside / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (outside / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: p-\n")
    tree.mkdir()
    (tree / "sd").symlink_to("../elsewhere")
    before = _snapshot(outside)

    for command in ("diff", "fix"):
        code, out, err = run_dramigrate([command, "sd"], cwd=tree)

        assert code == 2, err
        assert "base/pod.yaml" in err and "outside the paths named on the command line" in err, err
        assert "+++" not in out
        assert _snapshot(outside) == before
