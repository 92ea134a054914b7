"""The files of a chart's `crds/` folders, which `helm install` applies as they are and `helm template` leaves out.

Helm creates every object of a chart's (and its subcharts') `crds/*.yaml|yml|json` files before the templates, with no
check of their kind (action.Install.installCRDs builds and creates whatever the file holds): a GPU Pod placed there is
created by `helm install`, while dramigrate, rendering as `helm template` does, never saw it, and lint exited 0. Each
such file is read as a manifest; its device requests are findings at its own lines, which the chart rewrite does not
migrate (they are not templates: migrate the file by hand, or move the object into templates/)."""

from __future__ import annotations

import os
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_EXTENSIONS = (".yaml", ".yml", ".json")


def crd_requests(root: Path, display: str, rules: Any, settings: Any, target: Any) -> list[Any]:
    """Device findings (and bad input, as findings) of the objects in the chart's crds/ files, none fixable."""
    from dramigrate.migrate import Job, run_file
    from dramigrate.triage import may_matter

    out = []
    for rel, data in crd_files(root):
        if not may_matter(data, rules):
            continue
        result = run_file(Job(f"{display}/{rel}", data, False), rules, settings, target)
        for f in result.findings:
            if f.fixable:
                f.fixable = False
                f.message += (
                    "; helm install creates the objects of a chart's crds/ files as they are (helm template leaves "
                    "them out), and the chart rewrite does not change them: migrate this file by hand, or move the "
                    "object into templates/"
                )
            out.append(f)
        if result.error is not None:
            raise result.error
    return out


def crd_files(root: Path) -> Iterator[tuple[str, bytes]]:
    """(path relative to root, bytes) of each crds/ file of the chart and its subcharts, unpacked at any depth and
    packed one level down, each regular and not a link, within the bounds of any manifest (a packed one of 5 MiB)."""
    from dramigrate.limits import read_regular

    if not root.is_dir():
        return
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "templates"))
        rel_folder = Path(folder).relative_to(root).as_posix()
        parts = rel_folder.split("/")
        if "crds" in parts and _chart_folder(root, parts):
            for name in sorted(files):
                path = os.path.join(folder, name)
                if name.endswith(_EXTENSIONS) and not os.path.islink(path):
                    rel = f"{rel_folder}/{name}"
                    try:
                        data = read_regular(path)
                    except OSError:
                        continue
                    yield rel, data
        if os.path.basename(folder) == "charts":
            for name in sorted(files):
                if name.endswith(".tgz") and not os.path.islink(os.path.join(folder, name)):
                    yield from _packed(Path(folder, name), f"{rel_folder}/{name}")


def _chart_folder(root: Path, parts: list[str]) -> bool:
    """Whether the crds/ in parts sits right in a chart folder (root, or charts/<name>/ below it)."""
    at = parts.index("crds")
    above = root.joinpath(*parts[:at]) if at else root
    return (above / "Chart.yaml").is_file() and (at == 0 or parts[at - 2 : at - 1] == ["charts"])


def _packed(archive: Path, rel: str) -> Iterator[tuple[str, bytes]]:
    from dramigrate.helm.sandbox import MAX_MEMBERS
    from dramigrate.helm.tararchive import open_packed

    found = []
    try:
        with open_packed(archive) as tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS or member.offset_data + member.size > 5 << 20:
                    break
                parts = member.name.split("/")
                if member.isfile() and len(parts) > 2 and parts[1] == "crds" and member.name.endswith(_EXTENSIONS):
                    handle = tar.extractfile(member)
                    found.append((f"{rel}/{member.name}", handle.read() if handle else b""))
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        return
    yield from found
