"""A file fix would refuse to write without --force (read-only, hard-linked, another user's, reached through a
symlink out of the tree: writer.check_writable, the check fix itself runs), said before fix runs: lint and diff call
none of its device requests fixable and name the file with fix's reason and its way out. A CI gate that read
"(fixable)" and ran fix got a refusal. fix says the same of a file it did not write: its report called the request
"(fixable)" right after naming the file as not written. The findings stay (the requests are still there); lint's
exit code does not change (docs/ci.md#how-the-gate-behaves), diff's is fix's (2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dramigrate.findings import Finding, InputError

if TYPE_CHECKING:
    from dramigrate.kustomize.scan import Scan

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


def graph_refusal(group: str, file: str, why: InputError) -> InputError:
    """Why fix does not write a file of a kustomize graph (group: the graph's first kustomization, as shown) when
    another of its files is refused: a graph is written whole or not at all (half of one asks for a device twice)."""
    return InputError(
        f"its kustomize graph ({group}) is written whole or not at all, and {why.file}: {why.message}", file
    )


def refused(path: Path, roots: tuple[Path, ...], expected: bytes | None = None) -> InputError | None:
    """Why fix would refuse to write path as it is now (without --force), or None: one stat, and with expected (the
    bytes read) a read to see that the file did not change since."""
    from dramigrate.writer import WriteOptions, check_writable

    try:
        check_writable(path, expected, WriteOptions(roots=roots))
    except InputError as exc:
        return exc
    return None


def lint_refusals(files: Iterable[Any], charts: list[Any], roots: tuple[Path, ...], kz: Scan | None = None) -> None:
    """lint, which rewrites nothing: each manifest with a fixable finding fix would refuse to write, each chart one
    of whose files named by a fixable finding (the template, a values line it relates) fix would refuse, and each
    kustomize graph (kz) one of whose files fix would write it would refuse, left unfixable with fix's reason. Only
    files with fixable findings, and the files their graph writes, are looked at (one stat each)."""
    for chart in charts:
        if chart.writable and chart.error is None:
            _chart_refusal(chart, roots)
    shown = {chart.display for chart in charts}  # a chart's result is named by its folder
    fixable = [r for r in files if r.path != "-" and r.error is None and any(f.fixable for f in r.findings)]
    if kz is not None and kz.units and fixable:
        _graph_refusals(kz, fixable, roots)
    real_roots = [os.path.join(os.path.realpath(root), "") for root in roots]  # once, not once per file
    for r in fixable:
        if r.path in shown or not any(f.fixable for f in r.findings):
            continue
        # The real path of the file as it was read (engine._as_walked checked it against the walk's): one inside a
        # tree needs no symlink check, which resolved the file again (a stat per folder on its way) and each tree
        if (exc := refused(Path(r.path), () if _inside(r.opened, real_roots) else roots)) is not None:
            leave_unfixable(r.findings, exc)


def _inside(real: str, real_roots: list[str]) -> bool:
    """A real path is one of the real roots (each ending in a separator) or below it, as writer.check_link asks."""
    return bool(real) and any(real.startswith(root) or real + os.sep == root for root in real_roots)


def _graph_refusals(kz: Scan, fixable: list[Any], roots: tuple[Path, ...]) -> None:
    """Each migratable kustomize graph holding fixable findings, at the first file fix would write of it that it
    would refuse: every fixable finding of the graph left unfixable, the refused file's with fix's reason, the others'
    with the graph's (fix's words: graph_refusal)."""
    # each file by its real path: the one it was read at (engine._as_walked held it to the walk's), without resolving
    # its name again (a stat per folder on its way, for each of a large tree's device files)
    by_path = {Path(r.opened) if r.opened else _resolved(r.path): r for r in fixable}
    for unit in kz.units:
        if not unit.migratable:
            continue
        nodes = kz.graph.nodes
        members = unit.files | unit.patch_files | {nodes[d].file for d in unit.folders}
        results = {p: by_path[p] for p in sorted(by_path.keys() & members)}
        if not results:
            continue
        group = kz.display(min(nodes[d].file for d in unit.folders))
        for path in _graph_writes(kz, unit, set(results)):
            if (exc := refused(path, roots)) is None:
                continue
            exc.file = kz.display(path)
            for p, r in results.items():
                leave_unfixable(r.findings, exc if p == path else graph_refusal(group, r.path, exc))
            break


def _graph_writes(kz: Scan, unit: Any, fixable: set[Path]) -> list[Path]:
    """The files fix writes when it migrates the graph (kustomize/run.py's rewrite), as far as the scan knows them
    without building: its manifests with fixable requests; the kustomization listing one (it gains `configurations:`)
    with the name-reference file beside it; and for each device patch the file holding it, its kustomization (which
    lists the overlay's templates) and the templates file beside it. An overlay with no device patch of its own is
    not rewritten."""
    from dramigrate.kustomize.namerefs import FILE_NAME
    from dramigrate.kustomize.rewrite import TEMPLATES_FILE

    nodes = kz.graph.nodes
    writes = sorted(fixable & unit.files)
    for d in sorted(unit.folders):
        if any(f in fixable for f in nodes[d].files):
            writes += [nodes[d].file, d / FILE_NAME]
    for dp in unit.device_patches:
        writes += [dp.patch.where, nodes[dp.folder].file, dp.folder / TEMPLATES_FILE]
    return list(dict.fromkeys(writes))


def _resolved(path: str) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: the file failed on its own
        return Path(path)


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
