"""ruamel's round-trip dump, with the work it repeats for every node done once.

Fix dumps each edited document twice (before and after the edit, for the minimal merge), and ruamel spends most of
that time asking the same questions again for every scalar: which tag would this text resolve to (a version lookup,
a regex scan and a new Tag, whose text is decoded character by character), which styles can write this text (a scan
of every character), and where are the resolver and the emitter (two properties that look them up on the YAML
object each time). The answers depend only on the scalar's text, the tag's text and the YAML version, so they are
kept: the events, and so the text ruamel writes, are the same (tests/test_fix_speed.py compares both dumps).

Most edited Kubernetes documents are block mappings of block mappings, block sequences and one-line scalars, with
no comment but a header, no anchor and no tag. For those, plain_dump writes ruamel's text directly, about ten times
faster than ruamel's representer, serializer and emitter; it declines anything else, which ruamel then dumps.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ruamel.yaml.anchor import Anchor
from ruamel.yaml.comments import CommentedMap, CommentedSeq, comment_attrib, format_attrib, merge_attrib
from ruamel.yaml.emitter import RoundTripEmitter, ScalarAnalysis
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarint import ScalarInt
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString, SingleQuotedScalarString
from ruamel.yaml.serializer import Serializer
from ruamel.yaml.tag import Tag
from ruamel.yaml.tokens import CommentToken

from dramigrate.memo import remember
from dramigrate.writtenbinary import WrittenBinary, represent_written_binary

_RESOLVED: dict[tuple[Any, str, tuple[bool, bool]], Any] = {}  # (version, text, implicit) -> the resolved Tag
_ANALYSED: dict[tuple[str, bool, bool, bool], tuple[Any, ...]] = {}  # (text, emitter flags) -> analysis fields
_TAGS: dict[str, Tag] = {}  # a node tag's text -> one Tag for every node that has it (its decoded text kept)
_MAX_MEMO = 200_000  # a run over many distinct scalars starts a memo afresh rather than let it grow without bound


class Resolver(VersionedResolver):
    """ruamel's resolver; a scalar's implicit tag is looked up once per YAML version and text."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode or self.yaml_path_resolvers or not isinstance(value, str):
            return super().resolve(kind, value, implicit)
        version = self.__dict__.get("_memo_version")
        if version is None:
            version = self.__dict__["_memo_version"] = self.processing_version
        key = (version, str(value), implicit)  # a quoted string's class resolves as its text
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = remember(_RESOLVED, key, super().resolve(kind, value, implicit), _MAX_MEMO)
        return tag


class FastSerializer(Serializer):
    """ruamel's serializer, finding its resolver and emitter once per document instead of once per node."""

    resolver = functools.cached_property(Serializer.resolver.fget)  # type: ignore[attr-defined]
    emitter = functools.cached_property(Serializer.emitter.fget)  # type: ignore[attr-defined]


class Representer(RoundTripRepresenter):
    """ruamel's representer, giving the nodes of one tag one Tag (read only by the serializer and the emitter)."""

    def represent_scalar(self, tag: Any, value: Any, style: Any = None, anchor: Any = None) -> Any:
        if type(tag) is str:
            shared = _TAGS.get(tag)
            if shared is None:
                shared = remember(_TAGS, tag, Tag(suffix=tag), _MAX_MEMO)
            tag = shared
        return super().represent_scalar(tag, value, style=style, anchor=anchor)


Representer.add_representer(WrittenBinary, represent_written_binary)


class Emitter(RoundTripEmitter):
    """ruamel's round-trip emitter; which styles can write a scalar's text is worked out once per text."""

    def analyze_scalar(self, scalar: Any) -> Any:
        key = (str(scalar), bool(self.allow_unicode), bool(self.unicode_supplementary), bool(self.allow_space_break))
        if self.serializer.use_version is not None:  # YAML 1.1 reads a few more characters as breaks
            return super().analyze_scalar(scalar)
        fields = _ANALYSED.get(key)
        if fields is None:
            a = super().analyze_scalar(scalar)
            fields = (
                a.empty,
                a.multiline,
                a.allow_flow_plain,
                a.allow_block_plain,
                a.allow_single_quoted,
                a.allow_double_quoted,
                a.allow_block,
            )
            remember(_ANALYSED, key, fields, _MAX_MEMO)
        return ScalarAnalysis(scalar, *fields)  # a new one: choose_scalar_style sets allow_block on it


