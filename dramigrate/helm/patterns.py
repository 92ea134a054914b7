"""How a device request reaches a chart's rendered pod, read from the template line that writes it.

A) a literal device key with a values (or literal) count: `nvidia.com/gpu: {{ .Values.gpus }}`;
B) `toYaml` of a values `resources` map; C) `with .Values.x.resources` and `toYaml .`;
D) a named helper or library include; E) the resource *name* comes from values; F) anything else.
The idiomatic rewrite (idiomatic.py) handles A, and E where the name is one values key (perhaps with a literal
`default`, perhaps held in a template variable); passthrough.py B and C; helper.py D; mapvars.py F where the
container's resources are a map built in template variables; the others are reported with the pattern and the
first template line (or rewritten by the engine when the user asks for `--chart-style engine`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dramigrate.rules import RuleSet

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
_TEMPLATED_KEY = re.compile(r"^\s*(?:-\s+)?[\"']?\{\{[^}]*\}\}[^:]*:")
# pattern E as the idiomatic rewrite takes it: `{{ .Values.gpu.type }}: N`, `{{ .Values.x | default "nvidia.com/gpu" }}`
# or a variable assigned from values (`{{ $gpuKey }}: N` after `{{- $gpuKey := .Values.gpuKey }}`)
_VALUES_PATH = r"\$?\.Values(?:\.[A-Za-z_]\w*)+"
_TERM = rf"{_VALUES_PATH}|\$[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_NAMED_KEY = re.compile(
    rf"""^\s*(["']?)\{{{{-?\s*(?:default\s+("[^"]*")\s+({_TERM})|({_TERM})(?:\s*\|\s*default\s+("[^"]*"))?)"""
    r"""\s*-?\}\}\1\s*:\s*(\S.*)$"""
)
_LITERAL = r'"[^"]*"|dict|list|\d+'
_DEFAULTED = re.compile(rf"(.+?)\s*\|\s*default\s+({_LITERAL})|default\s+({_LITERAL})\s+(.+)", re.S)


@dataclass(frozen=True)
class Pattern:
    letter: str
    line: int  # 1-based template line
    text: str  # that line, stripped

    def describe(self) -> str:
        return f"pattern {self.letter} ({PATTERNS[self.letter]})"


def count_expression(value: str) -> str | None:
    """The Go expression of a device count as written after the key: `{{ .Values.gpus }}`,
    `"{{ .Values.gpus }}"`, `{{ .Values.gpus | quote }}` or a literal integer; None otherwise."""
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
    if not expr or "{{" in expr or expr.startswith(("if ", "with ", "range ", "include ", "template ")):
        return None
    return expr


def named_key(line: str, text: str = "") -> tuple[str, tuple[str, ...], str | None, str] | None:
    """A device key whose name is one values key (`{{ $.Values.gpu.type }}: {{ $.Values.gpu.count }}`, perhaps with a
    literal `default`), or a variable of `text` assigned from one (`{{ $gpuKey }}: N`): (the name's Go expression, its
    values path, the default or None, the text after the key)."""
    m = _NAMED_KEY.match(line)
    if m is None:
        return None
    term, default = (m.group(3), m.group(2)) if m.group(3) else (m.group(4), m.group(5))
    expr = f"{term} | default {default}" if default else term
    resolved = _values_path(expr, text, True)
    if resolved is None:
        return None
    keys, default = resolved
    return expr, keys, default[1:-1] if default else None, m.group(6)


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
    elif (var := re.fullmatch(r"\$([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)", expr)) and var.group(1) not in seen:
        bodies = re.findall(rf"\{{{{-?\s*\${var.group(1)}\s*(:?=)\s*(.*?)\s*-?\}}\}}", text, re.S)
        if len(bodies) != 1 or bodies[0][0] != ":=":  # assigned once: a reassignment may read another key
            return None
        expr, fields, seen = bodies[0][1], var.group(2), seen | {var.group(1)}
    else:
        return None
    got = _values_path(expr, text, whole and not fields, seen)
    if got is None:
        return None
    own = default if whole and default.startswith('"') else ""  # applies when what it defaults is empty
    return (*got[0], *fields.split(".")[1:]), got[1] if got[1].strip('"') else own or got[1]


def name_keys(texts: list[str]) -> dict[tuple[str, ...], str | None]:
    """The values keys that name a device resource in these templates (pattern E keys), each with its default."""
    return {k[1]: k[2] for text in texts for line in text.splitlines() if (k := named_key(line, text)) is not None}


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


def _section_built(template: str) -> bool:
    from dramigrate.helm.mapvars import site  # mapvars imports this module's users

    found = site(template)
    return found is not None and found.section >= 0


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


def classify(template: str, line: int, resource: str) -> Pattern:
    """The pattern of the device request a finding mapped to `line` (1-based) of `template`."""
    lines = template.splitlines()
    if not 0 < line <= len(lines):
        return Pattern("F", line, "")
    text = lines[line - 1]
    stripped = text.strip()
    key = _LITERAL_KEY.match(text)
    if key and key.group(2) == resource and count_expression(key.group(3)) is not None:
        return Pattern("A", line, stripped)
    if _TEMPLATED_KEY.match(text):
        return Pattern("E", line, stripped)
    if re.search(r"\b(include|template)\s+\"", text):
        return Pattern("D", line, stripped)
    if stripped in ("limits:", "requests:") and (child := _templated_child(lines, line - 1)) >= 0:
        return Pattern("E", child + 1, lines[child].strip())  # the section's `toYaml` beside it writes the rest
    window = "\n".join(lines[max(0, line - 3) : line + 3])
    if re.search(r"\bwith\s+[.$][\w.]*[Rr]esources\b", window) and (
        "toYaml ." in window or re.search(r"[{(]-?\s*\.\s*\|\s*toYaml", window)  # `toYaml .` or `. | toYaml`
    ):
        return Pattern("C", line, stripped)
    if re.search(r"toYaml\s+\$", window) and _section_built(template):
        return Pattern("F", line, stripped)  # `limits:` written from a variable the template adds the key to (tvarr)
    if (
        re.search(r"toYaml\s+\(?[.$][\w.]*[Rr]esources\b", window)
        or re.search(r"toYaml\s+\(\s*(?:mergeOverwrite|merge)\s+\(?[.$][\w.]*[Rr]esources\b", window)
        or re.search(r"toYaml\s+\$", window)
        or re.search(r'index\s+[.$][\w.]*(?:\s+"[^"]+")*\s+"[\w-]*[Rr]esources"\s*\|\s*toYaml', window)
    ):
        return Pattern("B", line, stripped)
    if re.search(r"\b(include|template)\s+\"", window):
        return Pattern("D", line, stripped)
    return Pattern("F", line, stripped)
