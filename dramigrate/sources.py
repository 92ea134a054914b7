"""Sources: expand the user's paths into YAML inputs; charts and odd files are said, never silently skipped."""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dramigrate.limits import NotRegular, file_type, is_regular

if TYPE_CHECKING:
    from dramigrate.prefilter import Grep

YAML_SUFFIXES = (".yaml", ".yml")
MANIFEST_SUFFIXES = (*YAML_SUFFIXES, ".json")  # JSON manifests in folders are checked too (never silently skipped)
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".terraform"}
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")  # in kustomize's order
LINKED_KUSTOMIZATION = (
    "a symlink to a file outside its folder: kustomize does not read such a kustomization file (its load "
    "restrictor), so its folder is no kustomization and a build of it or of an overlay listing it fails; not read "
    "(copy the file into the folder, or list the other folder as a base)"
)
STDIN = "-"
TELL_EVERY = 300  # files the walk finds between two calls of expand's `found`
WalkStep = tuple[str, list[str], list[str]]


@dataclass
class Walked:
    """A folder the walk went through, resolved: the kustomizations it saw (so the kustomize scan never walks it
    again) and the folders it did not enter (excluded, Helm charts) that the scan still has to look into."""

    top: Path
    kustomizations: list[Path] = field(default_factory=list)  # resolved; every kustomization name present
    pruned: list[Path] = field(default_factory=list)  # resolved


@dataclass
class Inputs:
    files: list[str] = field(default_factory=list)  # as given or walked (pathlib's spelling: no "./", no "//")
    stdin: bool = False
    charts: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the run should know (library charts, git's answer)
    undecided: set[str] = field(default_factory=set)  # files git did not say in time whether it ignores (not written)
    skipped: list[str] = field(default_factory=list)  # --verbose: each path left out, and why
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)
    walked: list[Walked] = field(default_factory=list)  # the folders walked, for the kustomize scan
    resolved: dict[str, str] = field(default_factory=dict)  # file as walked -> resolved (without a syscall)
    chart_of: dict[str, str | None] = field(default_factory=dict)  # folder -> the chart holding it (chart_root)
    found: Callable[[list[str]], None] | None = field(default=None, repr=False)  # expand's `found`
    # expand's `kustomization`: told each folder's kustomization file (resolved) the walk finds as a regular file
    kustomization: Callable[[str], None] | None = field(default=None, repr=False)
    told: int = 0  # files told to `found` so far
    grep: Grep | None = field(default=None, repr=False)  # the grep pre-filter running over the files, if started


def excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    return any(
        fnmatch.fnmatch(text, p) or fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(text, f"*/{p}") for p in patterns
    )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection during the walk: it makes no reference cycles, and the collections its lists and tuples
    set off took 5% of a 30,000-folder walk. What the walk made (its file lists) lives to the end of the run: frozen,
    the first collection after it does not go through every object the walk left (10 ms of a 20,000-file lint), nor
    does any later one. A pool worker forked meanwhile turns the collector on again (engine._init). The kustomize
    scan, whose graph lives to the end of the run too, pauses it the same way (kustomize.scan.scan)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


