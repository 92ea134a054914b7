"""The wide fuzzer: what tests/test_properties.py does not generate. Workloads of every kind fix migrates
(tests/fuzz_kinds.py) whose containers ask for several vendors' devices at once (NVIDIA GPUs and MIG profiles, AMD,
Intel i915/xe, Gaudi, Neuron, EFA NICs), in limits only, requests only, both (the same count written in two
different forms), or limits and requests that differ (Kubernetes refuses those); pods already partly migrated
(an existing ResourceClaimTemplate in the file, its claim used by some containers); nodeSelector, affinity and
tolerations the packs translate or keep; ephemeral containers; written by tests/fuzz_text.py with comments in
every position, anchors, aliases (of label maps, env lists and counts, a count anchored on a device line and
aliased from a field fix keeps), merge keys, flow collections over one line or several, every quoting style,
tabs inside scalars, long lines, CRLF, documents around it ended by `---` or `...`; and as JSON.

Properties, for lint and fix run in process: no bad input and no internal error; the output parses and each
object validates strictly (1.34 and 1.36); fix is idempotent and leaves nothing fixable; the documents around the
workload are byte-identical and every comment is kept; every field but the devices (and the node-feature labels
fix moves into the claim) is as it was; each pod's devices per device (class, MIG profile, Intel driver) are
what Kubernetes gave it, an existing claim included; each container sees exactly its own (a plain init container
at least its own); a pod Kubernetes refuses (limits and requests differ) is left whole and lint fails on it;
lint finds something fixable exactly when fix changes the file.

Seen and left (the fuzzer tolerates or avoids them): a flow collection over several lines that fix must rewrite makes
it write ruamel's whole dump, which drops the comments inside the collection (and those of lines it removes) and
re-spells some numbers (`0e-1` as `0e+0`, the same for Kubernetes), or refuses the file when it holds an explicit tag
(documents._refuse_lost_tag: lint then says fixable and fix exits 2); a comment after a bare `-` is moved above it,
and next to an edit makes fix write the whole dump.

CI runs a bounded, derandomized profile (a few seconds); DRAMIGRATE_FUZZ=long a long random one (README.md,
Development): 25 examples per unit of DRAMIGRATE_FUZZ_SCALE (40 unless set), where CI runs 6 (3 of the JSON one).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fuzz_kinds import ARGO, MIGRATED, POD, fill
from fuzz_text import Raw, Shared, Writer, write
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_properties import COUNT_FORMS, KubernetesLoader, containers_of, pod_specs_of, rules, run, validate

from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.versions import Target

# resource -> what identifies its devices in a claim: the device class, and for MIG the profile, for Intel the driver
RESOURCES = {
    "nvidia.com/gpu": "gpu.nvidia.com",
    "nvidia.com/mig-1g.5gb": "mig.nvidia.com/1g.5gb",
    "nvidia.com/mig-3g.20gb": "mig.nvidia.com/3g.20gb",
    "amd.com/gpu": "gpu.amd.com",
    "gpu.intel.com/i915": "gpu.intel.com/i915",
    "gpu.intel.com/xe": "gpu.intel.com/xe",
    "habana.ai/gaudi": "gaudi.intel.com",
    "aws.amazon.com/neuron": "neuron.aws.com",
    "vpc.amazonaws.com/efa": "efa.networking.k8s.aws",
}
# Node labels the NVIDIA pack moves into the claim (node features): fix may remove them from a pod it migrates.
FEATURES = {"nvidia.com/gpu.present", "nvidia.com/gpu.product"}
NODE_SELECTORS = (
    ("zone", "a"),
    ("nvidia.com/gpu.present", "true"),
    ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
    ("cloud.google.com/gke-accelerator", "nvidia-l4"),
)
TOLERATIONS = (
    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "amd.com/gpu", "operator": "Exists"},
)
PRE_CLASSES = ("gpu.nvidia.com", "gpu.amd.com", "efa.networking.k8s.aws")
# Documents fix must leave byte for byte: ended by `...`, only comments, a very long line, tabs in scalars.
AROUND = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings   # odd spacing\ndata:\n  a: 'quoted'\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: long}\ndata:\n  blob: " + "x" * 5000 + "\n...\n",
    "# only a comment in this document\n",
    'apiVersion: v1\nkind: Secret\nmetadata:\n  name: "s"\nstringData:\n  t: "a\tb"  # a tab\n',
)


@dataclass
class Dev:
    res: str
    limit: int | None  # the count in limits (None: not there)
    request: int | None
    limit_form: int = 0  # COUNT_FORMS index for each
    request_form: int = 0

    @property
    def count(self) -> int | None:
        """The count Kubernetes gives the container (None: it refuses the pod)."""
        if self.limit is not None and self.request is not None and self.limit != self.request:
            return None
        return self.limit if self.limit is not None else self.request


@dataclass
class Ctr:
    name: str
    role: str  # app, sidecar, init, ephemeral
    pod: int
    where: str  # "" for its role's list, or container, script, model, sidecars
    devs: list[Dev]
    pre: bool = False  # uses the pod's existing claim

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.devs:
            if d.count:
                out[RESOURCES[d.res]] = out.get(RESOURCES[d.res], 0) + d.count
        return out


@dataclass
class Pre:
    ident: str
    count: int


@dataclass
class Case:
    kind: str
    containers: list[Ctr]
    pre: dict[int, Pre]  # pod -> its existing claim
    text: str = ""
    before: str = ""
    after: str = ""
    workload: str = ""
    notes: list[str] = field(default_factory=list)
    flow_notes: list[str] = field(default_factory=list)
    multiline_flow: bool = False
    data: Any = None  # the workload as plain data (for JSON)

    def in_pod(self, pod: int) -> list[Ctr]:
        return [c for c in self.containers if c.pod == pod]

    def __repr__(self) -> str:
        return f"Case({self.kind}):\n{self.text}"

    def blocked(self, pod: int) -> bool:
        return any(d.count is None for c in self.in_pod(pod) for d in c.devs)

    def migrates(self, pod: int) -> bool:
        return not self.blocked(pod) and any(
            d.limit is not None or d.request is not None for c in self.in_pod(pod) for d in c.devs
        )

    def expected(self, pod: int) -> dict[str, int]:
        """Per device ident, as the scheduler counts the pod: app containers and sidecars add up; a plain init
        container takes its own plus the sidecars started before it; the larger wins; an existing claim adds."""
        out: dict[str, int] = {}
        idents = {RESOURCES[d.res] for c in self.in_pod(pod) for d in c.devs}
        for ident in idents:
            app = sum(c.counts().get(ident, 0) for c in self.in_pod(pod) if c.role in ("app", "sidecar"))
            init = running = 0
            for c in self.in_pod(pod):
                if c.role == "sidecar":
                    running += c.counts().get(ident, 0)
                elif c.role == "init":
                    init = max(init, c.counts().get(ident, 0) + running)
            if max(app, init):
                out[ident] = max(app, init)
        if pod in self.pre:
            p = self.pre[pod]
            out[p.ident] = out.get(p.ident, 0) + p.count
        return out


class GoLoader(KubernetesLoader):
    """KubernetesLoader reading floats as go-yaml v2 does: `0e-1` and `1e3` (no dot) are floats there, strings for
    PyYAML. ruamel's dump of a flow collection writes `0e-1` as `0e+0`: the same number for Kubernetes."""


GoLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$"),
    list("-+.0123456789"),
)


def load_all(text: str) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader=GoLoader) if d is not None]  # noqa: S506 - a safe loader


# -- the generator -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Count(Raw):
    """A count written in one of COUNT_FORMS, with the number Kubernetes reads."""

    value: int = 0


@st.composite
def devs(draw: st.DrawFn, refused: bool, forms: tuple[int, ...]) -> list[Dev]:
    out = []
    for res in draw(st.lists(st.sampled_from(sorted(RESOURCES)), max_size=3, unique=True)):
        n = draw(st.integers(0, 4))
        how = draw(
            st.sampled_from(
                ["limits", "limits", "requests", "both", "both", "differ"]
                if refused
                else ["limits", "limits", "requests", "both", "both"]
            )
        )
        other = (n + draw(st.integers(1, 4))) % 5 if how == "differ" else n
        form = st.sampled_from(forms or range(len(COUNT_FORMS)))
        out.append(
            Dev(
                res,
                None if how == "requests" else n,
                None if how == "limits" else other,
                draw(form),
                draw(form),
            )
        )
    return out


@st.composite
def pod_ctrs(
    draw: st.DrawFn, layout: str, pod: int, refused: bool, ephemeral: bool, forms: tuple[int, ...]
) -> list[Ctr]:
    n = draw(st.integers(1, 2))
    inits = [
        Ctr(
            f"p{pod}i{i}",
            draw(st.sampled_from(["init", "sidecar"]) if layout == POD else st.just("init")),
            pod,
            "",
            draw(devs(refused, forms)),
        )
        for i in range(draw(st.integers(0, 2)))
    ]
    if layout == POD:
        apps = [Ctr(f"p{pod}a{i}", "app", pod, "", draw(devs(refused, forms))) for i in range(n)]
    else:
        main = draw(st.sampled_from(["container", "script"])) if layout == ARGO else "model"
        apps = [Ctr(f"p{pod}a0", "app", pod, main, draw(devs(refused, forms)))]
        if layout == ARGO:
            apps += [Ctr(f"p{pod}a{i}", "app", pod, "sidecars", draw(devs(refused, forms))) for i in range(1, n)]
    out = inits + apps
    if ephemeral and draw(st.booleans()):
        out.append(Ctr(f"p{pod}e0", "ephemeral", pod, "", []))
    return out


