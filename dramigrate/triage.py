"""Triage: decide cheaply which files can hold anything dramigrate reports, before any round-trip parse.

Most files in a repo ask for no device. First the bytes: a known device resource name or domain, an
object kind dramigrate checks, or a domain-qualified key under limits/requests. Then, for what passes, a
fast C YAML parse: only documents with a device request, a claim or a quota go on to the round-trip
loader, which is about ten times slower and is needed only for line numbers and edits.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.mergeorder import replaced_by_merge
from dramigrate.rules import NATIVE_RESOURCES, RuleSet

if TYPE_CHECKING:
    from dramigrate.documents import Document

_ALWAYS = re.compile(rb"resourceClaims|claims\s*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|\{\{")
_SECTION = re.compile(
    rb"^([ \t]*)(?:- )?[\"']?(limits|requests|extra_resource_limits|extra_resource_guarantees)[\"']?\s*:(.*)$"
)
# the same key inside a flow mapping (`resources: {limits: {x.io/y: 1}}`): what its own mapping holds
_FLOW_SECTION = re.compile(
    rb"[{,][ \t]*[\"']?(?:limits|requests|extra_resource_limits|extra_resource_guarantees)[\"']?\s*:\s*\{([^{}]*)"
)
# any case: a domain in capitals (`NVIDIA.com/gpu`) is no valid resource name, which detect says
_KEY = re.compile(rb"""(?:^|[\s{,])["']?([A-Za-z0-9][-A-Za-z0-9.]*/[-\w.]+)["']?\s*:""")
QUOTA_KINDS = {"ResourceQuota", "LimitRange", "ClusterQueue", "NodePool", "Queue"}
KUBESPAWNER_KEYS = ("extra_resource_limits", "extra_resource_guarantees")
_LOOKAHEAD = 40
# An escape in a double-quoted YAML scalar or a JSON string can spell any character of a resource name
# (`"nvidia.com\x2Fgpu"`, `\u002f`, JSON's `\/`), and a backslash before a line break joins two lines: the API
# server reads the name decoded while the bytes hold no device word. Such bytes go to the parse, which decodes them.
_NAME_ESCAPE = re.compile(rb"\\(?:[xuU/]|\r?\n)")
# A tag that may be `!!binary` (as written, verbatim `!<tag:yaml.org,2002:binary>`, with a %-escape in it, or a
# handle a `%TAG` directive names): go-yaml decodes such a scalar to its text, so a key `!!binary bGltaXRz` is
# `limits` for the API server while the bytes hold no device word. Such bytes go to the parse, which refuses it.
_BINARY, _SET = "tag:yaml.org,2002:binary", "tag:yaml.org,2002:set"
_BINARY_TAG = re.compile(rb"!(?:[^\s!]*!)?[^\s!]*(?:binary|%)|%TAG")


_compiled: dict[int, tuple[RuleSet, re.Pattern[bytes]]] = {}


def _literals(rules: RuleSet) -> re.Pattern[bytes]:
    """Known device resource names and domains, from the rule packs (compiled once per rule set)."""
    hit = _compiled.get(id(rules))
    if hit is not None and hit[0] is rules:
        return hit[1]
    pattern = re.compile(b"|".join(re.escape(w.encode()) for w in literal_words(rules)))
    _compiled[id(rules)] = (rules, pattern)
    return pattern


def has_word(raw: bytes, rules: RuleSet) -> bool:
    """_literals(rules).search(raw) is not None, with a substring test per word (each a fast scan in C, where the
    regex tries every alternative at most bytes)."""
    return any(w in raw for w in _words(rules))


_word_bytes: dict[int, tuple[RuleSet, tuple[bytes, ...]]] = {}


def _words(rules: RuleSet) -> tuple[bytes, ...]:
    hit = _word_bytes.get(id(rules))
    if hit is not None and hit[0] is rules:
        return hit[1]
    # shortest first: a device file holds a domain (`nvidia.com/`), and any() stops at the first word it finds
    words = tuple(sorted((w.encode() for w in literal_words(rules)), key=len))
    _word_bytes[id(rules)] = (rules, words)
    return words


def literal_words(rules: RuleSet) -> list[str]:
    """The words _literals looks for, longest first."""
    words: set[str] = set()
    for rule in rules.resources:
        if rule.match:
            words.add(rule.match)
        elif rule.regex is not None:
            # the regex's literal start: escaped dots count as dots, any other special character ends it
            literal = re.match(r"(?:\\\.|[^\\\[\](){}.*+?|^$])*", rule.regex.pattern)
            words.add(literal.group(0).replace("\\.", ".") if literal else "")
    words |= {f"{d}/" for d in rules.domains}
    words.discard("")
    return sorted(words, key=lambda w: (-len(w), w))


def _extended(key: bytes) -> bool:
    return not NATIVE_RESOURCES.match(key.decode("ascii", "replace"))


# A word each match of _ALWAYS holds: when none is in the bytes, the regex (tried at every byte) cannot match.
_ALWAYS_WORDS = (b"laims", b"ResourceQuota", b"LimitRange", b"ClusterQueue", b"NodePool", b"{{")
assert _ALWAYS.pattern == rb"resourceClaims|claims\s*:|ResourceQuota|LimitRange|ClusterQueue|NodePool|\{\{", (
    "triage._ALWAYS_WORDS must hold a word of every alternative of _ALWAYS"
)


def may_matter(raw: bytes, rules: RuleSet) -> bool:
    """From the bytes alone: can this file hold a device request, a claim or a device quota? The device words first:
    almost every file that gets here (grep let it through) holds one."""
    if has_word(raw, rules) or spelled_by_escape(raw) or spelled_by_tag(raw):
        return True
    if any(w in raw for w in _ALWAYS_WORDS) and _ALWAYS.search(raw) is not None:
        return True
    return _extended_in_section(raw)


def spelled_by_escape(raw: bytes) -> bool:
    """The bytes hold an escape that can spell a character of a device name (_NAME_ESCAPE)."""
    return b"\\" in raw and _NAME_ESCAPE.search(raw) is not None


def spelled_by_tag(raw: bytes) -> bool:
    """The bytes hold a tag that may be `!!binary`, which can spell any key or value (_BINARY_TAG)."""
    return (b"!" in raw or b"%TAG" in raw) and _BINARY_TAG.search(raw) is not None


def mentions_device(raw: bytes, rules: RuleSet) -> bool:
    """From the bytes alone: does this file name a known device resource, or an extended resource in limits?"""
    return has_word(raw, rules) or _extended_in_section(raw)


def _extended_in_section(raw: bytes) -> bool:
    """A domain-qualified key that is not native in limits or requests (on the section's line or below it, or in
    the section's flow mapping)."""
    if b"limits" not in raw and b"requests" not in raw and b"extra_resource" not in raw:
        return False
    lines = raw.split(b"\n")
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if not m:
            continue
        if any(_extended(k.group(1)) for k in _KEY.finditer(m.group(3))):
            return True
        indent = len(m.group(1))
        for nxt in lines[i + 1 : i + 1 + _LOOKAHEAD]:
            stripped = nxt.strip()
            if not stripped or stripped.startswith(b"#"):
                continue
            if len(nxt) - len(nxt.lstrip()) <= indent:
                break
            k = _KEY.match(b" " + stripped)
            if k and _extended(k.group(1)):
                return True
    return b"{" in raw and any(
        _extended(k.group(1)) for m in _FLOW_SECTION.finditer(raw) for k in _KEY.finditer(m.group(1))
    )


def fast_relevant(raw: bytes, rules: RuleSet) -> bool | None:
    """Parse with the C loader and say whether any document needs the full pipeline; None if it did not parse. A
    text of more values than the full pipeline takes needs it: its count refuses it there, before a value is built."""
    from dramigrate.documents import MAX_ROUND_TRIP_VALUES
    from dramigrate.limits import nodes_upto

    if nodes_upto(raw, MAX_ROUND_TRIP_VALUES) > MAX_ROUND_TRIP_VALUES:
        return True
    try:
        docs = list(yaml.load_all(raw, Loader=_loader()))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    return any_relevant(docs, rules)


@functools.cache
def _loader() -> type:
    """The C loader refusing a key written twice in one mapping: PyYAML keeps the last silently, so a device request
    under the first `spec:` of two would look like none, and the file would never reach the full parse that refuses
    the repeat (keys merged in with `<<` may repeat: the mapping's own key wins, as YAML says, when the merge key
    comes first; a key a later merge key sets again is read apart by Kubernetes, mergeorder)."""
    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _NoRepeatLoader(base):  # type: ignore[misc,valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            keys = [(k.tag, k.value) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            if len(set(keys)) != len(keys):
                raise yaml.constructor.ConstructorError(None, None, "a key written twice", node.start_mark)
            if any(k.tag == _BINARY for k, _ in node.value):  # go-yaml reads its text: documents.py refuses it
                raise yaml.constructor.ConstructorError(None, None, "a !!binary key", node.start_mark)
            if node.tag == _SET:  # go-yaml reads a mapping with its values, PyYAML a set: documents.py refuses it
                raise yaml.constructor.ConstructorError(None, None, "a !!set mapping", node.start_mark)
            if (key := replaced_by_merge(node)) is not None:  # read apart by Kubernetes and by YAML 1.1
                raise yaml.constructor.ConstructorError(None, None, "a key a later merge key sets", key.start_mark)
            return super().construct_mapping(node, deep)

    return _NoRepeatLoader


def needs_pipeline(doc: Document, rules: RuleSet) -> bool:
    """Does this parsed document need the full pipeline? The answer any_relevant gives, from what the fast parse met
    (fastyaml.Seen) instead of a walk of every value when it can."""
    from dramigrate.fastyaml import seen

    met = seen(doc)
    if met is None:
        return _needs_pipeline(doc.data, rules)
    if met.quota_or_claims:
        return True
    for values in met.sections:
        if isinstance(values, dict) and any(rules.is_device_candidate(str(k)) for k in values):
            return True
    return met.texts and _needs_pipeline(doc.data, rules)  # a string may hold a request: walk it


def any_relevant(docs: list[Any], rules: RuleSet) -> bool:
    """Does any parsed document need the full pipeline?"""
    return any(_needs_pipeline(d, rules) for d in docs)


def _needs_pipeline(node: Any, rules: RuleSet) -> bool:
    """Does the parsed node hold a quota kind, a claim, a device candidate in a resources section, or a manifest in
    a string? Only collections go on the stack (each once: an alias is the same object); strings are checked where
    they are met."""
    if not isinstance(node, dict | list):
        return _embeds_request(node, rules)
    stack = [node]
    seen: set[int] = set()
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, dict):
            kind = cur.get("kind")
            if (isinstance(kind, str) and kind in QUOTA_KINDS) or "resourceClaims" in cur or "claims" in cur:
                return True
            for section in _SECTIONS:
                values = cur.get(section)
                if isinstance(values, dict) and any(rules.is_device_candidate(str(k)) for k in values):
                    return True
            children: Any = cur.values()
        else:
            children = cur
        for child in children:  # _embeds_request inline, and isinstance of a tuple: this meets every value
            if isinstance(child, _COLLECTIONS):
                stack.append(child)
            elif isinstance(child, str) and ("limits" in child or "requests" in child) and _names_word(child, rules):
                return True
    return False


_COLLECTIONS = (dict, list)


_SECTIONS = ("limits", "requests", *KUBESPAWNER_KEYS)


def _embeds_request(value: Any, rules: RuleSet) -> bool:
    """A pod spec or manifest held in a string (embedded.py reports it)."""
    return isinstance(value, str) and ("limits" in value or "requests" in value) and _names_word(value, rules)


def _names_word(text: str, rules: RuleSet) -> bool:
    """A string holds a device word, or an escape that can spell one (a JSON manifest in a block scalar)."""
    raw = text.encode()
    return has_word(raw, rules) or spelled_by_escape(raw)
