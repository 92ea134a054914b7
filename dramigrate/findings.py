"""Findings: what dramigrate reports, with where it is and whether `fix` resolves it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cache


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@dataclass(frozen=True)
class Location:
    file: str
    line: int = 0
    column: int = 0
    note: str = ""


@dataclass
class Finding:
    rule: str
    severity: Severity
    message: str
    file: str
    line: int = 0
    column: int = 0
    kind: str = ""
    namespace: str = ""
    name: str = ""
    pod_template_path: str = ""
    container: str = ""
    resource: str = ""
    device_class: str = ""  # the DeviceClass the resource maps to in the rule packs, "" when none
    fixable: bool = False
    fixed: bool = False
    would_fix: bool = False  # diff (a dry run): fix would resolve it; never set together with fixed
    related: list[Location] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.message = _bounded(self.message)

    def recast(self, rule: str, message: str) -> Finding:
        """The same place and object under another rule: not fixable, not fixed."""
        return replace(
            self,
            rule=rule,
            severity=RULES[rule][0],
            message=message,
            fixable=False,
            fixed=False,
            would_fix=False,
            related=list(self.related),
        )

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file, self.line, self.column, self.rule)

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "podTemplatePath": self.pod_template_path,
            "container": self.container,
            "resource": self.resource,
            "deviceClass": self.device_class,
            "message": self.message,
            "fixable": self.fixable,
            "fixed": self.fixed,
            "wouldFix": self.would_fix,
            "related": [{"file": r.file, "line": r.line, "column": r.column, "message": r.note} for r in self.related],
        }


MESSAGE_LIMIT = 8000  # characters of one message (a finding's, bad input's, one on standard error), whatever it quotes


def _bounded(message: str) -> str:
    """A message quotes its input in part: a 300 KB resource key or count was quoted whole, four times in a JSON
    report of 1.2 MB, and a config's 300 KB key twice in the text report."""
    if len(message) <= MESSAGE_LIMIT:
        return message
    from dramigrate.report.escape import clipped  # not above: dramigrate.report imports this module

    return clipped(message, MESSAGE_LIMIT)


class InputError(Exception):
    """Bad input: reported with file:line, exit code 2, never a traceback."""

    def __init__(self, message: str, file: str = "", line: int = 0, column: int = 0, rule: str = "bad-input") -> None:
        message = _bounded(message)
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.rule = rule  # the catalogue's id for what was refused (chart-symlink-outside...), bad-input by default

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return f"{where}: {self.message}" if where else self.message

    def shown(self) -> str:
        """str(self) for text output: control characters escaped, and line breaks too, of the file's name and of the
        message, which quotes input (a duplicate YAML key): neither may start a line of its own, which GitHub
        Actions would obey as a workflow command."""
        from dramigrate.report.escape import plain

        where = str(InputError("", self.file, self.line, self.column)).removesuffix(": ")
        shown = plain(self.message, False)
        message = shown if self.rule == "bad-input" else f"[{self.rule}] {shown}"
        return f"{plain(where, False)}: {message}" if where else message


@cache
def _rules() -> dict[str, tuple[Severity, str]]:
    from dramigrate.catalogue import catalogue

    return {r.id: (Severity(r.severity), r.summary) for r in catalogue().values()}


class _Rules(Mapping[str, tuple[Severity, str]]):
    """The catalogue's rules, read on first use: a run that reports nothing (lint of a file without devices) never
    parses it."""

    def __getitem__(self, rule_id: str) -> tuple[Severity, str]:
        return _rules()[rule_id]

    def __iter__(self) -> Iterator[str]:
        return iter(_rules())

    def __len__(self) -> int:
        return len(_rules())


# Every rule dramigrate reports: id -> (default severity, one-line summary), from the rule catalogue
# (rules/findings.yaml, read by catalogue.py). Declare a new rule id there.
RULES: Mapping[str, tuple[Severity, str]] = _Rules()
