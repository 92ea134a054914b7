"""The Helm sandbox: charts are untrusted input, so rendering one must not leak, hang or crash dramigrate.

- Links: Helm's loader follows symlinks in a chart folder (it only refuses them in packaged charts), so a
  `files/x` linked to `/proc/self/environ` or `../../.git/config` would be read. A chart with a symlink
  that leaves the chart (or loops) is refused before Helm sees it (`outside_links`).
- Messages: Helm's errors quote template nodes, `fail` messages and the text given to `tpl`/`include`,
  which can be the content of a chart file. `scrub` keeps a message only when everything it quotes is
  text of the chart's templates; otherwise only the template location is kept.
- Limits: the engine runs in a child process (a worker reused across renders) with an address-space
  limit and a per-render time limit. Recursive `tpl`, `include` fan-out, huge `until` loops and Go stack
  overflows kill the child, not dramigrate: the chart gets a `chart-render-limit` finding and the run
  goes on. The worker dies with dramigrate (PR_SET_PDEATHSIG, and end of input).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import selectors
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dramigrate.limits import SlowBudget, env_number

if TYPE_CHECKING:
    from collections.abc import Iterator

DEFAULT_TIMEOUT = 30.0  # seconds per render; DRAMIGRATE_HELM_TIMEOUT overrides
# CPU seconds all the renders of one chart may take (lint's probes and fix's proof: dozens of renders);
# DRAMIGRATE_HELM_CHART_TIMEOUT overrides. Each render under the per-render limit, a chart ran for many minutes.
# CPU time, not wall time: on a loaded machine (a CI runner, 2 cores shared by a dozen processes) a chart whose
# renders take 20 s of CPU in all ran past 45 s of wall time and was refused. The wall clock still stops a chart
# at CHART_WALL_FACTOR times the limit.
DEFAULT_CHART_TIMEOUT = 45.0
CHART_WALL_FACTOR = 4
DEFAULT_MEMORY_MB = 2048  # address space of the render process; DRAMIGRATE_HELM_MEMORY_MB overrides
# Objects one render may produce; DRAMIGRATE_HELM_MAX_DOCUMENTS overrides. The largest public charts render a few
# hundred; each document is parsed in every render of a proof (about 66 of them), so tens of thousands of them
# (a `range until` in a template) ran for minutes.
DEFAULT_MAX_DOCUMENTS = 5_000
# Documents of one render that name a device to migrate; DRAMIGRATE_HELM_MAX_DEVICE_DOCUMENTS overrides. Each is
# migrated in every render of a proof, tens of milliseconds where a document naming none takes well under one: a
# `range until 4000` of GPU pods, under the document limit, held diff for 200 s. Public charts render a few dozen.
DEFAULT_MAX_DEVICE_DOCUMENTS = 500


class ChartRefused(Exception):
    """A chart dramigrate does not render: `rule` is its finding's rule id, the message names the chart path."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def render_timeout() -> float:
    return env_number("DRAMIGRATE_HELM_TIMEOUT", DEFAULT_TIMEOUT)


def chart_timeout() -> float:
    return env_number("DRAMIGRATE_HELM_CHART_TIMEOUT", DEFAULT_CHART_TIMEOUT)


def render_memory_mb() -> int:
    return int(env_number("DRAMIGRATE_HELM_MEMORY_MB", DEFAULT_MEMORY_MB))


def render_max_documents() -> int:
    return int(env_number("DRAMIGRATE_HELM_MAX_DOCUMENTS", DEFAULT_MAX_DOCUMENTS))


def check_render_size(documents: int, size: int) -> None:
    """Refuse a render with more documents than the limit or more bytes than a manifest file may have."""
    from dramigrate.limits import MAX_FILE_BYTES

    limit = render_max_documents()
    if documents > limit:
        raise RenderLimit(
            f"the chart renders more than {limit:,} documents (the limit; set DRAMIGRATE_HELM_MAX_DOCUMENTS to "
            "change it): a huge loop?"
        )
    if size > MAX_FILE_BYTES:
        raise RenderLimit(f"the chart renders more than {MAX_FILE_BYTES >> 20} MiB of manifests: a huge loop?")


def check_device_documents(documents: int) -> None:
    """Refuse a render with more documents naming a device than the limit, before they are migrated."""
    limit = int(env_number("DRAMIGRATE_HELM_MAX_DEVICE_DOCUMENTS", DEFAULT_MAX_DEVICE_DOCUMENTS))
    if documents > limit:
        raise RenderLimit(
            f"the chart renders more than {limit:,} documents that ask for devices (the limit; set "
            "DRAMIGRATE_HELM_MAX_DEVICE_DOCUMENTS to change it): a huge loop?"
        )


# --- links ---------------------------------------------------------------------------------------------------


def outside_links(root: Path) -> list[str]:
    """Symlinks in a chart folder that leave it, loop, or point at a folder that contains them, as
    `path -> target` relative to the chart (the target as written in the link, never its content)."""
    top = os.path.realpath(root)
    out: list[str] = []
    for folder, dirs, files in os.walk(top, followlinks=False):
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                continue
            rel = os.path.relpath(path, top)
            try:
                written = os.readlink(path)
                os.stat(path)  # a loop or a dangling link raises
            except OSError:
                out.append(f"{rel} (a dangling link or a loop)")
                continue
            target = os.path.realpath(path)
            if not (target == top or target.startswith(top + os.sep)):
                out.append(f"{rel} -> {written}")
            elif os.path.isdir(target) and (folder == target or folder.startswith(target + os.sep)):
                out.append(f"{rel} -> {written} (a folder that contains the link: Helm would loop)")
    return out


def refuse_outside_links(root: Path, display: str) -> None:
    if not root.is_dir():
        return
    links = outside_links(root)
    if links:
        raise ChartRefused(
            "chart-symlink-outside",
            f"not rendered: symlink(s) leave the chart: {', '.join(links)}; Helm would read "
            "what they point to (it refuses symlinks only in packaged charts); copy the files into the chart",
        )


# --- private copies -------------------------------------------------------------------------------------------

_PRIVATE: set[str] = set()  # folders made by private_copy or unpack_chart: only dramigrate writes in them


