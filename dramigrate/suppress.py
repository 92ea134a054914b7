"""Suppression comments: the line comment, blocks and whole files, beside the workload annotation (detect.py).

    # dramigrate: ignore[=rule-a]         this line and the next, every rule (or those rules)
    # dramigrate: disable                 from here on, every rule is off (until `enable`)
    # dramigrate: disable=rule-a,rule-b   from here on, those rules are off
    # dramigrate: enable[=rule-a]         from here on, (those) rules are on again
    # dramigrate: disable-file[=rules]    the whole file, wherever the comment is

A suppressed finding is not reported, and a suppressed device request is not rewritten by fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dramigrate.documents import LINE_END

if TYPE_CHECKING:
    from collections.abc import Iterable

    from dramigrate.findings import Finding

# `=rule-a, rule-b` after a directive. The directive ends the comment or is followed by a space (a reason may
# follow): a spelling it does not take (`ignore = rule` once, `ignored=rule`, `disable-files=rule`, `disable-file=`)
# was read as the bare directive, every rule off, where the comment names one rule; such a comment silences nothing.
RULE_LIST = r"(?:\s*=\s*([\w-]+(?:\s*,\s*[\w-]+)*),?)?(?=\s|$)"
_DIRECTIVE = re.compile(r"#\s*dramigrate:\s*(disable-file|disable|enable)" + RULE_LIST)
# `# dramigrate: ignore[=rules]`: the findings of its line and the next (detect.py reads it too, in a render's text)
IGNORE = re.compile(r"#\s*dramigrate:\s*ignore" + RULE_LIST)
ALL = "*"
MAX_SCAN = 64 * 1024 * 1024  # the size cap's order: a file bigger than this was refused before it had findings


@dataclass
class Suppressions:
    whole_file: set[str] = field(default_factory=set)  # rule ids, or ALL
    # (first line, last line or 0 for the end of the file, rule id or ALL), 1-based, inclusive
    blocks: list[tuple[int, int, str]] = field(default_factory=list)
    # (first, last) positions, 1-based line and 0-based column, of the text of scalars that span lines: a
    # `# dramigrate:` there is a string's text (a ConfigMap's script), no comment
    texts: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)
    # line -> the rules (or ALL) its `# dramigrate: ignore` comment names, 1-based
    ignores: dict[int, list[str]] = field(default_factory=dict)

    def is_directive(self, text: str, line: int, at: int) -> bool:
        """Whether the `#` at column `at` (0-based) of line number `line` (1-based), whose text is `text`, starts a
        comment (a `# dramigrate:` inside a string or the text of a scalar that spans lines is the string's)."""
        return _is_comment(text, at) and not any(first <= (line, at) < last for first, last in self.texts)

    def covers(self, line: int, rule: str) -> bool:
        return bool(self.reason(line, rule))

    def reason(self, line: int, rule: str) -> str:
        """Which comment suppresses rule at line (for --verbose), or "" when none does."""
        for r in (ALL, rule):
            if r in self.whole_file:
                return f"`# dramigrate: disable-file{'' if r == ALL else '=' + r}`"
        for start, end, r in self.blocks:
            if start <= line and (end == 0 or line <= end) and r in (ALL, rule):
                until = f"to the `enable` on line {end}" if end else "to the end of the file"
                return f"`# dramigrate: disable{'' if r == ALL else '=' + r}` on line {start} ({until})"
        for n in (line, line - 1):
            if (names := self.ignores.get(n)) is not None and (ALL in names or rule in names):
                return f"the `# dramigrate: ignore` comment on line {n}"
        return ""

    def __bool__(self) -> bool:
        return bool(self.whole_file or self.blocks or self.ignores)


def parse(text: str) -> Suppressions:
    """The suppressions of a file's text. Only comments count: `#` must start a YAML comment on its line."""
    out = Suppressions()
    if "dramigrate:" not in text:
        return out
    lines = source_lines(text)
    candidates = [n for n, line in enumerate(lines, start=1) if "dramigrate:" in line]
    out.texts = _multiline_texts(lines, candidates)
    open_blocks: dict[str, int] = {}  # rule or ALL -> first line
    for number in candidates:
        line = lines[number - 1]
        # a line comment silences the findings of its line and the next wherever they come from (a kustomize patch,
        # a chart's template or values file), not only the plain-manifest pass's (detect.py)
        if (i := IGNORE.search(line)) is not None and out.is_directive(line, number, i.start()):
            out.ignores[number] = rules_named(i.group(1)) or [ALL]
        m = _DIRECTIVE.search(line)
        if m is None or not out.is_directive(line, number, m.start()):
            continue
        verb, names = m.group(1), rules_named(m.group(2)) or [ALL]
        if verb == "disable-file":
            out.whole_file.update(names)
        elif verb == "disable":
            for n in names:
                open_blocks.setdefault(n, number)
        else:
            for n in list(open_blocks) if ALL in names else names:
                if n in open_blocks:
                    out.blocks.append((open_blocks.pop(n), number, n))
    out.blocks.extend((start, 0, n) for n, start in open_blocks.items())
    return out


# What str.splitlines() and PyYAML's reader also take for line breaks, which YAML 1.2 (ruamel) and the lines findings
# give do not: LINE and PARAGRAPH SEPARATOR and NEL (YAML 1.1's), and the controls \v \f \x1c-\x1e.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def source_lines(text: str) -> list[str]:
    """text's lines as findings number them: split at \\n, \\r\\n and \\r only. splitlines() also split at U+2028
    (invisible in a terminal and most editors): three of them in an annotation moved every later
    `# dramigrate: ignore` three lines down, onto a GPU request the comment is nowhere near (lint exit 0)."""
    return LINE_END.split(text)


def _multiline_texts(lines: list[str], candidates: list[int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the scalars that span lines hold their text (Suppressions.texts), in the documents of the candidate
    lines (1-based), each document scanned alone: a ConfigMap's script whose line
    `# dramigrate: disable-file` silenced a Pod's GPU request beside it (lint exit 0). From libyaml's tokens; a
    document that stops being YAML (a chart's template) keeps the scalars before that point."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    windows: dict[int, int] = {}  # first line (0-based) of a candidate's document -> its last candidate line
    start = 0
    for number in candidates:
        start = next((i for i in range(number - 1, start - 1, -1) if lines[i].startswith("---")), start)
        windows[start] = number
    out = []
    for first, last in windows.items():
        stop = next((i for i in range(last, len(lines)) if lines[i].startswith("---")), len(lines))
        try:  # to the document's end: a quoted scalar open at the last candidate is closed below it
            # PyYAML's reader counts lines at YAML 1.1's breaks too: each such character read as itself (a space)
            window = _OTHER_BREAKS.sub(" ", "\n".join(lines[first:stop]) + "\n")
            for token in yaml.scan(window, Loader=loader):
                begin, end = token.start_mark, token.end_mark
                if isinstance(token, yaml.ScalarToken) and end.line > begin.line:
                    block = token.style in ("|", ">")  # the text starts below the indicator (a comment may follow)
                    at = (first + begin.line + 2, 0) if block else (first + begin.line + 1, begin.column + 1)
                    out.append((at, (first + end.line + 1, end.column)))
        except yaml.YAMLError:
            pass
    return out


def rules_named(text: str | None) -> list[str]:
    """The rule ids of a directive's `=` list (RULE_LIST's group), none when it has no list."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _is_comment(line: str, at: int) -> bool:
    """The `#` at `at` starts a comment: at the line's start or after whitespace, and not inside a quoted string.
    A double-quoted string escapes its quote (`"\\" # dramigrate: disable-file "` is one string: counting quotes read
    its text as a comment that silenced every finding of the file); a single-quoted one doubles it, which reads as
    closing and opening again. A quote inside a plain scalar (`it's`) is taken as opening a string: such a comment
    silences nothing, never more than it says."""
    before = line[:at]
    if before and not before[-1].isspace():
        return False
    quote, i = "", 0
    while i < len(before):
        c = before[i]
        if quote == '"' and c == "\\":
            i += 1  # the escaped character, a quote included
        elif c == quote:
            quote = ""
        elif not quote and c in "\"'":
            quote = c
        i += 1
    return not quote


class FileSuppressions:
    """The block and file suppressions of the files findings point at, read once per file. Findings that do not
    come from the plain-manifest pass (Helm templates and values files, kustomize patches and kustomizations, the
    classes file, run-wide findings) are matched here by their file and line, and by the lines of their related
    locations (a chart's values file and key that set the count)."""

    def __init__(self, without: Iterable[str] = ()) -> None:
        """without: files known to hold no `dramigrate:` (read by the run already): not read again."""
        self._cache: dict[str, Suppressions] = {file: Suppressions() for file in without}

    def of(self, file: str) -> Suppressions:
        if file not in self._cache:
            self._cache[file] = parse(_read(file))
        return self._cache[file]

    def reason(self, finding: Finding) -> str:
        """Why the finding is suppressed (for --verbose), or "" when it is not."""
        if finding.rule == "internal-error":  # a bug is never hidden
            return ""
        places = [(finding.file, finding.line), *((r.file, r.line) for r in finding.related)]
        for file, line in places:
            if not file or file == "-":
                continue
            why = self.of(file).reason(line, finding.rule)
            if why:
                return f"{file}: {why}"
        return ""


def suppressed_request(findings: list[Finding], suppressions: FileSuppressions | None = None) -> str:
    """Why fix leaves a generated source (a chart, a kustomize graph) as it is: the first fixable finding among
    findings that a comment suppresses, and the comment; "" when there is none. fix never rewrites a suppressed
    request, and such a source is rewritten whole or not at all."""
    suppressions = suppressions or FileSuppressions()
    for f in findings:
        if f.fixable and (why := suppressions.reason(f)):
            return (
                f"[{f.rule}] at {f.file}:{f.line} is suppressed by {why}; fix never rewrites a suppressed request, "
                "and this source is rewritten whole or not at all"
            )
    return ""


def _read(file: str) -> str:
    """A file's text for its suppression comments; "" when it cannot be read (a packaged chart's member, ...).
    Read as large as it is: `read(MAX_SCAN)` took 64 MiB of memory for each file first, and a run under a memory
    limit (ulimit -v) ended in an internal error after writing every file."""
    from dramigrate.findings import InputError
    from dramigrate.limits import Limits, read_regular

    try:
        raw = read_regular(file, Limits(max_bytes=MAX_SCAN))
    except (OSError, InputError):
        return ""
    return raw.decode("utf-8", "replace") if b"dramigrate:" in raw else ""
