"""Report formats, each read back by its real consumer: SARIF against the official 2.1.0 schema, GitHub
workflow commands as the runner splits them, JUnit through junitparser, Markdown and text with hostile names."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest
from conftest import ONE_GPU_POD, dramigrate_executable
from junitparser import Error, Failure, JUnitXml

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "manifests"
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
# A file name an attacker would choose: a space, %, a comma, a colon, Markdown and HTML.
HOSTILE = "gpu 100%, a:b |x| <b>[y](javascript:e).yaml"
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  a: b\n"


def run_env(args: list[Any], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run(
        [dramigrate_executable(), *map(str, args)],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Examples, plus a device file with a hostile name, a clean file and a file that is bad input."""
    root = tmp_path_factory.mktemp("formats")
    shutil.copytree(EXAMPLES, root / "m")
    shutil.copy(EXAMPLES / "inference.yaml", root / "m" / HOSTILE)
    (root / "m" / "clean.yaml").write_text(CONFIGMAP)
    (root / "m" / "broken.yaml").write_text("resources:\n  limits: {nvidia.com/gpu: [1\n")
    return root


@pytest.fixture(scope="module")
def reports(tree: Path) -> dict[str, Any]:
    """One lint run writing every format at once (--format FMT=FILE, repeatable), json on standard output."""
    args = ["lint", "m", "--format", "json"]
    for fmt in ("sarif", "github", "junit", "markdown", "text"):
        args += ["--format", f"{fmt}=out/deeper/report.{fmt}"]  # a folder that does not exist yet
    code, out, err = run_env(args, tree, {"NO_COLOR": "1"})
    files = {p.rsplit(".", 1)[1]: (tree / p).read_text(encoding="utf-8") for p in (a.split("=")[1] for a in args[5::2])}
    return {"code": code, "json": json.loads(out), "err": err, **files}


def test_one_run_writes_every_format_and_json_stays_alone_on_stdout(reports: dict[str, Any]) -> None:
    assert reports["code"] == 2  # broken.yaml is bad input
    assert set(reports) >= {"sarif", "github", "junit", "markdown", "text"}
    files = reports["json"]["summary"]["files"]
    assert any(line.startswith(f"{files} file(s) scanned") for line in reports["text"].splitlines())


def test_sarif_is_valid_against_the_official_schema(reports: dict[str, Any]) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    doc = json.loads(reports["sarif"])
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [e.message for e in validator.iter_errors(doc)] == []
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    declared = {r["id"] for r in rules}
    assert {r["ruleId"] for r in run["results"]} <= declared and "bad-input" in declared
    assert any(r["ruleId"] == "bad-input" for r in run["results"])
    for r in rules:
        assert r["shortDescription"]["text"] and r["help"]["text"]
        assert r["helpUri"].startswith("https://") and "/docs/" in r["helpUri"] and "#" in r["helpUri"]
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    # a name with a space, % and more is a valid URI reference that decodes back to the file's name
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in run["results"]}
    hostile = [u for u in uris if unquote(u) == f"m/{HOSTILE}"]
    assert hostile and not re.search(r"[ <>|\[\]]", hostile[0]) and "%25" in hostile[0]
    open_findings = [f for f in reports["json"]["findings"] if not f["fixed"]]
    assert len(run["results"]) == len(open_findings) + len(reports["json"]["errors"])


def test_github_annotations_cannot_be_forged_by_a_file_name(tmp_path: Path) -> None:
    evil = "x.yaml\n::error file=forged.yaml,line=1::pwned\n.yaml"
    (tmp_path / evil).write_text((EXAMPLES / "inference.yaml").read_text())
    code, out, _ = run_env(["lint", ".", "--format", "auto"], tmp_path, {"GITHUB_ACTIONS": "true"})
    assert code == 1
    # one device finding, one workflow command: nothing injected (info notices about topology aside)
    (line,) = [x for x in out.splitlines() if "dramigrate topology-lost" not in x]
    m = re.fullmatch(r"::error (?P<props>[^:]*)::(?P<data>.*)", line)
    assert m, line
    props = dict(p.split("=", 1) for p in m["props"].split(","))
    decode = {"%0A": "\n", "%0D": "\r", "%3A": ":", "%2C": ",", "%25": "%"}
    assert re.sub("|".join(decode), lambda x: decode[x.group(0)], props["file"]) == evil
    assert props["line"] == "20" and props["title"] == "dramigrate legacy-device-request"
    # outside GitHub Actions, auto is the text report
    _, out, _ = run_env(["lint", ".", "--format", "auto"], tmp_path, {"GITHUB_ACTIONS": ""})
    assert "error [legacy-device-request]" in out and not any(line.startswith("::") for line in out.splitlines())


