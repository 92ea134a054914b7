"""Escaping of what comes from input (file names, keys, values in messages) for each report format.

A file name or a YAML key is chosen by whoever wrote the input: it must never become a GitHub workflow command,
a terminal escape sequence, or Markdown markup in someone's pull request.
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote

# C0 controls but tab and newline, DEL and C1 controls (ESC starts terminal sequences; CR overwrites a line);
# Unicode line and paragraph separators and the bidirectional controls (Unicode's Bidi_Control: the marks U+061C,
# U+200E and U+200F, the embeddings, overrides and isolates; a name shown in another order than it is); lone
# surrogates (the bytes of a file name that is not UTF-8, as os.fsdecode keeps them), which no report can encode.
UNSAFE = "\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{UNSAFE}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{UNSAFE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# what a workflow command cannot carry as it is: every control but the line ends, which it percent-encodes
_CONTROL_BUT_LINE_ENDS = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{UNSAFE}]")


def _visible(m: re.Match[str]) -> str:
    c = m.group(0)
    if "\udc80" <= c <= "\udcff":  # the byte os.fsdecode could not decode
        return f"\\x{ord(c) - 0xDC00:02x}"
    if ord(c) > 0xFF:
        return f"\\u{ord(c):04x}"
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\x{ord(c):02x}")


def plain(text: str, newlines: bool = True) -> str:
    """Text for a terminal or a log: control characters shown as \\xNN (newlines kept only when allowed), and no
    workflow command the GitHub Actions runner would obey in a job's log (log_inert)."""
    return log_inert((_CONTROL if newlines else _CONTROL_OR_NEWLINE).sub(_visible, text))


# The two forms of workflow command the GitHub Actions runner obeys in a line of a job's log (ActionCommand.cs):
# `::command ...::data` at the line's start, after any whitespace (it trims the line first), and the older
# `##[command ...]data` anywhere in the line, tried when the first is not there: a file, key or value quoting
# `##[add-mask]error` (every later `error` of the job's log shown as ***) or `##[stop-commands]x` (every later
# annotation of the step ignored) was obeyed from the text, JSON, SARIF and JUnit reports a job prints.
_LINE_START_COMMAND = re.compile(r"^([^\S\n]*):(?=:)", re.MULTILINE)
OLD_COMMAND = "##["


def log_inert(text: str) -> str:
    """text with `##[` shown as `##\\x5b` and a `::` that starts a line as `\\x3a:`: shown, never obeyed."""
    if "::" in text:
        text = _LINE_START_COMMAND.sub(r"\1\\x3a", text)
    return text.replace(OLD_COMMAND, "##\\x5b") if OLD_COMMAND in text else text


def json_inert(text: str) -> str:
    """A JSON document's text with `##[` written `##\\u005b` (the same string for a JSON reader), so a job that prints
    the report does not obey it (log_inert); a JSON line never starts with `::`."""
    return text.replace(OLD_COMMAND, "##\\u005b") if OLD_COMMAND in text else text


def clipped(text: str, limit: int = 200) -> str:
    """What a message quotes of its input, at most limit characters and a count of the rest: a baseline's 200,000
    stale entries, or a 100 KB argument to `explain`, were quoted whole, one line of megabytes on standard error."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def encodable(text: str) -> str:
    """text with the bytes of file names that are not UTF-8 (lone surrogates) shown as \\xNN, so it can be written."""
    return _SURROGATE.sub(_visible, text)


def workflow_data(text: str) -> str:
    """The message of a GitHub workflow command (`::error ...::DATA`), as the Actions runner decodes it."""
    # the Actions log obeys terminal escapes, and a file name's bytes that are not UTF-8 cannot be printed: \xNN
    text = _CONTROL_BUT_LINE_ENDS.sub(_visible, text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of a workflow command (`file=`, `title=`): also `:` and `,`, which end a property."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


# In a table cell: what starts emphasis, code, links or images, ends the cell, or escapes (HTML is entity-encoded),
# and GitHub's math (`$\\huge{...}$` in a name was typeset, in any size and colour, in a pull request's comment).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")


def markdown(text: str) -> str:
    """Inline Markdown text (a table cell): markup characters backslash-escaped, HTML and line breaks defused."""
    text = plain(text, newlines=False).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def uri(path: str) -> str:
    """A file path as a SARIF artifact URI: relative paths percent-encoded (RFC 3986), absolute ones as file://."""
    raw = os.fsencode(path)  # the name's own bytes, UTF-8 or not
    if path.startswith("/"):
        return "file://" + quote(raw, safe="/")
    return quote(raw, safe="/")
