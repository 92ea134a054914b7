"""Hostile inputs of the twenty-seventh sweep (issue 11's checker, run from outside the repo): each beside good
files; the bad one is named and left as it was, the good ones are still migrated, and nothing from outside the tree
reaches a report."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_executable, run_dramigrate

SECRET = "token-from-outside-the-tree"


@pytest.mark.parametrize("key", ["resources", "components"])
def test_a_base_or_component_linked_out_of_the_tree_is_named_and_never_built(tmp_path: Path, key: str) -> None:
    """An overlay whose base (or component) is a symlink to a folder outside the tree was built through the link by
    the proof, and the proof's mismatch named the outside object (`Pod <its name>: spec.containers[0]...`) in the
    kustomize-unproven finding of diff and fix. Now such a base is named at its line and never built."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "app").mkdir(parents=True)
    outside.mkdir()
    kind = "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\n" if key == "components" else ""
    (outside / "kustomization.yaml").write_text(f"{kind}resources:\n- secret.yaml\n")
    (outside / "secret.yaml").write_text(ONE_GPU_POD.format(name=SECRET))
    (tree / "app" / "base").symlink_to(outside)
    (tree / "app" / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    listing = "- base\n" if key == "resources" else "components:\n- base\n"
    (tree / "app" / "kustomization.yaml").write_text(f"namePrefix: x-\nresources:\n- pod.yaml\n{listing}")
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tree)
        assert SECRET not in out + err, command
        line = 4 if key == "resources" else 5  # the line of `- base`
        assert f"app/kustomization.yaml:{line}:1: warning [kustomize-unproven]" in out + err, out + err
        assert "builds on base, a kustomization outside the paths and the repository" in out + err

    assert (tree / "app" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="pod")
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def _graph(root: Path) -> None:
    """A base asking for a GPU and an overlay of it, under root."""
    (root / "base").mkdir()
    (root / "ov").mkdir()
    (root / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (root / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (root / "ov" / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: x-\n")


def _fix_writing_at_most(folder: Path, cap: int) -> subprocess.CompletedProcess[str]:
    """dramigrate fix . in folder, with the size of any file it (or a program it runs) writes capped at cap bytes."""

    def cap_writes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    return subprocess.run(
        [dramigrate_executable(), "fix", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        preexec_fn=cap_writes,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )


def test_a_huge_file_in_a_kustomization_folder_is_not_copied_for_the_proof(tmp_path: Path) -> None:
    """The proof copies the graph's folders to build the rewrite: a model or disk image there was copied too, byte
    by byte (a sparse 12 GiB file took the copy past a minute and wrote 12 GiB into the temp folder). Files past
    the file size limit, which no run reads, are left out of the copy: here, with the size of what dramigrate may
    write capped below the big file's, the graph is still proven and migrated."""
    _graph(tmp_path)
    with open(tmp_path / "base" / "model.bin", "wb") as big:
        big.truncate(64 << 20)  # past the 32 MiB default limit; sparse, so it costs no disk here

    proc = _fix_writing_at_most(tmp_path, 40 << 20)

    assert proc.returncode == 0, proc.stderr
    assert "resourceClaimTemplateName" in (tmp_path / "base" / "pod.yaml").read_text(), proc.stderr
    assert (tmp_path / "base" / "model.bin").stat().st_size == 64 << 20


def test_the_proof_copies_only_the_graphs_folders_not_the_repository(tmp_path: Path) -> None:
    """The proof copied the common folder of each graph's folders, often the whole repository, once per graph: with
    20 graphs beside 5,000 other files, diff took 21 s instead of 6 s, and a repository of 20,000 files with a few
    dozen graphs took past a minute. Now it copies the kustomization folders alone: a file beside them is never
    copied (here, with the size of what dramigrate may write capped below that file's, the graph is still proven)."""
    _graph(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "manual.pdf").write_bytes(b"%PDF" * (512 << 10))  # 2 MiB, under the file size limit

    proc = _fix_writing_at_most(tmp_path, 1 << 20)

    assert proc.returncode == 0, proc.stderr
    assert "resourceClaimTemplateName" in (tmp_path / "base" / "pod.yaml").read_text(), proc.stderr


def test_a_proof_copy_that_cannot_be_written_says_why(tmp_path: Path) -> None:
    """A full disk (or a file size limit) met while the proof copies a graph was reported as `migrating the
    kustomize graph: Error`: shutil's error says only its class. Now the reason is named; the graph is left as it
    was and the other files are written."""
    _graph(tmp_path)
    (tmp_path / "base" / "manual.pdf").write_bytes(b"%PDF" * (512 << 10))  # 2 MiB, copied with the folder
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    proc = _fix_writing_at_most(tmp_path, 1 << 20)

    assert proc.returncode == 2
    assert (
        "base/kustomization.yaml: migrating the kustomize graph: cannot copy it to prove the rewrite: [Errno 27] "
        "File too large" in proc.stderr
    ), proc.stderr
    assert (tmp_path / "base" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="pod")
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


@pytest.mark.parametrize(
    ("helmignore", "big"),
    [(".git/\n", ".git/objects/pack/pack-1.pack"), ("/model.bin\n", "model.bin"), ("*.bin\n", "data/weights.bin")],
    ids=["git-folder", "anchored-file", "by-name"],
)
def test_a_large_file_the_charts_helmignore_leaves_out_is_not_held_against_the_chart(
    tmp_path: Path, helmignore: str, big: str
) -> None:
    """A chart at the root of its repository ignores `.git/` in its .helmignore (as `helm create` writes it), and
    Helm renders it; dramigrate's private copy of the chart took every file, so a git pack past 5 MiB (or more than
    10,000 objects) refused the chart (`over the 5 MiB Helm allows for one chart file`), and lint, diff and fix
    skipped a good chart. What the .helmignore leaves out is now left out of the copy too."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    chart = chart_with(tmp_path, "chart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / ".helmignore").write_text(f"# Patterns to ignore when building packages.\n{helmignore}")
    (chart / big).parent.mkdir(parents=True, exist_ok=True)
    (chart / big).write_bytes(b"\0" * (6 << 20))

    code, out, err = run_dramigrate(["fix", "chart"], cwd=tmp_path)

    assert code == 0, err
    assert "dra.enabled" in (chart / "templates" / "pod.yaml").read_text()


def test_a_helmignore_negation_still_holds_the_chart_to_its_bounds(tmp_path: Path) -> None:
    """Helm's negated rules (`!x`) are read in its own peculiar way: the copy then leaves nothing out, and a large
    file is refused by name as before."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    chart = chart_with(tmp_path, "chart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / ".helmignore").write_text("*.bin\n!keep.bin\n")
    (chart / "model.bin").write_bytes(b"\0" * (6 << 20))

    code, out, err = run_dramigrate(["lint", "chart"], cwd=tmp_path)

    assert code == 2 and "model.bin is 6291456 bytes, over the 5 MiB" in out + err


def test_a_kustomization_of_hundreds_of_inline_device_patches_is_migrated_in_seconds(tmp_path: Path) -> None:
    """Each inline patch's new text was written by parsing and rendering the whole kustomization again: 100
    patches took diff 11 s, 200 took 33 s and 500 past a minute (a hang to a CI gate), for a file of a few hundred
    lines. The patch texts are now written with the kustomization's other edits, in one round trip. Here 200 patches,
    timed by diff's CPU time (not the wall clock of a loaded machine): 3 s now, 18 s before."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    patch = (
        "- patch: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {{name: pod}}\n    spec:\n      containers:\n"
        "      - name: app\n        resources: {{limits: {{nvidia.com/gpu: {count}}}}}\n"
    )
    patches = "".join(patch.format(count=i % 4 + 1) for i in range(200))
    (app / "kustomization.yaml").write_text(f"resources:\n- pod.yaml\npatches:\n{patches}")

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, out, err = run_dramigrate(["diff", "."], cwd=tmp_path, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    took = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    assert code == 0, err
    assert out.count("-        resources: {limits: {nvidia.com/gpu:") == 200, out[-2000:]
    assert took < 10, f"{took:.1f} s of CPU"


def test_a_fifo_the_charts_helmignore_leaves_out_is_still_refused_by_name(tmp_path: Path) -> None:
    """What the .helmignore leaves out is not copied for Helm, but dramigrate reads some of a chart's files from the
    folder itself (values files beside values.yaml): a FIFO there held diff and fix for good. It is still refused by
    name, the chart left as it was, and the other files are migrated."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    chart = chart_with(tmp_path, "chart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / ".helmignore").write_text("values-*.yaml\n")
    os.mkfifo(chart / "values-prod.yaml")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=60)

    assert code == 2 and "values-prod.yaml (a FIFO" in out + err, out + err
    assert (chart / "templates" / "pod.yaml").read_text() == GPU_POD_TEMPLATE
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_backup_of_a_chart_is_refused_where_helm_would_render_it(tmp_path: Path) -> None:
    """fix --backup kept `templates/pod.yaml.orig` beside the rewritten template, and Helm renders every file under
    templates/: the chart then rendered the old pod, asking for the devices again, beside the migrated one (lint
    found it at once). The chart is now refused by name unless its .helmignore leaves the backups out; the other
    files are written with their backups."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    chart = chart_with(tmp_path, "chart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", ".", "--backup"], cwd=tmp_path)

    assert code == 2 and "--backup: Helm would load templates/pod.yaml.orig with the chart" in err, err
    assert (chart / "templates" / "pod.yaml").read_text() == GPU_POD_TEMPLATE
    assert not list(chart.rglob("*.orig"))
    assert (tmp_path / "good.yaml.orig").read_text() == ONE_GPU_POD.format(name="good")

    (chart / ".helmignore").write_text("*.orig\n")
    code, out, err = run_dramigrate(["fix", ".", "--backup"], cwd=tmp_path)

    assert code == 0, err
    assert (chart / "templates" / "pod.yaml.orig").read_text() == GPU_POD_TEMPLATE
    code, out, err = run_dramigrate(["lint", "chart"], cwd=tmp_path)
    assert code == 0, out + err