# --- the common case without ruamel's event machinery ------------------------------------------------------------

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_MAX_LINE = 4000  # ruamel folds a long line at the width fix sets (4096); a document near it is left to ruamel
_MAX_QUOTED = 1000  # a double-quoted string, which ruamel folds at a space past the width, well within it


class _Decline(Exception):
    """The data holds something plain_dump does not write as ruamel would: ruamel dumps it."""


def plain_dump(data: Any, mapping: int, sequence: int, offset: int) -> str | None:
    """ruamel's round-trip dump of a block mapping of block mappings, block sequences and one-line scalars (strings
    plain, single- or double-quoted, also as the text quoted them, ints, booleans, nulls) or literal block scalars
    (_literal), with no comment but a header, and no named anchor, tag, merge key or flow collection (other than an
    empty one); None for anything
    else, which ruamel then dumps. A collection met twice is written as ruamel writes it: an anchor it names (id001,
    id002, ... in the order its serializer meets them again) where it first comes, an alias after. Plain dicts and
    lists (the ResourceClaimTemplates fix emits) are written as ruamel writes them: as maps and sequences without
    comments or styles, their keys in their order. The text ruamel writes for these is fixed: the header's lines, a
    key at its mapping's column, a nested mapping `mapping` further in, a sequence's dash `offset` in and its item
    `sequence` in, each scalar in the style ruamel's own emitter chooses (tests/test_fix_speed.py compares the two
    on every fixture, a generated tree and hypothesis documents)."""
    if (type(data) is not CommentedMap and type(data) is not dict) or not data or sequence < offset + 2:
        return None
    out = _header(data)
    if out is None:
        return None
    try:
        _mapping(data, 0, False, out, (mapping, sequence, offset), _Met(data))
    except _Decline:
        return None
    return "".join(out)


def _is_collection(node: Any) -> bool:
    t = type(node)
    return t is CommentedMap or t is dict or t is CommentedSeq or t is list


class _Met:
    """The collections written so far (ids), and the anchor of each the document holds more than once: ruamel's
    serializer names them id001, id002, ... in the order its walk (depth first, in document order) meets them a
    second time."""

    def __init__(self, root: Any) -> None:
        self.ids: set[int] = set()
        self.anchors: dict[int, str] = {}
        walked: set[int] = set()
        todo = [root]
        while todo:
            node = todo.pop()
            if not _is_collection(node):
                continue
            if id(node) in walked:
                self.anchors.setdefault(id(node), f"id{len(self.anchors) + 1:03d}")
                continue
            walked.add(id(node))
            todo.extend(reversed(list(node.values()) if isinstance(node, dict) else node))

    def mark(self, node: Any) -> str:
        """' &anchor' before a shared collection's first writing, '' before any other."""
        anchor = self.anchors.get(id(node))
        if anchor is None:
            return ""
        if not node:
            raise _Decline  # an anchored empty collection
        return " &" + anchor


def _header(root: CommentedMap) -> list[str] | None:
    """The document's header comment lines as ruamel writes them (each comment token's text, from column 0, blank
    lines after it kept), [] without one, or None for a header comment of another shape."""
    c = getattr(root, comment_attrib, None)
    if c is None or c.comment is None:
        return []
    if len(c.comment) != 2 or c.comment[0] is not None or not c.comment[1]:
        return None
    lines = []
    for token in c.comment[1]:
        value = getattr(token, "value", None)
        if type(token) is not CommentToken or token.start_mark.column != 0 or not isinstance(value, str):
            return None
        if not value.startswith("#") or not value.endswith("\n") or "\n" in value.rstrip("\n"):
            return None  # one comment line, then only the blank lines after it
        lines.append(value)
    return lines


