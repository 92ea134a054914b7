"""A grep pre-filter: which files of a large run can hold anything dramigrate reports, without reading them here.

`grep` reads bytes several times faster than Python opens and scans them. Its pattern (PCRE, whole file as one
record with -z) is a superset of triage.may_matter: a file grep leaves out is one may_matter would refuse too,
so skipping it changes no output. Everything grep lets through still goes through may_matter and the parse,
which stay the final word; without a GNU grep with -P, or when grep fails on a batch, every file of it goes
to Python as before. Files with a NUL byte (UTF-16, binary) always go to Python too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from dramigrate.rules import RuleSet
from dramigrate.triage import _ALWAYS, _literals

MIN_FILES = 400  # below this, starting grep costs more than it saves
BATCH = 1500  # files per grep command line (well under ARG_MAX)
TIMEOUT = 120.0

# A limits/requests section with a domain-qualified key that is not native (*.kubernetes.io/...): on its line,
# or on a more indented line within the 40 that follow (the window may hold blank, comment and indented
# lines only: a line at column 0 ends every section). A superset of triage._SECTION and its look-ahead.
_SECTION = (
    rb"(?<![^\n])[ \t]*(?:- )?[\"']?(?:limits|requests|extra_resource_limits|extra_resource_guarantees)[\"']?"
    rb"[ \t\r\f\v]*:(?:[^\n]*/|[^\n]*\n(?:(?:[ \t\r\f\v#][^\n]*)?\n){0,39}?"
    rb"[ \t\r\f\v]+[\"']?(?!(?:[-a-z0-9.]*\.)?kubernetes\.io/)[a-z0-9][-a-z0-9.]*/)"
)


def pattern(rules: RuleSet) -> bytes:
    return b"|".join((_ALWAYS.pattern, _literals(rules).pattern, _SECTION))


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


def candidates(files: list[str], rules: RuleSet) -> set[str] | None:
    """The files that may matter (a superset), or None when there is no usable grep or too few files."""
    grep = _grep()
    if grep is None or len(files) < MIN_FILES:
        return None
    pat = pattern(rules)
    batches = [files[i : i + BATCH] for i in range(0, len(files), BATCH)]
    out: set[str] = set()
    running: list[tuple[list[str], subprocess.Popen[bytes], subprocess.Popen[bytes]]] = []
    width = max(1, os.cpu_count() or 1)

    def finish(batch: list[str], hits: subprocess.Popen[bytes], nul: subprocess.Popen[bytes]) -> None:
        try:
            found, _ = hits.communicate(timeout=TIMEOUT)
            binary, _ = nul.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            hits.kill()
            nul.kill()
            hits.communicate()
            nul.communicate()
            out.update(batch)
            return
        if hits.returncode not in (0, 1) or nul.returncode not in (0, 1):
            out.update(batch)  # an unreadable file, a PCRE limit: Python decides the whole batch
            return
        for listing in (found, binary):
            out.update(n.decode("utf-8", "surrogateescape") for n in listing.split(b"\0") if n)

    for batch in batches:
        args = ["--", *batch]
        common = ["-D", "skip", "-d", "skip", "-s"]
        hits = subprocess.Popen(
            [grep, "-lZzP", *common, "-e", pat, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_ENV
        )
        nul = subprocess.Popen(
            [grep, "-lZaP", *common, "-e", r"\x00", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_ENV,
        )
        running.append((batch, hits, nul))
        if len(running) >= width:
            finish(*running.pop(0))
    for item in running:
        finish(*item)
    return out


def wanted(paths: list[Path], rules: RuleSet) -> set[str] | None:
    return candidates([str(p) for p in paths], rules)
