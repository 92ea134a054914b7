"""Write files whole and atomically, keeping what the file was: temp file in the same folder with the owner, group,
mode, extended attributes and ACLs of the original, fsync, a last check that nobody changed or replaced the file,
rename, fsync of the folder. Files that are read-only, hard-linked or someone else's are refused unless forced,
immutable and append-only ones always;
a symlink is written through to its target only when the target stays inside the tree; a file keeps its
encoding (UTF-8, or UTF-16/32 with a BOM) and a JSON manifest stays JSON.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import functools
import json
import os
import re
import shutil
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dramigrate.findings import InputError
from dramigrate.memo import per_run

TEMP_SUFFIX = ".dramigrate"
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class WriteOptions:
    force: bool = False  # write read-only, hard-linked and other users' files anyway
    backup: str | None = None  # keep the original beside the file with this suffix
    roots: tuple[Path, ...] = ()  # the trees a symlink's target must stay inside (none given: no symlink check)


def bom_encoding(raw: bytes) -> str | None:
    """The UTF-16/32 encoding a byte-order mark announces, or None (UTF-8, with or without its BOM)."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            return name
    return None


def text_of(raw: bytes) -> str:
    """The text of a file dramigrate reads whole (an inventory, the classes file) as it reads a manifest: UTF-8, or
    UTF-16/32 with a byte-order mark (PowerShell's `>` and `Out-File` write UTF-16 with one); the BOM stays as a
    leading U+FEFF, so encode_like writes the text back in its encoding. Raises UnicodeDecodeError."""
    return raw.decode(bom_encoding(raw) or "utf-8")


def bomless_encoding(raw: bytes) -> str | None:
    """UTF-16/32 without a byte-order mark, told by where the NULs of the first ASCII character fall (as the YAML
    spec detects it), or None. kubectl reads such a file as UTF-8 and refuses it."""
    head = raw[:4]
    for pattern, name in _BOMLESS:
        if len(head) >= len(pattern) and all(p is None or (b == 0) == p for b, p in zip(head, pattern, strict=False)):
            return name
    return None


_BOMLESS = (  # True: a NUL byte; False: any other byte; None: either
    ((True, True, True, False), "utf-32-be"),
    ((False, True, True, True), "utf-32-le"),
    ((True, False), "utf-16-be"),
    ((False, True), "utf-16-le"),
)


def encode_like(text: str, original: bytes | None) -> bytes:
    """text encoded as the original was: UTF-16/32 when it had that BOM (text keeps its leading U+FEFF)."""
    encoding = bom_encoding(original or b"") or "utf-8"
    return text.encode(encoding)


def as_json(original: str, yaml_text: str) -> str:
    """The rewritten manifest as JSON again, indented as the original: one object stays one object; with the
    emitted ResourceClaimTemplates beside it, the objects become a v1 List (kubectl applies each item), and a List
    takes them among its items."""
    import yaml

    from dramigrate.documents import dominant_newline

    objects = [d for d in yaml.load_all(yaml_text, Loader=_json_loader()) if d is not None]
    token = f"\0dramigrate-number-{os.urandom(6).hex()}:"  # stands in for a number's text until it is written
    first = objects[0] if objects else None
    if len(objects) == 1:
        data: Any = first
    elif isinstance(first, dict) and isinstance(first.get("items"), list):  # a list as kubectl reads one (objects_of)
        data = {**first, "items": first["items"] + objects[1:]}  # a list gets the templates as items of its own
    else:
        data = {"apiVersion": "v1", "kind": "List", "items": objects}
    m = re.search(r"\n([ \t]+)\S", original)
    indent: int | str | None = None
    if m:
        indent = m.group(1) if "\t" in m.group(1) else len(m.group(1))
    try:
        out = json.dumps(data, indent=indent, ensure_ascii=False, default=lambda n: token + n.text, allow_nan=False)
    except ValueError:  # 1e400 became infinity in the YAML round trip: JSON cannot write it
        raise InputError(
            "a number in this JSON manifest is beyond a float's range (as 1e400) and would not be written back as "
            "it is; not rewritten"
        ) from None
    out = re.sub(re.escape(json.dumps(token)[:-1]) + r'([^"]*)"', lambda m: m.group(1), out)
    # A lone surrogate ("\ud800" in the original) has no UTF-8 form: it stays the escape it was written as.
    out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    out += "\n" if original.endswith("\n") else ""
    # the original's BOM and line ends (its most common one), never a change of its own
    return ("\ufeff" if original.startswith("\ufeff") else "") + out.replace("\n", dominant_newline(original))