class Anchors:
    """Names anchors in the order they are written and turns later uses of a count into aliases."""

    def __init__(self, draw: st.DrawFn, on: bool) -> None:
        self.draw, self.on, self.n = draw, on, 0
        self.counts: dict[int, tuple[str, Count]] = {}
        self.ints: dict[str, Count] = {}  # shared counts YAML reads as integers

    def name(self) -> str:
        self.n += 1
        return f"a{self.n}"

    def count(self, dev: Dev, which: str) -> Any:
        value = dev.limit if which == "limits" else dev.request
        form = dev.limit_form if which == "limits" else dev.request_form
        text = COUNT_FORMS[form](value)
        node = Count(text, value)
        if not self.on or not self.draw(st.booleans()):
            return node
        if value not in self.counts:
            self.counts[value] = (self.name(), node)
        name, first = self.counts[value]
        if isinstance(yaml.load(first.text, Loader=GoLoader), int):  # noqa: S506 - a safe loader
            self.ints[name] = first
        return Shared(name, first)


def container_tree(
    c: Ctr, anchors: Anchors, shared_env: dict[str, str], draw: st.DrawFn, pre: Pre | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": c.name}
    if c.where == "model":
        body["modelFormat"] = {"name": "pytorch"}
    body["image"] = draw(st.sampled_from(["registry.example/app:1", "registry.example/" + "long-" * 80 + "x:1"]))
    if c.where == "script":
        body["source"] = "echo\thi"
    if c.role == "sidecar":
        body["restartPolicy"] = "Always"
    if c.role != "ephemeral" and draw(st.booleans()):
        body["command"] = ["sh", "-c", draw(st.sampled_from(["run --flag=1", "echo\tx", "x" * 90]))]
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for d in c.devs:
        if d.limit is not None:
            limits[d.res] = anchors.count(d, "limits")
        if d.request is not None:
            requests[d.res] = anchors.count(d, "requests")
    if c.role == "app" and draw(st.booleans()):
        limits["memory"] = "1Gi"
        requests["cpu"] = Raw("500m") if draw(st.booleans()) else "1"
    resources: dict[str, Any] = {}
    if pre is not None and c.pre:
        resources["claims"] = [{"name": "pre"}]
    order = draw(st.sampled_from([("limits", "requests"), ("requests", "limits")]))
    for key in order:
        part = limits if key == "limits" else requests
        if part:
            resources[key] = part
    if resources:
        body["resources"] = resources
    if c.role != "ephemeral" and draw(st.booleans()):
        if "env" not in shared_env:
            shared_env["env"] = anchors.name()
        body["env"] = Shared(
            shared_env["env"],
            [{"name": "MODE", "value": draw(st.sampled_from(["fast", "yes", "a\tb", "x: y", "#no"]))}],
        )
    # Field order varies: resources before the image, the name last.
    keys = list(body)
    if draw(st.booleans()):
        keys = draw(st.permutations(keys))
    return {k: body[k] for k in keys}


@st.composite
def cases(
    draw: st.DrawFn, refused: bool = True, kinds: tuple[str, ...] = (), forms: tuple[int, ...] = (), pre: bool = True
) -> Case:
    kind = draw(st.sampled_from(kinds or sorted(MIGRATED)))
    shape = MIGRATED[kind]
    conts = [
        c
        for slot, layout in enumerate(shape.layouts)
        for c in draw(pod_ctrs(layout, slot, refused, kind == "Pod", forms))
    ]
    case = Case(kind=kind, containers=conts, pre={})
    anchors = Anchors(draw, draw(st.booleans()))
    for slot in range(len(shape.layouts)):
        if pre and draw(st.integers(0, 3)) == 0:
            ident = draw(st.sampled_from(PRE_CLASSES))
            users = [
                c
                for c in case.in_pod(slot)
                if c.role != "ephemeral" and ident not in {RESOURCES[d.res].split("/")[0] for d in c.devs}
            ]
            if users:
                case.pre[slot] = Pre(ident, draw(st.integers(1, 3)))
                for c in draw(st.lists(st.sampled_from(users), min_size=1, unique_by=lambda c: c.name)):
                    c.pre = True
    name = "w" + draw(st.text("abcdefghij0123456789", min_size=1, max_size=8))
    labels = anchors.name()
    values: dict[str, Any] = {}

    def label_ref() -> Any:
        if not anchors.on:
            return {"app": name}
        return Shared(labels, {"app": name}, None if draw(st.booleans()) else {"tier": "gpu"})

    values["{app}"] = label_ref()
    for slot, layout in enumerate(shape.layouts):
        spec = pod_spec_tree(case, slot, layout, anchors, draw, jobs=slot in shape.jobs)
        values[f"{{spec:{slot}}}"] = spec
        values[f"{{template:{slot}}}"] = {"metadata": {"labels": label_ref()}, "spec": spec}
        values[f"{{containers:{slot}}}"] = spec.get("containers")
        values[f"{{ray:{slot}}}"] = {}
    metadata: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        metadata["namespace"] = "team-a"
    if shape.annotations:
        metadata["annotations"] = dict(shape.annotations)
    body = fill(shape.body, values)
    # the skeleton's quoted scalars ('"0 * * * *"') are YAML text: keep them as written
    body = _raw_quoted(body)
    obj = {"apiVersion": shape.api, "kind": kind, "metadata": metadata, **body}
    writer = Writer(
        draw=draw,
        indent=(indent := draw(st.sampled_from([2, 3, 4]))),
        seq_offset=draw(st.sampled_from(sorted({0, 2, indent}))),
        comments=draw(st.booleans()),
        flow=draw(st.booleans()),
        quoting=draw(st.booleans()),
    )
    head = writer.note(0.5)
    case.workload = (f"# {head}\n" if head else "") + write(obj, writer)
    case.notes, case.flow_notes, case.multiline_flow = writer.notes, writer.flow_notes, writer.multiline_flow
    templates = "".join(
        "---\n" + pre_template(name, slot, p, metadata.get("namespace", "")) for slot, p in case.pre.items()
    )
    around = draw(st.lists(st.sampled_from(AROUND), max_size=2))
    split = draw(st.integers(0, len(around)))
    marker = draw(st.sampled_from(["---\n", "--- # next\n"]))
    case.before = "".join(marker + d for d in around[:split])
    if case.before or draw(st.booleans()):
        case.before += marker
    case.after = templates + "".join(marker + d for d in around[split:])
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    case.text = (case.before + case.workload + case.after).replace("\n", newline)
    return case


def _raw_quoted(node: Any) -> Any:
    if isinstance(node, str) and len(node) > 1 and node[0] == node[-1] and node[0] in "\"'":
        return Raw(node)
    if isinstance(node, dict):
        return {k: _raw_quoted(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_raw_quoted(v) for v in node]
    return node


def pod_spec_tree(case: Case, slot: int, layout: str, anchors: Anchors, draw: st.DrawFn, jobs: bool) -> dict[str, Any]:
    conts = case.in_pod(slot)
    env: dict[str, str] = {}
    pre = case.pre.get(slot)
    spec: dict[str, Any] = {"name": f"t{slot}"} if layout == ARGO else {}
    trees = {c.name: container_tree(c, anchors, env, draw, pre) for c in conts}
    inits = [trees[c.name] for c in conts if c.role in ("init", "sidecar")]
    apps = [c for c in conts if c.role == "app"]
    if layout == POD:
        if inits:
            spec["initContainers"] = inits
        spec["containers"] = [trees[c.name] for c in apps]
        eph = [trees[c.name] for c in conts if c.role == "ephemeral"]
        if eph:
            spec["ephemeralContainers"] = eph
    else:
        spec[apps[0].where] = trees[apps[0].name]
        if inits:
            spec["initContainers"] = inits
        if apps[1:]:
            spec["sidecars"] = [trees[c.name] for c in apps[1:]]
    if pre is not None:
        spec["resourceClaims"] = [{"name": "pre", "resourceClaimTemplateName": f"pre-{slot}"}]
    selectors = draw(st.lists(st.sampled_from(NODE_SELECTORS), max_size=3, unique=True))
    if selectors:
        spec["nodeSelector"] = dict(selectors)
    if draw(st.integers(0, 3)) == 0:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                    ]
                }
            }
        }
    tolerations = draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2, unique_by=lambda t: t["key"]))
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if jobs:
        spec["restartPolicy"] = "Never"
    if anchors.ints and draw(st.booleans()):  # a field fix keeps shares its node with a device count
        name = draw(st.sampled_from(sorted(anchors.ints)))
        spec["terminationGracePeriodSeconds"] = Shared(name, anchors.ints[name])
    if draw(st.booleans()):
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return spec


