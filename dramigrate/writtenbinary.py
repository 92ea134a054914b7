"""`!!binary` values written back as the user wrote them.

ruamel's round-trip constructor reads `!!binary aGVsbG8=` as plain bytes and its representer writes bytes as a
literal block of freshly encoded base64 (`!!binary |` and the text on the next line, 76 characters a line), so the
dump fix compares against the original no longer matched it line for line, and a manifest with a `!!binary` value
just before where fix adds a field (the end of a pod spec that ends the document) was written back whole, every line
re-spaced. WrittenBinary is those bytes with the scalar's text and style kept, which the representer writes again."""

from __future__ import annotations

from typing import Any

BINARY_TAG = "tag:yaml.org,2002:binary"


class WrittenBinary(bytes):
    """The decoded bytes of a `!!binary` scalar, with the scalar's text and style as written."""

    text: str
    style: str | None

    def __new__(cls, value: bytes, text: str, style: str | None) -> WrittenBinary:
        made = super().__new__(cls, value)
        made.text, made.style = text, style
        return made

    def __reduce__(self) -> Any:  # pickled whole for the worker processes, text and style kept
        return (WrittenBinary, (bytes(self), self.text, self.style))


def construct_written_binary(constructor: Any, node: Any) -> bytes:
    """ruamel's construct_yaml_binary (its errors at the node), keeping the text and style of the scalar."""
    value = constructor.construct_yaml_binary(node)
    return WrittenBinary(value, node.value, node.style)


def represent_written_binary(representer: Any, data: WrittenBinary) -> Any:
    """The scalar as written (bytes do not change, so the text still decodes to them). The tag is spelled as
    ruamel's represent_tagged_scalar spells a `!!str` it read: its emitter writes a scalar plain only when the tag
    is not spelled tag:yaml.org,2002:..., and quotes it otherwise."""
    return representer.represent_scalar("!! binary", data.text, style=data.style)
