"""One claim-spec define per device class for a chart whose templates ask for the same devices.

The idiomatic rewrite writes a `<chart>.<template>.draClaimSpec` define for each pod that asks for devices, and a chart
with one template per serving profile (crusoe's eight KServe InferenceServices) got the same ten-line spec eight times,
differing only in the values key of the count. Where two or more of those defines have the same text but for that
count, the spec is written once as `<chart>.draClaimSpec` (or `<chart>.draClaimSpec.<vendor>` when the chart's
templates ask for several classes), taking the count from a dict, and each pod's claim template and name pass it
their own in place of the pod's define (which is left out; a pod's define stays, passing the count, where something
includes it with another argument than the root):

    {{- include "app.draClaimSpec" (dict "count" .Values.large.gpus "Values" .Values) | nindent 4 }}

Both render the same text, so the claim templates' names (a hash of the spec) and the pods stay as they were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC_DEFINE = re.compile(r'\{\{- define "(?P<name>[^"]+\.draClaimSpec)" -\}\}\n(?P<body>.*?)\{\{- end \}\}\n', re.S)
_COUNT = re.compile(r"\{\{ int (?P<arg>[\w.$]+|\([^{}]*\)) \}\}$", re.M)
_LITERAL = re.compile(r"^(?P<key> +count: )(?P<arg>[0-9]+)$", re.M)  # a pod's literal count (`nvidia.com/gpu: 1`)
_ACTION = re.compile(r"\{\{.*?\}\}", re.S)
_CLASS_READ = re.compile(r'\{\{ \.Values\.dra\.deviceClassName(?: \| default "[^"{}]*")? \}\}')
# a values key the spec reads (a node label's value in a CEL selector, _with_label_exprs): the dict passes .Values
_VALUES_READ = re.compile(r"\{\{ \.Values(?:\.\w+)+ \}\}")
_CLASS = re.compile(r'deviceClassName: (?:\{\{ \.Values\.dra\.deviceClassName \| default "([^"]*)" \}\}|([\w.-]+))')
SHARED_COUNT = "{{ int .count }}"


@dataclass(frozen=True)
class _Spec:
    section: int  # the index of the section the define is in
    start: int
    stop: int
    name: str
    arg: str  # the count, as the define's only argument


def _shareable(sections: list[str]) -> dict[str, list[_Spec]]:
    """The pods' spec defines by their text with the count as `.count`: those that read nothing but one count, the
    values' device class and values keys (a spec with a template variable or a lookup in it stays the pod's own)."""
    shapes: dict[str, list[_Spec]] = {}
    for k, section in enumerate(sections):
        for m in _SPEC_DEFINE.finditer(section):
            args = {c["arg"] for c in _COUNT.finditer(m["body"])}
            literals = list(_LITERAL.finditer(m["body"]))
            if not args and len(literals) == 1:  # a literal count: passed as the others pass theirs
                arg = literals[0]["arg"]
                shape = _LITERAL.sub(lambda c: c["key"] + SHARED_COUNT, m["body"])
            elif len(args) == 1:
                arg = args.pop()
                shape = m["body"].replace(f"{{{{ int {arg} }}}}", SHARED_COUNT)
            else:
                continue
            if all(
                a == SHARED_COUNT or _CLASS_READ.fullmatch(a) or _VALUES_READ.fullmatch(a)
                for a in _ACTION.findall(shape)
            ):
                shapes.setdefault(shape, []).append(_Spec(k, m.start(), m.end(), m["name"], arg))
    return {shape: specs for shape, specs in shapes.items() if len(specs) > 1}


def _names(chart: str, shapes: list[str], taken: str) -> list[str] | None:
    """The shared defines' names: `<chart>.draClaimSpec`, or one per class (`<chart>.draClaimSpec.amd`); None when
    they would not differ or the chart has such a define already."""
    base = f"{chart}.draClaimSpec"
    if len(shapes) == 1:
        names = [base]
    else:
        labels = []
        for shape in shapes:
            m = _CLASS.search(shape)
            parts = (m[1] or m[2]).split(".") if m else []
            labels.append(parts[1] if len(parts) > 2 else "-".join(parts))
        names = [f"{base}.{label}" for label in labels]
    if len(set(names)) != len(names) or any(f'"{n}"' in taken for n in names):
        return None
    return names


def shared_specs(chart: str, sections: list[str]) -> list[str]:
    """The claim-template sections with the spec defines of the same text but for their count written once (one
    define per shape, after the last section) and each pod's define passing it its count; as they were otherwise."""
    shapes = _shareable(sections)
    names = _names(chart, list(shapes), "".join(sections)) if shapes else None
    if not names:
        return sections
    out = list(sections)
    edits: dict[int, list[tuple[_Spec, str]]] = {}
    inlined: dict[str, str] = {}  # a pod's define -> the call of the shared one that stands for it
    for name, (shape, specs) in zip(names, shapes.items(), strict=True):
        values = ' "Values" .Values' if ".Values" in shape else ""
        for spec in specs:
            call = f'include "{name}" (dict "count" {spec.arg}{values})'
            args = re.findall(r'include "' + re.escape(spec.name) + r'" (\S+)', "".join(sections))
            if args and all(a == "." for a in args):  # included with the root only: the call in its place
                inlined[spec.name] = call
                text = ""
            else:
                text = f'{{{{- define "{spec.name}" -}}}}\n{{{{ {call} }}}}\n{{{{- end }}}}\n'
            edits.setdefault(spec.section, []).append((spec, text))
    for k, own in edits.items():
        for spec, text in sorted(own, key=lambda e: e[0].start, reverse=True):
            out[k] = out[k][: spec.start] + text + out[k][spec.stop :]
        for define, call in inlined.items():
            out[k] = out[k].replace(f'include "{define}" .', call)
    out[-1] += "".join(
        f'{{{{- define "{name}" -}}}}\n{shape}{{{{- end }}}}\n' for name, shape in zip(names, shapes, strict=True)
    )
    return out