def pre_template(name: str, slot: int, pre: Pre, namespace: str) -> str:
    meta = f"  name: pre-{slot}\n" + (f"  namespace: {namespace}\n" if namespace else "")
    return (
        f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n{meta}spec:\n  spec:\n"
        f"    devices:\n      requests:\n      - name: had\n        exactly:\n"
        f"          deviceClassName: {pre.ident}\n          allocationMode: ExactCount\n          count: {pre.count}\n"
    )


# -- the oracle ---------------------------------------------------------------------------------------------------


MIG_PROFILE = re.compile(r"profile == .([0-9]+g\.[0-9]+gb)")
INTEL_DRIVER = re.compile(r"driver == .(\w+)")


def ident_of(request: dict[str, Any]) -> str:
    exact = request["exactly"]
    cls = exact["deviceClassName"]
    cel = " ".join(s["cel"]["expression"] for s in exact.get("selectors") or [])
    found = re.search(MIG_PROFILE if cls == "mig.nvidia.com" else INTEL_DRIVER, cel)
    return f"{cls}/{found.group(1)}" if found and cls in ("mig.nvidia.com", "gpu.intel.com") else cls


def without_devices(obj: Any) -> Any:
    """The object less the device-plugin requests, the DRA fields fix writes, the tolerations of device resources,
    the node-feature labels fix may move into a claim, and the empty maps left behind."""
    if isinstance(obj, list):
        kept = [without_devices(x) for x in obj if not (isinstance(x, dict) and x.get("key") in RESOURCES)]
        return [x for x in kept if x not in ({}, [])]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if k in RESOURCES or k in FEATURES or k in ("claims", "resourceClaims", "num-gpus"):
            continue
        v = without_devices(v)
        if v not in ({}, []):
            out[k] = v
    return out


