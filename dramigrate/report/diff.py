"""Unified diffs of what fix would write."""

from __future__ import annotations

import bisect
import difflib
import os
import re
from collections import Counter
from collections.abc import Iterator
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


# difflib's matcher slows down on long texts of repeated lines: the diff of a file of 5,000 similar workloads (90,000
# lines) took a minute. Past this many lines the texts are first cut at the lines each holds once, in the same order
# in both (patience diff's anchors, such as each workload's name), and difflib matches the pieces between them.
ANCHORED_FROM = 5_000


class _Matcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        if self.opcodes is None and len(self.a) + len(self.b) >= ANCHORED_FROM:
            self.opcodes = _anchored_opcodes(self.a, self.b)
        return super().get_opcodes()


def _anchored_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The opcodes of a to b: equal at the anchors, difflib's in each piece between two (a piece still as long as
    ANCHORED_FROM, without anchors, is shown replaced whole: a valid diff, bounded in time)."""
    ops: list[tuple[str, int, int, int, int]] = []
    i0 = j0 = 0
    for i, j in [*_anchors(a, b), (len(a), len(b))]:
        if (i - i0) + (j - j0) >= ANCHORED_FROM:
            ops.append(("replace", i0, i, j0, j))
        else:
            pieces = difflib.SequenceMatcher(None, a[i0:i], b[j0:j]).get_opcodes()
            ops.extend((tag, i0 + a1, i0 + a2, j0 + b1, j0 + b2) for tag, a1, a2, b1, b2 in pieces)
        if i < len(a):  # an anchor, not the end
            ops.append(("equal", i, i + 1, j, j + 1))
        i0, j0 = i + 1, j + 1
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:
        if op[1] == op[2] and op[3] == op[4]:
            continue  # an empty piece
        if merged and op[0] == merged[-1][0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(op)
    return merged


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """(i, j) of the lines a and b each hold once, the longest run of them in the same order in both."""
    once_a, once_b = Counter(a), Counter(b)
    where_b = {line: j for j, line in enumerate(b) if once_b[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if once_a[line] == 1 and line in where_b]
    tails: list[int] = []  # patience sorting: the least last j of an increasing run of each length
    ends: list[int] = []  # the pair that run ends at
    before = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            ends.append(k)
        else:
            tails[at], ends[at] = j, k
        before[k] = ends[at - 1] if at else -1
    run, k = [], ends[-1] if ends else -1
    while k != -1:
        run.append(pairs[k])
        k = before[k]
    return run[::-1]


def _unified(a: list[str], b: list[str], fromfile: str, tofile: str) -> Iterator[str]:
    """difflib.unified_diff's lines, matched by _Matcher."""
    for n, group in enumerate(_Matcher(None, a, b).get_grouped_opcodes(3)):
        if n == 0:
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        yield f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n"
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[a1:a2])
                continue
            yield from ("-" + line for line in a[a1:a2])
            yield from ("+" + line for line in b[b1:b2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it: first line (1-based) and length, the length left out when 1."""
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def diff_of(path: str, before: str, after: str) -> Diff:
    """The unified diff of a file as it reaches a terminal, a log or a review: the content of each line with control
    characters, terminal escapes and bidirectional overrides escaped (escape.plain, as every report shows input)."""
    lines = _unified(
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
