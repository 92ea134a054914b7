"""The folder listing, started first: a forked child lists the folders named on the command line while dramigrate
imports its modules and reads its settings, and the walk (sources.walk_entries) then takes each folder's listing
from it instead of listing the folder itself.

Listing the folders is most of a large walk (a 20,000-file repository has 30,000 folders, and each listing costs
its system calls whoever makes them): the child does it on the other core during the start-up, which left that
core idle, so the walk in the main process is left with its own rules only. The child lists what the walk lists,
in the same order and spelling (sources.walk_entries: top down, names sorted, each folder once, symlinks never
followed), and leaves out only what the walk always leaves out (sources.SKIP_DIRS, and the folders below a chart
folder, whose Chart.yaml the listing shows as a regular file). It never opens a file.

The walk's rules stay the final word: it decides on every entry as before (excludes, symlinks, FIFOs and other
files that are not regular, charts, kustomizations), and a folder the child did not list (it left it out, failed or
died) is listed by the walk itself, with everything below it. The child dies with dramigrate.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
from pathlib import Path
from typing import Any

CHUNK = 400  # folders per message: the walk takes the first ones while the child lists on
_HEADER = 8  # each message: its length (8 bytes, little-endian), then marshal data (a list of records)
COMMANDS = ("lint", "diff", "fix")
# A record: (folder, subfolder names, file names, file kinds): the names each joined with NUL bytes (no name holds
# one), the kinds one letter a file (sources.REGULAR, LINK, OTHER), as walk_entries yields them once split (strings
# cost a fraction of lists of tuples to send); (folder, None, (errno, strerror)) when the folder could not be
# listed; (folder, None, None) when the child did not list it (the walk lists it itself, and everything below it).
Record = tuple[Any, ...]
_NUL = "\0"


class Listing:
    """The child's listing as it comes: take(folder) waits for that folder's record."""

    def __init__(self, pid: int, fd: int, tops: list[str]) -> None:
        self.pid, self.fd, self.tops = pid, fd, set(tops)
        self._records: dict[str, Record] = {}
        self._buffer = b""
        self._done = False
        self._pruned: set[str] = set()  # folders the walk left out (excluded): what the child lists there is not used
        self._last = ""  # the last folder the child listed so far
        self.cpu = 0.0  # the child's CPU seconds, once reaped (benchmarks/lint_phases.py)

    def covers(self, top: str) -> bool:
        return top in self.tops

    def finish(self, top: str) -> None:
        """The walk of top is done: what is left of its listing (folders the walk did not enter) is not kept, nor
        given to a later walk, which lists for itself (a run walks each folder named once)."""
        self.tops.discard(top)
        if not self.tops:
            self.close()
            self._records.clear()

    def prune(self, folder: str) -> None:
        """The walk does not enter folder (an exclude): should the child still be listing it when the walk waits
        for the next folder, the walk lists the rest itself instead of waiting (an excluded vendor tree of a
        million files is never waited for)."""
        self._pruned.add(folder)

    def take(self, folder: str) -> tuple[list[str] | None, Any] | None:
        """The child's listing of folder as (subfolders, [(name, kind), ...]) sorted by name, (None, (errno,
        strerror)) when it could not list it, or None when it has none (the walk lists the folder itself)."""
        while folder not in self._records and not self._done:
            if self._pruned and _under(self._last, self._pruned):
                self.close()  # the child lists what the walk left out: the walk goes on without it
                break
            self._read()
        record = self._records.pop(folder, None)
        if record is None or record[1] is None:
            return None if record is None or record[2] is None else (None, record[2])
        _, folders, names, kinds = record
        return folders.split(_NUL) if folders else [], list(zip(names.split(_NUL), kinds, strict=True)) if names else []

    def _read(self) -> None:
        try:
            while len(self._buffer) < _HEADER or len(self._buffer) < _HEADER + _length(self._buffer):
                data = os.read(self.fd, 1 << 20)
                if not data:
                    raise EOFError
                self._buffer += data
            end = _HEADER + _length(self._buffer)
            records = marshal.loads(self._buffer[_HEADER:end])
            self._buffer = self._buffer[end:]
            self._records.update((r[0], r) for r in records)
            self._last = next((r[0] for r in reversed(records) if r[1] is not None), self._last)
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            self.close()

    def close(self) -> None:
        """Stop the child (if it still lists) and reap it."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)  # still listing folders the walk left out: not needed any more
        with contextlib.suppress(OSError):
            usage = os.wait4(self.pid, 0)[2]
            self.cpu = usage.ru_utime + usage.ru_stime


