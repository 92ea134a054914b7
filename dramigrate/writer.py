"""Write files whole and atomically: temp file in the same folder, same mode, rename; never over a changed file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dramigrate.findings import InputError


def write_atomic(path: Path, text: str, expected: bytes | None = None) -> None:
    """Replace path with text. With expected, refuse when the file changed since it was read."""
    if expected is not None:
        try:
            current = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot re-read before writing: {exc.strerror}", str(path)) from exc
        if current != expected:
            raise InputError("file changed since it was read; not overwritten (run again)", str(path))
    data = text.encode("utf-8")
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".dramigrate", dir=str(path.parent or "."))
    except OSError as exc:
        raise InputError(f"cannot write next to the file: {exc.strerror}", str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
