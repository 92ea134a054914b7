"""Reading a Helm template as lines: a line's indent, whether it is a template action only or emits text, the
YAML key above a line, a list item's key, a block's child indent and end. Every rewrite in dramigrate/helm/ edits
templates through these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml


@dataclass
class Edit:
    index: int  # insert before this line (or replace [index, stop) when stop > index)
    stop: int
    lines: list[str] = field(default_factory=list)
    reads: int = -1  # the line of the pod's last device key: the variables the edit reads mean what they do there


def line_indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


# a template comment after an action on its line (`{{- if .Values.gpu.on }} {{- /* 1 or 0 */}}`): it writes nothing
COMMENT_AFTER = r"[ \t]*\{\{-?\s*/\*(?:(?!\*/).)*\*/\s*-?\}\}"
_TRAILING_COMMENTS = re.compile(rf"(?<=\}}\}})(?:{COMMENT_AFTER})+\s*$")


def is_control(line: str) -> bool:
    s = _TRAILING_COMMENTS.sub("", line.strip())
    return not s or s.startswith("#") or (s.startswith("{{") and s.endswith("}}") and s.count("{{") == 1)


_DELIMITERS = re.compile(r"^\{\{-?\s*|\s*-?\}\}$")


def action_body(action: str) -> str:
    """An action without its delimiters and their chomping: `{{- x }}` and `{{ x -}}` are both `x`."""
    return _DELIMITERS.sub("", action)


_QUIET = re.compile(r"\{\{-?\s*(?:(?:if|else|end|with|range|define|block|break|continue)\b|/\*|\$\w*\s*:?=)")


def emits_text(line: str) -> bool:
    """Whether an action line writes text into the YAML (`{{ toYaml . | indent 12 | trim }}` under `limits:`
    writes the user's limits beside the device key), unlike `if`/`end`/`with`, a comment or an assignment."""
    s = line.strip()
    return s.startswith("{{") and not _QUIET.match(s)


_SCALAR_KEY = re.compile(r"^\s*[^\s#\-{][^:]*:\s+(?![|>#])(?!.*indent)\S")


def parent_line(lines: list[str], index: int) -> int:
    """The nearest line above `index` with a smaller indent that is YAML, not a template action. A shallower
    `key: scalar` is passed over: YAML cannot put a deeper key under it, so a key indented deeper than its siblings
    (`memory:` guarded, then `nvidia.com/gpu:` three spaces in) renders under their map, or the render fails."""
    want = line_indent(lines[index])
    for i in range(index - 1, -1, -1):
        if not is_control(lines[i]) and line_indent(lines[i]) < want:
            if _SCALAR_KEY.match(lines[i]):
                want = line_indent(lines[i])
                continue
            return i
    return -1


# a key alone on its line, then a YAML comment: `limits: # request is the same as limits if not specified`
_KEY_THEN_COMMENT = re.compile(r"""([^\s#'"{][^#'"{]*:)\s+#.*""")


def bare(line: str) -> str:
    """A line as the rewrites read it: without its indent, the template comments after its last action (`{{- if
    .Values.gpu.on }} {{- /* 1 or 0 */}}` reads `{{- if .Values.gpu.on }}`) and the YAML comment after a key alone on
    it (`limits: # the same as requests` reads `limits:`)."""
    s = _TRAILING_COMMENTS.sub("", line.strip())
    return m.group(1) if (m := _KEY_THEN_COMMENT.fullmatch(s)) else s


def is_key(line: str, *names: str) -> bool:
    """Whether a line is one of the keys `names` alone (`resources`, or `limits` and `requests`), a YAML comment after
    it or not: every rewrite reads a container's `resources:` and its sections through this."""
    return bare(line) in {f"{name}:" for name in names}


def section_of(lines: list[str], index: int) -> str:
    """The YAML key the line at `index` sits under (`limits`, `requests`), template actions skipped; "" at the top."""
    parent = parent_line(lines, index) if index < len(lines) else -1
    return bare(lines[parent]).rstrip(":") if parent >= 0 else ""


def item_key(line: str) -> str:
    """A line without its indent, list markers and a comment after a key alone: `- resources:`, a container's first
    key, reads `resources:`."""
    return re.sub(r"^(?:- +)+", "", bare(line))


def child_indent(lines: list[str], index: int) -> int:
    """The indent of the keys of the map that line `index` opens: its first YAML line below, when deeper than the
    key (`- resources:` keys at the item's column), else two past the key's column."""
    column = len(lines[index]) - len(re.sub(r"^ *(?:- +)*", "", lines[index]))
    below = next((i for i in range(index + 1, len(lines)) if not is_control(lines[i])), -1)
    return line_indent(lines[below]) if below >= 0 and line_indent(lines[below]) > column else column + 2


def block_end(lines: list[str], index: int) -> int:
    """One past the last line of the YAML block that starts at `index` (its deeper lines and actions)."""
    base = line_indent(lines[index])
    end = index + 1
    for i in range(index + 1, len(lines)):
        if not is_control(lines[i]) and line_indent(lines[i]) <= base:
            break
        # an action line deeper than the key writes into its block (`{{- toYaml . | nindent 14 }}`), as does one at
        # any column right below a key of the block it writes the value of (`resources:` then `{{ toYaml $r | indent
        # 12 }}` at column 0)
        value = end == i and bare(lines[i - 1]).endswith(":") and line_indent(lines[i - 1]) > base
        if not is_control(lines[i]) or (emits_text(lines[i]) and (line_indent(lines[i]) > base or value)):
            end = i + 1
    return end


class BlockDumper(yaml.SafeDumper):
    """Block lists indented under their key, as charts write them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class FlowMap(dict):  # type: ignore[type-arg]
    """A mapping BlockDumper writes on one line (a claim spec's CEL selector, `- cel: {expression: '...'}`)."""


class FlowList(list):  # type: ignore[type-arg]
    """A list BlockDumper writes on its key's line (a DRA values file's `claims: [{name: gpu}]`)."""


BlockDumper.add_representer(
    FlowMap, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)
)
BlockDumper.add_representer(
    FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)


def in_actions(lines: list[str]) -> set[int]:
    """The lines that begin or end inside a template action carried over several lines (`{{- include "x" (printf`,
    then its arguments on the lines below): a comment added at such a line's end, or a key read at its start, would be
    inside the action (TrueCharts common's `_strategyType.tpl` has a quoted "WARNING: ..." argument on a line of its
    own)."""
    out: set[int] = set()
    open_ = False
    for i, line in enumerate(lines):
        starts = open_
        for m in re.finditer(r"\{\{|\}\}", line):
            open_ = m.group() == "{{"
        if starts or open_:
            out.add(i)
    return out


# a block action (`{{- with .Values.x }}`, `{{- end }}`): its word and expression
BLOCK_ACTION = re.compile(r"\{\{-?\s*(if|with|range|define|block|end)\b\s*([^}]*?)\s*-?\}\}")
_IF_WITH_RANGE_END = re.compile(r"\{\{-?\s*(if|with|range|end)\b")


def blocks_opened(line: str) -> int:
    """How many blocks (`if`, `with`, `range`) the line opens, less those it ends."""
    return sum(-1 if word == "end" else 1 for word in _IF_WITH_RANGE_END.findall(line))


def enclosing_scope(lines: list[str], i: int, scopes_only: bool = True) -> tuple[int, str, str] | None:
    """The innermost `with`, `range`, `define` or `block` open at line i (its line, word and expression); None at
    the top of the file. scopes_only off: an `if` counts too (the innermost block of any kind)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        for word, expr in reversed(BLOCK_ACTION.findall(lines[j])):
            if word == "end":
                depth += 1
            elif depth:
                depth -= 1
            elif word != "if" or not scopes_only:
                return j, word, expr
    return None
