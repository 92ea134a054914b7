"""A kustomization.yaml that is a symlink to a file outside its folder (out of the tree, or to another folder of
it): kustomize does not read it (`unable to find one of 'kustomization.yaml', ... in directory`, its load
restrictor), so the folder is no kustomization. dramigrate read the link's target as the kustomization of the
target's folder: a file outside the tree was read and its entries shaped the run (the folder's GPU pod was left
unmigrated, with warnings naming the outside file). Now the link is bad input naming it, never read, and the files
beside it and elsewhere are migrated; nothing outside the tree is written or shown."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

SECRET = "OUTSIDE-SECRET-TOKEN"


@pytest.mark.parametrize("named", [False, True], ids=["folder", "files named as pre-commit names them"])
@pytest.mark.parametrize("where", ["outside the tree", "another folder of the tree"])
def test_a_symlinked_kustomization_is_named_and_never_read(tmp_path: Path, where: str, named: bool) -> None:
    repo = tmp_path / "repo"
    app = repo / "app"
    app.mkdir(parents=True)
    (repo / ".git").mkdir()
    (app / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    target = tmp_path / "outside" if where == "outside the tree" else repo / "shared"
    target.mkdir()
    # out of the tree, its entry reaches back to the pod (was: the pod left unmigrated, the outside file named)
    listed = os.path.relpath(app / "pod.yaml", target) if where == "outside the tree" else "[]"
    kustomization = f"# {SECRET}\nresources: {listed}\n"
    (target / "kustomization.yaml").write_text(kustomization)
    (app / "kustomization.yaml").symlink_to(target / "kustomization.yaml")

    paths = ["app/kustomization.yaml", "app/pod.yaml", "good.yaml"] if named else ["."]
    code, out, err = run_dramigrate(["fix", *paths, "--format", "json"], cwd=repo, timeout=60)

    assert code == 2 and "Traceback" not in err, err
    report = json.loads(out)
    (error,) = report["errors"]
    assert error["file"] == "app/kustomization.yaml" and "kustomize does not read" in error["message"], error
    assert sorted(f["file"] for f in report["files"]["written"]) == ["app/pod.yaml", "good.yaml"], report["files"]
    assert str(target) not in out + err and SECRET not in out + err
    assert (target / "kustomization.yaml").read_text() == kustomization
    assert (app / "kustomization.yaml").is_symlink()
