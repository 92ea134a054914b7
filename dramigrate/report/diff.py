"""Unified diffs of what fix would write."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass

from dramigrate.report.escape import UNSAFE, plain

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


# A line ends at LF, CRLF or CR alone, as YAML reads it: a CR alone is shown as a line end (`\r`), never sent to
# the terminal, where it would move back and let the next line overwrite this one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class Diff:
    text: str
    escaped: bool  # a line shows a control character or a bidirectional mark escaped: the patch does not apply as is


def _body_and_end(line: str) -> tuple[str, str]:
    """A line of a unified diff and the end it is shown with: LF, or the CRLF of a CRLF file (harmless to a
    terminal, and the patch still applies); a CR alone stays in the line, to be shown escaped."""
    for end in ("\r\n", "\n"):
        if line.endswith(end):
            return line[: -len(end)], end
    return line, "\n" + ("" if line.endswith("\r") else _NO_NEWLINE)


def diff_of(path: str, before: str, after: str) -> Diff:
    """The unified diff of a file as it reaches a terminal, a log or a review: the content of each line with control
    characters, terminal escapes and bidirectional overrides escaped (escape.plain, as every report shows input)."""
    lines = difflib.unified_diff(
        _LINE.findall(before),
        _LINE.findall(after),
        fromfile=header_name(path if path.startswith("/") else f"a/{path}"),
        tofile=header_name(path if path.startswith("/") else f"b/{path}"),
    )
    parts = [_body_and_end(line) for line in lines]
    shown = [(plain(body), body, end) for body, end in parts]
    return Diff("".join(s + end for s, _, end in shown), any(s != body for s, body, _ in shown))


def unified(path: str, before: str, after: str) -> str:
    return diff_of(path, before, after).text
