"""JSON report: a stable, documented shape (docs/json-output.md)."""

from __future__ import annotations

import json as _json
from typing import Any

from dramigrate.findings import Finding

SCHEMA_VERSION = 1


def render(findings: list[Finding], summary: dict[str, Any], errors: list[dict[str, Any]]) -> str:
    doc = {
        "version": SCHEMA_VERSION,
        "findings": [f.to_json() for f in findings],
        "errors": errors,
        "summary": summary,
    }
    return _json.dumps(doc, indent=2) + "\n"