_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class _Number:
    text: str  # a JSON number with an exponent, as written


@functools.cache
def _json_loader() -> Any:
    """PyYAML's safe loader, keeping each JSON number with an exponent as written: PyYAML reads "1e3" and "1.5e9"
    as YAML 1.1 strings (a number of the manifest was written back as a string), and 1e400 as infinity."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    tag = "tag:dramigrate,2026:json-number"
    number = re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?[eE][-+]?[0-9]+$")
    Loader.add_implicit_resolver(tag, number, list("-0123456789"))
    for first in "-0123456789":  # ahead of YAML 1.1's float, which reads 1.5e+9 and writes 1500000000.0
        Loader.yaml_implicit_resolvers[first].insert(0, Loader.yaml_implicit_resolvers[first].pop())
    Loader.add_constructor(tag, lambda loader, node: _Number(loader.construct_scalar(node)))
    return Loader


def tree_of(named: Path) -> Path:
    """The tree a path named on the command line stands for, which no write may leave through a symlink: the folder
    named (a file: its folder); but when the path itself, or a folder on it below the working folder, is a symlink
    (`sd` -> ../elsewhere), the folder holding that link: naming a link does not make its target the tree.
    Symlinks above the working folder (or above an absolute path's last name) lead to where the tree lives."""
    absolute = Path(os.path.abspath(named))
    cwd = Path(os.getcwd())
    if absolute.is_relative_to(cwd):
        here, below = cwd, absolute.relative_to(cwd).parts
    else:
        here, below = absolute.parent, absolute.parts[-1:]
    for part in below:
        if (here / part).is_symlink():
            return here
        here = here / part
    return absolute if absolute.is_dir() else absolute.parent


def check_link(path: Path, roots: tuple[Path, ...]) -> None:
    """InputError when a write of path would land outside every root: through a symlink (the file's own, or a
    folder's on its way), or by a name that is already the target's (a kustomize graph names its files by their real
    paths). Writes nothing; diff asks it too. No roots: no check."""
    if not roots or _inside(os.path.realpath(path), roots):
        return
    if os.path.islink(path):
        raise InputError("a symlink whose target is outside the tree; not written through it", str(path))
    link = next((p for p in reversed(Path(path).parents) if p.is_symlink()), None)
    if link is not None:
        raise InputError(
            f"reached through the symlink {link} -> {os.readlink(link)}, whose target is outside the tree; not "
            "written through it",
            str(path),
        )
    raise InputError(
        "outside the paths named on the command line (a path named through a symlink of its own stands for the "
        "folder holding the link); not written",
        str(path),
    )


def _inside(path: str, roots: tuple[Path, ...]) -> bool:
    for root in roots:
        try:
            Path(path).relative_to(os.path.realpath(root))
            return True
        except ValueError:
            continue
    return False


# A temp file's name must fit in NAME_MAX (255 bytes) with its dot, pid, random part and suffix around the name.
_TEMP_STEM_BYTES = 255 - len(f"..{2**32}.{'0' * 8}{TEMP_SUFFIX}")


def _temp_stem(name: str) -> str:
    """The part of a file's name its temp file's name carries: the whole name, or its first bytes when the name
    is too long for a temp name to fit (a file named with 230 bytes could not be rewritten at all)."""
    raw = os.fsencode(name)
    return name if len(raw) <= _TEMP_STEM_BYTES else os.fsdecode(raw[:_TEMP_STEM_BYTES])


def _temp_name(folder: str, name: str) -> str:
    """A fresh name beside name for a file of this run (.NAME.PID.RANDOM.dramigrate): clean_stale_temps knows it."""
    import secrets

    return os.path.join(folder, f".{_temp_stem(name)}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


def clean_stale_temps(folder: str) -> None:
    """Remove the temp files previous runs left in folder (killed before their rename, the janitor too): those
    whose process is gone. Once a folder in a run: listing the folder before each write of a file in it made fix
    quadratic in a flat folder (8,000 device files in one folder: 261 s)."""
    with _cleaning:
        if folder in _cleaned:
            return
        _cleaned.add(folder)
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not entry.endswith(TEMP_SUFFIX) or not (m := _STALE.fullmatch(entry)):
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and not _alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, entry))