def is_private(path: Path) -> bool:
    """Whether path is inside a folder dramigrate made itself (a private copy or an unpacked archive)."""
    real = os.path.realpath(path)
    # a copy of the set (made at once, under the GIL): a render thread may add its own copy while this one reads
    return any(real == top or real.startswith(top + os.sep) for top in frozenset(_PRIVATE))


def private_copy(root: Path, dest: Path) -> Path:
    """Copy the chart folder root into dest (which must not exist), as Helm would read it, and render that copy:
    a link swapped in after the check can then no longer reach Helm (no time-of-check to time-of-use gap).

    Files are opened through the folder descriptors of one walk that never follows a link (os.fwalk), with
    O_NOFOLLOW and O_NONBLOCK, and checked with fstat: a FIFO, device or socket is refused, never read; so is a
    file hard-linked to a file outside the chart. Symlinks are checked in the chart (for the message), then
    recreated in the copy and checked again there, where nobody else can change them (see outside_links), and
    replaced by copies of their targets, so the copy holds no link at all. Bounded like a packaged chart
    (MAX_ARCHIVE_BYTES, MAX_MEMBER_BYTES, MAX_MEMBERS). What the chart's .helmignore leaves out (a `.git/` beside
    Chart.yaml) is neither copied nor held to those bounds, as Helm does not load it, but checked all the same:
    dramigrate reads some of a chart's files from the folder itself (a FIFO there would hold the run). A `.git`
    file or folder is always left out so: Helm would load a checkout's `.git/config`, which holds the CI token,
    into `.Files` (a chart at the root of its repository), and a template could put it into a name or a count
    that dramigrate's findings quote."""
    from dramigrate.helm.helmignore import helmignore

    refuse_outside_links(root, str(root))  # names each link with its target; the copy is checked again below
    top = os.path.realpath(root)
    ignored = helmignore(top)
    dest.mkdir(mode=0o700)
    _PRIVATE.add(os.path.realpath(dest))
    links: list[tuple[str, str]] = []
    special: list[str] = []
    inodes: dict[tuple[int, int], tuple[int, list[str]]] = {}
    budget = [MAX_ARCHIVE_BYTES, MAX_MEMBERS]
    left_out: set[str] = set()  # folders the .helmignore leaves out: checked like the rest, neither copied nor counted
    unseen = MAX_LEFT_OUT
    for folder, dirs, files, dirfd in os.fwalk(top, follow_symlinks=False, onerror=_unreadable):
        dirs.sort()
        rel = os.path.relpath(folder, top)
        here = dest if rel == "." else dest / rel
        for name in sorted(dirs + files):
            path = os.path.normpath(os.path.join(rel, name))
            kept = name != ".git" and rel not in left_out and not ignored(path, name in dirs)
            budget[1] -= kept
            unseen -= not kept
            if budget[1] < 0:
                raise ChartRefused("chart-archive-limit", f"the chart has more than {MAX_MEMBERS} files")
            if unseen < 0:
                raise ChartRefused(
                    "chart-archive-limit",
                    f"the chart folder holds more than {MAX_LEFT_OUT} files its .helmignore leaves out",
                )
            try:
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):  # os.fwalk would skip a folder it cannot list without a word
                    os.close(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dirfd))
                fst = None
                if stat.S_ISREG(st.st_mode):
                    fst = _copy_file(name, dirfd, here / name, path, budget) if kept else st
            except PermissionError as exc:
                _unreadable(exc, path)
            if stat.S_ISLNK(st.st_mode):
                if kept:
                    links.append((path, os.readlink(name, dir_fd=dirfd)))
            elif stat.S_ISDIR(st.st_mode):
                if kept:
                    (here / name).mkdir(mode=0o700)
                else:
                    left_out.add(path)
            elif stat.S_ISREG(st.st_mode):
                if fst is None:
                    special.append(path)
                elif fst.st_nlink > 1 and kept:  # a name Helm does not read (.git/config) is outside the chart
                    inodes.setdefault((fst.st_dev, fst.st_ino), (fst.st_nlink, []))[1].append(path)
            else:
                special.append(path)
    linked = [p for nlink, paths in inodes.values() if len(paths) < nlink for p in paths]
    if special or linked:
        what = [f"{p} (a FIFO, device or socket: Helm would block on it or read a device)" for p in special]
        what += [f"{p} (hard-linked to a file outside the chart)" for p in linked]
        raise ChartRefused(
            "chart-unsafe-file",
            f"not rendered: {', '.join(sorted(what))}; Helm would read it; copy the content into the chart",
        )
    for path, written in links:
        os.symlink(_relocated(written, path, top, os.path.abspath(root)), dest / path)
    refuse_outside_links(dest, str(root))
    _materialize(dest, [path for path, _ in links], budget)
    return dest


def _unreadable(exc: OSError, path: str = "a chart folder") -> NoReturn:
    """Refuse a chart holding a file or folder this user may not read, naming it: Helm cannot load such a chart
    either, and rendering it without what it holds would prove a rewrite of part of the chart."""
    raise ChartRefused("chart-unsafe-file", f"not rendered: {path}: {exc.strerror or exc}") from exc


def _relocated(written: str, path: str, *tops: str) -> str:
    """A link's text for the copy: an absolute target inside the chart becomes relative (the same file in the copy)."""
    if not os.path.isabs(written):
        return written
    target = os.path.normpath(written)
    for top in tops:
        if target.startswith(top + os.sep):
            return os.path.relpath(os.path.relpath(target, top), os.path.dirname(path) or ".")
    return written