def test_github_annotations_carry_no_terminal_escapes_from_a_file_name(tmp_path: Path) -> None:
    """The Actions log renders ANSI sequences: a name holding ESC, BEL or DEL must not reach it raw."""
    evil = "x\x1b[2J\x1b]0;pwned\x07\x7f.yaml"
    (tmp_path / evil).write_text((EXAMPLES / "inference.yaml").read_text())
    bad = "kind: Pod\nspec: {containers: [{name: a, resources: {limits: {nvidia.com/gpu: [\n"
    (tmp_path / "bad\x1b[31m.yaml").write_text(bad)
    code, out, _ = run_env(["lint", ".", "--format", "github"], tmp_path, {})
    assert code == 2
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", out), out
    assert "x\\x1b[2J" in out and "bad\\x1b[31m.yaml" in out  # shown, not obeyed


def test_junit_has_a_testcase_per_file_and_a_failure_per_finding(tree: Path, reports: dict[str, Any]) -> None:
    path = tree / "report.xml"
    path.write_text(reports["junit"], encoding="utf-8")
    xml = JUnitXml.fromfile(str(path))
    cases = [c for suite in xml for c in suite]
    names = {c.name for c in cases}
    scanned = {f"m/{p.name}" for p in (tree / "m").iterdir() if p.suffix in (".yaml", ".yml")}
    assert names == scanned  # every file, clean ones too
    assert [c for c in cases if c.name == "m/clean.yaml"][0].is_passed
    failures = [r for c in cases for r in c.result if isinstance(r, Failure)]
    errors = [r for c in cases for r in c.result if isinstance(r, Error)]
    open_findings = [f for f in reports["json"]["findings"] if not f["fixed"]]
    assert len(failures) == len(open_findings) and len(errors) == len(reports["json"]["errors"]) == 1
    for suite in xml:
        assert (suite.tests, suite.failures, suite.errors) == (len(cases), len(failures), len(errors))


def test_junit_keeps_each_finding_on_one_line_whatever_a_name_holds(tmp_path: Path) -> None:
    """A container named `"app\\n::error file=x::forged"` (a YAML escape) put a line of its own into the JUnit
    file, which a CI log that prints the report (`cat report.xml`) runs as a workflow command."""
    forged = ONE_GPU_POD.format(name="p").replace("- name: app", '- name: "app\\n::error file=x::forged\\r"')
    (tmp_path / "forged.yaml").write_text(forged)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_env(["lint", ".", "--format", "junit"], tmp_path, {})

    assert code == 1, err
    assert not any(line.startswith("::") for line in out.splitlines()), out
    xml = JUnitXml.fromstring(out)
    texts = [r.text for suite in xml for case in suite for r in case.result if isinstance(r, Failure)]
    assert any("container app\\n::error file=x::forged\\r:" in t for t in texts), texts


def test_markdown_escapes_input_and_says_when_clean(tree: Path, reports: dict[str, Any]) -> None:
    md = reports["markdown"]
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 6 for row in rows)  # no cell broken by a | in a name
    assert "<b>" not in md and not re.search(r"(?<!\\)\]\(javascript", md) and "&lt;b&gt;" in md
    code, out, _ = run_env(["lint", "m/clean.yaml", "--format", "markdown"], tree, {})
    assert code == 0 and "no findings" in out and "| severity |" not in out