_STALE = re.compile(rf"\..+\.(\d+)\.[0-9a-f]+{re.escape(TEMP_SUFFIX)}", re.DOTALL)  # _temp_name's, for any file
_cleaned: set[str] = set()  # the folders cleaned in this run
_cleaning = threading.Lock()


def _forget_folders() -> None:
    """Forget what the last run in this process learnt of its folders (cleaned of dead runs' temp files; what keeps a
    rewrite out of them): a program that embeds dramigrate and runs fix twice saw the first run's in the second."""
    with _cleaning:
        _cleaned.clear()
    _folder_state.cache_clear()


per_run(_forget_folders)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _refusal(path: str, st: os.stat_result, links: int | None = None) -> str:
    links = st.st_nlink if links is None else links
    if not st.st_mode & 0o222:
        return "read-only file; not written (--force writes it anyway)"
    if links > 1:
        return f"has {links} hard links; a rewrite would split them, so it is not written (--force writes it anyway)"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        if os.geteuid() == 0:
            return f"owned by user {st.st_uid}, not by you; not written (--force writes it anyway, keeping its owner)"
        return f"owned by user {st.st_uid}, not by you; not written: {_ONLY_ROOT}"
    return ""


# The inode flags (Linux's FS_IOC_GETFLAGS) that keep a file from being replaced, even by root: `chattr +i` and `+a`.
_FS_IOC_GETFLAGS = 0x80086601
_KEPT_FLAGS = (
    (0x10, "immutable file (chattr +i)"),
    (0x20, "append-only file (chattr +a)"),
)


def _attribute_refusal(target: str) -> str:
    """Why target's file attributes keep any rename from replacing it (an immutable or append-only file: the rename
    fails with EPERM, even as root and with --force), or "". Where the attributes cannot be read (not Linux, a file
    system without them), "": the write itself then fails and says why."""
    flags = _inode_flags(target)
    for bit, what in _KEPT_FLAGS:
        if flags & bit:
            return f"{what}; not written, with or without --force (its owner or root lifts the attribute with chattr)"
    return ""


def _inode_flags(path: str) -> int:
    """The inode flags of path (not followed if a symlink), 0 where they cannot be read."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return 0
    try:
        return _fd_flags(fd)
    except OSError:
        return 0
    finally:
        os.close(fd)


def _fd_flags(fd: int, new: int | None = None) -> int:
    """The inode flags of an open file (Linux's FS_IOC_GETFLAGS), after setting them to new when given."""
    import array
    import fcntl

    flags = array.array("i", [0 if new is None else new])  # the kernel reads and writes an int
    if new is not None:
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, flags, False)
    fcntl.ioctl(fd, _FS_IOC_GETFLAGS, flags, True)
    return flags[0]


_FS_IOC_SETFLAGS = 0x40086602
# The attributes a new file takes from the one it replaces (chattr s u c S d A m j t C): not +i or +a, which keep the
# file from being replaced at all, nor those the file system sets itself (e extents, N inline data, E encrypted).
_KEPT_ATTRIBUTES = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x400 | 0x4000 | 0x8000 | 0x800000


