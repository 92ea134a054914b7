"""Where a line of rendered output comes from: its template file and, where it can be said exactly, its line.

A template line becomes a pattern: its literal text, with every `{{ ... }}` action matching anything. The
rendered document is aligned to the template's lines by the longest monotonic chain of matches (an LCS
with a regex match instead of equality), so a rendered line maps to the template line that wrote it. Lines
that only actions wrote (`{{ toYaml .Values.resources | nindent 12 }}`) map to nothing: for them the
object's first line in the template is given instead, and the finding says so.

Streams (`helm template ... | dramigrate lint -`, and post-renderer input) carry their origin as
`# Source:` comments (helm template, Helm 3 post-renderers) or as the
`postrenderer.helm.sh/postrender-filename` annotation (Helm 4 post-renderers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dramigrate.memo import remember

_ACTION = re.compile(r"\{\{.*?\}\}")
_SOURCE = re.compile(r"^# Source: (.+?)\s*$")
_FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
_ANNOTATION_LINE = re.compile(r"^\s+" + re.escape(_FILENAME_ANNOTATION) + r"""\s*:\s*['"]?(.+?)['"]?\s*$""")
_DOC_MARKER = re.compile(r"^---(\s|$)")


@dataclass(frozen=True)
class LinePattern:
    regex: re.Pattern[str]
    literal: str  # the literal runs of the line, actions removed, one space apart (for quick rejection)


@lru_cache(maxsize=64)
def template_patterns(text: str) -> tuple[LinePattern | None, ...]:
    """One pattern per template line; None for lines with no literal text (actions, comments, blanks)."""
    out: list[LinePattern | None] = []
    in_action = False
    for line in text.splitlines():
        if in_action:
            end = line.find("}}")
            if end < 0:
                out.append(None)
                continue
            line = " " * (end + 2) + line[end + 2 :]
            in_action = False
            prefix_action = True
        else:
            prefix_action = False
        open_at = line.rfind("{{")
        if open_at >= 0 and line.find("}}", open_at) < 0:
            line = line[:open_at] + ("{{-}}" if line.startswith("{{-", open_at) else "{{}}")  # keeps its trim
            in_action = True
        parts = _ACTION.split(line)
        for k, action in enumerate(_ACTION.findall(line)):  # `{{-` and `-}}` trim the space beside them
            if action.startswith("{{-"):
                parts[k] = parts[k].rstrip()
            if action.endswith("-}}"):
                parts[k + 1] = parts[k + 1].lstrip()
        # the literal runs apart: the quick check's word is one run (`{{ .name }}: "{{ .count }}"` has no `""`)
        literal = " ".join(p.strip() for p in parts if p.strip())
        if not literal or literal.startswith("#"):
            out.append(None)
            continue
        parts[-1] = parts[-1].rstrip()  # trailing blanks (`resources: `): matched by the `\s*` below, not escaped
        pattern = ".*?".join(re.escape(p) for p in parts)
        if prefix_action:
            pattern = ".*?" + pattern.lstrip()
        out.append(LinePattern(re.compile(pattern.rstrip() + r"\s*"), literal))
    return tuple(out)


@lru_cache(maxsize=64)  # a finding's template and object are aligned by map_line, then again by through_include
def align(template: str, rendered: str) -> tuple[int | None, ...]:
    """For each rendered line, the 0-based template line that wrote it, or None.

    A template line with literal children (`limits:` then `cpu: "1"`) is only kept as the match of a
    rendered line if some rendered child matches one of them: else an `else` branch's literal block could
    claim a line that `toYaml` wrote. Rejected pairs are left out and the alignment is computed again.
    """
    patterns = template_patterns(template)
    t_lines = template.splitlines()
    lines = rendered.splitlines()
    candidates: list[list[int]] = []
    for line in lines:
        stripped = line.strip()
        found = []
        if stripped and not stripped.startswith("#"):
            for j, pat in enumerate(patterns):
                if pat is not None and _longest(pat.literal) in line and pat.regex.fullmatch(line):
                    found.append(j)
        candidates.append(found)
    forbidden: set[tuple[int, int]] = set()
    out: list[int | None] = [None] * len(lines)
    for _ in range(8):
        out = _chain(candidates, forbidden, len(lines), [len(p.literal) if p else 0 for p in patterns])
        bad = {
            (i, j)
            for i, j in enumerate(out)
            if j is not None and not _children_agree(i, j, out, lines, t_lines, patterns)
        }
        if not bad:
            bad = _misplaced(out, candidates, forbidden, lines, t_lines, patterns)
        if not bad:
            break
        forbidden |= bad
    return tuple(out)