def _copy_file(name: str, dirfd: int, target: Path, shown: str, budget: list[int]) -> os.stat_result | None:
    """Copy one regular file through its folder's descriptor; None when it is not a regular file once opened."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, dir_fd=dirfd)
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            return None
        if fst.st_size > MAX_MEMBER_BYTES:
            raise ChartRefused(
                "chart-archive-limit",
                f"{shown} is {fst.st_size} bytes, over the {MAX_MEMBER_BYTES >> 20} MiB Helm allows for one chart file",
            )
        with open(target, "xb") as out:
            while chunk := os.read(fd, 1 << 20):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise ChartRefused("chart-archive-limit", f"the chart is larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
                out.write(chunk)
        return fst
    finally:
        os.close(fd)


def _materialize(dest: Path, links: list[str], budget: list[int]) -> None:
    """Replace each (checked) link in the copy by a copy of what it points to, within the size budget."""

    def copy(source: str, target: str) -> None:
        budget[0] -= os.path.getsize(source)
        if budget[0] < 0:
            raise ChartRefused("chart-archive-limit", f"the chart is larger than {MAX_ARCHIVE_BYTES >> 20} MiB")
        shutil.copyfile(source, target)

    for path in sorted(links, key=lambda p: -p.count(os.sep)):
        link = dest / path
        if not link.is_symlink():
            continue
        target = os.path.realpath(link)
        link.unlink()
        try:
            if os.path.isdir(target):
                shutil.copytree(target, link, symlinks=False, copy_function=copy)
            else:
                copy(target, str(link))
        except (OSError, RecursionError, shutil.Error) as exc:
            raise ChartRefused(
                "chart-symlink-outside", f"not rendered: the symlink {path} cannot be followed ({type(exc).__name__})"
            ) from None


_copy_lock = threading.Lock()
_SHARED: list[dict[str, Path]] = []  # while one chart is checked: a chart folder's real path -> its private copy


@contextlib.contextmanager
def chart_for_render(chart: Path) -> Iterator[Path]:
    """The folder Helm should read for chart: the chart itself when dramigrate made it (a private copy, an unpacked
    archive), else a private copy of it. Inside shared_copies, the copy is made once and every render of the
    chart reads it; otherwise each render makes its own, removed afterwards."""
    if not chart.is_dir() or is_private(chart):
        yield chart
        return
    from dramigrate.lifetime import make_folder, temporary_folder

    name = chart.resolve().name or "chart"
    if not _SHARED:
        with temporary_folder("dramigrate-render-") as work:
            yield private_copy(chart, work / name)
        return
    copies, key = _SHARED[-1], os.path.realpath(chart)
    with _copy_lock:  # renders run from several threads: one copy all the same
        if key not in copies:
            copies[key] = private_copy(chart, make_folder("dramigrate-render-") / name)
    yield copies[key]


@contextlib.contextmanager
def shared_copies() -> Iterator[None]:
    """Every render in the block reads one private copy per chart folder: a proof renders the original chart
    dozens of times, and copying it for each render was a third of a large chart's fix. Every render of the
    block then sees the same chart, whatever changes in its folder meanwhile; the copies go when the block ends."""
    from dramigrate.lifetime import remove_behind

    _SHARED.append({})
    try:
        yield
    finally:
        for copy in _SHARED.pop().values():
            remove_behind(copy.parent)


# --- messages -------------------------------------------------------------------------------------------------

_LOCATION = re.compile(r"[\w.@+-]+(?:/[\w.@+-]+)*/templates/[\w.@+/-]+(?::\d+){0,2}")
_ANGLED = re.compile(r"<([^<>\n]*)>")
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`|\'([^\'\n]*)\'')
_FAIL = re.compile(r"execution error at \(([^()]*)\): (.*)", re.DOTALL)
_PUNCTUATION = re.compile(r"[^\w\s]{1,2}")
HIDDEN = "Helm's message is not shown: it quotes text that is not in the chart's templates (a chart file or a value)"


def template_text(root: Path) -> str:
    """The text of every file in a `templates/` folder of the chart and its unpacked subcharts."""
    parts: list[str] = []
    if not root.is_dir():
        return ""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        if os.path.basename(folder) != "templates" and "/templates/" not in folder + "/":
            continue
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > 1 << 20:
                    continue
                with open(path, "rb") as handle:
                    parts.append(handle.read().decode("utf-8", "replace"))
            except OSError:
                continue
    return "\n".join(parts)


def scrub(message: str, root: Path) -> str:
    """Helm's error message when all it quotes is template text (a `fail "literal"` message, a template
    node, a function name); else the message up to its first template location and a note. Repeated links of a
    template that includes itself are given once (see repeats_once)."""
    message = repeats_once(message)
    if message.startswith("validation: ") and _verified(message, _metadata_text(root)):
        return message + _METADATA_HINTS.get(message.split('"', 1)[0], "")
    templates = template_text(root)
    # a `fail` literal's location is Helm's (the template's path, which a rendered manifest the chart ships quotes too:
    # ai-workloads' out.yaml), not data: only its message is checked for echoes
    failed = _FAIL.match(message)
    said = failed.group(2) if failed else message
    if _verified(message, templates) and not _echoes_chart_files(said, root, templates):
        return message
    where = _LOCATION.search(message)
    if where is None:
        return f"the chart does not render; {HIDDEN}"
    head = message[: where.end()]
    if head.count("(") > head.count(")"):
        head += ")"
    line = template_line(where.group(0), root)
    return f"{head}: {HIDDEN}" + (f"; the template line reads: {line}" if line else "")


# Helm's checks of a Chart.yaml (chart.Metadata.Validate) whose message quotes it, and what they ask
_METADATA_HINTS = {
    "validation: chart.metadata.name ": (
        " (Chart.yaml: Helm takes a chart's name as a folder name, so it may not hold `/`: rename the chart)"
    ),
    "validation: chart.metadata.version ": " (Chart.yaml: a chart's version is a semantic version, such as 0.1.0)",
}


def _metadata_text(root: Path) -> str:
    """The text of the Chart.yaml files of the chart and its unpacked subcharts: the chart's own metadata, which
    Helm checks before any template runs and which no template can write, so Helm's message may quote it."""
    parts: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False) if root.is_dir() else ():
        dirs[:] = sorted(d for d in dirs if d not in (".git", "templates"))
        path = os.path.join(folder, "Chart.yaml")
        try:
            if "Chart.yaml" in files and not os.path.islink(path) and os.path.getsize(path) <= 1 << 20:
                with open(path, "rb") as handle:
                    parts.append(handle.read().decode("utf-8", "replace"))
        except OSError:
            continue
    return "\n".join(parts)


