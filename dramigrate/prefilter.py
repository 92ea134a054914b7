"""A grep pre-filter: which files of a large run can hold anything dramigrate reports, without reading them here.

`grep` reads bytes several times faster than Python opens and scans them. Its patterns (whole file as one
record with -z) are a superset of triage.may_matter: a file grep leaves out is one may_matter would refuse too,
so skipping it changes no output. Two passes: the words (kinds, device names and domains) as fixed strings,
which grep matches at the speed of reading; then, on the files without them, the limits/requests section
pattern, which needs PCRE (a PCRE alternation of many words is several times slower than reading).
Everything grep lets through still goes through may_matter and the parse, which stay the final word; without a
GNU grep with -P, or when grep fails on a batch, every file of it goes to Python as before. Files with a NUL
byte (UTF-16, binary) always go to Python too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from dramigrate.findings import InputError
from dramigrate.limits import read_regular
from dramigrate.rules import RuleSet
from dramigrate.triage import _ALWAYS, _literals, has_word, literal_words

if TYPE_CHECKING:
    from dramigrate.ahead import Ahead

MIN_FILES = 400  # below this, starting grep costs more than it saves
BATCH = 1500  # files per grep command line (well under ARG_MAX)
TIMEOUT = 120.0

# A limits/requests key with a domain-qualified key that is not native (*.kubernetes.io/...): on its line, or
# on a more indented line within the 40 that follow (the window may hold blank, comment and indented lines
# only: a line at column 0 ends every section). A superset of triage._SECTION and its look-ahead (the key
# need not start its line: PCRE then finds candidates by the word instead of trying every line start).
_SECTION = (
    rb"(?:limits|requests|extra_resource_limits|extra_resource_guarantees)[\"']?"
    rb"[ \t\r\f\v]*:(?:[^\n]*/|[^\n]*\n(?:(?:[ \t\r\f\v#][^\n]*)?\n){0,39}?"
    rb"[ \t\r\f\v]+[\"']?(?!(?:[-a-z0-9.]*\.)?kubernetes\.io/)[a-z0-9][-a-z0-9.]*/)"
)


# triage._ALWAYS as fixed strings, which grep -F matches at the speed of reading (an extended regex of them and the
# device words read at a fifth of that): `claims\s*:` as `claims`, so a file where grep finds only that is read by
# Python (Grep._words_in), as a file where it finds only a needle is.
_ALWAYS_FIXED = (b"resourceClaims", b"claims", b"ResourceQuota", b"LimitRange", b"ClusterQueue", b"NodePool", b"{{")
_CLAIMS = b"claims"
assert _ALWAYS.pattern == rb"resourceClaims|claims\s*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|\{\{", (
    "prefilter._ALWAYS_FIXED must say what triage._ALWAYS says"
)


def pattern(rules: RuleSet) -> bytes:
    """The whole filter as one PCRE (what the two passes find together)."""
    return b"|".join((_ALWAYS.pattern, _literals(rules).pattern, _SECTION))


def words(rules: RuleSet) -> list[bytes]:
    """The first pass: triage._ALWAYS and the rule packs' device names and domains, as fixed strings."""
    return [*_ALWAYS_FIXED, *(w.encode() for w in literal_words(rules))]


