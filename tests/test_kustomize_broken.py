"""A kustomization that does not load is bad input naming it; it holds back the graphs it may build on (it may be
an overlay of theirs, and its patches are unknown), not every kustomize graph of the run: one broken file in a
folder of its own left an unrelated base and overlay unmigrated ("a kustomization under the paths is broken")."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, base_and_overlay, run_dramigrate


@pytest.mark.parametrize(
    ("broken", "held"),
    [
        ("resources: [\n", False),
        ("resources:\n- ../base\n- ../k/base\npatches: [\n", True),
        ("resources: ['../k/overlay',\n", True),
    ],
    ids=["names no graph", "names the base", "names the overlay, quoted"],
)
def test_a_broken_kustomization_holds_back_only_the_graphs_it_names(tmp_path: Path, broken: str, held: bool) -> None:
    repo = tmp_path / "repo"
    base_and_overlay(repo / "k", "resources:\n- ../base\n")
    (repo / "bad").mkdir()
    (repo / "bad" / "kustomization.yaml").write_text(broken)
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = (repo / "k" / "base" / "pod.yaml").read_text()

    code, out, err = run_dramigrate(["fix", "."], cwd=repo, timeout=60)

    assert code == 2 and "Traceback" not in err, err
    assert "bad input bad/kustomization.yaml:" in out + err, out + err
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()
    after = (repo / "k" / "base" / "pod.yaml").read_text()
    assert (after == before) == held, after
    assert ("a kustomization under the paths is broken" in out + err) == held, out + err
