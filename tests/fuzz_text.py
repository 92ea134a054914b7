"""A random YAML writer for the wide fuzzer (tests/test_fuzz_wide.py): a document tree of plain data and the
markers below, written with a random choice at every node among the forms real repositories use: block or flow
(on one line or over several), keys and strings plain, single- or double-quoted, long strings as literal blocks,
tabs inside scalars, comments at the end of a line, on their own line before a key or item, after a bare `-`, after
`key:` that opens a block, inside a flow collection over several lines; anchors on collections and aliases to them,
merge keys, anchored counts and their aliases; indentation of 2 to 4 with sequences flush or indented.

The reader of the text (PyYAML, as YAML 1.1 like the API server's go-yaml) gives the data the tree means; the
fuzzer compares that data before and after fix, so the writer needs no model of what it wrote beyond the comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st


@dataclass(frozen=True)
class Raw:
    """A scalar written exactly as text (a count in one of its forms, a number)."""

    text: str


@dataclass(frozen=True)
class Anchored:
    """A collection (or scalar) written with an anchor `&name`."""

    name: str
    node: Any


@dataclass(frozen=True)
class Alias:
    """`*name`: the node anchored as name (its value is the anchored node's)."""

    name: str


@dataclass(frozen=True)
class Merge:
    """A mapping written as `<<: *name` followed by its own keys (the anchored mapping's keys, overridden)."""

    name: str
    own: dict[str, Any]


@dataclass(frozen=True)
class Shared:
    """One node used in several places: written anchored where the text first holds it, an alias after (a merge
    key after with own keys, when merge is given)."""

    name: str
    node: Any
    merge: dict[str, Any] | None = None


def anchored(node: Any, seen: set[str] | None = None) -> Any:
    """The tree with each Shared node anchored at its first place in writing order and aliased after."""
    seen = set() if seen is None else seen
    if isinstance(node, Shared):
        if node.name in seen:
            return Merge(node.name, node.merge) if node.merge else Alias(node.name)
        seen.add(node.name)
        return Anchored(node.name, anchored(node.node, seen))
    if isinstance(node, dict):
        return {k: anchored(v, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [anchored(v, seen) for v in node]
    return node


@dataclass(frozen=True)
class Flat:
    """A collection that must be written in block style (the writer never puts it in flow): a container list
    whose items hold comments the fuzzer checks."""

    node: Any


PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./ -]*[A-Za-z0-9_.]$|^[A-Za-z]$")
# Words YAML 1.1 reads as something other than a string, written quoted.
SPECIAL = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "Y", "N", "Yes", "No", "True", "False"}


@dataclass
class Writer:
    draw: st.DrawFn
    indent: int
    seq_offset: int  # 0 (flush) or 2 or indent
    comments: bool
    flow: bool
    quoting: bool
    notes: list[str] = field(default_factory=list)
    # comments inside or right after a flow collection over several lines: fix keeps them only while it need not
    # rewrite that collection (ruamel's dump of a flow collection drops the comments inside)
    flow_notes: list[str] = field(default_factory=list)
    multiline_flow: bool = False  # a flow collection over several lines was written

    # -- choices --------------------------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 999)) < p * 1000

    def note(self, p: float = 0.15) -> str:
        """A comment text, recorded so the fuzzer can look for it after fix, or "" (none here)."""
        if not self.comments or not self.chance(p):
            return ""
        text = f"c{len(self.notes)} keep: me"
        self.notes.append(text)
        return text

    def eol(self, p: float = 0.15) -> str:
        text = self.note(p)
        return f"  # {text}" if text else ""

    def flow_eol(self) -> str:
        text = self.eol(0.2)
        if text:
            self.flow_notes.append(self.notes[-1])
        return text

    # -- scalars ----------------------------------------------------------------------------------------------
    def string(self, value: str, key: bool = False) -> str:
        plain = bool(PLAIN.match(value)) and value not in SPECIAL and ": " not in value and " #" not in value
        forms = ["plain"] * 3 if plain else []
        if self.quoting or not plain:
            if "'" not in value and "\t" not in value:
                forms.append("single")
            forms.append("double")
        form = self.draw(st.sampled_from(forms))
        if form == "plain":
            return value
        if form == "single":
            return "'" + value + "'"
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        if "\t" in escaped and self.chance(0.5):
            escaped = escaped.replace("\t", "\\t")  # the escape, or the tab itself (both a tab)
        return '"' + escaped + '"'

    def scalar(self, value: Any) -> str:
        if isinstance(value, Raw):
            return value.text
        if isinstance(value, Alias):
            return f"*{value.name}"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if value is None:
            return "null"
        return self.string(str(value))

    # -- collections --------------------------------------------------------------------------------------------
    def is_collection(self, value: Any) -> bool:
        inner = value.node if isinstance(value, (Anchored, Flat)) else value
        return isinstance(inner, (dict, list, Merge)) and bool(inner)

    def flow_text(self, value: Any) -> str:
        """value on one line in flow style."""
        if isinstance(value, Anchored):
            return f"&{value.name} {self.flow_text(value.node)}"
        if isinstance(value, Flat):
            return self.flow_text(value.node)
        if isinstance(value, Merge):
            parts = [f"<<: *{value.name}"] + [f"{self.string(k)}: {self.flow_text(v)}" for k, v in value.own.items()]
            return "{" + ", ".join(parts) + "}"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.string(k)}: {self.flow_text(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.flow_text(v) for v in value) + "]"
        text = self.scalar(value)
        # A plain scalar in flow context must not hold flow indicators.
        if isinstance(value, str) and text == value and any(ch in value for ch in ",[]{}"):
            text = '"' + value + '"'
        return text

    def flow_lines(self, value: Any, col: int) -> list[str]:
        """A flow mapping or sequence over several lines, one entry a line at col, a comment after some."""
        inner = value.node if isinstance(value, Anchored) else value
        head = f"&{value.name} " if isinstance(value, Anchored) else ""
        if isinstance(inner, Merge):
            entries = [f"<<: *{inner.name}"] + [f"{self.string(k)}: {self.flow_text(v)}" for k, v in inner.own.items()]
            opening, closing = "{", "}"
        elif isinstance(inner, dict):
            entries = [f"{self.string(k)}: {self.flow_text(v)}" for k, v in inner.items()]
            opening, closing = "{", "}"
        else:
            entries = [self.flow_text(v) for v in inner]
            opening, closing = "[", "]"
        lines = [head + opening]
        for i, entry in enumerate(entries):
            comma = "," if i < len(entries) - 1 or self.chance(0.3) else ""
            lines.append(" " * col + entry + comma + self.flow_eol())
        lines.append(" " * col + closing)
        return lines

    def value_after_key(self, value: Any, col: int, out: list[str], head: str) -> None:
        """head ("key:" or "- key:" with its indentation) followed by value."""
        if not self.is_collection(value):
            inner = value.node if isinstance(value, Anchored) else value
            anchor = f"&{value.name} " if isinstance(value, Anchored) else ""
            if isinstance(inner, (dict, Merge)):
                text = "{}"
            elif isinstance(inner, list):
                text = "[]"
            elif isinstance(inner, str) and len(inner) > 60 and "\t" not in inner and self.chance(0.5):
                out.append(f"{head} {anchor}|-" + self.eol())
                out.append(" " * (col + self.indent) + inner)
                return
            else:
                text = self.scalar(inner)
            out.append(f"{head} {anchor}{text}" + self.eol())
            return
        if self.flow and not isinstance(value, Flat) and self.chance(0.25):
            if self.chance(0.3):
                self.multiline_flow = True
                lines = self.flow_lines(value, col + self.indent)
                out.append(f"{head} {lines[0]}" + self.flow_eol())
                out.extend(lines[1:])
            else:
                out.append(f"{head} {self.flow_text(value)}" + self.eol())
            return
        anchor = f" &{value.name}" if isinstance(value, Anchored) else ""
        inner = value.node if isinstance(value, (Anchored, Flat)) else value
        out.append(f"{head}{anchor}" + self.eol())
        if isinstance(inner, list):
            self.sequence(inner, col + self.seq_offset, out)
        else:
            self.mapping(inner, col + self.indent, out)

    def mapping(self, data: dict[str, Any] | Merge, col: int, out: list[str], lead: str | None = None) -> None:
        """A block mapping at col; lead replaces the first key's indentation (a sequence item's `- `)."""
        items: list[tuple[str, Any]] = []
        if isinstance(data, Merge):
            items.append(("<<", Alias(data.name)))
            items.extend(data.own.items())
        else:
            items.extend(data.items())
        for i, (k, v) in enumerate(items):
            pad = " " * col if (i or lead is None) else lead
            if (i or lead is None) and (text := self.note(0.08)):
                out.append(" " * col + f"# {text}")
            key = k if k == "<<" else self.string(k, key=True)
            self.value_after_key(v, col, out, f"{pad}{key}:")

    def sequence(self, items: list[Any], col: int, out: list[str]) -> None:
        for item in items:
            if out and not out[-1].rstrip().endswith(":") and (text := self.note(0.08)):
                out.append(" " * col + f"# {text}")
            inner = item.node if isinstance(item, Anchored) else item
            anchor = f"&{item.name}" if isinstance(item, Anchored) else ""
            if isinstance(inner, (dict, Merge)) and inner:
                bare = bool(anchor) or self.chance(0.1)
                if bare:  # `- &a` or `-` (perhaps with a comment), the mapping on the next lines
                    # Seen and left (README of tests/test_fuzz_wide.py): no comment after a bare `-`.
                    out.append(" " * col + ("- " + anchor if anchor else "-"))
                    self.mapping(inner, col + 2, out)
                else:
                    self.mapping(inner, col + 2, out, lead=" " * col + "- ")
            elif isinstance(inner, list) and inner:
                out.append(" " * col + f"- {anchor} {self.flow_text(inner)}".replace("-  ", "- "))
            else:
                out.append(" " * col + "- " + (anchor + " " if anchor else "") + self.flow_text(inner) + self.eol())


def write(data: dict[str, Any], writer: Writer) -> str:
    out: list[str] = []
    writer.mapping(anchored(data), 0, out)
    return "\n".join(out) + "\n"
