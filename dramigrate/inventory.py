"""Load device inventories from ResourceSlice YAML (``kubectl get resourceslices -o yaml``).

Accepted input: a ``List`` (or ``ResourceSliceList``) of ResourceSlices, a
multi-document YAML stream of ResourceSlices, or a single ResourceSlice, of any
``resource.k8s.io`` version.  Device attributes and capacities are qualified the
way Kubernetes does it (``parseQualifiedName`` in
k8s.io/dynamic-resource-allocation ``cel/compile.go``): a bare name belongs to
the driver's domain (``spec.driver``), ``domain/name`` to ``domain``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

__all__ = ["Device", "VersionValue", "devices_from_objects", "load_inventory", "split_qualified_name"]

_LIST_KINDS = ("List", "ResourceSliceList")
_SCALAR_KINDS = ("string", "int", "bool", "version")
_LIST_VALUE_KINDS = ("strings", "ints", "bools", "versions")  # DRAListTypeAttributes


class VersionValue(str):
    """A string attribute value published as ``version:`` (a semantic version).

    It behaves like ``str``; the CEL evaluator exposes it as a Semver object.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"VersionValue({str(self)!r})"


@dataclass
class Device:
    """One device of a ResourceSlice with fully qualified attributes and capacity."""

    driver: str
    pool: str
    # its node (nodeName); for the nodes a node selector picks (the inventory has no node labels to tell which), a
    # name saying whose selector; None: every node (allNodes)
    node: str | None
    name: str
    attributes: dict[str, dict[str, object]] = field(default_factory=dict)
    capacity: dict[str, dict[str, str]] = field(default_factory=dict)
    # consumesCounters: (counter set, counter) -> the amount; and what its pool's sharedCounters hold of each, the
    # same map for every device of the pool (a counter set the pool lacks holds nothing)
    consumes: dict[tuple[str, str], Decimal] = field(default_factory=dict, compare=False, repr=False)
    counters: dict[tuple[str, str], Decimal] = field(default_factory=dict, compare=False, repr=False)

    def attribute(self, qualified_name: str) -> object | None:
        """Look up ``domain/name`` (or a bare name in the driver's domain)."""
        domain, name = split_qualified_name(qualified_name, self.driver)
        return self.attributes.get(domain, {}).get(name)