@collector_paused()
def expand(
    paths: list[str],
    exclude: tuple[str, ...] = (),
    force_exclude: bool = True,
    include_ignored: bool = False,
    found: Callable[[list[str]], None] | None = None,
    kustomization: Callable[[str], None] | None = None,
) -> Inputs:
    """The inputs of the paths given. Excludes apply to files and folders named on the command line too (as
    pre-commit names every file) unless force_exclude is off; files git ignores are left out of folders unless
    include_ignored is on (files named on the command line are always taken). found: told the files as the walk
    finds them, every few hundred (and the rest at the end; files git ignores among them). kustomization: told
    the resolved path of each kustomization file the walk finds (the first of kustomize's names in a folder), as it
    finds it, when the folder listing says it is a regular file."""
    out = Inputs()
    out.found, out.kustomization = found, kustomization
    seen: set[str] = set()
    links: dict[str, bool] = {}  # folders named paths go through: is each a symlink (one lstat per folder)
    walked: list[tuple[Path, list[str]]] = []  # (folder named, the files found in it)
    for raw in paths:
        if raw == STDIN:
            out.stdin = True
            continue
        p = Path(raw)
        if force_exclude and exclude and p.exists() and (pattern := excluded_by(p, exclude)):
            out.skipped.append(f"{raw}: excluded by the pattern {pattern!r}")
            continue
        # before anything of it is read (a chart's Chart.yaml, a folder); a kustomization linked out of its folder
        # is said as that (_expand_path)
        if (why := named_refusal(raw, links)) and not (p.name in KUSTOMIZATION_NAMES and leaves_folder(raw)):
            out.errors.append((raw, why))
            continue
        before = len(out.files)
        try:
            walked_folder = _expand_path(raw, exclude, out, seen)
        except (OSError, RuntimeError) as exc:  # this path fails on its own; the others are still checked
            out.errors.append((raw, f"cannot read: {getattr(exc, 'strerror', None) or exc}"))
            continue
        if walked_folder:
            walked.append((p, out.files[before:]))
    if found is not None:
        found(out.files[out.told :])
    if not include_ignored:
        ignored = set().union(
            *(git_ignored(top, found, out.notes, out.undecided, out.skipped) for top, found in walked)
        )
        if ignored:
            out.files = [f for f in out.files if f not in ignored]
            out.skipped.extend(f"{f}: ignored by git (.gitignore; --include-ignored takes it)" for f in sorted(ignored))
    return out


def _expand_path(raw: str, exclude: tuple[str, ...], out: Inputs, seen: set[str]) -> bool:
    """Add one path's inputs; True when it was a folder that was walked."""
    p = Path(raw)
    if not p.exists():
        broken = os.path.lexists(p)
        out.errors.append((raw, "a broken symlink or a symlink loop" if broken else "no such file or folder"))
    elif p.is_file():
        chart = chart_root(p, out.chart_of)
        if p.name in KUSTOMIZATION_NAMES and leaves_folder(raw):  # as pre-commit names it
            out.errors.append((raw, LINKED_KUSTOMIZATION))
        elif p.suffix == ".tgz" or p.name.endswith(".tar.gz"):
            out.charts.append(p)
        elif chart is not None:  # a chart's file (pre-commit passes single templates): the chart, once
            if _library_chart(chart / "Chart.yaml"):
                out.notes.append(f"{chart}: a library chart; it is checked through the charts that use it")
            elif chart not in out.charts:
                out.charts.append(chart)
        elif str(p) not in seen:
            seen.add(str(p))
            out.files.append(str(p))
    elif not p.is_dir():
        out.errors.append((raw, NotRegular(raw, file_type(os.stat(p).st_mode)).strerror))
    elif is_regular(p / "Chart.yaml"):
        out.charts.append(p)
    else:
        _walk(p, exclude, out, seen)
        return True
    return False


def named_reach(raw: str, links: dict[str, bool] | None = None) -> tuple[str, str]:
    """(tree, link) of a path named on the command line. tree: where the path may lead, the working folder for a path
    written below it, else the folder holding the path (symlinks above either lead to where the tree lives); link:
    the first symlink on the way from the tree down to the path (the path itself included), "" when none. links:
    what is known of folders already (filled in)."""
    absolute, cwd = os.path.abspath(raw), os.getcwd()
    inside = cwd.rstrip(os.sep) + os.sep
    if absolute == cwd or absolute.startswith(inside):
        tree, below = cwd, [part for part in absolute[len(inside) :].split(os.sep) if part]
    else:
        tree, below = os.path.dirname(absolute), [os.path.basename(absolute)]
    here = tree
    for i, part in enumerate(below):
        here = os.path.join(here, part)
        is_link = links.get(here) if links is not None and i < len(below) - 1 else None
        if is_link is None:
            is_link = os.path.islink(here)
            if links is not None:
                links[here] = is_link
        if is_link:
            return tree, here
    return tree, ""