def test_text_report_shows_control_characters_instead_of_obeying_them(tmp_path: Path) -> None:
    evil = "a\x1b[2J\x1b]0;title\x07.yaml"
    (tmp_path / evil).write_text((EXAMPLES / "inference.yaml").read_text())
    code, out, _ = run_env(["lint", ".", "--color", "always"], tmp_path, {})
    assert code == 1
    assert "\\x1b[2J" in out and "\x07" not in out and "\x1b[2J" not in out and "\x1b]0" not in out
    assert "\x1b[" in out  # --color always still colours the severity


def test_machine_formats_go_to_stdout_for_lint_diff_and_fix(tree: Path) -> None:
    work = tree / "dfx"
    work.mkdir()
    shutil.copy(EXAMPLES / "inference.yaml", work / "a.yaml")
    code, out, err = run_env(["diff", "dfx", "--format", "json"], tree, {})
    doc = json.loads(out)  # stdout is the JSON and nothing else: | jq works
    (f,) = [f for f in doc["findings"] if f["rule"] == "legacy-device-request"]
    assert code == 0 and f["wouldFix"] and not f["fixed"] and doc["summary"]["fixed"] == 0
    assert doc["summary"]["fixable"] >= 1 and "would fix" not in out
    code, out, err = run_env(["diff", "dfx"], tree, {})
    assert out.startswith("--- ") and "(would fix)" in err and " fixed" not in err and "fixable" in err
    code, out, err = run_env(["fix", "dfx", "--format", "sarif"], tree, {})
    assert code == 0 and json.loads(out)["version"] == "2.1.0"
    code, out, err = run_env(["fix", "-", "--format", "json"], tree, {})
    assert code == 2 and "--output" in err and out == ""


def test_report_destinations_are_checked_before_any_work(tree: Path) -> None:
    work = tree / "dest"
    work.mkdir()
    shutil.copy(EXAMPLES / "inference.yaml", work / "a.yaml")
    before = (work / "a.yaml").read_bytes()
    code, _, err = run_env(["fix", "dest", "--format", "json", "--format", "sarif"], tree, {})
    assert code == 2 and "sarif=FILE" in err
    blocked = tree / "a-file"
    blocked.write_text("")
    code, _, err = run_env(["fix", "dest", "--format", "json", "-o", blocked / "r.json"], tree, {})
    assert code == 2 and str(blocked / "r.json") in err and "internal error" not in err and "Traceback" not in err
    assert (work / "a.yaml").read_bytes() == before  # nothing rewritten


def test_fit_format_accepts_what_its_help_lists(tree: Path) -> None:
    code, out, _ = run_env(["fit", "--help"], tree, {})
    listed = re.search(r"Report format: (.*?)\.", " ".join(out.split()))
    assert listed and listed.group(1) == "text or json"
    inventory = REPO / "fixtures" / "inventories" / "a100-80gb.yaml"
    code, out, _ = run_env(["fit", "--inventory", inventory, "m/inference.yaml", "--format", "json"], tree, {})
    assert json.loads(out)["claims"]
    code, _, err = run_env(["fit", "--inventory", inventory, "m/inference.yaml", "--format", "sarif"], tree, {})
    assert code == 2 and "text or json" in err


def test_a_diff_names_a_hostile_file_as_git_quotes_it_and_still_applies(tmp_path: Path) -> None:
    """A file name holding a line break wrote a second `+++` header (the diff no longer applied, and a crafted name
    forges hunks); ESC reached the terminal. git C-quotes such names: `git apply` reads them back."""
    names = ["a\n+++ b x.yaml", "b\x1b[2Jc.yaml", 'q"uote\\.yaml']
    for name in names:
        (tmp_path / name).write_text((EXAMPLES / "inference.yaml").read_text())
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    code, out, _ = run_env(["diff", "."], tmp_path, {})
    assert code == 0 and "\x1b" not in out
    headers = [line for line in out.splitlines() if line.startswith(("--- ", "+++ "))]
    assert len(headers) == 2 * len(names) and '+++ "b/a\\n+++ b x.yaml"' in headers, headers
    (tmp_path / "d.patch").write_text(out)
    subprocess.run(["git", "apply", "d.patch"], cwd=tmp_path, check=True)
    assert all("resourceClaimTemplateName" in (tmp_path / name).read_text() for name in names)