def check_pods(case: Case, workload: dict[str, Any], original: dict[str, Any], templates: dict[str, Any]) -> None:
    after = pod_specs_of(workload)
    before = pod_specs_of(original)
    for pod, (layout, spec) in enumerate(after):
        if not case.migrates(pod):
            assert spec == before[pod][1], f"pod {pod} changed though fix must leave it"
            continue
        by_name = containers_of(layout, spec) | {c["name"]: c for c in spec.get("ephemeralContainers") or []}
        for name, c in by_name.items():
            for section in ("limits", "requests"):
                left = set((c.get("resources") or {}).get(section) or {}) & set(RESOURCES)
                assert not left, f"{name} still asks for {left}"
        claims = {}
        for entry in spec.get("resourceClaims") or []:
            assert entry["resourceClaimTemplateName"] in templates, f"claim {entry} names no template in the file"
            claims[entry["name"]] = templates[entry["resourceClaimTemplateName"]]
        got: dict[str, int] = {}
        for t in claims.values():
            for r in t["spec"]["spec"]["devices"]["requests"]:
                got[ident_of(r)] = got.get(ident_of(r), 0) + r["exactly"]["count"]
        assert got == case.expected(pod), f"pod {pod}: Kubernetes gave {case.expected(pod)}, the claims give {got}"
        for c in case.in_pod(pod):
            want = c.counts()
            if c.pre:
                want[case.pre[pod].ident] = want.get(case.pre[pod].ident, 0) + case.pre[pod].count
            have: dict[str, int] = {}
            for entry in (by_name[c.name].get("resources") or {}).get("claims") or []:
                for r in claims[entry["name"]]["spec"]["spec"]["devices"]["requests"]:
                    if entry.get("request") in (None, r["name"]):
                        have[ident_of(r)] = have.get(ident_of(r), 0) + r["exactly"]["count"]
            if c.role == "init":
                assert all(have.get(i, 0) >= n for i, n in want.items()), f"{c.name}: wants {want}, sees {have}"
            else:
                assert have == want, f"{c.name}: wants {want}, sees {have}"
        tolerations = spec.get("tolerations") or []
        for res in {d.res for c in case.in_pod(pod) for d in c.devs if d.count}:
            covered = [t for t in tolerations if t.get("key") == res and t.get("operator") == "Exists"]
            assert covered, f"pod {pod}: no toleration for {res}: {tolerations}"
            assert tolerations.count({"key": res, "operator": "Exists", "effect": "NoSchedule"}) <= 1
        for key in set(before[pod][1].get("nodeSelector") or {}) - FEATURES:
            assert spec["nodeSelector"][key] == before[pod][1]["nodeSelector"][key]


