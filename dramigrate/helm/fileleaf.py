"""A subchart kept in the chart's own repository and packed into `charts/` (castai's hosted-model chart:
`repository: file://child-charts/vllm` in Chart.yaml, and `charts/vllm-0.0.46.tgz` that `helm dependency build`
packed from that folder). Helm renders the archive; the chart's maintainers edit the folder.

fix rewrites the folder, where the change is reviewed and kept, and re-packs the archive with the same change (what
`helm dependency build` would write from the changed folder, twins.repacked), so the chart renders the rewrite
without a build step. The run reads a working copy of the chart with the folder in place of its archive
(`charts/vllm/`), as an umbrella chart with its leaf unpacked, and its changes and findings are then named from the
folder. When the archive is not the folder packed, nothing is rewritten and the message says to build it first.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import zlib
from pathlib import Path

import yaml

from dramigrate.helm.chartvalues import subchart_dirs
from dramigrate.helm.rewrite import chart_dependencies, chart_meta
from dramigrate.helm.twins import Twin, archive_members, difference


def _has_links(folder: Path) -> bool:
    return any(Path(d, n).is_symlink() for d, dirs, names in os.walk(folder) for n in [*dirs, *names])


def file_twins(root: Path) -> list[Twin]:
    """The subcharts of `root` that charts/ holds only packed, whose dependency names a `file://` folder holding the
    same chart (name and version): Twin(folder: chart-relative, or absolute outside the chart; archive; top)."""
    from dramigrate.helm.sandbox import ChartRefused

    charts = root / "charts"
    try:
        deps = chart_dependencies(root) if charts.is_dir() else []
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    unpacked = {n for n, folder in subchart_dirs(root).items() if folder is not None} if deps else set()
    out = []
    for dep in deps:
        repo, name = str(dep.get("repository") or ""), str(dep.get("name") or "")
        folder = (root / repo.removeprefix("file://")).resolve() if repo.startswith("file://") else None
        if folder is None or not (folder / "Chart.yaml").is_file() or not name or _has_links(folder):
            continue
        try:
            meta = chart_meta(folder)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if meta.get("name") != name or name in unpacked:
            continue
        archive = charts / f"{name}-{meta.get('version')}.tgz"
        try:
            tops = {n.split("/", 1)[0] for n in archive_members(archive.read_bytes())}
        except (OSError, EOFError, tarfile.TarError, zlib.error, ValueError, ChartRefused):
            continue
        if len(tops) == 1 and not (charts / next(iter(tops))).exists():
            inside = folder.is_relative_to(root.resolve())
            where = folder.relative_to(root.resolve()).as_posix() if inside else str(folder)
            out.append(Twin(where, archive.relative_to(root).as_posix(), tops.pop()))
    return out


def built_twins(root: Path) -> list[Twin]:
    """The file:// twins whose archive is their folder packed (findingmap says what to do with the others)."""
    return [twin for twin in file_twins(root) if not difference(root, twin)]


def working_copy(root: Path, twins: list[Twin], dest: Path) -> Path:
    """A copy of the chart with each twin's folder in charts/<top>/ in place of its archive, and no second copy of
    the folder where it was (an umbrella's leaf as the rewrite reads it)."""
    inside = {(root / t.folder).resolve() for t in twins}
    shutil.copytree(
        root,
        dest,
        symlinks=True,
        ignore=lambda d, names: [n for n in names if (Path(d) / n).resolve() in inside],
    )
    for t in twins:
        (dest / t.archive).unlink()
        shutil.copytree(root / t.folder, dest / "charts" / t.top, symlinks=True)
    return dest


def renamed(text: str, twins: list[Twin], display: str) -> str:
    """A path or message of the working copy's run named as in the chart: charts/<top>/ as the twin's folder."""
    for t in twins:
        shown = f"{display}/{t.folder}/" if not Path(t.folder).is_absolute() else f"{t.folder}/"
        text = text.replace(f"{display}/charts/{t.top}/", shown)
    return text


def renamed_rel(rel: str, twins: list[Twin]) -> str:
    """A change's chart-relative path of the working copy as the chart's."""
    for t in twins:
        if rel.startswith(f"charts/{t.top}/"):
            return f"{t.folder}/{rel[len(f'charts/{t.top}/') :]}"
    return rel