def template_line(location: str, root: Path) -> str:
    """The text of the template line a Helm location names (`chart/templates/x.yaml:17:33`, the first segment the
    chart's name), read from the chart's own templates: template text is the chart's code, never its data, so a
    message may quote it when it may not quote what Helm said (a `fail` whose printf takes a value)."""
    path, _, rest = location.partition(":")
    number = rest.split(":", 1)[0]
    rel = path.split("/", 1)[-1]
    if not number.isdigit() or "/templates/" not in f"/{rel}" or ".." in rel.split("/"):
        return ""
    file = root / rel
    try:
        if not file.resolve().is_relative_to(root.resolve()) or not file.is_file() or file.stat().st_size > 1 << 20:
            return ""
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    n = int(number)
    text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
    return text if len(text) <= 300 else text[:300] + "..."


_LINK = ": error calling "


def repeats_once(message: str) -> str:
    """Go's error chain with each run of equal links given once and counted: a template that includes itself
    (`{{ define "x" }}{{ include "x" . }}{{ end }}`) failed with the same `error calling include: template: ...`
    link a thousand times, one message of 97 KB in every report."""
    links = message.split(_LINK)
    out: list[str] = []
    run = 0
    for i, link in enumerate(links):
        if i + 1 < len(links) and links[i + 1] == link:
            run += 1
            continue
        out.append(f"{link} ({run + 1} times)" if run else link)
        run = 0
    return _LINK.join(out)


# a quote that starts or ends inside a word is an apostrophe ("Helm's"), not a quoted value
_QUOTED_VALUE = re.compile(r'(?<!\w)(?:"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')(?!\w)')
_WORD = re.compile(r"[^\W_]+")
NOT_SHOWN = "<not shown: may come from a chart file>"
# Words of what the migration itself writes into a pod and its claim templates (the device toleration, the claims):
# a difference quoting them quotes dramigrate, not the chart (was `[{<not shown...>: <not shown...>, ...}]`).
_MIGRATION_TEXT = (
    "tolerations key operator effect Exists NoSchedule resourceClaims claims name resourceClaimTemplateName "
    "resourceClaimName request requests rayStartParams "
    "devices exactly firstAvailable deviceClassName allocationMode ExactCount All count selectors cel expression "
    "constraints matchAttribute num gpus"
)
_MIGRATION_WORDS = frozenset(_MIGRATION_TEXT.split())


def hide_chart_data(message: str, root: Path, known: frozenset[str] | None = None) -> str:
    """message with each quoted value replaced by NOT_SHOWN unless every word of it is in the chart's templates
    or values files: a proof's difference quotes rendered values, and a rendered value can be the content of a
    chart file (`.Files.Get`), which dramigrate never prints (the template and line are quoted instead).
    known: chart_words(root), when the caller has it."""
    if "'" not in message and '"' not in message:
        return message
    if known is None:
        known = frozenset(_WORD.findall(template_text(root) + "\n" + _values_text(root))) | _MIGRATION_WORDS

    def shown(match: re.Match[str]) -> str:
        return match.group(0) if set(_WORD.findall(match.group(0))) <= known else NOT_SHOWN

    return _QUOTED_VALUE.sub(shown, message)


def chart_words(root: Path, given: str = "") -> frozenset[str]:
    """The words a chart's own code may write into a render: those of its templates, values files and Chart.yaml
    files, of its other files holding template actions (`tpl (.Files.Get "files/job.yaml") .`), packed subcharts'
    too, of what the user gave (`given`: the release name, --set values, -f files) and of the migration. Data a CI
    step leaves in the chart (a token, a key file) holds no `{{`."""
    text = f"{template_text(root)}\n{_values_text(root)}\n{_code_files_text(root)}\n{given}"
    return frozenset(_WORD.findall(text)) | _MIGRATION_WORDS


_CODE_BUDGET = 32 << 20  # bytes of a chart's other files and packed subcharts read for chart_words


def _code_files_text(root: Path) -> str:
    """The text of the chart's files outside templates/ (its .git and values and Chart.yaml files aside) that hold
    template actions, and of its packed subcharts' (charts/*.tgz) templates, values and Chart.yaml files and files
    holding template actions; each file under 1 MiB, 32 MiB read in all."""
    parts: list[str] = []
    budget = _CODE_BUDGET
    if not root.is_dir():
        return ""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "templates"))
        if budget <= 0:
            break
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name in ("values.yaml", "Chart.yaml") or budget <= 0:
                continue
            try:
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                size = os.path.getsize(path)
                if name.endswith(".tgz") and os.path.basename(folder) == "charts" and size <= MAX_MEMBER_BYTES:
                    text, size = _packed_code(Path(path), budget)
                elif size > 1 << 20:
                    continue
                else:
                    with open(path, "rb") as handle:
                        text = handle.read().decode("utf-8", "replace")
            except OSError:
                continue
            budget -= size  # what was read, kept or not
            parts.append(text if "{{" in text or name.endswith(".tgz") else "")
    return "\n".join(parts)


def _packed_code(archive: Path, budget: int) -> tuple[str, int]:
    """The text of a packed chart's templates, values.yaml and Chart.yaml files and files holding template actions
    (not of the archives packed inside it), and the bytes unpacked to read them, at most budget: a member past it
    is not skipped over either (a 5 MiB archive holding one member of 5 GiB of zeros took seconds to pass)."""
    import tarfile
    import zlib

    from dramigrate.helm.tararchive import open_packed

    parts: list[str] = []
    read = 0
    try:
        with open_packed(archive) as tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS or member.offset_data + member.size > budget:
                    break
                read = member.offset_data + member.size
                if not member.isfile() or member.size > 1 << 20:
                    continue
                rel = member.name.split("/", 1)[-1]
                handle = tar.extractfile(member)
                text = (handle.read() if handle else b"").decode("utf-8", "replace")
                if rel.split("/")[-1] in ("values.yaml", "Chart.yaml") or "templates/" in f"/{rel}" or "{{" in text:
                    parts.append(text)
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        pass
    return "\n".join(parts), read


_NAMED = ("kind", "namespace", "name", "container", "resource")
_HASHED = re.compile(r"-[0-9a-f]{8}$")  # a claim template name's spec hash (emit.spec_hash)