def check(case: Case, as_json: bool = False) -> None:
    try:
        _check(case, as_json)
    except AssertionError:
        if DUMP:  # the failing input and fix's output, to read (long runs: DRAMIGRATE_FUZZ_DUMP=FOLDER)
            path = "generated.json" if as_json else "generated.yaml"
            raw = (json.dumps(case.data, indent=2) + "\n").encode() if as_json else case.text.encode()
            Path(DUMP, "in" + Path(path).suffix).write_bytes(raw)
            fixed = run_file(Job(path, raw, True), rules(), Settings(), Target.parse("1.36")).rewritten
            Path(DUMP, "out" + Path(path).suffix).write_text(fixed or "")
        raise


def _check(case: Case, as_json: bool = False) -> None:
    path = "generated.json" if as_json else "generated.yaml"
    raw = (json.dumps(case.data, indent=2) + "\n").encode() if as_json else case.text.encode()
    lint = run(raw, fix=False, path=path)
    result = run_file(Job(path, raw, True), rules(), Settings(), Target.parse("1.36"))
    if result.error is not None and TAG_KEPT.search(result.error.message):
        # By design (documents._refuse_lost_tag): an edit the minimal merge cannot place (a flow collection over
        # several lines) would make ruamel write the whole document, which re-spells an explicit tag: refused.
        assert "!!" in raw.decode(), result.error
        return
    result = run(raw, fix=True, path=path)
    fixable = any(f.fixable for f in lint.findings)
    assert fixable == (result.rewritten is not None), (
        f"lint says fixable: {fixable}; fix rewrote: {result.rewritten is not None}",
        [f.message for f in lint.findings],
    )
    for pod in range(len(MIGRATED[case.kind].layouts)):
        if case.blocked(pod) and any(d.count is not None for c in case.in_pod(pod) for d in c.devs):
            # a refused value alone is a warning (the API server refuses the pod: no device); beside it a request
            # Kubernetes takes is an error that fix leaves
            assert any(f.severity.value == "error" for f in lint.findings), (
                "a pod fix leaves asks for a device: lint passes"
            )
    text = result.rewritten if result.rewritten is not None else raw.decode()
    if as_json:
        out = json.loads(text)
        objects = out["items"] if out.get("kind") == "List" else [out]
        original = case.data
    else:
        newline = "\r\n" if "\r\n" in case.text else "\n"
        if newline == "\r\n":
            assert text.count("\n") == text.count("\r\n"), "mixed line endings after fix"
        plain = text.replace("\r\n", "\n")
        assert plain.startswith(case.before), "a document before the workload changed"
        assert plain.endswith(case.after), "a document after the workload changed"
        for note in case.notes:
            if case.multiline_flow and result.rewritten is not None:  # seen and left: the docstring
                assert plain.count(f"# {note}") <= 1, f"comment {note!r} doubled"
                continue
            assert plain.count(f"# {note}") == 1, f"comment {note!r} lost or doubled"
        objects = load_all(plain)
        (original,) = load_all(case.workload)
    (workload,) = [o for o in objects if o["kind"] == case.kind]
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    assert without_devices(workload) == without_devices(original), "a field other than the devices changed"
    if result.rewritten is not None:
        validate(workload)
        for t in templates.values():
            validate(t)
    check_pods(case, workload, original, templates)
    if result.rewritten is not None:
        again = run(result.rewritten.encode(), fix=True, path=path)
        assert again.rewritten is None, "a second fix changed the text"
        assert not [f.rule for f in again.findings if f.fixable]


