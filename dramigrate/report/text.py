"""Text report: one line a finding, file:line:column first, coloured on a terminal, plain when piped.

Text from input (file names, keys, messages that quote values) is shown with control characters escaped, so a
file name cannot move the cursor, clear the screen or forge a line of the report.
"""

from __future__ import annotations

from typing import Any, TextIO

from dramigrate.findings import Finding, InputError
from dramigrate.report.escape import plain

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render(
    findings: list[Finding],
    summary: dict[str, Any],
    errors: list[InputError],
    stream: TextIO,
    show_fixed: bool = False,
    color: bool = False,
    dry_run: bool = False,
    cutover: str | None = None,
    unwritten: str = "",
) -> None:
    """unwritten: the files a stopped fix did not write, said after the counts ("N file(s) not written: ...")."""
    from rich.console import Console
    from rich.text import Text

    # Lines are built as rich Text, never parsed as markup: what comes from input is shown exactly as plain() gives
    # it (a file name like `[/x]` cannot break the report), and one print of them all is quick (rich's cost is
    # mostly per print; a fix of 600 files reports thousands of lines).
    lines = [Text.assemble(("bad input", "bold red"), " ", err.shown()) for err in errors]
    for f in findings:
        if f.fixed and not show_fixed:
            continue
        where = f"{f.file}:{f.line}:{f.column}"
        obj = f"{f.kind}/{f.name}" if f.kind else ""
        ctx = " ".join(x for x in (obj, f"container {f.container}" if f.container else "") if x)
        status: tuple[str, str] | str = (
            ("(fixed)", "green") if f.fixed else "(would fix)" if f.would_fix else "(fixable)" if f.fixable else ""
        )
        lines.append(
            Text.assemble(
                plain(where, False),
                ": ",
                (f.severity.value, _STYLE[f.severity.value]),
                f" [{f.rule}]",
                " " if status else "",
                status,
                " ",
                plain(ctx + ": " if ctx else "", False),
                plain(f.message, False),
            )
        )
        for r in f.related:
            lines.append(Text(f"    related: {plain(r.file, False)}:{r.line}: {plain(r.note, False)}"))
    if cutover:
        lines.append(Text.assemble(("cutover plan", "bold"), ": ", plain(cutover, False)))
    lines.append(Text(summary_line(summary, dry_run, unwritten)))
    console = Console(
        file=stream, highlight=False, soft_wrap=True, force_terminal=color, no_color=not color, emoji=False
    )
    console.print(Text("\n").join(lines))


def summary_line(summary: dict[str, Any], dry_run: bool = False, unwritten: str = "") -> str:
    if not summary["files"] and not summary.get("badInput"):
        return "0 files scanned: nothing to check"
    parts = [f"{summary['files']} file(s) scanned"]
    if summary.get("filesChanged"):
        parts.append(f"{summary['filesChanged']} {'would change' if dry_run else 'changed'}")
    parts.append(f"{summary['errors']} error(s), {summary['warnings']} warning(s), {summary['infos']} info")
    if summary.get("fixed"):
        parts.append(f"{summary['fixed']} fixed")
    if summary.get("fixable"):
        parts.append(f"{summary['fixable']} fixable with `dramigrate fix`")
    if summary.get("badInput"):
        parts.append(f"{summary['badInput']} file(s) with bad input")
    if unwritten:
        parts.append(unwritten)
    return ", ".join(parts)
