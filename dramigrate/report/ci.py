"""CI formats: SARIF 2.1.0 (code scanning), GitHub workflow annotations, JUnit XML, Markdown."""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from dramigrate import __version__
from dramigrate.findings import RULES, Finding, InputError

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def sarif(findings: list[Finding], errors: list[InputError]) -> str:
    used = sorted({f.rule for f in findings})
    results: list[dict[str, Any]] = []
    for f in findings:
        if f.fixed:
            continue
        results.append(
            {
                "ruleId": f.rule,
                "level": _SARIF_LEVEL[f.severity.value],
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": f.file},
                            "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
                        }
                    }
                ],
                "relatedLocations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": r.file},
                            "region": {"startLine": max(r.line, 1)},
                        },
                        "message": {"text": r.note},
                    }
                    for r in f.related
                ],
            }
        )
    for e in errors:
        results.append(
            {
                "ruleId": "bad-input",
                "level": "error",
                "message": {"text": e.message},
                "locations": [
                    {"physicalLocation": {"artifactLocation": {"uri": e.file}, "region": {"startLine": max(e.line, 1)}}}
                ],
            }
        )
    run = {
        "tool": {
            "driver": {
                "name": "dramigrate",
                "version": __version__,
                "informationUri": "https://github.com/dramigrate/dramigrate",
                "rules": [
                    {
                        "id": r,
                        "shortDescription": {"text": RULES[r][1]},
                        "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[r][0].value]},
                    }
                    for r in used
                ],
            }
        },
        "results": results,
    }
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2) + "\n"


def github(findings: list[Finding], errors: list[InputError]) -> str:
    """GitHub Actions workflow commands: one annotation a finding, shown on the pull request's lines."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    lines = []
    for f in findings:
        if not f.fixed:
            msg = f.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            lines.append(
                f"::{level[f.severity.value]} file={f.file},line={max(f.line, 1)},col={max(f.column, 1)},"
                f"title=dramigrate {f.rule}::{msg}"
            )
    lines.extend(f"::error file={e.file},line={max(e.line, 1)},title=dramigrate bad input::{e.message}" for e in errors)
    return "".join(line + "\n" for line in lines)


def junit(findings: list[Finding], errors: list[InputError]) -> str:
    """JUnit XML: a test case per file, failed when it has error findings or bad input."""
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        if not f.fixed:
            by_file.setdefault(f.file, []).append(f)
    bad = {e.file: e for e in errors}
    cases = []
    for name in sorted(set(by_file) | set(bad)):
        problems = [f for f in by_file.get(name, []) if f.severity.value == "error"]
        body = "".join(
            f"<failure type={quoteattr(f.rule)} message={quoteattr(f.message)}>"
            f"{escape(f.file)}:{f.line}:{f.column}</failure>"
            for f in problems
        )
        if name in bad:
            body += f"<error message={quoteattr(bad[name].message)}>{escape(str(bad[name]))}</error>"
        cases.append(f'<testcase classname="dramigrate" name={quoteattr(name)}>{body}</testcase>')
    failures = sum(1 for c in cases if "<failure" in c)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="dramigrate" tests="{len(cases)}" '
        f'failures="{failures}" errors="{len(bad)}">{"".join(cases)}</testsuite>\n'
    )


def markdown(findings: list[Finding], errors: list[InputError], summary: dict[str, Any]) -> str:
    """A Markdown table, e.g. for a pull-request comment or a job summary."""
    out = ["| severity | rule | where | object | message |", "|---|---|---|---|---|"]
    for f in findings:
        if not f.fixed:
            obj = f"{f.kind}/{f.name}" + (f" ({f.container})" if f.container else "") if f.kind else ""
            msg = f.message.replace("|", "\\|")
            out.append(f"| {f.severity.value} | `{f.rule}` | `{f.file}:{f.line}` | {obj} | {msg} |")
    for e in errors:
        msg = e.message.replace("|", "\\|")
        out.append(f"| error | `bad-input` | `{e.file}:{e.line}` |  | {msg} |")
    out.append("")
    out.append(
        f"{summary['files']} file(s) scanned: {summary['errors']} error(s), {summary['warnings']} warning(s), "
        f"{summary['infos']} info, {summary['fixable']} fixable with `dramigrate fix`."
    )
    return "\n".join(out) + "\n"
