"""ruamel's round-trip data for a document without comments, composed from libyaml's events (C) instead of
ruamel's pure-Python scanner and parser, which were a third of fix's time.

ruamel builds its data in three steps: scan and parse the text into events, compose the events into nodes
(resolving each plain scalar's tag), construct the data from the nodes. Here libyaml gives the events and this
module composes ruamel's own nodes from them (with ruamel's resolver and the positions ruamel gives); ruamel's
round-trip constructor then builds the data, so every value, string class, number format and position is made
by the same code as before. Only what the events cannot carry is left out, and a document holding any of it is
declined (the caller parses it with ruamel): comments and blank lines inside the document (ruamel keeps both in
its data), tabs, tags, directives, folded scalars (ruamel remembers where they fold), complex keys, an empty value
in a flow mapping (ruamel places it just after its colon), an anchor named twice, an alias inside its own anchor's
node, odd line breaks, and more than one document. An anchored node carries its anchor and an alias is its
anchor's node again, as in ruamel's composer; the constructor then keeps the anchor, shares the aliased data and
merges `<<` keys as in ruamel's own parse. tests/test_fix_speed.py checks the data, positions, sharing and dump are
ruamel's on the fixtures, the corpus and the generated tree.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from dramigrate.fastyaml import MAX_DEPTH, Decline

# comments, blank lines, tabs, line breaks other than \n, and a byte-order mark inside the text (libyaml counts
# its column differently)
_ODD = re.compile(r"[\t\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff#]|(?:\A|\n)[ ]*\n|\n[ ]+\Z")
_HEAD = re.compile(r"(?:#[^\n]*\n)+")
# what declines a document whose comments and blank lines need not be kept (comments=False): tabs and odd line breaks
_ODD_BREAK = re.compile(r"[\t\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff]")
_COMMENT_OR_BLANK = re.compile(r"#|\n[ ]*\n")


def compose_round_trip(body: str, yaml: Any, comments: bool = True) -> Any:
    """The round-trip data yaml (a ruamel YAML(typ='rt')) would load from body, or Decline. comments=False: the
    caller reads only the values (and the text they dump to only as objects), so comments and blank lines inside the
    document do not decline it; the data then holds none of them, every value, string class, number format and
    position being ruamel's as for any other document (libyaml skips comments and blank lines as ruamel's parser
    does). Helm's renders hold both in most documents (a template's blank lines, its comments, a `# Source:` line)."""
    from yaml import (
        AliasEvent,
        DocumentEndEvent,
        DocumentStartEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceStartEvent,
        StreamEndEvent,
        StreamStartEvent,
    )
    from yaml._yaml import CParser

    head = _HEAD.match(body)
    lines = head.group().count("\n") if head else 0  # comment lines at the top: ruamel's comment of the root
    rest = body[head.end() :] if head else body
    odd = _ODD if comments else _ODD_BREAK
    if (head and odd.search(head.group().replace("#", "").replace("\n", ""))) or odd.search(rest):
        raise Decline("comment, blank line, tab or odd line break")
    if rest.lstrip(" \n").startswith(("%", "---")) or "\n..." in rest:
        raise Decline("directive or marker")
    text = "\n" * lines + rest
    resolver = yaml.resolver
    resolve = resolver.resolve
    parser = CParser(text)
    get = parser.get_event
    root: Any = None
    docs = 0
    stack: list[list[Any]] = []  # open collections: [node, its pending key node or None]
    anchors: dict[str, Any] = {}  # anchor -> its node, as ruamel's composer keeps them
    empty: Any = None  # an empty plain scalar: ruamel puts it where the next event starts
    empty_at = 0  # where libyaml put it: just after its colon or dash
    while True:
        ev = get()
        if ev is None:
            break
        if empty is not None:
            if not comments and _COMMENT_OR_BLANK.search(text, empty_at, ev.start_mark.index):
                raise Decline("empty value before a comment or blank line")  # ruamel: where, unknown here
            empty.start_mark = ev.start_mark
            empty = None
        cls = type(ev)
        if cls is ScalarEvent:
            if ev.tag is not None:
                raise Decline("tag")
            style = ev.style or None
            if style == ">":
                raise Decline("folded scalar")
            value = ev.value
            tag = resolve(ScalarNode, value, ev.implicit)
            node = ScalarNode(tag, value, ev.start_mark, ev.end_mark, style=style, anchor=ev.anchor)
            _anchor(anchors, ev.anchor, node)
            if not value and style is None and ev.anchor is None and _is_value(stack):
                if stack[-1][0].flow_style:
                    raise Decline("empty value in a flow mapping")  # ruamel: just after its colon, unknown here
                empty = node  # an empty item of a sequence starts after its dash, an anchored one at its anchor
                empty_at = ev.start_mark.index
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if ev.tag is not None:
                raise Decline("tag")
            if len(stack) >= MAX_DEPTH:
                raise Decline("deep")
            kind = MappingNode if cls is MappingStartEvent else SequenceNode
            node = kind(
                resolve(kind, None, ev.implicit), [], ev.start_mark, None, flow_style=ev.flow_style, anchor=ev.anchor
            )
            _anchor(anchors, ev.anchor, node)
            if root is None:
                root = node
            else:
                _put(stack, node, True)
            stack.append([node, None])
            continue
        elif cls is AliasEvent:
            node = anchors.get(ev.anchor)
            if node is None or any(open_[0] is node for open_ in stack):
                raise Decline("undefined or recursive alias")  # ruamel refuses the one and words it
            _put(stack, node, type(node) is not ScalarNode)
            continue
        elif cls is DocumentStartEvent:
            if ev.version is not None or ev.tags:
                raise Decline("directive")
            docs += 1
            continue
        elif cls is DocumentEndEvent or cls is StreamStartEvent or cls is StreamEndEvent:
            continue
        else:  # the end of a mapping or sequence
            stack.pop()[0].end_mark = ev.end_mark
            continue
        if root is None:
            root = node
        else:
            _put(stack, node, False)
    if docs != 1 or root is None or (lines and type(root) is ScalarNode):
        raise Decline("not one document")
    if lines:
        root.comment = [None, _comment_tokens(body, lines)]
    return yaml.constructor.construct_document(root)


def _comment_tokens(body: str, lines: int) -> list[Any]:
    """The comment lines at the top of body as ruamel's scanner gives them: one token per line, at column 0."""
    from ruamel.yaml.error import StringMark
    from ruamel.yaml.tokens import CommentToken

    buffer = body + "\0"
    out, at = [], 0
    for line in range(lines):
        end = body.index("\n", at) + 1
        start_mark = StringMark("<unicode string>", at, line, 0, buffer, at)
        end_mark = StringMark("<unicode string>", end, line + 1, 0, buffer, end)
        out.append(CommentToken(body[at:end], start_mark, end_mark))
        at = end
    return out


def _is_value(stack: list[list[Any]]) -> bool:
    """Whether the next node is a mapping's value."""
    return bool(stack) and type(stack[-1][0]) is MappingNode and stack[-1][1] is not None


def _anchor(anchors: dict[str, Any], anchor: str | None, node: Any) -> None:
    """Keep an anchored node for its aliases; an anchor named twice is declined (ruamel warns of it)."""
    if anchor is None:
        return
    if anchor in anchors:
        raise Decline("anchor named twice")
    anchors[anchor] = node


def _put(stack: list[list[Any]], node: Any, collection: bool) -> None:
    """Add a composed node to the collection open on top of the stack."""
    top = stack[-1]
    if type(top[0]) is not MappingNode:
        top[0].value.append(node)
    elif top[1] is None:
        if collection or (node.value == "" and node.style is None):
            raise Decline("complex or empty key")
        top[1] = node
    else:
        top[0].value.append((top[1], node))
        top[1] = None
