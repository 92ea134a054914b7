"""What a chart folder's .helmignore leaves out of what Helm loads, as Helm's pkg/ignore reads it, for the chart's
private copy: a chart at the root of its repository ignores `.git/` (as `helm create` writes), whose packs and
objects are past the bounds a chart's files are held to.

Only what Helm surely ignores is left out; anything this does not read exactly as Helm does (a negation, a
character class, `**`, which Helm refuses), or more rules than a chart writes, leaves nothing out, so the copy is
what it was without the file."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

from dramigrate.findings import InputError
from dramigrate.gitignore import Unit, name_matches, units
from dramigrate.limits import read_regular

MAX_RULES = 1_000  # each file of the chart is matched against every rule

Ignored = Callable[[str, bool], bool]  # (path relative to the chart, with '/'; is a folder) -> left out


def _nothing(path: str, folder: bool) -> bool:
    return False


def helmignore(root: str) -> Ignored:
    """The rules of root's .helmignore (a regular file, not a link), else none."""
    path = os.path.join(root, ".helmignore")
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return _nothing
        text = read_regular(path).decode("utf-8")
    except (OSError, InputError, UnicodeDecodeError):
        return _nothing
    rules: list[tuple[list[list[Unit]], bool, bool]] = []  # (pattern's parts, whole path, folders only)
    for line in text.splitlines():
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        if rule.startswith("!") or "**" in rule or len(rules) == MAX_RULES:
            return _nothing
        folders_only = rule.endswith("/")
        rule = rule.rstrip("/")
        whole = "/" in rule
        pattern = _go_match(rule.lstrip("/"))
        if pattern is None:
            return _nothing
        rules.append((pattern, whole, folders_only))
    if not rules:
        return _nothing

    def ignored(rel: str, folder: bool) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return any(
            _matches(parts, rel if whole else name)
            for parts, whole, folders_only in rules
            if folder or not folders_only
        )

    return ignored


def bad_pattern_line(root: str) -> int:
    """The 1-based line of the first rule of root's .helmignore that Go's filepath.Match refuses (a `[` left open, a
    trailing `\\`), as Helm's pkg/ignore checks each rule; 0 when there is none or the file cannot be read."""
    try:
        text = read_regular(os.path.join(root, ".helmignore")).decode("utf-8", "replace")
    except (OSError, InputError):
        return 0
    for number, line in enumerate(text.splitlines(), 1):
        rule = line.strip().removeprefix("!").rstrip("/")
        if rule and not rule.startswith("#") and (_open_class(rule) or re.search(r"(?<!\\)(\\\\)*\\$", rule)):
            return number
    return 0


def _open_class(rule: str) -> bool:
    """Whether a `[` of rule is not closed by a `]` (escapes skipped), as filepath.Match finds a bad pattern."""
    at = 0
    while at < len(rule):
        if rule[at] == "\\":
            at += 2
            continue
        if rule[at] == "[":
            close = rule.find("]", at + 2)
            if close < 0:
                return True
            at = close
        at += 1
    return False


def _go_match(pattern: str) -> list[list[Unit]] | None:
    """Go's filepath.Match pattern as the units of each of its `/`-separated parts (`*` and `?` never match '/'),
    matched part by part as gitignore patterns are, in time bounded by the pattern and the name (a regex of
    `*a*a*a...b` took exponential time on a file named `aaaa...`: a chart's .helmignore kept a run for ever);
    None for what is not read exactly so: a character class, an escaped `/`, a trailing `\\`."""
    if not pattern or "[" in pattern or "\\/" in pattern or re.search(r"(?<!\\)(\\\\)*\\$", pattern):
        return None
    return [units(part) for part in pattern.split("/")]


def _matches(parts: list[list[Unit]], path: str) -> bool:
    names = path.split("/")
    return len(names) == len(parts) and all(name_matches(u, n) for u, n in zip(parts, names, strict=True))