def named_refusal(raw: str, links: dict[str, bool] | None = None) -> str:
    """Why a path named on the command line is not read, "" when it is: it is, or goes through, a symlink that leads
    out of its tree (named_reach), or into a .git folder (a CI checkout keeps its token in .git/config). A hostile
    pull request's links reach `git diff --name-only | xargs dramigrate lint` as they are: nothing of what they point
    to is read or shown."""
    tree, link = named_reach(raw, links)
    if not link and ".." not in Path(raw).parts:  # `sd/..` is the folder above sd's target
        return ""
    rel = os.path.relpath(os.path.realpath(raw), os.path.realpath(tree))
    what = "a symlink that" if os.path.islink(raw) else "reached through a symlink that"
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        where = "the working folder" if tree == os.getcwd() else tree
        return f"{what} leads out of {where}; skipped (never read)"
    if ".git" in rel.split(os.sep):
        return f"{what} leads into a .git folder; skipped (never read)"
    return ""


def followed_tree(raw: str) -> Path | None:
    """The tree a path named on the command line that is, or goes through, a symlink staying in its tree stands for:
    its target (a file's: its folder), as if the target were named. None for a path without a symlink."""
    _, link = named_reach(raw)
    if not link or named_refusal(raw):
        return None
    target = Path(os.path.realpath(raw))
    return target if target.is_dir() else target.parent


def excluded_by(path: Path, patterns: tuple[str, ...]) -> str:
    """The first pattern that excludes path, or ""."""
    return next((p for p in patterns if excluded(path, (p,))), "")


# git answers check-ignore for 20,000 files in under 0.1 s; one that blocks on a FIFO in a folder's own .git
# (HEAD, config, info/exclude) never answers, and the run waited 60 s for it. Past the limit, git is asked again
# with an empty repository of its own over the same work tree: the .gitignore files (and the global excludes)
# decide, not the unreadable .git, and a note says so. When that does not answer either (a .gitignore that is a
# FIFO), nothing is taken as ignored, a note says so, and fix writes none of those files (each named).
GIT_TIMEOUT_S = 10.0  # DRAMIGRATE_GIT_TIMEOUT overrides


def git_timeout() -> float:
    from dramigrate.limits import env_number

    return env_number("DRAMIGRATE_GIT_TIMEOUT", GIT_TIMEOUT_S)


def git_ignored(
    top: Path, files: list[str], notes: list[str], undecided: set[str] | None = None, explained: list[str] | None = None
) -> set[str]:
    """The files under folder top that git ignores (.gitignore, .git/info/exclude, the global excludes), as
    `git check-ignore` decides. Nothing when git is missing or top is not in a git work tree. When git does not
    answer in time, what the .gitignore files say, with a note; when that fails too, nothing, a note in notes and
    every file in undecided. explained (--verbose): told when dramigrate matched the ignore files itself."""
    import shutil
    import subprocess

    git = shutil.which("git")
    root = git_above(os.path.realpath(top))
    if git is None or not files or (root is None and "GIT_DIR" not in os.environ):
        return set()
    by_rel = {os.path.relpath(f, top): f for f in files}
    limit = git_timeout()
    bounded = _ignored_without_wildmatch(git, top, root, by_rel, limit, explained) if root is not None else None
    if bounded is not None:
        return bounded
    try:
        # core.fsmonitor names a command git runs whenever it reads the index: a repository's own .git/config
        # (an unpacked archive, a downloaded checkout) must not run anything when dramigrate reads it
        out = _check_ignore([git, "-c", "core.fsmonitor=false", "-C", os.fspath(top)], list(by_rel), limit)
    except subprocess.TimeoutExpired:
        ignored = _ignored_by_gitignore_files(git, top, root, by_rel, limit)
        if ignored is not None:
            notes.append(
                f"{top}: git did not say within {limit:g} s which files it ignores; the .gitignore files decided"
                " (not the repository's .git/info/exclude)"
            )
            return ignored
        notes.append(f"{top}: git did not say within {limit:g} s which files it ignores; none was skipped")
        if undecided is not None:
            undecided.update(files)
        return set()
    except (OSError, subprocess.SubprocessError):
        return set()
    return set() if out is None else {by_rel[n] for n in out if n in by_rel}


