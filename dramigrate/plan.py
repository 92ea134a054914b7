"""Plan: for one pod spec, the claim, its requests, the container claim entries and the other edits.

Device totals stay what the device plugin gave the pod: app containers and restartable (sidecar) init
containers add up; a plain init container runs before them and reuses their devices, so the pod gets
the larger of its biggest init request and the app sum.
"""

from __future__ import annotations

import itertools
import re
import string
from dataclasses import dataclass, field, replace
from typing import Any

from dramigrate.detect import DeviceUse, PodAnalysis
from dramigrate.ray import ray_start_params
from dramigrate.validate import MAX_DEVICES_PER_CLAIM
from dramigrate.workloads import containers, resolve

DNS_LABEL_MAX = 63


@dataclass
class RequestPlan:
    name: str
    device_class: str
    count: int
    selectors: tuple[str, ...] = ()
    config: tuple[dict[str, Any], ...] = ()
    # firstAvailable: (subrequest name, selectors), most preferred first; empty for a plain request
    alternatives: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    alternative_classes: list[str] = field(default_factory=list)  # per alternative, with --classes


@dataclass
class PodPlan:
    analysis: PodAnalysis
    claim_name: str = ""
    requests: list[RequestPlan] = field(default_factory=list)
    # container id -> claim entries to add ({name} or {name, request})
    container_claims: dict[int, list[dict[str, str]]] = field(default_factory=dict)
    removals: list[DeviceUse] = field(default_factory=list)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    ray_params: dict[str, str] = field(default_factory=dict)  # rayStartParams entries KubeRay derived from limits
    constraints: list[dict[str, Any]] = field(default_factory=list)
    primary: bool = True  # False for a pod's further claims (split_claims): pod-wide edits are made once

    @property
    def needs_claim(self) -> bool:
        return bool(self.requests)


def dns_label(text: str, limit: int = DNS_LABEL_MAX) -> str:
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    label = re.sub(r"-{2,}", "-", label)[:limit].strip("-")
    return label or "x"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"-{n}"
        candidate = name[: DNS_LABEL_MAX - len(suffix)] + suffix
        n += 1
    taken.add(candidate)
    return candidate


def plan_pod(pa: PodAnalysis) -> PodPlan:
    plan = PodPlan(pa)
    plan.removals = list(pa.uses)
    uses = [u for u in pa.uses if u.count > 0]
    key = lambda u: (u.match.rule.device_class, u.match.selectors)  # noqa: E731  same device set
    app = [u for u in uses if not u.container.init or u.container.sidecar]
    init = [u for u in uses if u.container.init and not u.container.sidecar]

    # One request per (app container, device set); names say the device, and the container when several share it.
    taken: set[str] = set()
    per_set_containers: dict[Any, set[str]] = {}
    per_container_sets: dict[tuple[str, str], set[str]] = {}
    for u in app:
        per_set_containers.setdefault(u.match.rule.request, set()).add(u.container.path)
        per_container_sets.setdefault((u.container.path, u.match.rule.request), set()).add(u.resource)
    app_requests: dict[Any, list[tuple[RequestPlan, DeviceUse]]] = {}
    paired = _pair_topology(plan, app, init, taken, app_requests, key)
    for u in app:
        if id(u) in paired:
            continue
        base = u.match.rule.request
        if len(per_container_sets[(u.container.path, base)]) > 1:  # mig-1g.5gb and mig-3g.20gb side by side
            base = u.resource.split("/", 1)[-1]
        if len(per_set_containers[u.match.rule.request]) > 1:
            base = f"{u.container.name}-{base}"
        req = RequestPlan(
            _unique(dns_label(base), taken), u.match.rule.device_class, u.count, u.match.selectors, u.match.rule.config
        )
        plan.requests.append(req)
        app_requests.setdefault(key(u), []).append((req, u))

    # Plain init containers reuse the app containers' devices, and those of sidecars that start after them
    # (a sidecar started earlier is still running); a larger init request adds the difference. Each gets exactly
    # its count (B8): a request that would give it more is split where its share ends.
    extra: dict[Any, RequestPlan] = {}
    pools: list[tuple[DeviceUse, list[RequestPlan]]] = []
    for u in init:
        at = u.container.key
        pool = [r for r, a in app_requests.get(key(u), []) if not (a.container.sidecar and a.container.key < at)]
        have = sum(r.count for r in pool)
        if u.count > have:
            req = extra.get(key(u))
            if req is None:
                req = RequestPlan(
                    _unique(dns_label(f"{u.match.rule.request}-init"), taken),
                    u.match.rule.device_class,
                    0,
                    u.match.selectors,
                    u.match.rule.config,
                )
                extra[key(u)] = req
                plan.requests.append(req)
            req.count = max(req.count, u.count - have)
        pools.append((u, pool))
    sequences = [(u, pool + ([extra[key(u)]] if key(u) in extra else [])) for u, pool in pools]
    pieces = _split_shares(plan, app_requests, sequences, taken, pa)
    init_refs: dict[int, list[str]] = {}
    for u, sequence in sequences:
        refs, covered = [], 0
        for piece in (p for r in sequence for p in pieces.get(id(r), [r])):
            if covered >= u.count:
                break
            refs.append(piece.name)
            covered += piece.count
        init_refs.setdefault(id(u.container.container), []).extend(refs)

    if not plan.requests:
        return _finish(plan, pa)
    _apply_selection(plan, pa)
    taken_claims = {str(c.get("name")) for c in pa.ref.spec.get("resourceClaims") or [] if isinstance(c, dict)}
    bases = list(dict.fromkeys(u.match.rule.request for u in uses))
    plan.claim_name = _unique(dns_label("-".join(bases) if len(bases) <= 2 else "devices"), taken_claims)

    # Container claim entries: the whole claim when only one container uses it, else named requests.
    by_container: dict[int, list[str]] = {}
    for reqs in app_requests.values():
        for r, u in reqs:
            by_container.setdefault(id(u.container.container), []).append(r.name)
    for cid, names in init_refs.items():
        by_container.setdefault(cid, []).extend(n for n in names if n not in by_container.get(cid, []))
    if len(by_container) == 1:
        (cid,) = by_container
        plan.container_claims[cid] = [{"name": plan.claim_name}]
    else:
        for cid, names in by_container.items():
            plan.container_claims[cid] = [{"name": plan.claim_name, "request": n} for n in dict.fromkeys(names)]
    return _finish(plan, pa)


