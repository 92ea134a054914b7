"""The packed subcharts of a render's private copy, stored without compression.

Helm inflates every archive in charts/ at each render: nebuly-platform's seven hold 9.7 MB of tar in 1 MB, 12 ms of
the 80 ms its loader takes, in each of some 70 renders a fix. A gzip file of stored blocks holding the same tar
stream loads the same files, only without the inflating. An archive left as it is: one whose stored form would pass
Helm's bound on one file of a chart folder (sandbox.MAX_MEMBER_BYTES), one already stored, one that is not a single
gzip member that inflates whole (the render then says what Helm says of it). Only dramigrate's private copies are
changed (render.py calls this on the copy it renders).
"""

from __future__ import annotations

import gzip
import os
import tempfile
import threading
import zlib
from pathlib import Path

_lock = threading.Lock()
_STORED: set[tuple[str, int, int, int]] = set()  # archives of copies already stored (or left as they are)


def store_packed(root: Path) -> None:
    """Store, in place, the archives in root/charts/ (root: a private copy of a chart) without compression."""
    from dramigrate.helm.sandbox import MAX_MEMBER_BYTES

    try:
        with os.scandir(root / "charts") as entries:
            archives = sorted(e.path for e in entries if e.name.endswith(".tgz") and e.is_file(follow_symlinks=False))
    except OSError:
        return
    for archive in archives:
        with _lock:  # renders of one shared copy run at once: one stores, the others then see it stored
            try:
                st = os.stat(archive)
                if (archive, st.st_ino, st.st_size, st.st_mtime_ns) in _STORED:
                    continue
                with open(archive, "rb") as handle:
                    data = handle.read()
                stored = _stored(data, MAX_MEMBER_BYTES)
                if stored is not None:
                    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(archive), prefix=".", suffix=".dramigrate-tmp")
                    with os.fdopen(fd, "wb") as out:
                        out.write(stored)
                    os.replace(tmp, archive)
                    st = os.stat(archive)
                _STORED.add((archive, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                continue


def _stored(data: bytes, bound: int) -> bytes | None:
    """The gzip file of stored blocks holding what data inflates to; None to leave data as it is."""
    inflate = zlib.decompressobj(wbits=31)  # one gzip member, header and trailer checked
    try:
        tar = inflate.decompress(data, bound + 1)
    except zlib.error:
        return None
    if not inflate.eof or inflate.unused_data or inflate.unconsumed_tail or len(tar) >= bound:
        return None
    stored = gzip.compress(tar, compresslevel=0, mtime=0)
    return stored if len(stored) <= bound and len(stored) > len(data) else None
