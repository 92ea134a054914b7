"""Kustomizations of the sixth sweep: what kustomize refuses is named in kustomize's words, and what it takes is
not refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

# kubectl 1.32 wraps kustomize's error in a log line; 1.37 prints it after "error: "
_KUBECTLS = [k for k in dict.fromkeys([shutil.which("kubectl"), "/usr/bin/kubectl"]) if k and os.access(k, os.X_OK)]


@pytest.mark.parametrize("kubectl", _KUBECTLS)
def test_a_folder_with_two_kustomization_files_is_named_in_kustomizes_words(tmp_path: Path, kubectl: str) -> None:
    """kubectl 1.32 says `E1203 15:00:47.447402 26019 run.go:72] "command failed" err=<` and then the error on the
    next lines: the finding said only the first line, a timestamp and no reason."""
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (folder / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (folder / "kustomization.yml").write_text("resources:\n- pod.yaml\n")

    code, out, err = run_dramigrate(["diff", tmp_path, "--kustomize-binary", kubectl])

    message = next(line for line in err.splitlines() if "[kustomize-unproven]" in line)
    assert message.endswith(f"k does not build with kustomize: Found multiple kustomization files under: {folder}")


def test_a_kustomization_naming_its_resource_by_absolute_path_is_read(tmp_path: Path) -> None:
    """kustomize takes a resource file named by its absolute path; the scan joined the path onto the folder and
    called the kustomization bad input: `no such file or kustomization folder`."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "kustomization.yaml").write_text(f"resources:\n- {tmp_path / 'pod.yaml'}\n")

    code, out, err = run_dramigrate(["lint", tmp_path])

    assert "no such file" not in out + err
    assert code == 1
    assert "pod.yaml:11:9: error [legacy-device-request]" in out


def test_a_tall_stack_of_overlays_is_named_not_proven_build_by_build(tmp_path: Path) -> None:
    """300 overlays each on the one below ran diff for minutes: every build loads the whole stack below it, and
    fix proves each build (a stack of 1,100 never finished). Past 30 kustomizations the graph is named at once."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (base / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    below = "base"
    for i in range(40):
        (tmp_path / f"o{i}").mkdir()
        (tmp_path / f"o{i}" / "kustomization.yaml").write_text(f"resources:\n- ../{below}\n")
        below = f"o{i}"

    code, out, err = run_dramigrate(["diff", "."], cwd=tmp_path, timeout=60)

    assert "o39/kustomization.yaml:1:1: warning [kustomize-unproven] o39 stacks 41 kustomizations on one another" in err
    assert "+++" not in out


def test_overlays_that_include_the_same_bases_over_and_over_are_named_not_built(tmp_path: Path) -> None:
    """Levels of two overlays, each including both overlays of the level below: a build loads the bases once per
    path, 2 to the power of the levels (16 levels ran past any limit). Past 1,000 loads in one build the graph is
    named at once."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (base / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    below = ["base"]
    for level in range(10):
        names = [f"l{level}a", f"l{level}b"]
        for name in names:
            (tmp_path / name).mkdir()
            listed = "".join(f"- ../{b}\n" for b in below)
            (tmp_path / name / "kustomization.yaml").write_text(f"resources:\n{listed}namePrefix: {name}-\n")
        below = names

    code, out, err = run_dramigrate(["diff", "."], cwd=tmp_path, timeout=60)

    assert "l9a/kustomization.yaml:1:1: warning [kustomize-unproven] building l9a loads 1,535 kustomizations" in err
    assert "+++" not in out