def _split_shares(
    plan: PodPlan,
    app_requests: dict[Any, list[tuple[RequestPlan, DeviceUse]]],
    sequences: list[tuple[DeviceUse, list[RequestPlan]]],
    taken: set[str],
    pa: PodAnalysis,
) -> dict[int, list[RequestPlan]]:
    """Split each request where a plain init container's share ends inside it (`gpu: 2` for a 1-device init
    container becomes `gpu-a: 1`, `gpu-b: 1`), in plan.requests and app_requests alike: the app container names
    every piece, the init container exactly its share. id(request) -> its pieces. A class with a preference
    between models (a firstAvailable list on its single request) is left whole: pieces could get different models."""
    ranked = set(pa.selection.alternatives) if pa.selection is not None else set()
    cuts: dict[int, set[int]] = {}
    for u, sequence in sequences:
        if u.match.rule.device_class in ranked:
            continue
        covered = 0
        for r in sequence:
            if covered + r.count > u.count:
                if u.count > covered:
                    cuts.setdefault(id(r), set()).add(u.count - covered)
                break
            covered += r.count
    if not cuts:
        return {}
    pieces: dict[int, list[RequestPlan]] = {}
    for r in plan.requests:
        if id(r) not in cuts:
            continue
        bounds = [0, *sorted(cuts[id(r)]), r.count]
        pieces[id(r)] = [
            replace(r, name=_unique(dns_label(f"{r.name}-{_letter(i)}"), taken), count=hi - lo)
            for i, (lo, hi) in enumerate(itertools.pairwise(bounds))
        ]
    plan.requests = [p for r in plan.requests for p in pieces.get(id(r), [r])]
    for reqs in app_requests.values():
        reqs[:] = [(p, u) for r, u in reqs for p in pieces.get(id(r), [r])]
    return pieces


def _letter(i: int) -> str:
    return string.ascii_lowercase[i] if i < len(string.ascii_lowercase) else str(i)


