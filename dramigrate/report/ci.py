"""CI formats: SARIF 2.1.0 (code scanning), GitHub workflow annotations, JUnit XML, Markdown.

Everything that comes from input is escaped for its consumer (report/escape.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from dramigrate import __version__
from dramigrate.catalogue import catalogue
from dramigrate.findings import Finding, InputError
from dramigrate.report import escape as esc

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
INFORMATION_URI = "https://github.com/dramigrate/dramigrate"


def _region(line: int, column: int) -> dict[str, int]:
    region = {"startLine": max(line, 1)}
    if column > 0:
        region["startColumn"] = column
    return region


def _location(file: str, line: int, column: int = 0) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": esc.uri(file)}, "region": _region(line, column)}}


def sarif_rules() -> list[dict[str, Any]]:
    """Every rule of the catalogue as a SARIF reportingDescriptor: the ids results refer to are all declared."""
    out = []
    for r in catalogue().values():
        out.append(
            {
                "id": r.id,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.rationale},
                "help": {
                    "text": f"{r.rationale}\n\nExample: {r.example}" if r.example else r.rationale,
                    "markdown": f"{r.rationale}\n\nExample:\n\n```\n{r.example}\n```" if r.example else r.rationale,
                },
                "helpUri": r.help_uri,
                "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
                "properties": {"fixable": r.fixable},
            }
        )
    return out


def sarif(findings: list[Finding], errors: list[InputError], notes: Iterable[tuple[str, str]] = ()) -> str:
    """notes: (file, message) of what a repository's config turns off, as the run's tool configuration notifications
    (warnings on line 1 of the config file)."""
    rules = sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in findings:
        if f.fixed:
            continue
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": _SARIF_LEVEL[f.severity.value],
            "message": {"text": f.message},
            "locations": [_location(f.file, f.line, f.column)],
        }
        if f.related:
            result["relatedLocations"] = [
                {"id": i, **_location(r.file, r.line), "message": {"text": r.note}} for i, r in enumerate(f.related)
            ]
        results.append(result)
    for e in errors:
        results.append(
            {
                "ruleId": e.rule,
                "ruleIndex": index[e.rule],
                "level": "error",
                "message": {"text": e.message},
                "locations": [_location(e.file or "-", e.line, e.column)],
            }
        )
    run = {
        "tool": {
            "driver": {
                "name": "dramigrate",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "results": results,
    }
    said = [{"level": "warning", "message": {"text": note}, "locations": [_location(file, 1)]} for file, note in notes]
    if said:
        run["invocations"] = [{"executionSuccessful": True, "toolConfigurationNotifications": said}]
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return esc.json_inert(json.dumps(doc, indent=2)) + "\n"


def github(findings: list[Finding], errors: list[InputError], notes: Iterable[tuple[str, str]] = ()) -> str:
    """GitHub Actions workflow commands: one annotation a finding, shown on the pull request's lines; notes are
    (file, message) warnings on line 1 of a file (what a repository's config turns off, for its reviewer)."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    prop, data = esc.workflow_property, esc.workflow_data
    lines = [
        f"::warning file={prop(file)},line=1,title={prop('dramigrate config')}::{data(note)}" for file, note in notes
    ]
    for f in findings:
        if not f.fixed:
            where = f"file={prop(f.file)},line={max(f.line, 1)}" + (f",col={f.column}" if f.column > 0 else "")
            lines.append(f"::{level[f.severity.value]} {where},title={prop('dramigrate ' + f.rule)}::{data(f.message)}")
    for e in errors:
        where = f"file={prop(e.file or '-')},line={max(e.line, 1)}"
        lines.append(f"::error {where},title={prop('dramigrate ' + e.rule)}::{data(e.message)}")
    return "".join(line + "\n" for line in lines)


def junit(
    findings: list[Finding], errors: list[InputError], files: Iterable[str] = (), notes: Iterable[tuple[str, str]] = ()
) -> str:
    """JUnit XML: a test case per file scanned (clean files pass), a failure element per finding, an error element
    per bad input; the suite's counts are those of the elements. notes: (file, message) of what a repository's
    config turns off, as properties of the suite."""
    from xml.sax.saxutils import escape, quoteattr  # imports urllib.request: only for this format

    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        if not f.fixed:
            by_file.setdefault(f.file, []).append(f)
    bad: dict[str, list[InputError]] = {}
    for e in errors:
        bad.setdefault(e.file or "-", []).append(e)
    cases = []
    failures = 0
    for name in sorted(set(files) | set(by_file) | set(bad)):
        body = ""
        for f in by_file.get(name, []):
            obj = f"{f.kind}/{f.name}" + (f" container {f.container}" if f.container else "") if f.kind else ""
            text = f"{f.file}:{f.line}:{f.column}: {f.severity.value} [{f.rule}] {obj + ': ' if obj else ''}{f.message}"
            body += (
                f"<failure type={quoteattr(f.rule)} message={quoteattr(_xml(f'{f.severity.value}: {f.message}'))}>"
                f"{escape(_xml(text))}</failure>"
            )
            failures += 1
        for e in bad.get(name, []):
            body += (
                f"<error type={quoteattr(e.rule)} message={quoteattr(_xml(e.message))}>{escape(_xml(str(e)))}</error>"
            )
        cases.append(f'<testcase classname="dramigrate" name={quoteattr(_xml(name))}>{body}</testcase>')
    n_errors = sum(len(v) for v in bad.values())
    properties = "".join(
        f"<property name={quoteattr('dramigrate config ' + _xml(file))} value={quoteattr(_xml(note))}/>"
        for file, note in notes
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="dramigrate" tests="{len(cases)}" '
        f'failures="{failures}" errors="{n_errors}">'
        f'<testsuite name="dramigrate" tests="{len(cases)}" failures="{failures}" errors="{n_errors}" skipped="0">'
        f"{'<properties>' + properties + '</properties>' if properties else ''}"
        f"{''.join(cases)}</testsuite></testsuites>\n"
    )


def _xml(text: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped, nor the noncharacters U+FFFE and U+FFFF (a file
    name may hold them): show them as \\xNN and \\uFFFE; and a line break from input as \\n, so a finding stays
    one line (a CI log that prints the file obeys a line starting `::error`)."""
    return _NONCHARACTER.sub(lambda m: f"\\u{ord(m.group()):04x}", esc.plain(text, newlines=False))


_NONCHARACTER = re.compile("[\ufffe\uffff]")


def markdown(
    findings: list[Finding],
    errors: list[InputError],
    summary: dict[str, Any],
    command: str = "lint",
    cutover: str | None = None,
    notes: Iterable[tuple[str, str]] = (),
    unwritten: str = "",
) -> str:
    """A Markdown report, e.g. for a pull-request comment or a job summary (report/templates/report.md.j2); notes:
    (file, message) of what a repository's config turns off, said above the findings; unwritten: the files a stopped
    fix did not write, said on the summary line."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("dramigrate.report", "templates"),
        autoescape=False,  # Markdown, not HTML: every value from input goes through the md filter
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = esc.markdown
    rows = []
    for f in findings:
        if not f.fixed:
            obj = f"{f.kind}/{f.name}" + (f" ({f.container})" if f.container else "") if f.kind else ""
            rows.append(
                {
                    "severity": f.severity.value,
                    "rule": f.rule,
                    "where": f"{f.file}:{f.line}",
                    "object": obj,
                    "message": f.message,
                }
            )
    for e in errors:
        rows.append(
            {
                "severity": "error",
                "rule": e.rule,
                "where": f"{e.file}:{e.line}" if e.line else e.file or "-",  # a file refused as a whole has no line
                "object": "",
                "message": e.message,
            }
        )
    return env.get_template("report.md.j2").render(
        rows=rows,
        summary=summary,
        command=command,
        cutover=cutover,
        notes=[note for _, note in notes],
        unwritten=unwritten,
    )
