"""How a device request reaches a chart's rendered pod, read from the template line that writes it.

A) a literal device key with a values (or literal) count: `nvidia.com/gpu: {{ .Values.gpus }}`;
B) `toYaml` of a values `resources` map; C) `with .Values.x.resources` and `toYaml .`;
D) a named helper or library include; E) the resource *name* comes from values; F) anything else.
The idiomatic rewrite (idiomatic.py) handles A, and E where the name is one values key (perhaps with a literal
`default`, perhaps held in a template variable, perhaps mapped from values by a helper: NameHelper); passthrough.py
B and C; helper.py D; mapvars.py F where the container's resources are a map built in template variables; the others
are reported with the pattern and the first template line (or rewritten by the engine when the user asks for
`--chart-style engine`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dramigrate.helm.rewrite import RewriteError
from dramigrate.helm.templatelines import enclosing_scope, is_key, item_key, line_indent
from dramigrate.rules import RuleSet

if TYPE_CHECKING:
    from dramigrate.rules import ResourceRule, RuleSet

PATTERNS = {
    "A": "a literal device key with a values count",
    "B": "toYaml of a values resources map",
    "C": "`with` a values resources map",
    "D": "a named helper or library include",
    "E": "a resource name from values",
    "F": "another template shape",
}

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_LITERAL_KEY = re.compile(r"""^\s*(?:-\s+)?(["']?)([A-Za-z0-9][A-Za-z0-9.\-_]*/[A-Za-z0-9.\-_]+)\1\s*:\s*(\S.*)$""")
# a device entry a template adds to a map by its literal name: `merge $limits (dict "nvidia.com/gpu" 1)` (tvarr),
# `$_ := set $limits "amd.com/gpu" 1` (mapvars.py), `set ($resources.limits | default dict) "nvidia.com/gpu" N`
# (nemo-retriever: the section, or a fresh dict when the map has none, which the key then does not reach)
LITERAL_ENTRY = re.compile(
    r'\b(?:dict|set\s+(?:\$\w+(?:\.\w+)*|\(\s*\$\w+(?:\.\w+)*\s*\|\s*default\s+dict\s*\)))\s+"([^"/]+/[^"]+)"\s+'
)
# the arguments of a `dict` call up to its first group (the whole call when it holds none, as a section's does)
_DICT_ARGS = re.compile(r"\bdict\s+([^()]*)")


def literal_entries(line: str) -> list[str]:
    """The literal resource names a template line adds to a map (LITERAL_ENTRY), also those that are not a `dict`'s
    first key: tonic's `dict "memory" "8Gi" "nvidia.com/gpu" "1"` (a name in a key's place, never a value's: a
    toleration's `dict "key" "nvidia.com/gpu"` names none)."""
    found = LITERAL_ENTRY.findall(line)
    for m in _DICT_ARGS.finditer(line):
        words = _split_top(m.group(1), " ")
        found += [w[1:-1] for w in words[::2] if re.fullmatch(r'"[^"/\s]+/[^"\s]+"', w)]
    return list(dict.fromkeys(found))


# what the DRA branch of a rewrite says when it fails a render whose map asks for a device resource it does not take
# (mapvars, helper.MapChoice): the proof takes such a failure for a vendor its values do not pick
# (proveswitch.prove_switch)
UNTAKEN = "a device resource the DRA claim of the chart does not take"


def untaken_message(names: list[str]) -> str:
    """A literal, as the other guards of the rewrites: Helm shows it as it is (the proof masks a message that quotes
    text from values)."""
    return (
        f"dra.enabled: the container resources ask for {UNTAKEN} (it takes {', '.join(names)}): set dra.enabled=false "
        "to request it from its device plugin"
    )


_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")  # lookarounds and back references: Go's regexp has neither
# a line that writes its key under an `if` of its own: `{{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}` (a Nebius
# docker chart's containers, each from an item of a values list)
_INLINE_IF = re.compile(
    r"^(\s*)\{\{-?\s*if\s+((?:(?!\}\}).)+?)\s*-?\}\}((?:(?!\{\{-?\s*(?:else|if)\b).)*?)\{\{-?\s*end\s*-?\}\}\s*$"
)


def inline_guard(line: str) -> tuple[str, str] | None:
    """(the condition, the line without it) of a line whose whole content is one `{{ if X }}...{{ end }}`, else None."""
    m = _INLINE_IF.match(line)
    return None if m is None else (m.group(2), m.group(1) + m.group(3))


def literal_key(line: str) -> re.Match[str] | None:
    """_LITERAL_KEY on the line, or on its content under an `if` of its own (inline_guard)."""
    if (m := _LITERAL_KEY.match(line)) is None and (guarded := inline_guard(line)) is not None:
        m = _LITERAL_KEY.match(guarded[1])
    return m


_TEMPLATED_KEY = re.compile(r"^\s*(?:-\s+)?[\"']?\{\{[^}]*\}\}[^:]*:")
# pattern E as the idiomatic rewrite takes it: `{{ .Values.gpu.type }}: N`, `{{ .Values.x | default "nvidia.com/gpu" }}`
# or a variable assigned from values (`{{ $gpuKey }}: N` after `{{- $gpuKey := .Values.gpuKey }}`), perhaps joined
# with literal text (`{{ .Values.gpu.corporation }}/gpu: N`, the key holding `nvidia.com` or `amd.com`)
_VALUES_PATH = r"\$?\.Values(?:\.[A-Za-z_]\w*)+"
_TERM = rf"{_VALUES_PATH}|\$[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_HELPER_TERM = r'(?:include|template)\s+"[^"]+"\s+[.$]'  # a helper given the root: name_helper reads what it writes
_NAMED_KEY = re.compile(
    rf"""^\s*(["']?)([\w./-]*)\{{{{-?\s*(?:default\s+("[^"]*")\s+({_TERM})|({_TERM}|{_HELPER_TERM})(?:\s*\|\s*default\s+("[^"]*"))?)"""
    r"""\s*-?\}\}([\w./-]*)\1\s*:\s*(\S.*)$"""
)
_LITERAL = r'"[^"]*"|dict|list|\d+'
_DEFAULTED = re.compile(rf"(.+?)\s*\|\s*default\s+({_LITERAL})|default\s+({_LITERAL})\s+(.+)", re.S)


# --- how a template serialises a values map, read in one spelling -------------------------------------------

_SERIALISERS = frozenset({"toYaml", "toJson", "toPrettyJson", "toRawJson", "mustToJson", "mustToPrettyJson"})
_WHOLE_ACTION = re.compile(r"(\{\{-?\s*)(.*?)(\s*-?\}\})")
_FIELD_CHAIN = re.compile(r"(\$\w*|\.Values|\.)((?:\.[A-Za-z_]\w*)*)")


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` (a pipeline's `|`, or whitespace for a call's words when `sep` is " ") outside
    parentheses and double-quoted strings."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        elif not quoted and not depth and (ch.isspace() if sep == " " else ch == sep):
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip() or sep != " "]


def _grouped(expr: str) -> str | None:
    """The inside of `(X)` when the parentheses enclose the whole expression, else None."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return None
    depth = 0
    for i, ch in enumerate(expr):
        depth += 1 if ch == "(" else -1 if ch == ")" else 0
        if depth == 0 and i < len(expr) - 1:
            return None
    return expr[1:-1].strip()


def _map_of(expr: str) -> str:
    """The values map an expression passes on with its keys in place, as one word: `X` for `default dict X`,
    `X | default dict`, `deepCopy X`, `required "..." X`, `pick X "limits"`, `omit X "gpuType"`, `(X)`; `(merge B A)`
    for `default A B` (the map that is set); each map of a `merge`; the expression itself otherwise (in parentheses
    when it is more than one word: `index .Values "a" "resources"` stays as it is written)."""
    expr = expr.strip()
    if (inner := _grouped(expr)) is not None:
        return _map_of(inner)
    stages = _split_top(expr, "|")
    if len(stages) > 1 and all(
        re.fullmatch(r"default\s+\(?dict\)?|deepCopy|required\s+\"[^\"]*\"", s) for s in stages[1:]
    ):
        return _map_of(stages[0])
    words = _split_top(expr, " ") if len(stages) == 1 else []
    head = words[0] if words else ""
    if head in ("deepCopy", "pick", "omit") and len(words) >= 2:
        return _map_of(words[1])
    if head == "required" and len(words) == 3 and re.fullmatch(r'"[^"]*"', words[1]):
        return _map_of(words[2])  # `required "resources are required" X`: X, or the render fails
    if head == "default" and len(words) == 3 and words[1] in ("dict", "(dict)"):
        return _map_of(words[2])
    if head == "default" and len(words) == 3 and all(_FIELD_CHAIN.fullmatch(w) for w in words[1:]):
        return f"(merge {words[2]} {words[1]})"
    if head in ("or", "coalesce") and len(words) >= 3 and all(_FIELD_CHAIN.fullmatch(w) for w in words[1:]):
        return f"(merge {' '.join(words[1:])})"  # the first map that is set, as `default`
    if head in ("merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite") and len(words) >= 3:
        return f"({' '.join([head, *(_map_of(w) for w in words[1:])])})"  # each map: `(deepCopy A)` is A
    return expr if len(_split_top(expr, " ")) == 1 else f"({expr})"


def _serialised(body: str) -> str:
    """An action's pipeline with the map it serialises written `toYaml X` (X as _map_of reads it): `X | toYaml`,
    `toJson X`, `toYaml (default dict X)`; groups in parentheses (`tpl (toYaml X) .`) read the same way."""
    stages = _split_top(body, "|")
    for k, stage in enumerate(stages):
        words = _split_top(stage, " ")
        if not words:
            continue
        if words[0] in _SERIALISERS and len(words) == 1 and k:
            return " | ".join([f"toYaml {_map_of(' | '.join(stages[:k]))}", *stages[k + 1 :]])
        if words[0] in _SERIALISERS and len(words) == 2:
            stages[k] = f"toYaml {_map_of(words[1])}"
            return " | ".join(stages)
    return " | ".join(
        " ".join(f"({_serialised(g)})" if (g := _grouped(w)) is not None else w for w in _split_top(s, " "))
        for s in stages
    )


def map_reads(text: str) -> str:
    """The template line for line with every map it serialises spelled `toYaml X` (_serialised), so the pass-through's
    readings of a map (`toYaml .Values.x.resources`) take the other spellings charts use for the same read:
    `.Values.resources | toYaml`, `toJson .Values.resources`, `toYaml (default dict .Values.resources)`,
    `index .Values "x" "resources" | toYaml`, `toYaml (mergeOverwrite (deepCopy A) B)`."""
    if not any(s in text for s in _SERIALISERS):
        return text
    return _WHOLE_ACTION.sub(lambda m: m.group(1) + _serialised(m.group(2)) + m.group(3), text)


@dataclass(frozen=True)
class Pattern:
    letter: str
    line: int  # 1-based template line
    text: str  # that line, stripped

    def describe(self) -> str:
        return f"pattern {self.letter} ({PATTERNS[self.letter]})"


def count_expression(value: str, helpers: bool = False) -> str | None:
    """The Go expression of a device count as written after the key: `{{ .Values.gpus }}`,
    `"{{ .Values.gpus }}"`, `{{ .Values.gpus | quote }}` or a literal integer; with `helpers`, also a helper given
    `.` or `$` (`{{ include "x.gpus" . | quote }}`, read where the key is); None otherwise."""
    value = value.split(" #", 1)[0].strip()
    literal = re.fullmatch(r"""(["']?)(\d+)\1""", value)
    if literal:
        return literal.group(2)
    unquoted = re.fullmatch(r"""(["']?)(\{\{.*\}\})\1""", value)
    if not unquoted:
        return None
    actions = _ACTION.findall(unquoted.group(2))
    if len(actions) != 1 or _ACTION.sub("", unquoted.group(2)).strip():
        return None
    expr = re.sub(r"\s*\|\s*(quote|toString|squote)\s*$", "", actions[0]).strip()
    if helpers and _ROOT_HELPER.fullmatch(expr):
        return f"{expr} | trim"  # a helper's output may end in a newline its `end` keeps
    if not expr or "{{" in expr or expr.startswith(("if ", "with ", "range ", "include ", "template ")):
        return None
    return expr


_ROOT_HELPER = re.compile(r'include\s+"[^"]+"\s+[.$]')  # a helper given `.` or `$`: the scope or the root


def named_key(line: str, text: str = "") -> tuple[str, tuple[str, ...], str | None, str] | None:
    """A device key whose name is one values key (`{{ $.Values.gpu.type }}: {{ $.Values.gpu.count }}`, perhaps with a
    literal `default`), or a variable of `text` assigned from one (`{{ $gpuKey }}: N`), perhaps with literal text
    before or after it (`{{ .Values.gpu.corporation }}/gpu`: the expression `printf "%s/gpu" .Values.gpu.corporation`):
    (the name's Go expression, its values path, the key's default or None, the text after the key)."""
    m = _NAMED_KEY.match(line)
    if m is None:
        return None
    before, after = m.group(2), m.group(7)
    term, default = (m.group(4), m.group(3)) if m.group(4) else (m.group(5), m.group(6))
    expr = f"{term} | default {default}" if default else term
    resolved = _values_path(expr, text, True)
    if resolved is None:
        return None
    keys, default = resolved
    if before or after:  # `{{ .Values.gpu.vendor }}/gpu`: the name joins the key's value with the literal text
        expr = f'printf "{before}%s{after}" {expr if _FIELD_CHAIN.fullmatch(expr) else f"({expr})"}'
    return expr, keys, default[1:-1] if default else None, m.group(8)


def _values_path(
    expr: str, text: str, whole: bool, seen: frozenset[str] = frozenset()
) -> tuple[tuple[str, ...], str] | None:
    """The values path an expression reads, through the `$x :=` assignments of `text` (`$exPer.gpuResourceName` after
    `$exPer := .Values.per | default dict`), and the string `default` the value gets when the path is not set, when
    `whole` (a default of the map it reads a field of is not the name's); None for any other expression."""
    expr, default, fields = expr.strip(), "", ""
    if m := _DEFAULTED.fullmatch(expr):
        expr, default = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    elif m := re.fullmatch(r"\((.*)\)((?:\.[A-Za-z_]\w*)*)", expr, re.S):  # `(X).field`, X one balanced group
        depths = [m.group(1)[: i + 1].count("(") - m.group(1)[: i + 1].count(")") for i in range(len(m.group(1)))]
        if min(depths, default=0) < 0:
            return None
        expr, fields = m.group(1), m.group(2)
    elif re.fullmatch(_VALUES_PATH, expr):
        return tuple(expr.removeprefix("$").split(".")[2:]), ""
    elif re.fullmatch(_HELPER_TERM, expr) and (named := name_source(expr, text)) is not None:
        return named.key, f'"{named.default}"' if named.default else ""
    elif (var := re.fullmatch(r"\$([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)", expr)) and var.group(1) not in seen:
        bodies = re.findall(rf"\{{{{-?\s*\${var.group(1)}\s*(:?=)\s*(.*?)\s*-?\}}\}}", text, re.S)
        if len(bodies) != 1 or bodies[0][0] != ":=":  # assigned once: a reassignment may read another key
            return None
        if not var.group(2) and (named := name_source(expr, text)) is not None:  # a helper maps values to the name
            return named.key, f'"{named.default}"' if named.default else ""
        expr, fields, seen = bodies[0][1], var.group(2), seen | {var.group(1)}
    else:
        return None
    got = _values_path(expr, text, whole and not fields, seen)
    if got is None:
        return None
    own = default if whole and default.startswith('"') else ""  # applies when what it defaults is empty
    return (*got[0], *fields.split(".")[1:]), got[1] if got[1].strip('"') else own or got[1]


@dataclass(frozen=True)
class NameHelper:
    """A helper that maps values to a device resource name and nothing else (comfyui's `comfyui.gpuResource`: the
    `gpu.resourceName` value when set, else `nvidia.com/gpu`, `amd.com/gpu` or `gpu.intel.com/i915` by `gpu.vendor`):
    the names it writes literally, the values key it writes as it is (an override) and, for each literal name, the
    values key and string its branch compares (`eq $vendor "amd"` after `$vendor := .Values.gpu.vendor | lower`)."""

    define: str
    names: tuple[str, ...]
    override: tuple[str, ...] | None
    choices: tuple[tuple[tuple[str, ...], str, str], ...]  # (values key, the string compared, the name written)
    default: str = ""  # the name the override defaults to (`{{ .Values.gpu.resourceName | default "nvidia.com/gpu" }}`)

    @property
    def key(self) -> tuple[str, ...]:
        """The values key the name reads first: the override, else the one the branches compare."""
        return self.override or self.choices[0][0]


_WORD_OUT = re.compile(r'(?:printf\s+)?"([^"%\\]*)"')
_COMPARE = re.compile(r'\(?eq\s+\(?(\$\w+|\.Values(?:\.\w+)+)(?:\s*\|\s*(?:lower|trim|toString))*\)?\s+"([^"]*)"\)?')


def _compared_key(operand: str, assigned: dict[str, str]) -> tuple[str, ...] | None:
    """The values key a compared operand reads: `.Values.a.b`, or a variable assigned `.Values.a.b | lower`."""
    expr = assigned.get(operand[1:], "") if operand.startswith("$") else operand
    m = re.fullmatch(r"\(?(\.Values(?:\.\w+)+)(?:\s*\|\s*(?:lower|trim|toString))*\)?", expr.strip())
    return tuple(m.group(1).split(".")[2:]) if m else None


def name_helper(text: str, define: str) -> NameHelper | None:
    """The helper `define` of `text` as a NameHelper, when its body only branches on values, assigns variables from
    values and writes literal names or one values key; None for any other body (an include, another expression)."""
    from dramigrate.helm.rewrite import _actions

    opened = re.search(rf'\{{{{-?\s*define\s+"{re.escape(define)}"\s*-?\}}\}}', text)
    if opened is None:
        return None
    assigned: dict[str, str] = {}
    names: list[str] = []
    override, default = None, ""
    choices = []
    stack: list[list[str]] = []  # per open block, its branches' conditions so far (the last one is current)
    pos = opened.end()
    for start, end, word in _actions(text[opened.end() :]):
        start, end = start + opened.end(), end + opened.end()
        between = text[pos:start].strip()
        pos = end
        body = re.sub(r"^\{\{-?\s*|\s*-?\}\}$", "", text[start:end]).strip()
        outputs = [between] if between else []
        if word == "end":
            if not stack:
                break
            stack.pop()
        elif word == "if":
            stack.append([body[2:].strip()])
        elif word == "else":
            if not stack:
                return None
            stack[-1].append(body[4:].strip().removeprefix("if ").strip())
        elif body.startswith("/*"):
            pass
        elif m := re.fullmatch(r"\$(\w+)\s*:=\s*(.+)", body, re.S):
            assigned[m.group(1)] = m.group(2)
        elif m := _WORD_OUT.fullmatch(body):
            outputs.append(m.group(1))
        elif re.fullmatch(r"\.Values(?:\.\w+)+", body) and stack and stack[-1][-1] == body:
            override = tuple(body.split(".")[2:])  # `if .Values.x` then `.Values.x`: the name as the user sets it
        elif (term := _defaulted_name(body)) is not None:  # `.Values.x | default "nvidia.com/gpu"`
            override, default = term
            outputs.append(default)
        else:
            return None
        for name in filter(None, outputs):  # `""`: no device
            if not re.fullmatch(r"[\w.-]+/[\w.-]+", name):
                return None
            names.append(name)
            m = _COMPARE.fullmatch(stack[-1][-1]) if stack else None
            key = _compared_key(m.group(1), assigned) if m else None
            if key is not None and m is not None:
                choices.append((key, m.group(2), name))
    if not names or (override is None and not choices):
        return None
    return NameHelper(define, tuple(dict.fromkeys(names)), override, tuple(choices), default)


def _defaulted_name(body: str) -> tuple[tuple[str, ...], str] | None:
    """(the values key, the literal name) of `.Values.x | default "name"` (or `default "name" .Values.x`)."""
    m = _DEFAULTED.fullmatch(body)
    if m is None:
        return None
    term, literal = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    if not re.fullmatch(_VALUES_PATH, term.strip()) or not literal.startswith('"'):
        return None
    return tuple(term.strip().removeprefix("$").split(".")[2:]), literal[1:-1]


def name_source(expr: str, text: str) -> NameHelper | None:
    """The NameHelper a device name comes from: the key's own `include "x.gpuResource" .`, or a template variable
    assigned it once outside `with`/`range` (`{{- $gpuResource := include "comfyui.gpuResource" . }}`, so `.` is the
    chart's root); `text` the template with the chart's helpers after it; None otherwise."""
    from dramigrate.helm.rewrite import _actions

    if direct := re.fullmatch(r'(?:include|template)\s+"([^"]+)"\s+[.$]', expr.strip()):
        return name_helper(text, direct.group(1))  # the key line's own include (find_devices: not in `with`/`range`)
    var = re.fullmatch(r"\$([A-Za-z_]\w*)", expr.strip())
    if var is None:
        return None
    found = list(
        re.finditer(rf'\{{{{-?\s*\${var.group(1)}\s*:=\s*(?:include|template)\s+"([^"]+)"\s+[.$]\s*-?\}}\}}', text)
    )
    if len(found) != 1:
        return None
    stack: list[str] = []
    for _start, _end, word in _actions(text[: found[0].start()]):
        if word in ("if", "with", "range", "define", "block"):
            stack.append(word)
        elif word == "end" and stack:
            stack.pop()
    rebound = {"with", "range", "define", "block"} & set(stack)
    return None if rebound else name_helper(text, found[0].group(1))


def helpers_text(root: Path) -> str:
    """The chart's helper files (`templates/**/_*.tpl`) as one text, read after a template for its `include`s."""
    paths = sorted(p for p in (root / "templates").rglob("_*.tpl") if p.is_file() and not p.is_symlink())
    return "".join("\n" + p.read_text(encoding="utf-8", errors="replace") for p in paths)


def named_key_in(line: str, text: str, helpers: str = "") -> tuple[str, tuple[str, ...], str | None, str] | None:
    """named_key, the name perhaps mapped from values by one of the chart's `helpers` (name_source)."""
    return named_key(line, text) or (named_key(line, text + helpers) if helpers else None)


def name_keys(texts: list[str], helpers: str = "") -> dict[tuple[str, ...], str | None]:
    """The values keys that name a device resource in these templates (pattern E keys, also those read inside
    `with .Values.x`), each with its default."""
    from dramigrate.helm.idiomatic import scoped_name_keys  # idiomatic imports this module

    return scoped_name_keys(texts, helpers)


_COMPARED = re.compile(
    r"\{\{-?\s*(?:else\s+)?if\s+\(?eq\s+(?:\.Values\.([\w.]+)\s+\"([^\"]*)\"|\"([^\"]*)\"\s+\.Values\.([\w.]+))\s*\)?\s*-?\}\}"
)
_DEVICE_KEY = re.compile(r"^\s*[A-Za-z0-9.\-]+\.[a-z]+/[A-Za-z0-9.\-_]+\s*:")
_BRANCH_END = re.compile(r"\{\{-?\s*(else|end)\b")


def compared_values(texts: list[str]) -> dict[tuple[str, ...], list[str]]:
    """The values keys an `if`/`else if` compares with a string (`eq .Values.hwAccel.type "intel"`) where that branch
    writes a device key (a vendor choice by name), each with the strings its branches compare it with: the proof
    renders each branch, not only the one the values pick."""
    out: dict[tuple[str, ...], list[str]] = {}
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if (m := _COMPARED.search(line)) is None:
                continue
            body = next((lines[i + 1 : k] for k in range(i + 1, len(lines)) if _BRANCH_END.search(lines[k])), [])
            if any(_DEVICE_KEY.match(b) for b in body):
                path, literal = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
                out.setdefault(tuple(path.split(".")), []).append(literal)
    return {k: list(dict.fromkeys(v)) for k, v in out.items()}


def name_candidates(resource: str, rules: RuleSet) -> list[str]:
    """The device resources a values key naming `resource` may plausibly be set to and the idiomatic rewrite looks up:
    `resource` and the other resources its rule pack names literally with the same device class and request (Intel's
    `gpu.intel.com/i915` and `gpu.intel.com/xe`), in pack order; [] when the packs do not migrate `resource`."""
    match = rules.lookup(resource)
    if match is None or match.rule.report_only or not match.rule.device_class:
        return []
    rule = match.rule
    same = [
        r.match
        for r in rules.resources
        if r.match
        and r.pack == rule.pack
        and not r.report_only
        and (r.device_class, r.request) == (rule.device_class, rule.request)
    ]
    return list(dict.fromkeys([resource, *same]))


def _var_built(template: str, window: str) -> bool:
    """Whether the template writes a map built in a variable (mapvars.site) that the window's `toYaml` reads: a
    section (tvarr's `limits:` of `$limits`) or the whole map with a device entry `set` into it (`set $limits
    .Values.gpu.resourceName .Values.gpu.count` on `$res := .Values.resources`)."""
    from dramigrate.helm.mapvars import site  # mapvars imports this module's users

    found = site(template)
    reads = rf"(?:toYaml|\bwith)\s+\{found.var}\b" if found else ""  # `with $res` then `toYaml .` (unmanic)
    return found is not None and (found.section >= 0 or re.search(reads, window) is not None)


def _templated_child(lines: list[str], section: int) -> int:
    """The first key of the `limits:`/`requests:` section at line `section` (0-based) whose name is a template
    expression (clusterjellyfin's `{{ .Values.workers.gpu.resource }}: N` after a `toYaml` of values), or -1."""
    indent = len(lines[section]) - len(lines[section].lstrip())
    for i in range(section + 1, len(lines)):
        text = lines[i]
        if text.strip() and len(text) - len(text.lstrip()) <= indent and not text.strip().startswith("{{"):
            break
        if _TEMPLATED_KEY.match(text):
            return i
    return -1


_SECTION_RANGE = re.compile(
    r"\{\{-?\s*range\s+(\$\w+)\s*,\s*\$\w+\s*:=\s*[.$][\w.]*[Rr]esources(?:\.(?:limits|requests))?\s*-?\}\}"
)


def _section_range(lines: list[str], index: int) -> int:
    """The line of the `range $key, $value := <values resources map>.limits` (or `.requests`, or a flat map of
    quantities by resource name itself, `.Values.gpuResources`) whose key variable names the templated key at line
    `index` (0-based): the template writes that section of the map, or the map as a section, entry by entry; -1
    otherwise."""
    key = re.match(r"^\s*[\"']?\{\{-?\s*(\$\w+)\s*-?\}\}", lines[index])
    for j in range(index - 1, max(-1, index - 4), -1):
        m = _SECTION_RANGE.search(lines[j])
        if m and key and m.group(1) == key.group(1):
            return j
    return -1


_MAP_RANGE = re.compile(r"\{\{-?\s*range\s+(\$\w+)\s*,\s*(\$\w+)\s*:=\s*([.$][\w.]*[Rr]esources|\.)\s*-?\}\}")


def _with_resources(lines: list[str], index: int) -> bool:
    """Whether `.` at line `index` (0-based) is a values resources map: the innermost block open there is `with
    <...resources>` (`{{- with .Values.worker.resources }}`, then `range $key, $val := .`)."""
    block = enclosing_scope(lines, index, scopes_only=False)
    return (
        block is not None
        and block[1] == "with"
        and re.fullmatch(r"[.$][\w.]*[Rr]esources", block[2].strip()) is not None
    )


def _map_range(lines: list[str], index: int) -> int:
    """The line of the `range $key, $val := <values resources map>` (or `:= .` inside `with` the map) right above line
    `index` (0-based, `{{ $key }}:` of its key variable) whose value that line or the next writes whole (`{{ toYaml
    $val | indent 14 }}`), the range's `end` right after: the template writes the map key by key as `toYaml` of it
    would (kubefate's fateflow); -1 otherwise."""
    key = re.match(r"\s*\{\{-?\s*(\$\w+)\s*-?\}\}:(.*)$", lines[index])
    m = _MAP_RANGE.fullmatch(lines[index - 1].strip()) if index > 0 else None  # right above: no `if` skips a key
    if m is None or key is None or m.group(1) != key.group(1):
        return -1
    if m.group(3) == "." and not _with_resources(lines, index - 1):
        return -1
    body = [key.group(2).strip()] if key.group(2).strip() else lines[index + 1 : index + 2]
    after = lines[index + 1 + (not key.group(2).strip()) :][:1]  # the range ends right after: it writes nothing else
    whole = rf"\s*\{{\{{-?\s*toYaml\s+{re.escape(m.group(2))}\s*\|\s*n?indent\s+\d+\s*-?\}}\}}\s*"
    ends = bool(after) and re.fullmatch(r"\{\{-?\s*end\s*-?\}\}", after[0].strip()) is not None
    return index - 1 if body and re.fullmatch(whole, map_reads(body[0])) and ends else -1


_SERIALISED_MAP = re.compile(r"toYaml\s+\(?[.$][\w.]*[Rr]esources\b")


def _container_resources(lines: list[str], index: int) -> int:
    """When line `index` (0-based) starts a list item (a container) that writes no device key itself, the line of its
    `resources:` key or of its serialised resources map (a finding whose rendered line the template does not show,
    such as `resources: {{ toJson .Values.resources }}`, maps to the container's first line); else -1."""
    item = re.match(r"^(\s*)-\s+\S", lines[index])
    if item is None or _LITERAL_KEY.match(lines[index]) or _TEMPLATED_KEY.match(lines[index]):
        return -1
    inner = len(item.group(1)) + 2
    included = -1
    for j in range(index + 1, len(lines)):
        text = lines[j]
        indent = len(text) - len(text.lstrip(" "))
        if text.strip() and indent < inner and not text.lstrip().startswith("{{"):
            break
        if indent == inner and (re.match(r"\s*resources:", text) or _SERIALISED_MAP.search(map_reads(text))):
            return j
        if included < 0 and indent == inner and _KEYS_INCLUDE.fullmatch(text.strip()):
            included = j
        if included < 0 and (fields := WHOLE_FIELDS.match(text)) and int(fields.group(3)) == inner:
            included = j  # the container's fields, its resources among them, a map written whole
    return included


# an include alone on a container's line, indented onto its keys: `{{- include "app.resources" . | nindent 10 }}`
_KEYS_INCLUDE = re.compile(r"\{\{-?\s*(?:include|template)\s+\"[^\"]+\"[^}]*\|\s*n?indent\s+\d+\s*-?\}\}")


# a profile a value picks from a values map: `(index .Values.deploymentConfigs .Values.device)` (rhq's
# confidential-ai: `with (index .Values.deploymentConfigs .Values.device).resources`)
PICKED_PROFILE = r"\(index\s+\$?\.Values((?:\.\w+)+)\s+\$?\.Values(?:\.\w+)+\)"
_VALUES_MAP = re.compile(r"(?<![\w.$)\]'\"])(\$?\.Values\.)?((?:[A-Za-z_]\w*\.)*[A-Za-z]*[Rr]esources)\b(?![.\w:])")
_INCLUDE = re.compile(r"\b(include|template)\s+\"")


def _reads_elsewhere(window: str, counted: tuple[str, ...]) -> bool:
    """Whether the window also includes a helper, every resources map it reads is a values path (`toYaml
    .Values.a.resources`) and none holds a values key the device count comes from (`counted`, dotted; a subchart's
    key may sit under its name): the finding's line is in another branch than the one that rendered the device (z2jh's
    user placeholder: `if` its own map, `else` the singleuser helper that writes the device)."""
    reads = _VALUES_MAP.findall(window)
    if not counted or not reads or not _INCLUDE.search(window) or any(not rooted for rooted, _ in reads):
        return False
    return not any(re.search(rf"(?:^|\.){re.escape(path)}(?:[.\[]|$)", c) for _, path in reads for c in counted)


# a template variable given a device key by a `dict` with its literal name and a count (samiallani's freqtrade: `{{-
# $limits = merge (dict "nvidia.com/gpu" 1) (deepCopy $limits) }}` under `if .Values.freqtrade.gpu.enabled`)
_HELD_ENTRY = re.compile(
    r'^\s*\{\{-?\s*(\$\w+)\s*:?=[^{}]*\bdict\s+"([^"/\s]+/[^"\s]+)"\s+'
    r"([0-9]+|\$?\.Values(?:\.\w+)+|\(int\s+\$?\.Values(?:\.\w+)+\))\s*\)[^{}]*-?\}\}\s*$"
)
# a container's section written whole from a variable on its key's line: `limits: {{ $limits | toJson }}`
_VAR_SECTION = (
    r"^\s*(?:limits|requests):\s*\{{\{{-?\s*(?:{v}\s*\|\s*(?:toJson|toYaml)|(?:toJson|toYaml)\s+{v})\s*-?\}}\}}\s*$"
)


@dataclass(frozen=True)
class HeldEntry:
    """A literal device key a template variable holds (pattern A): the 0-based line of the action that puts it in the
    variable (`dict "<resource>" <count>`), and of the container's `limits:` (`requests:`) line that writes the
    variable, the one line that does."""

    line: int
    resource: str
    count: str
    section: int


def held_entries(lines: list[str]) -> list[HeldEntry]:
    """The template's device keys held in variables (HeldEntry)."""
    out = []
    for i, line in enumerate(lines):
        if (m := _HELD_ENTRY.match(line)) is None:
            continue
        section = re.compile(_VAR_SECTION.format(v=re.escape(m.group(1))))
        written = [j for j in range(i + 1, len(lines)) if section.match(lines[j])]
        if len(written) == 1:
            out.append(HeldEntry(i, m.group(2), m.group(3), written[0]))
    return out


def _held_at(lines: list[str], index: int, resource: str) -> HeldEntry | None:
    """The held entry of `resource` whose section line is line `index` (0-based), or whose `resources:` line is."""
    from dramigrate.helm.templatelines import parent_line

    return next(
        (
            e
            for e in held_entries(lines)
            if e.resource == resource and index in (e.section, parent_line(lines, e.section))
        ),
        None,
    )


def classify(template: str, line: int, resource: str, counted: tuple[str, ...] = ()) -> Pattern:
    """The pattern of the device request a finding mapped to `line` (1-based) of `template`; `counted`: the values
    keys the device count comes from, when known (dotted)."""
    lines = template.splitlines()
    if not 0 < line <= len(lines):
        return Pattern("F", line, "")
    text = lines[line - 1]
    stripped = text.strip()
    key = literal_key(text)
    if key and key.group(2) == resource and count_expression(key.group(3), True) is not None:
        return Pattern("A", line, stripped)
    if (held := _held_at(lines, line - 1, resource)) is not None:  # the key's line is the variable's
        return Pattern("A", held.line + 1, lines[held.line].strip())
    if (res := _container_resources(lines, line - 1)) >= 0:
        return classify(
            template, res + 1, resource, counted
        )  # a container mapped by its first line: its resources line
    if _TEMPLATED_KEY.match(text) and _section_range(lines, line - 1) >= 0:
        return Pattern("B", line, stripped)  # `{{ $k }}: {{ $v }}` in a range over `.Values.resources.limits`
    if _TEMPLATED_KEY.match(text) and _map_range(lines, line - 1) >= 0:
        return Pattern("B", line, stripped)  # `{{ $k }}:` then `toYaml $v` in a range over `.Values.x.resources`
    if _TEMPLATED_KEY.match(text):
        return Pattern("E", line, stripped)
    if re.search(r"\b(include|template)\s+\"", text):
        return Pattern("D", line, stripped)
    if (path := whole_read(lines, line - 1)) and not own_name(path):  # `resources:` then `toYaml .Values.flavor`
        return Pattern("B", line, stripped)
    if WHOLE_ITEM.match(text) or WHOLE_FIELDS.match(text):  # a container (or its fields) written whole from a map
        return Pattern("B", line, stripped)
    if is_key(text, "limits", "requests") and (child := _templated_child(lines, line - 1)) >= 0:
        return Pattern("E", child + 1, lines[child].strip())  # the section's `toYaml` beside it writes the rest
    read = map_reads(template).splitlines()  # line for line, each map serialised as `toYaml X`
    window = "\n".join(read[max(0, line - 3) : max(line + 3, _key_block_end(lines, line - 1))])
    letter = None if _reads_elsewhere(window, counted) else _map_pattern(window, template)
    if letter:
        return Pattern(letter, line, stripped)
    if _INCLUDE.search(window):
        return Pattern("D", line, stripped)
    return Pattern("F", line, stripped)


# `- {{- toYaml . | nindent 8 }}`: a list item written whole (a container of a `range` over a values list)
WHOLE_ITEM = re.compile(r"^\s*-\s*\{\{-?\s*toYaml\s+(\.|\$\w+)\s*\|\s*nindent\s+\d+\s*-?\}\}\s*$")
# `{{- toYaml $container_config | nindent 6 }}` (`$c | toYaml`, `toYaml .` in a `with`): a map written whole as keys
WHOLE_FIELDS = re.compile(
    r"^\s*\{\{-?\s*(?:toYaml\s+(\$\w+|\.)|(\$\w+|\.)\s*\|\s*toYaml)\s*\|\s*n?indent\s+(\d+)\s*-?\}\}\s*$"
)
_WHOLE_MAP = re.compile(r"\{\{-?\s*toYaml\s+(?:\$\w*)?\.Values((?:\.[A-Za-z_][\w-]*)+)\s*\|\s*nindent\s+\d+\s*-?\}\}")


def whole_read(lines: list[str], index: int) -> tuple[str, ...] | None:
    """When line `index` (0-based) is a `resources:` key whose block is one `toYaml` of a values path (spelled any way
    map_reads reads: `.Values.flavor | toYaml`, `toYaml (default dict .Values.flavor)`), that path; else None."""
    if item_key(lines[index]) != "resources:":
        return None
    body = [line for line in lines[index + 1 :] if line.strip()][:2]  # the map's line, and the next key's
    deeper = [len(line) - len(line.lstrip()) > line_indent(lines[index]) for line in body]
    whole = _WHOLE_MAP.fullmatch(map_reads(body[0]).strip()) if deeper[:1] == [True] else None
    if whole is None or deeper[1:] == [True]:
        return None
    return tuple(whole.group(1).lstrip(".").split("."))


def own_name(path: tuple[str, ...]) -> bool:
    """A values map keyed `resources` (or `*Resources`): the pass-through finds those itself, and whether the device
    is in the map read is its question (a helper in another branch may write it: z2jh's user placeholder)."""
    return str(path[-1]).lower().endswith("resources")


def _key_block_end(lines: list[str], index: int) -> int:
    """For a `resources:` key line (0-based `index`), one past its block: the lines below indented deeper, actions
    among them (ardge-vllm writes `{{- toYaml .Values.resources | nindent 12 }}` in the `else` of a 20-line `if` under
    `resources:`); else 0."""
    if item_key(lines[index]) != "resources:":
        return 0
    indent = len(lines[index]) - len(lines[index].lstrip(" "))
    end = index + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip(" ")) > indent):
        end += 1
    return end


def _map_pattern(window: str, template: str) -> str | None:
    """C or B when the lines around a device request pass a values resources map through (`with` it then `toYaml .`,
    or a `toYaml` of it); F for a `toYaml` of a variable the template builds the map in; None otherwise."""
    if re.search(rf"\bwith\s+(?:[.$][\w.]*|{PICKED_PROFILE}\.\w*)[Rr]esources\b", window) and (
        "toYaml ." in window or re.search(r"[{(]-?\s*\.\s*\|\s*toYaml", window)  # `toYaml .` or `. | toYaml`
    ):
        return "F" if re.search(r"\bwith\s+\$", window) and _var_built(template, window) else "C"
    if re.search(r"toYaml\s+\$", window) and _var_built(template, window):
        return "F"  # written from a variable the template adds the key to (tvarr's `limits:`)
    if (
        re.search(r"toYaml\s+\(?[.$][\w.]*[Rr]esources\b", window)
        or re.search(r"toYaml\s+\(\s*(?:mergeOverwrite|merge)\s+\(?[.$][\w.]*[Rr]esources\b", window)
        or re.search(r"toYaml\s+\$", window)
        or re.search(r'index\s+[.$][\w.]*(?:\s+"[^"]+")*\s+"[\w-]*[Rr]esources"\s*\|\s*toYaml', window)
        or re.search(r'toYaml\s+\(index\s+[.$][\w.]*(?:\s+"[^"]+")*\s+"[\w-]*[Rr]esources"\)', window)
    ):
        return "B"
    return None


def known_regex(rules: RuleSet) -> str:
    """The device resources any rule pack names (migrated, or report-only), as one Go (RE2) regular expression."""
    return _chart_regex(
        [r for r in rules.resources if r.match or (r.regex and not _NOT_RE2.search(r.regex.pattern))], rules
    )


def migrated_regex(rules: RuleSet) -> str:
    """The device resources the rule packs migrate, as one Go (RE2) regular expression for a template's `regexMatch`:
    each literal name and each rule's regex Go can read, its groups unnamed (names repeat across rules)."""
    return _chart_regex(
        [
            r
            for r in rules.resources
            if not r.report_only and r.device_class and (r.match or (r.regex and not _NOT_RE2.search(r.regex.pattern)))
        ],
        rules,
    )


def shares_regex(rules: RuleSet, taken: list[str], seen: list[str]) -> str:
    """The report-only slices of a device (HAMi's `nvidia.com/gpumem`, `gpumem-percentage`, `gpucores`) in the
    domains of the resources `taken`, of the packs of the slices `seen` holds (the names the chart renders or
    writes), as one Go (RE2) regular expression; "" when `seen` holds none. A whole device beside a slice of the
    same vendor's is a share of one device, which the manifest migration leaves as it is (detect.py): so does the
    DRA branch of a map that holds one."""

    def sliced(r: ResourceRule) -> bool:
        return r.report_only not in ("", "config")

    domains = {n.split("/")[0] for n in taken if "/" in n}
    packs = {m.rule.pack for n in seen if (m := rules.lookup(n)) and sliced(m.rule) and n.split("/")[0] in domains}
    prefixes = tuple(re.escape(d) + "/" for d in domains)
    chosen = [
        r
        for r in rules.resources
        if sliced(r)
        and r.pack in packs  # the sharing scheme the chart uses (HAMi's), not every slice of the domain
        and (r.match.split("/")[0] in domains if r.match else bool(r.regex) and r.regex.pattern.startswith(prefixes))
        and (r.match or not _NOT_RE2.search(r.regex.pattern))
    ]
    return _chart_regex(chosen, rules) if chosen else ""


_DOMAIN = re.compile(r"^((?:[a-z0-9-]+\\\.)+[a-z0-9-]+/)(.+)$")  # `nvidia\.com/` and the rest of an escaped name


def _chart_regex(chosen: list[ResourceRule], rules: RuleSet) -> str:
    """The names of `chosen` as one regular expression a chart's template carries, written as a maintainer would:
    each domain once (`nvidia.com/(?:gpu|mig-...)`, escaped), each name once, none of a demo pack (`demo: true`, the
    example driver's made-up example.com/gpu, which no chart asks for)."""
    tails: dict[str, list[str]] = {}  # domain ("" for a name without one) -> its alternatives, in the packs' order
    for r in chosen:
        if rules.packs.get(r.pack, {}).get("demo"):
            continue
        part = re.escape(r.match) if r.match else re.sub(r"\(\?P<\w+>", "(?:", r.regex.pattern)  # one name, one group
        m = _DOMAIN.match(part) if not _top_level_or(part) else None
        domain, tail = (m.group(1), m.group(2)) if m else ("", part)
        if tail not in tails.setdefault(domain, []):
            tails[domain].append(tail)
    parts = [
        alt
        for domain, alts in tails.items()
        for alt in (alts if not domain else [domain + (alts[0] if len(alts) == 1 else f"(?:{'|'.join(alts)})")])
    ]
    return f"^(?:{'|'.join(parts)})$"


def _top_level_or(pattern: str) -> bool:
    """Whether a regular expression has a `|` outside its groups and classes (it cannot take a common prefix)."""
    depth, escaped, in_class = 0, False, False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
    return False


class NotIdiomatic(RewriteError):
    """The template shape is not pattern A (or A in a shape the rewrite does not take)."""

    def __init__(self, pattern: Pattern, rel: str, why: str = "") -> None:
        self.pattern, self.rel, self.why = pattern, rel, why
        super().__init__(f"{rel}:{pattern.line}: {pattern.describe()}{': ' + why if why else ''}")
