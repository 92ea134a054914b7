"""The gate as pre-commit and CI use it: excludes on named files, .gitignore, nothing scanned, rules turned off and
on, --exit-zero, block and file suppressions, explain and rules list, and terminal manners on a real pty."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import dramigrate_executable

REPO = Path(__file__).resolve().parents[1]
DEVICE = (REPO / "examples" / "manifests" / "inference.yaml").read_text(encoding="utf-8")
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: app
    resources:
      limits:
        nvidia.com/gpu: 1
"""


def run(args: list[Any], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [dramigrate_executable(), *map(str, args)],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def on_a_terminal(args: list[Any], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run with standard output and error on a pseudo-terminal, as in an interactive shell; (exit code, output)."""
    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [dramigrate_executable(), *map(str, args)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**full_env, "TERM": "xterm-256color", "COLUMNS": "200", **env},
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(leader)
    return proc.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a config that excludes vendor/, an ignored build/ folder, and device files."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".dramigrate.yaml").write_text("exclude:\n  - vendor/*\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    for folder in ("app", "vendor", "build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pod.yaml").write_text(POD.format(name=folder))
    return tmp_path


def test_excludes_apply_to_named_files_and_gitignore_to_folders(repo: Path) -> None:
    vendor = (repo / "vendor" / "pod.yaml").read_text()
    # pre-commit names every staged file, excluded ones too: fix must not touch vendor/
    code, _, err = run(["fix", "app/pod.yaml", "vendor/pod.yaml", "-v"], repo)
    assert code == 0, err
    assert (repo / "vendor" / "pod.yaml").read_text() == vendor
    assert "ResourceClaimTemplate" in (repo / "app" / "pod.yaml").read_text()
    assert "vendor/pod.yaml: excluded by the pattern 'vendor/*'" in err  # --verbose says why
    code, out, _ = run(["lint", "vendor/pod.yaml", "--no-force-exclude"], repo)
    assert code == 1 and "vendor/pod.yaml" in out
    # a folder: build/ is ignored by git, unless --include-ignored
    code, out, _ = run(["lint", ".", "--format", "json"], repo)
    report = json.loads(out)
    named = [f["file"] for f in report["findings"]] + [e["file"] for e in report["errors"]]
    assert code == 0 and not [f for f in named if f.startswith(("build/", "vendor/"))]  # app/ was fixed above
    assert report["config"]["note"].endswith("excludes vendor/*")  # the reviewer sees why vendor/ is not there
    code, out, _ = run(["lint", ".", "--include-ignored"], repo)
    assert "build/pod.yaml" in out


def test_verbose_explains_each_decision_on_stderr_only(repo: Path) -> None:
    (repo / "app" / "notes.txt").write_text("nvidia.com/gpu: 1\n")
    (repo / "app" / "quiet.yaml").write_text(
        POD.format(name="quiet").replace("metadata:", "# dramigrate: disable-file=legacy-device-request\nmetadata:")
    )
    pack = repo / "mine.yaml"
    pack.write_text(
        "schemaVersion: 1\nkind: RulePack\nname: mine\nresources:\n"
        "  - {match: example.com/gpu, request: gpu, deviceClass: gpu.example.com}\n"
        "deviceClasses:\n  - {name: gpu.example.com, driver: gpu.example.com}\n"
    )
    (repo / "app" / "own.yaml").write_text(POD.format(name="own").replace("nvidia.com/gpu", "example.com/gpu"))
    for command in ("lint", "diff", "fix"):
        args = [command, ".", "--rules", pack, "--format", "json"]
        code, out, err = run([*args, "-v"], repo)
        if command == "lint":  # the machine report on stdout is the same with and without --verbose
            quiet_code, quiet_out, quiet_err = run(args, repo)
            assert (code, out) == (quiet_code, quiet_out), command
            assert "matched" not in quiet_err and "skipped" not in quiet_err
        for said in (
            # the rule-pack entry and the workload path that matched each device request
            "app/pod.yaml:11: Pod/app container app: nvidia.com/gpu matched rule pack nvidia (rules/nvidia.yaml) "
            "entry `match: nvidia.com/gpu`: device class gpu.nvidia.com; its pod template spec was found by the "
            "core/Pod entry of rules/workloads.yaml (spec: spec)",
            f"app/own.yaml:11: Pod/own container app: example.com/gpu matched rule pack mine ({pack}) "
            "entry `match: example.com/gpu`: device class gpu.example.com",
            # why each file was left out or not migrated
            "vendor/pod.yaml: excluded by the pattern 'vendor/*'",
            "build/pod.yaml: ignored by git (.gitignore; --include-ignored takes it)",
            "app/notes.txt: not a manifest (only .yaml, .yml, .json files are read)",
            ".git/: a .git folder, never scanned",
            "app/quiet.yaml:12: [legacy-device-request] not reported and not rewritten: suppressed by "
            "`# dramigrate: disable-file=legacy-device-request`",
        ):
            assert said in err, (command, said, err)
        assert "matched" not in out and "excluded" not in out
    assert "nvidia.com/gpu: 1" in (repo / "app" / "quiet.yaml").read_text()
    code, _, err = run(["lint", "app", "-v"], repo)  # after fix
    assert "app/pod.yaml: checked: no device-plugin request in it" in err
    (repo / "app" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
    code, out, _ = run(["lint", "app/cm.yaml", "-v", "--max-file-size", "10"], repo)
    assert code == 2 and "larger than the 10 bytes limit (--max-file-size)" in out


def test_a_run_that_scans_nothing_says_so(repo: Path) -> None:
    code, out, err = run(["lint", "vendor/pod.yaml"], repo)
    assert code == 0 and "nothing scanned" in err and "excluded" in err
    assert "0 files scanned: nothing to check" in out
    code, _, err = run(["lint"], repo)
    assert code == 2 and "PATH..." in err


def test_disable_enable_and_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD.format(name="p"))
    code, out, _ = run(["lint", "pod.yaml", "--disable", "legacy-device-request"], tmp_path)
    assert code == 0 and "legacy-device-request" not in out
    (tmp_path / ".dramigrate.yaml").write_text("disable: [legacy-device-request]\n")
    assert run(["lint", "pod.yaml"], tmp_path)[0] == 0
    code, out, _ = run(["lint", "pod.yaml", "--enable", "legacy-device-request"], tmp_path)
    assert code == 1 and "legacy-device-request" in out
    code, _, err = run(["lint", "pod.yaml", "--disable", "no-such-rule"], tmp_path)
    assert code == 2 and "no-such-rule" in err and "rules list" in err
    (tmp_path / ".dramigrate.yaml").unlink()
    code, out, _ = run(["lint", "pod.yaml", "--exit-zero"], tmp_path)
    assert code == 0 and "legacy-device-request" in out


def test_block_and_file_suppressions(tmp_path: Path) -> None:
    block = (
        "# dramigrate: disable=legacy-device-request\n"
        + POD.format(name="off")
        + "# dramigrate: enable\n---\n"
        + POD.format(name="on")
    )
    (tmp_path / "block.yaml").write_text(block)
    (tmp_path / "file.yaml").write_text(
        POD.format(name="a") + "---\n# dramigrate: disable-file\n" + POD.format(name="b")
    )
    code, out, _ = run(["lint", "."], tmp_path)
    assert code == 1
    assert "Pod/on" in out and "Pod/off" not in out and "file.yaml" not in out
    code, _, _ = run(["fix", "."], tmp_path)
    assert (tmp_path / "file.yaml").read_text().count("nvidia.com/gpu: 1") == 2  # suppressed: not rewritten
    fixed = (tmp_path / "block.yaml").read_text()
    assert fixed.count("nvidia.com/gpu: 1") == 1 and "ResourceClaimTemplate" in fixed


CHART_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{{{ .Release.Name }}}}-{name}
spec:
  containers:
  - name: app
    image: app
    resources:
      limits:
        nvidia.com/gpu: {{{{ .Values.{key} }}}}
"""


def test_block_and_file_suppressions_in_a_chart_template_and_its_values(tmp_path: Path) -> None:
    chart = tmp_path / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("gpus: 1\n# dramigrate: disable\ntrainer:\n  gpus: 1\n# dramigrate: enable\n")
    (chart / "templates" / "open.yaml").write_text(CHART_POD.format(name="open", key="gpus"))
    (chart / "templates" / "off.yaml").write_text(
        "# dramigrate: disable-file=legacy-device-request\n" + CHART_POD.format(name="off", key="gpus")
    )
    (chart / "templates" / "trainer.yaml").write_text(CHART_POD.format(name="trainer", key="trainer.gpus"))
    before = {p.name: p.read_text() for p in chart.rglob("*.yaml")}
    code, out, err = run(["lint", "app", "--format", "json", "-v"], tmp_path)
    import json

    found = {(f["file"], f["rule"]) for f in json.loads(out)["findings"]}
    # the template's disable-file hides only that template (the rendered stream used to carry it to every one),
    # and the block in values.yaml hides the request whose count it sets
    assert found == {("app/templates/open.yaml", "legacy-device-request")}, (found, err)
    assert (  # --verbose on a chart: the pack entry, the workloads entry and the values key behind the count
        "app/templates/trainer.yaml:11: Pod/release-name-trainer container app: nvidia.com/gpu matched rule pack "
        "nvidia (rules/nvidia.yaml) entry `match: nvidia.com/gpu`: device class gpu.nvidia.com; pod template spec, "
        "found by the core/Pod entry of rules/workloads.yaml; trainer.gpus: 1 sets this device count "
        "(app/values.yaml:4)"
    ) in err
    assert "app/templates/trainer.yaml:11: [legacy-device-request] not reported: suppressed by app/values.yaml: " in err
    code, out, err = run(["fix", "app"], tmp_path)
    assert code == 1, "the open request stays: the chart is rewritten whole or not at all"
    assert {p.name: p.read_text() for p in chart.rglob("*.yaml")} == before
    assert "app: chart not rewritten: [legacy-device-request] at app/templates/off.yaml:12 is suppressed" in err
    (summary,) = [line for line in err.splitlines() if "file(s) scanned" in line]
    assert "1 error(s)" in summary and "fixable" not in summary, "fix does not count what it leaves alone as fixable"


def test_suppressions_apply_to_run_wide_findings(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: mine\nresources:\n"
        "  - {match: example.com/gpu, request: gpu, deviceClass: gpu.example.com}\n"
        "deviceClasses:\n  - {name: gpu.example.com, driver: gpu.example.com}\n"
    )
    pod = POD.format(name="p").replace("nvidia.com/gpu", "example.com/gpu")
    (tmp_path / "pod.yaml").write_text(pod)
    _, out, _ = run(["lint", "pod.yaml", "--rules", "mine.yaml"], tmp_path)
    assert "[classes-file-needed]" in out  # about the classes file, placed on the first finding
    (tmp_path / "pod.yaml").write_text("# dramigrate: disable-file=classes-file-needed\n" + pod)
    _, out, _ = run(["lint", "pod.yaml", "--rules", "mine.yaml"], tmp_path)
    assert "[classes-file-needed]" not in out and "[legacy-device-request]" in out


def test_explain_and_rules_list_come_from_the_catalogue(tmp_path: Path) -> None:
    from dramigrate.catalogue import catalogue

    code, out, _ = run(["rules", "list"], tmp_path)
    assert code == 0
    for r in catalogue().values():
        assert any(line.split()[:3] == [r.id, r.severity, "fixable" if r.fixable else "-"] for line in out.splitlines())
    assert "nvidia" in out  # the packs are still there
    rule = catalogue()["invalid-count"]
    code, out, _ = run(["explain", "invalid-count"], tmp_path)
    assert code == 0 and rule.rationale in out and rule.example in out and rule.help_uri in out
    code, _, err = run(["explain", "invalid-cont"], tmp_path)
    assert code == 2 and "did you mean invalid-count" in err


def test_colour_and_progress_on_a_terminal(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"p{i}.yaml").write_text(POD.format(name=f"p{i}"))
    # a terminal: colour and, for a run past the delay, a progress bar (the delay is 0 here to keep the test fast)
    code, out = on_a_terminal(["lint", "."], tmp_path, {"DRAMIGRATE_PROGRESS_DELAY": "0"})
    assert code == 1 and "\x1b[" in out and "dramigrate" in out and "files" in out and "━" in out
    # NO_COLOR on a terminal: no escape sequences at all, progress bar aside
    code, out = on_a_terminal(["lint", ".", "-q"], tmp_path, {"NO_COLOR": "1", "DRAMIGRATE_PROGRESS_DELAY": "0"})
    assert code == 1 and "\x1b" not in out and "━" not in out  # -q: no progress either
    code, out = on_a_terminal(["lint", ".", "--color", "never", "-q"], tmp_path, {})
    assert "\x1b" not in out
    # piped: no colour, no progress; FORCE_COLOR and --color always colour it anyway
    _, out, err = run(["lint", "."], tmp_path, {"NO_COLOR": "", "DRAMIGRATE_PROGRESS_DELAY": "0"})
    assert "\x1b" not in out + err
    _, out, _ = run(["lint", "."], tmp_path, {"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert "\x1b[" in out
    _, out, _ = run(["lint", ".", "--color", "always"], tmp_path, {"NO_COLOR": "1"})
    assert "\x1b[" in out


def test_short_flags_usage_help_and_completion(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD.format(name="p"))
    (tmp_path / "cfg.yaml").write_text("fail-on: warning\n")
    code, out, _ = run(["-V"], tmp_path)
    assert code == 0 and out.startswith("dramigrate ")
    code, out, _ = run(["lint", "pod.yaml", "-c", "cfg.yaml", "-o", "sub/r.txt", "-q"], tmp_path)
    assert code == 1 and out == "" and "legacy-device-request" in (tmp_path / "sub" / "r.txt").read_text()
    code, out, _ = run(["lint", "--help"], tmp_path)
    assert "Usage: dramigrate lint [OPTIONS] PATH..." in out
    assert "<list" not in out and "{paths}" not in out and "<str>" not in out and "<path>" not in out
    for fix_only in ("--html", "--post-renderer", "--classes "):
        assert fix_only not in out, fix_only
    for lint_option in ("--baseline", "--write-baseline", "--exit-zero", "--disable", "-q, --quiet", "-v, --verbose"):
        assert lint_option in out, lint_option
    code, out, _ = run(["--show-completion", "bash"], tmp_path, {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert code == 0 and "complete" in out and "dramigrate" in out
