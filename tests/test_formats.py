"""CI report formats through the installed command: SARIF, GitHub annotations, JUnit and Markdown."""

from __future__ import annotations

import json
import xml.dom.minidom
from pathlib import Path

from conftest import RunCli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "manifests"


def test_sarif_has_a_result_per_open_finding_with_locations(run_cli: RunCli) -> None:
    code, out, _ = run_cli(["lint", EXAMPLES, "--format", "sarif"])
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    (run,) = doc["runs"]
    _, plain, _ = run_cli(["lint", EXAMPLES, "--format", "json"])
    findings = json.loads(plain)["findings"]
    assert len(run["results"]) == len(findings)
    ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    for result, finding in zip(run["results"], findings, strict=True):
        assert result["ruleId"] == finding["rule"] and result["ruleId"] in ids
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (finding["line"], finding["column"])


def test_github_annotations_point_at_file_and_line(run_cli: RunCli) -> None:
    _, out, _ = run_cli(["lint", EXAMPLES / "inference.yaml", "--format", "github"])
    (line,) = out.splitlines()
    assert (
        line.startswith("::error file=") and "inference.yaml,line=20,col=13" in line and "legacy-device-request" in line
    )


def test_junit_fails_files_with_errors(run_cli: RunCli) -> None:
    _, out, _ = run_cli(["lint", EXAMPLES, "--format", "junit"])
    suite = xml.dom.minidom.parseString(out).documentElement
    failed = {
        c.getAttribute("name") for c in suite.getElementsByTagName("testcase") if c.getElementsByTagName("failure")
    }
    assert any(name.endswith("inference.yaml") for name in failed)
    assert not any(name.endswith("not-yet.yaml") for name in failed)  # warnings only


def test_markdown_table(run_cli: RunCli) -> None:
    _, out, _ = run_cli(["lint", EXAMPLES, "--format", "markdown"])
    assert out.startswith("| severity | rule | where | object | message |")
    assert "`legacy-device-request`" in out and "fixable with `dramigrate fix`" in out
