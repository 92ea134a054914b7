"""A file fix would refuse to write without --force (read-only, hard-linked, another user's, reached through a
symlink out of the tree: writer.check_writable, the check fix itself runs), said before fix runs: lint and diff call
none of its device requests fixable and name the file with fix's reason and its way out. A CI gate that read
"(fixable)" and ran fix got a refusal. fix says the same of a file it did not write: its report called the request
"(fixable)" right after naming the file as not written. The findings stay (the requests are still there); lint's
exit code does not change (docs/ci.md#how-the-gate-behaves), diff's is fix's (2).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dramigrate.findings import Finding, InputError

WOULD_NOT = "fix would not write"  # lint's and diff's word on a file fix refuses
DID_NOT = "fix did not write"  # fix's own


def leave_unfixable(findings: Iterable[Finding], refusal: InputError, said: str = WOULD_NOT) -> None:
    """The findings of a file (or a chart, written whole or not at all) fix would not write, or did not: none fixed
    or fixable, each naming the file fix refuses and why, with fix's way out (`--force writes it anyway`)."""
    for f in findings:
        f.fixed = False
        if f.fixable:
            f.fixable = False
            f.message += f"; {said} {refusal.file}: {refusal.message}"


def refused(path: Path, roots: tuple[Path, ...], expected: bytes | None = None) -> InputError | None:
    """Why fix would refuse to write path as it is now (without --force), or None: one stat, and with expected (the
    bytes read) a read to see that the file did not change since."""
    from dramigrate.writer import WriteOptions, check_writable

    try:
        check_writable(path, expected, WriteOptions(roots=roots))
    except InputError as exc:
        return exc
    return None


def lint_refusals(files: Iterable[Any], charts: list[Any], roots: tuple[Path, ...]) -> None:
    """lint, which rewrites nothing: each manifest with a fixable finding fix would refuse to write, and each chart
    one of whose files named by a fixable finding (the template, a values line it relates) fix would refuse, left
    unfixable with fix's reason. Only files with fixable findings are looked at (one stat each)."""
    for chart in charts:
        if chart.writable and chart.error is None:
            _chart_refusal(chart, roots)
    shown = {chart.display for chart in charts}  # a chart's result is named by its folder
    for r in files:
        if r.path == "-" or r.path in shown or r.error is not None or not any(f.fixable for f in r.findings):
            continue
        if (exc := refused(Path(r.path), roots)) is not None:
            leave_unfixable(r.findings, exc)


def _chart_refusal(chart: Any, roots: tuple[Path, ...]) -> None:
    """The chart's fixable findings left unfixable at the first file of the chart they name that fix would refuse
    (a file of a packed subchart, which fix does not write, is not there to ask)."""
    prefix = chart.display.rstrip("/") + "/"
    named = dict.fromkeys(x.file for f in chart.findings if f.fixable for x in (f, *f.related))
    for name in named:
        path = chart.chart / name.removeprefix(prefix) if name.startswith(prefix) else None
        if path is not None and path.is_file() and (exc := refused(path, roots)) is not None:
            exc.file = name
            leave_unfixable(chart.findings, exc)
            return
