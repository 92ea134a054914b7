"""A grep pre-filter: which files of a large run can hold anything dramigrate reports, without reading them here.

`grep` reads bytes several times faster than Python opens and scans them. Its patterns (whole file as one
record with -z) are a superset of triage.may_matter: a file grep leaves out is one may_matter would refuse too,
so skipping it changes no output. Two passes: the words (kinds, device names and domains) as an extended regex,
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
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from dramigrate.rules import RuleSet
from dramigrate.triage import _ALWAYS, _literals, literal_words

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


# triage._ALWAYS as an extended regex (with -z, [[:space:]] spans lines as Python's \s does).
_ALWAYS_ERE = "resourceClaims|claims[[:space:]]*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|[{][{]"
assert _ALWAYS.pattern == rb"resourceClaims|claims\s*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|\{\{", (
    "prefilter._ALWAYS_ERE must say what triage._ALWAYS says"
)


def pattern(rules: RuleSet) -> bytes:
    """The whole filter as one PCRE (what the two passes find together)."""
    return b"|".join((_ALWAYS.pattern, _literals(rules).pattern, _SECTION))


def words(rules: RuleSet) -> str:
    """The first pass: triage._ALWAYS and the rule packs' device names and domains, as an extended regex."""
    special = set(".[]()*+?{}|$\\")
    ere = ["".join(f"[{c}]" if c in special else "\\^" if c == "^" else c for c in w) for w in literal_words(rules)]
    return "|".join([_ALWAYS_ERE, *ere])


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


def _listed(procs: list[subprocess.Popen[bytes]]) -> set[str]:
    out: set[str] = set()
    try:
        for proc in procs:
            found, _ = proc.communicate(timeout=TIMEOUT)
            if proc.returncode not in (0, 1):  # an unreadable file, a PCRE limit
                raise _Failed
            out.update(n.decode("utf-8", "surrogateescape") for n in found.split(b"\0") if n)
    except subprocess.TimeoutExpired as exc:
        for proc in procs:
            proc.kill()
            proc.communicate()
        raise _Failed from exc
    return out


def candidates(files: list[str], rules: RuleSet) -> set[str] | None:
    """The files that may matter (a superset), or None when there is no usable grep or too few files."""
    grep = _grep()
    if grep is None or len(files) < MIN_FILES:
        return None
    ere = words(rules)
    common = ["-D", "skip", "-d", "skip", "-s"]

    def start(flags: str, pat: str | bytes, batch: list[str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [grep, flags, *common, "-e", pat, "--", *batch],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_ENV,
        )

    def one(batch: list[str]) -> set[str]:
        try:
            # the words, and files with a NUL byte (UTF-16, binary: Python decides those)
            found = _listed([start("-lZzE", ere, batch), start("-lZaP", r"\x00", batch)])
            rest = [f for f in batch if f not in found]
            return found | (_listed([start("-lZzP", _SECTION, rest)]) if rest else set())
        except (_Failed, OSError):
            return set(batch)

    batches = [files[i : i + BATCH] for i in range(0, len(files), BATCH)]
    out: set[str] = set()
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        for found in pool.map(one, batches):
            out |= found
    return out


def containing(files: list[str], needles: list[bytes]) -> set[str] | None:
    """The files holding any of the byte strings (exactly the ones a Python `needle in raw` finds), or None when
    there is no usable grep or too few files."""
    grep = _grep()
    if grep is None or len(files) < MIN_FILES or not needles:
        return None
    args = [a for n in needles for a in (b"-e", n)]

    def one(batch: list[str]) -> set[str]:
        proc = subprocess.Popen(
            [grep.encode(), b"-lZzaF", b"-D", b"skip", b"-d", b"skip", b"-s", *args, b"--", *map(os.fsencode, batch)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_ENV,
        )
        try:
            return _listed([proc])
        except (_Failed, OSError):
            return set(batch)

    out: set[str] = set()
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        for found in pool.map(one, [files[i : i + BATCH] for i in range(0, len(files), BATCH)]):
            out |= found
    return out
