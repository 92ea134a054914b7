"""Merge keys in the order Kubernetes reads them.

sigs.k8s.io/yaml, the reader of kubectl and of the API server, decodes with go-yaml v2, which applies a merge key
`<<` where it stands in its mapping: the merged keys replace any key written before it (`limits: {cpu: 1}` then
`<<: {limits: {nvidia.com/gpu: 2}}` is a request for 2 GPUs). YAML 1.1, PyYAML and ruamel keep the mapping's own
key wherever the merge is written. A mapping where the two readings differ is refused at the key it replaces:
dramigrate would otherwise check and rewrite a pod other than the one Kubernetes runs. Written after the merge,
the mapping's own key wins in both readings.
"""

from __future__ import annotations

from typing import Any

MERGE_TAG = "tag:yaml.org,2002:merge"

Key = tuple[str, str]


def replaced_by_merge(mapping: Any) -> Any:
    """The first key node of a composed mapping (a PyYAML or ruamel MappingNode) that a merge key written after it
    sets again, in the mapping or in a mapping it merges in (at any depth); None when there is none."""
    keys: dict[int, set[Key]] = {}  # each mapping's keys once merged, each mapping read once
    replaced: list[Any] = []

    def keys_of(node: Any) -> set[Key]:
        if id(node) in keys:  # read, or being read (an alias of a mapping inside itself: refused elsewhere)
            return keys[id(node)]
        keys[id(node)] = written = set()
        before: dict[Key, Any] = {}  # the keys written so far, by their node
        for key, value in node.value:
            if key.id != "scalar":
                continue
            if key.tag != MERGE_TAG:
                before.setdefault((key.tag, key.value), key)
                continue
            sources = value.value if value.id == "sequence" else [value]
            for source in sources:
                for name in keys_of(source) if source.id == "mapping" else ():
                    if before.get(name) is not None and not replaced:
                        replaced.append(before[name])
                    written.add(name)
        written.update(before)
        return written

    keys_of(mapping)
    return replaced[0] if replaced else None


def message(key: Any) -> str:
    """Why the mapping holding key is refused."""
    return (
        f"key {key.value!r} is set again by a merge key `<<` written after it: Kubernetes (go-yaml) takes the merged "
        "value, YAML 1.1 readers the key's own; write the merge key first"
    )


def flatten_mapping(self: Any, node: Any) -> None:
    """PyYAML's SafeConstructor.flatten_mapping as YAML (and go-yaml, the merge key coming first) merges: the
    mapping's own keys win, then the merged mappings in their order, the first that holds a key giving it. PyYAML
    6.0.3+ tells merged keys apart by the identity of their text, not by the text: two `limits` of a sequence of
    merged mappings both stayed and the last won, so `<<: [{limits: {nvidia.com/gpu: 2}}, {limits: {cpu: 1}}]`
    (2 GPUs for Kubernetes) was read as no device request."""
    from yaml.constructor import ConstructorError
    from yaml.nodes import MappingNode, SequenceNode

    merged: list[tuple[Any, Any]] = []
    own: list[tuple[Any, Any]] = []
    for key_node, value_node in node.value:
        if key_node.tag != MERGE_TAG:
            if key_node.tag == "tag:yaml.org,2002:value":
                key_node.tag = "tag:yaml.org,2002:str"
            own.append((key_node, value_node))
            continue
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, MappingNode):
                what = "a mapping or list of mappings" if source is value_node else "a mapping"
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"expected {what} for merging, but found {source.id}",
                    source.start_mark,
                )
            self.flatten_mapping(source)
            merged.extend(source.value)
    if not merged:
        return
    taken: set[Any] = {_name(key_node) for key_node, _ in own}  # the mapping's own keys win
    kept = []
    for key_node, value_node in merged:
        if (name := _name(key_node)) not in taken:
            taken.add(name)
            kept.append((key_node, value_node))
    node.value = kept + own  # each merged key once: a mapping merged into another gives only what it holds


def _name(key_node: Any) -> Any:
    return (key_node.tag, key_node.value) if key_node.id == "scalar" else id(key_node)


def guard_pyyaml_merges() -> None:
    """PyYAML's safe constructor (SafeLoader, CSafeLoader and their subclasses) merges keys as flatten_mapping
    says. Idempotent."""
    from yaml.constructor import SafeConstructor

    SafeConstructor.flatten_mapping = flatten_mapping  # type: ignore[method-assign]


def add_referent(self: Any, cm: Any) -> None:
    """ruamel's CommentedMap.add_referent, which remembers each mapping that merges this one in (to update them when
    it changes), telling them apart by identity: ruamel's own `cm not in self._ref` compares the mappings whole, so a
    pod of 4,000 containers each merging one anchored container (`- {<<: *c, name: aN}`, 170 KB) took lint 50 s and
    twice that past 6,000."""
    if not any(ref is cm for ref in self._ref):
        self._ref.append(cm)


def guard_ruamel_merges() -> None:
    """ruamel's CommentedMap remembers the mappings that merge it by identity (add_referent). Idempotent."""
    from ruamel.yaml.comments import CommentedMap

    CommentedMap.add_referent = add_referent  # type: ignore[method-assign]
