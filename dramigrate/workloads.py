"""Where pod specs and containers live inside an object, following the paths of rules/workloads.yaml."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dramigrate.rules import PodSpecLocation, WorkloadKind, scalar_text

_SEGMENT = re.compile(r"^([^\[\]]*)(\[\*\])?$")


@dataclass
class PodSpecRef:
    owner: Any  # the mapping the location's `at` path reached
    spec: Any  # the pod spec mapping
    path: str  # concrete path of the pod spec, e.g. spec.workerGroupSpecs[0].template.spec
    name_suffix: str
    location: PodSpecLocation


def pod_metadata(obj: Any, spec_path: str) -> Any:
    """The metadata of the pod (template) whose spec is at spec_path: beside the spec."""
    node = obj
    for part in spec_path.split(".")[:-1]:
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if m is None or not isinstance(node, dict):
            return None
        node = node.get(m.group(1))
        for index in re.findall(r"\[(\d+)\]", m.group(2)):
            if not isinstance(node, list) or int(index) >= len(node):
                return None
            node = node[int(index)]
    return node.get("metadata") if isinstance(node, dict) else None


@dataclass
class ContainerRef:
    container: Any  # the container mapping
    name: str
    path: str  # e.g. spec.template.spec.containers[0]
    init: bool  # listed in initContainers
    sidecar: bool  # a restartable init container (restartPolicy: Always)
    parent: Any  # the list or mapping that holds the container
    key: Any  # index in the list, or key in the mapping


def _walk(node: Any, segments: list[str], path: str, last_key: str) -> Iterator[tuple[Any, str, str]]:
    """Yield (node, concrete path, key matched by the last wildcard) for every match of the path."""
    if not segments:
        yield node, path, last_key
        return
    seg, rest = segments[0], segments[1:]
    if seg == "*":
        if isinstance(node, dict):
            for k, v in node.items():
                yield from _walk(v, rest, f"{path}.{k}" if path else str(k), str(k))
        return
    m = _SEGMENT.match(seg)
    if not m or not isinstance(node, dict) or m.group(1) not in node:
        return
    child = node[m.group(1)]
    child_path = f"{path}.{m.group(1)}" if path else m.group(1)
    if m.group(2):
        if isinstance(child, list):
            for i, item in enumerate(child):
                yield from _walk(item, rest, f"{child_path}[{i}]", str(i))
    else:
        yield from _walk(child, rest, child_path, last_key)


def resolve(node: Any, path: str) -> Iterator[tuple[Any, str, str]]:
    yield from _walk(node, [s for s in path.split(".") if s], "", "")


def pod_specs(obj: Any, kind: WorkloadKind) -> Iterator[PodSpecRef]:
    for loc in kind.pod_specs:
        for owner, owner_path, key in resolve(obj, loc.at):
            if not isinstance(owner, dict):
                continue
            for spec, spec_path, _ in resolve(owner, loc.spec):
                if isinstance(spec, dict):
                    full = ".".join(p for p in (owner_path, spec_path) if p)
                    yield PodSpecRef(owner, spec, full, _suffix(loc.name, owner, key), loc)


def _suffix(template: str, owner: Any, key: str) -> str:
    if template == "{key}":
        return key
    if template.startswith("{") and template.endswith("}"):
        value = owner.get(template[1:-1]) if isinstance(owner, dict) else None
        return str(value) if value is not None else key
    return template


def _field(spec: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path below the pod spec (Argo's `containerSet.containers`), or None."""
    node: Any = spec
    for segment in dotted.split("."):
        node = node.get(segment) if isinstance(node, dict) else None
    return node


def containers(ref: PodSpecRef, kind: WorkloadKind) -> Iterator[ContainerRef]:
    spec = ref.spec
    for list_key in kind.container_lists:
        items = _field(spec, list_key)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            if isinstance(c, dict):
                init = list_key == "initContainers"
                yield ContainerRef(
                    container=c,
                    name=str(c.get("name", f"{list_key}[{i}]")),
                    path=f"{ref.path}.{list_key}[{i}]" if ref.path else f"{list_key}[{i}]",
                    init=init,
                    sidecar=init and scalar_text(c.get("restartPolicy")) == "Always",
                    parent=items,
                    key=i,
                )
    for key in kind.single_containers:
        c = spec.get(key)
        if isinstance(c, dict):
            yield ContainerRef(
                c, str(c.get("name", key)), f"{ref.path}.{key}" if ref.path else key, False, False, spec, key
            )