def _check_ignore(
    command: list[str], names: list[str], limit: float, env: dict[str, str] | None = None
) -> list[str] | None:
    """The names `command check-ignore` (run with a time limit) says are ignored; None when it failed (128: not a
    git work tree)."""
    import subprocess

    proc = subprocess.run(
        [*command, "check-ignore", "-z", "--stdin"],
        input=b"".join(n.encode("utf-8", "surrogateescape") + b"\0" for n in names),
        capture_output=True,
        timeout=limit,
        env=env,
        check=False,
    )
    if proc.returncode not in (0, 1):
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").split("\0")


def _ignored_by_gitignore_files(
    git: str, top: Path, root: str | None, by_rel: dict[str, str], limit: float
) -> set[str] | None:
    """The files the .gitignore files of the work tree (from its top folder down) and the global excludes ignore,
    as git decides with an empty repository of its own over the repository's own index (a tracked file is never
    ignored: a CI gate must not pass a tracked manifest a pattern matches); None when the index is not a regular
    file, or git fails or does not answer in time."""
    base = root or os.path.realpath(top)
    from_root = _from_root(top, base, by_rel)
    names = list(from_root)
    out = _over_own_repository(git, base, limit, lambda command, env: _check_ignore(command, names, limit, env))
    return None if out is None else {by_rel[from_root[n]] for n in out if n in from_root}


def _below(folder: str, rel: str) -> str:
    """rel (from folder, "" for folder itself) as a path from the work tree's top folder, with `/`."""
    return "/".join(p for p in (folder, rel.replace(os.sep, "/")) if p)


def _top_from_root(top: Path, base: str) -> str:
    """The folder top as a path from the work tree's top folder at base ("" for base itself), with `/`."""
    prefix = os.path.relpath(os.path.realpath(top), base)  # one relpath, not one a file
    return "" if prefix == "." else prefix.replace(os.sep, "/")


def _from_root(top: Path, base: str, by_rel: dict[str, str]) -> dict[str, str]:
    """Each file's path from the work tree's top folder (with `/`) -> its path from top."""
    here = _top_from_root(top, base)
    return {_below(here, rel): rel for rel in by_rel}


def _over_own_repository(
    git: str, base: str, limit: float, ask: Callable[[list[str], dict[str, str]], list[str] | None]
) -> list[str] | None:
    """ask(git command, environment) run with an empty repository of git's own over the work tree at base and its
    own index, never its .git (a FIFO there, a command in its config); None when the index is not a regular file,
    or git fails or does not answer in time."""
    import subprocess
    import tempfile

    index = os.path.join(base, ".git", "index")  # none yet: nothing is tracked, and git reads it as empty
    if os.path.lexists(index) and not os.path.isfile(index):  # a stat, never an open: a FIFO would block git too
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="dramigrate-git-") as empty:
            subprocess.run([git, "init", "-q", "--bare", empty], capture_output=True, timeout=limit, check=True)
            command = [git, f"--git-dir={empty}", f"--work-tree={base}", "-c", "core.fsmonitor=false", "-C", base]
            return ask(command, {**os.environ, "GIT_INDEX_FILE": index})
    except (OSError, subprocess.SubprocessError):
        return None