def _finish(plan: PodPlan, pa: PodAnalysis) -> PodPlan:
    # The ExtendedResourceToleration admission plugin added exactly this toleration for each resource.
    existing = [t for t in pa.ref.spec.get("tolerations") or [] if isinstance(t, dict)]
    for res in dict.fromkeys(u.resource for u in pa.uses if pa.plugin_tolerations):
        wanted = {"key": res, "operator": "Exists", "effect": "NoSchedule"}
        if not any(covers(t, wanted) for t in existing):
            plan.tolerations.append(wanted)
            existing.append(wanted)
    # KubeRay builds `ray start --num-gpus` and `--resources` from the Ray container's limits: write them out.
    if pa.ref.location.ray_start_params:
        ray = next((c for c in containers(pa.ref, pa.kind) if not c.init and c.key == 0), None)
        migrated = {u.resource for u in pa.uses if ray is not None and u.container.container is ray.container}
        existing = next((p for p, _, _ in resolve(pa.ref.owner, pa.ref.location.ray_start_params)), None)
        plan.ray_params = ray_start_params(pa.ray_limits, migrated, existing, pa.ray_accelerators)
    return plan


def split_claims(plan: PodPlan) -> list[PodPlan]:
    """The scheduler allocates at most 32 devices per claim (AllocationResultsMaxSize). A pod asking for more (8 GPUs
    and 32 EFA interfaces) gets several claims, each within that limit: requests a constraint ties together (a GPU
    and its NICs under one PCIe root) stay in one claim, the others go by device class, and a class over the limit
    request by request. A request or constrained group that alone exceeds the limit keeps the one plan, and
    validation refuses it."""
    if sum(r.count for r in plan.requests) <= MAX_DEVICES_PER_CLAIM or any(
        not c.get("requests") for c in plan.constraints
    ):
        return [plan]
    unit_of: dict[str, int] = {}  # request name -> its unit
    units: list[list[RequestPlan]] = []
    by_name = {r.name: r for r in plan.requests}
    for c in plan.constraints:
        names = list(dict.fromkeys(n.split("/")[0] for n in c["requests"]))
        joined = sorted({unit_of[n] for n in names if n in unit_of})
        target = joined[0] if joined else len(units)
        if not joined:
            units.append([])
        for other in joined[1:]:  # a constraint joining two units merges them
            for r in units[other]:
                unit_of[r.name] = target
            units[target].extend(units[other])
            units[other] = []
        for n in names:
            if n not in unit_of:
                unit_of[n] = target
                units[target].append(by_name[n])
    classes: dict[str, int] = {}
    for r in plan.requests:
        if r.name not in unit_of:
            if r.device_class not in classes:
                classes[r.device_class] = len(units)
                units.append([])
            unit_of[r.name] = classes[r.device_class]
            units[classes[r.device_class]].append(r)
    class_units = set(classes.values())
    bins: list[list[RequestPlan]] = []
    sizes: list[int] = []  # the devices in each bin (summed again for each unit, a pod of 4,000 requests took 10 s)
    for unit in _split_class_units(units, class_units):
        size = sum(r.count for r in unit)
        if size > MAX_DEVICES_PER_CLAIM:
            return [plan]
        fits = next((i for i, held in enumerate(sizes) if held + size <= MAX_DEVICES_PER_CLAIM), None)
        if fits is None:
            bins.append(list(unit))
            sizes.append(size)
        else:
            bins[fits].extend(unit)
            sizes[fits] += size
    home = {r.name: i for i, b in enumerate(bins) for r in b}
    taken = {str(c.get("name")) for c in plan.analysis.ref.spec.get("resourceClaims") or [] if isinstance(c, dict)}
    parts = []
    for i, requests in enumerate(bins):
        names = [r.name for r in requests]
        claim = _unique(dns_label("-".join(names) if len(names) <= 2 else f"devices-{i + 1}"), taken)
        entries = {
            cid: [{**e, "name": claim} for e in claims if "request" not in e or home.get(e["request"]) == i]
            for cid, claims in plan.container_claims.items()
        }
        part = replace(
            plan,
            claim_name=claim,
            requests=requests,
            container_claims={cid: e for cid, e in entries.items() if e},
            constraints=[c for c in plan.constraints if home[c["requests"][0].split("/")[0]] == i],
        )
        if i:
            part = replace(part, removals=[], tolerations=[], ray_params={}, primary=False)
        parts.append(part)
    return parts


def _split_class_units(units: list[list[RequestPlan]], class_units: set[int]) -> list[list[RequestPlan]]:
    """The units to pack: a device class whose requests together exceed the limit (five containers of 8 Gaudis) goes
    request by request, as nothing ties one container's devices to another's; a constrained group stays whole."""
    out: list[list[RequestPlan]] = []
    for i, unit in enumerate(units):
        if i in class_units and sum(r.count for r in unit) > MAX_DEVICES_PER_CLAIM:
            out.extend([r] for r in unit)
        elif unit:
            out.append(unit)
    return out


