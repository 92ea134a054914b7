"""Reports: turn findings into text, JSON and unified diffs. Formatters decide nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

from dramigrate.findings import Finding, Severity

FORMATS = ("text", "json", "sarif", "github", "junit", "markdown")
MACHINE_FORMATS = ("json", "sarif", "github", "junit")  # read by programs: never mixed with human messages


def summary(findings: list[Finding], files: int, changed: int, bad_input: int) -> dict[str, Any]:
    remaining = [f for f in findings if not f.fixed]
    by = Counter(f.severity.value for f in remaining)
    return {
        "files": files,
        "filesChanged": changed,
        "badInput": bad_input,
        "errors": by.get("error", 0),
        "warnings": by.get("warning", 0),
        "infos": by.get("info", 0),
        "fixable": sum(1 for f in remaining if f.fixable or f.would_fix),
        "fixed": sum(1 for f in findings if f.fixed),
    }


def worst(findings: list[Finding]) -> Severity | None:
    remaining = [f.severity for f in findings if not f.fixed]
    return max(remaining, key=lambda s: s.rank) if remaining else None
