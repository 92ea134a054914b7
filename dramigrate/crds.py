"""Installed CRDs (`kubectl get crd -o yaml`): does a kind's schema keep the claim fields dramigrate writes?

A structural CRD schema prunes unknown fields when an object is written. A CRD generated before Kubernetes 1.31's
API has no `resourceClaims[].resourceClaimTemplateName` (it nests the name under `source`) and older ones no
`resourceClaims` or `resources.claims` at all: the migrated object is stored without its claims, after the device
request is gone, and the pods run without devices. `--crds FILE` checks every pod template location of a kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.rules import WorkloadKind

PRESERVE = "x-kubernetes-preserve-unknown-fields"
# What dramigrate writes into a pod spec, and into each container of it.
POD_FIELDS = (("resourceClaims", "[*]", "name"), ("resourceClaims", "[*]", "resourceClaimTemplateName"))
CONTAINER_FIELDS = (("resources", "claims", "[*]", "name"), ("resources", "claims", "[*]", "request"))


@dataclass
class CrdIndex:
    """The schemas of the CRDs in one file: (group, kind) -> version -> openAPIV3Schema."""

    path: str
    schemas: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    storage: dict[tuple[str, str], str] = field(default_factory=dict)

    def schema(self, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        versions = self.schemas.get((group, kind))
        if versions is None:
            return None
        return versions.get(version) or versions.get(self.storage.get((group, kind), ""))


def load_crds(path: Path) -> CrdIndex:
    """Every CustomResourceDefinition in a file: a List (kubectl get crd -o yaml) or YAML documents. Read once per
    version of the file."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read the CRD file: {exc.strerror}", str(path)) from exc
    return _load(path, stat.st_mtime_ns, stat.st_size)


@cache
def _load(path: Path, mtime_ns: int, size: int) -> CrdIndex:
    from dramigrate.limits import read_regular

    try:
        text = read_regular(str(path)).decode("utf-8")  # a FIFO or device is not read: it would block or never end
    except OSError as exc:
        raise InputError(f"cannot read the CRD file: {exc.strerror}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"the CRD file is not UTF-8: {exc.reason}", str(path)) from exc
    try:
        docs = plain_documents(text)
    except yaml.YAMLError as exc:
        from dramigrate.documents import yaml_problem

        what, line, column = yaml_problem(text, exc)
        raise InputError(f"the CRD file: {what}", str(path), line, column) from exc
    index = CrdIndex(str(path))
    stack = [d for d in docs if isinstance(d, dict)]
    while stack:
        obj = stack.pop()
        if obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            stack.extend(i for i in obj["items"] if isinstance(i, dict))
            continue
        if obj.get("kind") != "CustomResourceDefinition":
            continue
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        key = (str(spec.get("group", "")), str(names.get("kind", "")))
        versions: dict[str, Any] = {}
        for v in spec.get("versions") or []:
            if not isinstance(v, dict):
                continue
            schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v.get("schema"), dict) else None
            versions[str(v.get("name"))] = schema if isinstance(schema, dict) else {PRESERVE: True}
            if v.get("storage"):
                index.storage[key] = str(v.get("name"))
        index.schemas[key] = versions
    if not index.schemas:
        raise InputError("no CustomResourceDefinition in the CRD file (expected `kubectl get crd -o yaml`)", str(path))
    return index


_BOOLS = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
}  # YAML 1.1's booleans and nulls, as PyYAML's safe loader reads plain scalars
_YAML_TAG = "tag:yaml.org,2002:"
_KNOWN_TAGS = {_YAML_TAG + t for t in ("str", "bool", "null", "int", "float", "map", "seq", "timestamp", "binary")}
_PENDING = object()  # a mapping waiting for its next key
_MERGE = object()  # a mapping whose next value is a merge key's (`<<: *base`)