def hide_finding_data(
    findings: list[Any],
    templates: list[dict[str, Any]],
    root: Path,
    given: str = "",
    objects: list[Any] = (),
    varied: frozenset[str] | None = frozenset(),
) -> list[str]:
    """Each finding's object names (kind, namespace, name, container, resource) replaced by NOT_SHOWN when a word of
    them is neither the chart's (chart_words, in any case) nor a number, and wherever its message or a related
    note quotes them; its quoted values hidden as hide_chart_data hides them; the names and namespaces of the claim
    templates made for it (`fit` prints them; a pod's name with its hash, a container's with its device) alike. A
    template may name a pod, a container or a device key from a chart file (`.Files.Get`), and a chart at the root
    of a workspace may read what CI steps write there (`gha-creds-*.json`). A message may also quote a value of
    its object unquoted (`quota requests.nvidia.com/gpu: ya29... is not an integer device count`): each string of
    `objects` (the rendered objects the findings are about) not shown so is hidden where a message gives it.
    varied (filedata.varied_by_files): the values of objects that came from the chart's data files, hidden wherever
    they stand, numbers too (one decimal number a byte of a file); None when that could not be told, and then a
    number in a name is shown only when it is the chart's word as well.
    Returns the texts hidden, longest first, for the chart's other messages."""
    from dataclasses import replace

    if not findings:
        return []
    known = chart_words(root, given)
    lower = {w.lower() for w in known}

    def shown(value: str) -> bool:  # `c12`, `gpu0`: a template's word and a range index
        if varied and value in varied:
            return False
        words = _WORD.findall(_HASHED.sub("", value))
        digits = varied is not None
        return all((digits and w.isdigit()) or {w.lower(), w.rstrip("0123456789").lower()} & lower for w in words)

    hidden: set[str] = set()
    for f in findings:
        for attr in _NAMED:
            value = getattr(f, attr)
            if value and not shown(value):
                hidden.add(value)
                setattr(f, attr, NOT_SHOWN)
    hidden.update(t for t in leaves(objects) if isinstance(t, str) and len(t) >= 4 and not shown(t))
    hidden.update(varied or ())
    texts = sorted(hidden, key=len, reverse=True)
    for f in findings:
        f.message = hide_chart_data(hide_texts(f.message, texts), root, known)
        f.related = [replace(r, note=hide_chart_data(hide_texts(r.note, texts), root, known)) for r in f.related]
    for template in templates:
        _hide_names(template, shown)
    return texts


def leaves(node: Any) -> Iterator[Any]:
    """Every key and value in node that is neither a mapping nor a list."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(key)
            yield from leaves(value)
    elif isinstance(node, list):
        for item in node:
            yield from leaves(item)
    else:
        yield node


def _hide_names(node: Any, shown: Any) -> None:
    """Each `name` and `namespace` string in node replaced by NOT_SHOWN unless shown(it)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("name", "namespace") and isinstance(value, str) and not shown(value):
                node[key] = NOT_SHOWN
            else:
                _hide_names(value, shown)
    elif isinstance(node, list):
        for item in node:
            _hide_names(item, shown)


_NAME_TOKEN = re.compile(r"[\w.\-/]+")  # what a name or device key is made of: a message's words, split on the rest


def hide_texts(message: str, texts: list[str]) -> str:
    """message with each of texts (longest first) replaced by NOT_SHOWN. A name or device key is looked up once per
    word of the message, and hidden as a word, a `/`-part of one (`Pod/NAME`) or the head of a name built on it
    (`NAME-62503490`): asking each of thousands of names of one chart in each of its thousands of messages was
    quadratic. Another text (a value with spaces) is hidden wherever it stands, or when shorter than 8 characters
    only where it stands whole."""
    if not texts or not message:
        return message
    names = {t for t in texts if _NAME_TOKEN.fullmatch(t)}
    for text in texts:
        if text in names or text not in message:
            continue
        if len(text) >= 8:
            message = message.replace(text, NOT_SHOWN)
        else:
            message = re.sub(rf"(?<![\w.-]){re.escape(text)}(?![\w.-])", NOT_SHOWN, message)
    if not names:
        return message

    def part(word: str) -> str:
        pieces = word.split("-")
        head = next((k for k in range(len(pieces), 0, -1) if "-".join(pieces[:k]) in names), 0)
        return "-".join([NOT_SHOWN, *pieces[head:]]) if head else word

    return _NAME_TOKEN.sub(lambda m: "/".join(part(w) for w in m.group(0).split("/")), message)


def _values_text(root: Path) -> str:
    """The text of the values.yaml and Chart.yaml files of the chart and its unpacked subcharts."""
    parts: list[str] = []
    if not root.is_dir():
        return ""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in ("values.yaml", "Chart.yaml"):
            if name not in files:
                continue
            path = os.path.join(folder, name)
            try:
                if not os.path.islink(path) and os.path.getsize(path) <= 1 << 20:
                    with open(path, "rb") as handle:
                        parts.append(handle.read().decode("utf-8", "replace"))
            except OSError:
                continue
    return "\n".join(parts)


_TOKEN = re.compile(r"[^\s\"'`<>(){}\[\]:;,=]{4,}")
# Words of Go's, Helm's and sprig's own messages: they may appear in a chart file without coming from it.
_MESSAGE_TEXT = (
    "error expected string interface template executing calling pointer evaluating function defined "
    "unexpected unclosed action parse value values found field evaluate converting mapping allowed "
    "context document associated nested reference execute rendering invalid character looking beginning "
    "number integer boolean float64 int64 missing closing constraint improper semantic version wrong type "
    "execution"
)
_MESSAGE_WORDS = frozenset(_MESSAGE_TEXT.split())


def _echoes_chart_files(message: str, root: Path, templates: str) -> bool:
    """Whether the message holds a word that is in one of the chart's other files (files/, values.yaml, ...)
    and not in its templates: a safety net for messages that echo data without quoting it."""
    words = {w for w in _TOKEN.findall(message) if w.lower() not in _MESSAGE_WORDS and w not in templates}
    if not words or not root.is_dir():
        return False
    budget = 32 << 20
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "templates")
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > 1 << 20 or budget <= 0:
                    continue
                with open(path, "rb") as handle:
                    text = handle.read().decode("utf-8", "replace")
            except OSError:
                continue
            budget -= len(text)
            if any(w in text for w in words):
                return True
    return False


