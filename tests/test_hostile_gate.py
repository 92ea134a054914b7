"""What a reviewer of a pull request sees when the repository's own config turns the gate green."""

from __future__ import annotations

from pathlib import Path

from conftest import ONE_GPU_POD, run_dramigrate


def test_a_config_that_excludes_everything_is_annotated_on_the_pull_request(tmp_path: Path) -> None:
    """Issue 11 item 6: the effective excludes are printed so a reviewer sees why a gate went green. In CI the
    GitHub report is what the pull request shows, and it said nothing at all: the only trace was a log line.
    The gate itself stays green (DESIGN.md: the config is how a repository scopes its gate, and a change to it is in
    the pull request's diff like any change to the workflow); the annotation puts it in front of the reviewer."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / ".dramigrate.yaml").write_text("exclude: ['**']\ndisable: [legacy-device-request]\n")

    code, out, err = run_dramigrate(["lint", ".", "--format", "github"], cwd=tmp_path)

    assert code == 0, err
    assert out.splitlines() == [
        "::warning file=.dramigrate.yaml,line=1,title=dramigrate config::config "
        f"{tmp_path / '.dramigrate.yaml'} (untrusted): excludes **; disables rules legacy-device-request"
    ]