TAG_KEPT = re.compile(r"^fix cannot keep the value tagged !!\w+ as it is written")
DUMP = os.environ.get("DRAMIGRATE_FUZZ_DUMP", "")
LONG = os.environ.get("DRAMIGRATE_FUZZ") == "long"
SCALE = int(os.environ.get("DRAMIGRATE_FUZZ_SCALE") or 40)


def examples(long: int, ci: int) -> int:
    """How many examples a property runs: ci in CI (a fixed set, about half a second of CPU each), long times
    DRAMIGRATE_FUZZ_SCALE on demand."""
    return long * SCALE if LONG else ci


WIDE = settings(
    max_examples=examples(25, 6),
    derandomize=not LONG,
    deadline=None,
    database=None,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: a failure is dumped and reported as found
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@WIDE
@given(case=cases())
def test_wide_workloads_fix_as_kubernetes_counts(case: Case) -> None:
    check(case)


# JSON: counts as numbers or strings (the forms PyYAML and go-yaml read alike), no claim templates around it.
@settings(WIDE, max_examples=examples(8, 3))
@given(case=cases(forms=(0, 9), pre=False))
def test_wide_json_workloads_fix_as_kubernetes_counts(case: Case) -> None:
    case.data = load_all(case.workload)[0]
    check(case, as_json=True)
