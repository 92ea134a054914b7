"""A grep pre-filter: which files of a large run can hold anything dramigrate reports, without reading them here.

`grep` reads bytes several times faster than Python opens and scans them. Its patterns are a superset of
triage.may_matter: a file grep leaves out is one may_matter would refuse too, so skipping it changes no output.
Two passes: the words (kinds, device names and domains), the section keys and a NUL byte as literal texts (one
extended regex alternating them, which grep matches at about the speed of reading); then, on the files without
words that hold a section key, the limits/requests section pattern (whole file as one record with -z), which
needs PCRE (a PCRE alternation of many words is several times slower than reading). Everything grep lets through
still goes through may_matter and the parse, which stay the final word; without a GNU grep with -P, or when grep
fails on a batch, every file of it goes to Python as before. Files with a NUL byte (UTF-16, binary) always go to
Python: -z would cut them into records.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from dramigrate import lifetime
from dramigrate.findings import InputError
from dramigrate.limits import read_regular
from dramigrate.rules import RuleSet
from dramigrate.triage import (
    _ALWAYS,
    _BINARY_TAG,
    _NAME_ESCAPE,
    _literals,
    has_word,
    literal_words,
    spelled_by_escape,
    spelled_by_tag,
)

if TYPE_CHECKING:
    from dramigrate.ahead import Ahead

MIN_FILES = 400  # below this, starting grep costs more than it saves
# Files per grep command line. Each grep has a start of its own (exec, its pattern set, PCRE's JIT) and a thread
# hand-off here: on a 20,000-file tree, 3,000 a command line took 5% less CPU than 1,500, and the first batch still
# starts early in the walk. ARG_CHARS bounds a command line's names (a deep tree's long paths: fewer per grep), far
# under Linux's 2 MiB ARG_MAX even at 4 bytes a character.
BATCH = 3000
ARG_CHARS = 384 * 1024
TIMEOUT = 120.0
MAX_OUTPUT = 16 * 2**20  # bytes a grep of one batch may print (typically under 100 KiB)

# A limits/requests key with a domain-qualified key that is not native (*.kubernetes.io/...): on its line, or
# on a more indented line within the 40 that follow (the window may hold blank, comment and indented lines
# only: a line at column 0 ends every section). A superset of triage._SECTION and its look-ahead (the key
# need not start its line: PCRE then finds candidates by the word instead of trying every line start).
_SECTION = (
    rb"(?:limits|requests|extra_resource_limits|extra_resource_guarantees)[\"']?"
    rb"[ \t\r\f\v]*:(?:[^\n]*/|[^\n]*\n(?:(?:[ \t\r\f\v#][^\n]*)?\n){0,39}?"
    rb"[ \t\r\f\v]+[\"']?(?!(?:[-a-z0-9.]*\.)?kubernetes\.io/)[A-Za-z0-9][-A-Za-z0-9.]*/)"
)


# triage._ALWAYS as literal texts, which grep matches at about the speed of reading (an extended regex holding
# `claims\s*:` read at a fifth of that): `claims\s*:` as `claims`, so a file where grep finds only that is read by
# Python (Grep._words_in), as a file where it finds only a needle is.
_ALWAYS_FIXED = (b"resourceClaims", b"claims", b"ResourceQuota", b"LimitRange", b"ClusterQueue", b"NodePool", b"{{")
_CLAIMS = b"claims"
# `~1` is a `/` in a JSON pointer (a JSON 6902 patch's path), which kustomize.fields.mentions_device reads as one: a
# file grep finds neither a word nor this in names no device resource even as a pointer (Grep.device_free)
POINTER = b"~1"
# Every match of _SECTION holds one of these: only the files the word pass finds one in (two in five files of a
# repository: its workloads) are read again by the section pass.
SECTION_KEYS = (b"limits", b"requests", b"extra_resource_guarantees")
assert _SECTION.startswith(rb"(?:limits|requests|extra_resource_limits|extra_resource_guarantees)"), (
    "prefilter.SECTION_KEYS must hold a word of every key _SECTION starts with"
)
assert _ALWAYS.pattern == rb"resourceClaims|claims\s*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|\{\{", (
    "prefilter._ALWAYS_FIXED must say what triage._ALWAYS says"
)


def pattern(rules: RuleSet) -> bytes:
    """The whole filter as one PCRE (what the two passes find together)."""
    return b"|".join((_ALWAYS.pattern, _literals(rules).pattern, _SECTION))


def words(rules: RuleSet) -> list[bytes]:
    """The first pass: triage._ALWAYS, the rule packs' device names and domains and the escapes that can spell a
    character of a name, as literal texts."""
    return [*_ALWAYS_FIXED, *(w.encode() for w in literal_words(rules)), *ESCAPES]


# triage._NAME_ESCAPE: the escapes as literal texts, and a backslash that ends its line (before a line feed, or a
# carriage return and a line feed), which grep -o prints as the backslash alone (a word: the file is a candidate)
ESCAPES = (b"\\x", b"\\u", b"\\U", b"\\/")
_CONTINUED = b"|\\\\$|\\\\\r$"
assert _NAME_ESCAPE.pattern == rb"\\(?:[xuU/]|\r?\n)", "prefilter.ESCAPES must say what triage._NAME_ESCAPE says"
# triage._BINARY_TAG as an extended regex (grep -o prints what it matched: a word, the file is a candidate)
_BINARY = b"|!([^[:space:]!]*!)?[^[:space:]!]*(binary|%)|%TAG"
assert _BINARY_TAG.pattern == rb"!(?:[^\s!]*!)?[^\s!]*(?:binary|%)|%TAG", "prefilter._BINARY must say what it says"


def word_pass(rules: RuleSet, needles: Sequence[bytes]) -> bytes:
    """The first pass's pattern, one extended regex for `grep -E -f -` (read from stdin: a NUL byte cannot be passed
    as an argument): the words, the needles, the section keys, POINTER and NUL as literal texts, a backslash that
    ends its line, and a tag that may be `!!binary`."""
    texts = alternation(dict.fromkeys([*words(rules), *needles, *SECTION_KEYS, POINTER, NUL]))
    return texts[:-1] + _CONTINUED + _BINARY + b"\n"


_ERE_SPECIAL = re.compile(rb"[][.\\*+?{}()|^$]")


def alternation(texts: Iterable[bytes]) -> bytes:
    """One POSIX extended regex (a line, for `grep -E -f -`) that matches any of texts literally. GNU grep reads a
    single alternation of literals with its DFA: a sixth less CPU than the same texts one a line (`-F`, or `-E`
    with a pattern a line), which it matches with its multi-string search; `-o` prints the same leftmost-longest
    matches either way. Only the characters special in an extended regex are escaped (a backslash before a letter
    or a digit has a meaning of its own in GNU grep)."""
    return b"|".join(_ERE_SPECIAL.sub(rb"\\\g<0>", t) for t in texts) + b"\n"


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


def _output(proc: subprocess.Popen[bytes], patterns: bytes = b"") -> bytes:
    """What the grep printed, given patterns on its standard input. A grep that prints more than MAX_OUTPUT (-o on a
    file of NUL bytes or `{{`) or runs past TIMEOUT is killed."""
    assert proc.stdin is not None and proc.stdout is not None
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    try:
        proc.stdin.write(patterns)  # a few hundred bytes, which grep reads before any file
        proc.stdin.close()
        found = proc.stdout.read(MAX_OUTPUT + 1)
        if len(found) > MAX_OUTPUT:
            proc.kill()
        proc.stdout.close()
        proc.wait()
    except OSError as exc:  # grep died before reading its patterns
        proc.kill()
        proc.wait()
        raise _Failed from exc
    finally:
        timer.cancel()
    if proc.returncode not in (0, 1):  # an unreadable file, a PCRE limit, killed
        raise _Failed
    return found


NUL = b"\0"
# What a text `grep -o` printed says of its file: a word (a candidate), a text a word could hide under (Python reads
# the file), a section key or a text one could hide under (the section pass), a needle or a text one could hide under.
_WORD, _UNSURE, _KEY, _NEEDLE, _POINTER = 1, 2, 4, 8, 16
# One line of `grep -oHZ`: the file name, a NUL, the text matched (no line break in it), a line break.
_MATCH = re.compile(rb"([^\0]*)\0([^\n]*)\n")


def _names(listed: bytes) -> set[str]:
    """The files of a `grep -lZ` output."""
    return {n.decode("utf-8", "surrogateescape") for n in listed.split(b"\0") if n}


@dataclass
class Found:
    candidates: set[str]  # the files that may matter (a superset of the files triage.may_matter keeps)
    needles: set[str]  # a superset of the files holding any of the needles (exact bytes)
    pointers: set[str] = field(default_factory=set)  # a superset of the files holding POINTER


class Grep:
    """The pre-filter running in the background: grep reads the files while Python does other work (the kustomize
    scan); result() waits for it. One pass finds both the words and the needles (the autoscaler check's byte
    strings): `grep -o` prints each match, so a file holding only needles is told apart from one holding words."""

    def __init__(self, grep: str, rules: RuleSet, needles: Sequence[bytes], ahead: Ahead | None = None) -> None:
        self.rules = rules
        self.needles = set(needles)
        self.keys = set(SECTION_KEYS)
        # found alone, they make a file Python reads (_words_in): a word could hide under them
        self.unsure = (
            self.needles | {_CLAIMS, POINTER} | {k for k in self.keys if any(_hides(k, w) for w in words(rules))}
        )
        self.ahead = ahead  # lints the files of each batch grep keeps while the walk and the scan go on
        self._meanings: dict[bytes, int] = {}  # _meaning's answers (grep's threads share them: each is the same)
        texts = word_pass(rules, needles)
        common = ["-D", "skip", "-d", "skip", "-s"]

        def start(flags: str, patterns: list[str], batch: list[str]) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [grep, flags, *common, *patterns, "--", *batch],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_ENV,
            )

        def one(batch: list[str]) -> Found:
            try:
                # the words, the needles, the section keys and NUL bytes, line by line (none holds a line break)
                found, keyed = self._sorted(_output(start("-oaHZE", ["-f", "-"], batch), texts))
                if self.ahead is not None:  # the workers start on these while the section pass reads the rest
                    self.ahead.feed([f for f in batch if f in found.candidates])
                rest = [f for f in batch if f in keyed]
                if rest:
                    found.candidates |= _names(_output(start("-lZzP", ["-e", _SECTION], rest)))
            except (_Failed, OSError):
                found = Found(set(batch), set(batch), set(batch))
            if self.ahead is not None:  # the section pass's (the files fed already are not run twice: Ahead.feed)
                self.ahead.feed([f for f in batch if f in found.candidates])
            return found

        self._one = one
        self._pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
        self._futures: list[Future[Found]] = []
        self._batch_of: dict[str, Future[Found]] = {}  # each file given to grep -> its batch
        self._done: dict[Future[Found], Found] = {}  # the batches device_free found done, with what grep found

    def add(self, files: list[str]) -> None:
        """Start grep on more files (in batches of at most BATCH files and ARG_CHARS characters of names)."""
        for batch in _batches(files):
            future = self._pool.submit(self._one, batch)
            self._futures.append(future)
            self._batch_of.update(dict.fromkeys(batch, future))

    def device_free(self, path: str) -> bool:
        """grep has read this file (its batch is done, without waiting for it) and found in it no device word, no
        word one could hide under and no POINTER: it names no device resource (kustomize.fields.mentions_device)."""
        future = self._batch_of.get(path)
        if future is None:
            return False
        found = self._done.get(future)  # asked for each file the kustomize scan meets: each future's locks once
        if found is None:
            if not future.done() or future.exception() is not None:
                return False
            found = self._done[future] = future.result()
        return path not in found.candidates and path not in found.pointers

    def _sorted(self, matched: bytes) -> tuple[Found, set[str]]:
        """Files with a word or a NUL byte are candidates; files with a needle, or with a word an occurrence of a
        needle could hide under, may hold a needle. A file with needles or `claims` only is read here: a word could
        hide under a needle, and `claims` is a word only before a colon. Second: the other files with a section key,
        or with a text one could hide under, for the section pass."""
        texts: dict[bytes, int] = {}
        meaning = self._meaning
        for m in _MATCH.finditer(matched):
            texts[m[1]] = texts.get(m[1], 0) | meaning(m[2])
        found, keyed = Found(set(), set()), set()
        for raw_name, seen in texts.items():
            name = raw_name.decode("utf-8", "surrogateescape")
            if seen & _WORD or (seen & _UNSURE and self._words_in(name)):
                found.candidates.add(name)
            elif seen & _KEY:
                keyed.add(name)
            if seen & _NEEDLE:
                found.needles.add(name)
            if seen & _POINTER:
                found.pointers.add(name)
        return found, keyed

    def _meaning(self, text: bytes) -> int:
        """What a text grep printed says of its file (_WORD, _UNSURE, _KEY, _NEEDLE bits), worked out once per text."""
        bits = self._meanings.get(text)
        if bits is None:
            bits = self._meanings[text] = (
                (_WORD if text not in self.unsure and text not in self.keys else 0)
                | (_UNSURE if text in self.unsure else 0)
                | (_KEY if text in self.keys or any(_hides(text, k) for k in self.keys) else 0)
                | (_NEEDLE if text in self.needles or any(_hides(text, n) for n in self.needles) else 0)
                | (_POINTER if _hides(text, POINTER) else 0)
            )
        return bits

    def _words_in(self, name: str) -> bool:
        """A file grep found needles or `claims` in only: does it hold a word (triage._ALWAYS or a device word, as
        Python reads them)?"""
        try:
            raw = read_regular(name)
        except (OSError, InputError):
            return True  # Python decides it, and says why it cannot be read
        return (
            _ALWAYS.search(raw) is not None
            or has_word(raw, self.rules)
            or spelled_by_escape(raw)
            or spelled_by_tag(raw)
        )

    def result(self) -> Found:
        try:
            out = Found(set(), set())
            for future in self._futures:
                found = lifetime.result(future)  # a stop given to a grep thread is taken at once
                out.candidates |= found.candidates
                out.needles |= found.needles
            return out
        finally:
            self._pool.shutdown()


def _batches(files: list[str]) -> Iterator[list[str]]:
    """files cut into grep command lines: at most BATCH files, and at most ARG_CHARS characters of names unless one
    name alone is longer."""
    i = 0
    while i < len(files):
        batch = files[i : i + BATCH]
        while len(batch) > 1 and sum(map(len, batch)) + len(batch) > ARG_CHARS:
            batch = batch[: len(batch) // 2]
        yield batch
        i += len(batch)


@cache
def _hides(a: bytes, b: bytes) -> bool:
    """Can an occurrence of a that grep prints hide one of b (b inside it, or b starting inside it)? grep -o prints
    leftmost-longest matches without overlaps."""
    return b in a or any(a.endswith(b[:k]) for k in range(1, len(b)))


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
        if self.grep is None and not self.off and self.total >= MIN_FILES:
            # a large run: grep and the workers start now, on the other core, not once the walk has found BATCH files
            self._send(self.pending)
            self.pending = []
        elif len(self.pending) >= BATCH:  # full batches only: a remainder of a few files would cost a grep of its own
            full = len(self.pending) - len(self.pending) % BATCH
            self._send(self.pending[:full])
            self.pending = self.pending[full:]

    def finish(self) -> Grep | None:
        """The running pre-filter over every file added, or None (no grep, or too few files)."""
        if self.pending and (self.grep is not None or self.total >= MIN_FILES):
            self._send(self.pending)
        self.pending = []
        if self.grep is not None and self.grep.ahead is not None:
            self.grep.ahead.flush()
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
