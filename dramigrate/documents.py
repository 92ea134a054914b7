"""YAML documents that survive a round trip: comments, quoting, indentation, CRLF, BOM, untouched documents.

A file is split into documents on `---` lines. Each document is parsed on its own with ruamel.yaml's
round-trip loader, so line numbers are real and an untouched document is written back byte for byte.
An edited document is dumped again, and only the lines the edit changed replace the original lines
(a three-way merge), so ruamel's own normalisation of untouched lines never reaches the user's file.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from dramigrate.findings import InputError
from dramigrate.limits import DEFAULT as DEFAULT_LIMITS
from dramigrate.limits import MAX_EDITED_LINES, Limits, check_structure, nodes_and_recursive_alias, size_message
from dramigrate.longints import round_trip_constructor
from dramigrate.memo import remember

MAX_NODES = 2_000_000
# ruamel's round-trip parse takes some 20 µs a value: a document the fast reader declines (an anchor, a tag, a float)
# is bounded before it, per document and per file (a 6 MB flow list took 70 s and 2.8 GB before MAX_NODES refused it)
MAX_ROUND_TRIP_VALUES = 200_000
MAX_ROUND_TRIP_FILE_VALUES = 1_000_000
# and lines, which cost ruamel's scanner without being values (comments, block scalars: limits.MAX_EDITED_LINES);
# per file as many as per document: fix rewrites some 5 ms a workload, and 16,500 GPU Deployments in 300,000 lines
# took 90 s of CPU (100,000 lines: about 30 s)
MAX_ROUND_TRIP_LINES = MAX_EDITED_LINES
MAX_ROUND_TRIP_FILE_LINES = MAX_EDITED_LINES
_MARKER = re.compile(r"^---[ \t]*(#.*)?$")
# a `---` line is a match of this that starts a line (_marker_lines): a pattern that starts with a literal is searched
# for with a fast scan, where `^---` with re.M was tried at every character of every file
_MARKERS = re.compile(r"---[ \t]*(?:#[^\n]*)?$", re.M)
_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # splitlines() breaks other than \n
_ASCII_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"  # the characters of _LINE_BREAKS below U+0080


def odd_breaks(text: str) -> bool:
    """_LINE_BREAKS.search(text) is not None: in ASCII text, a substring test per character (a fast scan in C, where
    the regex tries its class at every character)."""
    if text.isascii():
        return any(c in text for c in _ASCII_BREAKS)
    return _LINE_BREAKS.search(text) is not None


LINE_END = re.compile("\r\n|\r|\n")  # the line ends Path.read_text reads as \n
CRLF_OR_LF = re.compile("\r\n|\n")  # the line ends of a file that holds a CR alone inside a line (a comment)
_YAML_BREAKS = re.compile("\r(?!\n)|[\n\x85\u2028\u2029]")  # the line breaks YAML's readers count lines by


@dataclass
class Document:
    """One YAML document of a file: its raw text, where it starts, and its parsed round-trip data."""

    head: str  # the `---` marker line, or "" for a first document without one
    body: str
    start_line: int  # 1-based line of the body's first line in the file
    data: Any = None
    parsed: bool = False
    baseline: str | None = None  # ruamel's dump of the document before any edit
    edited: bool = False
    appended: list[str] = field(default_factory=list)  # new documents to write right after this one
    helm_render: bool = False  # a chart's rendered output: a repeated key is read as Helm reads it (helm_constructor)
    # False: the document's edited text is read only as objects (a chart proof's migration of a render), so its
    # round-trip data may leave comments and blank lines out (rtcompose, comments=False)
    comments: bool = True
    # the values of data as limits.expands_within counts them, when the fast parse counted them while building data
    # (no alias in it); -1 when nobody counted (ruamel's data, or data with an alias): a bound then walks it
    counted: int = -1
    # the values its file's documents may still give ruamel (MAX_ROUND_TRIP_FILE_VALUES), one list for the file
    round_trip_budget: list[int] = field(
        default_factory=lambda: [MAX_ROUND_TRIP_FILE_VALUES, MAX_ROUND_TRIP_FILE_LINES], repr=False
    )

    @property
    def tags(self) -> str:
        """The `%TAG` directive lines before the document's `---` (they name tag handles its body uses), or ""."""
        if "%" not in self.head:
            return ""
        return "".join(line for line in self.head.splitlines(keepends=True) if line.startswith("%TAG"))

    def line_of(self, node: Any, key: Any = None) -> tuple[int, int]:
        """1-based (line, column) of a key in a mapping or an index in a sequence, or of the node."""
        lc = getattr(node, "lc", None)
        if lc is None:
            return (self.start_line, 1)
        try:
            if key is None:
                line, col = lc.line, lc.col
            elif isinstance(key, int):
                line, col = lc.item(key)
            else:
                line, col = lc.key(key)
        except (KeyError, IndexError, TypeError, AttributeError):
            line, col = lc.line, lc.col
        return (self.start_line + line, col + 1)


_APPENDED = "\0---\0"  # the separator of a document fix appends, until the line ends are written (no text holds NUL)


@dataclass
class YamlFile:
    path: str
    text: str  # decoded, BOM removed, newlines normalised to \n
    newline: str = "\n"  # the file's line end, or its most common one when it mixes CRLF and LF
    bom: bool = False
    documents: list[Document] = field(default_factory=list)
    crlf_lines: frozenset[int] | None = None  # a file mixing CRLF and LF: the lines (from 0) that end in CRLF

    def render(self) -> str:
        out = []
        ended = True  # whether the text so far may be followed by directives (its last document ends with `...`)
        for doc in self.documents:
            body = doc.body
            if doc.edited and doc.baseline is not None:
                body = edited_body(self.path, doc)
            if not ended and doc.head.startswith("%"):  # directives follow a document this run appended
                out.append("...\n")
            out.append(doc.head + body)
            ended = not doc.appended
            for extra in doc.appended:
                if out and not out[-1].endswith("\n"):
                    out.append("\n")
                out.append(_APPENDED + extra)
        text = "".join(out)
        # kubectl and kustomize split a stream into documents at `---` lines ended by LF: in a file whose lines end
        # in CR alone (old Mac), a `---\r` is no separator for them, and a ResourceClaimTemplate fix appends after
        # it would be lost (the first document alone is read). The separators fix writes there end in LF.
        cr_alone = self.newline == "\r" and self.crlf_lines is None
        if not cr_alone:
            text = text.replace(_APPENDED, "---\n")
        if self.crlf_lines is not None:
            text = _line_ends_kept(self.text, text, self.crlf_lines, self.newline)
        elif self.newline != "\n":
            text = text.replace("\n", self.newline)
        if cr_alone:
            text = text.replace(_APPENDED, "\n---\n")
        return ("\ufeff" if self.bom else "") + text

    @property
    def changed(self) -> bool:
        return any(d.edited or d.appended for d in self.documents)