def test_a_base_outside_the_repository_never_reaches_a_report_through_kustomizes_error(tmp_path: Path) -> None:
    """kustomize prints the object it refuses (`missing metadata.name in object {{v1 Secret} {{ } map[...]}}`): an
    overlay naming a folder outside the repository put that folder's Secret into the kustomize-unproven finding."""
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    (outside / "kustomization.yaml").write_text("resources:\n- s.yaml\n")
    (outside / "s.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  labels: {token: hunter2-label}\n")
    (repo / "ov").mkdir(parents=True)
    (repo / "ov" / "pod.yaml").write_text(ONE_GPU_POD.format(name="ov"))
    (repo / "ov" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n- ../../outside\n")
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    for command in ("diff", "fix"):  # each format in one run: text on standard error, the others to files
        reports = [tmp_path / f"{command}.{fmt}" for fmt in ("json", "markdown", "sarif")]
        formats = [f"--format={path.suffix[1:]}={path}" for path in reports]
        code, out, err = run_dramigrate([command, ".", "--format", "text", *formats], cwd=repo)
        assert all(path.stat().st_size for path in reports)
        assert "hunter2" not in out + err + "".join(path.read_text() for path in reports)
        if command == "diff":
            said = "builds on ../../outside, a kustomization outside"
            assert "ov/kustomization.yaml:3:1:" in err and said in err, err
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()
    assert (repo / "ov" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="ov")


def test_a_symlink_where_fix_writes_a_kustomize_file_is_never_written_through(tmp_path: Path) -> None:
    """The proof builds a copy of the tree that keeps symlinks as links, and wrote the rewritten files into it: a
    link at the name of the file fix adds (dramigrate-claim-template-names.yaml) overwrote its target, wherever
    it was, in diff too."""
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    (outside / "precious.yaml").write_text("precious: 1\n")
    (repo / "base").mkdir(parents=True)
    (repo / "ov").mkdir()
    (repo / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="base"))
    (repo / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (repo / "base" / "dramigrate-claim-template-names.yaml").symlink_to(outside / "precious.yaml")
    (repo / "ov" / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: x-\n")
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    for command in ("diff", "fix"):
        code, _, err = run_dramigrate([command, "."], cwd=repo)
        assert (outside / "precious.yaml").read_text() == "precious: 1\n", command
        assert "dramigrate-claim-template-names.yaml is a symlink" in err, err
    assert (repo / "base" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="base")  # the graph as it was
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()


def test_a_device_request_of_an_unproven_graph_is_not_said_to_be_migrated(tmp_path: Path) -> None:
    """Two overlays that include each other do not build: fix left the request as it was and said `migrated with
    its kustomize graph` about it."""
    for folder, other in (("a", "b"), ("b", "a")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "kustomization.yaml").write_text(f"resources:\n- pod.yaml\n- ../{other}\n")
        (tmp_path / folder / "pod.yaml").write_text(ONE_GPU_POD.format(name=folder))
    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)
    requests = [line for line in err.splitlines() if "[kustomize-patch]" in line]
    assert len(requests) == 2 and all("left as is" in line for line in requests), err
    assert "migrated with its kustomize graph" not in err
    assert (tmp_path / "a" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="a")


def test_a_kustomize_graph_with_a_file_fix_may_not_write_is_written_not_at_all(tmp_path: Path) -> None:
    """A graph's base pod hard-linked elsewhere (refused unless --force): fix wrote the rest of the graph (the
    kustomization and its name-reference file) around it, half a migration."""
    (tmp_path / "base").mkdir()
    (tmp_path / "ov").mkdir()
    (tmp_path / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="base"))
    os.link(tmp_path / "base" / "pod.yaml", tmp_path / "pod.yaml.keep")
    kustomization = "resources:\n- pod.yaml\n"
    (tmp_path / "base" / "kustomization.yaml").write_text(kustomization)
    (tmp_path / "ov" / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: x-\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)
    assert code == 2 and "base/pod.yaml: has 2 hard links" in err, err
    assert "is written whole or not at all" in err
    assert (tmp_path / "base" / "kustomization.yaml").read_text() == kustomization
    assert sorted(p.name for p in (tmp_path / "base").iterdir()) == ["kustomization.yaml", "pod.yaml"]
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
