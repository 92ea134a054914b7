"""Text report: one line a finding, file:line:column first, coloured on a terminal, plain when piped."""

from __future__ import annotations

from typing import Any, TextIO

from dramigrate.findings import Finding, InputError

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render(
    findings: list[Finding],
    summary: dict[str, Any],
    errors: list[InputError],
    stream: TextIO,
    show_fixed: bool = False,
    color: bool | None = None,
) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=stream, highlight=False, soft_wrap=True, force_terminal=color, no_color=color is False)
    for err in errors:
        console.print(f"[bold red]bad input[/] {escape(str(err))}")
    for f in findings:
        if f.fixed and not show_fixed:
            continue
        where = f"{f.file}:{f.line}:{f.column}"
        obj = f"{f.kind}/{f.name}" if f.kind else ""
        ctx = " ".join(x for x in (obj, f"container {f.container}" if f.container else "") if x)
        status = " [green](fixed)[/]" if f.fixed else (" (fixable)" if f.fixable else "")
        console.print(
            f"{escape(where)}: [{_STYLE[f.severity.value]}]{f.severity.value}[/] {escape('[' + f.rule + ']')}{status} "
            f"{escape(ctx + ': ' if ctx else '')}{escape(f.message)}"
        )
        for r in f.related:
            console.print(f"    related: {escape(r.file)}:{r.line}: {escape(r.note)}")
    parts = [f"{summary['files']} file(s) scanned"]
    if summary.get("filesChanged"):
        parts.append(f"{summary['filesChanged']} changed")
    parts.append(f"{summary['errors']} error(s), {summary['warnings']} warning(s), {summary['infos']} info")
    if summary.get("fixed"):
        parts.append(f"{summary['fixed']} fixed")
    if summary.get("fixable"):
        parts.append(f"{summary['fixable']} fixable with `dramigrate fix`")
    if summary.get("badInput"):
        parts.append(f"{summary['badInput']} file(s) with bad input")
    console.print(", ".join(parts))
