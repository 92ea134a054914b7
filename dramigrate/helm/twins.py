"""A subchart held twice in `charts/`: unpacked in a folder and packed in an archive of the same name and version
(NVIDIA's NIM charts: `charts/library_chart/` and `charts/nim-library-0.1.2.tgz`, which `helm dependency update`
packs from that folder, named in Chart.yaml as `repository: file://charts/library_chart/`).

Helm loads both and renders one of them, picked at random on each render: its loader (pkg/chart/v2/loader/load.go)
walks the entries of `charts/` from a Go map, whose order is random, and the dependency step
(pkg/chart/v2/util/dependencies.go, processDependencyEnabled) keeps the first chart of a name and version that
matches Chart.yaml and drops the other. So a rewrite of the folder alone renders on some renders and not on others.
When the archive holds the folder's files (the folder packed), the rewrite changes both the same way: the folder's
files as text, and the archive re-packed with the same files changed (what `helm dependency update` would write
from the changed folder); when it does not, the message names the first file that differs.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.helmignore import helmignore
from dramigrate.helm.rewrite import Change
from dramigrate.helm.tararchive import open_packed


@dataclass(frozen=True)
class Twin:
    folder: str  # chart-relative folder of the unpacked chart (`charts/library_chart`)
    archive: str  # chart-relative archive of the same chart (`charts/nim-library-0.1.2.tgz`)
    top: str  # the archive's top folder (`nim-library`)


def _meta(text: str | bytes) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def archive_members(data: bytes) -> dict[str, bytes]:
    """The files of a packed chart by name (`nim-library/templates/_x.tpl`), checked as sandbox.unpack_chart checks
    them (plain files, names inside, bounded)."""
    from dramigrate.helm.sandbox import _checked_members

    out: dict[str, bytes] = {}
    with open_packed(fileobj=io.BytesIO(data)) as tar:
        for member in _checked_members(tar):
            source = tar.extractfile(member) if member.isfile() else None
            if source is not None:
                with source:
                    out[member.name] = source.read()
    return out


def packed_meta(members: dict[str, bytes]) -> tuple[str, dict[str, Any]]:
    """The top folder of a packed chart's files and its Chart.yaml as data; ("", {}) when there is not one top."""
    tops = {name.split("/", 1)[0] for name in members}
    top = next(iter(tops)) if len(tops) == 1 else ""
    return (top, _meta(members.get(f"{top}/Chart.yaml", b""))) if top else ("", {})


def packed_members(archive: Path) -> dict[str, bytes] | None:
    """The files of a subchart packed in charts/ (archive_members, read as a regular file of bounded size), or None
    for a symlink or an archive that cannot be read (the render names it)."""
    from dramigrate.findings import InputError
    from dramigrate.helm.sandbox import ChartRefused
    from dramigrate.limits import read_regular

    if archive.is_symlink():
        return None
    try:
        return archive_members(read_regular(str(archive)))
    except (OSError, InputError, EOFError, tarfile.TarError, zlib.error, ValueError, ChartRefused):
        return None


def twins(root: Path, depth: int = 4) -> list[Twin]:
    """The subcharts held both unpacked and packed in `charts/`: a folder and an archive whose Chart.yaml name and
    version are the same; those in the `charts/` of an unpacked subchart too (an umbrella's leaf), named from root."""
    from dramigrate.helm.sandbox import ChartRefused

    charts = root / "charts"
    if not charts.is_dir() or depth == 0:
        return []
    out = []
    for folder in sorted(p for p in charts.iterdir() if p.is_dir() and not p.is_symlink()):
        out += [
            Twin(
                f"{folder.relative_to(root).as_posix()}/{t.folder}",
                f"{folder.relative_to(root).as_posix()}/{t.archive}",
                t.top,
            )
            for t in twins(folder, depth - 1)
        ]
        meta = _meta((folder / "Chart.yaml").read_bytes()) if (folder / "Chart.yaml").is_file() else {}
        name, version = meta.get("name"), meta.get("version")
        if not name:
            continue
        for archive in sorted(p for p in charts.glob("*.tgz") if p.name.startswith(f"{name}-")):
            try:
                members = archive_members(archive.read_bytes())
            except (OSError, EOFError, tarfile.TarError, zlib.error, ValueError, ChartRefused):
                continue  # not a chart archive this can read: the render says what is wrong with it
            top, packed = packed_meta(members)
            if top and packed.get("name") == name and str(packed.get("version")) == str(version):
                out.append(Twin(folder.relative_to(root).as_posix(), archive.relative_to(root).as_posix(), top))
    return out


