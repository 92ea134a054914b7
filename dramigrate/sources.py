"""Sources: expand the user's paths into YAML inputs; charts and odd files are said, never silently skipped."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

YAML_SUFFIXES = (".yaml", ".yml")
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".terraform"}
STDIN = "-"


@dataclass
class Inputs:
    files: list[Path] = field(default_factory=list)
    stdin: bool = False
    charts: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was skipped and why
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)


def excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    return any(
        fnmatch.fnmatch(text, p) or fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(text, f"*/{p}") for p in patterns
    )


def expand(paths: list[str], exclude: tuple[str, ...] = ()) -> Inputs:
    out = Inputs()
    seen: set[Path] = set()
    for raw in paths:
        if raw == STDIN:
            out.stdin = True
            continue
        try:
            _expand_path(raw, exclude, out, seen)
        except (OSError, RuntimeError) as exc:  # this path fails on its own; the others are still checked
            out.errors.append((raw, f"cannot read: {getattr(exc, 'strerror', None) or exc}"))
    return out


def _expand_path(raw: str, exclude: tuple[str, ...], out: Inputs, seen: set[Path]) -> None:
    p = Path(raw)
    if not p.exists():
        out.errors.append((raw, "no such file or folder"))
    elif p.is_file():
        chart = chart_root(p)
        if p.suffix == ".tgz" or p.name.endswith(".tar.gz"):
            out.charts.append(p)
        elif chart is not None:  # a chart's file (pre-commit passes single templates): the chart, once
            if _library_chart(chart / "Chart.yaml"):
                out.notes.append(f"{chart}: a library chart; it is checked through the charts that use it")
            elif chart not in out.charts:
                out.charts.append(chart)
        elif p not in seen:
            seen.add(p)
            out.files.append(p)
    elif (p / "Chart.yaml").is_file():
        out.charts.append(p)
    else:
        _walk(p, exclude, out, seen)


def chart_root(path: Path) -> Path | None:
    """The chart a file belongs to: the nearest folder above it with a Chart.yaml (as given, not resolved)."""
    for folder in path.parents:
        if (folder / "Chart.yaml").is_file():
            return folder
        if folder == folder.parent:
            break
    return None


def _walk(top: Path, exclude: tuple[str, ...], out: Inputs, seen: set[Path]) -> None:
    root = top.resolve()

    def unreadable(exc: OSError) -> None:
        out.errors.append((str(exc.filename or top), f"cannot read the folder: {exc.strerror}"))

    for folder, dirs, names in os.walk(top, onerror=unreadable):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not excluded(here / d, exclude))
        if (here / "Chart.yaml").is_file():
            if _library_chart(here / "Chart.yaml"):
                out.notes.append(f"{here}: a library chart; it is checked through the charts that use it")
            else:
                out.charts.append(here)
            dirs[:] = []
            continue
        for name in sorted(names):
            path = here / name
            if not name.endswith(YAML_SUFFIXES) or excluded(path, exclude):
                continue
            if path.is_symlink() and not _inside(path, root):
                out.notes.append(f"{path}: symlink leaves {top}; skipped")
                continue
            if path not in seen:
                seen.add(path)
                out.files.append(path)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _library_chart(chart_yaml: Path) -> bool:
    """Chart.yaml says `type: library` (helm template refuses to render such a chart on its own)."""
    try:
        text = chart_yaml.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(
        line.split("#", 1)[0].strip().replace(" ", "") in ("type:library", "type:'library'", 'type:"library"')
        for line in text.splitlines()
    )