def _verified(message: str, templates: str) -> bool:
    failed = _FAIL.match(message)
    if failed:  # a `fail "..."` literal, its quotes escaped in the template (`\"nvidia.com/gpu\"`)
        said = failed.group(2).strip()
        return bool(said) and (said in templates or json.dumps(said, ensure_ascii=False)[1:-1] in templates)
    rest = message
    fragments: list[str] = []
    for match in _ANGLED.finditer(message):
        fragments.append(match.group(1))
    rest = _ANGLED.sub(" ", rest)
    for match in _QUOTED.finditer(rest):
        fragments.append(next(g for g in match.groups() if g is not None))
    return all(_in_templates(fragment, templates) for fragment in fragments)


def _in_templates(fragment: str, templates: str) -> bool:
    if _LOCATION.fullmatch(fragment) or _PUNCTUATION.fullmatch(fragment):
        return True
    if len(fragment) < 3:  # a letter or two is found anywhere: only a quoted name of the templates counts
        return f'"{fragment}"' in templates
    candidates = {fragment}
    with contextlib.suppress(ValueError):
        candidates.add(json.loads(f'"{fragment}"'))  # Go's %q escapes
    return any(text in templates for text in candidates)


# --- packaged charts -------------------------------------------------------------------------------------------

# Helm's own loader caps (pkg/chart/loader: MaxDecompressedChartSize, MaxDecompressedFileSize); a member count too.
MAX_ARCHIVE_BYTES = 100 << 20
MAX_MEMBER_BYTES = 5 << 20
MAX_MEMBERS = 10_000
MAX_LEFT_OUT = 200_000  # files a chart's .helmignore leaves out, each still checked (a chart's own .git/)


def unpack_chart(archive: Path, dest: Path) -> None:
    """Unpack a packaged chart into `dest`: plain files and folders only, every name relative and inside,
    at most MAX_MEMBERS members and MAX_ARCHIVE_BYTES in all. The headers are all checked before a byte
    is written."""
    import tarfile
    import zlib

    from dramigrate.helm.tararchive import open_packed

    _PRIVATE.add(os.path.realpath(dest))
    try:
        with open_packed(archive) as tar:
            for member in _checked_members(tar):
                try:
                    _unpack_member(tar, member, dest / member.name)
                except OSError as exc:  # its text names the temporary folder: the member is named instead
                    raise ChartRefused(
                        "chart-archive-limit", f"cannot unpack the archive member {member.name!r}: {exc.strerror}"
                    ) from None
    except OSError as exc:
        raise ChartRefused("chart-archive-limit", f"cannot unpack the chart: {exc.strerror or exc}") from None
    except (EOFError, tarfile.TarError, zlib.error) as exc:
        raise ChartRefused("chart-archive-limit", f"cannot unpack the chart: {exc}") from None


def _unpack_member(tar: Any, member: Any, target: Path) -> None:
    """One checked member (a folder or a plain file) written at target; a name given twice is refused (`xb`)."""
    if member.isdir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    source = tar.extractfile(member)
    if source is None:
        return
    with source, open(target, "xb") as out:
        while chunk := source.read(1 << 20):
            out.write(chunk)


def _checked_members(tar: Any) -> list[Any]:
    members = []
    total = 0
    for count, member in enumerate(tar, start=1):
        name = member.name
        if count > MAX_MEMBERS:
            raise ChartRefused("chart-archive-limit", f"the archive has more than {MAX_MEMBERS} members")
        if name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/"):
            raise ChartRefused("chart-archive-limit", f"the archive member {name!r} would land outside the chart")
        if not (member.isfile() or member.isdir()):
            raise ChartRefused(
                "chart-archive-limit", f"the archive member {name!r} is a link or a special file, not unpacked"
            )
        if member.size > MAX_MEMBER_BYTES:
            raise ChartRefused(
                "chart-archive-limit",
                f"the archive member {name!r} is {member.size} bytes, over the {MAX_MEMBER_BYTES >> 20} MiB "
                "Helm allows for one file",
            )
        total += member.size
        if total > MAX_ARCHIVE_BYTES:
            raise ChartRefused(
                "chart-archive-limit", f"the archive expands past {MAX_ARCHIVE_BYTES >> 20} MiB, Helm's limit"
            )
        members.append(member)
    return members


MAX_SUBCHART_DEPTH = 10  # subchart folders inside subchart folders: public umbrellas nest three deep at most


def check_subchart_depth(root: Path) -> None:
    """Refuse a chart whose subchart folders (charts/<name>/charts/...) nest past MAX_SUBCHART_DEPTH: Helm loads
    them at any depth, and each level multiplies the work of checking and proving the chart (150 levels ran for
    minutes). Walked level by level, never through a link (outside_links has refused those already)."""
    level = [root]
    for depth in range(1, MAX_SUBCHART_DEPTH + 2):
        below = []
        for chart in level:
            with contextlib.suppress(OSError), os.scandir(chart / "charts") as entries:
                below += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        if not below:
            return
        if depth > MAX_SUBCHART_DEPTH:
            raise ChartRefused(
                "chart-archive-limit",
                f"not rendered: subcharts nested more than {MAX_SUBCHART_DEPTH} deep "
                f"({below[0].relative_to(root).as_posix()}); public umbrella charts nest three at most",
            )
        level = below


def check_packed_values(root: Path, display: str) -> None:
    """Bound the values.yaml of every packed subchart (`charts/*.tgz`, and packed ones inside those) as
    limits.check_values_file bounds a folder's: Helm reads them on every render (300,000 keys killed the engine at
    its memory limit, with no word of the file). An archive past Helm's own caps is left to the render to name."""
    from dramigrate.findings import InputError
    from dramigrate.limits import read_regular

    for archive in sorted(root.rglob("*.tgz")):
        if archive.parent.name != "charts" or archive.is_symlink():
            continue
        try:
            data = read_regular(str(archive))
        except (OSError, InputError):  # not a regular file, too large: the render names it
            continue
        _check_archive_values(data, f"{display}/{archive.relative_to(root).as_posix()}", "", 0)


