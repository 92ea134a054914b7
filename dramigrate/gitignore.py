"""gitignore(5) patterns matched in time bounded by the pattern and the path, not exponential in the stars.

git's own matcher (wildmatch) tries every split of the name at each `*`: a repository's `.gitignore` holding
`*a*a*a*a*a*a*b` kept `git check-ignore` busy for minutes over a few hundred long file names, and the run waited
for git's time limit twice. Here a `*` (within a folder name) and a `**` (over folders) each keep one place to go
back to, the classic wildcard match: each unit of the path is tried against each unit of the pattern at most once
per star, so a pattern of p units over a path of n costs O(p * n).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# a unit of a glob: STAR, or a test of one character
Unit = object | Callable[[str], bool]
STAR = object()  # `*`: any run of characters within a folder name
FOLDERS = object()  # a `**` segment: any run of folders (none too)
_STARS = re.compile(r"\*+")
_CLASSES: dict[str, Callable[[str], bool]] = {
    "alnum": str.isalnum,
    "alpha": str.isalpha,
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "digit": lambda c: "0" <= c <= "9",
    "graph": lambda c: c.isprintable() and c != " ",
    "lower": str.islower,
    "print": str.isprintable,
    "punct": lambda c: c.isprintable() and not c.isalnum() and c != " ",
    "space": str.isspace,
    "upper": str.isupper,
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


def _never(_c: str) -> bool:
    return False


def _bracket(glob: str, i: int) -> tuple[Callable[[str], bool], int]:
    """The test of the bracket expression starting at glob[i] (`[`) and the index after it; one that never matches
    when it does not close (as wildmatch, which then matches nothing)."""
    j = i + 1
    negated = j < len(glob) and glob[j] in "!^"
    j += negated
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    tests: list[Callable[[str], bool]] = []
    first = True
    while j < len(glob) and (glob[j] != "]" or first):
        first = False
        if glob.startswith("[:", j) and (end := glob.find(":]", j + 2)) != -1:
            tests.append(_CLASSES.get(glob[j + 2 : end], _never))
            j = end + 2
            continue
        c = glob[j]
        if c == "\\" and j + 1 < len(glob):
            j += 1
            c = glob[j]
        if j + 2 < len(glob) and glob[j + 1] == "-" and glob[j + 2] != "]":
            hi = glob[j + 2]
            if hi == "\\" and j + 3 < len(glob):
                hi = glob[j + 3]
                j += 1
            ranges.append((c, hi))
            j += 3
            continue
        singles.add(c)
        j += 1
    if j >= len(glob):
        return _never, len(glob)

    def test(c: str) -> bool:
        hit = c in singles or any(lo <= c <= hi for lo, hi in ranges) or any(t(c) for t in tests)
        return hit != negated and c != "/"

    return test, j + 1


def units(glob: str) -> list[Unit]:
    """The units of a glob for one name: STAR for each run of `*`, a test of one character for the rest."""
    out: list[Unit] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            if not out or out[-1] is not STAR:
                out.append(STAR)
            i += 1
        elif c == "?":
            out.append(lambda ch: ch != "/")
            i += 1
        elif c == "[":
            test, i = _bracket(glob, i)
            out.append(test)
        else:
            if c == "\\" and i + 1 < len(glob):
                i += 1
                c = glob[i]
            out.append(c.__eq__)
            i += 1
    return out


def _match(pattern: list[object], text: list[str] | str, one: Callable[[object, str], bool], star: object) -> bool:
    """Whether pattern matches all of text: one(unit, item) tests an item, `star` matches any run of items. The
    wildcard match with one place to go back to: the last star seen, one item further each time."""
    p = t = 0
    back, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] is star:
            back, mark = p, t
            p += 1
        elif p < len(pattern) and one(pattern[p], text[t]):
            p += 1
            t += 1
        elif back >= 0:
            p, mark = back + 1, mark + 1
            t = mark
        else:
            return False
    return all(u is star for u in pattern[p:])


def _char(unit: object, c: str) -> bool:
    return unit(c)  # type: ignore[operator]


def name_matches(glob_units: list[Unit], name: str) -> bool:
    return _match(glob_units, name, _char, STAR)


def _segment(unit: object, name: str) -> bool:
    return name_matches(unit, name)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Pattern:
    """One line of an ignore file."""

    base: str  # the folder of its .gitignore, relative to the work tree ("" for the top and the other files)
    negated: bool
    folder_only: bool  # written with a trailing `/`: matches folders only
    name: list[Unit] | None  # no `/` in it: matched against the last name of the path, in any folder
    path: list[object] | None  # matched against the path below base, one unit per folder (FOLDERS for `**`)
    source: str
    line: int
    text: str

    def matches(self, rel: str, folder: bool) -> bool:
        """rel: a path relative to the work tree, below self.base."""
        if self.folder_only and not folder:
            return False
        if self.name is not None:
            return name_matches(self.name, rel.rpartition("/")[2])
        below = rel[len(self.base) + 1 :] if self.base else rel
        return _match(self.path or [], below.split("/"), _segment, FOLDERS)


def _trimmed(line: str) -> str:
    """The line without its trailing spaces, but for one a backslash quotes."""
    end = len(line)
    while end and line[end - 1] == " ":
        if end >= 2 and line[end - 2] == "\\":
            break
        end -= 1
    return line[:end]


def parse(text: str, base: str, source: str) -> list[Pattern]:
    """The patterns of an ignore file's text, as git reads them: blank lines and `#` comments skipped, trailing
    spaces trimmed unless quoted, `!` negates, `\\#` and `\\!` start a pattern literally, a trailing `/` matches
    folders only, a `/` elsewhere anchors the pattern at the file's folder."""
    out: list[Pattern] = []
    for n, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        line = _trimmed(raw.removesuffix("\r"))
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):
            line = line[1:]
        folder_only = line.endswith("/")
        glob = line.rstrip("/") if folder_only else line
        if not glob:
            continue
        if "/" not in glob:
            out.append(Pattern(base, negated, folder_only, units(glob), None, source, n, raw))
            continue
        parts = glob.removeprefix("/").split("/")
        path: list[object] = [FOLDERS if p == "**" else units(p) for p in parts]
        if parts[-1] == "**":  # `abc/**`: everything inside abc, not abc itself
            path[-1:] = [[STAR], FOLDERS]
        out.append(Pattern(base, negated, folder_only, None, path, source, n, raw))
    return out