def difference(root: Path, twin: Twin, rendered: bool = False) -> str:
    """Why the archive is not the folder packed: the first file that differs, or is in one and not the other (files
    the folder's .helmignore leaves out aside; Chart.yaml compared as data: `helm package` writes it again). ""
    when the archive holds the folder's files. `rendered`: only files that can change a render (not the values
    schema, which only accepts or refuses values, nor the chart's notes, readme, license or changelog)."""
    from dramigrate.helm.sandbox import ChartRefused

    folder = root / twin.folder
    try:
        members = archive_members((root / twin.archive).read_bytes())
    except (OSError, EOFError, tarfile.TarError, zlib.error, ValueError, ChartRefused) as exc:
        return f"{twin.archive} cannot be read: {exc}"
    packed = {name[len(twin.top) + 1 :]: data for name, data in members.items()}
    ignored = helmignore(str(folder))  # what `helm package` leaves out of the archive, as Helm reads .helmignore

    def kept(path: Path) -> bool:
        parts = path.relative_to(folder).parts
        return not any(ignored("/".join(parts[: i + 1]), i < len(parts) - 1) for i in range(len(parts)))

    files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file() and kept(p)}
    for rel in sorted(set(files) | set(packed)):
        if rendered and not _renders(rel):
            continue
        if rel not in packed:
            return f"{twin.folder}/{rel} is not in {twin.archive}"
        if rel not in files:
            return f"{twin.archive} holds {rel}, which {twin.folder} has not"
        data = files[rel].read_bytes()
        same = _meta(data) == _meta(packed[rel]) if rel == "Chart.yaml" else data == packed[rel]
        if not same:
            return f"{twin.folder}/{rel} differs from {rel} in {twin.archive}"
    return ""


def _renders(rel: str) -> bool:
    """Whether a chart file can change what the chart renders (a template, values, a subchart, a file .Files reads)."""
    name = rel.rsplit("/", 1)[-1]
    if name in ("values.schema.json", ".helmignore", "NOTES.txt") or name.endswith(".md"):
        return False
    return not name.upper().startswith(("README", "LICENSE", "CHANGELOG"))


def repacked(root: Path, twin: Twin, changes: list[Change]) -> bytes | None:
    """The archive with the changes of the folder's files made to the same files in it (a new file added), each
    member's other metadata as it was; None when no change is in the folder."""
    prefix = f"{twin.folder}/"
    changed = {c.rel[len(prefix) :]: c.after for c in changes if c.rel.startswith(prefix)}
    if not changed:
        return None
    from dramigrate.helm.sandbox import _checked_members

    original = (root / twin.archive).read_bytes()
    out = io.BytesIO()
    with open_packed(fileobj=io.BytesIO(original)) as tar, io.BytesIO() as raw:
        with tarfile.open(fileobj=raw, mode="w", format=tar.format) as new:
            seen = set()
            last = None
            for member in _checked_members(tar):
                rel = member.name[len(twin.top) + 1 :]
                source = tar.extractfile(member) if member.isfile() else None
                data = source.read() if source is not None else None
                if rel in changed:
                    data = changed[rel].encode("utf-8")
                    seen.add(rel)
                if data is not None:
                    member.size = len(data)
                new.addfile(member, io.BytesIO(data) if data is not None else None)
                last = member
            for rel in sorted(set(changed) - seen):  # a file the rewrite adds to the folder
                data = changed[rel].encode("utf-8")
                info = tarfile.TarInfo(f"{twin.top}/{rel}")
                info.size, info.mode = len(data), 0o644
                info.mtime = last.mtime if last is not None else 0
                new.addfile(info, io.BytesIO(data))
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
            gz.write(raw.getvalue())
    return out.getvalue()