EVERY_NODE = "(every node)"  # how fit names the node of a device available to all (allNodes)


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``: split ``domain/name``; a bare name gets ``default_domain``."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def load_inventory(path: str | os.PathLike[str]) -> list[Device]:
    """Read all devices from a YAML file of ResourceSlices.

    Raises ValueError (naming the file) for unreadable YAML or objects that are
    not ResourceSlices.
    """
    from dramigrate.findings import InputError
    from dramigrate.limits import check_structure, read_regular
    from dramigrate.writer import text_of

    source = os.fspath(path)
    try:  # a regular file within the size limit, as every input file (a link to /dev/zero was read for ever)
        text = text_of(read_regular(source))  # UTF-8, or UTF-16/32 with a BOM (PowerShell's `>` writes UTF-16)
    except OSError as exc:
        raise ValueError(f"{source}: cannot read inventory: {exc.strerror or exc}") from exc
    except InputError as exc:
        raise ValueError(f"{source}: {exc.message}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{source}: the inventory is not UTF-8 text, nor UTF-16/32 with a byte-order mark (byte {exc.start + 1})"
        ) from exc
    try:
        check_structure(source, text)  # bounded before libyaml, which recurses in C
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # a fleet's inventory is megabytes
        documents = [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except InputError as exc:
        raise ValueError(f"{source}:{exc.line}: {exc.message}") from exc
    except yaml.YAMLError as exc:  # its own text names "<unicode string>", not the file
        from dramigrate.documents import yaml_problem

        what, line, column = yaml_problem(text, exc)
        raise ValueError(str(InputError(what, source, line, column))) from exc
    except RecursionError:  # the parser recurses per level; ResourceSlices nest about ten deep
        raise ValueError(f"{source}: nested too deeply to be a list of ResourceSlices") from None
    if not documents:
        raise ValueError(f"{source}: no ResourceSlice objects found (the file is empty)")
    if "*" in text and not _expands_within_text(documents, text):
        raise ValueError(
            f"{source}: its YAML aliases expand it to more than ten times the values it holds (kubectl writes "
            "none; an alias bomb?); not read"
        )
    try:
        return _devices(documents)
    except _Bad as exc:
        line = _line_at(text, exc.at)
        raise ValueError(f"{source}{f':{line}' if line else ''}: {exc}") from None


class _Bad(ValueError):
    """An inventory that is no list of ResourceSlices; at: where, as the keys and indexes from the document list
    down to the value at fault (its line is looked up only then)."""

    def __init__(self, message: str, at: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.at = at


def _line_at(text: str, at: tuple[Any, ...]) -> int:
    """The 1-based line of the value at `at` (the deepest of its keys the YAML holds: a missing key's mapping), by
    composing the text again: only for a message, so a good inventory is parsed once. 0 when it cannot be told."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=loader) if not _is_null(n)]
        node: Any = nodes[at[0]]
    except (yaml.YAMLError, IndexError, RecursionError):
        return 0
    line = node.start_mark.line + 1
    for key in at[1:]:
        if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
        elif isinstance(node, yaml.MappingNode):
            found = next((kv for kv in node.value if _names(kv[0], key)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]  # the key's line: `type: {bool: x}` or `type:` above
            continue
        else:
            break
        line = node.start_mark.line + 1
    return line


def _names(node: Any, key: Any) -> bool:
    import yaml

    return isinstance(node, yaml.ScalarNode) and node.value == str(key)


def _is_null(node: Any) -> bool:
    import yaml

    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _expands_within_text(documents: list[Any], text: str) -> bool:
    """An 80 KB inventory whose List held one slice of 1,000 devices 5,000 times over (`items: [*s, *s, ...]`) was
    five million devices, past a minute of fit; the aliases of an inventory may multiply what it holds tenfold at
    most (a hand-written one sharing attribute maps between devices), as kubectl writes none."""
    from dramigrate.limits import expands_within, nodes_upto

    return expands_within(documents, 10 * nodes_upto(text, 10_000_000) + 10_000)


def devices_from_objects(objects: Iterable[Any], source: str = "<input>") -> list[Device]:
    """Flatten already parsed YAML/JSON objects (slices or lists of slices) into devices."""
    try:
        return _devices(objects)
    except _Bad as exc:
        raise ValueError(f"{source}: {exc}") from None


def _devices(objects: Iterable[Any]) -> list[Device]:
    slices: list[tuple[Any, tuple[Any, ...], list[Device]]] = []  # (object, where it is, its devices)
    for index, obj in enumerate(objects):
        where, at = f"document {index + 1}", (index,)
        if not isinstance(obj, Mapping):
            raise _Bad(f"{where}: expected a Kubernetes object, got {type(obj).__name__}", at)
        if obj.get("kind") in _LIST_KINDS:
            items = obj.get("items") or []
            if not isinstance(items, list):
                raise _Bad(f"{where}: 'items' must be a list", (*at, "items"))
            for item_index, item in enumerate(items):
                item_at = (*at, "items", item_index)
                slices.append((item, item_at, _slice_devices(item, f"{where}, items[{item_index}]", item_at)))
        else:
            slices.append((obj, at, _slice_devices(obj, where, at)))
    return _allocatable(slices)


def _allocatable(slices: list[tuple[Any, tuple[Any, ...], list[Device]]]) -> list[Device]:
    """The devices the scheduler allocates from, as its allocator gathers pools: of each pool (driver and pool name)
    only the slices of its newest generation (a driver republishing its devices leaves the older slices a while),
    and a slice listed twice (two listings put together) once. Every slice's devices were counted, so one GPU in
    two generations of its pool made two, and a claim of two "fitted" a node of one. A pool whose newest slices name
    a device twice is one the scheduler allocates nothing from: bad input here."""
    newest: dict[tuple[str, str], int] = {}
    for obj, at, _ in slices:
        pool = obj["spec"]["pool"]
        generation = pool.get("generation", 0)
        if isinstance(generation, bool) or not isinstance(generation, int):
            raise _Bad(f"ResourceSlice {_name(obj)}: spec.pool.generation must be an integer", (*at, "spec", "pool"))
        key = (obj["spec"]["driver"], pool["name"])
        newest[key] = max(newest.get(key, generation), generation)
    out: list[Device] = []
    pools: dict[tuple[str, str], dict[tuple[str, str], Decimal]] = {}  # (driver, pool) -> its sharedCounters
    listed: set[tuple[str, str, str]] = set()
    owner: dict[tuple[str, str, str], tuple[str, int]] = {}  # (driver, pool, device) -> the slice that has it
    for obj, at, devices in slices:
        driver, pool = obj["spec"]["driver"], obj["spec"]["pool"]["name"]
        if obj["spec"]["pool"].get("generation", 0) != newest[(driver, pool)]:
            continue
        name = _name(obj)
        if (driver, pool, name) in listed and name != UNNAMED:
            continue
        listed.add((driver, pool, name))
        shared = pools.setdefault((driver, pool), {})
        where = f"ResourceSlice {name}"
        shared.update(_counters(obj["spec"].get("sharedCounters"), "name", where, (*at, "spec", "sharedCounters")))
        for d in devices:
            d.counters = shared
            if (driver, pool, d.name) in owner:
                first, slice_id = owner[(driver, pool, d.name)]
                raise _Bad(
                    f"ResourceSlice {name}: device {d.name} of pool {pool} (driver {driver}) is also in "
                    f"{'this slice' if slice_id == id(obj) else 'ResourceSlice ' + first} of the pool's newest "
                    "generation: the scheduler allocates no device of such a pool",
                    (*at, "spec", "devices"),
                )
            owner[(driver, pool, d.name)] = (name, id(obj))
        out.extend(devices)
    return out


UNNAMED = "<unnamed>"


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or UNNAMED) if isinstance(meta, Mapping) else UNNAMED


def _slice_devices(obj: Any, where: str, at: tuple[Any, ...]) -> list[Device]:
    if not isinstance(obj, Mapping):
        raise _Bad(f"{where}: expected a ResourceSlice, got {type(obj).__name__}", at)
    kind = obj.get("kind")
    api_version = str(obj.get("apiVersion", ""))
    if kind != "ResourceSlice" or not api_version.startswith("resource.k8s.io/"):
        found = f"{api_version or '<no apiVersion>'} {kind or '<no kind>'}"
        raise _Bad(f"{where}: not a resource.k8s.io ResourceSlice (found {found})", at)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, Mapping):  # `metadata: [1]` was an internal error (AttributeError)
        raise _Bad(f"{where}: metadata must be a mapping, got {type(metadata).__name__}", (*at, "metadata"))
    name = metadata.get("name") or UNNAMED
    where = f"{where} (ResourceSlice {name})"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise _Bad(f"{where}: missing spec", (*at, "spec"))
    at = (*at, "spec")
    driver = spec.get("driver")
    if not isinstance(driver, str) or not driver:
        raise _Bad(f"{where}: spec.driver is missing", (*at, "driver"))
    pool = spec.get("pool") or {}
    if not isinstance(pool, Mapping) or not isinstance(pool.get("name"), str):
        raise _Bad(f"{where}: spec.pool.name is missing", (*at, "pool", "name"))
    per_device = spec.get("perDeviceNodeSelection") is True
    node = None if per_device else _node(spec, f"ResourceSlice {name}", f"{where}: spec", at)
    raw_devices = spec.get("devices") or []
    if not isinstance(raw_devices, list):
        raise _Bad(f"{where}: spec.devices must be a list", (*at, "devices"))

    devices = []
    for index, raw in enumerate(raw_devices):
        device_at = (*at, "devices", index)
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            raise _Bad(f"{where}: spec.devices[{index}]: device without a name", device_at)
        basic = isinstance(raw.get("basic"), Mapping)  # v1beta1
        body, body_at = (raw["basic"], (*device_at, "basic")) if basic else (raw, device_at)
        device_where = f"{where}: device {raw['name']}"
        devices.append(
            Device(
                driver=driver,
                pool=pool["name"],
                node=_node(raw, f"device {raw['name']} of ResourceSlice {name}", device_where, device_at)
                if per_device
                else node,
                name=raw["name"],
                attributes=_attributes(body.get("attributes") or {}, driver, device_where, (*body_at, "attributes")),
                capacity=_capacity(body.get("capacity") or {}, driver, device_where, (*body_at, "capacity")),
                consumes=_counters(
                    body.get("consumesCounters"), "counterSet", device_where, (*body_at, "consumesCounters")
                ),
            )
        )
    return devices


def _counters(raw: Any, key: str, where: str, at: tuple[Any, ...]) -> dict[tuple[str, str], Decimal]:
    """A device's consumesCounters (key counterSet) or a slice's sharedCounters (key name): (set, counter) -> value."""
    from dramigrate.quantity import parse_quantity

    out: dict[tuple[str, str], Decimal] = {}
    for i, entry in enumerate(raw if isinstance(raw, list) else []):
        counters = entry.get("counters") if isinstance(entry, Mapping) else None
        if not isinstance(entry, Mapping) or not isinstance(entry.get(key), str) or not isinstance(counters, Mapping):
            raise _Bad(f"{where}: {at[-1]}[{i}] needs `{key}` and `counters`", (*at, i))
        for name, value in counters.items():
            quantity = value.get("value") if isinstance(value, Mapping) else None
            try:
                out[(entry[key], str(name))] = parse_quantity(str(quantity))
            except (ValueError, ArithmeticError):
                raise _Bad(f"{where}: counter {name} needs a quantity `value`, got {value!r}", (*at, i)) from None
    return out


def _node(obj: Mapping[str, Any], whose: str, where: str, at: tuple[Any, ...]) -> str | None:
    """Where a slice's devices (or, under perDeviceNodeSelection, one device) can be used: the name of its node, None
    for every node (allNodes), else the nodes its nodeSelector picks, named by whose selector it is. A device for
    every node was taken for one of a node named "None", so a node's GPU and a network-attached NIC never fitted
    together (and two devices of no node fitted together as if on one)."""
    node = obj.get("nodeName")
    if node is not None and not isinstance(node, str):
        raise _Bad(f"{where}: nodeName must be a string", (*at, "nodeName"))
    if node:
        return node
    if obj.get("allNodes") is True:
        return None
    return f"(the nodes the nodeSelector of {whose} picks)"


def _attributes(raw: Any, driver: str, where: str, at: tuple[Any, ...]) -> dict[str, dict[str, object]]:
    if not isinstance(raw, Mapping):
        raise _Bad(f"{where}: attributes must be a mapping", at)
    result: dict[str, dict[str, object]] = {}
    for qualified, value in raw.items():
        domain, name = split_qualified_name(str(qualified), driver)
        result.setdefault(domain, {})[name] = _attribute_value(
            value, f"{where}: attribute {qualified}", (*at, qualified)
        )
    return result


def _attribute_value(value: Any, where: str, at: tuple[Any, ...]) -> object:
    if not isinstance(value, Mapping):
        raise _Bad(f"{where}: expected one of {', '.join(_SCALAR_KINDS)}, got {value!r}", at)
    kinds = [k for k in value if k in _SCALAR_KINDS + _LIST_VALUE_KINDS]
    if len(kinds) != 1 or len(value) != 1:
        raise _Bad(f"{where}: expected exactly one of {', '.join(_SCALAR_KINDS)}, got {dict(value)!r}", at)
    kind = kinds[0]
    if kind in _LIST_VALUE_KINDS:
        items = value[kind]
        if not isinstance(items, list):
            raise _Bad(f"{where}: {kind} must be a list", (*at, kind))
        return [_scalar(kind[:-1], item, where, (*at, kind, i)) for i, item in enumerate(items)]
    return _scalar(kind, value[kind], where, (*at, kind))


def _scalar(kind: str, value: Any, where: str, at: tuple[Any, ...]) -> object:
    if kind == "bool":
        if not isinstance(value, bool):
            raise _Bad(f"{where}: bool value must be true or false, got {value!r}", at)
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(f"{where}: int value must be an integer, got {value!r}", at)
        return value
    if isinstance(value, (bool, float, datetime.date)):
        raise _Bad(f"{where}: {kind} value {value!r} was not read as a string; quote it in the YAML", at)
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        raise _Bad(f"{where}: {kind} value must be a string, got {value!r}", at)
    return VersionValue(value) if kind == "version" else value


def _capacity(raw: Any, driver: str, where: str, at: tuple[Any, ...]) -> dict[str, dict[str, str]]:
    if not isinstance(raw, Mapping):
        raise _Bad(f"{where}: capacity must be a mapping", at)
    result: dict[str, dict[str, str]] = {}
    for qualified, value in raw.items():
        domain, name = split_qualified_name(str(qualified), driver)
        quantity = value.get("value") if isinstance(value, Mapping) else value  # v1alpha3: bare quantity
        if isinstance(quantity, int) and not isinstance(quantity, bool):
            quantity = str(quantity)
        if not isinstance(quantity, str) or not quantity:
            raise _Bad(f"{where}: capacity {qualified} needs a quantity 'value', got {value!r}", (*at, qualified))
        result.setdefault(domain, {})[name] = quantity
    return result
