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


REPORT_ONLY_PACK = """\
schemaVersion: 1
kind: RulePack
name: quiet
description: a pack of the repository under review
resources:
  - match: nvidia.com/gpu
    reportOnly: other
    advice: nothing to migrate
"""

NO_CLAIMS_KINDS = """\
schemaVersion: 1
kind: Workloads
kinds:
  - group: ""
    kind: Pod
    podSpecs: [{at: spec}]
    acceptsClaims: false
    reason: claims are not wanted here
"""


def test_a_config_rule_file_that_makes_devices_report_only_is_annotated_on_the_pull_request(tmp_path: Path) -> None:
    """Issue 11 item 6: the report-only overrides are printed too. A rule pack or workloads file inside the
    repository (allowed in an untrusted run) that marks nvidia.com/gpu report-only, or says Pods take no claims,
    turned every device request into a warning and the gate green, and neither the summary nor the GitHub report
    said why."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "quiet.yaml").write_text(REPORT_ONLY_PACK)
    (tmp_path / "kinds.yaml").write_text(NO_CLAIMS_KINDS)
    (tmp_path / ".dramigrate.yaml").write_text("rules: [quiet.yaml, kinds.yaml]\n")

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "github"], cwd=tmp_path)

    assert code == 0, err
    config = [line for line in out.splitlines() if "title=dramigrate config" in line]
    assert len(config) == 1, out
    assert "report-only" in config[0] and "nvidia.com/gpu" in config[0] and "quiet.yaml" in config[0]
    assert "take no claims" in config[0] and "Pod" in config[0] and "kinds.yaml" in config[0]
    code, out, err = run_dramigrate(["lint", "pod.yaml"], cwd=tmp_path)
    assert "nvidia.com/gpu" in err and "kinds.yaml" in err  # the text summary says it too
