"""Which resource rules a resource name may match, without running every regex on it.

RuleSet.lookup took the first rule, in pack order, whose `match` equals the name or whose regex matches it, and tried
each in turn: a user's pack of 2,800 regexes over 4,000 resource names ran eleven million regex matches, and lint took
55 s. An exact `match` is looked up in a dict, a regex that starts with literal text (`acme\\.example/r1-[a-z]+`
starts with `acme.example/r1-`) is tried only on names that start with it, and one that does not but holds literal
text in every match (`(a|b)\\.example/x`: `.example/x`) only on names holding it; one with neither (an alternation
at the top, case-insensitive) on every name, as before. The first rule in pack order among the candidates that
matches still wins: the same findings, in a few dict look-ups a name. A regex is so run only on names it may match,
and a slow one (limits.BoundedRegex) fails only the files holding such a name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol


class _Rule(Protocol):
    match: str
    regex: Any


class RuleIndex:
    def __init__(self, rules: Sequence[_Rule]) -> None:
        self.size = len(rules)
        self._exact: dict[str, int] = {}  # name -> the first rule whose match is it
        self._by_prefix: dict[int, dict[str, list[int]]] = {}  # prefix length -> prefix -> rules, in order
        self._others: list[tuple[int, str]] = []  # regexes with no literal prefix, and the literal they must hold
        for i, rule in enumerate(rules):
            if rule.match:
                self._exact.setdefault(rule.match, i)
            elif rule.regex is not None:
                prefix, inside = literals(rule.regex.pattern)
                if prefix:
                    self._by_prefix.setdefault(len(prefix), {}).setdefault(prefix, []).append(i)
                else:
                    self._others.append((i, inside))

    def candidates(self, name: str) -> list[int]:
        """The rules (their indexes, in pack order) that may match name: every other one cannot."""
        out = [i for i, inside in self._others if inside in name]
        if (i := self._exact.get(name)) is not None:
            out.append(i)
        for length, rules in self._by_prefix.items():
            if length <= len(name) and (found := rules.get(name[:length])):
                out.extend(found)
        out.sort()
        return out


def literals(pattern: str) -> tuple[str, str]:
    """(the literal text every match of pattern starts with, the longest literal text every match holds), "" when
    it cannot be told: runs of literal characters in the pattern's top-level sequence as Python's regex parser reads
    it (each part of a sequence is in every match); none under a case-insensitive flag, and none of a top-level
    alternation, which the parser gives as one branch."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        import sre_parse  # type: ignore[import-not-found,no-redef]
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return "", ""
    if parsed.state.flags & re.IGNORECASE:
        return "", ""
    runs: list[str] = [""]
    for op, av in parsed:
        if op is sre_parse.LITERAL:
            runs[-1] += chr(av)
        elif runs[-1]:
            runs.append("")
    prefix = runs[0] if parsed and parsed[0][0] is sre_parse.LITERAL else ""
    return prefix, max(runs, key=len)
