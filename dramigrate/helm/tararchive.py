"""Packed charts (.tgz) opened for reading as Helm's reader opens them: Go's archive/tar refuses a GNU long name or
long link, or a pax header, of more than 1 MiB (`header field too long`), while Python's tarfile reads any such
header whole into memory before the member it describes is seen, so no bound on members could stop it: a 400 KB
archive announcing 400 MiB of long name grew dramigrate by 900 MB, a 1.5 MB one by 9 GB."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import IO, Any

MAX_SPECIAL_HEADER = 1 << 20  # Go's archive/tar maxSpecialFileSize
_SPECIAL = frozenset(
    {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE}
)


class _BoundedTarInfo(tarfile.TarInfo):
    def _proc_member(self, tar: tarfile.TarFile) -> Any:
        if self.type in _SPECIAL and self.size > MAX_SPECIAL_HEADER:
            # a ReadError wherever it is met (tarfile.next takes a plain header error after the first for the end)
            raise tarfile.SubsequentHeaderError("archive/tar: header field too long")
        return super()._proc_member(tar)  # type: ignore[misc]


def open_packed(path: Path | str | None = None, fileobj: IO[bytes] | None = None) -> tarfile.TarFile:
    """A gzip-compressed tar archive opened for reading, its special headers bounded as Helm bounds them."""
    return tarfile.open(path, mode="r:gz", fileobj=fileobj, tarinfo=_BoundedTarInfo)