def _chain(
    candidates: list[list[int]], forbidden: set[tuple[int, int]], size: int, literal: list[int]
) -> list[int | None]:
    """The longest chain of (rendered, template) pairs increasing in both; of chains as long, the one whose template
    lines hold the most literal text (`nvidia.com/gpu: {{ .count }}` rather than a range's `{{ $k }}: {{ $v }}`)."""
    best: dict[int, tuple[tuple[int, int], tuple[tuple[int, int], ...]]] = {}  # template line -> best chain there
    for i, found in enumerate(candidates):
        updates = {}
        for j in found:
            if (i, j) in forbidden:
                continue
            prev = max((v for k, v in best.items() if k < j), key=lambda v: v[0], default=((0, 0), ()))
            updates[j] = ((prev[0][0] + 1, prev[0][1] + literal[j]), (*prev[1], (i, j)))
        for j, v in updates.items():
            if j not in best or v[0] > best[j][0]:
                best[j] = v
    chain = max(best.values(), key=lambda v: v[0], default=((0, 0), ()))[1]
    out: list[int | None] = [None] * size
    for i, j in chain:
        out[i] = j
    return out


def _block(lines: list[str], at: int, literal: list[bool] | None = None) -> range:
    """Lines after `at` indented deeper than it (blank, comment and action-only lines do not end it)."""
    indent = _raw_indent(lines[at])
    end = at + 1
    while end < len(lines):
        text = lines[end]
        meaningful = text.strip() and not text.strip().startswith("#") and (literal is None or literal[end])
        if meaningful and _raw_indent(text) <= indent:
            break
        end += 1
    return range(at + 1, end)


def _children_agree(
    i: int,
    j: int,
    mapping: list[int | None],
    lines: list[str],
    t_lines: list[str],
    patterns: tuple[LinePattern | None, ...],
) -> bool:
    """A rendered line may come from template line j unless j's block has no line that may write several lines (an
    action alone on its line, one that serialises, indents or includes, a `range`) and a rendered child of it is not
    one of the block's lines: a `limits:` whose block writes `cpu: {{ .Values.cpu }}` in one branch of an `if` is not
    the `limits:` that a `toYaml .Values.resources` in the other branch wrote with a device key under it."""
    literal = [p is not None for p in patterns]
    t_block = _block(t_lines, j, literal)
    # `resources: {{- toYaml . | nindent 10 }}`: the line's own action writes the children
    if _writes(t_lines[j]) or any(_writes_lines(t_lines[k], patterns[k]) for k in t_block):
        return True
    block = set(t_block)
    children = [k for k in _block(lines, i) if lines[k].strip() and not lines[k].strip().startswith("#")]
    return all(mapping[k] in block for k in children)


def _misplaced(
    out: list[int | None],
    candidates: list[list[int]],
    forbidden: set[tuple[int, int]],
    lines: list[str],
    t_lines: list[str],
    patterns: tuple[LinePattern | None, ...],
) -> set[tuple[int, int]]:
    """The pairs to drop where a rendered line maps outside the template block of the line its nearest mapped
    rendered ancestor maps to: the ancestor's, when another of its candidates holds the line's template line in its
    block (a worker without `resources` renders the `else` branch's own `resources:`, not the one above `toYaml
    $res`), else the line's (a `limits:` and device key that `toYaml $res` wrote are not the `else` branch's:
    smg-gateway)."""
    literal = [p is not None for p in patterns]
    bad = set()
    for i, j in enumerate(out):
        up = _ancestor(i, out, lines) if j is not None else None
        if j is None or up is None or j in _block(t_lines, out[up], literal):  # type: ignore[arg-type]
            continue

        def holds(
            u: int, up: int = up, j: int = j
        ) -> bool:  # the ancestor's other candidate, its rendered children agreeing
            moved = [u if k == up else m for k, m in enumerate(out)]
            return j in _block(t_lines, u, literal) and _children_agree(up, u, moved, lines, t_lines, patterns)

        other = [u for u in candidates[up] if (up, u) not in forbidden and holds(u)]
        bad.add((up, out[up]) if other else (i, j))  # type: ignore[arg-type]
    return bad


def _ancestor(i: int, out: list[int | None], lines: list[str]) -> int | None:
    """The nearest rendered line above i, indented less, that maps to a template line (each less indented than the
    one before); None if there is none."""
    indent = _raw_indent(lines[i])
    for k in range(i - 1, -1, -1):
        text = lines[k]
        if not text.strip() or text.strip().startswith("#") or _raw_indent(text) >= indent:
            continue
        if out[k] is not None:
            return k
        indent = _raw_indent(text)
    return None


_CONTROL = re.compile(r"^(if|else|end|range|with|define|block|break|continue)\b|^/\*|^\$\w*\s*:?=")


