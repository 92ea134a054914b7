"""A subchart whose `file://` source folder fix would refuse to write: the umbrella's rewrite of the subchart's copy in
charts/ writes the same change to that folder (outcome._in_umbrella), and fix writes a chart whole or not at all, so a
folder outside the trees named on the command line (writer.check_link: the folder named, or the one holding a path
named through a symlink) leaves the chart as it is. lint, diff and fix then call none of its device requests fixable
and say why, as a second fix would refuse the same way."""

from __future__ import annotations

import os
from pathlib import Path

from dramigrate.findings import Finding, InputError
from dramigrate.helm.outcome import ChartOutcome, _file_source


def leave_outside_leaves(outcome: ChartOutcome, roots: tuple[Path, ...]) -> None:
    """Mark the chart's fixable findings not fixable, with the reason, when one of them lies in a subchart whose
    `file://` source fix would not write; nothing when every such source lies in a tree named (or no tree is)."""
    from dramigrate.helm.run import _left_as_it_is

    fixable = [f for f in outcome.findings if f.fixable]
    if not roots or not fixable or not outcome.writable:
        return
    for f in fixable:
        why = _refused_source(outcome, f, roots)
        if why:
            _left_as_it_is(outcome.findings, why)
            return


def _refused_source(outcome: ChartOutcome, f: Finding, roots: tuple[Path, ...]) -> str:
    """Why fix would not write the `file://` source of the subchart finding `f` lies in ('' when it would)."""
    from dramigrate.writer import check_link

    chart = outcome.chart
    rel = Path(f.file).relative_to(outcome.display) if f.file.startswith(f"{outcome.display}/") else None
    if rel is None or len(rel.parts) < 3 or rel.parts[0] != "charts":
        return ""
    source = _file_source(chart, chart / "charts" / rel.parts[1])
    if source is None:
        return ""
    try:
        check_link(source.joinpath(*rel.parts[2:]), roots)
    except InputError as exc:
        both = os.path.commonpath([source, chart.resolve()])
        return (
            f"its rewrite writes the subchart {rel.parts[1]} in its file:// source {source} too, which fix refuses: "
            f"{exc.message.removesuffix('; not written')}; name a folder holding both charts ({both}) instead"
        )
    return ""
