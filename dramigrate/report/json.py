"""JSON report: a stable, documented shape (docs/json-output.md)."""

from __future__ import annotations

import json as _json
from typing import Any

from dramigrate.findings import Finding

SCHEMA_VERSION = 1


def document(findings: list[Finding], summary: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The report as data: what --format json prints and what the HTML report is built from."""
    return {
        "version": SCHEMA_VERSION,
        "findings": [f.to_json() for f in findings],
        "errors": errors,
        "summary": summary,
    }


def render(findings: list[Finding], summary: dict[str, Any], errors: list[dict[str, Any]]) -> str:
    return _json.dumps(document(findings, summary, errors), indent=2) + "\n"
