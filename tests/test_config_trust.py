"""A repository's config is not trusted by default: paths it names stay inside the repository unless
--trust-config (never in CI, never with --untrusted), and what it turns off is printed for the reviewer."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli, run_dramigrate

RULES = Path(__file__).resolve().parents[1] / "rules" / "nvidia.yaml"
POD = ONE_GPU_POD.format(name="p")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(RULES, tmp_path / "elsewhere" / "pack.yaml")
    (tmp_path / "repo" / "a.yaml").write_text(POD)
    (tmp_path / "repo" / ".dramigrate.yaml").write_text("rules: [../elsewhere/pack.yaml]\n")
    return tmp_path / "repo"


def test_config_paths_outside_the_repository_are_refused(repo: Path, run_cli: RunCli) -> None:
    code, out, _ = run_cli(["lint", "a.yaml"], cwd=repo)
    assert code == 2
    assert "`rules` names" in out and "outside the repository" in out and "not used" in out
    # the refused setting is dropped and named; every other file is still checked and migrated
    (repo / ".dramigrate.yaml").write_text("classes-file: ../elsewhere/classes.yaml\n")
    code, _, err = run_cli(["fix", "a.yaml"], cwd=repo)
    assert code == 2, err
    assert f"{repo / '.dramigrate.yaml'}: `classes-file` names" in err
    assert "resourceClaims" in (repo / "a.yaml").read_text()


def test_trust_config_allows_them_but_never_in_ci_or_untrusted(repo: Path, run_cli: RunCli, monkeypatch) -> None:
    for key in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD"):
        monkeypatch.delenv(key, raising=False)
    code, _, err = run_cli(["lint", "--trust-config", "a.yaml"], cwd=repo)
    assert code == 1, err  # the pack loads; the request is an error finding
    code, out, _ = run_cli(["lint", "--trust-config", "--untrusted", "a.yaml"], cwd=repo)
    assert code == 2 and "outside the repository" in out
    monkeypatch.setenv("CI", "true")
    code, out, _ = run_cli(["lint", "--trust-config", "a.yaml"], cwd=repo)
    assert code == 2 and "outside the repository" in out


def test_what_the_config_turns_off_is_printed(repo: Path, run_cli: RunCli) -> None:
    (repo / ".dramigrate.yaml").write_text("exclude: ['legacy/*']\nsharing: {nvidia.com/gpu: time-slicing}\n")
    code, _, err = run_cli(["lint", "--quiet", "a.yaml"], cwd=repo)
    assert code == 0  # the gate is green only because the config says the GPUs are shared...
    assert "(untrusted): excludes legacy/*; report-only (shared) resources nvidia.com/gpu: time-slicing" in err


def test_what_the_config_turns_off_is_in_every_report_format(repo: Path, run_cli: RunCli) -> None:
    """It was said on standard error and as a GitHub annotation only: the JSON a gate reads, the SARIF of code
    scanning, the JUnit of a CI summary and the Markdown of a pull-request comment showed a green run and no
    reason, though the config excluded the device files."""
    import json
    import xml.etree.ElementTree as ET

    import jsonschema

    (repo / ".dramigrate.yaml").write_text("exclude: ['*.yaml']\ndisable: [legacy-device-request]\n")
    formats = ("sarif", "junit", "markdown", "github")
    args = ["lint", ".", "--format", "json", *(a for f in formats for a in ("--format", f"{f}=r.{f}"))]
    code, out, err = run_cli(args, cwd=repo)
    assert code == 0, err  # the gate stays green: the config is how a repository scopes it, and it is in the diff
    said = "(untrusted): excludes *.yaml; disables rules legacy-device-request"
    reports = {f: (repo / f"r.{f}").read_text() for f in formats}
    assert said in json.loads(out)["config"]["note"] and json.loads(out)["config"]["file"] == ".dramigrate.yaml"
    sarif = json.loads(reports["sarif"])
    schema = json.loads((Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
    assert not list(jsonschema.validators.validator_for(schema)(schema).iter_errors(sarif))
    (note,) = sarif["runs"][0]["invocations"][0]["toolConfigurationNotifications"]
    assert said in note["message"]["text"] and note["level"] == "warning"
    properties = ET.fromstring(reports["junit"]).iter("property")
    assert [said in p.get("value", "") for p in properties] == [True]
    assert said.replace("*", "\\*") in reports["markdown"]
    assert said in reports["github"]


def test_a_repository_config_may_lower_the_file_size_limit_but_not_raise_it(repo: Path, run_cli: RunCli) -> None:
    """`max-file-size: 100Gi` in a pull request's config lifted the bound on what is read into memory; the files
    above the default limit are refused as before, and the config says why."""
    big = repo / "big.yaml"
    big.write_text(POD + "---\n" + "#" * 100 + "\n")
    with big.open("r+b") as f:
        f.truncate(33 << 20)  # 33 MiB, over the 32 MiB default
    (repo / ".dramigrate.yaml").write_text("max-file-size: 100Gi\n")

    code, out, _ = run_cli(["lint", "a.yaml", "big.yaml"], cwd=repo)

    assert code == 2
    assert "`max-file-size` of 107,374,182,400 bytes is above the 32 MiB default: not used" in out
    assert "big.yaml: file is 33.0 MiB, larger than the 32 MiB limit (--max-file-size); not processed" in out
    assert "a.yaml:11:9: error [legacy-device-request]" in out
    (repo / ".dramigrate.yaml").write_text("max-file-size: 1Ki\n")
    code, out, _ = run_cli(["lint", "a.yaml", "big.yaml"], cwd=repo)
    assert "big.yaml: file is 33.0 MiB, larger than the 1.0 KiB limit" in out
    (repo / ".dramigrate.yaml").write_text("max-file-size: 100Gi\n")
    code, out, _ = run_cli(["lint", "a.yaml", "--max-file-size", "1Ki"], cwd=repo)
    assert code == 1, out  # the way out the refusal names: the command line decides, and the config is not refused
    assert "max-file-size` of" not in out


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("exclude:\n" + "- x\n" * 3_000_000, "larger than"),  # 12 MB, parsed for minutes
        ("exclude: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),  # a RecursionError
        ("exclude: [a]\n".encode("utf-16"), "not UTF-8 text"),  # a UnicodeDecodeError
    ],
)
def test_a_hostile_config_is_named_at_once(tmp_path: Path, config: str | bytes, said: str) -> None:
    """A repository's .dramigrate.yaml too large, too deep or not UTF-8 hung the run or ended it with an internal
    error and no file name."""
    (tmp_path / "a.yaml").write_text(ONE_GPU_POD.format(name="a"))
    (tmp_path / ".dramigrate.yaml").write_bytes(config.encode() if isinstance(config, str) else config)
    started = time.monotonic()
    code, _, err = run_dramigrate(["lint", "."], cwd=tmp_path)
    assert time.monotonic() - started < 20
    assert code == 2 and ".dramigrate.yaml" in err and said in err and "internal error" not in err, err


def test_a_repository_config_may_not_have_fix_write_into_the_git_folder(tmp_path: Path, run_cli: RunCli) -> None:
    """The classes file of an untrusted config named .git/HEAD (inside the repository, so allowed): fix appended
    DeviceClasses to it and the checkout no longer knew its branch. The repository's .git folder is not part of
    what a config may name; the setting is dropped and named, and the manifests are migrated."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    head = repo / ".git" / "HEAD"
    head.write_text("ref: refs/heads/main\n")
    pinned = POD.replace("spec:\n", "spec:\n  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n", 1)
    (repo / "a.yaml").write_text(pinned)  # --classes makes a named DeviceClass of its selector: the file is written
    (repo / ".dramigrate.yaml").write_text("classes-file: .git/HEAD\nnamed-classes: true\n")

    code, _, err = run_cli(["fix", "--untrusted", "a.yaml"], cwd=repo)

    assert head.read_text() == "ref: refs/heads/main\n"
    assert code == 2, err
    assert "`classes-file` names" in err and ".git" in err
    assert "resourceClaims" in (repo / "a.yaml").read_text()