def costly(patterns: list[Pattern]) -> Pattern | None:
    """The first pattern git's wildmatch would match in time growing with a power of the name's length: two or
    more runs of `*` (`**` included), each of which it tries at every place."""
    return next((p for p in patterns if len(_STARS.findall(p.text)) >= 2), None)


class Ignores:
    """What the ignore files of one work tree say: the global excludes, the repository's info/exclude and each
    folder's .gitignore, in git's order (a later match wins, a deeper .gitignore over the ones above it)."""

    def __init__(self, top_level: list[Pattern], read: Callable[[str], list[Pattern]]) -> None:
        self._top_level = top_level
        self._read = read  # folder (relative, "" for the top) -> its .gitignore's patterns
        self._folders: dict[str, list[Pattern]] = {}
        self._excluded: dict[str, bool] = {}

    def _patterns(self, folder: str) -> Iterator[Pattern]:
        """The patterns that apply to what the folder holds, lowest precedence first."""
        yield from self._top_level
        parts = folder.split("/") if folder else []
        for i in range(len(parts) + 1):
            here = "/".join(parts[:i])
            if here not in self._folders:
                self._folders[here] = self._read(here)
            yield from self._folders[here]

    def _says(self, rel: str, folder: bool) -> bool:
        parent = rel.rpartition("/")[0]
        hit = False
        for p in self._patterns(parent):
            if p.matches(rel, folder):
                hit = not p.negated
        return hit

    def _folder_excluded(self, folder: str) -> bool:
        """A folder git leaves out: itself, or one above it (nothing below an excluded folder comes back)."""
        unknown: list[str] = []  # from the folder up to the first one known (no recursion: 990 nested folders)
        here = folder
        while here and here not in self._excluded:
            unknown.append(here)
            here = here.rpartition("/")[0]
        excluded = self._excluded.get(here, False)
        for f in reversed(unknown):
            excluded = self._excluded[f] = excluded or self._says(f, True)
        return excluded

    def ignored(self, rel: str) -> bool:
        """Whether git ignores the file at rel (a path relative to the work tree, with `/`)."""
        return self._folder_excluded(rel.rpartition("/")[0]) or self._says(rel, False)


def read_patterns(path: str, base: str, source: str, follow: bool = False) -> list[Pattern]:
    """The patterns of an ignore file: none when it is missing, not a regular file (a FIFO is never opened) or
    unreadable. A symlink is followed only when follow is on: git reads no .gitignore of the work tree through one
    (since 2.32), its info/exclude and the global excludes file it does."""
    try:
        if not stat.S_ISREG((os.stat if follow else os.lstat)(path).st_mode):
            return []
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
        with os.fdopen(fd, "rb") as f:
            data = f.read(8 * 2**20)
    except OSError:
        return []
    return parse(data.decode("utf-8", "surrogateescape"), base, source)
