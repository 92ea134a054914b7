"""Block and file-level suppression comments, beside the line comment and the workload annotation (detect.py).

    # dramigrate: disable                 from here on, every rule is off (until `enable`)
    # dramigrate: disable=rule-a,rule-b   from here on, those rules are off
    # dramigrate: enable[=rule-a]         from here on, (those) rules are on again
    # dramigrate: disable-file[=rules]    the whole file, wherever the comment is

A suppressed finding is not reported, and a suppressed device request is not rewritten by fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DIRECTIVE = re.compile(r"#\s*dramigrate:\s*(disable-file|disable|enable)\b(?:\s*=\s*([\w,-]+))?")
ALL = "*"


@dataclass
class Suppressions:
    whole_file: set[str] = field(default_factory=set)  # rule ids, or ALL
    # (first line, last line or 0 for the end of the file, rule id or ALL), 1-based, inclusive
    blocks: list[tuple[int, int, str]] = field(default_factory=list)

    def covers(self, line: int, rule: str) -> bool:
        if ALL in self.whole_file or rule in self.whole_file:
            return True
        return any(start <= line and (end == 0 or line <= end) and r in (ALL, rule) for start, end, r in self.blocks)

    def __bool__(self) -> bool:
        return bool(self.whole_file or self.blocks)


def parse(text: str) -> Suppressions:
    """The suppressions of a file's text. Only comments count: `#` must start a YAML comment on its line."""
    out = Suppressions()
    if "dramigrate:" not in text:
        return out
    open_blocks: dict[str, int] = {}  # rule or ALL -> first line
    for number, line in enumerate(text.splitlines(), start=1):
        m = _DIRECTIVE.search(line)
        if m is None or not _is_comment(line, m.start()):
            continue
        verb, names = m.group(1), [n for n in (m.group(2) or "").split(",") if n] or [ALL]
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


def _is_comment(line: str, at: int) -> bool:
    """The `#` at `at` starts a comment: at the line's start or after whitespace, and not inside a quoted string."""
    before = line[:at]
    if before and not before[-1].isspace():
        return False
    return before.count('"') % 2 == 0 and before.count("'") % 2 == 0