def _check_archive_values(data: bytes, shown: str, inside: str, depth: int) -> None:
    import io
    import tarfile
    import zlib

    from dramigrate.helm.tararchive import open_packed
    from dramigrate.limits import check_values_text

    try:
        with open_packed(fileobj=io.BytesIO(data)) as tar:
            total = 0
            for count, member in enumerate(tar, start=1):
                total += member.size
                if count > MAX_MEMBERS or total > MAX_ARCHIVE_BYTES:
                    return
                parts = member.name.split("/")
                if not member.isfile() or member.size > MAX_MEMBER_BYTES or {"templates", "crds", "tests"} & {*parts}:
                    continue
                # a chart's own values.yaml (`sub/values.yaml`, `sub/charts/dep/values.yaml`), not a file of that name
                # the chart keeps elsewhere (`sub/files/values.yaml`): Helm reads only those as values
                values = parts[-1] == "values.yaml" and (len(parts) == 2 or (len(parts) >= 4 and parts[-3] == "charts"))
                if values or (parts[-1].endswith(".tgz") and depth < 3 and "charts" in parts):
                    source = tar.extractfile(member)
                    content = source.read() if source is not None else b""
                    where = f"{inside}{member.name}"
                    if values:
                        check_values_text(content, shown, f"the packed subchart's {where}", line=0)
                    else:
                        _check_archive_values(content, shown, where + ":", depth + 1)
    except (OSError, EOFError, tarfile.TarError, zlib.error):  # the render names a broken archive
        return


# --- the render process ---------------------------------------------------------------------------------------


class RenderLimit(ChartRefused):
    def __init__(self, message: str) -> None:
        super().__init__("chart-render-limit", message)


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (open while the worker lives; closed by kill)
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-m", "dramigrate.helm.sandbox", str(os.getpid()), str(memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=_worker_env(memory_mb),
            start_new_session=False,
        )
        self._buffer = b""
        self.served = 0  # render requests sent to it

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise RenderLimit(self._death()) from None
        fd = self.process.stdout.fileno()
        selector = selectors.DefaultSelector()
        selector.register(fd, selectors.EVENT_READ)
        deadline = _now() + timeout
        chunks = [self._buffer]
        try:
            while True:
                if b"\n" in chunks[-1]:
                    break
                left = deadline - _now()
                if left <= 0 or not selector.select(left):
                    self.kill()
                    raise RenderLimit(
                        f"rendering took longer than {timeout:g} s (the time limit; set DRAMIGRATE_HELM_TIMEOUT "
                        "to change it): a recursive tpl or include, or a huge loop?"
                    )
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise RenderLimit(self._death())
                chunks.append(chunk)
        finally:
            selector.close()
        data = b"".join(chunks)
        line, _, self._buffer = data.partition(b"\n")
        return json.loads(line)

    def _death(self) -> str:
        code = self.process.wait()
        self.log.seek(0, os.SEEK_END)
        size = self.log.tell()
        self.log.seek(max(0, size - 65536))
        tail = self.log.read().decode("utf-8", "replace")
        if "stack exceeds" in tail or "stack overflow" in tail:
            why = "a Go stack overflow (a recursive template?)"
        elif "out of memory" in tail or "cannot allocate memory" in tail or isinstance(code, int) and code == -9:
            why = f"the memory limit ({self.memory_mb} MiB; set DRAMIGRATE_HELM_MEMORY_MB to change it)"
        else:
            why = f"exit status {code}"
        return f"the Helm engine died while rendering the chart: {why}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.log.close()


def _worker_env(memory_mb: int) -> dict[str, str]:
    """The render process's environment: Go's collector runs at a quarter of its default pace (GOGC=400; a render
    allocates much and keeps little, and collecting was a third of its CPU) until the heap nears half the memory
    limit (GOMEMLIMIT), from where it collects as often as it must. A GOGC or GOMEMLIMIT the user set wins."""
    env = {**os.environ, "GOTRACEBACK": "none"}
    env.setdefault("GOGC", "400")
    env.setdefault("GOMEMLIMIT", f"{max(1, memory_mb // 2)}MiB")
    return env


def _now() -> float:
    import time

    return time.monotonic()


_lock = threading.Lock()
_workers: list[_Worker] = []  # every live worker
_idle: dict[int, list[_Worker]] = {}  # the workers not rendering now, by memory limit


class _ChartBudget:
    """The work on the chart being checked (chart_time_limit): `seconds` of CPU time, its renders' and dramigrate's
    own (the chart limit, or less once the run's slow charts spent their share: `limit`), and a wall deadline."""

    def __init__(self, seconds: float, limit: float) -> None:
        import time

        self.seconds = seconds
        self.limit = limit
        self.deadline = _now() + seconds * CHART_WALL_FACTOR
        self.cpu = 0.0  # the CPU time of the chart's renders so far, as the workers measured it
        self.started = time.process_time()

    def spent(self) -> float:
        """The CPU time of the chart's renders and of dramigrate's own work on it (parsing, migrating, comparing
        renders: 4,000 CPU-only pods beside one GPU pod took diff 40 s, its renders a few of them)."""
        import time

        return self.cpu + time.process_time() - self.started

    def over(self) -> bool:
        return self.spent() > self.seconds or self.deadline <= _now()


_chart_budgets: list[_ChartBudget] = []
# A chart's renders past this share of the chart limit (15 s of CPU of 45) are slow, and the slow time of all the
# run's charts may add up to the limit once: two charts each rendering just under the limit held a run for 90 s of
# CPU (minutes of wall time on a busy runner), and each more chart for 45 s more. The slowest real chart measured
# (sm-realtime's umbrella) takes 20 s of CPU for its whole fix, start-up and proof included.
CHART_QUICK_SHARE = 1 / 3
_slow_charts = SlowBudget(CHART_QUICK_SHARE)