def plain_documents(text: str) -> list[Any]:
    """Every document of text as dicts, lists, strings, booleans and None, built from libyaml's events: what
    PyYAML's safe loader gives for what the CRD index reads (anchors, aliases and merge keys included; numbers and
    timestamps stay text, and keys are their text, as the index reads no number). Its node graph cost 2 s of CPU
    for a 5 MiB CRD file; the events take a tenth of that. YAMLError, with the mark of what is wrong, where the safe
    loader would raise."""
    from yaml import composer, constructor, events

    docs: list[Any] = []
    stack: list[Any] = []  # the containers being built, innermost last
    keys: list[Any] = []  # for each container: a mapping's key waiting for its value (_PENDING: none), None: a list

    def merge(into: dict[str, Any], value: Any, mark: Any) -> None:
        """`<<: *base` or `<<: [*a, *b]`: the merged maps' keys, unless the mapping has them (the first map wins)."""
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, dict):
                raise constructor.ConstructorError(
                    "while constructing a mapping", None, "expected a mapping or list of mappings for merging", mark
                )
            for k, v in part.items():
                into.setdefault(k, v)

    def add(value: Any, mark: Any, key_text: str | None = None, building: bool = False, merging: bool = False) -> None:
        """Put value into the container in hand. key_text: a scalar's text (a key is its text); building: value
        is a container whose content comes next; merging: value is a plain `<<` (a merge key, as a key)."""
        if not stack:
            docs.append(value)
            return
        top, key = stack[-1], keys[-1]
        if key is None:
            top.append(value)
        elif key is _PENDING:
            if key_text is None:
                raise constructor.ConstructorError("while constructing a mapping", None, "found unhashable key", mark)
            keys[-1] = _MERGE if merging else key_text
        elif key is _MERGE:
            if not building:  # a container built in place is merged when it ends
                merge(top, value, mark)
                keys[-1] = _PENDING
        else:
            top[key] = value
            keys[-1] = _PENDING

    anchors: dict[str, Any] = {}
    for ev in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        kind = type(ev)
        tag = getattr(ev, "tag", None)
        if tag and tag != "!" and tag not in _KNOWN_TAGS:
            raise constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {tag!r}", ev.start_mark
            )
        if kind is events.ScalarEvent:
            value: Any = ev.value
            if ev.implicit[0] or tag in (_YAML_TAG + "bool", _YAML_TAG + "null"):
                value = _BOOLS.get(value, value)
            if ev.anchor:
                anchors[ev.anchor] = value
            add(value, ev.start_mark, ev.value, merging=ev.implicit[0] and ev.value == "<<")
        elif kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            new: Any = {} if kind is events.MappingStartEvent else []
            if ev.anchor:
                anchors[ev.anchor] = new
            add(new, ev.start_mark, building=True)
            stack.append(new)
            keys.append(_PENDING if kind is events.MappingStartEvent else None)
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            done = stack.pop()
            keys.pop()
            if keys and keys[-1] is _MERGE:
                add(done, ev.start_mark)
        elif kind is events.AliasEvent:
            if ev.anchor not in anchors:
                raise composer.ComposerError(None, None, f"found undefined alias {ev.anchor!r}", ev.start_mark)
            value = anchors[ev.anchor]
            add(value, ev.start_mark, None if isinstance(value, (dict, list)) else str(value))
        elif kind is events.DocumentStartEvent:
            anchors.clear()
    return docs


def _step(node: dict[str, Any] | None, token: str) -> dict[str, Any] | None:
    """The schema of a child; {PRESERVE: True} where the parent keeps unknown fields; None where it prunes."""
    if node is None or node.get(PRESERVE) is True and token not in (node.get("properties") or {}):
        return node
    if token == "[*]":
        items = node.get("items")
        return items if isinstance(items, dict) else None
    if token == "*":
        extra = node.get("additionalProperties")
        if extra is True:
            return {PRESERVE: True}
        return extra if isinstance(extra, dict) else None
    child = (node.get("properties") or {}).get(token)
    return child if isinstance(child, dict) else None


def split_path(path: str) -> list[str]:
    """A workloads.yaml path as schema steps: `spec.groups[*]` -> spec, groups, [*]."""
    tokens: list[str] = []
    for seg in (s for s in path.split(".") if s):
        if seg.endswith("[*]"):
            tokens += [seg[:-3], "[*]"]
        else:
            tokens.append(seg)
    return tokens


def _walk(node: dict[str, Any] | None, tokens: list[str]) -> dict[str, Any] | None:
    for token in tokens:
        node = _step(node, token)
        if node is None:
            return None
    return node


def pruned_fields(schema: dict[str, Any], kind: WorkloadKind) -> list[str]:
    """The claim fields (as paths in the object) that the schema would prune; empty when it keeps them all."""
    missing: list[str] = []
    for loc in kind.pod_specs:
        spec_tokens = split_path(loc.at) + split_path(loc.spec)
        where = ".".join(spec_tokens).replace(".[*]", "[*]") or "(root)"
        pod = _walk(schema, spec_tokens)
        if pod is None:
            missing.append(f"{where} (no pod spec in the schema)")
            continue
        checks = [list(f) for f in POD_FIELDS]
        # A container list or field the schema does not have cannot hold a device request to migrate.
        holders = [[lst, "[*]"] for lst in kind.container_lists] + [[one] for one in kind.single_containers]
        checks += [[*h, *f] for h in holders if _walk(pod, h) is not None for f in CONTAINER_FIELDS]
        for tokens in checks:
            if _walk(pod, tokens) is None:
                missing.append(".".join([where, *tokens]).replace(".[*]", "[*]"))
    return list(dict.fromkeys(missing))