def _plain_collection(node: Any, met: _Met) -> None:
    """Decline a collection that carries a comment, an anchor of its own, a tag, merge keys or flow style."""
    c = getattr(node, comment_attrib, None)
    if c is not None and ((c.comment and met.ids) or c.items or c.end):
        raise _Decline  # a comment other than the root's header (nothing is met before the root; _header checked it)
    if id(node) in met.ids:
        raise _Decline
    met.ids.add(id(node))
    f = getattr(node, format_attrib, None)
    if f is not None and f.flow_style():
        raise _Decline
    # ruamel's own dump leaves an empty anchor and tag on what it wrote: as none (ruamel writes neither)
    anchor, tag = getattr(node, Anchor.attrib, None), getattr(node, Tag.attrib, None)
    if (anchor is not None and anchor.value is not None) or (tag is not None and tag.value is not None):
        raise _Decline
    if getattr(node, merge_attrib, None):
        raise _Decline


Steps = tuple[int, int, int]  # mapping indent, sequence indent, dash offset


def _mapping(node: Any, column: int, inline: bool, out: list[str], steps: Steps, met: _Met) -> None:
    _plain_collection(node, met)
    pad = " " * column
    for key, value in node.items():
        if type(key) is not str and type(key) is not DoubleQuotedScalarString:  # `"helm.sh/hook": ...`
            raise _Decline
        k = _scalar(key, True)
        out.append(k if inline else pad + k)
        inline = False
        _value(value, column, out, steps, met)


def _value(value: Any, column: int, out: list[str], steps: Steps, met: _Met) -> None:
    """What follows `key:` for a key at column."""
    t = type(value)
    collection = _is_collection(value)
    if collection and id(value) in met.ids:
        out.append(": *" + met.anchors[id(value)] + "\n")
    elif collection and not value:
        met.mark(value)  # declines an anchored one
        _plain_collection(value, met)
        out.append(": {}\n" if t is CommentedMap or t is dict else ": []\n")
    elif t is CommentedMap or t is dict:
        out.append(":" + met.mark(value) + "\n")
        _mapping(value, column + steps[0], False, out, steps, met)
    elif t is CommentedSeq or t is list:
        out.append(":" + met.mark(value) + "\n")
        _sequence(value, column, out, steps, met)
    elif t is LiteralScalarString:
        out.append(": " + _literal(value, column + steps[0]))
    else:
        text = _scalar(value, False)
        out.append(": " + text + "\n" if text else ":\n")


def _sequence(node: Any, column: int, out: list[str], steps: Steps, met: _Met) -> None:
    """A block sequence under a key at column: each dash `off` in, each item `s` in."""
    _plain_collection(node, met)
    _, s, off = steps
    dash = " " * (column + off) + "-" + " " * (s - off - 1)
    short = " " * (column + off) + "-"  # an anchor or an alias follows the dash after one space
    for item in node:
        t = type(item)
        if _is_collection(item) and id(item) in met.ids:
            out.append(short + " *" + met.anchors[id(item)] + "\n")
        elif (t is CommentedMap or t is dict) and item:
            mark = met.mark(item)
            if mark:  # the anchor on the dash's line, the mapping below it
                out.append(short + mark + "\n")
                _mapping(item, column + s, False, out, steps, met)
            else:
                out.append(dash)
                _mapping(item, column + s, True, out, steps, met)
        elif _is_collection(item) or item is None:
            raise _Decline
        elif t is LiteralScalarString:
            out.append(dash + _literal(item, column + s))
        else:
            out.append(dash + _scalar(item, False) + "\n")