def _ignored_without_wildmatch(
    git: str, top: Path, root: str, by_rel: dict[str, str], limit: float, explained: list[str] | None
) -> set[str] | None:
    """The files the ignore files of the work tree at root ignore, matched here (gitignore.py) when one of their
    patterns is one git's wildmatch could take minutes over (`*a*a*a*b` and long file names: it tries every split
    at every star), said in explained; None when none is (git decides, as fast as it always does). As `git
    check-ignore` decides: each folder's .gitignore, the repository's info/exclude, the global excludes; a tracked
    file (in the repository's index) is never ignored."""
    import subprocess

    from dramigrate import gitignore

    here = _top_from_root(top, root)
    folders: dict[str, list[gitignore.Pattern]] = {}
    for below in {rel.rpartition(os.sep)[0] for rel in by_rel}:  # each folder once, not each file
        folder = _below(here, below)
        while folder not in folders:
            name = _below(folder, ".gitignore")  # as git names it: from the top of the work tree
            folders[folder] = gitignore.read_patterns(os.path.join(root, name), folder, name)
            if not folder:
                break
            folder = folder.rpartition("/")[0]
    exclude = gitignore.read_patterns(os.path.join(root, ".git", "info", "exclude"), "", ".git/info/exclude", True)
    costly = gitignore.costly([*exclude, *(p for patterns in folders.values() for p in patterns)])
    if costly is None:
        return None
    top_level = [*gitignore.read_patterns(_global_excludes(git, limit), "", "core.excludesFile", True), *exclude]

    def tracked_files(command: list[str], env: dict[str, str]) -> list[str] | None:
        proc = subprocess.run([*command, "ls-files", "-z"], capture_output=True, timeout=limit, env=env, check=False)
        return proc.stdout.decode("utf-8", "surrogateescape").split("\0") if proc.returncode == 0 else None

    from_root = _from_root(top, root, by_rel)
    tracked = _over_own_repository(git, root, limit, tracked_files)
    if tracked is None and os.path.lexists(os.path.join(root, ".git", "index")):
        return None  # which files are tracked is not known: git decides, with its time limit and its notes
    ignores = gitignore.Ignores(top_level, lambda folder: folders.get(folder, []))
    if explained is not None:
        explained.append(  # --verbose prints it after "skipped "
            f"git check-ignore: {costly.source}:{costly.line} holds the pattern {costly.text!r}, two or more runs of"
            " `*`, which git matches in time growing with a power of a file name's length (minutes over a hostile"
            " repository's long names): dramigrate matched the ignore files itself, as git matches them"
        )
    known = set(tracked or ())
    return {by_rel[rel] for path, rel in from_root.items() if path not in known and ignores.ignored(path)}


def _global_excludes(git: str, limit: float) -> str:
    """The global excludes file: core.excludesFile of the user's own git configuration (never the repository's),
    else git's default, $XDG_CONFIG_HOME/git/ignore."""
    import subprocess

    try:
        proc = subprocess.run(
            [git, "config", "--global", "--path", "--get", "core.excludesFile"],
            capture_output=True,
            timeout=limit,
            check=False,
        )
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.decode("utf-8", "surrogateescape").strip()
    except (OSError, subprocess.SubprocessError):
        pass
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "git", "ignore")


GIT_ABOVE: dict[str, str | None] = {}
_UNKNOWN = object()


def git_above(folder: str) -> str | None:
    """The nearest folder at or above `folder` (resolved) holding .git; each folder is looked at once per run."""
    if (known := GIT_ABOVE.get(folder, _UNKNOWN)) is not _UNKNOWN:  # asked for every folder of a walk
        return known  # type: ignore[return-value]
    below: list[str] = []
    found: str | None = None
    while folder not in GIT_ABOVE:
        if os.path.exists(os.path.join(folder, ".git")):
            found = GIT_ABOVE[folder] = folder
            break
        below.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    else:
        found = GIT_ABOVE[folder]
    for f in below:
        GIT_ABOVE[f] = found
    return found


