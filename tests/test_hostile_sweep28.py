"""Session 28's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named, nothing from outside the tree in any output, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, base_and_overlay, run_dramigrate

SECRET = "OUTSIDE-SECRET-28"

OUTSIDE_PATCH = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: pod
spec:
  containers:
  - name: {SECRET}
    resources:
      limits:
        nvidia.com/gpu: 2
"""


@pytest.mark.parametrize("entry", ["path: ../../outside.yaml", "path: {outside}", "path: link.yaml"])
def test_a_patch_file_outside_the_kustomization_is_never_read_into_a_report(tmp_path: Path, entry: str) -> None:
    """kustomize refuses a patch file outside the kustomization's folder (its load restrictor), and dramigrate said
    so, but read the file anyway to look for device requests: a patch elsewhere on the machine (named by `../`, by
    an absolute path, or through a link in the overlay) holding a device request had its container name and count
    quoted in every report, at its own path outside the tree."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside.yaml"
    outside.write_text(OUTSIDE_PATCH)
    overlay = base_and_overlay(repo, f"resources:\n- ../base\npatches:\n- {entry.format(outside=outside)}\n")
    (overlay / "link.yaml").symlink_to(outside)
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "diff", "fix"):
        for fmt in ("text", "json", "github"):
            code, out, err = run_dramigrate([command, ".", "--format", fmt], cwd=repo, timeout=60)
            assert SECRET not in out + err and f"{outside}:" not in out + err, (command, fmt, out + err)
            assert "overlay/kustomization.yaml" in out + err and "outside its own folder" in out + err
            assert "Traceback" not in err
    assert outside.read_text() == OUTSIDE_PATCH
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()
