"""Integers with more digits than Python converts (4300, sys.get_int_max_str_digits) in YAML or JSON input: int()
raised a ValueError without a position, shown as Python's own hint ("use sys.set_int_max_str_digits()") or as an
internal error. Both YAML libraries' integer constructors refuse such a number first, as a YAML error at its node,
and loads_json as a LongInt with its line, so every caller reports it as bad input with file:line (Kubernetes
reads no integer past int64, 19 digits)."""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

from dramigrate.mergeorder import guard_ruamel_merges, replaced_by_merge
from dramigrate.mergeorder import message as merge_message
from dramigrate.writtenbinary import BINARY_TAG, construct_written_binary

INT_TAG = "tag:yaml.org,2002:int"


def too_long(text: str) -> str | None:
    """Why a plain integer scalar cannot be read, or None: more decimal digits than Python converts. Binary, octal
    and hexadecimal forms (they start with 0) convert at any length."""
    digits = text.replace("_", "").lstrip("+-")
    limit = sys.get_int_max_str_digits()
    if limit and len(digits) > limit and not digits.startswith("0"):
        return f"an integer of {len(digits):,} digits, too long to read (Kubernetes reads none past int64, 19 digits)"
    return None


class LongInt(ValueError):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def long_int_at(text: str) -> LongInt | None:
    """The first run of decimal digits in text too long to convert, as a LongInt at its line and column (for a
    parser that gives no position: TOML), or None."""
    import re

    limit = sys.get_int_max_str_digits()
    m = re.search(rf"[0-9][0-9_]{{{limit},}}", text) if limit else None
    why = too_long(m.group()) if m else None
    if m is None or why is None:
        return None
    return _at(why, text, m.start())


def _at(why: str, text: str, offset: int) -> LongInt:
    return LongInt(why, text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset))


def loads_json(text: str, unique: bool = False) -> Any:
    """json.loads, raising LongInt at the first integer too long to convert (json.loads' own ValueError has no
    position and Python's hint). unique: a key set twice in one object raises RepeatedKey (json keeps the last)."""
    import json

    def parse_int(digits: str) -> int:
        why = too_long(digits)
        if why:
            raise _at(why, text, text.find(digits))
        return int(digits)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise RepeatedKey(key)
            out[key] = value
        return out

    return json.loads(text, parse_int=parse_int, object_pairs_hook=pairs if unique else None)


class RepeatedKey(Exception):
    """A JSON object that sets a key twice (loads_json with unique)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _guarded(construct: Any, error: type | None) -> Any:
    """construct, refusing an integer too long to convert with error at its node (error None: read as its text)."""

    def construct_yaml_int(self: Any, node: Any) -> Any:
        why = too_long(str(node.value))
        if why and error is None:
            return str(node.value)
        if why:
            raise error(None, None, why, node.start_mark)
        return construct(self, node)

    construct_yaml_int.guarded = True  # type: ignore[attr-defined]
    return construct_yaml_int


def guard_pyyaml() -> None:
    """PyYAML's safe constructor (SafeLoader, CSafeLoader and the subclasses made after this) refuses such an
    integer with a ConstructorError at its node. Idempotent."""
    from yaml.constructor import ConstructorError, SafeConstructor

    current = SafeConstructor.yaml_constructors[INT_TAG]
    if not getattr(current, "guarded", False):
        SafeConstructor.add_constructor(INT_TAG, _guarded(current, ConstructorError))


@cache
def round_trip_constructor() -> type:
    """ruamel's round-trip constructor refusing such an integer with a ConstructorError at its node."""
    from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor

    guard_ruamel_merges()  # here, not at start-up: importing ruamel cost lint of one clean file 27 ms

    class Constructor(RoundTripConstructor):  # type: ignore[misc]
        def flatten_mapping(self, node: Any) -> Any:
            if (key := replaced_by_merge(node)) is not None:  # before ruamel takes the merge keys out of the node
                raise ConstructorError(None, None, merge_message(key), key.start_mark)
            return super().flatten_mapping(node)

    Constructor.add_constructor(INT_TAG, _guarded(RoundTripConstructor.construct_yaml_int, ConstructorError))
    Constructor.add_constructor(BINARY_TAG, construct_written_binary)
    return Constructor


@cache
def lenient_round_trip_constructor() -> type:
    """ruamel's round-trip constructor reading such an integer as its text: for a file read only for the lines of
    its keys (a values file Helm reads), where one unused long number lost the position of every key."""
    from ruamel.yaml.constructor import RoundTripConstructor

    guard_ruamel_merges()

    class Constructor(RoundTripConstructor):  # type: ignore[misc]
        pass

    Constructor.add_constructor(INT_TAG, _guarded(RoundTripConstructor.construct_yaml_int, None))
    Constructor.add_constructor(BINARY_TAG, construct_written_binary)
    return Constructor