def covers(t: dict[str, Any], wanted: dict[str, str]) -> bool:
    """An existing toleration tolerates every taint the wanted one does."""
    if t.get("effect") not in (None, "", wanted["effect"]):
        return False
    if t.get("operator", "Equal") != "Exists":
        return False
    return t.get("key") in (None, "", wanted["key"])


PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
ALIGNED, UNALIGNED = "aligned", "unaligned"  # --align-nics preferred: the subrequests of each paired request
MAX_REQUESTS = 32


def topology_shape(uses: list[DeviceUse]) -> tuple[DeviceUse, list[DeviceUse]] | None:
    """(the GPU use, its NIC uses) when N GPUs come with k*N NICs of each kind in one container."""
    gpus = [u for u in uses if not u.match.rule.nic]
    nics = [u for u in uses if u.match.rule.nic]
    if len(gpus) != 1 or not nics:
        return None
    n = gpus[0].count
    if n < 1 or any(nic.count % n for nic in nics) or n * (1 + len(nics)) > MAX_REQUESTS:
        return None
    return gpus[0], nics


def _pair_topology(
    plan: PodPlan,
    app: list[DeviceUse],
    init: list[DeviceUse],
    taken: set[str],
    app_requests: dict[Any, list[tuple[RequestPlan, DeviceUse]]],
    key: Any,
) -> set[int]:
    """With --align-nics (detect decides per container, in `align`): N GPUs with k*N NICs become N pairs of
    (1 GPU, k NICs) under one PCIe root each, one constraint per pair, since one constraint over all devices could
    never be met. `preferred` makes each request a firstAvailable list, aligned first, then the same devices
    anywhere: a constraint that names a subrequest applies only when that subrequest is chosen."""
    paired: set[int] = set()
    align = plan.analysis.align
    if init or not align:
        return paired
    by_container: dict[str, list[DeviceUse]] = {}
    for u in app:
        by_container.setdefault(u.container.path, []).append(u)
    for path, uses in by_container.items():
        shape = topology_shape(uses)
        mode = align.get(path)
        if shape is None or mode is None:
            continue
        gpu, nics = shape
        prefix = f"{gpu.container.name}-" if len(by_container) > 1 else ""
        for i in range(gpu.count):
            names = []
            for u, count in [(gpu, 1), *((nic, nic.count // gpu.count) for nic in nics)]:
                req = RequestPlan(
                    _unique(dns_label(f"{prefix}{u.match.rule.request}-{i}"), taken),
                    u.match.rule.device_class,
                    count,
                    u.match.selectors,
                    u.match.rule.config,
                )
                if mode == "preferred":
                    req.alternatives = [(ALIGNED, req.selectors), (UNALIGNED, req.selectors)]
                plan.requests.append(req)
                app_requests.setdefault(key(u), []).append((req, u))
                names.append(f"{req.name}/{ALIGNED}" if mode == "preferred" else req.name)
            plan.constraints.append({"requests": names, "matchAttribute": PCIE_ROOT})
        paired |= {id(gpu), *(id(n) for n in nics)}
    return paired


def _apply_selection(plan: PodPlan, pa: PodAnalysis) -> None:
    """Selectors translated from node labels go on every request of their class; a preference between models
    becomes a firstAvailable list on the single request of its class, the required choice last."""
    sel = pa.selection
    if sel is None:
        return
    for req in plan.requests:
        extra = tuple(sel.selectors.get(req.device_class, ()))
        req.selectors = tuple(dict.fromkeys(req.selectors + extra))
        req.alternatives = [(n, tuple(dict.fromkeys(s + extra))) for n, s in req.alternatives]
    for cls, alternatives in sel.alternatives.items():
        reqs = [r for r in plan.requests if r.device_class == cls]
        if len(reqs) != 1 or reqs[0].alternatives:
            continue
        req = reqs[0]
        names: set[str] = set()
        for n, alt in enumerate(alternatives, start=1):
            req.alternatives.append(
                (_unique(f"choice-{n}", names), tuple(dict.fromkeys(req.selectors + tuple(alt.selectors.get(cls, ())))))
            )
        req.alternatives.append(("fallback", req.selectors))
