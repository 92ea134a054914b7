"""docs/ci.md, run: every shell session's commands are run and their output compared with the page; every config
snippet is used as its tool would use it (pre-commit hooks, the GitHub Action and its SARIF upload, GitLab CI's
script and JUnit artifact, the config file, suppression comments).

To refresh the page after a deliberate change: `python tests/test_docs_ci.py` prints each session as it runs now.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "ci.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")) if lang == kind]


def sessions() -> list[list[tuple[str, str]]]:
    """Each console block as (command, expected output) pairs."""
    out = []
    for body in blocks("console"):
        pairs: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            else:
                pairs[-1][1].append(line)
        out.append([(cmd, "".join(x + "\n" for x in lines)) for cmd, lines in pairs])
    return out


def workdir(base: Path) -> Path:
    """The folder the page's sessions run in: k8s/ (the example manifests) and charts/trainer."""
    base.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "examples" / "manifests", base / "k8s")
    shutil.copytree(REPO / "fixtures" / "charts" / "literal-count" / "chart", base / "charts" / "trainer")
    return base


def shell(command: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    bin_dir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "FORCE_COLOR")},
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "NO_COLOR": "1",
            "COLUMNS": "200",
            "DRAMIGRATE_PROGRESS_SLOW": "600",  # the page's output is a run's on an idle machine: no "still ..." line
            **(env or {}),
        },
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def snippet(name: str) -> dict[str, Any]:
    """The YAML block whose first line is `# name`."""
    found = [yaml.safe_load(b) for b in blocks("yaml") if b.startswith(f"# {name}\n")]
    assert found, f"docs/ci.md has no `# {name}` block"
    return found[0] if len(found) == 1 else {"all": found}


def test_shell_sessions_print_what_the_page_shows(tmp_path: Path) -> None:
    """The sessions run in order in one folder, as a reader would type them (the baseline steps build on each
    other)."""
    cwd = workdir(tmp_path / "w")
    for session in sessions():
        for command, expected in session:
            _, output = shell(command, cwd)
            assert output == expected, f"$ {command}\n--- page\n{expected}--- now\n{output}"


def test_pre_commit_hooks_run_as_configured(tmp_path: Path) -> None:
    cwd = workdir(tmp_path / "w")
    shipped = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    configs = snippet(".pre-commit-config.yaml")["all"]
    staged = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*.yaml"))
    for config in configs:
        (hook,) = config["repos"][0]["hooks"]
        assert hook["id"] in shipped
        files = [
            f
            for f in staged
            if re.search(hook.get("files", ""), f) and not (hook.get("exclude") and re.search(hook["exclude"], f))
        ]
        argv = shipped[hook["id"]]["entry"].split() + hook.get("args", [])
        if hook.get("pass_filenames", True):
            argv += files
        code, output = shell(" ".join(f"'{a}'" for a in argv), cwd)
        assert code == 1 and "legacy-device-request" in output and "Traceback" not in output, output
        if not hook.get("pass_filenames", True):
            assert "charts/trainer/templates/pod.yaml" in output  # the chart, rendered as a whole
        else:
            assert "charts/" not in output


def test_shipped_hooks_take_a_changed_chart_helper(tmp_path: Path) -> None:
    """pre-commit passes the staged files that match a hook's `types` and `files`: a commit that changes only a
    chart's `templates/_helpers.tpl` must reach the hook (identify tags a .tpl file `text`, not `yaml`), and lint
    of that one file takes its chart (nearest Chart.yaml) and fails while the chart still asks for a GPU."""
    cwd = workdir(tmp_path / "w")
    helper = cwd / "charts" / "trainer" / "templates" / "_helpers.tpl"
    helper.write_text('{{- define "trainer.name" -}}trainer{{- end }}\n')
    for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")):
        assert set(hook.get("types", ["file"])) <= {"text", "file"}, hook
        assert re.search(hook.get("files", ""), "charts/trainer/templates/_helpers.tpl"), hook
        assert re.search(hook.get("files", ""), "k8s/inference.yaml"), hook
    code, output = shell("dramigrate lint charts/trainer/templates/_helpers.tpl", cwd)
    assert code == 1 and "charts/trainer/templates/pod.yaml" in output and "legacy-device-request" in output, output


