"""A path named on the command line that is, or goes through, a symlink out of its tree (the working folder; for a
path outside it, the folder holding it) or into a .git folder is never read, in every command and format; a link that
stays inside the tree is still followed, read and written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

CHART_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-secret
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
"""
REFUSED = "whose target is outside the tree; not written through it"
NOT_READ = "leads out of the working folder; skipped (never read)"


def _snapshot(top: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(top.rglob("*")) if p.is_file()}


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """tree/ holding good.yaml, sd -> ../elsewhere (a folder of GPU manifests and a chart) and inner -> real/ (a
    folder inside the tree); returns tree/."""
    outside, tree = tmp_path / "elsewhere", tmp_path / "tree"
    (outside / "sub").mkdir(parents=True)
    (outside / "pod.yaml").write_text(ONE_GPU_POD.format(name="secret-outside"))
    (outside / "sub" / "pod.yaml").write_text(ONE_GPU_POD.format(name="secret-deeper"))
    chart_with(outside, "app", {"templates/pod.yaml": CHART_POD, "values.yaml": "gpus: 1\n"})
    (tree / "real").mkdir(parents=True)
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "real" / "pod.yaml").write_text(ONE_GPU_POD.format(name="inner"))
    (tree / "sd").symlink_to("../elsewhere")
    (tree / "chart").symlink_to("../elsewhere/app")
    (tree / "inner").symlink_to("real")
    return tree


FORMATS = ("json", "sarif", "github", "junit", "markdown")


@pytest.mark.parametrize("named", ["sd", "sd/", "sd/sub", "sd/pod.yaml", "chart", "fl.yaml"])
def test_a_named_link_out_of_the_tree_is_never_read(linked: Path, named: str) -> None:
    """`git diff --name-only | xargs dramigrate lint` on a hostile pull request names its symlinks: one to a file or
    folder outside the working folder was read, and the names of the objects there (or a chart rendered from there)
    were shown. Such a path is bad input named in every format, nothing of its target is read, shown or written, and
    the good file beside it is still checked. lint writes its text report and each other format in one run."""
    outside = linked.parent / "elsewhere"
    (linked / "fl.yaml").symlink_to("../elsewhere/pod.yaml")
    before = _snapshot(outside)
    reports = [linked.parent / f"report.{fmt}" for fmt in FORMATS]

    for command in ("lint", "diff", "fix"):
        more = (
            ["--format=text", *(f"--format={path.suffix[1:]}={path}" for path in reports)] if command == "lint" else []
        )
        code, out, err = run_dramigrate([command, named, "good.yaml", *more], cwd=linked)

        assert code == 2, err
        said = [out + err, *(path.read_text() for path in reports)] if command == "lint" else [out + err]
        for text in said:
            assert named.rstrip("/") in text, (command, text)
            assert "secret" not in text  # no object name of the target, nor a chart rendered from it
        assert NOT_READ in out + err
        assert "Traceback" not in err
        assert _snapshot(outside) == before
        if command == "fix":
            assert "resourceClaimTemplateName" in (linked / "good.yaml").read_text()
        else:
            assert "good" in out + err


def test_a_named_link_that_stays_in_the_tree_is_followed(linked: Path) -> None:
    code, out, err = run_dramigrate(["diff", "inner", "good.yaml"], cwd=linked)
    assert code == 0 and "+++ b/inner/pod.yaml" in out and "+++ b/good.yaml" in out, err

    code, _, err = run_dramigrate(["fix", "inner", "good.yaml"], cwd=linked)

    assert code == 0, err
    assert "resourceClaimTemplateName" in (linked / "real" / "pod.yaml").read_text()
    assert "resourceClaimTemplateName" in (linked / "good.yaml").read_text()


def test_a_named_link_to_another_folder_of_the_working_folder_is_read_and_written(linked: Path) -> None:
    """deploy/pod.yaml -> ../base/pod.yaml, named from the top of the repository: the link stays in the working folder,
    so lint, diff and fix follow it (fix refused it: the tree of a named link was only the folder holding it)."""
    (linked / "base").mkdir()
    (linked / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="based"))
    (linked / "deploy").mkdir()
    (linked / "deploy" / "pod.yaml").symlink_to("../base/pod.yaml")

    code, out, err = run_dramigrate(["lint", "deploy/pod.yaml"], cwd=linked)
    assert code == 1 and "Pod/based" in out, out + err
    code, out, err = run_dramigrate(["diff", "deploy/pod.yaml"], cwd=linked)
    assert code == 0 and "+++ b/deploy/pod.yaml" in out, out + err

    code, _, err = run_dramigrate(["fix", "deploy/pod.yaml"], cwd=linked)

    assert code == 0, err
    assert (linked / "deploy" / "pod.yaml").is_symlink()
    assert "resourceClaimTemplateName" in (linked / "base" / "pod.yaml").read_text()


def test_a_link_into_a_git_folder_is_never_read(linked: Path) -> None:
    """The walk never enters .git (a CI checkout keeps its token in .git/config), but a link into it, named or found in
    a folder, was read like any file of the tree."""
    (linked / ".git").mkdir()
    (linked / ".git" / "pod.yaml").write_text(ONE_GPU_POD.format(name="secret-git"))
    (linked / "cfg.yaml").symlink_to(".git/pod.yaml")
    (linked / "real" / "cfg.yaml").symlink_to("../.git/pod.yaml")

    for args in (["lint", "cfg.yaml", "good.yaml"], ["lint", "."], ["lint", "--format", "json", "."], ["fix", "."]):
        code, out, err = run_dramigrate(args, cwd=linked)

        assert code == 2, err
        assert "secret" not in out + err and "into a .git folder; skipped (never read)" in out + err
        assert "cfg.yaml" in out + err and "good" in out + err
    assert "resourceClaimTemplateName" not in (linked / ".git" / "pod.yaml").read_text()


def test_an_absolute_path_named_from_elsewhere_follows_links_only_inside_its_folder(linked: Path) -> None:
    """Named by an absolute path outside the working folder, a file is read where it stands; a link is followed only
    to a target in the folder holding it."""
    (linked / "fl.yaml").symlink_to("../elsewhere/pod.yaml")
    (linked / "same.yaml").symlink_to("good.yaml")
    elsewhere = linked.parent / "run-from-here"
    elsewhere.mkdir()

    code, out, err = run_dramigrate(["lint", linked / "fl.yaml", linked / "same.yaml"], cwd=elsewhere)

    assert code == 2 and "secret" not in out + err, out + err
    assert f"{linked / 'fl.yaml'}: a symlink that leads out of {linked}; skipped (never read)" in out + err
    assert "Pod/good" in out


def test_a_kustomize_graph_behind_a_named_link_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    """`fix sd`, sd -> ../elsewhere holding a kustomize base and overlay: the graph named its files by their real
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
        assert f"sd: a symlink that {NOT_READ}" in err, err
        assert "+++" not in out and "base/pod.yaml" not in out + err
        assert _snapshot(outside) == before