def walk(top: str | os.PathLike[str], onerror: Callable[[OSError], None] | None = None) -> Iterator[WalkStep]:
    """os.walk, top down with the folders in name order, without recursion (any depth), each folder once (by
    device and inode: a bind mount or a loop cannot repeat it); symlinks to folders are listed with the files
    and not followed. Remove names from the yielded folder list to skip them."""
    for here, folders, entries in walk_entries(top, onerror):
        yield here, folders, [name for name, _ in entries]


REGULAR, LINK, OTHER = "f", "l", "o"  # what a folder entry that is not a folder is (walk_entries)


def walk_entries(
    top: str | os.PathLike[str], onerror: Callable[[OSError], None] | None = None
) -> Iterator[tuple[str, list[str], list[tuple[str, str]]]]:
    """walk, with each file's kind as scandir knows it without a stat: REGULAR (not a symlink), LINK, or OTHER
    (a FIFO, a device, a socket, or a type the folder listing does not give)."""
    visited: set[tuple[int, int]] = set()
    stack = [os.fspath(top)]
    loops = may_loop(stack[0])  # without a mount point below top, no folder can come twice: no stat per folder
    while stack:
        here = stack.pop()
        folders: list[str] = []
        files: list[tuple[str, str]] = []
        try:
            if loops:
                st = os.stat(here)
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    continue
                visited.add(key)
            with os.scandir(here) as it:  # sorted straight from the listing (a third of the folders hold no file)
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
            if onerror is not None:
                onerror(exc)
            continue
        if files:
            files.sort()
        if not folders:
            yield here, folders, files
            continue
        folders.sort()
        yield here, folders, files
        prefix = here if here.endswith(os.sep) else here + os.sep  # os.path.join, without its checks per name
        stack.extend([prefix + d for d in reversed(folders)])


def may_loop(top: str) -> bool:
    """Can a walk of top (symlinks not followed) meet a folder twice? Only through a mount point below it (a bind
    mount of a folder above it): False when the mount table says there is none; True when it cannot be read."""
    mounts = _mount_points()
    if mounts is None:
        return True
    inside = os.path.join(os.path.realpath(top), "")
    return any(m.startswith(inside) for m in mounts)


_ESCAPED = re.compile(rb"\\([0-7]{3})")  # mountinfo writes a space, tab, line break and backslash as \ooo


def _mount_points() -> list[str] | None:
    """Every mount point of this process's mount namespace (Linux /proc/self/mountinfo), or None where unknown."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            table = f.read()
    except OSError:
        return None
    points = []
    for line in table.splitlines():
        fields = line.split(b" ")
        if len(fields) < 5:
            return None
        points.append(os.fsdecode(_ESCAPED.sub(lambda m: bytes([int(m[1], 8)]), fields[4])))
    return points or None


def resolve_paths(paths: list[str], known: dict[str, str] | None = None) -> list[str]:
    """Each path made absolute with symlinks followed (as Path.resolve), with one realpath per folder instead of
    one per file: a file that is not a symlink is its resolved folder joined with its name. `known`: paths the
    walk already resolved (Inputs.resolved)."""
    real: dict[str, str] = {}
    out: list[str] = []
    known = known or {}
    for text in paths:
        if (done := known.get(text)) is not None:
            out.append(done)
            continue
        folder, name = os.path.split(text)
        if not name or name in (".", "..") or os.path.islink(text):
            out.append(os.path.realpath(text))
            continue
        top = real.get(folder)
        if top is None:
            top = real[folder] = os.path.realpath(folder or ".")
        out.append(os.path.join(top, name))
    return out


def chart_root(path: Path, known: dict[str, str | None]) -> Path | None:
    """The chart a file belongs to: the nearest folder above it with a Chart.yaml (as given, not resolved). known:
    each folder's answer so far (filled in): pre-commit names thousands of files in the same folders."""
    answer: str | None = None
    asked: list[str] = []
    for folder in map(str, path.parents):
        if folder in known:
            answer = known[folder]
            break
        asked.append(folder)
        if os.path.isfile(os.path.join(folder, "Chart.yaml")):
            answer = folder
            break
    known.update(dict.fromkeys(asked, answer))
    return None if answer is None else Path(answer)