def _copy_attributes(fd: int, source: str) -> None:
    """The chattr attributes of source onto the (still empty) temp file: a rewrite dropped +S, +d, +A and the like
    without a word. Where they cannot be set, the file is not written, as for an extended attribute."""
    wanted = _inode_flags(source) & _KEPT_ATTRIBUTES
    if not wanted:
        return
    try:
        _fd_flags(fd, (_fd_flags(fd) & ~_KEPT_ATTRIBUTES) | wanted)
    except OSError as exc:
        raise InputError(f"cannot keep its file attributes (chattr): {exc.strerror}", source) from exc


def _folder_refusal(target: str, before: os.stat_result | None) -> str:
    """Why target's folder keeps a rewrite from making its temp file there or renaming it over target, even with
    --force (an immutable or append-only folder, a read-only mount, no write permission, a sticky folder of another
    user holding another user's file), or "". Where that cannot be told, "": the write itself then fails and says
    why. A rewrite that failed there did so mid-run, named by its temp file, and in an append-only or sticky folder
    left that temp file behind (it cannot be removed there either)."""
    folder = os.path.dirname(target) or "."
    why, mode, owner = _folder_state(folder)
    if why:
        return f"its folder {folder} {why}; not written, with or without --force"
    if (
        before is not None
        and mode & stat.S_ISVTX
        and hasattr(os, "geteuid")
        and os.geteuid() not in (owner, before.st_uid)
        and not _may_own_any()
    ):
        return (
            f"its folder {folder} is sticky (mode +t) and user {owner}'s, and the file is user {before.st_uid}'s: "
            "only they or root may replace it there; not written, with or without --force"
        )
    return ""


@functools.lru_cache(maxsize=1024)
def _folder_state(folder: str) -> tuple[str, int, int]:
    """What keeps any new file from being renamed into folder ("" if nothing), its mode and its owner; asked once
    a folder in a run (lint asks it of each file with a fixable request: 150 us a file when asked each time). A
    folder that changes later in the run fails the write itself, which says why."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return "", 0, -1
    try:
        st = os.fstat(fd)
        try:
            flags = _fd_flags(fd) if sys.platform.startswith("linux") else 0
        except OSError:  # a file system without them
            flags = 0
    except OSError:
        return "", 0, -1
    finally:
        os.close(fd)
    for bit, what in _KEPT_FLAGS:
        if flags & bit:
            what = what.replace(" file", "")
            return (
                f"is {what}: no new file can be renamed into it (its owner or root can lift it)",
                st.st_mode,
                st.st_uid,
            )
    effective = os.access in os.supports_effective_ids
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=effective):
        try:
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        except (OSError, AttributeError):
            read_only = False
        if read_only:
            return "is on a read-only file system", st.st_mode, st.st_uid
        why = "is not writable by you (a rewrite makes a new file beside the file and renames it into place)"
        return why, st.st_mode, st.st_uid
    return "", st.st_mode, st.st_uid


def _may_own_any() -> bool:
    """Whether this process may replace others' files in others' sticky folders (CAP_FOWNER; root has it unless a
    container or setpriv took it away)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << 3))  # CAP_FOWNER
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0


# A rewrite replaces the file with a new one, which is the writer's until it is given the old owner and group back.
_ONLY_ROOT = (
    "a rewrite replaces the file, and only root can give the new file another user's ownership, so --force cannot "
    "write it either (--force writes read-only and hard-linked files; run fix as root or as the file's owner)"
)


def _owner_message(st: os.stat_result, strerror: str | None) -> str:
    """Why a file this user may not give its owner and group back is not written (even with --force)."""
    if st.st_uid != os.geteuid():
        return f"owned by user {st.st_uid}, not by you ({strerror}); not written: {_ONLY_ROOT}"
    return (
        f"its group {st.st_gid} is not one of yours ({strerror}): a rewrite replaces the file, and only root or a "
        f"member of group {st.st_gid} can give the new file that group; not written, with or without --force (run "
        "fix as root or as a member of the group, or change the file's group)"
    )


_ACCESS_ACL = "system.posix_acl_access"


