"""The values key of the idiomatic rewrite's DRA switch: `dra` (`dra.enabled`, `dra.deviceClassName`,
`dra.existingClaimTemplate`), or `draDevices` in a chart whose values.yaml has a top-level `dra:` of its own that does
not move the devices to claims (Azure's nccl-test: its `dra.enabled` adds a ComputeDomain's IMEX channel claim for
GB300, the GPUs stay device-plugin requests). The chart's key, and every values file and `--set` that sets it, keep
their meaning; the rewrite's claims join the chart's own in the pod's and the container's lists.

The rewrite is built on a copy of the chart whose own `.Values.dra` reads are renamed out of the way (HIDDEN), so the
rewrite's `.Values.dra` and the chart's never meet; then the rewrite's are named FALLBACK and the chart's get their name
back. Reads of the chart's key spelled otherwise (`index .Values "dra"`) are left in both steps, so they keep reading
it. The proof renders the chart as written (the user's values set the chart's `dra`, the proof sets FALLBACK)."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from dramigrate.helm.rewrite import Change, RewriteError

OWN = "dra"
FALLBACK = "draDevices"
HIDDEN = "dramigrateChartDra"  # the chart's own key while the rewrite is built
_READ = re.compile(r"(\$?\.Values)\.dra\b")  # a read of the values key `dra` (the chart's, or the rewrite's)
_TOP = re.compile(r"^dra:", re.M)  # the key in values.yaml
# the switch's keys where the rewrite names them in text (a `fail` message, values docs, a helm-unittest `set:`,
# Chart.yaml's changes, values.schema.json), and where the helper rewrite reads it with `dig` (helper._switch:
# `(dig "dra" "enabled" true (pick $.Values "dra"))`, or `(dig "dra" "enabled" true $)` from the argument a call site
# passes the values' key in, `"dra" (dig "dra" (dict) $.Values.AsMap)`, rootswitch) and documents it in a comment
# (`# dra:`): renamed on the lines the rewrite adds only
_NAMED = re.compile(
    r"(?<![\w.$/-])dra(?=\.(?:enabled|deviceClassName|existingClaimTemplate)\b|\.\*)|(?<=\")dra(?=\":)"
    r'|(?<=\(dig ")dra(?=" )|(?<= ")dra(?=" \(dig "dra" \(dict\) )|(?<=\.Values ")dra(?="\))|(?<=^# )dra(?=:$)',
    re.M,
)
_TEXT = (".yaml", ".yml", ".tpl", ".txt", ".json")


def switch_key(root: Path) -> str:
    """The values key the rewrite's switch goes under in the chart at `root`: OWN, or FALLBACK where values.yaml has a
    top-level `dra:` already; "" when it has both."""
    path = root / "values.yaml"
    values = path.read_text(encoding="utf-8") if path.is_file() else ""
    if not _TOP.search(values):
        return OWN
    return "" if re.search(rf"^{FALLBACK}:", values, re.M) else FALLBACK


def build_beside(root: Path, build: Callable[[Path], list[Change]]) -> list[Change]:
    """`build(root)`, the rewrite's changes, with its switch under switch_key(root): where that is FALLBACK, built on
    a copy of the chart with its own key hidden, and mapped back onto the chart's files."""
    key = switch_key(root)
    if key == OWN:
        return build(root)
    if not key:
        raise RewriteError(
            f"values.yaml already has top-level `{OWN}:` and `{FALLBACK}:` keys, the names the DRA switch takes"
        )
    with tempfile.TemporaryDirectory(prefix="dramigrate-switch-") as scratch:
        copy = Path(scratch) / root.name
        shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns("charts", ".git"))
        if (root / "charts").exists():
            (copy / "charts").symlink_to((root / "charts").absolute())
        files = [Path(top, f) for top, _, names in os.walk(copy) for f in names]  # not into the linked charts/
        for path in files:
            if path.is_file() and not path.is_symlink() and path.suffix in _TEXT:
                text = path.read_text(encoding="utf-8", errors="surrogateescape")
                if HIDDEN in text:
                    raise RewriteError(f"{path.relative_to(copy)} names `{HIDDEN}`, which fix uses while it rewrites")
                hidden = _READ.sub(rf"\1.{HIDDEN}", text)
                if path == copy / "values.yaml":
                    hidden = _TOP.sub(f"{HIDDEN}:", hidden)
                elif path == copy / "values.schema.json":  # the chart's own `dra` property, which the rewrite's joins
                    hidden = re.sub(r'"dra"(?=\s*:)', f'"{HIDDEN}"', hidden)
                if hidden != text:
                    path.write_text(hidden, encoding="utf-8", errors="surrogateescape")
        return [_named_back(c) for c in build(copy)]


def _named_back(change: Change) -> Change:
    """A change built on the copy, on the chart: the rewrite's switch named FALLBACK, the chart's key its own again."""
    before = None if change.before is None else _unhidden(change.before)
    after = _READ.sub(rf"\1.{FALLBACK}", change.after)
    if Path(change.rel).name == "values.yaml":
        after = _TOP.sub(f"{FALLBACK}:", after)
    after = _unhidden(after)
    lines = after.splitlines(keepends=True)
    added = difflib.SequenceMatcher(None, (before or "").splitlines(keepends=True), lines, autojunk=False)
    for tag, _, _, j1, j2 in added.get_opcodes():
        if tag in ("insert", "replace"):
            lines[j1:j2] = [_NAMED.sub(FALLBACK, line) for line in lines[j1:j2]]
    return Change(change.rel, before, "".join(lines))


def _unhidden(text: str) -> str:
    return text.replace(HIDDEN, OWN)  # no file of the chart names it (build_beside)