def test_a_config_above_the_repository_is_not_the_repositorys(tmp_path: Path, run_cli: RunCli) -> None:
    """The config was searched upward past the repository's root: a `.dramigrate.yaml` in a folder above the
    checkout (a shared runner's work folder, /tmp) excluded every file of the repository and the gate went green.
    The search stops at the repository's root, as it finds the repository's own config."""
    (tmp_path / ".dramigrate.yaml").write_text("exclude: ['**']\n")
    repo = tmp_path / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "k8s").mkdir()
    (repo / "k8s" / "a.yaml").write_text(POD)

    for cwd in (repo, repo / "k8s"):
        code, out, err = run_cli(["lint", "."], cwd=cwd)
        assert code == 1 and "legacy-device-request" in out, err
        assert ".dramigrate.yaml" not in err
    (repo / ".dramigrate.yaml").write_text("exclude: ['**']\n")  # the repository's own config still counts
    code, out, err = run_cli(["lint", "."], cwd=repo / "k8s")
    assert code == 0 and f"config {repo / '.dramigrate.yaml'}" in err, out + err


def test_a_config_of_thousands_of_excludes_is_named_at_once(repo: Path, run_cli: RunCli) -> None:
    """Each exclude is matched against every file: 9,000 of them ran a lint of 2,000 files for 48 s."""
    from dramigrate.config import MAX_EXCLUDES

    many = "".join(f"- 'zz{i}*x*y*'\n" for i in range(MAX_EXCLUDES + 1))
    (repo / ".dramigrate.yaml").write_text("exclude:\n" + many)
    code, _, err = run_cli(["lint", "a.yaml"], cwd=repo)
    assert code == 2 and f"`exclude` holds {MAX_EXCLUDES + 1:,} patterns, more than {MAX_EXCLUDES}" in err, err
    (repo / ".dramigrate.yaml").write_text("exclude:\n" + many.split("\n", MAX_EXCLUDES)[-1] + "- 'legacy/*'\n")
    code, _, err = run_cli(["lint", "a.yaml"], cwd=repo)
    assert code == 1, err  # a config of a few excludes works as before