def _copy_metadata(fd: int, st: os.stat_result, source: str) -> None:
    """Owner and group, then mode, then extended attributes (POSIX ACLs live there) of source onto fd: exactly
    the source's ACL, none when it had none (not the folder's default ACL that the temp file was made with)."""
    if hasattr(os, "fchown"):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError as exc:
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                raise InputError(_owner_message(st, exc.strerror), source) from exc
    names: list[str] = []
    if hasattr(os, "listxattr"):
        try:
            names = os.listxattr(source)
        except OSError as exc:
            if exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
    if _ACCESS_ACL not in names:
        # The temp file took the folder's default ACL when it was made; the file it replaces had none.
        with contextlib.suppress(OSError, AttributeError):
            os.removexattr(fd, _ACCESS_ACL)
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(source, name))
        except OSError as exc:
            raise InputError(f"cannot keep the extended attribute {name}: {exc.strerror}", source) from exc


def check_writable(
    path: Path, expected: bytes | None = None, options: WriteOptions | None = None
) -> tuple[str, os.stat_result | None]:
    """Raise InputError when write_atomic would refuse path (a link out of the tree, not a regular file, read-only,
    hard-linked or someone else's unless forced, changed since it was read); else the file written (a link's target)
    and its stat (None when it does not exist yet). Writes nothing: a rewrite of several files checks them all first."""
    opts = options or WriteOptions()
    check_link(path, opts.roots)
    target = os.path.realpath(path) if os.path.islink(path) else str(path)
    try:
        before = os.stat(target)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", str(path)) from exc
    if before is not None:
        if not stat.S_ISREG(before.st_mode):
            raise InputError("not a regular file; not written", str(path))
        # the backup's hard link to the original, left by a run killed before its rename, does not count
        held = held_backup(target, target + opts.backup, str(path)) if opts.backup else None
        own_link = held is not None and (held.st_dev, held.st_ino) == (before.st_dev, before.st_ino)
        why = _attribute_refusal(target) or _folder_refusal(target, before)
        if not why and not opts.force:
            why = _refusal(target, before, before.st_nlink - own_link)
        if why:
            raise InputError(why, str(path))
    elif why := _folder_refusal(target, before):
        raise InputError(why, str(path))
    if expected is not None and _read(target, path) != expected:
        raise InputError("file changed since it was read; not overwritten (run again)", str(path))
    return target, before


def write_atomic(path: Path, text: str, expected: bytes | None = None, options: WriteOptions | None = None) -> None:
    """Replace path with text (encoded as expected was). With expected, refuse when the file changed since it
    was read; refuse read-only, hard-linked and others' files unless options.force."""
    write_group([(path, text, expected)], options)


def write_group(files: list[tuple[Path, str | bytes, bytes | None]], options: WriteOptions | None = None) -> None:
    """Replace each (path, text, expected) as write_atomic does, all or none: every temp file is written and synced,
    and every file checked unchanged, before the first rename, so a full disk or a refusal met on any of them leaves
    all as they were (a chart or kustomize graph half written asked for devices twice, or did not render)."""
    opts = options or WriteOptions()
    staged: list[_Staged] = []
    kept: dict[str, str] = {}  # target -> a hard link to (or copy of) its original while the renames run
    renamed: list[_Staged] = []
    renaming: _Staged | None = None  # the file whose rename is under way
    try:
        for path, text, expected in files:
            staged.append(_stage(path, text, expected, opts))
        for st in staged:
            _last_look(st, opts)
        if len(staged) > 1:  # a rename that fails after others (a folder made read-only meanwhile) undoes them
            kept.update((st.target, _keep(st.target, str(st.path))) for st in staged if st.before is not None)
        for st in staged:
            renaming = st
            os.replace(st.tmp, st.target)
            renamed.append(st)
            renaming = None
            _fsync_folder(os.path.dirname(st.target) or ".")
    except BaseException as exc:
        # a rename done, then Ctrl-C or SIGTERM raised before it was counted: its temp file is gone, so it is undone
        # too. Only that one file's: a temp file also seems gone once its folder is swapped for a symlink (to a
        # folder outside the tree holding a file of the same name), and every file staged was then "put back", a new
        # one by removing the outside file, a replaced one by an internal error (KeyError) of the run
        if (
            renaming is not None
            and renaming not in renamed
            and isinstance(exc, KeyboardInterrupt)
            and not os.path.exists(renaming.tmp)
        ):
            renamed.append(renaming)
        for st in staged:
            if os.path.exists(st.tmp):
                os.unlink(st.tmp)
        stuck = _put_back(renamed, kept)
        if stuck and isinstance(exc, KeyboardInterrupt):  # still a stop: the run ends, naming what stays rewritten
            raise HalfWritten(stuck, [str(st.path) for st in staged if str(st.path) not in stuck]) from exc
        if stuck:
            raise InputError(
                f"{failure_text(exc)}; the files renamed before it could not all be put back, and these stay "
                f"rewritten: {', '.join(stuck)}",
                str(renamed[0].path),
            ) from exc
        raise
    finally:
        for keep in kept.values():
            with contextlib.suppress(OSError):
                os.unlink(keep)