def _scalar(value: Any, key: bool) -> str:
    """A scalar's text as ruamel's emitter writes it: its style chosen as choose_scalar_style does."""
    t = type(value)
    if t is bool:
        return "true" if value else "false"
    if value is None:
        return ""  # ruamel writes a null inside a document as nothing after its key
    if t is int or t is ScalarInt:
        if t is ScalarInt and (value._underscore is not None or getattr(value, Anchor.attrib, None) is not None):
            raise _Decline
        width = getattr(value, "_width", None)
        text = f"{value:0{width}d}" if width is not None else format(value, "d")
        if not _ANALYSER.analyze_scalar(text).allow_block_plain or _resolved(text, (True, False)) != _INT:
            raise _Decline  # ruamel would quote and tag it
        return text
    quoted = t is SingleQuotedScalarString or t is DoubleQuotedScalarString
    if t is not str and (not quoted or _anchored(value)):
        raise _Decline
    a = _ANALYSER.analyze_scalar(value)
    if a.multiline or (key and (a.empty or len(value) >= 128)) or len(value) > _MAX_LINE:
        raise _Decline
    if t is DoubleQuotedScalarString:  # a string the text double-quotes (Helm's `quote`): ruamel keeps the style
        if a.empty or len(value) > _MAX_QUOTED:
            raise _Decline  # ruamel writes an empty one by its tag; a long one may fold at the width
        return _double_quoted(value)
    if t is str:
        if a.allow_block_plain and not a.empty and _resolved(value, (True, False)) == _STR:
            return value
        if "'" in value and a.allow_double_quoted:
            return _double_quoted(value)
    if not a.allow_single_quoted:
        raise _Decline
    return "'" + value.replace("'", "''") + "'"


# what a literal block scalar holds that ruamel writes otherwise than line by line at its indentation: a line break
# other than \n, a control character, a byte-order mark
_NOT_LITERAL = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def _literal(value: LiteralScalarString, indent: int) -> str:
    """A literal block scalar (`|`, a script in a ConfigMap or a container's args) as ruamel's emitter writes it after
    its key or dash: the indicator with its chomping (`|` for one final line break, `|-` for none) and, before a first
    line that starts blank or empty, the indentation indicator 2 whatever the indentation (ruamel's); then each line
    at indent, an empty line empty. Declined: a comment or anchor on it, more than one final line break (the keep
    indicator)."""
    if (
        not value
        or value == "\n"
        or value.endswith("\n\n")
        or _anchored(value)
        or getattr(value, "comment", None) is not None
        or _NOT_LITERAL.search(value)
    ):
        raise _Decline
    pad = " " * indent
    lines = value[:-1].split("\n") if value.endswith("\n") else value.split("\n")
    head = "|" + ("2" if value[0] in " \n" else "") + ("\n" if value.endswith("\n") else "-\n")
    return head + "".join(pad + line + "\n" if line else "\n" for line in lines)


def _anchored(value: Any) -> bool:
    """Whether ruamel writes an anchor before a quoted string: one it was read with (always dumped). ruamel's own dump
    gives every string it writes an empty Anchor, which writes nothing: a document it dumped once is still plain."""
    anchor = getattr(value, Anchor.attrib, None)
    return anchor is not None and (anchor.value is not None or anchor.always_dump)


_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def _double_quoted(value: str) -> str:
    """A one-line string of printable ASCII double-quoted as ruamel's write_double_quoted writes it: a quote and a
    backslash escaped, nothing else; anything else (other characters ruamel escapes or writes as they are) declined."""
    if not _PRINTABLE.fullmatch(value):
        raise _Decline
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _analyser() -> Emitter:
    """An emitter set up as dump_yaml's (allow_unicode, YAML 1.2), to analyse scalars as it does."""
    from dramigrate.documents import _round_trip

    yaml = _round_trip()
    yaml.Emitter, yaml.Serializer = Emitter, FastSerializer
    return yaml.emitter  # type: ignore[no-any-return]


_RESOLVER = Resolver()
_ANALYSER = _analyser()


def _resolved(text: str, implicit: tuple[bool, bool]) -> str:
    return str(_RESOLVER.resolve(ScalarNode, text, implicit))
