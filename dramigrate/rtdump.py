"""ruamel's round-trip dump, with the work it repeats for every node done once.

Fix dumps each edited document twice (before and after the edit, for the minimal merge), and ruamel's serializer
spends most of that time asking the same questions again for every scalar: which tag would this text resolve to
(a version lookup, a regex scan and a new Tag, whose text is decoded character by character), and where are the
resolver and the emitter (two properties that look them up on the YAML object each time). The answers depend only
on the scalar's text and the YAML version, so they are kept: the events, and so the text ruamel writes, are the
same (tests/test_fix_speed.py compares both dumps).
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.serializer import Serializer

_RESOLVED: dict[tuple[Any, str, tuple[bool, bool]], Any] = {}  # (version, text, implicit) -> the resolved Tag
_MAX_RESOLVED = 200_000  # a run over many distinct scalars starts the memo afresh rather than grow without bound


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
            if len(_RESOLVED) >= _MAX_RESOLVED:
                _RESOLVED.clear()
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return tag


class FastSerializer(Serializer):
    """ruamel's serializer, finding its resolver and emitter once per document instead of once per node."""

    @property
    def resolver(self) -> Any:
        found = self.__dict__.get("_found_resolver")
        if found is None:
            found = self.__dict__["_found_resolver"] = Serializer.resolver.fget(self)  # type: ignore[attr-defined]
        return found

    @property
    def emitter(self) -> Any:
        found = self.__dict__.get("_found_emitter")
        if found is None:
            found = self.__dict__["_found_emitter"] = Serializer.emitter.fget(self)  # type: ignore[attr-defined]
        return found