def decode(path: str, raw: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[str, str, bool, frozenset[int] | None]:
    """Text with \n newlines, the file's newline, whether it had a BOM, and for a file that mixes CRLF and LF the
    lines that end in CRLF (render keeps each line's own end; lines fix adds take the most common one). A file
    whose lines all end in CR alone is read and written back so too. Bad bytes are bad input."""
    if len(raw) > limits.max_bytes:
        raise InputError(size_message(len(raw), limits), path)
    if (nul := raw.find(b"\0")) >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise InputError("file contains NUL bytes: not a YAML text file", path, line, nul - raw.rfind(b"\n", 0, nul))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", path, line) from exc
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    crlf, lf = text.count("\r\n"), text.count("\n")
    mixed = _crlf_lines(text) if crlf and crlf != lf else None
    newline = dominant_newline(text)
    if crlf:
        text = text.replace("\r\n", "\n")
    elif not lf and "\r" in text:
        newline, text = "\r", text.replace("\r", "\n")
    return text, newline, bom, mixed


def dominant_newline(text: str) -> str:
    """The line end a file is written back with: CRLF when more than half its line ends are CRLF, else LF."""
    return "\r\n" if 2 * text.count("\r\n") > text.count("\n") else "\n"


def _crlf_lines(text: str) -> frozenset[int]:
    return frozenset(i for i, line in enumerate(text.split("\n")[:-1]) if line.endswith("\r"))


def _line_ends_kept(original: str, text: str, crlf_lines: frozenset[int], newline: str) -> str:
    """text (\n line ends) with each line that is one of the original's ending as it did there, and the lines fix
    wrote ending in newline."""
    return _ends_kept(original, text, lambda i: "\r\n" if i in crlf_lines else "\n", newline)


def _ends_kept(original: str, text: str, end_of: Callable[[int], str], newline: str) -> str:
    old, new = original.split("\n"), text.split("\n")
    ends = [newline] * (len(new) - 1)
    for tag, i1, i2, j1, _ in opcodes_of(old, new):
        for k in range(i2 - i1) if tag == "equal" else ():
            if j1 + k < len(ends) and i1 + k < len(old) - 1:
                ends[j1 + k] = end_of(i1 + k)
    return "".join(line + end for line, end in zip(new, ends, strict=False)) + new[-1]


def universal_newlines(raw: str) -> str:
    """raw with every line end (CRLF, LF, CR alone) as \n, as Path.read_text reads it."""
    return LINE_END.sub("\n", raw)


def chart_text(raw: str) -> str:
    """raw with LF line ends, as a chart rewrite reads a file: CRLF as LF, a CR alone as LF in a file of no LF (old
    Mac); a CR alone inside a line of another file (a template comment) stays the character it is to Helm."""
    text = raw.replace("\r\n", "\n")
    return text if "\n" in text else text.replace("\r", "\n")


def line_ends_kept(raw: str, text: str, breaks: re.Pattern[str] = LINE_END) -> str:
    """text, an edit of raw with each of `breaks` as \n, with raw's own line ends: each line kept from raw ends as it
    did there (CRLF, LF or CR alone), each line the edit wrote ends as most of raw's lines do."""
    ends = breaks.findall(raw)
    newline = max(dict.fromkeys(ends), key=ends.count) if ends else "\n"
    return _ends_kept(breaks.sub("\n", raw), text, ends.__getitem__, newline)


def split_documents(
    path: str,
    raw: bytes,
    limits: Limits = DEFAULT_LIMITS,
    checked: str | None = None,
    helm_render: bool = False,
    comments: bool = True,
) -> YamlFile:
    """The file's documents. checked: a text check_structure already passed (not checked twice when it is this).
    helm_render: the text is a chart's rendered output, read as Helm reads it (see helm_constructor). comments=False:
    the edited text is read only as objects (Document.comments)."""
    text, newline, bom, crlf_lines = decode(path, raw, limits)
    if text != checked:
        check_structure(path, text, limits)
    yf = YamlFile(path=path, text=text, newline=newline, bom=bom, crlf_lines=crlf_lines)
    yf.documents = _split_lines(text) if odd_breaks(text) else _split_markers(text)
    for doc in yf.documents if helm_render else ():
        doc.helm_render = True
    for doc in yf.documents if not comments else ():
        doc.comments = False
    budget = [MAX_ROUND_TRIP_FILE_VALUES, MAX_ROUND_TRIP_FILE_LINES]
    for doc in yf.documents:
        doc.round_trip_budget = budget
    return yf


def _split_markers(text: str) -> list[Document]:
    """_split_lines for a text whose only line break is \n: the `---` lines found by a regex over the whole text
    (a 30 MB file is never held as a million line strings)."""
    documents: list[Document] = []
    head, body_start, start, line, at = "", 0, 1, 1, 0
    for m in _marker_lines(text):
        line += text.count("\n", at, m.start())  # the marker's line number
        at = m.start()
        body = text[body_start : m.start()]
        marker = text[m.start() : m.end() + 1]  # with its newline
        body, directives = _directives_of(body, first=not head and not documents)
        if head or (body and not body.isspace()):  # body.strip(), without copying the body
            documents.append(Document(head, body, start))
        elif body:  # comments or blank lines before the first marker: keep them in the marker's head
            marker = body + marker
        head, body_start, start = directives + marker, m.end() + 1, line + 1
    body = text[body_start:]
    if head or body:
        documents.append(Document(head, body, start))
    return documents


def _marker_lines(text: str) -> Iterator[re.Match[str]]:
    """The `---` marker lines of a text whose only line break is \n (what `^---...$` with re.M matches)."""
    for m in _MARKERS.finditer(text):
        if not m.start() or text[m.start() - 1] == "\n":
            yield m


def _split_lines(text: str) -> list[Document]:
    documents: list[Document] = []
    lines = text.splitlines(keepends=True)
    head, body, start = "", [], 1
    for number, line in enumerate(lines, start=1):
        if _MARKER.match(line.rstrip("\n")):
            text_before, directives = _directives_of("".join(body), first=not head and not documents)
            if head or text_before.strip():
                documents.append(Document(head, text_before, start))
            elif text_before:  # comments or blank lines before the first marker: keep them in the marker's head
                line = text_before + line
            head, body, start = directives + line, [], number + 1
        else:
            body.append(line)
    if head or body:
        documents.append(Document(head, "".join(body), start))
    return documents


_DOCUMENT_END = re.compile(r"^\.\.\.[ \t]*(#.*)?$")


def _directives_of(body: str, first: bool) -> tuple[str, str]:
    """(body, directives): the directive lines (`%TAG`, `%YAML`, with the comments and blank lines among them) that
    end body and belong to the next document, as YAML places them: at the start of the stream (first) or after a
    `...` end marker. They go into the next document's head, so that document is parsed with them."""
    if "%" not in body:
        return body, ""
    lines = body.splitlines(keepends=True)
    at = len(lines)
    while at > 0 and (not lines[at - 1].strip() or lines[at - 1].startswith(("%", "#"))):
        at -= 1
    if not (first and at == 0) and not (at > 0 and _DOCUMENT_END.match(lines[at - 1].rstrip("\n"))):
        return body, ""
    while at < len(lines) and not lines[at].startswith("%"):  # comments before the directives stay where they are
        at += 1
    return "".join(lines[:at]), "".join(lines[at:])


_VERSION = re.compile(r"%YAML[ \t]+(\S*)")


def check_version(yf: YamlFile) -> None:
    """A `%YAML` directive of a version other than 1.1 is bad input at its line: Kubernetes reads manifests with
    sigs.k8s.io/yaml over go-yaml v2, whose parser refuses any other (`found incompatible YAML document`), so the
    API server and kubectl reject the document. ruamel would read it as YAML 1.2, where `010` is 10 devices, not
    the 8 that Kubernetes reads without the directive."""
    for doc in yf.documents:
        if "%YAML" not in doc.head:
            continue
        lines = doc.head.splitlines()
        for i, line in enumerate(lines):
            m = _VERSION.match(line)
            major, _, minor = m.group(1).partition(".") if m else ("", "", "")
            if m and not (major.isdigit() and minor.isdigit() and (int(major), int(minor)) == (1, 1)):
                raise InputError(
                    f"`%YAML {m.group(1)}`: Kubernetes reads manifests with go-yaml v2 (sigs.k8s.io/yaml), which "
                    "accepts only `%YAML 1.1` and refuses this document (found incompatible YAML document); remove "
                    "the directive (counts are then read as YAML 1.1, as Kubernetes reads them: `010` is 8)",
                    yf.path,
                    doc.start_line - len(lines) + i,
                    1,
                )


def has_content(body: str) -> bool:
    """Some line of body is not blank, a comment, a directive or `...`. The lines are split from a prefix of body
    that grows until it holds such a line (the first few lines, nearly always) or is the whole body: a prefix's lines
    but its last are the body's own lines."""
    size = 256
    while True:
        whole = size >= len(body)
        lines = body.splitlines() if whole else body[:size].splitlines()[:-1]
        for line in lines:
            s = line.strip()
            if s and not s.startswith("#") and not s.startswith("%") and s != "...":
                return True
        if whole:
            return False
        size *= 4


def _round_trip(helm_render: bool = False) -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.Constructor = helm_constructor() if helm_render else round_trip_constructor()
    return yaml


@cache
def helm_constructor() -> type:
    """ruamel's round-trip constructor reading a mapping that repeats a key as Helm reads a rendered manifest: the
    last value wins, whole (a repeated `env:` list replaces the first, nothing is merged). Helm builds the objects it
    sends with cli-runtime's resource builder, whose decoder (apimachinery's YAMLToJSONDecoder) calls
    sigs.k8s.io/yaml's non-strict Unmarshal over go-yaml v2: its own tests pin `a: test\nb: test\na: test2` to
    a=test2 and the strict variant to an error. The object reaches the API server as JSON with the key once, so
    even Helm's default Strict field validation never sees the repeat (kubectl's client-side NoDoubleKeySchema,
    used only when the server has no field validation, also reads that JSON). Never for a user's manifest, where
    refusing is right: YAML forbids the repeat, and ruamel's own allow_duplicate_keys keeps the first value."""

    class HelmRenderConstructor(round_trip_constructor()):  # type: ignore[misc]
        def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
            if key in mapping:
                del mapping[key]  # the later one replaces it, at its own place
            return True

    return HelmRenderConstructor


def unacceptable_character(text: str, exc: Exception) -> tuple[str, int, int] | None:
    """(message, 1-based line, column) of a character the YAML reader refuses (ESC, BEL, DEL, C1 controls): the
    reader's own message says `position 147 in "<unicode string>"` on a second line, and no line at all."""
    position, character = getattr(exc, "position", None), getattr(exc, "character", None)
    if not isinstance(position, int) or not isinstance(character, int):
        return None
    if getattr(exc, "encoding", None) != "unicode":  # libyaml (PyYAML's C loader) counts the bytes of the UTF-8 text
        position = len(text.encode("utf-8", "surrogatepass")[:position].decode("utf-8", "ignore"))
    breaks = list(_YAML_BREAKS.finditer(text, 0, position))
    column = position - (breaks[-1].end() if breaks else 0) + 1
    return f"invalid YAML: character U+{character:04X} is not allowed in YAML", len(breaks) + 1, column


def yaml_problem(text: str, exc: Exception) -> tuple[str, int, int]:
    """(message, 1-based line, column; 0 when unknown) of a PyYAML error on text, in the project's words: PyYAML's
    own message says `in "<unicode string>", line 4, column 6` on a line of its own (or a position in bytes)."""
    if (bad := unacceptable_character(text, exc)) is not None:
        return bad
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    parts = (getattr(exc, "context", None), getattr(exc, "problem", None))
    what = ": ".join(str(p) for p in parts if p) or "not YAML"
    return f"invalid YAML: {' '.join(what.split())}", mark.line + 1 if mark else 0, mark.column + 1 if mark else 0


def parse_document(path: str, doc: Document) -> Any:
    """Parse a document with the round-trip loader; errors become InputError with the file's line."""
    if doc.parsed:
        return doc.data
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from yaml import MarkedYAMLError as LibyamlError

    doc.parsed, doc.counted = True, -1
    if not has_content(doc.body):
        doc.data = None
        return None
    prefix = doc.tags + "---\n" if doc.tags else ""
    _check_round_trip_values(path, doc, prefix)
    try:
        if prefix:
            doc.data = _load_tagged(prefix, doc.body, doc.helm_render)
        else:
            doc.data = _load(doc.body, doc.helm_render, doc.comments)
    except (MarkedYAMLError, LibyamlError) as exc:
        mark = exc.problem_mark or exc.context_mark
        line = doc.start_line + max((mark.line if mark else 0) - prefix.count("\n"), 0)
        column = mark.column + 1 if mark else 0
        problem = exc.problem or str(exc).splitlines()[0]
        if "duplicate key" in str(exc):
            problem = "duplicate key " + str(exc).split('found duplicate key "', 1)[-1].split('"', 1)[0]
            problem = "duplicate key: " + problem.removeprefix("duplicate key ")
        raise InputError(f"invalid YAML: {problem}", path, line, column) from exc
    except YAMLError as exc:
        if (where := unacceptable_character(prefix + doc.body, exc)) is not None:
            message, line, column = where
            raise InputError(message, path, doc.start_line + max(line - 1 - prefix.count("\n"), 0), column) from exc
        raise InputError(f"invalid YAML: {exc}", path, doc.start_line) from exc
    # a tag the value does not fit, as the API server refuses it: ruamel raises ValueError (`!!int abc`), KeyError
    # (`!!bool maybe`), IndexError (`!!float 1e`, `!!int 0x`: it indexes past the value's end) or AttributeError
    # (`!!set 2`, a scalar where the tag wants a mapping)
    except (ValueError, TypeError, LookupError, AttributeError) as exc:
        detail = str(exc) if isinstance(exc, (ValueError, TypeError)) else "a value of another kind than the tag's"
        raise InputError(f"invalid YAML: a value does not fit its tag ({detail})", path, doc.start_line) from exc
    if "!" in prefix + doc.body:
        _refuse_tagged_keys(path, doc, prefix.count("\n"))
    check_size(path, doc)
    return doc.data


def _refuse_tagged_keys(path: str, doc: Document, shift: int) -> None:
    """Refuse a mapping key written with an explicit tag (`!!str limits:`): the API server reads it as the plain
    key, but ruamel keeps it as a TaggedScalar that no look-up by name finds, so a device request under it went
    unseen (a gate passed a pod asking for a GPU). No manifest needs one; the tag is named at its line. The same for
    a `!!binary` key, which ruamel reads as bytes and the API server as its decoded text, and a `!!binary` kind or
    apiVersion (ruamel's bytes are no kind dramigrate knows: a Pod asking for a GPU was an unknown-kind warning), and
    a `!!set` mapping (_SET); each named at its line (_refusal)."""
    stack = [doc.data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if type(key).__name__ == "TaggedScalar":
                    tag = str(key.tag)
                    core = tag.startswith("tag:yaml.org,2002:")
                    said = "!!" + tag.removeprefix("tag:yaml.org,2002:") if core else tag
                    reads = "reads as the plain key" if core else "refuses on a key"
                    raise _refusal(
                        f"the key {key.value!r} is written with the tag {said}, which the API server {reads} and "
                        "dramigrate does not read through; not processed: write the key without its tag",
                        path,
                        doc,
                        shift,
                        node.lc.key(key) if hasattr(node, "lc") else (shift, -1),
                    )
                if isinstance(key, bytes):  # `!!binary bGltaXRz:`, which go-yaml decodes to the key `limits`
                    raise _refusal(
                        f"the key {key.decode('utf-8', 'replace')!r} is written as !!binary, which the API server "
                        "reads as the plain key and dramigrate does not read through; not processed: write the key "
                        "as text",
                        path,
                        doc,
                        shift,
                        node.lc.key(key) if hasattr(node, "lc") else (shift, -1),
                    )
                if isinstance(value, AbstractSet):
                    raise _refusal(_SET, path, doc, shift, node.lc.value(key) if hasattr(node, "lc") else (shift, -1))
                if isinstance(value, bytes) and key in ("kind", "apiVersion"):  # `kind: !!binary UG9k` is a Pod
                    raise _refusal(
                        f"{key} {value.decode('utf-8', 'replace')!r} is written as !!binary, which the API server "
                        "reads as the plain text and dramigrate does not read through; not processed: write it as text",
                        path,
                        doc,
                        shift,
                        node.lc.value(key) if hasattr(node, "lc") else (shift, -1),
                    )
                stack.append(value)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, AbstractSet):
                    raise _refusal(_SET, path, doc, shift, node.lc.item(i) if hasattr(node, "lc") else (shift, -1))
            stack.extend(node)
        elif isinstance(node, AbstractSet) and node is doc.data:
            raise _refusal(_SET, path, doc, shift, (shift, -1))


# A mapping tagged `!!set`: go-yaml (the API server) reads its keys and their values, ruamel a set of its keys alone
# (`limits: !!set {nvidia.com/gpu: 2}` is 2 GPUs that no look-up found).
_SET = (
    "a mapping tagged !!set, which the API server reads as a mapping with its values and dramigrate as a set of its "
    "keys; not processed: write the mapping without the tag"
)


def _refusal(message: str, path: str, doc: Document, shift: int, at: tuple[int, int]) -> InputError:
    """message at `at`, ruamel's (line, column) in the text parsed, which starts shift lines above the document."""
    return InputError(message, path, doc.start_line + max(at[0] - shift, 0), at[1] + 1)


def _check_round_trip_values(path: str, doc: Document, prefix: str) -> None:
    """Refuse a document with more values than ruamel parses in time, alone or with the file's other documents it
    parsed, counted from libyaml's events first (some 0.5 µs a value)."""
    budget = doc.round_trip_budget
    lines = doc.body.count("\n")
    if lines > min(MAX_ROUND_TRIP_LINES, budget[1]):
        what = (
            f"this document has more than {MAX_ROUND_TRIP_LINES:,} lines"
            if lines > MAX_ROUND_TRIP_LINES
            else f"the documents of this file that need the full YAML reader have more than "
            f"{MAX_ROUND_TRIP_FILE_LINES:,} lines"
        )
        message = f"{what} (Kubernetes stores objects of 1.5 MiB); not processed (limit on lines)"
        raise InputError(message, path, doc.start_line)
    budget[1] -= lines
    limit = min(MAX_ROUND_TRIP_VALUES, budget[0])
    values, inside = nodes_and_recursive_alias(prefix + doc.body, limit)  # one pass of libyaml's events
    if values > limit:
        what = (
            f"this document holds more than {MAX_ROUND_TRIP_VALUES:,} values"
            if limit == MAX_ROUND_TRIP_VALUES
            else f"the documents of this file that need the full YAML reader (anchors, tags, floats) hold more than "
            f"{MAX_ROUND_TRIP_FILE_VALUES:,} values"
        )
        message = f"{what} (Kubernetes stores objects of 1.5 MiB); not processed (limit on values)"
        raise InputError(message, path, doc.start_line)
    budget[0] -= values
    if inside is not None:
        anchor, line = inside
        raise InputError(
            f"the alias *{anchor} is inside the node &{anchor} it names: Kubernetes refuses such a document (anchor "
            "value contains itself); not processed",
            path,
            doc.start_line + max(line - prefix.count("\n"), 0),
        )


def _load(body: str, helm_render: bool = False, comments: bool = True) -> Any:
    """ruamel's round-trip data of one document: composed from libyaml's events when it has nothing they cannot
    carry (rtcompose; comments=False: its comments and blank lines left out), else ruamel's own parse, which also
    gives every error its message."""
    from yaml import MarkedYAMLError as LibyamlError

    from dramigrate.rtcompose import compose_round_trip

    yaml = _round_trip(helm_render)
    try:
        return compose_round_trip(body, yaml, comments)
    except Exception as declined:  # noqa: BLE001 - declined or refused: ruamel parses it (and words any error) as before
        data = _round_trip(helm_render).load(body)
        if body.lstrip().startswith("{"):  # a JSON object, which Kubernetes reads with a JSON decoder
            return data
        if isinstance(declined, LibyamlError):
            # libyaml refuses what ruamel's YAML 1.2 reads (a line `: x`, an empty key): go-yaml, libyaml's port that
            # kubectl, kustomize, Helm and the API server read YAML with, refuses it too, so it is no manifest to
            # migrate. Not a JSON object (a lone "\ud800" escape is JSON).
            raise declined
        if any(c in body for c in _YAML_1_1_BREAKS):  # rtcompose declined them before libyaml read the text
            from yaml import CSafeLoader, parse

            for _ in parse(body, Loader=CSafeLoader):  # go-yaml and libyaml break lines there; ruamel reads on
                pass
        return data


# Line breaks of YAML 1.1 that YAML 1.2 (ruamel) reads as characters: NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR.
_YAML_1_1_BREAKS = ("\x85", "\u2028", "\u2029")


def _load_tagged(prefix: str, body: str, helm_render: bool = False) -> Any:
    """ruamel's round-trip data of a document that names tag handles in `%TAG` directives (prefix: those lines and
    `---`), with every position relative to the body as for any other document. ruamel keeps each tag's handle, so
    a dump writes `!e!x` as the file has it."""
    data = _round_trip(helm_render).load(prefix + body)
    shift = prefix.count("\n")
    stack = [data]
    while stack:
        node = stack.pop()
        lc = getattr(node, "lc", None)
        if lc is None or not isinstance(node, (dict, list)):
            continue
        if lc.line is not None:
            lc.line -= shift
        for at in lc.data.values():
            at[0] -= shift
            if len(at) > 2:
                at[2] -= shift
        stack.extend(node.values() if isinstance(node, dict) else node)
    return data


def check_size(path: str, doc: Document) -> None:
    """Refuse documents whose aliases would expand into too many nodes (YAML bombs)."""
    from dramigrate.limits import expands_within

    if not expands_within(doc.data, MAX_NODES):
        raise InputError("document expands to too many nodes (YAML alias bomb?); not processed", path, doc.start_line)


def start_edit(doc: Document) -> None:
    """Remember ruamel's dump of the document before the first edit, for the three-way merge; none for a document
    read only as objects (_objects_only), whose edited text is ruamel's whole dump (edited_body)."""
    if doc.baseline is None:
        doc.baseline = "" if _objects_only(doc) else _baseline(doc)
    doc.edited = True


def _objects_only(doc: Document) -> bool:
    """Whether the document's edited text is read only as objects (a chart proof's migration of a render: its comments
    and blank lines may go, Document.comments) and writes no tag. Such a text need not keep the document's lines, only
    read back to exactly the edited data, as edited_body checks of any text it returns: ruamel's whole dump of that
    data is then the text, without ruamel's dump of the unedited document (the merge's base) and the merge, a third of
    the edits' time in a proof (sm-realtime's proof edits 46 documents in its 22 migrations). A document with a tag
    keeps the merge: its whole dump may spell the tag otherwise (_refuse_lost_tag), which a YAML 1.1 reader (the
    proof's, Kubernetes') may read otherwise."""
    return not doc.comments and not doc.tags and not _TAG_LIKE.search(doc.body)


# a `!` where a tag may start (a node's first character: at a line's start, after a blank or a flow indicator), the
# non-specific `!` or a tag's first character after it (`!!str`, `!Custom`, `!<tag:x>`); also true of some text (`a !b`
# in a string: such a document keeps the merge), not of `#!/bin/sh`, `x != y` or `hi!`
_TAG_LIKE = re.compile(r"(?:^|[ \[{,])!(?:[^\s=]|[ \t]|$)", re.MULTILINE)


# ruamel's dump of a document read only as objects that keeps the merge (a tag in it: _objects_only), as parsed, by
# its text: the proof migrates the render of every value set, and most documents are the same from one set to the next.
# Each entry keeps the plain data it was dumped from: a document whose data is not that (changed since its parse) is
# dumped afresh.
_BASELINES: dict[tuple[str, bool, type], tuple[Any, str]] = {}


def _baseline(doc: Document) -> str:
    indent = indent_of(doc.body)
    if doc.comments or doc.tags:
        return dump_yaml(doc.data, indent)
    key, plain = (doc.body, doc.helm_render, type(doc.data)), to_plain(doc.data)
    known = _BASELINES.get(key)
    if known is not None and known[0] == plain:
        return known[1]
    text = dump_yaml(doc.data, indent)
    remember(_BASELINES, key, (plain, text), 256)
    return text


@dataclass(frozen=True)
class Indent:
    mapping: int = 2
    sequence: int = 2
    offset: int = 0


_KEY_LINE = re.compile(r"^(\s*)(- )?[^\s#-][^#]*:\s*(#.*)?$")
_DASH_LINE = re.compile(r"^(\s*)-( +)\S")


def indent_of(body: str) -> Indent:
    """The document's own indentation: mapping step, and where sequence dashes sit under their key."""
    mapping = seq = off = None
    prev_key_indent: int | None = None
    for line in body.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        dash = _DASH_LINE.match(line)
        indent = len(line) - len(line.lstrip(" "))
        if dash and prev_key_indent is not None and seq is None:
            off = len(dash.group(1)) - prev_key_indent
            seq = off + 1 + len(dash.group(2))
        elif not dash and prev_key_indent is not None and mapping is None and indent > prev_key_indent:
            mapping = indent - prev_key_indent
        key = _KEY_LINE.match(line)
        if key and line.rstrip().endswith(":"):
            prev_key_indent = len(key.group(1)) + (2 if key.group(2) else 0)
        else:
            prev_key_indent = None
        if mapping is not None and seq is not None:
            break
    mapping = mapping or 2
    if seq is None:
        seq, off = mapping, 0
    return Indent(mapping=mapping, sequence=max(seq, off + 2), offset=max(off or 0, 0))


def dump_yaml(data: Any, indent: Indent | None = None) -> str:
    from dramigrate.rtdump import Emitter, FastSerializer, Representer, Resolver, plain_dump

    ind = indent or Indent()
    text = plain_dump(data, ind.mapping, ind.sequence, ind.offset)
    if text is not None:
        return text
    yaml = _round_trip()
    # ruamel's dump, its per-node lookups done once
    yaml.Resolver, yaml.Serializer, yaml.Representer, yaml.Emitter = Resolver, FastSerializer, Representer, Emitter
    yaml.indent(mapping=ind.mapping, sequence=ind.sequence, offset=ind.offset)
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def edited_body(path: str, doc: Document) -> str:
    """The edited document's text: the minimal merge when it parses back to exactly the edited data, else
    ruamel's whole dump (e.g. a document mixing flush and indented sequences), which must parse too."""
    after = dump_yaml(doc.data, indent_of(doc.body))
    expected = to_plain(doc.data)
    merged = after if _objects_only(doc) else merge_edit(doc.body, doc.baseline or "", after)
    prefix = doc.tags + "---\n" if doc.tags else ""
    for candidate in (merged,) if merged is after else (merged, after):
        if candidate is after and "!" in doc.tags + doc.body:  # no `!`, no tag written
            _refuse_lost_tag(path, doc, after)
        if not prefix and _reads_back_fast(candidate, expected):
            return candidate
        try:
            if to_plain(_round_trip(doc.helm_render).load(prefix + candidate)) == expected:
                return candidate
        except Exception:  # noqa: BLE001,S112 - any parse failure means: try the next candidate
            continue
    raise InputError(
        "the rewritten document would not parse back to the intended objects; nothing written", path, doc.start_line
    )


def _refuse_lost_tag(path: str, doc: Document, after: str) -> None:
    """Refuse, at its line, an explicitly tagged value that ruamel's whole dump (written when the minimal merge
    cannot place an edit) would not write as the user did: fix never re-spells a document silently."""
    import yaml

    written = {_content(line) for line in after.splitlines()}
    lines = doc.body.splitlines()
    try:
        events = list(yaml.parse(doc.tags + "---\n" + doc.body if doc.tags else doc.body, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return  # what does not parse here is left to the read-back check
    skipped = (doc.tags + "---\n").count("\n") if doc.tags else 0
    for ev in events:
        if not isinstance(ev, yaml.NodeEvent) or getattr(ev, "tag", None) is None:
            continue
        written_tag = ev.implicit == (False, False) if isinstance(ev, yaml.ScalarEvent) else ev.implicit is False
        if not written_tag:
            continue  # a tag only resolved, not written
        at = ev.start_mark.line - skipped
        if 0 <= at < len(lines) and _content(lines[at]) not in written:
            raise InputError(
                f"fix cannot keep the value tagged {ev.tag.replace('tag:yaml.org,2002:', '!!')} as it is written, "
                "and will not rewrite the whole document around it; nothing written",
                path,
                doc.start_line + at,
            )


def _reads_back_fast(text: str, expected: Any) -> bool:
    """Whether libyaml reads text as exactly one document equal to expected, as ruamel would read it (fastyaml
    reproduces ruamel's values or declines). False when it declines or differs: ruamel then decides, as before."""
    from dramigrate.fastyaml import one_document

    got = one_document(text)
    return got is not None and to_plain(got[0]) == expected


def merge_edit(original: str, baseline: str, after: str) -> str:
    """Apply the change baseline -> after onto the original text, keeping every untouched line as it was.

    baseline is ruamel's dump of the unedited document; it may differ from the original in lines ruamel
    normalises (spacing, and the indentation of a document that mixes sequence styles). Baseline lines are
    matched to original lines by their content; each changed block goes where its neighbours are in the
    original, shifted by the indentation difference there. When a block cannot be placed, the whole dump is
    used (edited_body then checks that the result parses back to the intended data).
    """
    o = original.splitlines(keepends=True)
    contents = {_content(x) for x in o}
    contents |= {_ANCHOR.sub("", x) for x in contents}  # ruamel's dump may put an anchor elsewhere
    b = _rejoined(baseline.splitlines(keepends=True), contents)
    a = _rejoined(after.splitlines(keepends=True), contents)
    to_original: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in opcodes_of([_content(x) for x in b], [_content(x) for x in o]):
        if tag == "equal" or (tag == "replace" and _same_keys(b[i1:i2], o[j1:j2])):
            for k in range(i2 - i1):
                to_original[i1 + k] = j1 + k
    opcodes = opcodes_of(b, a)
    shifts = _shifts(o, b, a, to_original, opcodes)
    out: list[str] = []
    pos = 0
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        if i2 > i1:
            if not all(k in to_original for k in range(i1, i2)):
                return after
            start, end = to_original[i1], to_original[i2 - 1] + 1
            if end - start != i2 - i1:
                return after
        elif i1 - 1 in to_original:
            start = end = _before_comments_of_next(o, to_original[i1 - 1] + 1, pos)
        elif i1 in to_original:
            start = end = to_original[i1]
        elif i1 == len(b) and b:  # added at the end, after lines the dump spells differently (`!!str` and its
            start = end = len(o)  # text on one line, not two): the document's last line is theirs in the original
        else:
            return after
        if start < pos:
            return after
        new = [_shifted(a[j], shifts[j]) for j in range(j1, j2)]
        written = "".join(new)
        cut = _before_comments_of_next(o, end, start)  # the removed lines' tail that is the next line's comments
        out.extend(o[pos:start])
        out.extend(c for c in _comments_of(o[start:cut]) if c.strip() not in written)
        out.extend(new)
        out.extend(x for x in o[cut:end] if not x.strip() or x.strip() not in written)
        pos = end
    out.extend(o[pos:])
    return "".join(out)


_ANCHOR = re.compile(r" &[^\s\[\]{},]+")


def _rejoined(dumped: list[str], contents: set[str]) -> list[str]:
    """A dump's lines with a comment ruamel wrote on a line of its own put back at the end of the line before it,
    where the original has it there: ruamel writes the comment after a key holding an anchored or aliased collection
    (`env: &e  # c`, `env: *e  # c`) below the key, so the dump had a line the file has not and the merge could not
    place an edit next to it (fix then wrote ruamel's whole dump, which loses the comments of the lines it removes)."""
    out: list[str] = []
    for line in dumped:
        text = line.strip()
        if text.startswith("#") and out and _comment_start(out[-1].strip()) < 0:
            joined = out[-1].rstrip("\r\n") + "  " + text
            if _content(joined) in contents:
                out[-1] = joined + out[-1][len(out[-1].rstrip("\r\n")) :]
                continue
        out.append(line)
    return out


def _same_keys(dumped: list[str], original: list[str]) -> bool:
    """Whether the baseline's lines are the original ones with only their scalars written differently (ruamel
    writes `+4` as `4`): the same key on each line. The baseline is the unedited document, so same data."""
    return len(dumped) == len(original) and all(
        _key(x) is not None and _key(x) == _key(y) for x, y in zip(dumped, original, strict=True)
    )


def _key(line: str) -> str | None:
    """The `key` (with a leading `- `) of a `key: value` line, as the matcher compares it; None for other lines."""
    text = _content(line)
    at = text.find(": ")
    if at < 0 and text.endswith(":"):  # `key:`, as ruamel writes `key: !!null` (or `!!null ""`)
        at = len(text) - 1
    return text[:at] if at > 0 and not text.startswith("#") else None


def _before_comments_of_next(lines: list[str], at: int, floor: int) -> int:
    """Where lines inserted at `at` go: above the own-line comments and blank lines just before it that sit no
    deeper than the next line, as they are that line's (ruamel hangs them on the node before, so its dump puts an
    added key below them: `claims:` under the comment written for the next container field)."""
    following = next((x for x in lines[at:] if x.strip() and not x.lstrip(" ").startswith("#")), None)
    if following is None:
        return at
    while at > floor and (
        not lines[at - 1].strip()
        or (lines[at - 1].lstrip(" ").startswith("#") and _indent(lines[at - 1]) <= _indent(following))
    ):
        at -= 1
    return at


# line pairs SequenceMatcher may compare before popular lines are left out. It compares them again for each block it
# matches, so the cost is this times the blocks: a List of 500 pods (one document, 500 edits, its structural lines
# 500 times each) stayed under 2,000,000 and took 28 s; 100,000 keeps a document of 100 pods exact (under a second)
MAX_MATCH_WORK = 100_000


def opcodes_of(x: list[str], y: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from x to y, the common head and tail matched first. Without autojunk, SequenceMatcher
    compares every pair of equal lines: 20,000 equal comment lines took minutes. When the lines left would cost
    more than MAX_MATCH_WORK pairs, lines found in more than 1% of them are not used as anchors (autojunk); the
    merge result is checked by edited_body either way."""
    head = 0
    while head < min(len(x), len(y)) and x[head] == y[head]:
        head += 1
    tail = 0
    while tail < min(len(x), len(y)) - head and x[-1 - tail] == y[-1 - tail]:
        tail += 1
    mx, my = x[head : len(x) - tail], y[head : len(y) - tail]
    counts: dict[str, int] = {}
    for line in my:
        counts[line] = counts.get(line, 0) + 1
    work = sum(counts.get(line, 0) for line in mx)
    out: list[tuple[str, int, int, int, int]] = [("equal", 0, head, 0, head)] if head else []
    if work > MAX_MATCH_WORK:
        blocks = _anchored_blocks(mx, my, counts)
    else:
        blocks = difflib.SequenceMatcher(None, mx, my, autojunk=False).get_matching_blocks()
    out += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in _opcodes(blocks, mx, my)]
    if tail:
        out.append(("equal", len(x) - tail, len(x), len(y) - tail, len(y)))
    return [op for op in out if op[0] != "equal" or op[2] > op[1]]


def _anchored_blocks(x: list[str], y: list[str], counts: dict[str, int]) -> list[tuple[int, int, int]]:
    """The matching blocks of x and y (as SequenceMatcher.get_matching_blocks gives them) when comparing them whole
    would cost too much: the lines found once in each, in the longest run of them in the same order in both, cut x
    and y into stretches, each matched on its own (popular lines left out as anchors). SequenceMatcher alone splits
    the whole at its first longest match, one line long when every edit sits between unique lines (a pod of 3,000
    containers, each `- name:` once): as many scans of the whole as edits, over a minute."""
    import bisect

    once_in_x: dict[str, int] = {}
    for i, line in enumerate(x):
        once_in_x[line] = -1 if line in once_in_x else i
    pairs = [(once_in_x[line], j) for j, line in enumerate(y) if counts[line] == 1 and once_in_x.get(line, -1) >= 0]
    pairs.sort()
    # the longest run of pairs increasing in both (patience sorting: ends[k] is the least j ending a run of k + 1)
    ends: list[int] = []
    ending: list[int] = []  # index into pairs of the run ending at ends[k]
    back: list[int] = []
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(ends, j)
        back.append(ending[k - 1] if k else -1)
        if k == len(ends):
            ends.append(j)
            ending.append(n)
        else:
            ends[k], ending[k] = j, n
    anchors: list[tuple[int, int]] = []
    n = ending[-1] if ending else -1
    while n >= 0:
        anchors.append(pairs[n])
        n = back[n]
    anchors.reverse()
    blocks: list[tuple[int, int, int]] = []
    i0 = j0 = 0
    for i1, j1 in [*anchors, (len(x), len(y))]:
        matcher = difflib.SequenceMatcher(None, x[i0:i1], y[j0:j1], autojunk=True)
        blocks += [(i0 + i, j0 + j, size) for i, j, size in matcher.get_matching_blocks() if size]
        if i1 < len(x):
            blocks.append((i1, j1, 1))
        i0, j0 = i1 + 1, j1 + 1
    merged: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return [*merged, (len(x), len(y), 0)]


def _opcodes(blocks: Any, x: list[str], y: list[str]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher.get_opcodes of the matching blocks given (the last one the (len(x), len(y), 0) sentinel)."""
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj, size in blocks:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out


def _shifts(o: list[str], b: list[str], a: list[str], to_original: dict[int, int], opcodes: list[Any]) -> list[int]:
    """How far each line of the dump moves to sit like the original: an unchanged line by the difference to its
    original line, and so a changed line that keeps its key (`limits: &r` written `limits:` once an anchor is
    unshared), as the dump may indent that part of the document otherwise than the original; a new line like the
    nearest line above it that is not deeper (its parent or sibling) and not a comment."""
    baseline_of: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for k in range(j2 - j1):
                baseline_of[j1 + k] = i1 + k
        elif tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                if _key(b[i1 + k]) is not None and _key(b[i1 + k]) == _key(a[j1 + k]):
                    baseline_of[j1 + k] = i1 + k
            if j1 not in baseline_of and _indent(a[j1]) == _indent(b[i1]) and i1 in to_original:
                baseline_of[j1] = i1  # a block written anew where one stood (`- &c0` and `name:` as `- name:`)
    shifts: list[int] = []
    for j, line in enumerate(a):
        bi = baseline_of.get(j)
        if bi is not None and (bi in to_original or _content(b[bi]) == _content(line)):
            shifts.append(_indent(o[to_original[bi]]) - _indent(b[bi]) if bi in to_original else 0)
            continue
        shift = 0
        dash = line.lstrip(" ").startswith("- ")
        for k in range(j - 1, -1, -1):
            if not a[k].strip() or a[k].lstrip(" ").startswith("#") or _indent(a[k]) > _indent(line):
                continue  # a comment's column says nothing of the structure
            if not dash and _indent(a[k]) == _indent(line) and a[k].lstrip(" ").startswith("- "):
                continue  # a flush sequence item: the line is a sibling of the key that holds the sequence
            shift = shifts[k]
            break
        shifts.append(shift)
    return shifts


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shifted(line: str, shift: int) -> str:
    if shift == 0 or not line.strip():
        return line
    return " " * max(_indent(line) + shift, 0) + line.lstrip(" ")


def _content(line: str) -> str:
    """A line as the matcher compares it: without indentation, and with the spaces before a trailing comment
    collapsed (ruamel keeps a comment's column, not its distance, so a re-indented line moves it)."""
    text = line.strip()
    at = _comment_start(text)
    if at > 0:
        text = text[:at].rstrip() + " " + text[at:]
    return text


def _comment_start(text: str) -> int:
    """Where the trailing comment of a YAML line starts (-1 when none): a # after a space, outside quotes."""
    quote = ""
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"" and (i == 0 or text[i - 1] in " :-[{,"):
            quote = char
        elif char == "#" and (i == 0 or text[i - 1] in " \t"):
            return i
    return -1


def _comments_of(lines: list[str]) -> list[str]:
    """The comments of lines an edit removes, kept as comment lines at the same indentation."""
    kept = []
    for line in lines:
        stripped = line.lstrip(" ")
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("#"):
            kept.append(line)
            continue
        at = _comment_start(stripped)
        value = stripped[:at].split(": ", 1)[-1].lstrip() if at > 0 else ""
        if at > 0 and not value.startswith(("|", ">")):  # a block scalar's indicator line keeps its own
            kept.append(indent + stripped[at:].rstrip("\n") + "\n")
    return kept


def to_plain(node: Any) -> Any:
    """Round-trip data as plain dicts, lists and scalars (for validation and hashing)."""
    if isinstance(node, dict):
        return {str(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [to_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if type(node).__name__ == "TaggedScalar":  # `!Ref x` (a custom tag; the API server reads the string): its tag kept
        return (str(node.tag), to_plain(node.value))
    return node
