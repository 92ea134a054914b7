"""One ResourceClaimTemplate for the pods of a chart whose claim templates differ only in their guard.

The pattern-A rewrite writes a claim template (and a name define) per pod that asks for devices. A chart whose
Deployment and Job take the same GPUs (`workloadType: deployment | job`), or whose one template holds a Deployment
per backend in an `if`/`else`, got the same template and name define twice (13 lines), each under its pod's guard:

    {{- if and .Values.dra.enabled (eq .Values.workloadType "deployment") (gt (int .Values.gpu.count) 0) }}
    apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata:
      name: {{ include "app.deployment.draClaimTemplateName" . }}
    ...
    {{- if and .Values.dra.enabled (eq .Values.workloadType "job") (gt (int .Values.gpu.count) 0) }}
    ... the same ...

Where the templates are the same text but for their name define, and the names the same but for the part after
what they share (`app-model-1-<hash>`, `app-model-2-<hash>`), one template stays, under `or` of the guards, named
with what they share (`app-model-<hash>`); every pod names it. A pod's claim comes from the template, so pods that
render together each still get their own claim, of the same spec; the claim templates' content per render is as
before (prove.canonical_claims compares them by content).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dramigrate.helm.goexpr import whole_root
from dramigrate.helm.oldcluster import _either
from dramigrate.helm.rewrite import _terms

_BLOCK = re.compile(
    r"^\{\{- if (?P<cond>.+) \}\}\n(?P<sep>---\n)?(?P<body>apiVersion: .*\nkind: ResourceClaimTemplate\n"
    r"(?:(?!\{\{).*\n)*?)\{\{- end \}\}\n",
    re.M,
)
_NAME = re.compile(r'^  name: \{\{ include "(?P<define>[^"]+)" \. \}\}$', re.M)
_DEFINE = r'^\{{\{{- define "{}" -\}}\}}\n(?P<text>.*)\n\{{\{{- end \}}\}}\n'
_HASHED = re.compile(r"^(?P<base>.+)-(?P<hash>\{\{ include [^\n]*\| sha256sum \| trunc 8 \}\})$")
_BLOCK_WORDS = re.compile(r"\{\{-?\s*(?:if|with|range|end|define|block)\b")


@dataclass(frozen=True)
class _Template:
    start: int
    stop: int
    terms: tuple[str, ...]
    sep: str
    body: str  # the document, its name define left out
    define: str
    define_span: tuple[int, int]
    base: str
    hash: str


def _templates(text: str) -> list[_Template]:
    """The file's claim templates that sit at its top level, reading no template variable, each named
    by a define of its own of `<base>-<hash of the spec>`."""
    out = []
    for m in _BLOCK.finditer(text):
        name = _NAME.search(m["body"])
        if name is None or "$" in m["cond"] or re.search(r"\$\w", m["body"]) or _BLOCK_WORDS.search(m["body"]):
            continue  # a variable may hold another value at another template's place
        define = re.search(_DEFINE.format(re.escape(name["define"])), text, re.M)
        hashed = _HASHED.match(define["text"]) if define else None
        if define is None or hashed is None or text.count(f'"{name["define"]}"') != 2:
            continue  # the define read elsewhere in the file too, or named otherwise
        terms = _terms(m["cond"])
        terms = terms[1:] if terms[0] == "and" else [m["cond"]]
        body = m["body"].replace(name["define"], "")
        where = (m.start(), m.end(), tuple(terms), m["sep"] or "", body)
        out.append(_Template(*where, name["define"], define.span(), hashed["base"], hashed["hash"]))
    return out


def _shared_base(bases: list[str]) -> str | None:
    """The longest start all `bases` share that ends where each of them ends or goes on with `-`, outside any
    action; None when there is none."""
    first = bases[0]
    for k in range(len(first), 0, -1):
        if k < len(first) and first[k] != "-":
            continue
        start = first[:k]
        if start.count("{{") != start.count("}}") or start.endswith("-"):
            continue
        if all(b.startswith(start) and (len(b) == k or b[k] == "-") for b in bases):
            return start
    return None


def one_template(chart: str, text: str, taken: str) -> tuple[str, dict[str, str]]:
    """`text` (the claim-template file) with the templates alike but for guard and name made one (the first one's
    place); and each name define the pods must now include instead, by the one they include. `taken`: the chart's
    other template text (a define named there is not reused)."""
    groups: dict[tuple[str, str], list[_Template]] = {}
    for t in _templates(text):
        groups.setdefault((t.body, t.hash), []).append(t)
    cuts: list[tuple[int, int, str]] = []
    renames: dict[str, str] = {}
    plain = f"{chart}.draClaimTemplateName"
    for alike in groups.values():
        base = _shared_base([t.base for t in alike]) if len(alike) > 1 else None
        if base is None:
            continue
        first = alike[0]
        define = plain if f'"{plain}"' not in text + taken and plain not in renames.values() else first.define
        terms = _either([list(t.terms) for t in alike])
        cond = terms[0] if len(terms) == 1 else "and " + " ".join(terms)
        document = first.body.replace('  name: {{ include "" . }}', f'  name: {{{{ include "{define}" . }}}}')
        cuts.append((first.start, first.stop, f"{{{{- if {cond} }}}}\n{first.sep}{document}{{{{- end }}}}\n"))
        name = f'{{{{- define "{define}" -}}}}\n{base}-{first.hash}\n{{{{- end }}}}\n'
        cuts.append((*first.define_span, name))
        for t in alike[1:]:
            cuts += [(t.start, t.stop, ""), (*t.define_span, "")]
        renames |= {t.define: define for t in alike if t.define != define}
    for start, stop, new in sorted(cuts, reverse=True):
        text = text[:start] + new + text[stop:]
    return text, renames


def renamed(text: str, renames: dict[str, str]) -> str:
    """A template's includes of the name defines one_template made one, naming the one."""
    for old, new in renames.items():
        text = text.replace(f'include "{old}"', f'include "{new}"')
    return text