def test_shipped_hooks_take_a_staged_json_manifest(tmp_path: Path) -> None:
    """A folder's JSON manifests are checked (never skipped silently), but the hooks' `files` took YAML and
    templates only: a commit adding a JSON Pod that asks for a GPU passed the lint gate unchecked. A JSON file that
    is not a manifest (package.json, even one whose text names the device) has no finding."""
    cwd = workdir(tmp_path / "w")
    deployment = next(yaml.safe_load_all((cwd / "k8s" / "inference.yaml").read_text(encoding="utf-8")))
    (cwd / "k8s" / "inference.json").write_text(json.dumps(deployment, indent=2))
    (cwd / "package.json").write_text('{"name": "web", "description": "asks for nvidia.com/gpu: 1"}\n')
    for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")):
        staged = [f for f in ("k8s/inference.json", "package.json") if re.search(hook.get("files", ""), f)]
        assert staged == ["k8s/inference.json", "package.json"], hook
        code, output = shell(" ".join([hook["entry"], *staged]), cwd)
        if hook["id"] == "dramigrate-lint":
            assert code == 1 and "k8s/inference.json:" in output and "package.json" not in output, output
    fixed = (cwd / "k8s" / "inference.json").read_text()
    assert "resourceClaimTemplateName" in json.dumps(json.loads(fixed))  # by the fix hook, and JSON still


def test_config_file_excludes_hold_for_named_files(tmp_path: Path) -> None:
    cwd = workdir(tmp_path / "w")
    (cwd / ".dramigrate.yaml").write_text(yaml.safe_dump(snippet(".dramigrate.yaml")))
    (cwd / "vendor").mkdir()
    shutil.copy(cwd / "k8s" / "inference.yaml", cwd / "vendor" / "gpu.yaml")
    code, output = shell("dramigrate lint vendor/gpu.yaml k8s/inference.yaml", cwd)
    assert code == 1 and "vendor/gpu.yaml" not in output and "k8s/inference.yaml" in output


def test_github_workflow_uses_the_action_as_it_is(tmp_path: Path) -> None:
    cwd = workdir(tmp_path / "w")
    workflow = snippet(".github/workflows/dramigrate.yaml")
    steps = workflow["jobs"]["lint"]["steps"]
    (ours,) = [s for s in steps if s.get("uses", "").startswith("dramigrate/dramigrate@")]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert set(ours["with"]) <= set(action["inputs"])
    assert upload["if"] == "always()" and workflow["permissions"]["security-events"] == "write"
    run_step = action["runs"]["steps"][-1]
    env = {
        k: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: str(ours["with"].get(m[1], "")), v)
        for k, v in run_step["env"].items()
    }
    code, output = shell(run_step["run"], cwd, {**env, "GITHUB_ACTIONS": "true"})
    assert code == 1 and "::error file=" in output and "Traceback" not in output
    assert (cwd / upload["with"]["sarif_file"]).is_file()


def test_gitlab_job_script_writes_its_junit_artifact(tmp_path: Path) -> None:
    from junitparser import JUnitXml

    cwd = workdir(tmp_path / "w")
    job = snippet(".gitlab-ci.yml")["dramigrate"]
    for line in job["script"]:
        if line.startswith("pip install"):
            continue  # dramigrate is installed here already
        code, output = shell(line, cwd)
        assert code == 1 and "Traceback" not in output
    report = JUnitXml.fromfile(str(cwd / job["artifacts"]["reports"]["junit"]))
    assert sum(1 for suite in report for _ in suite) == len(list((cwd / "k8s").glob("*.yaml")))
    assert job["artifacts"]["when"] == "always"


def test_suppression_comments_are_the_ones_dramigrate_reads() -> None:
    from dramigrate.suppress import ALL, parse

    (text,) = [b for b in blocks("yaml") if b.startswith("# dramigrate: disable-file")]
    found = parse(text)
    assert ALL in found.whole_file and ("invalid-count" in {r for _, _, r in found.blocks})


if __name__ == "__main__":  # print every session as it runs today, to paste into docs/ci.md
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cwd = workdir(Path(tmp) / "w")
        for n, session in enumerate(sessions()):
            print(f"----- session {n}")
            for command, _ in session:
                print(f"$ {command}")
                print(shell(command, cwd)[1], end="")
