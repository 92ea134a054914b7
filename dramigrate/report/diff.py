"""Unified diffs of what fix would write."""

from __future__ import annotations

import difflib
import os
import re

from dramigrate.report.escape import UNSAFE

# what git C-quotes in a diff header's file name (and `git apply` and GNU patch read back): control characters,
# which would end the header line or reach the terminal as escapes, a quote and a backslash; and what escape.py
# never shows as it is (C1 controls, bidirectional overrides, the bytes of a name that is not UTF-8)
_NEEDS_QUOTES = re.compile(f'[\\x00-\\x1f\\x7f-\\x9f"\\\\{UNSAFE}]')
_NAMED = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def header_name(name: str) -> str:
    """name as git writes it in a diff header: as it is, or C-quoted with every other byte outside printable
    ASCII in octal (`"a/x\\n+++ b/y.yaml"`), so a file name cannot forge a header or a hunk."""
    if not _NEEDS_QUOTES.search(name):
        return name
    out = (_NAMED.get(b) or (chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in os.fsencode(name))
    return '"' + "".join(out) + '"'


def unified(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=header_name(path if path.startswith("/") else f"a/{path}"),
        tofile=header_name(path if path.startswith("/") else f"b/{path}"),
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