class HalfWritten(KeyboardInterrupt):
    """A stop (Ctrl-C, SIGTERM; the cause) between the renames of a group written all or none, after which putting
    back the files already renamed failed: `stuck` stay rewritten, `kept` (the group's other files) are as they were.
    Still a stop, which ends the run (lifetime.stop_name names its cause's signal): as a write failure it was lost,
    and the run went on to write the next charts."""

    def __init__(self, stuck: list[str], kept: list[str]) -> None:
        super().__init__()
        self.stuck = stuck
        self.kept = kept


def failure_text(exc: BaseException) -> str:
    """What a write's failure says: a bad-input message, an OS error's text, else the exception's."""
    return getattr(exc, "message", None) or getattr(exc, "strerror", None) or str(exc)


def _keep(target: str, shown: str) -> str:
    """A second name for target's original (a hard link where the file system has them, else a copy with its
    metadata), named as a temp file so that a kill -9 leaves none behind."""
    from dramigrate.lifetime import watch

    keep = _temp_name(*os.path.split(target))
    watch(keep)
    try:
        os.link(target, keep)
    except OSError:
        try:
            _copy_new(target, keep)
        except OSError as exc:
            raise InputError(f"cannot keep the original while its group is written: {exc.strerror}", shown) from exc
    return keep


def _put_back(renamed: list[_Staged], kept: dict[str, str]) -> list[str]:
    """Undo the renames of a group that failed part way: each original back under its name, each new file gone;
    the paths that could not be put back."""
    stuck = []
    for st in reversed(renamed):
        try:
            if st.before is None:
                now = os.lstat(st.target)
                if (now.st_dev, now.st_ino) != st.made:  # not the file made here (its folder swapped for a link)
                    raise FileNotFoundError(st.target)
                os.unlink(st.target)
            else:
                os.replace(kept[st.target], st.target)
            _fsync_folder(os.path.dirname(st.target) or ".")
        except OSError:
            stuck.append(str(st.path))
    return stuck


@dataclass
class _Staged:
    path: Path
    target: str  # the file replaced (a symlink's target)
    tmp: str  # its new content, synced, beside it
    before: os.stat_result | None
    expected: bytes | None
    made: tuple[int, int] = (0, 0)  # the temp file's (device, inode): what a put-back may remove


def _stage(path: Path, text: str | bytes, expected: bytes | None, opts: WriteOptions) -> _Staged:
    """The new content in a synced temp file beside the file, with the file's metadata (bytes as they are: a
    re-packed chart archive)."""
    target, before = check_writable(path, expected, opts)
    data = text if isinstance(text, bytes) else encode_like(text, expected)
    folder, name = os.path.split(target)
    folder = folder or "."
    clean_stale_temps(folder)
    fd, tmp = _create_temp(folder, name, str(path))
    staged = _Staged(path, target, tmp, before, expected)
    try:
        with os.fdopen(fd, "wb") as fh:
            made = os.fstat(fh.fileno())
            staged.made = (made.st_dev, made.st_ino)
            if before is not None:
                _copy_attributes(fh.fileno(), target)  # before the data: +C takes only on an empty file
            fh.write(data)
            fh.flush()
            if before is not None:
                _copy_metadata(fh.fileno(), before, target)
            else:
                os.fchmod(fh.fileno(), 0o644 & ~_umask())
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return staged


