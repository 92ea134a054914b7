"""Lint's YAML parse: libyaml events into plain dicts and lists that carry ruamel's line and column positions.

The round-trip loader (ruamel.yaml, pure Python) is needed to edit a file, but lint only reads: it needs
the data and where each key and item is. libyaml's parser (C) gives both in events. This module builds
from them exactly what ruamel's round-trip loader would give detection: the same dicts, lists, strings,
integers, booleans and nulls, and an `lc` on every mapping and sequence with the same 0-based positions
(`lc.line`, `lc.col`, `lc.key(k)`, `lc.value(k)`, `lc.item(i)`), relative to the document's body.

It is exact or it declines: anything whose round-trip value or position this cannot reproduce for sure
(anchored scalars, tags, merge keys, non-string keys, duplicate keys, numbers other than plain decimal integers,
timestamps, scalars that YAML 1.1 and 1.2 read differently, deep nesting, odd line breaks, a `...` end marker
inside a `---` section) makes it decline, and the caller uses ruamel for that document (each `---` section is
parsed on its own, as ruamel parses it). tests/test_speed.py proves lint's output is the same both ways.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from dramigrate.documents import MAX_NODES, Document, YamlFile, check_size, has_content, odd_breaks, split_documents
from dramigrate.findings import InputError
from dramigrate.longints import too_long
from dramigrate.triage import KUBESPAWNER_KEYS, QUOTA_KINDS

try:  # libyaml's bindings, imported with yaml already (triage imports it)
    from yaml._yaml import CParser
except ImportError:  # a PyYAML built without libyaml: ruamel parses every document (parse_stream declines)
    CParser = None

MAX_DEPTH = 100  # deeper documents go to ruamel (and its limits)

# Plain scalars that resolve to something other than a string in YAML 1.1 or 1.2 (ruamel's resolver tables
# for both versions, and PyYAML's for 1.1): numbers, timestamps, booleans, merge keys and the like.
_NUMERIC = re.compile(
    r"""[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*(?:[eE][-+]?[0-9]+)
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    |[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
      (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?""",
    re.X,
)
_DECIMAL = re.compile(r"0|-?[1-9][0-9]*")
_SPECIAL = frozenset(
    [
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "=",
        "<<",
        "!",
        "&",
        "*",
    ]
)  # YAML 1.1 booleans, value, merge and yaml tags
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TRUE = frozenset(("true", "True", "TRUE"))
_FALSE = frozenset(("false", "False", "FALSE"))


class Decline(Exception):
    """The event stream holds something this parse cannot reproduce exactly; ruamel takes the file."""


class LineCol:
    """Positions as ruamel's round-trip containers keep them (0-based, relative to the document body)."""

    __slots__ = ("col", "data", "line")

    def __init__(self, line: int, col: int) -> None:
        self.line = line
        self.col = col
        self.data: dict[Any, list[int]] = {}

    def key(self, k: Any) -> tuple[int, int]:
        d = self.data[k]
        return d[0], d[1]

    def value(self, k: Any) -> tuple[int, int]:
        d = self.data[k]
        return d[2], d[3]

    def item(self, idx: int) -> tuple[int, int]:
        d = self.data[idx]
        return d[0], d[1]


class Format:
    """ruamel's `fa`: whether the collection was written in flow style ({...} or [...])."""

    __slots__ = ("_flow",)

    def __init__(self, flow: bool) -> None:
        self._flow = flow

    def flow_style(self, default: Any = None) -> Any:
        return self._flow


_BLOCK, _FLOW, _EMPTY = Format(False), Format(True), Format(None)  # ruamel leaves empty collections unstyled


class Mapping(dict):  # type: ignore[type-arg]
    __slots__ = ("fa", "lc", "seen")  # seen: set on a document's root only (Seen)


class Sequence(list):  # type: ignore[type-arg]
    __slots__ = ("fa", "lc", "seen")


class Seen:
    """What the parse met in one document, for lint's checks that would otherwise walk all of its values again
    (triage.needs_pipeline, embedded.embedded_findings, detect's stray requests). Kept on the document's root (its
    `seen`), so that it goes with the data (lint lets each document of a 30 MB manifest go after its findings) and a
    document fix parses again with ruamel has none."""

    __slots__ = ("quota_or_claims", "sections", "texts")

    def __init__(self, sections: list[Any], quota_or_claims: bool, texts: bool) -> None:
        self.sections = sections  # each collection that is the value of a SECTION_KEYS key (an alias's too)
        self.quota_or_claims = quota_or_claims  # a `kind` of triage.QUOTA_KINDS, or a claims or resourceClaims key
        self.texts = texts  # a scalar value (not a key) holding one of TEXT_WORDS


SECTION_KEYS = frozenset(("limits", "requests", *KUBESPAWNER_KEYS))
CLAIM_KEYS = frozenset(("resourceClaims", "claims"))
# A string any of these checks reads holds one: limits or requests (triage, embedded), extra_resource_* (embedded)
TEXT_WORDS = ("limits", "requests", "extra_resource_")


def seen(doc: Document) -> Seen | None:
    """What the fast parse met in doc's data, or None (ruamel parsed it, or its root is a scalar)."""
    data = doc.data
    if type(data) is Mapping or type(data) is Sequence:
        return getattr(data, "seen", None)
    return None


_STRINGS: dict[str, Any] = {}


def _string_types() -> dict[str, Any]:
    """ruamel's string classes for quoted and block scalars (preserve_quotes), which quantity.py tells apart."""
    if not _STRINGS:
        from ruamel.yaml.scalarstring import (
            DoubleQuotedScalarString,
            FoldedScalarString,
            LiteralScalarString,
            SingleQuotedScalarString,
        )

        _STRINGS.update({'"': DoubleQuotedScalarString, "'": SingleQuotedScalarString, "|": LiteralScalarString})
        _STRINGS[">"] = FoldedScalarString
    return _STRINGS


def plain_scalar(value: str) -> Any:
    """A plain scalar as ruamel's round-trip loader gives it, or Decline when that is not a str, int, bool or None."""
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    first = value[0]
    if first in "-+0123456789.":
        if _DECIMAL.fullmatch(value):
            if too_long(value):  # ruamel's loader names it at its line
                raise Decline(value)
            return int(value)
        if _NUMERIC.fullmatch(value):
            raise Decline(value)
    elif value in _SPECIAL:
        raise Decline(value)
    return value


_NO_KEY = object()
_MISS = object()
# Plain scalars already resolved (a key like `name` or a value like `IfNotPresent` repeats across every file a
# worker reads): a dict lookup instead of plain_scalar's tests. Bounded, and only short scalars are kept.
_PLAIN: dict[str, Any] = {}
_PLAIN_MAX = 50_000
_PLAIN_LEN = 64


def _attach(
    cont: Any,
    data: dict[Any, list[int]],
    seq: bool,
    key: Any,
    kline: int,
    kcol: int,
    new: Any,
    line: int,
    col: int,
    as_key: str,
) -> Any:
    """Put a collection (or an alias of one) into the open collection (data: its lc.data), with ruamel's line and
    column data; the open collection's pending key after it (_NO_KEY: the value is given)."""
    if seq:
        data[len(cont)] = [line, col]
        cont.append(new)
        return key
    if key is _NO_KEY:
        raise Decline(as_key)
    cont[key] = new
    data[key] = [kline, kcol, line, col]
    return _NO_KEY


def parse_stream(text: str) -> list[tuple[Any, int, int]]:
    """Every document of text as (root, 0-based line of the root, values), from libyaml events; Decline or YAMLError.
    values: how many values the document holds (the root, every mapping value and sequence item, as
    limits.expands_within counts them), or -1 when it holds an alias (its expansion is then counted by walking it).
    A root mapping or sequence gets in its `seen` what lint's checks look for in the document (Seen).

    The open collection is kept in locals (its enclosing ones on a stack) and plain scalars are resolved through a
    memo: this loop runs once per event of every device file, and its Python cost was larger than libyaml's."""
    if CParser is None:
        raise Decline("no libyaml")
    parser = CParser(text)
    get = parser.get_event
    strings = _STRINGS or _string_types()
    memo, memo_get = _PLAIN, _PLAIN.get
    docs: list[tuple[Any, int, int]] = []
    sections: list[Any] = []  # Seen's, for the document being read
    quota_or_claims = texts = False
    values = 0  # collections and scalars that are not keys; -1 once an alias is met
    # the open collection: cont (None outside any), its lc.data, whether it is a sequence, its pending key (or
    # _NO_KEY) and that key's line and column; the enclosing collections' state is saved on the stack
    stack: list[tuple[Any, Any, bool, Any, int, int]] = []
    cont: Any = None
    data: Any = None
    seq = False
    key: Any = _NO_KEY
    kline = kcol = 0
    anchors: dict[str, Any] = {}  # anchored mappings and sequences: an alias is the same object, as in ruamel
    root: Any = None
    root_line = 0
    # An empty value's position is where the next token starts (ruamel), not where libyaml puts it.
    empty: list[int] | None = None
    empty_at = 0
    try:
        while True:
            ev = get()
            if ev is None:
                break
            if empty is not None:
                mark = ev.start_mark
                empty[empty_at], empty[empty_at + 1] = mark.line, mark.column
                empty = None
            cls = type(ev)
            if cls is ScalarEvent:
                if ev.anchor is not None or ev.tag is not None:
                    raise Decline("anchor or tag")
                value = ev.value
                style = ev.style
                if style:
                    node = strings[style](value)
                else:
                    node = memo_get(value, _MISS)
                    if node is _MISS:
                        node = plain_scalar(value)  # raises Decline for what it cannot give (never memoised)
                        if len(memo) < _PLAIN_MAX and len(value) <= _PLAIN_LEN:
                            memo[value] = node
                mark = ev.start_mark
                if cont is None:
                    root, root_line = node, mark.line
                    values += 1
                    texts = texts or any(w in value for w in TEXT_WORDS)
                elif seq:
                    pos = data[len(cont)] = [mark.line, mark.column]
                    cont.append(node)
                    values += 1
                    if not value and not style:
                        empty, empty_at = pos, 0
                    elif not texts and ("limits" in value or "requests" in value or "extra_resource_" in value):
                        texts = True
                elif key is _NO_KEY:
                    if not value and not style or node in cont:
                        raise Decline("duplicate or empty key")
                    key, kline, kcol = node, mark.line, mark.column
                    if node in CLAIM_KEYS:
                        quota_or_claims = True
                else:
                    pos = data[key] = [kline, kcol, mark.line, mark.column]
                    cont[key] = node
                    if not value and not style:
                        empty, empty_at = pos, 2
                    elif not texts and ("limits" in value or "requests" in value or "extra_resource_" in value):
                        texts = True
                    if key == "kind" and node in QUOTA_KINDS:
                        quota_or_claims = True
                    key = _NO_KEY
                    values += 1
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                if ev.tag is not None:
                    raise Decline("tag")
                if len(stack) >= MAX_DEPTH:
                    raise Decline("deep")
                mark = ev.start_mark
                line, col = mark.line, mark.column
                new: Any = Mapping() if cls is MappingStartEvent else Sequence()
                new.lc = LineCol(line, col)
                new.fa = _FLOW if ev.flow_style else _BLOCK
                values += 1
                if ev.anchor is not None:
                    anchors[ev.anchor] = new
                if cont is None:
                    root, root_line = new, line
                else:
                    if not seq and key in SECTION_KEYS:
                        sections.append(new)
                    key = _attach(cont, data, seq, key, kline, kcol, new, line, col, "collection as a key")
                stack.append((cont, data, seq, key, kline, kcol))
                cont, data, seq, key = new, new.lc.data, cls is SequenceStartEvent, _NO_KEY
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                if not cont:
                    cont.fa = _EMPTY
                cont, data, seq, key, kline, kcol = stack.pop()
            elif cls is DocumentStartEvent:
                if ev.version is not None or ev.tags:
                    raise Decline("directive")
                root, root_line = None, -1
                anchors = {}
                values = 0
                sections, quota_or_claims, texts = [], False, False
            elif cls is DocumentEndEvent:
                if type(root) is Mapping or type(root) is Sequence:
                    root.seen = Seen(sections, quota_or_claims, texts)
                docs.append((root, root_line, values if values >= 0 else -1))
            elif cls is AliasEvent:  # ruamel gives the anchored object itself, at the anchored node's position
                new = anchors.get(ev.anchor)
                if new is None or cont is None or new is cont or any(t[0] is new for t in stack):
                    raise Decline("alias of a scalar, or of a collection inside itself")
                if not seq and key in SECTION_KEYS:
                    sections.append(new)
                key = _attach(cont, data, seq, key, kline, kcol, new, new.lc.line, new.lc.col, "alias as a key")
                values = -(1 << 62)  # stays negative for the rest of the document
    except TypeError as exc:  # an unhashable key cannot happen (collection keys decline), but be sure
        raise Decline(str(exc)) from exc
    return docs


class FastFile:
    """A file split into documents as split_documents splits it, each parsed from libyaml events."""

    def __init__(self, yf: YamlFile, roots: list[Any]) -> None:
        self.yf = yf
        self.roots = roots  # every document's data, for triage


def fast_parse(path: str, doc: Document) -> bool:
    """Parse one document's body from libyaml events into doc.data, exactly as parse_document would with ruamel
    (positions are relative to the body, as there). False when this parse cannot be exact: the caller then uses
    parse_document for this document. An alias bomb raises InputError, as parse_document does."""
    if doc.parsed:
        return True
    body = doc.body
    if doc.tags:  # tag handles named by `%TAG` lines before the body: ruamel reads them with the directives
        return False
    if not has_content(body):
        doc.data, doc.parsed = None, True
        return True
    got = _one(body)
    if got is None:
        return False
    doc.data, doc.parsed, doc.counted = got[0], True, max(got[1], -1)
    if not 0 <= got[1] <= MAX_NODES:  # an alias (a bomb expands it), or too many values
        check_size(path, doc)
    return True


def one_document(text: str) -> tuple[Any] | None:
    """(data,) of text as ruamel would read it when text is exactly one YAML document this parse reproduces
    exactly; None when it declines (ruamel decides then)."""
    got = _one(text)
    return None if got is None else (got[0],)


def _one(text: str) -> tuple[Any, int] | None:
    """(data, values) of one_document's text (values as parse_stream counts them), or None."""
    if odd_breaks(text):  # line counting that splitlines() and YAML would disagree on
        return None
    try:
        docs = parse_stream(text)
    except (Decline, yaml.YAMLError, RecursionError, ValueError):
        return None
    if len(docs) != 1:  # a `...` end marker inside the text: more than one YAML document
        return None
    return docs[0][0], docs[0][2]


def fast_documents(path: str, raw: bytes, checked: str | None = None) -> FastFile | None:
    """The file's documents with data and positions as ruamel would give them, or None when any document needs
    ruamel. checked: a text check_structure already passed."""
    try:
        yf = split_documents(path, raw, checked=checked)
        if not all(fast_parse(path, doc) for doc in yf.documents):
            return None
    except InputError:
        return None
    return FastFile(yf, [doc.data for doc in yf.documents])
