"""Fit: would each claim the migration creates be allocated on some node of a ResourceSlice inventory?

For every request (and every firstAvailable alternative), the device class's selectors and the request's
own are evaluated with real CEL on every device; then, node by node, the counts and the matchAttribute
constraints are solved on an empty node (distinct devices, every constrained group sharing one value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from dramigrate.cel import CelError, compile_selector
from dramigrate.classes import class_selectors
from dramigrate.inventory import EVERY_NODE, Device
from dramigrate.rules import DeviceClassInfo


@dataclass
class RequestFit:
    name: str
    device_class: str
    count: int
    matches: dict[str, list[str]] = field(default_factory=dict)  # node -> device names


@dataclass
class ClaimFit:
    template: str
    namespace: str
    requests: list[RequestFit] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # nodes where the whole claim fits
    errors: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return bool(self.nodes)


def _options(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of one request, each {name, deviceClassName, selectors, count}, most preferred first."""
    if "firstAvailable" in request:
        return [{**sub, "name": f"{request['name']}/{sub['name']}"} for sub in request["firstAvailable"]]
    exact = request.get("exactly") or request
    return [{**exact, "name": request["name"]}]


def _matching(
    option: dict[str, Any], classes: dict[str, DeviceClassInfo], devices: list[Device], errors: list[str]
) -> list[Device]:
    cls = classes.get(option["deviceClassName"])
    if cls is None:
        errors.append(f"device class {option['deviceClassName']} is not known to the rule packs; no device matches")
        return []
    exprs = list(class_selectors(cls)) + [s["cel"]["expression"] for s in option.get("selectors") or []]
    compiled = [compile_selector(e) for e in exprs]
    out = []
    for d in devices:
        try:
            if all(c.matches(d.driver, d.attributes, d.capacity) for c in compiled):
                out.append(d)
        except CelError as exc:
            msg = f"{_node(d)}/{d.name}: {exc}"
            if msg not in errors:
                errors.append(msg)
    return out