_COUNT_TERM = re.compile(r"\(gt \(int (?P<count>\.Values(?:\.[A-Za-z_]\w*)+)\) 0\)")
_SPEC_LINE = re.compile(
    r'^    \{\{- include "[^"]+" \(dict "count" (?P<count>\S+) "Values" \.Values\) \| nindent 4 \}\}$', re.M
)


def ranged(chart: str, text: str) -> str:
    """`text` (the claim-template file) with the claim templates that differ only in their name and their count made
    one `range` over a dict of name -> count (kishore-insureguard: seven services' templates, each asking for
    `.Values.<service>.gpu` GPUs under the same switch): each kept its 9 lines where the range writes them once. Each
    pod still names its own template through its name define, which the range includes by name."""
    suffix = ".draClaimTemplateName"
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[_Template, str, str]]] = {}
    for t in _templates(text):
        counts = [m["count"] for term in t.terms if (m := _COUNT_TERM.fullmatch(term))]
        spec = _SPEC_LINE.search(t.body)
        label = t.define[len(chart) + 1 : -len(suffix)]
        if len(counts) != 1 or spec is None or spec["count"] != counts[0] or t.body.count("{{") != 2:
            continue
        if not (t.define.startswith(f"{chart}.") and t.define.endswith(suffix) and label and '"' not in label):
            continue
        others = tuple(term for term in t.terms if not _COUNT_TERM.fullmatch(term))
        body = t.body[: spec.start("count")] + "$count" + t.body[spec.end("count") :]
        groups.setdefault((body, others), []).append((t, label, counts[0]))
    cuts: list[tuple[int, int, str]] = []
    for (body, others), items in groups.items():
        if len(items) < 2:
            continue
        pairs = " ".join(f'"{label}" {count}' for _, label, count in items)
        cond = " ".join(["and", *(whole_root(o) for o in others), "(gt (int $count) 0)"])
        named = f'  name: {{{{ include (printf "{chart}.%s{suffix}" $name) $ }}}}'
        document = whole_root(body.replace('  name: {{ include "" . }}', "\0")).replace("\0", named)
        first = items[0][0]
        cuts.append(
            (
                first.start,
                first.stop,
                # each document after a `---` of its own: the range's first may be the file's first
                f"{{{{- range $name, $count := dict {pairs} }}}}\n{{{{- if {cond} }}}}\n---\n{document}"
                "{{- end }}\n{{- end }}\n",
            )
        )
        cuts += [(t.start, t.stop, "") for t, _, _ in items[1:]]
    for start, stop, new in sorted(cuts, reverse=True):
        text = text[:start] + new + text[stop:]
    return text
