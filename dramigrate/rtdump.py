"""ruamel's round-trip dump, with the work it repeats for every node done once.

Fix dumps each edited document twice (before and after the edit, for the minimal merge), and ruamel spends most of
that time asking the same questions again for every scalar: which tag would this text resolve to (a version lookup,
a regex scan and a new Tag, whose text is decoded character by character), which styles can write this text (a scan
of every character), and where are the resolver and the emitter (two properties that look them up on the YAML
object each time). The answers depend only on the scalar's text, the tag's text and the YAML version, so they are
kept: the events, and so the text ruamel writes, are the same (tests/test_fix_speed.py compares both dumps).
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.emitter import RoundTripEmitter, ScalarAnalysis
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.serializer import Serializer
from ruamel.yaml.tag import Tag

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
            if len(_RESOLVED) >= _MAX_MEMO:
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


class Representer(RoundTripRepresenter):
    """ruamel's representer, giving the nodes of one tag one Tag (read only by the serializer and the emitter)."""

    def represent_scalar(self, tag: Any, value: Any, style: Any = None, anchor: Any = None) -> Any:
        if type(tag) is str:
            shared = _TAGS.get(tag)
            if shared is None:
                if len(_TAGS) >= _MAX_MEMO:
                    _TAGS.clear()
                shared = _TAGS[tag] = Tag(suffix=tag)
            tag = shared
        return super().represent_scalar(tag, value, style=style, anchor=anchor)


class Emitter(RoundTripEmitter):
    """ruamel's round-trip emitter; which styles can write a scalar's text is worked out once per text."""

    def analyze_scalar(self, scalar: Any) -> Any:
        key = (str(scalar), bool(self.allow_unicode), bool(self.unicode_supplementary), bool(self.allow_space_break))
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
            if len(_ANALYSED) >= _MAX_MEMO:
                _ANALYSED.clear()
            _ANALYSED[key] = fields
        return ScalarAnalysis(scalar, *fields)  # a new one: choose_scalar_style sets allow_block on it
