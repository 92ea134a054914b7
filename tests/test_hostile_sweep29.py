"""Session 29's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named, what a report says written is what is on disk, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


def _repository(root: Path, config: str) -> Path:
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (repo / ".dramigrate.yaml").write_text(config)
    return repo


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
    repo = _repository(tmp_path, f'kube-version: "1.33"\n{setting}\n')

    code, out, err = run_dramigrate(["lint", "."], cwd=repo)

    assert code == 2, out + err
    assert f".dramigrate.yaml:2:1: {said}" in out + err
    assert "Traceback" not in err
