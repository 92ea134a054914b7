"""Hostile inputs of the twentieth sweep (issue 11's checker): each beside good files, which are still checked, while
the bad one is named and left as it was; lint and fix agree; no message carries a control character of the input."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import ANY

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

GPU_POD_TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-pod
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
"""
FORMATS = ["text", "json", "github", "sarif", "junit", "markdown"]


def _no_control(text: str) -> None:
    """No control character of the input in a report (ESC would drive the terminal, a line break start a line)."""
    assert "Traceback" not in text
    assert not any(c in text for c in "\x1b\x07\x00\x85")


@pytest.mark.parametrize("name", ["po\x1b[31md.yaml", "pod\r.yaml", 'pod\nx: "\n#.yaml', "pod\x85.yaml"])
def test_a_template_file_name_with_a_control_character_is_refused_by_lint_as_by_fix(tmp_path: Path, name: str) -> None:
    """Helm writes a template's path into the rendered output's `# Source:` comment. With ESC in it, lint called
    the chart's request fixable (exit 1) while fix refused the chart ("would not parse back", exit 2); a line break
    started a line of YAML of the file name's choosing in the output. Now lint, diff and fix all refuse the chart,
    naming the file escaped, and the good file beside it is still checked."""
    chart = chart_with(tmp_path, "c", {"values.yaml": "gpus: 1\n"})
    (chart / "templates" / name).write_text(GPU_POD_TEMPLATE)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = (chart / "templates" / name).read_bytes()

    outcomes = []
    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, "c", "good.yaml", "--format", "json"], cwd=tmp_path)
        _no_control(out + err)
        report = json.loads(out)
        outcomes.append((code, [(e["file"], "template file name" in e["message"]) for e in report["errors"]]))
    assert outcomes == [(2, [("c", True)])] * 3
    assert (chart / "templates" / name).read_bytes() == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()  # fix wrote the good file


@pytest.mark.parametrize(
    ("config", "line", "what"),
    [
        ("kube-version: '1.36'\nexclude: 3\n", 2, "`exclude` must be a list of strings, not a number"),
        ("kube-version: '1.36'\nexlude: [x]\n", 2, "did you mean `exclude`"),
        ("fail-on: error\nsharing: [a]\n", 2, "`sharing` must map"),
        ("- a\n", 1, "config must be a mapping of settings, not a list"),
        ("exclude: [a\n", 2, "invalid YAML"),
    ],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_malformed_config_is_named_at_its_line_in_every_report(
    tmp_path: Path, config: str, line: int, what: str, fmt: str
) -> None:
    """A `.dramigrate.yaml` that does not load stops the run (exit 2: its excludes and overrides decide what a run
    says). Before, a wrong setting was named without its line, and only on standard error: `--format json` or
    `sarif` wrote nothing to standard output, so the consumer failed on an empty report. Now the report of every
    format comes out, naming the config at the line of the setting, and says nothing was scanned."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dramigrate.yaml").write_text(config)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", "good.yaml", "--format", fmt], cwd=tmp_path)

    _no_control(out + err)
    assert code == 2
    assert "nothing checked" in err
    shown = out + err
    places = (f".dramigrate.yaml:{line}", f'"line": {line}', f"line={line}", f'"startLine": {line}')
    assert any(place in shown for place in places)
    if fmt == "json":
        report = json.loads(out)
        assert report["summary"]["files"] == 0 and report["summary"]["badInput"] == 1
        assert [(e["file"], e["line"]) for e in report["errors"]] == [(".dramigrate.yaml", line)]
        assert what in report["errors"][0]["message"]
    if fmt == "sarif":
        json.loads(out)  # a SARIF document a code-scanning upload takes


def test_fix_with_a_malformed_config_writes_nothing_and_reports_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dramigrate.yaml").write_text("exclude: 3\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "good.yaml", "--format", "json", "--output", "report.json"], cwd=tmp_path)

    _no_control(out + err)
    assert code == 2
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["files"] == {"written": [], "notWritten": [], "failed": [{"file": ".dramigrate.yaml", "reason": ANY}]}
    assert (tmp_path / "good.yaml").read_text() == ONE_GPU_POD.format(name="good")
