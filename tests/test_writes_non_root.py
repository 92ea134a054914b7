"""What --force does for a user who is not root: it writes read-only and hard-linked files, but not another user's
file (only root can give the new file that owner back), and the refusal says so instead of promising that --force
writes it. The writes run in a child process that really is user nobody (the kernel refuses its chown)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD

from dramigrate.findings import InputError
from dramigrate.writer import WriteOptions, write_atomic

NOBODY = 65534
OTHER_UID = 4242
MIGRATED = "migrated\n"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to make files of other users and drop to nobody"
)


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder nobody may write in (pytest's own temp folders are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="dramigrate-non-root-"))
    os.chmod(path, 0o777)
    warm_up = path / "warm-up.yaml"  # a write as root first loads what the writer imports on first use: nobody
    warm_up.write_text("a: 1\n")  # may not be able to read the Python library
    write_atomic(warm_up, "a: 2\n", warm_up.read_bytes())
    warm_up.unlink()
    yield path
    shutil.rmtree(path)


def _write_as_nobody(path: Path, force: bool) -> str:
    """write_atomic of path in a child process running as nobody: "written", or the refusal's message."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe and leaves without pytest's exit
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            write_atomic(path, MIGRATED, path.read_bytes(), WriteOptions(force=force))
            said = "written"
        except InputError as exc:
            said = exc.message
        except BaseException as exc:
            said = f"unexpected {exc!r}"
        os.write(write_end, said.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


def _file(folder: Path, name: str, uid: int, gid: int, mode: int = 0o644) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(ONE_GPU_POD.format(name=name))
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("force", [False, True])
def test_another_users_file_is_refused_saying_force_cannot_write_it(folder: Path, force: bool) -> None:
    path = _file(folder, "theirs", OTHER_UID, OTHER_UID)
    said = _write_as_nobody(path, force)
    assert said.startswith(f"owned by user {OTHER_UID}, not by you"), said
    assert "--force cannot write it" in said and "only root" in said and "run fix as root" in said, said
    assert path.read_text() == ONE_GPU_POD.format(name="theirs")
    assert (path.stat().st_uid, path.stat().st_gid) == (OTHER_UID, OTHER_UID)


def test_a_group_that_is_not_yours_is_named_with_what_to_do(folder: Path) -> None:
    path = _file(folder, "ours", NOBODY, 0)
    said = _write_as_nobody(path, force=True)
    assert said.startswith("its group 0 is not one of yours"), said
    assert "with or without --force" in said and "member of group 0" in said, said
    assert path.read_text() == ONE_GPU_POD.format(name="ours")