def _writes(line: str) -> bool:
    """Whether a template line has an action that writes output (not control flow, comments, assignments)."""
    for action in _ACTION.findall(line):
        body = action[2:-2].strip().strip("-").strip()
        if body and not _CONTROL.match(body):
            return True
    return "{{" in line and "}}" not in line[line.rfind("{{") :]


_SEVERAL = re.compile(r"\b(?:n?indent|toYaml|toJson|toPrettyJson|include|template|tpl|range)\b")


def _writes_lines(line: str, pattern: LinePattern | None) -> bool:
    """Whether a template line may write several rendered lines: an action alone on its line that writes output
    (`{{ toYaml . | nindent 10 }}`), an action left open, or one that serialises, indents, includes or loops."""
    if "{{" in line and "}}" not in line[line.rfind("{{") :]:
        return True
    actions = _ACTION.findall(line)
    return any(_SEVERAL.search(a) for a in actions) or (pattern is None and _writes(line))


def _raw_indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@lru_cache(maxsize=4096)
def _longest(literal: str) -> str:
    return max(literal.split(), key=len, default="")


OBJECT_START = "the line is where the object starts in the template: a template expression writes the value"


@dataclass(frozen=True)
class Mapped:
    line: int  # 1-based line in the template
    exact: bool
    note: str = ""  # for an inexact line: which line it is instead


def map_line(template: str, rendered: str, offset: int, key: str = "") -> Mapped:
    """The template line of rendered line `offset` (0-based). Exact when that template line wrote it
    literally (and contains `key`); else the nearest enclosing key the template writes literally (such as
    `resources:` above a `toYaml` block); else the line where the object starts."""
    mapping = align(template, rendered)
    lines = template.splitlines()
    rendered_lines = rendered.splitlines()
    j = mapping[offset] if 0 <= offset < len(mapping) else None
    if j is not None and (not key or key in lines[j] or not re.search(r"[A-Za-z0-9]", _ACTION.sub("", lines[j]))):
        return Mapped(j + 1, True)  # the line holds the key, or writes it from an action (`{{ .res }}: {{ .n }}`)
    if 0 <= offset < len(rendered_lines):
        indent = _raw_indent(rendered_lines[offset])
        for i in range(offset - 1, -1, -1):
            text = rendered_lines[i]
            if not text.strip() or text.strip().startswith("#") or _raw_indent(text) >= indent:
                continue
            indent = _raw_indent(text)
            if mapping[i] is not None:
                return Mapped(
                    mapping[i] + 1,
                    False,
                    f"line of the enclosing `{text.strip()}` in the template: a template expression writes the value",
                )
    start = next((m for m in mapping if m is not None), None)
    return Mapped(
        start + 1 if start is not None else 1,
        False,
        OBJECT_START,
    )


def find_in_files(files: dict[str, str], rendered_line: str) -> tuple[str, int] | None:
    """The one file line (of chart files outside templates/) that a rendered line's text came from, as
    `tpl` or `.Files.Get` pull them in: the same text, indentation aside."""
    target = rendered_line.strip()
    if not target:
        return None
    hits = []
    for name, text in files.items():
        lines = [line.strip() for line in text.splitlines()]  # indentation aside; split once, not once a line
        for n, pat in enumerate(template_patterns("\n".join(lines)), start=1):
            literal = pat is None and lines[n - 1] == target
            if literal or (pat is not None and _longest(pat.literal) in target and pat.regex.fullmatch(target)):
                hits.append((name, n))
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class StreamPart:
    start: int  # 1-based first line of the document (after its markers)
    end: int  # 1-based last line
    source: str


def stream_sources(text: str) -> list[StreamPart]:
    """Documents of a rendered stream with the template they came from: `# Source:` comments (helm
    template, Helm 3 post-renderers) or the Helm 4 post-renderer filename annotation.

    A template whose output begins with its own `---` (bjw-s common writes `---` before each object) prints as
    `# Source:` then `---` in `helm template`, as Helm's split leaves it: the comment-only document between the
    two markers is empty, so the source carries over to the document after it. Read once a text: a proof reads
    each value set's render and its migration several times (nebius-ray-cluster: 28 reads of 1 MB renders)."""
    known = _SOURCES.get(text)
    if known is None:
        known = remember(_SOURCES, text, _stream_sources(text), 32)
    return list(known)


_SOURCES: dict[str, list[StreamPart]] = {}