def _last_look(st: _Staged, opts: WriteOptions) -> None:
    """The same file, with the same bytes, right before the rename (and its backup made); a new file still absent."""
    if st.before is None:
        if os.path.lexists(st.target):
            raise InputError("appeared while it was being written; not overwritten (run again)", str(st.path))
        return
    now = os.stat(st.target)
    before = st.before
    same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
        before.st_dev,
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    if not same or (st.expected is not None and _read(st.target, st.path) != st.expected):
        raise InputError("file changed while it was being rewritten; not overwritten (run again)", str(st.path))
    if opts.backup:
        _backup(st.target, st.target + opts.backup, str(st.path))


def write_output(path: Path, text: str, expected: bytes | None = None) -> None:
    """Write a file the user named for dramigrate's own output (a report, the baseline, the classes file). A symlink
    at that path is written through only when its target stays in the working directory or the link's folder: a
    link planted in a checkout (`dramigrate.sarif -> ~/.bashrc`) must not make a CI run write outside the tree.
    expected: the bytes read from it (the classes file fix appends to), so it is written in their encoding."""
    write_atomic(path, text, expected, options=WriteOptions(roots=(Path.cwd(), tree_of(path.parent))))


def _create_temp(folder: str, name: str, shown: str) -> tuple[int, str]:
    """A new temp file beside the target (.NAME.PID.RANDOM.dramigrate, mode 0600), handed to the janitor before it
    exists, so a kill -9 at any point leaves none behind (lifetime.py)."""
    from dramigrate.lifetime import watch

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = _temp_name(folder, name)
        watch(tmp)
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"cannot write next to the file: {exc.strerror}", shown) from exc
    raise InputError("cannot write next to the file: no free temp file name", shown)


def _read(target: str, shown: Path) -> bytes:
    try:
        with open(target, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"cannot re-read before writing: {exc.strerror}", str(shown)) from exc


def held_backup(target: str, backup: str, shown: str) -> os.stat_result | None:
    """The backup's stat when its name already holds target's original: the hard link or copy that a run killed
    between the backup and the rename left; None when nothing holds it. Anything else there refuses the rewrite:
    a folder, or a file, which may be the user's own (with --backup=.yaml, `a.yaml.yaml` can be another manifest
    of the run) or an earlier backup of the true original."""
    try:
        held = os.lstat(backup)
    except FileNotFoundError:
        return None
    name = os.path.basename(backup)
    if stat.S_ISDIR(held.st_mode):
        raise InputError(f"--backup: {name} is a folder; the file is not rewritten", shown)
    if stat.S_ISREG(held.st_mode) and _same_content(target, backup, held):
        return held
    raise InputError(
        f"--backup: {name} exists (an earlier backup, or a file of yours) and is never replaced; the file is not "
        "rewritten: move it away or choose another --backup=SUFFIX",
        shown,
    )


def _same_content(target: str, backup: str, held: os.stat_result) -> bool:
    import filecmp

    now = os.stat(target)
    if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
        return True
    return now.st_size == held.st_size and filecmp.cmp(target, backup, shallow=False)


def _backup(target: str, backup: str, shown: str) -> None:
    """The original, kept as it was (a hard link to its inode where possible, else a copy with its metadata), under
    a name nothing else holds (held_backup)."""
    if held_backup(target, backup, shown) is not None:
        return
    try:
        os.link(target, backup)
    except OSError:
        _copy_new(target, backup)


def _copy_new(target: str, backup: str) -> None:
    """A copy of target with its metadata into a file that must not exist yet (a symlink there is not followed)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    with open(target, "rb") as src, os.fdopen(os.open(backup, flags, 0o600), "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copystat(target, backup, follow_symlinks=False)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
