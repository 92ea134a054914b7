"""An absolute path in a kustomization's `resources:`: kustomize refuses a folder named so (`new root '/...' cannot be
absolute`) and a file outside the kustomization's folder (its load restrictor). lint, diff and fix say so at the
entry's own line, with the entry as written, and write nothing of the graph; the good files beside it are migrated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, base_and_overlay, dramigrate_in_process


def _findings(repo: Path, command: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = dramigrate_in_process([command, ".", "--format", "json"], cwd=repo, timeout=60)
    assert "Traceback" not in err and "internal error" not in out + err, err
    return code, json.loads(out)["findings"]


@pytest.mark.parametrize("command", ["lint", "diff", "fix"])
def test_an_absolute_base_folder_is_named_at_its_line(tmp_path: Path, command: str) -> None:
    """Was: lint called the base's request fixable, and fix's proof build failed with kustomize's own words at
    line 1 of the overlay."""
    repo = tmp_path / "repo"
    overlay = base_and_overlay(repo, f"namePrefix: x-\nresources:\n- {repo / 'base'}\n")
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = (repo / "base" / "pod.yaml").read_text()

    _, findings = _findings(repo, command)

    (said,) = [f for f in findings if f["file"] == "overlay/kustomization.yaml"]
    assert (said["rule"], said["line"]) == ("kustomize-unproven", 3), said
    assert f"{repo / 'base'} by an absolute path" in str(said["message"]), said
    assert not any(f["file"] == "base/pod.yaml" and (f["fixable"] or f["fixed"]) for f in findings), findings
    assert (repo / "base" / "pod.yaml").read_text() == before
    assert (overlay / "kustomization.yaml").read_text().endswith(f"- {repo / 'base'}\n")
    good = (repo / "good.yaml").read_text()
    assert ("resourceClaimTemplateName" in good) == (command == "fix"), good


def test_an_absolute_file_outside_the_folder_is_named_as_written_at_its_line(tmp_path: Path) -> None:
    """Was: named as a path relative to the overlay (`../../outside.yaml`), at the line of `resources:`."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: OUTSIDE-SECRET\n")
    base_and_overlay(repo, f"resources:\n- ../base\n- {outside}\n")

    code, out, err = dramigrate_in_process(["lint", "."], cwd=repo, timeout=60)

    assert (
        f"overlay/kustomization.yaml:3:1: warning [kustomize-unproven] overlay/kustomization.yaml reads {outside},"
        in out
    )
    assert "OUTSIDE-SECRET" not in out + err