def _under(path: str, folders: set[str]) -> bool:
    """path is one of folders or below one of them."""
    while path not in folders:
        parent = os.path.dirname(path)
        if parent == path or not parent:
            return False
        path = parent
    return True


def _length(buffer: bytes) -> int:
    return int.from_bytes(buffer[:_HEADER], "little")


_listing: Listing | None = None


def taken(top: str) -> Listing | None:
    """The child's listing when it lists the folder top (as sources.walk_entries spells it)."""
    return _listing if _listing is not None and _listing.covers(top) else None


def start(argv: list[str]) -> None:
    """Fork the child when argv (dramigrate's arguments) lints, diffs or fixes folders that are not charts. Call it
    first thing, with no other thread running (a fork copies only the calling thread)."""
    global _listing
    if _listing is not None or not argv or argv[0] not in COMMANDS or not hasattr(os, "fork"):
        return
    import threading

    if threading.active_count() != 1:
        return
    tops: list[str] = []
    options = True
    for arg in argv[1:]:
        if options and arg == "--":
            options = False
            continue
        if options and arg.startswith("-"):
            continue
        try:
            if os.path.isdir(arg) and not os.path.lexists(os.path.join(arg, "Chart.yaml")):
                top = os.fspath(Path(arg))  # the walk's spelling (sources._walk walks Path(raw))
                if top not in tops:
                    tops.append(top)
        except (OSError, ValueError):
            continue
    if not tops:
        return
    # what the child needs and the run imports anyway: imported once, here, not again in the child
    import dramigrate.lifetime  # noqa: F401
    import dramigrate.sources  # noqa: F401

    try:
        read, write = os.pipe()
    except OSError:
        return
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return
    if pid == 0:  # the child: list, write, and end without running anything of the parent's (atexit, buffers)
        code = 0
        try:
            os.close(read)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # it holds none of the caller's pipes open (`$(dramigrate lint .)` waits for them)
                os.dup2(null, fd)
            from dramigrate.lifetime import die_with_parent

            die_with_parent(parent)
            _list(tops, write)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    _listing = Listing(pid, read, tops)
    import atexit

    atexit.register(_listing.close)


def _list(tops: list[str], fd: int) -> None:
    from dramigrate.sources import LINK, OTHER, REGULAR, SKIP_DIRS, may_loop

    records: list[Record] = []

    def send(final: bool = False) -> None:
        if records and (final or len(records) >= CHUNK):
            data = marshal.dumps(records)
            _write_all(fd, len(data).to_bytes(_HEADER, "little") + data)
            records.clear()

    for top in tops:
        if may_loop(top):  # a mount point below top: which folder comes twice depends on the walk's excludes
            records.append((top, None, None))
            continue
        stack = [top]
        while stack:
            here = stack.pop()
            folders: list[str] = []
            files: list[tuple[str, str]] = []
            try:
                with os.scandir(here) as it:
                    for e in it:
                        try:
                            if e.is_dir(follow_symlinks=False):
                                folders.append(e.name)
                                continue
                            kind = REGULAR if e.is_file(follow_symlinks=False) else LINK if e.is_symlink() else OTHER
                        except OSError:
                            kind = OTHER
                        files.append((e.name, kind))
            except OSError as exc:
                records.append((here, None, (exc.errno or 0, exc.strerror or str(exc))))
                send()
                continue
            files.sort()
            folders.sort()
            records.append((here, _NUL.join(folders), _NUL.join([n for n, _ in files]), "".join([k for _, k in files])))
            prefix = here if here.endswith(os.sep) else here + os.sep
            chart = ("Chart.yaml", REGULAR) in files
            for d in reversed(folders):
                if d in SKIP_DIRS:
                    continue
                if chart:  # the walk goes no further below a chart folder
                    records.append((prefix + d, None, None))
                    continue
                stack.append(prefix + d)
            send()
    send(final=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def folder_error(here: str, detail: tuple[int, str]) -> OSError:
    """The error a folder's listing met in the child, as os.scandir raised it there."""
    return OSError(detail[0], detail[1], here)