@contextlib.contextmanager
def chart_time_limit(seconds: float) -> Iterator[None]:
    """The renders in the block may take `seconds` of CPU time in all (and `seconds` times CHART_WALL_FACTOR of
    wall time), or less once the run's slow charts have spent their budget: past either, the next render raises
    RenderLimit for the chart."""
    chart = _ChartBudget(_slow_charts.allows(seconds), seconds)
    _chart_budgets.append(chart)
    try:
        yield
    finally:
        _chart_budgets.pop()
        _slow_charts.charge(seconds, chart.spent())


def check_chart_time() -> None:
    """Raise RenderLimit when the chart being checked is past its time limit (chart_time_limit): called where
    dramigrate works on a render, as well as before each render starts."""
    chart = _chart_budgets[-1] if _chart_budgets else None
    if chart and chart.over():
        raise _chart_over(chart)


def _chart_over(chart: _ChartBudget) -> RenderLimit:
    """The refusal of a chart past its limit, naming the one it passed: a chart stopped by the wall clock with its
    renders' CPU time well inside the limit was slow because the machine was busy, not because of its templates."""
    setting = "set DRAMIGRATE_HELM_CHART_TIMEOUT to change it"
    seconds = round(chart.seconds, 1)
    if chart.seconds < chart.limit:
        setting = (
            f"the renders of this run's charts took {chart.limit:g} s of CPU in all past "
            f"{chart.limit * CHART_QUICK_SHARE:g} s each, so this chart had {seconds:g} s (slow charts); " + setting
        )
    if chart.spent() > chart.seconds:
        return RenderLimit(
            f"checking the chart took longer than {seconds:g} s of CPU time in all, its renders {chart.cpu:.1f} s "
            f"of it (the time limit per chart; {setting}): slow templates, a huge loop, thousands of documents?"
        )
    return RenderLimit(
        f"checking the chart ran past {seconds * CHART_WALL_FACTOR:g} s of wall time (the time limit per chart "
        f"is {seconds:g} s of CPU time, or {CHART_WALL_FACTOR} times that of wall time; {setting}), "
        f"having taken {chart.spent():.1f} s of CPU: a busy machine, or renders waiting for a core?"
    )


def render_in_child(payload: dict[str, Any], timeout: float, memory_mb: int) -> dict[str, Any]:
    """Run one render request in a worker process of its own while it runs: renders from several threads run in
    as many workers at once (render_parallelism). A dead or stuck worker is replaced next time. Inside
    chart_time_limit, no render starts once the chart's renders are over its limit, and a render ends at its wall
    deadline."""
    chart = _chart_budgets[-1] if _chart_budgets else None
    left = chart.deadline - _now() if chart else timeout
    if chart and chart.over():
        raise _chart_over(chart)
    with _lock:
        idle = _idle.setdefault(memory_mb, [])
        worker = idle.pop() if idle else None
        if worker is not None and not worker.alive():
            _workers.remove(worker)
            worker.kill()
            worker = None
        if worker is None:
            worker = _Worker(memory_mb)
            _workers.append(worker)
    worker.served += 1
    try:
        reply = worker.request(payload, min(timeout, left))
    except RenderLimit:
        with _lock:
            _workers.remove(worker)
        worker.kill()
        if chart and chart.over():
            raise _chart_over(chart) from None
        raise
    with _lock:
        _idle.setdefault(memory_mb, []).append(worker)
        took = reply.pop("seconds", None)  # the worker's CPU: not its start, nor a wait for the pipe or a core
        _this_thread.seconds = float(took) if isinstance(took, (int, float)) else 0.0
        if chart:
            chart.cpu += _this_thread.seconds
        if isinstance(took, (int, float)) and worker.served > 1:  # a worker's first render is slower (cold)
            _took.append(float(took))
            del _took[:-16]
    return reply


_took: list[float] = []  # how long the last renders took (seconds)
_this_thread = threading.local()  # .seconds: the CPU time of the last render this thread asked for


def last_render_seconds() -> float:
    """The CPU time the last render this thread asked a worker for took (0 before any)."""
    return getattr(_this_thread, "seconds", 0.0)


def render_seconds() -> float:
    """The CPU time a render takes here, the median of the last ones as the workers measured them, each worker's
    first left out (0 before any)."""
    with _lock:
        took = sorted(_took)
    return took[len(took) // 2] if took else 0.0


def workers_started() -> int:
    with _lock:
        return len(_workers)


def render_parallelism() -> int:
    """How many renders run at once (threads, each with its worker): the cores this process may use, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def prestart(memory_mb: int | None = None) -> None:
    """Start a render process now, so its start overlaps dramigrate's own work before the first render."""
    memory_mb = render_memory_mb() if memory_mb is None else memory_mb
    with _lock:
        idle = _idle.setdefault(memory_mb, [])
        if not idle:
            worker = _Worker(memory_mb)
            _workers.append(worker)
            idle.append(worker)


def prestart_another(memory_mb: int | None = None) -> None:
    """Start one more render process now, unless render_parallelism() run already: a render started in the
    background takes it (the newest idle one goes first) while it starts, and the caller keeps the warm one."""
    memory_mb = render_memory_mb() if memory_mb is None else memory_mb
    with _lock:
        if len(_workers) < render_parallelism():
            worker = _Worker(memory_mb)
            _workers.append(worker)
            _idle.setdefault(memory_mb, []).append(worker)


@atexit.register
def shutdown() -> None:
    with _lock:
        for worker in _workers:
            worker.kill()
        _workers.clear()
        _idle.clear()


# --- the child ------------------------------------------------------------------------------------------------


def _child(parent: int, memory_mb: int) -> None:
    import resource
    import time

    from dramigrate.lifetime import die_with_parent

    die_with_parent(parent)
    limit = memory_mb << 20
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The replies go to the original stdout; anything the engine prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    from dramigrate.helm.render import render_native

    for line in sys.stdin.buffer:
        request = json.loads(line)
        started = time.process_time()  # the CPU a render takes, which another core could take over
        try:
            reply = render_native(Path(request["chart"]), request["values"], request["options"])
        except MemoryError:
            os._exit(3)
        reply["seconds"] = time.process_time() - started
        out.write(json.dumps(reply).encode("utf-8") + b"\n")
        out.flush()


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]))