def archive_writes(root: Path, changes: list[Change]) -> list[tuple[str, bytes, bytes]]:
    """For each twin whose folder the changes touch, a subchart's folder in charts/ or its file:// folder elsewhere
    (fileleaf.py): (archive, its bytes now, its bytes re-packed)."""
    from dramigrate.helm.fileleaf import file_twins

    out = []
    for twin in twins(root) + file_twins(root):
        data = repacked(root, twin, changes)
        if data is not None:
            out.append((twin.archive, (root / twin.archive).read_bytes(), data))
    return out


def binary_note(name: str) -> str:
    """How a diff shows a re-packed archive (as git does a binary file): fix writes it, a patch cannot."""
    return f"Binary files a/{name} and b/{name} differ\n"


def random_twin(root: Path) -> str:
    """Why no rewrite of the chart can be proven while charts/ holds a subchart twice, unpacked and packed, and the
    archive is not the folder packed: Helm loads both under one name and renders one or the other at random, so two
    renders of the chart with the same values need not be the same (nb-generative-virtual-screening: fix proved it
    in one run of three, on renders that happened to agree, and the bench's own check failed); "" otherwise. fix must
    not delete either copy (one of them is what the chart ships)."""
    for twin in twins(root):
        if why := difference(root, twin, rendered=True):
            return (
                f"charts/ holds the chart of {twin.folder} twice, unpacked and packed ({twin.archive}), and Helm "
                f"renders one or the other at random, but {why}: delete the stale copy, or run `helm dependency "
                "update` to pack the folder again, and run fix again"
            )
    return ""


def twin_requests(root: Path, display: str, options: Any, rules: Any, folder: Path) -> list[Any]:
    """lint's finding for a subchart held twice whose copies differ when the copy this render did not take asks for
    a device: Helm renders one or the other at random (random_twin), so a render here that took the copy asking for
    none linted clean while `helm install` may take the other. Each twin whose copies differ is rendered once with
    the folder alone and once with the archive alone (private copies made under folder); the first device request
    of either is a legacy-device-request at the copy that asks for it, which fix leaves (it refuses such a chart)."""
    import shutil

    from dramigrate.findings import RULES, Finding
    from dramigrate.helm.probe import device_uses
    from dramigrate.helm.render import HelmError, render_chart
    from dramigrate.helm.sandbox import private_copy

    out = []
    for n, twin in enumerate(twins(root)):
        if not difference(root, twin, rendered=True):
            continue
        for kept, dropped in ((twin.archive, twin.folder), (twin.folder, twin.archive)):
            place = folder / f"twin-{n}-{len(out)}-{kept == twin.archive}"
            place.mkdir(parents=True)
            copy = private_copy(root, place / (root.resolve().name or "chart"))
            gone = copy / dropped
            shutil.rmtree(gone) if gone.is_dir() else gone.unlink(missing_ok=True)
            try:
                uses = device_uses("\n---\n".join(m.text for m in render_chart(copy, options)), rules)
            except HelmError:
                continue
            if uses:
                resource = sorted(uses)[0][5]
                out.append(
                    Finding(
                        "legacy-device-request",
                        RULES["legacy-device-request"][0],
                        f"{resource} is a device-plugin request of {kept}, one of two different copies of one "
                        f"subchart in charts/ ({twin.folder} and {twin.archive}): Helm renders one or the other at "
                        "random, so a render that took the other copy shows none, and fix leaves this chart as it "
                        "is; delete the stale copy, or run `helm dependency update` to pack the folder again",
                        f"{display}/{kept}",
                        resource=resource,
                    )
                )
                break
    return out
