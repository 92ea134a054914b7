"""Hostile inputs of the twenty-seventh sweep (issue 11's checker, run from outside the repo): each beside good
files; the bad one is named and left as it was, the good ones are still migrated, and nothing from outside the tree
reaches a report."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

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
