"""Session 29's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named, what a report says written is what is on disk, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, repository_with_config, run_dramigrate


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ('assume-dra-enabled: "false"', "`assume-dra-enabled` must be true or false, not a string"),
        ("remove-node-selectors: {a: 1}", "`remove-node-selectors` must be true or false, not a mapping"),
        ("sriov-vf-config: 1", "`sriov-vf-config` must be true or false, not a number"),
        ("classes-file: [a.yaml]", "`classes-file` must be a file path, not a list"),
    ],
)
def test_a_config_switch_that_is_no_true_or_false_is_named_at_its_line(tmp_path: Path, setting: str, said: str) -> None:
    """A switch of the config took any value and used its truth: `assume-dra-enabled: "false"` (quoted, a string)
    switched it on, and lint of a 1.32 target no longer said that DRA is off there by default; a list as the
    classes file became a file named `['a.yaml']`."""
    repo = repository_with_config(tmp_path, f'kube-version: "1.33"\n{setting}\n')

    code, out, err = run_dramigrate(["lint", "."], cwd=repo)

    assert code == 2, out + err
    assert f".dramigrate.yaml:2:1: {said}" in out + err
    assert "Traceback" not in err


def test_a_group_whose_last_rename_fails_is_put_back_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kustomize graph (or chart) is written all or none, but only up to its renames: a folder made read-only
    after the temp files were written failed the overlay's rename once the base was renamed, and the report said
    the whole graph was not written while the base, its patch and the new files were rewritten on disk. The renames
    done are now undone: every file as it was (the same inode, so its metadata too), the new files gone."""
    import errno
    import os

    from dramigrate.findings import InputError
    from dramigrate.writer import write_group

    (tmp_path / "base").mkdir()
    (tmp_path / "overlay").mkdir()
    base, patch, overlay = tmp_path / "base/pod.yaml", tmp_path / "overlay/p.yaml", tmp_path / "overlay/k.yaml"
    for f in (base, patch, overlay):
        f.write_text(f"old {f.name}\n")
    inodes = {f: f.stat().st_ino for f in (base, patch, overlay)}
    new = tmp_path / "base/names.yaml"
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        if dst == str(overlay):
            raise PermissionError(errno.EACCES, "Permission denied", dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    files = [(base, "new\n", b"old pod.yaml\n"), (new, "new\n", None), (patch, "new\n", b"old p.yaml\n")]
    with pytest.raises((OSError, InputError)):
        write_group([*files, (overlay, "new\n", b"old k.yaml\n")])

    for f in (base, patch, overlay):
        assert f.read_text() == f"old {f.name}\n"
        assert f.stat().st_ino == inodes[f] and f.stat().st_nlink == 1
    assert not new.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["base", "k.yaml", "overlay", "p.yaml", "pod.yaml"]


DEVICE_PATCH = """\
apiVersion: v1
kind: Pod
metadata:
  name: pod
spec:
  containers:
  - name: app
    resources:
      limits:
        nvidia.com/gpu: 2
"""


def test_a_json_patch_setting_a_device_on_a_target_without_a_name_is_not_called_fixable(tmp_path: Path) -> None:
    """An overlay's JSON6902 patch whose target names a kind but no name (kustomize patches every Pod) set a device
    count: lint called it fixable (exit 1, "fix migrates it"), and fix then refused the graph (a JSON6902 patch
    without a target kind and name) and still called the patch fixable. Both now say it is migrated by hand."""
    from conftest import base_and_overlay

    overlay = base_and_overlay(tmp_path, "resources:\n- ../base\npatches:\n- path: p.yaml\n  target:\n    kind: Pod\n")
    (overlay / "p.yaml").write_text(
        "- op: replace\n  path: /spec/containers/0/resources/limits/nvidia.com~1gpu\n  value: 2\n"
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path)
        patch_lines = [line for line in (out + err).splitlines() if line.startswith("overlay/p.yaml:")]
        assert patch_lines and all("fixable" not in line for line in patch_lines), (command, out + err)
        assert "without a kind and a name" in out + err
        assert "Traceback" not in err
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert "nvidia.com/gpu: 1" in (tmp_path / "base" / "pod.yaml").read_text()


def test_the_device_patch_of_a_graph_fix_could_not_prove_is_not_called_fixable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After fix left a kustomize graph unproven (here its build ran past the time limit), the overlay's device
    patch was still reported as fixable ("fix migrates it with its base and proves every overlay build"), and
    counted among the findings fixable with another `dramigrate fix`, which would leave it just the same."""
    from conftest import base_and_overlay

    overlay = base_and_overlay(tmp_path, "resources:\n- ../base\npatches:\n- path: p.yaml\n")
    (overlay / "p.yaml").write_text(DEVICE_PATCH)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_TIMEOUT", "0.001")

    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    patch_lines = [line for line in err.splitlines() if line.startswith("overlay/p.yaml:")]
    assert patch_lines and all("fixable" not in line for line in patch_lines), err
    assert "; not migrated: " in patch_lines[0] and patch_lines[0].endswith("/kustomization.yaml is unproven")
    assert "fixable with `dramigrate fix`" not in err
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert (overlay / "p.yaml").read_text() == DEVICE_PATCH


def test_the_builds_of_a_kustomize_graph_share_one_time_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The time limit held each kustomize build: an overlay of 25,000 patch entries built in 29 s and was built
    again for the proof in 29 s, and six such overlays held fix for 78 s, past any CI step's patience. A folder's
    builds (the original's, then the proof's) now share the limit, and once one build of a graph fails the rest of
    its builds are not started; here each build takes 2 s of a 3 s limit (a kubectl that waits first), so the
    proof finds the limit spent and says so."""
    import shutil
    import time

    from conftest import base_and_overlay

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on PATH")
    slow = tmp_path / "bin" / "kubectl"
    slow.parent.mkdir()
    slow.write_text(f'#!/bin/sh\nsleep 2\nexec {kubectl} "$@"\n')
    slow.chmod(0o755)
    repo = tmp_path / "repo"
    overlay = base_and_overlay(repo, "resources:\n- ../base\npatches:\n- path: p.yaml\n")
    (overlay / "p.yaml").write_text(DEVICE_PATCH)
    for name in ("second", "third"):
        (repo / name).mkdir()
        (repo / name / "kustomization.yaml").write_text("resources:\n- ../base\n")
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_TIMEOUT", "3")

    start = time.monotonic()
    code, out, err = run_dramigrate(["fix", ".", "--kustomize-binary", slow], cwd=repo)

    assert "did not finish in 3 s in all" in err, err
    assert time.monotonic() - start < 30
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()
    assert (overlay / "p.yaml").read_text() == DEVICE_PATCH


def test_a_config_workloads_file_that_moves_a_pods_containers_is_annotated_on_the_pull_request(tmp_path: Path) -> None:
    """A workloads file in the repository, named by its config (allowed in an untrusted run), that redefines the
    shipped Pod with its containers under another key turned every Pod's device request into an unknown-kind
    warning and the gate green, and the config overview, which names report-only resources and kinds that take no
    claims, said nothing of it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "kinds.yaml").write_text(
        "schemaVersion: 1\nkind: Workloads\nkinds:\n"
        '  - {group: "", kind: Pod, podSpecs: [{at: "", spec: spec}], containerLists: [initContainers]}\n'
    )
    (tmp_path / ".dramigrate.yaml").write_text("rules: [kinds.yaml]\n")

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "github"], cwd=tmp_path)

    config = [line for line in out.splitlines() if "title=dramigrate config" in line]
    assert len(config) == 1, out
    assert "shipped kinds redefined Pod" in config[0] and "kinds.yaml" in config[0]