@cache
def _grep() -> str | None:
    """A grep that does PCRE on NUL-separated records (GNU grep), or None."""
    grep = shutil.which("grep")
    if grep is None:
        return None
    try:
        probe = subprocess.run(
            [grep, "-qzP", r"(?<![^\n])b\n(?:x\n){0,3}?c", "-"],
            input=b"a\nb\nx\nc\n",
            capture_output=True,
            timeout=10,
            env=_ENV,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return grep if probe.returncode == 0 else None


_ENV = {**os.environ, "LC_ALL": "C"}  # bytes, not characters: no encoding errors, and faster


class _Failed(Exception):
    """A grep failed or timed out: Python decides the whole batch."""


def _outputs(procs: list[subprocess.Popen[bytes]]) -> list[bytes]:
    out: list[bytes] = []
    try:
        for proc in procs:
            found, _ = proc.communicate(timeout=TIMEOUT)
            if proc.returncode not in (0, 1):  # an unreadable file, a PCRE limit
                raise _Failed
            out.append(found)
    except subprocess.TimeoutExpired as exc:
        for proc in procs:
            proc.kill()
            proc.communicate()
        raise _Failed from exc
    return out


def _names(listed: bytes) -> set[str]:
    """The files of a `grep -lZ` output."""
    return {n.decode("utf-8", "surrogateescape") for n in listed.split(b"\0") if n}


@dataclass
class Found:
    candidates: set[str]  # the files that may matter (a superset of the files triage.may_matter keeps)
    needles: set[str]  # a superset of the files holding any of the needles (exact bytes)


class Grep:
    """The pre-filter running in the background: grep reads the files while Python does other work (the kustomize
    scan); result() waits for it. One pass finds both the words and the needles (the autoscaler check's byte
    strings): `grep -o` prints each match, so a file holding only needles is told apart from one holding words."""

    def __init__(self, grep: str, rules: RuleSet, needles: Sequence[bytes], ahead: Ahead | None = None) -> None:
        self.rules = rules
        self.needles = set(needles)
        self.unsure = self.needles | {_CLAIMS}  # found alone, they make a file Python reads (_words_in)
        self.ahead = ahead  # lints the files of each batch grep keeps while the walk and the scan go on
        fixed = b"\n".join(dict.fromkeys([*words(rules), *needles]))  # one string a line: grep -F's alternatives
        common = ["-D", "skip", "-d", "skip", "-s"]

        def start(flags: str, pat: str | bytes, batch: list[str]) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [grep, flags, *common, "-e", pat, "--", *batch],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_ENV,
            )

        def one(batch: list[str]) -> Found:
            try:
                # the words and needles, and files with a NUL byte (UTF-16, binary: Python decides those)
                matched, nul = _outputs([start("-oaHZzF", fixed, batch), start("-lZaP", r"\x00", batch)])
                found = self._sorted(matched)
                found.candidates |= _names(nul)
                found.needles |= _names(nul)
                rest = [f for f in batch if f not in found.candidates]
                if rest:
                    found.candidates |= _names(_outputs([start("-lZzP", _SECTION, rest)])[0])
            except (_Failed, OSError):
                found = Found(set(batch), set(batch))
            if self.ahead is not None:
                self.ahead.feed([f for f in batch if f in found.candidates])
            return found

        self._one = one
        self._pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
        self._futures: list[Future[Found]] = []

    def add(self, files: list[str]) -> None:
        """Start grep on more files (in batches of at most BATCH)."""
        self._futures.extend(self._pool.submit(self._one, files[i : i + BATCH]) for i in range(0, len(files), BATCH))

    def _sorted(self, matched: bytes) -> Found:
        """Files with a word are candidates; files with a needle, or with a word an occurrence of a needle could
        hide under, may hold a needle. A file with needles or `claims` only is read here: a word could hide under a
        needle, and `claims` is a word only before a colon."""
        texts: dict[bytes, set[bytes]] = {}
        parts = matched.split(b"\0")
        for name, text in zip(parts[0::2], parts[1::2], strict=False):
            texts.setdefault(name, set()).add(text)
        found = Found(set(), set())
        for raw_name, seen in texts.items():
            name = raw_name.decode("utf-8", "surrogateescape")
            word = any(t not in self.unsure for t in seen)
            if word or self._words_in(name):
                found.candidates.add(name)
            if not seen.isdisjoint(self.needles) or any(_overlap(t, n) for t in seen for n in self.needles):
                found.needles.add(name)
        return found

    def _words_in(self, name: str) -> bool:
        """A file grep found needles or `claims` in only: does it hold a word (triage._ALWAYS or a device word, as
        Python reads them)?"""
        try:
            raw = read_regular(name)
        except (OSError, InputError):
            return True  # Python decides it, and says why it cannot be read
        return _ALWAYS.search(raw) is not None or has_word(raw, self.rules)

    def result(self) -> Found:
        try:
            out = Found(set(), set())
            for future in self._futures:
                found = future.result()
                out.candidates |= found.candidates
                out.needles |= found.needles
            return out
        finally:
            self._pool.shutdown()


@cache
def _overlap(a: bytes, b: bytes) -> bool:
    """Can an occurrence of a and one of b share a byte in some text (one holds the other, or one's end is the
    other's start)? grep -o prints leftmost-longest matches without overlaps, so such a pair may hide one."""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) for k in range(1, len(b))) or any(b.endswith(a[:k]) for k in range(1, len(a)))


class Stream:
    """The pre-filter fed as the folder walk finds files: each full batch goes to grep at once, so grep reads
    while the walk (and then the kustomize scan) goes on. No grep for a run of fewer than MIN_FILES files."""

    def __init__(self, rules: RuleSet, needles: Sequence[bytes] | None = None, ahead: Ahead | None = None) -> None:
        self.rules = rules
        self.ahead = ahead  # started (its workers forked) right before grep's threads start
        self.needles = needles  # None: the autoscaler check's, taken when grep starts (a large run only)
        self.pending: list[str] = []
        self.total = 0
        self.grep: Grep | None = None
        self.off = False  # no usable grep

    def add(self, files: list[str]) -> None:
        self.pending.extend(files)
        self.total += len(files)
        if len(self.pending) >= BATCH:  # full batches only: a remainder of a few files would cost a grep of its own
            full = len(self.pending) - len(self.pending) % BATCH
            self._send(self.pending[:full])
            self.pending = self.pending[full:]

    def finish(self) -> Grep | None:
        """The running pre-filter over every file added, or None (no grep, or too few files)."""
        if self.pending and (self.grep is not None or self.total >= MIN_FILES):
            self._send(self.pending)
        self.pending = []
        return self.grep

    def _send(self, files: list[str]) -> None:
        if self.grep is None and not self.off:
            grep = _grep()
            if grep is None:
                self.off = True
            else:
                if self.needles is None:
                    from dramigrate.cutover import needles

                    self.needles = needles()
                ahead = self.ahead if self.ahead is not None and self.ahead.start() else None
                self.grep = Grep(grep, self.rules, self.needles, ahead)
        if self.grep is not None:
            self.grep.add(files)