_NO_KINDS: dict[str, str] = {}


def _walk(top: Path, exclude: tuple[str, ...], out: Inputs, seen: set[str]) -> None:
    """Paths are kept as the strings the walk makes (a 20,000-file tree has 30,000 folders): no Path per folder
    or file, and no lookup up the tree per folder."""
    root = top.resolve()
    walked = Walked(root)
    out.walked.append(walked)
    start, real_start = os.fspath(top), os.fspath(root)

    def resolved(folder: str) -> str:
        """The walk enters no symlinked folder: below top, a folder resolves to top's real path plus the rest."""
        return real_start + folder[len(start) :] if folder.startswith(start) else os.path.realpath(folder)

    def unreadable(exc: OSError) -> None:
        name = str(exc.filename or top)
        if dot and name.startswith("." + os.sep):  # spelt as the files are: "a/b", not "./a/b"
            name = name[2:]
        out.errors.append((name, f"cannot read the folder: {exc.strerror}"))

    files, skipped, notes, errors, resolved_of = out.files, out.skipped, out.notes, out.errors, out.resolved
    dot = start == "."
    cut, sep, known = len(start), os.sep, GIT_ABOVE
    # git_above of each folder holding files (kustomize.graph.discover asks it of the inputs' folders), from what the
    # walk sees: the folders with a .git it is inside, innermost last (prefix, git_above), as it goes down and back up
    repositories = [(os.path.join(real_start, ""), git_above(real_start))]
    # no earlier path gave files: a file of this walk can repeat none (the walk lists each once), and `seen` gets
    # them all at the end instead of a lookup and an insert per file
    fresh = not seen
    first = len(files)
    for folder, dirs, entries in walk_entries(top, unreadable):
        # resolved(folder), inline: once per folder of the walk
        real_here = real_start + folder[cut:] if folder.startswith(start) else os.path.realpath(folder)
        prefix = folder if folder.endswith(sep) else folder + sep  # as walk_entries names the subfolders
        if dot:
            prefix = prefix[2:]  # pathlib's spelling of a walk of ".": "a/b.yaml", not "./a/b.yaml"
        kinds = dict(entries) if entries else _NO_KINDS  # name -> kind, built in C (a set comprehension was not)
        while len(repositories) > 1 and not real_here.startswith(repositories[-1][0]):  # left that repository
            repositories.pop()
        if ".git" in dirs or ".git" in kinds:
            if (up := git_above(real_here)) == real_here:
                repositories.append((real_here + sep, up))
        elif entries:  # the answer of the repository it is in, without a lookup up the tree
            known[real_here] = repositories[-1][1]
        if exclude or not SKIP_DIRS.isdisjoint(dirs):
            for d in dirs:
                if d in SKIP_DIRS:
                    skipped.append(f"{prefix}{d}/: a {d} folder, never scanned")
                elif exclude and (pattern := excluded_by(Path(prefix + d), exclude)):
                    skipped.append(f"{prefix}{d}/: excluded by the pattern {pattern!r}")
            keep = [d for d in dirs if d not in SKIP_DIRS and not (exclude and excluded(Path(prefix + d), exclude))]
            walked.pruned.extend(
                Path(resolved(os.path.join(folder, d))) for d in dirs if d not in SKIP_DIRS and d not in keep
            )
            dirs[:] = keep
        if not entries:  # a folder of folders only (a third of a deep tree's folders)
            continue
        if not kinds.keys().isdisjoint(KUSTOMIZATION_NAMES):
            present = [Path(real_here, n) for n in KUSTOMIZATION_NAMES if n in kinds]
            walked.kustomizations.extend(present)
            for linked in [f.name for f in present if kinds[f.name] == LINK and leaves_folder(str(f))]:
                out.errors.append((prefix + linked, LINKED_KUSTOMIZATION))
                entries = [e for e in entries if e[0] != linked]  # said once, as this error (not as a symlink)
            if out.kustomization is not None and kinds[present[0].name] == REGULAR:
                out.kustomization(str(present[0]))
        if "Chart.yaml" in kinds and is_regular(folder + sep + "Chart.yaml"):
            here = Path(folder)
            if _library_chart(here / "Chart.yaml"):
                notes.append(f"{here}: a library chart; it is checked through the charts that use it")
            else:
                out.charts.append(here)
            walked.pruned.extend(Path(resolved(os.path.join(folder, d))) for d in dirs)
            dirs[:] = []
            continue
        real_prefix = real_here if real_here.endswith(sep) else real_here + sep
        for name, kind in entries:
            if kind is REGULAR and fresh and not exclude and name.endswith(MANIFEST_SUFFIXES):  # nearly every file
                text = prefix + name
                files.append(text)
                resolved_of[text] = real_prefix + name
                continue
            if not name.endswith(MANIFEST_SUFFIXES):
                skipped.append(f"{prefix}{name}: not a manifest (only {', '.join(MANIFEST_SUFFIXES)} files are read)")
                continue
            text = prefix + name
            if exclude and (pattern := excluded_by(Path(text), exclude)):
                skipped.append(f"{text}: excluded by the pattern {pattern!r}")
                continue
            if kind != REGULAR:  # a file not read is bad input, named in every report (a CI gate must see it)
                if kind == LINK and not _inside(text, root):
                    errors.append((text, f"a symlink that leaves {top}; skipped (never read)"))
                    continue
                if kind == LINK and ".git" in os.path.relpath(os.path.realpath(text), root).split(os.sep):
                    errors.append((text, "a symlink that leads into a .git folder; skipped (never read)"))
                    continue
                try:
                    mode = os.stat(text).st_mode
                except OSError as exc:
                    errors.append((text, f"a symlink that cannot be followed ({exc.strerror}); skipped"))
                    continue
                if not stat.S_ISREG(mode):
                    errors.append((text, NotRegular(text, file_type(mode)).strerror))
                    continue
            if fresh or text not in seen:
                if not fresh:
                    seen.add(text)
                files.append(text)
                resolved_of[text] = os.path.realpath(text) if kind == LINK else real_prefix + name
        if out.found is not None and len(files) - out.told >= TELL_EVERY:
            out.found(files[out.told :])
            out.told = len(files)
    if fresh:
        seen.update(files[first:])


def leaves_folder(path: str) -> bool:
    """path is a symlink to a file outside path's own folder (kustomize's load restrictor refuses to read it)."""
    if not os.path.islink(path):
        return False
    folder = os.path.realpath(os.path.dirname(path) or ".")
    return os.path.commonpath([folder, os.path.realpath(path)]) != folder


def _inside(path: str, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(root)
    except ValueError:
        return False
    return True


def _library_chart(chart_yaml: Path) -> bool:
    """Chart.yaml says `type: library` (helm template refuses to render such a chart on its own). A Chart.yaml that
    is a symlink out of its chart is not read (what it points to would decide whether the chart is checked): the
    chart is then checked, and refused by name (sandbox.outside_links); nor is anything but a regular file."""
    from dramigrate.findings import InputError
    from dramigrate.limits import read_regular

    if os.path.islink(chart_yaml) and not _inside(str(chart_yaml), chart_yaml.parent.resolve()):
        return False
    try:
        text = read_regular(str(chart_yaml)).decode("utf-8", errors="replace")
    except (OSError, InputError):
        return False
    return any(
        line.split("#", 1)[0].strip().replace(" ", "") in ("type:library", "type:'library'", 'type:"library"')
        for line in text.splitlines()
    )