def _assign(slots: list[tuple[str, set[int]]]) -> bool:
    """Every slot gets a distinct device from its candidates (Kuhn's augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for d in slots[i][1]:
            if d in seen:
                continue
            seen.add(d)
            if d not in owner or augment(owner[d], seen):
                owner[d] = i
                return True
        return False

    return all(augment(i, set()) for i in range(len(slots)))


def _fits_node(requests: list[tuple[str, int, list[Device]]], constraints: list[dict[str, Any]]) -> bool:
    index = {id(d): i for i, d in enumerate(d for _, _, ds in requests for d in ds)}
    device_of = {index[id(d)]: d for _, _, ds in requests for d in ds}
    counted = any(d.consumes for d in device_of.values())  # partitionable devices: the counters' search below
    names = [n for n, _, _ in requests]
    groups = []
    for c in constraints:  # a request's name covers its subrequests; a subrequest's name only itself
        members = [i for i, n in enumerate(names) if not c.get("requests") or {n, n.split("/")[0]} & set(c["requests"])]
        groups.append((c["matchAttribute"], members))

    def candidates(choice: dict[int, Any]) -> list[tuple[str, set[int]]]:
        slots = []
        for i, (n, count, ds) in enumerate(requests):
            allowed = {
                index[id(d)]
                for d in ds
                if all(
                    d.attribute(attr) == choice[g]
                    for g, (attr, members) in enumerate(groups)
                    if g in choice and i in members
                )
            }
            slots.extend((n, allowed) for _ in range(count))
        return slots

    def search(g: int, choice: dict[int, Any]) -> bool:
        slots = candidates(choice)
        if not _assign(slots):
            return False
        if g == len(groups):
            return not counted or _within_counters(slots, device_of)
        attr, members = groups[g]
        if not members:  # the constraint names only subrequests this combination did not choose
            return search(g + 1, choice)
        values = None
        for i in members:
            vals = {d.attribute(attr) for d in requests[i][2]} - {None}
            values = vals if values is None else values & vals
        return any(search(g + 1, {**choice, g: v}) for v in sorted(values or (), key=str))

    return search(0, {})


COUNTER_STEPS = 20_000  # devices tried in _within_counters before it answers as the matching alone did


class _Undecided(Exception):
    pass


def _within_counters(slots: list[tuple[str, set[int]]], device_of: dict[int, Device]) -> bool:
    """Whether every slot gets a distinct device of its candidates with the devices' consumesCounters, added up per
    counter of their pool, within what the pool's sharedCounters hold (partitionable devices: a GPU published whole
    and as its partitions, each consuming the same memory). Counters were not read: two devices that share one
    GPU's counters fitted a claim of two. Past COUNTER_STEPS tries the matching's answer stands (a fit)."""
    order = sorted(range(len(slots)), key=lambda s: len(slots[s][1]))
    left: dict[tuple[int, tuple[str, str]], Decimal] = {}  # (the pool's counters, (set, counter)) -> what is left
    taken: set[int] = set()
    steps = 0

    def room(d: Device, key: tuple[str, str]) -> Decimal:
        return left.get((id(d.counters), key), d.counters.get(key, Decimal(0)))

    def take(d: Device, sign: int) -> None:
        for key, amount in d.consumes.items():
            left[(id(d.counters), key)] = room(d, key) - sign * amount

    def place(n: int) -> bool:
        nonlocal steps
        if n == len(order):
            return True
        for i in sorted(slots[order[n]][1] - taken):
            steps += 1
            if steps > COUNTER_STEPS:
                raise _Undecided
            d = device_of[i]
            if any(amount > room(d, key) for key, amount in d.consumes.items()):
                continue
            taken.add(i)
            take(d, 1)
            if place(n + 1):
                return True
            taken.discard(i)
            take(d, -1)
        return False

    try:
        return place(0)
    except _Undecided:
        return True


def _by_node(devices: list[Device]) -> dict[str, list[Device]]:
    """devices by node, each node's in their order: a node's devices are looked up once per node, not searched for
    among every device (a fleet of 5,000 nodes took 40 s). A device for every node (allNodes) is under EVERY_NODE."""
    out: dict[str, list[Device]] = {}
    for d in devices:
        out.setdefault(_node(d), []).append(d)
    return out


def _node(d: Device) -> str:
    return EVERY_NODE if d.node is None else d.node


def fit_claim(template: dict[str, Any], classes: dict[str, DeviceClassInfo], devices: list[Device]) -> ClaimFit:
    meta = template.get("metadata", {})
    result = ClaimFit(str(meta.get("name", "")), str(meta.get("namespace", "")))
    spec = template["spec"]["spec"]["devices"]
    per_request = []
    for request in spec.get("requests", []):
        opts = []
        for option in _options(request):
            matched = _matching(option, classes, devices, result.errors)
            rf = RequestFit(option["name"], option["deviceClassName"], int(option.get("count", 1)))
            for d in matched:
                rf.matches.setdefault(_node(d), []).append(d.name)
            result.requests.append(rf)
            opts.append((option["name"], rf.count, _by_node(matched)))
        per_request.append(opts)
    # the nodes: those of the devices, each with the devices every node has; EVERY_NODE alone when no device has one
    nodes = sorted({d.node for d in devices if d.node is not None}) or ([EVERY_NODE] if devices else [])
    constraints = spec.get("constraints") or []
    for node in nodes:
        options = [_undominated([(n, c, _on(ds, node)) for n, c, ds in opts], constraints) for opts in per_request]
        if _fits_some(options, constraints):
            result.nodes.append(node)
    return result


def _on(by_node: dict[str, list[Device]], node: str) -> list[Device]:
    """The devices of by_node a claim on node can take: its own and those of every node."""
    own, everywhere = by_node.get(node, []), by_node.get(EVERY_NODE, []) if node != EVERY_NODE else []
    return own + everywhere if everywhere else own


def _fits_some(options: list[list[tuple[str, int, list[Device]]]], constraints: list[dict[str, Any]]) -> bool:
    """Whether one alternative of each request fits the node together: chosen request by request, a choice that
    fails not extended (a request more only adds devices and constraints). Every combination was solved whole:
    `align-nics: preferred` on 8 GPUs and 32 NICs is 12 requests of two alternatives, 4,096 solves a node."""
    chosen: list[tuple[str, int, list[Device]]] = []

    def extend(i: int) -> bool:
        if i == len(options):
            return True
        for option in options[i]:
            chosen.append(option)
            if _fits_node(chosen, constraints) and extend(i + 1):
                return True
            chosen.pop()
        return False

    return extend(0)


def _undominated(
    options: list[tuple[str, int, list[Device]]], constraints: list[dict[str, Any]]
) -> list[tuple[str, int, list[Device]]]:
    """A request's alternatives on a node, less each one another alternative is as good as: as many devices or
    fewer, of every device it may take or more, under none of the constraints it is not under (`unaligned` beside
    `aligned`, `fallback` beside a node label's `choice-1`): whatever fits with it fits with that one. Of two as
    good as each other, the first. In preference order."""
    shapes = [
        (
            count,
            {id(d) for d in devices},
            {
                i
                for i, c in enumerate(constraints)
                if not c.get("requests") or {name, name.split("/")[0]} & set(c["requests"])
            },
        )
        for name, count, devices in options
    ]

    def as_good(j: int, i: int) -> bool:  # j does whatever i does
        (cj, dj, uj), (ci, di, ui) = shapes[j], shapes[i]
        return cj <= ci and di <= dj and uj <= ui

    return [
        o
        for i, o in enumerate(options)
        if not any(j != i and as_good(j, i) and (j < i or not as_good(i, j)) for j in range(len(options)))
    ]
