"""What lint says about fix for a chart it does not try to rewrite (run._run tries only a chart whose objects a
library chart writes): "(fixable)" only where fix takes the chart without trying, else why not, known from what lint
already has, with no render more. A CI gate that reads "(fixable)" and runs fix got a refusal (issue 7).

- A request rendered from a packaged subchart that fix does not rewrite (one from a chart repository, a vendored
  archive): fix refuses the chart before any rewrite, with the reason resolve_source gives; lint gives it too.
- A request of pattern D, E or F (a named helper or library include, a resource name from values, another shape):
  fix tries the rewrite of that pattern and often proves it, but as often leaves the chart to the user (a helper
  that writes no device key line, a name set per `range` item, a packed library with no values place for claims),
  and only the try tells; lint does not promise it, and names the command that tries it without writing.
Patterns A, B and C (a literal device key, a values map passed through or taken with `with`) stay fixable, and E at
a key named by one values key (`{{ .Values.gpu.resource }}: 2`, the shape the rewrite of E takes): the rewrite
takes those shapes, and refuses them only in its proof."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from dramigrate.findings import Finding
from dramigrate.helm.findingmap import PACKED_SUBCHART, resolve_source
from dramigrate.helm.rewrite import RewriteError

_PATTERN = re.compile(r"\[chart pattern ([A-F])\b")
_TRIED = "DEF"  # the patterns whose rewrite fix decides by trying it


def packed_refusal(root: Path, findings: list[Finding]) -> str:
    """Why fix refuses the chart when a fixable request is rendered from a packaged subchart it does not rewrite (the
    message fix gives, from resolve_source); "" otherwise."""
    for f in findings:
        for r in f.related if f.fixable else ():
            if r.note != PACKED_SUBCHART:
                continue
            try:
                resolve_source(root, r.file)
            except RewriteError as exc:
                return str(exc)
    return ""


def tried_patterns(findings: list[Finding], root: Path, display: str) -> str:
    """The patterns among the fixable requests whose rewrite fix decides only by trying it (`D/F`), or ""."""
    from dramigrate.helm.patterns import helpers_text

    helpers = functools.cache(lambda: helpers_text(root))  # the chart's helper files, read once, for an E request
    letters = {
        m.group(1)
        for f in findings
        if f.fixable
        and (m := _PATTERN.search(f.message))
        and not (m.group(1) == "E" and _one_key_name(f, root, display, helpers))
    }
    return "/".join(sorted(letters & set(_TRIED)))


def _one_key_name(f: Finding, root: Path, display: str, helpers: Callable[[], str]) -> bool:
    """Whether the request's template line is a device key named by one values key (patterns.named_key, in a `with`
    scope too, through a name helper of the chart)."""
    from dramigrate.helm.idiomatic import named_key_at

    rel = f.file.removeprefix(f"{display.rstrip('/')}/")
    try:
        text = (root / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return named_key_at(text, f.line - 1, helpers()) is not None
