"""JSON report: a stable, documented shape (docs/json-output.md)."""

from __future__ import annotations

import json as _json
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

from dramigrate.findings import Finding

SCHEMA_VERSION = 1


def document(findings: list[Finding], summary: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The report as data: what --format json prints and what the HTML report is built from."""
    return {
        "version": SCHEMA_VERSION,
        "findings": [f.to_json() for f in findings],
        "errors": errors,
        "summary": summary,
    }


def render(findings: list[Finding], summary: dict[str, Any], errors: list[dict[str, Any]]) -> str:
    return dumps(document(findings, summary, errors)) + "\n"


def dumps(doc: Any) -> str:
    """json.dumps(doc, indent=2), byte for byte, about twice as fast: with an indent the json module encodes in
    Python, one generator per value (0.03 s of the serial end of a lint that reports 3,000 findings). Documents
    holding anything but dicts with string keys, lists, strings, ints, booleans and None go to json.dumps."""
    parts: list[str] = []
    try:
        _encode(doc, "", parts.append)
    except _Other:
        return _json.dumps(doc, indent=2)
    return "".join(parts)


class _Other(Exception):
    """A value _encode leaves to json.dumps (a float, a key that is not a string, an object)."""


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _quoted(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    raise _Other


def _encode(value: Any, indent: str, add: Any) -> None:
    kind = type(value)
    if kind is not dict and kind is not list:
        add(_scalar(value))
        return
    if not value:
        add("{}" if kind is dict else "[]")
        return
    inner = indent + "  "
    between = ",\n" + inner
    add(("{\n" if kind is dict else "[\n") + inner)
    first = True
    for key in value:
        if first:
            first = False
        else:
            add(between)
        if kind is dict:
            if type(key) is not str:
                raise _Other
            item = value[key]
            add(_quoted(key) + ": ")
        else:
            item = key
        if type(item) is dict or type(item) is list:
            _encode(item, inner, add)
        else:
            add(_scalar(item))
    add("\n" + indent + ("}" if kind is dict else "]"))
