"""The finding rule catalogue: every rule id dramigrate reports, from rules/findings.yaml (data, not code).

One source for the default severities (findings.RULES), `dramigrate rules list`, `dramigrate explain RULE` and the
SARIF rule descriptions. Loading checks only what the code relies on; the JSON Schema (rules/findings.schema.json)
is checked by `dramigrate rules validate` and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

CATALOGUE_FILE = "findings.yaml"
# Where helpUri points: the docs folder of the project's repository (rule docs anchors are relative to it).
DOCS_BASE = "https://github.com/dramigrate/dramigrate/blob/main/docs/"
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class RuleInfo:
    id: str
    severity: str  # error, warning or info: the default
    fixable: bool  # whether `dramigrate fix` resolves it
    summary: str  # one line
    rationale: str
    example: str
    docs: str  # page.md#anchor under docs/
    input: str = ""  # a manifest that triggers it, when the entry has one

    @property
    def help_uri(self) -> str:
        return DOCS_BASE + self.docs


def catalogue_path() -> Path:
    return Path(str(files("dramigrate.rules_data").joinpath(CATALOGUE_FILE)))


def parse(data: Any, origin: str) -> dict[str, RuleInfo]:
    """The rules of a catalogue document by id; ValueError naming the entry when it is not usable."""
    if not isinstance(data, dict) or data.get("kind") != "FindingRules" or not isinstance(data.get("rules"), list):
        raise ValueError(f"{origin}: not a finding rule catalogue (expected `kind: FindingRules` and `rules:`)")
    out: dict[str, RuleInfo] = {}
    for i, entry in enumerate(data["rules"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError(f"{origin}: rules[{i}]: an entry needs an id")
        rid = entry["id"]
        if rid in out:
            raise ValueError(f"{origin}: rules[{i}]: {rid} is declared twice")
        if entry.get("severity") not in SEVERITIES:
            raise ValueError(f"{origin}: rules[{i}] ({rid}): severity must be one of {', '.join(SEVERITIES)}")
        out[rid] = RuleInfo(
            id=rid,
            severity=entry["severity"],
            fixable=bool(entry.get("fixable", False)),
            summary=str(entry.get("summary", "")),
            rationale=str(entry.get("rationale", "")),
            example=str(entry.get("example", "")),
            docs=str(entry.get("docs", "")),
            input=str(entry.get("input", "")),
        )
    return out


@cache
def catalogue() -> dict[str, RuleInfo]:
    """Every finding rule dramigrate has, in the catalogue's order."""
    import yaml

    text = catalogue_path().read_text(encoding="utf-8")
    return parse(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), str(catalogue_path()))


def rule(rule_id: str) -> RuleInfo:
    """One rule; KeyError for an id the catalogue does not declare."""
    return catalogue()[rule_id]