def _stream_sources(text: str) -> list[StreamPart]:
    lines = text.splitlines()
    parts: list[StreamPart] = []
    start, source, content = 1, "", False
    for n, line in enumerate(lines, start=1):
        if _DOC_MARKER.match(line):
            carried = n < len(lines) and _SOURCE.match(lines[n])  # the next document names its own template
            if source and not content and line.rstrip() == "---" and not carried:
                start = n + 1  # nothing but the Source comment since the last marker: same template's document
                continue
            if source:
                parts.append(StreamPart(start, n - 1, source))
            start, source, content = n + 1, "", False
            continue
        if not content and line.strip() and not line.lstrip().startswith("#"):
            content = True
        m = _SOURCE.match(line) or _ANNOTATION_LINE.match(line)
        if m and not source:
            source = m.group(1)
            if line.startswith("# Source:"):
                start = n + 1
    if source:
        parts.append(StreamPart(start, len(lines), source))
    return parts


def source_of(parts: list[StreamPart], line: int) -> StreamPart | None:
    return next((p for p in parts if p.start <= line <= p.end), None)


_INCLUDE_CALL = re.compile(r'\b(?:include|template)\s+"([^"]+)"')
_DEFINE_LINE = re.compile(r'\{\{-?\s*define\s+"([^"]+)"\s*-?\}\}')


@dataclass(frozen=True)
class Define:
    name: str
    file: str  # path relative to the chart root (a library chart's: charts/<dir>/templates/_x.tpl)
    start: int  # 0-based line of the `define` action
    body: str  # its text up to the next `define` (or the end of the file)


def defines(files: dict[str, str]) -> dict[str, Define]:
    """The named templates of a chart's template files (its own and its unpacked subcharts', library charts
    among them): name -> where it is. The first of a name wins, as Helm's own template first."""
    out: dict[str, Define] = {}
    for name, text in files.items():
        lines = text.splitlines()
        starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _DEFINE_LINE.search(line))]
        for k, (i, define) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
            out.setdefault(define, Define(define, name, i, "\n".join(lines[i:end])))
    return out


def through_include(
    template: str, rendered: str, offset: int, key: str, named: dict[str, Define]
) -> tuple[Define, Mapped, int] | None:
    """A rendered document whose template writes none of its lines itself (`{{ include "lib.deployment" . }}`, a
    library chart's define): the define, among those the template includes, that writes most of the document's
    lines, the line of rendered line `offset` there (1-based, in the define's file), and the 1-based template line
    of the include. None when the template writes a line of the document or includes no define that does."""
    if any(m is not None for m in align(template, rendered)):
        return None
    best: tuple[int, Define, int] | None = None
    for i, line in enumerate(template.splitlines()):
        for name in _INCLUDE_CALL.findall(line):
            found = named.get(name)
            if found is None:
                continue
            score = sum(m is not None for m in align(found.body, rendered))
            if score and (best is None or score > best[0]):
                best = (score, found, i)
    if best is None:
        return None
    _, found, at = best
    mapped = map_line(found.body, rendered, offset, key)
    return found, Mapped(found.start + mapped.line, mapped.exact, mapped.note), at + 1


def within_include(
    template: str, rendered: str, offset: int, key: str, named: dict[str, Define], at: int
) -> tuple[Define, Mapped, int] | None:
    """A rendered line whose nearest line the template writes is line `at` (1-based: a pod's `spec:` above `{{-
    include "app.podSpec" . | nindent 6 }}`), written by a define that a line of at's block includes alone, or at's
    line itself after its key (`template: {{ include "app.pod" . | nindent 4 }}`): the
    define, the line of rendered line `offset` there (1-based, in the define's file) and the 1-based line of the
    include. None when no such include writes a line of the document the define's own lines enclose it with."""
    lines = template.splitlines()
    best: tuple[int, Define, Mapped, int] | None = None
    for i in [at - 1, *_block(lines, at - 1)]:  # at's own line: `template: {{ include "app.pod" . | nindent 4 }}`
        text = lines[i].strip() if i >= at else re.sub(r"^(?:spec|template):\s*", "", lines[i].strip())
        alone = re.fullmatch(r"\{\{-?\s*(?:include|template)\s+\"([^\"]+)\"[^{}]*\}\}", text)
        found = named.get(alone.group(1)) if alone else None
        if found is None:
            continue
        shift = re.search(r"\|\s*n?indent\s+(\d+)", lines[i])  # the define's lines as the include indents them
        pad = " " * int(shift.group(1)) if shift else ""
        body = "\n".join(pad + line if line.strip() else line for line in found.body.splitlines())
        mapped = map_line(body, rendered, offset, key)
        if mapped.note == OBJECT_START:
            continue
        score = sum(m is not None for m in align(body, rendered))
        if best is None or score > best[0]:
            best = (score, found, Mapped(found.start + mapped.line, mapped.exact, mapped.note), i + 1)
    return None if best is None else best[1:]
