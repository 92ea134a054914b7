"""Property tests of the one-file pipeline (in process): random workloads of every kind the rule packs migrate
(tests/fuzz_kinds.py: the built-in kinds, Ray groups, Kubeflow jobs, JobSet, LeaderWorkerSet, runner sets, KServe,
LLMInferenceService, Argo templates), several pod specs per object, with app containers, plain and sidecar init
containers (an Argo template's main container and sidecars, a KServe model container), random device counts
written in every form Kubernetes accepts (octal, hex, binary, Go's capital base prefixes, underscores, quoted,
floats, milli units, exponents, fractions rounded up), device keys plain or quoted, block and flow style
(resources maps, or each container list on one line), indentation, end-of-line and own-line comments, line
endings, multi-doc, JSON; containers sharing resources through anchors and merge keys (some overriding the
shared limits); counts Kubernetes refuses; kinds the packs only report.

Properties: no internal error; every request is reported on its own line; fix is idempotent; every emitted or
rewritten object validates strictly for 1.34 and 1.36; device totals per pod and per device class are kept (app
containers and sidecars add up, a plain init container reuses all but the sidecars started before it); each
container still sees its devices; the plugin's toleration is explicit; a Ray group's num-gpus is what KubeRay
derived; documents the fix does not touch are byte-identical, and every field but the devices is kept; comments
survive, an own-line comment above the line it was written for; a JSON manifest stays JSON; a pod with a count
Kubernetes refuses is left whole; a reported kind is never rewritten; lint, diff and fix agree through the CLI.

A bounded profile runs in CI; DRAMIGRATE_FUZZ=long a long random one (README.md, Development).
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from fuzz_kinds import ARGO, MIGRATED, POD, REPORTED, Kind, fill, pod_specs, ray_params
from hypothesis import HealthCheck, Phase, assume, example, given, settings
from hypothesis import strategies as st

from dramigrate.config import Settings
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import RuleSet, load_rules
from dramigrate.versions import Target

CONTAINER_LISTS = ("initContainers", "containers", "sidecars")
CLASSES = {"nvidia.com/gpu": "gpu.nvidia.com", "amd.com/gpu": "gpu.amd.com", "habana.ai/gaudi": "gaudi.intel.com"}
VERSIONS = ("1.34", "1.36")


@cache
def rules() -> RuleSet:
    return load_rules(())


# -- a tiny YAML writer with the formatting knobs real repos use ------------------------------------------


@dataclass(frozen=True)
class Style:
    indent: int  # mapping indentation step
    offset: int  # where a sequence's dash sits under its key: 0 (flush), 2 or the mapping step
    newline: str
    quote_counts: bool
    toleration_offset: int = -1  # real files mix styles: the tolerations list may sit differently
    count_form: int = 0  # which of COUNT_FORMS writes the counts (0: plain decimal)
    flow: bool = False  # limits and requests as flow mappings: {nvidia.com/gpu: 2, memory: "1Gi"}
    flow_containers: bool = False  # each container list on one line: [{name: a, resources: {limits: {...}}}]
    key_quote: str = ""  # how the device keys are written: plain, "nvidia.com/gpu" or 'nvidia.com/gpu'

    def offset_of(self, key: str) -> int:
        return self.toleration_offset if key == "tolerations" and self.toleration_offset >= 0 else self.offset


@dataclass(frozen=True)
class S:
    """A scalar already written as YAML text, with an optional end-of-line comment."""

    text: str
    comment: str = ""


@dataclass(frozen=True)
class Note:
    """A mapping key written as an own-line comment before the next key (never first in a sequence item)."""

    text: str


def _line(text: str, comment: str) -> str:
    return f"{text}  # {comment}" if comment else text


def _flow(value: Any) -> str:
    """value in flow style, on one line (no comments: a flow collection on one line has no place for them)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items() if not isinstance(k, Note)) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return value.text if isinstance(value, S) else str(value)


def _pair(key: str, value: Any, col: int, style: Style, out: list[str], lead: str | None = None) -> None:
    pad = " " * col if lead is None else lead
    if key in CONTAINER_LISTS and style.flow_containers and isinstance(value, list):
        out.append(f"{pad}{key}: {_flow(value)}")
    elif isinstance(value, dict) and value:
        out.append(f"{pad}{key}:")
        _mapping(value, col + style.indent, style, out)
    elif isinstance(value, list) and value:
        out.append(f"{pad}{key}:")
        _sequence(value, col + style.offset_of(key), style, out)
    else:
        scalar = value if isinstance(value, S) else S("{}" if isinstance(value, dict) else str(value))
        out.append(_line(f"{pad}{key}: {scalar.text}", scalar.comment))


def _mapping(data: dict[Any, Any], col: int, style: Style, out: list[str]) -> None:
    for k, v in data.items():
        if isinstance(k, Note):
            out.append(f"{' ' * col}# {k.text}")
        else:
            _pair(k, v, col, style, out)


def _sequence(items: list[Any], col: int, style: Style, out: list[str]) -> None:
    for item in items:
        assert isinstance(item, dict) and item
        (first, value), *rest = item.items()
        _pair(first, value, col + 2, style, out, lead=" " * col + "- ")
        _mapping(dict(rest), col + 2, style, out)


def to_yaml(data: dict[str, Any], style: Style, head_comment: str = "") -> str:
    out = [f"# {head_comment}"] if head_comment else []
    _mapping(data, 0, style, out)
    return "\n".join(out) + "\n"


# -- the generated workloads -----------------------------------------------------------------------------


@dataclass
class Container:
    name: str
    role: str  # "app", "sidecar" or "init"
    counts: dict[str, int]  # resource -> count as the device plugin saw it
    placement: dict[str, str]  # resource -> "limits", "requests" or "both"
    note: str = ""  # an explicitly tagged env value written after the resources (TAGGED_NOTES), or none
    pod: int = 0  # which of the workload's pod specs holds it (fuzz_kinds: a kind's slots)
    where: str = ""  # the key it is written under: "" for its role's list, or sidecars, container, script, model
    bad: dict[str, str] = field(default_factory=dict)  # resource -> a value Kubernetes refuses, written instead


@dataclass
class Case:
    kind: str
    name: str
    namespace: str
    containers: list[Container]
    style: Style
    comments: list[str] = field(default_factory=list)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    before: str = ""  # untouched documents before the workload (with the marker that ends them)
    after: str = ""  # untouched documents after it (starting with their marker)
    workload: str = ""
    ray: dict[int, dict[str, str]] = field(default_factory=dict)  # a Ray group's rayStartParams, by pod spec

    @property
    def text(self) -> str:
        return self.before + self.workload + self.after

    def raw(self) -> bytes:
        return self.text.replace("\n", self.style.newline).encode("utf-8")

    def in_pod(self, pod: int) -> list[Container]:
        return [c for c in self.containers if c.pod == pod]

    def expected(self, pod: int = 0) -> dict[str, int]:
        """Per device class, as the scheduler counts a pod: max(app + sidecar sum, and for each plain init
        container its own count plus the sidecars started before it)."""
        out: dict[str, int] = {}
        for res, cls in CLASSES.items():
            app = sum(c.counts.get(res, 0) for c in self.in_pod(pod) if c.role != "init")
            init = running = 0
            for c in self.in_pod(pod):  # init containers in their order; app containers do not matter here
                if c.role == "sidecar":
                    running += c.counts.get(res, 0)
                elif c.role == "init":
                    init = max(init, c.counts.get(res, 0) + running)
            if max(app, init):
                out[cls] = max(app, init)
        return out


# Ways to write a count n that Kubernetes reads as n devices (sigs.k8s.io/yaml's YAML 1.1, then
# resource.Quantity): decimal, octal with a leading zero, 0o/0x, a float, milli units, an exponent, a sign.
COUNT_FORMS: tuple[Any, ...] = (
    str,
    lambda n: f"0{n:o}" if n else "0",
    lambda n: f"0o{n:o}",
    lambda n: f"{n:#x}",
    lambda n: f"{n}.0",
    lambda n: f'"{n * 1000}m"',
    lambda n: f"{n}e0",
    lambda n: f'"{n}e0"',
    lambda n: f"0b{n:b}",
    lambda n: f"'{n}'",
    lambda n: f'"{n}.0"',
    lambda n: f"{n - 1}.9999" if n else "0.0",  # MilliValue rounds thousandths up: 1.9999 is 2 devices
    lambda n: f"0_{n}",  # go-yaml drops underscores: 0_5 is octal 5, 0_8 the float 8
    lambda n: f"{n:#X}",  # Go's base prefixes in capitals, which go-yaml hands to strconv.ParseInt(s, 0, 64)
    lambda n: f"0B{n:b}",
    lambda n: f"0O{n:o}",
    lambda n: f"{n * 10}e-1",  # a negative exponent: 30e-1 is the float 3
    lambda n: f".{n}e1",  # no digit before the point: .3e1 is 3
    lambda n: f"{n}_" if n else "0",  # a trailing underscore, dropped
    lambda n: f'" {n} "',  # the quantity parser trims spaces
    lambda n: f"{n}.",  # a float with nothing after the point
    lambda n: f"0{n}.0",  # a leading zero is no octal in a float
    lambda n: f"{n}E+0",
    lambda n: f"!!int {n}",  # the core tags go-yaml resolves
    lambda n: f"!!float {n}",
    lambda n: f"!!int '{n}'",  # a quoted scalar under !!int is an int for go-yaml
    lambda n: f"+{n}",  # ruamel writes it back as `4` (kept last: PLUS_COUNT_REMOVED names it)
)


KEY_QUOTES = ("", "", '"', "'")


def count_text(n: int, style: Style) -> str:
    text = COUNT_FORMS[style.count_form](n)
    return f'"{text}"' if style.quote_counts and style.count_form == 0 else text


def _noted(data: dict[Any, Any], key: str, comment: Callable[[], str]) -> dict[Any, Any]:
    """data with an own-line comment before key, when key is there and comment() gives one."""
    note = comment() if key in data else ""
    if not note:
        return data
    out: dict[Any, Any] = {}
    for k, v in data.items():
        if k == key:
            out[Note(note)] = None
        out[k] = v
    return out


def _container_yaml(c: Container, style: Style, comment: Callable[[], str]) -> dict[str, Any]:
    body: dict[Any, Any] = {"name": S(c.name, comment())}
    if c.where == "model":
        body["modelFormat"] = {"name": "pytorch"}
    body["image"] = S(f"registry.example/{c.name}:1", comment())
    if c.where == "script":
        body["source"] = S('"echo hi"')
    if c.role == "sidecar":
        body["restartPolicy"] = "Always"
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for res, n in c.counts.items():
        value = S(c.bad.get(res) or count_text(n, style))
        key = f"{style.key_quote}{res}{style.key_quote}"
        if c.placement[res] in ("limits", "both"):
            limits[key] = value
        if c.placement[res] in ("requests", "both"):
            requests[key] = value
    if c.role == "app":
        limits.setdefault("memory", S('"1Gi"'))
    resources: dict[str, Any] = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    if style.flow:
        resources = {k: S("{" + ", ".join(f"{r}: {x.text}" for r, x in v.items()) + "}") for k, v in resources.items()}
    if resources:
        body["resources"] = _noted(resources, "requests", comment)
    if c.note:
        body["env"] = [{"name": "NOTE", "value": S(c.note)}]
    return _noted(body, "resources", comment)


# Explicitly tagged values, which fix keeps as written with every line around them (a `!!binary` value once made
# it write the whole document again). The API server reads each as text: KubernetesLoader.
TAGGED_NOTES = ("!!str 5", '!!str "quoted"', "!!binary aGVsbG8=", "!!binary 'aGVsbG8='", "!Secret db-password")


class KubernetesLoader(yaml.SafeLoader):
    """PyYAML's safe loader reading tags as the API server's decoder (go-yaml v2) does: a `!!binary` value as the
    text it decodes to, a custom tag's scalar as its text."""


KubernetesLoader.add_constructor(
    "tag:yaml.org,2002:binary", lambda loader, node: base64.b64decode(loader.construct_scalar(node)).decode()
)
KubernetesLoader.add_multi_constructor("!", lambda loader, _suffix, node: loader.construct_scalar(node))


def load_all(text: str) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader=KubernetesLoader) if d is not None]  # noqa: S506 - a safe loader


UNTOUCHED = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings   # odd spacing\ndata:\n  a: 'quoted'\n",
    "# a Service, indented with four spaces\napiVersion: v1\nkind: Service\nmetadata:\n    name: svc\nspec:\n"
    "    ports:\n        -   port: 80   # wide dash\n",
    'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  token: "x"\n',
]


def workload_object(
    kind: str,
    metadata: dict[str, Any],
    specs: dict[str, Any] | list[dict[str, Any]],
    name: str,
    ray: dict[int, Any] | None = None,
    kinds: dict[str, Kind] = MIGRATED,
) -> dict[str, Any]:
    """The object of kind (fuzz_kinds) named name, with its pod specs (one, or one per slot of the kind)."""
    shape = kinds[kind]
    specs = [specs] if isinstance(specs, dict) else specs
    labels = {"app": name}
    values: dict[str, Any] = {"{app}": labels}
    for i, spec in enumerate(specs):
        values[f"{{spec:{i}}}"] = spec
        values[f"{{template:{i}}}"] = {"metadata": {"labels": labels}, "spec": spec}
        values[f"{{containers:{i}}}"] = spec.get("containers")
        values[f"{{ray:{i}}}"] = (ray or {}).get(i, {})
    if shape.annotations:
        metadata = {**metadata, "annotations": {k: S(f'"{v}"') for k, v in shape.annotations.items()}}
    return {"apiVersion": shape.api, "kind": kind, "metadata": metadata, **fill(shape.body, values)}


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12).map(lambda s: "w" + s)
counts = st.integers(min_value=0, max_value=8)


@st.composite
def containers(draw: st.DrawFn, role: str, index: int, pod: int = 0, where: str = "") -> Container:
    resources = draw(st.lists(st.sampled_from(sorted(CLASSES)), max_size=3, unique=True))
    return Container(
        name=f"{role}-{index}" if not pod else f"p{pod}-{role}-{index}",
        role=role,
        counts={r: draw(counts) for r in resources},
        placement={r: draw(st.sampled_from(["limits", "limits", "both", "requests"])) for r in resources},
        note=draw(st.sampled_from(("", "", *TAGGED_NOTES))),
        pod=pod,
        where=where,
    )


@st.composite
def pod_containers(draw: st.DrawFn, layout: str, pod: int, most: int) -> list[Container]:
    """The containers of one pod spec, init containers first: app containers (up to most) and plain or sidecar
    init containers; an Argo template's main container (container or script) with sidecars beside it, a KServe
    component's model container."""
    n = draw(st.integers(1, most))
    if layout == POD:
        apps = [draw(containers("app", i, pod)) for i in range(n)]
        roles = st.sampled_from(["init", "sidecar"])
        return [draw(containers(draw(roles), i, pod)) for i in range(draw(st.integers(0, 2)))] + apps
    main = draw(st.sampled_from(["container", "script"])) if layout == ARGO else "model"
    apps = [draw(containers("app", 0, pod, main))]
    if layout == ARGO:  # Argo's sidecars run beside the main container: their devices add up
        apps += [draw(containers("app", i, pod, "sidecars")) for i in range(1, n)]
    return [draw(containers("init", i, pod)) for i in range(draw(st.integers(0, 2)))] + apps


def pod_spec_yaml(
    layout: str, slot: int, conts: list[Container], style: Style, case: Case, comment: Callable[[], str], extra: dict
) -> dict[str, Any]:
    """One pod spec as the generator writes it (an Argo template carries its name first)."""
    inside = str if style.flow_containers else comment  # a container list on one line holds no comment
    spec: dict[str, Any] = {"name": f"t{slot}"} if layout == ARGO else {}
    inits = [_container_yaml(c, style, inside) for c in conts if c.role != "app"]
    apps = [c for c in conts if c.role == "app"]
    if layout == POD:
        if inits:
            spec["initContainers"] = inits
        spec["containers"] = [_container_yaml(c, style, inside) for c in apps]
    else:
        spec[apps[0].where] = _container_yaml(apps[0], style, inside)
        if inits:
            spec["initContainers"] = inits
        if apps[1:]:
            spec["sidecars"] = [_container_yaml(c, style, inside) for c in apps[1:]]
    if case.tolerations:
        spec["tolerations"] = [{k: S(f'"{v}"') for k, v in t.items()} for t in case.tolerations]
    spec.update(extra)
    return _noted(_noted(spec, "tolerations", comment), "volumes", comment)


RAY_PARAMS = ({}, {"dashboard-host": "'0.0.0.0'"}, {"num-gpus": "'1'"})


@st.composite
def cases(draw: st.DrawFn, mixed: bool = False, forms: tuple[int, ...] = (), kinds: tuple[str, ...] = ()) -> Case:
    indent = draw(st.sampled_from([2, 3, 4]))
    offsets = sorted({0, 2, indent})
    style = Style(
        indent=indent,
        offset=(offset := draw(st.sampled_from(offsets))),
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        quote_counts=draw(st.booleans()),
        toleration_offset=draw(st.sampled_from([o for o in offsets if o != offset])) if mixed else -1,
        count_form=draw(st.sampled_from(forms or range(len(COUNT_FORMS)))),
        flow=False if mixed else draw(st.booleans()),
        flow_containers=False if mixed else draw(st.booleans()),
        key_quote=draw(st.sampled_from(KEY_QUOTES)),
    )
    kind = draw(st.sampled_from(kinds or sorted(MIGRATED)))
    shape = MIGRATED[kind]
    most = 3 if len(shape.layouts) == 1 else 2  # a kind of several pod specs: fewer containers in each
    conts = [c for pod, layout in enumerate(shape.layouts) for c in draw(pod_containers(layout, pod, most))]
    case = Case(
        kind=kind,
        name=draw(names),
        namespace=draw(st.sampled_from(["", "ml", "team-a"])),
        containers=conts,
        style=style,
    )
    with_comments = draw(st.booleans())

    def comment() -> str:
        if with_comments and draw(st.booleans()):
            case.comments.append(f"note-{len(case.comments)} keep me")
            return case.comments[-1]
        return ""

    if draw(st.booleans()):
        case.tolerations = [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    specs = []
    for slot, layout in enumerate(shape.layouts):
        extra: dict[str, Any] = {}
        if layout == POD and draw(st.booleans()):
            extra["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        if slot in shape.jobs:
            extra["restartPolicy"] = "Never"
        specs.append(pod_spec_yaml(layout, slot, case.in_pod(slot), style, case, comment, extra))
    case.ray = {slot: draw(st.sampled_from(RAY_PARAMS)) for slot in range(len(shape.layouts))}
    metadata: dict[str, Any] = {"name": S(case.name, comment())}
    if case.namespace:
        metadata["namespace"] = case.namespace
    head = comment()
    case.workload = to_yaml(workload_object(case.kind, metadata, specs, case.name, case.ray), style, head)
    before = draw(st.lists(st.sampled_from(UNTOUCHED), max_size=2))
    after = draw(st.lists(st.sampled_from(UNTOUCHED), max_size=2))
    leading_marker = draw(st.booleans())
    case.before = "".join(("---\n" if i or leading_marker else "") + d for i, d in enumerate(before))
    if before or leading_marker:
        case.before += "---\n"
    case.after = "".join("---\n" + d for d in after)
    return case


# -- running the pipeline --------------------------------------------------------------------------------


def run(raw: bytes, fix: bool, target: str = "1.36", path: str = "generated.yaml") -> FileResult:
    result = run_file(Job(path, raw, fix), rules(), Settings(), Target.parse(target))
    assert result.error is None, f"bad input? {result.error}\n{raw.decode()}"
    bugs = [f.message for f in result.findings if f.rule == "internal-error"]
    assert not bugs, f"internal error: {bugs}\n{raw.decode()}"
    return result


# kubernetes-validate reads its schema files again on every call (the definitions are megabytes of JSON): three
# quarters of a property's time went there. The files do not change while the tests run.
kubernetes_validate.utils.schema_contents = cache(kubernetes_validate.utils.schema_contents)


def validate(obj: dict[str, Any]) -> None:
    """Strict validation for 1.34 and 1.36; a custom resource's pod specs each validate as a Pod's spec."""
    if obj["kind"] in MIGRATED and MIGRATED[obj["kind"]].api == obj["apiVersion"] and "/" in obj["apiVersion"]:
        group = obj["apiVersion"].split("/")[0]
        if "." in group:  # a custom resource: kubernetes-validate knows only the built-in kinds
            for layout, spec in zip(MIGRATED[obj["kind"]].layouts, pod_specs(MIGRATED[obj["kind"]], obj), strict=True):
                validate(as_pod(layout, spec))
            return
    for version in VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def as_pod(layout: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A Pod holding what one pod spec of a custom resource gives its pod: an Argo template's main container,
    sidecars and init containers, a KServe component's model container, with the claims and tolerations."""
    if layout != POD:
        lists = containers_of(layout, spec)
        main = lists["main"] | {"name": lists["main"].get("name", "main")}
        main = {k: v for k, v in main.items() if k not in ("source", "modelFormat")}
        kept = {k: spec[k] for k in ("initContainers", "resourceClaims", "tolerations") if k in spec}
        spec = {"containers": [main, *(spec.get("sidecars") or [])], **kept}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def pod_specs_of(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(layout, pod spec) of each pod spec of a workload fix migrates."""
    shape = MIGRATED[obj["kind"]]
    return list(zip(shape.layouts, pod_specs(shape, obj), strict=True))


def containers_of(layout: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec's containers by name ("main" for the main container of an Argo template or KServe component)."""
    out = {c["name"]: c for key in CONTAINER_LISTS for c in spec.get(key) or []}
    if layout != POD:
        main = next(spec[k] for k in ("container", "script", "model") if k in spec)
        out[main.get("name", "main")] = main
        out["main"] = main
    return out


def seen_by_container(container: dict[str, Any], claims: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Devices per class a container gets through its claim entries."""
    out: dict[str, int] = {}
    for entry in (container.get("resources") or {}).get("claims") or []:
        template = claims[entry["name"]]
        for r in template["spec"]["spec"]["devices"]["requests"]:
            if entry.get("request") in (None, r["name"]):
                cls = r["exactly"]["deviceClassName"]
                out[cls] = out.get(cls, 0) + r["exactly"]["count"]
    return out


def _line_after_comment(lines: list[str], comment: str) -> str | None:
    """The first line that is not a comment after the own-line comment `# comment` (None: no such comment)."""
    own = [i for i, line in enumerate(lines) if line.strip() == f"# {comment}"]
    if not own:
        return None
    return next((line for line in lines[own[0] + 1 :] if not line.lstrip().startswith("#")), "")


def check_fixed(case: Case, result: FileResult, target: str) -> str:
    text = result.rewritten if result.rewritten is not None else case.raw().decode("utf-8")
    newline = case.style.newline
    # CRLF in, CRLF out (and LF in, LF out).
    if newline == "\r\n":
        assert text.count("\n") == text.count("\r\n"), "mixed line endings after fix"
    else:
        assert "\r" not in text
    plain = text.replace("\r\n", "\n")
    # (d) the documents around the workload are byte-identical.
    assert plain.startswith(case.before), "a document before the workload changed"
    assert plain.endswith(case.after), "a document after the workload changed"
    # (e) comments survive.
    for c in case.comments:
        assert f"# {c}" in plain, f"comment {c!r} lost:\n{plain}"
    # Inside the workload only the lines of the removed requests (and maps they empty) change; every other
    # line keeps its bytes, indentation included.
    original = case.workload.splitlines()
    rewritten = plain[len(case.before) : len(plain) - len(case.after)].splitlines()
    changed = []
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, original, rewritten, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            changed.extend(original[i1:i2])
    quoted = tuple(f"{q}{r}{q}" for q in ('"', "'") for r in CLASSES)
    allowed = (*CLASSES, *quoted, "limits:", "requests:", "resources:", "rayStartParams:")
    if case.style.flow_containers:  # a container list on one line changes as a whole: its fields are compared below
        allowed += tuple(f"{key}:" for key in CONTAINER_LISTS)
    unexpected = [line for line in changed if not line.strip().startswith(allowed)]
    assert not unexpected, f"untouched lines changed: {unexpected}\n--- before\n{case.workload}--- after\n{plain}"
    # An own-line comment stays above the line it was written for (when fix keeps that line).
    for c in case.comments:
        following = _line_after_comment(original, c)
        if following is not None and not following.strip().startswith(allowed):
            got = _line_after_comment(rewritten, c)
            assert got == following, f"# {c} was above {following!r}, now above {got!r}:\n{plain}"

    objects = load_all(plain)
    workloads = [o for o in objects if o["kind"] == case.kind]
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    (workload,) = workloads
    # Every field but the devices and the DRA fields fix writes is as it was (a flow list changes on one line).
    (before,) = load_all(case.workload)
    assert without_devices(workload) == without_devices(before), f"a field changed:\n{case.workload}---\n{plain}"

    # (b) everything emitted or rewritten validates strictly, for 1.34 and 1.36.
    validate(workload)
    for t in templates.values():
        assert t["apiVersion"] == "resource.k8s.io/v1"
        assert t["metadata"].get("namespace", "") == case.namespace
        validate(t)
    check_pods(case, workload, templates)
    return text


def check_pods(
    case: Case, workload: dict[str, Any], templates: dict[str, dict[str, Any]], blocked: frozenset[int] = frozenset()
) -> None:
    """Each pod spec of the fixed workload: no device-plugin request left, the pod's devices per class as the
    scheduler counted them before, each container sees its own, the plugin's toleration explicit, a Ray group's
    num-gpus as KubeRay derived it from the limits."""
    used: set[str] = set()
    params = ray_params(MIGRATED[case.kind], workload)
    for pod, (layout, spec) in enumerate(pod_specs_of(workload)):
        if pod in blocked:  # left whole: the caller compares it with the original
            continue
        by_name = containers_of(layout, spec)
        for name, c in by_name.items():
            for section in ("limits", "requests"):
                left = set((c.get("resources") or {}).get(section) or {}) & set(CLASSES)
                assert not left, f"{name} still asks for {left}"

        # (c) device totals per pod and per device class.
        claims = {
            c["name"]: templates[c["resourceClaimTemplateName"]]
            for c in spec.get("resourceClaims") or []
            if c.get("resourceClaimTemplateName") in templates
        }
        assert len(claims) == len(spec.get("resourceClaims") or []), "a claim names a template not in the file"
        used.update(c["resourceClaimTemplateName"] for c in spec.get("resourceClaims") or [])
        got: dict[str, int] = {}
        for template in claims.values():
            for r in template["spec"]["spec"]["devices"]["requests"]:
                exact = r["exactly"]
                assert exact["allocationMode"] == "ExactCount" and exact["count"] > 0
                got[exact["deviceClassName"]] = got.get(exact["deviceClassName"], 0) + exact["count"]
        expected = case.expected(pod)
        assert got == expected, f"pod {pod}: devices per class before {expected}, after {got}"
        if not expected:
            assert "resourceClaims" not in spec, f"pod {pod}: a claim for zero devices"

        # Each container still sees its devices: app containers and sidecars exactly theirs, plain init containers
        # at least theirs (they reuse the app containers' devices).
        for c in case.in_pod(pod):
            want = {CLASSES[r]: n for r, n in c.counts.items() if n}
            have = seen_by_container(by_name[c.name], claims)
            if c.role == "init":
                assert all(have.get(cls, 0) >= n for cls, n in want.items()), f"{c.name}: wants {want}, sees {have}"
            else:
                assert have == want, f"{c.name}: wants {want}, sees {have}"

        # The ExtendedResourceToleration admission plugin's toleration is explicit, once; existing ones are kept.
        tolerations = spec.get("tolerations") or []
        for t in case.tolerations:
            assert t in tolerations
        for res in {r for c in case.in_pod(pod) for r, n in c.counts.items() if n}:
            wanted = {"key": res, "operator": "Exists", "effect": "NoSchedule"}
            assert tolerations.count(wanted) == 1, f"toleration for {res}: {tolerations}"

        if pod in params:
            assert params[pod] == ray_expected(case, pod), f"pod {pod}: rayStartParams {params[pod]}"
    assert used == set(templates), f"claim templates no pod uses: {set(templates) - used}"


def ray_expected(case: Case, pod: int) -> dict[str, str]:
    """A Ray group's rayStartParams after fix: num-gpus added as KubeRay derives it from the Ray container's limits
    (the first container; the first key in sorted order whose name ends in "gpu" with a non-zero count), unless
    the params set it already."""
    params = {k: v.strip("'") for k, v in case.ray.get(pod, {}).items()}
    ray = next(c for c in case.in_pod(pod) if c.role == "app")
    limits = sorted((r, n) for r, n in ray.counts.items() if ray.placement[r] != "requests")
    first = next((n for r, n in limits if r.endswith("gpu") and n), 0)
    if first and "num-gpus" not in params:
        params["num-gpus"] = str(first)
    return params


# A bounded profile for CI, the same examples on every run (a random failure there cost a CI run five minutes of
# shrinking); DRAMIGRATE_FUZZ=long runs a long random one on demand (failures found there are kept below as
# explicit examples, so CI replays them).
LONG = os.environ.get("DRAMIGRATE_FUZZ") == "long"
SCALE = int(os.environ.get("DRAMIGRATE_FUZZ_SCALE") or 40) if LONG else 1  # examples: SCALE times CI's

COMMON = settings(
    max_examples=50 * SCALE,
    derandomize=not LONG,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# Found by the fuzzer: `claims:` went under the comment written above `tolerations:` (ruamel hangs it on the last
# node of the containers, so its dump adds the key below it).
COMMENT_ABOVE_NEXT_FIELD = Case(
    kind="CronJob",
    name="w0",
    namespace="",
    containers=[
        Container(
            "app-0",
            "app",
            {"amd.com/gpu": 0, "habana.ai/gaudi": 1},
            dict.fromkeys(["amd.com/gpu", "habana.ai/gaudi"], "limits"),
        )
    ],
    style=Style(indent=2, offset=0, newline="\n", quote_counts=False),
    comments=["note-0 keep me"],
    tolerations=[{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
    workload=(
        'apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: w0\nspec:\n  schedule: "0 * * * *"\n  jobTemplate:\n'
        "    spec:\n      template:\n        metadata:\n          labels:\n            app: w0\n        spec:\n"
        "          containers:\n          - name: app-0\n            image: registry.example/app-0:1\n"
        "            resources:\n              limits:\n                amd.com/gpu: 0\n"
        '                habana.ai/gaudi: 1\n                memory: "1Gi"\n'
        '          # note-0 keep me\n          tolerations:\n          - key: "dedicated"\n'
        '            operator: "Equal"\n            value: "ml"\n            effect: "NoSchedule"\n'
        "          restartPolicy: Never\n"
    ),
)


# Found next: when fix removed a requests map that ended right above such a comment, the comment went above the
# claims written in its place.
COMMENT_BELOW_REMOVED_MAP = Case(
    kind="Pod",
    name="w0",
    namespace="",
    containers=[Container("app-2", "app", {"habana.ai/gaudi": 1}, {"habana.ai/gaudi": "both"})],
    style=Style(indent=2, offset=0, newline="\n", quote_counts=False),
    comments=["note-0 keep me"],
    workload=(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w0\nspec:\n  containers:\n  - name: app-2\n"
        "    image: registry.example/app-2:1\n    resources:\n      limits:\n        habana.ai/gaudi: 1\n"
        '        memory: "1Gi"\n      requests:\n        habana.ai/gaudi: 1\n  # note-0 keep me\n'
        "  volumes:\n  - name: scratch\n    emptyDir: {}\n"
    ),
)


# Found next: ruamel writes `+0` back as `0`, so fix could not place the removal of such a line and wrote ruamel's
# whole dump, which drops the comment of the removed requests map.
PLUS_COUNT_REMOVED = Case(
    kind="Pod",
    name="w0",
    namespace="",
    containers=[
        Container("init-0", "init", {"amd.com/gpu": 0}, {"amd.com/gpu": "both"}),
        Container("app-0", "app", {}, {}),
    ],
    style=Style(indent=2, offset=0, newline="\n", quote_counts=False, count_form=len(COUNT_FORMS) - 1),
    comments=["note-0 keep me"],
    workload=(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w0\nspec:\n  initContainers:\n  - name: init-0\n"
        "    image: registry.example/init-0:1\n    resources:\n      limits:\n        amd.com/gpu: +0\n"
        "      # note-0 keep me\n      requests:\n        amd.com/gpu: +0\n  containers:\n  - name: app-0\n"
        '    image: registry.example/app-0:1\n    resources:\n      limits:\n        memory: "1Gi"\n'
    ),
)


# Found by a red team: a `!!binary` value on the document's last line made fix write ruamel's whole dump (the value as
# a fresh `!!binary |` block), so the pod-wide fields added after it had no line to go after.
BINARY_LAST = Case(
    kind="Pod",
    name="w0",
    namespace="",
    containers=[Container("app-0", "app", {"nvidia.com/gpu": 1}, {"nvidia.com/gpu": "limits"}, "!!binary aGVsbG8=")],
    style=Style(indent=2, offset=2, newline="\n", quote_counts=False),
    workload=(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w0\nspec:\n  containers:\n    - name: app-0\n"
        "      image:   registry.example/app-0:1\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n"
        "      env:\n        - name: NOTE\n          value: !!binary aGVsbG8=\n"
    ),
)


# Found by the fuzzer in CI: five containers of 5-8 Gaudis (33 in all) became one claim over the scheduler's 32-device
# limit, and fix refused the pod; a device class over the limit now goes into claims request by request.
CLASS_OVER_CLAIM_LIMIT = Case(
    kind="CronJob",
    name="w0",
    namespace="",
    containers=[
        Container(
            f"{role}-{i}",
            role,
            {"amd.com/gpu": 0, "habana.ai/gaudi": n},
            dict.fromkeys(["amd.com/gpu", "habana.ai/gaudi"], "limits"),
        )
        for role, i, n in [("sidecar", 0, 8), ("sidecar", 1, 5), ("app", 0, 6), ("app", 1, 6), ("app", 2, 8)]
    ],
    style=Style(indent=2, offset=0, newline="\n", quote_counts=False),
)
CLASS_OVER_CLAIM_LIMIT.workload = to_yaml(
    workload_object(
        "CronJob",
        {"name": "w0"},
        {
            "initContainers": [
                _container_yaml(c, CLASS_OVER_CLAIM_LIMIT.style, str) for c in CLASS_OVER_CLAIM_LIMIT.containers[:2]
            ],
            "containers": [
                _container_yaml(c, CLASS_OVER_CLAIM_LIMIT.style, str) for c in CLASS_OVER_CLAIM_LIMIT.containers[2:]
            ],
            "restartPolicy": "Never",
        },
        "w0",
    ),
    CLASS_OVER_CLAIM_LIMIT.style,
    "",
)


def built(kind: str, conts: list[Container], style: Style, ray: dict[int, dict[str, str]] | None = None) -> Case:
    """A Case of kind with these containers, written as the generator writes them (no comments, tolerations or
    documents around it)."""
    case = Case(kind=kind, name="w0", namespace="", containers=conts, style=style, ray=ray or {})
    shape = MIGRATED[kind]
    specs = [
        pod_spec_yaml(
            layout, slot, case.in_pod(slot), style, case, str, {"restartPolicy": "Never"} if slot in shape.jobs else {}
        )
        for slot, layout in enumerate(shape.layouts)
    ]
    case.workload = to_yaml(workload_object(kind, {"name": "w0"}, specs, "w0", case.ray), style, "")
    return case


# Found by the fuzzer (the Ray kinds): KubeRay's num-gpus was read from the limit's text as a float and truncated
# (3.9999, 4 devices for Kubernetes and KubeRay, became num-gpus 3), or not at all for forms a float does not read
# ("4000m": no num-gpus), or as YAML 1.2 reads it (010: 10 where the claim has 8).
def ray_count_case(form: int) -> Case:
    return built(
        "RayCluster",
        [
            Container("app-0", "app", {"nvidia.com/gpu": 1}, {"nvidia.com/gpu": "limits"}),
            Container("p1-app-0", "app", {"amd.com/gpu": 4}, {"amd.com/gpu": "limits"}, pod=1),
        ],
        Style(indent=2, offset=0, newline="\n", quote_counts=False, count_form=form),
    )


RAY_COUNT_FRACTION = ray_count_case(11)  # 3.9999
RAY_COUNT_MILLI = ray_count_case(5)  # "4000m"
RAY_COUNT_OCTAL = ray_count_case(1)  # 04 (and 01)


@COMMON
@given(case=cases(), target=st.sampled_from(["1.34", "1.36"]))
@example(case=CLASS_OVER_CLAIM_LIMIT, target="1.34")
@example(case=COMMENT_ABOVE_NEXT_FIELD, target="1.34")
@example(case=COMMENT_BELOW_REMOVED_MAP, target="1.36")
@example(case=PLUS_COUNT_REMOVED, target="1.34")
@example(case=BINARY_LAST, target="1.36")
@example(case=RAY_COUNT_FRACTION, target="1.36")
@example(case=RAY_COUNT_MILLI, target="1.36")
@example(case=RAY_COUNT_OCTAL, target="1.36")
def test_fix_keeps_devices_validates_and_is_idempotent(case: Case, target: str) -> None:
    raw = case.raw()
    result = run(raw, fix=True, target=target)
    if not any(c.counts for c in case.containers):
        assert result.rewritten is None, "nothing to fix, yet the text changed"
        return
    assert result.rewritten is not None
    text = check_fixed(case, result, target)
    # (a) idempotence: fixing the fixed text changes nothing and finds nothing left to fix.
    again = run(text.encode("utf-8"), fix=True, target=target)
    assert again.rewritten is None, "a second fix changed the text"
    assert not [f for f in again.findings if f.fixable], [f.rule for f in again.findings]


# Found by the fuzzer: a comment after the flush tolerations of an indented document gave the added tolerations
# the comment's column as their neighbour's, so the merge did not parse and fix wrote ruamel's whole dump (every
# toleration re-indented, the comment moved under them).
COMMENT_AFTER_FLUSH_TOLERATIONS = Case(
    kind="Pod",
    name="w",
    namespace="",
    containers=[
        Container(
            "app-2",
            "app",
            {"habana.ai/gaudi": 5, "nvidia.com/gpu": 3},
            {"habana.ai/gaudi": "requests", "nvidia.com/gpu": "limits"},
        )
    ],
    style=Style(indent=4, offset=4, newline="\n", quote_counts=True, toleration_offset=0, count_form=4),
    comments=["note-4 keep me", "note-5 keep me"],
    tolerations=[{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
    workload=(
        "apiVersion: v1\nkind: Pod\nmetadata:\n    name: w\nspec:\n    containers:\n        - name: app-2\n"
        "          image: registry.example/app-2:1\n          resources:\n              limits:\n"
        '                  nvidia.com/gpu: 3.0\n                  memory: "1Gi"\n              # note-4 keep me\n'
        "              requests:\n                  habana.ai/gaudi: 5.0\n    tolerations:\n"
        '    - key: "dedicated"\n      operator: "Equal"\n      value: "ml"\n      effect: "NoSchedule"\n'
        "    # note-5 keep me\n    volumes:\n        - name: scratch\n          emptyDir: {}\n"
    ),
)


# No shrinking here: a failure is reported as found (shrinking these documents takes minutes).
@settings(COMMON, max_examples=20 * SCALE, phases=(Phase.explicit, Phase.generate))
@given(
    case=cases(mixed=True).filter(lambda c: c.tolerations and any(n for x in c.containers for n in x.counts.values()))
)
@example(case=COMMENT_AFTER_FLUSH_TOLERATIONS)
def test_mixed_sequence_styles(case: Case) -> None:
    """Real files mix flush and indented sequences in one document (flush containers, indented tolerations):
    the added toleration must still give valid YAML, and every other line must keep its bytes."""
    check_fixed(case, run(case.raw(), fix=True), "1.36")


@settings(COMMON, max_examples=40 * SCALE)
@given(case=cases())
def test_every_request_is_reported_on_its_line(case: Case) -> None:
    raw = case.raw()
    result = run(raw, fix=False)
    assert result.rewritten is None, "lint must not rewrite"
    lines = raw.decode("utf-8").splitlines()
    findings = [f for f in result.findings if f.rule == "legacy-device-request"]
    want = sorted((c.name, r) for c in case.containers for r in c.counts)
    assert sorted((f.container, f.resource) for f in findings) == want
    for f in findings:
        assert f.fixable and f.kind == case.kind and f.name == case.name and f.namespace == case.namespace
        assert f.resource in lines[f.line - 1], f"line {f.line} is {lines[f.line - 1]!r}, not {f.resource}"
        at = lines[f.line - 1][f.column - 1 :]  # the key, quoted or not
        assert at.startswith(f.resource) or at[1:].startswith(f.resource + at[0]), (f.line, f.column, at)
    assert not [f for f in result.findings if f.severity.value == "error" and not f.fixable]


@settings(COMMON, max_examples=12 * SCALE)
@given(case=cases(forms=(0,)), indent=st.sampled_from([None, 1, 2, 4]))
def test_a_json_manifest_stays_json_and_keeps_its_devices(case: Case, indent: int | None) -> None:
    """A workload written as JSON (counts as numbers, or as strings when quoted) is fixed as JSON: the output
    parses as JSON, validates, gives each container exactly its devices, and a second fix changes nothing."""
    (data,) = load_all(case.workload)
    raw = (json.dumps(data, indent=indent) + "\n").encode()
    result = run(raw, fix=True, path="generated.json")
    if not any(c.counts for c in case.containers):
        assert result.rewritten is None, "nothing to fix, yet the text changed"
        return
    assert result.rewritten is not None
    out = json.loads(result.rewritten)
    objects = out["items"] if out.get("kind") == "List" else [out]
    for o in objects:
        validate(o)
    (workload,) = [o for o in objects if o["kind"] == case.kind]
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    check_pods(case, workload, templates)
    assert without_devices(workload) == without_devices(data), "a field other than the devices changed"
    again = run(result.rewritten.encode(), fix=True, path="generated.json")
    assert again.rewritten is None, "a second fix changed the text"


# -- counts Kubernetes refuses: the pod is left whole --------------------------------------------------------

# Values the API server refuses for an extended resource (a fraction, negative, past int64 thousandths, not a
# quantity, a boolean), each as it stands in the file.
REFUSED = (
    "2.5",
    "-1",
    "0.5",
    "1.0001",
    "1e-3",
    ".5",
    '"2_000m"',
    "9223372036854775808",
    "yes",
    "0x1.8p1",
    '"two"',
    "'1.5'",
    "1.5e0",
)


@st.composite
def refused_cases(draw: st.DrawFn) -> tuple[Case, Container, str]:
    """A workload one of whose device values (in one container of one pod spec) Kubernetes refuses."""
    case = draw(cases().filter(lambda c: any(n for x in c.containers for n in x.counts.values())))
    victim = draw(st.sampled_from([c for c in case.containers if any(c.counts.values())]))
    res = draw(st.sampled_from(sorted(r for r, n in victim.counts.items() if n)))
    victim.bad[res] = draw(st.sampled_from(REFUSED))
    return built(case.kind, case.containers, case.style, case.ray), victim, res


@settings(COMMON, max_examples=12 * SCALE)
@given(refused=refused_cases())
def test_a_count_kubernetes_refuses_leaves_its_pod_whole(refused: tuple[Case, Container, str]) -> None:
    """A device value the API server refuses is an invalid-count finding on its line, and fix leaves that pod
    spec exactly as it was (never half-migrated); the object's other pod specs are migrated as ever."""
    case, victim, res = refused
    raw = case.raw()
    lint = run(raw, fix=False)
    bad = [f for f in lint.findings if f.rule == "invalid-count"]
    assert (victim.name, res) in {(f.container, f.resource) for f in bad}, [f.message for f in lint.findings]
    result = run(raw, fix=True)
    text = result.rewritten if result.rewritten is not None else raw.decode()
    objects = load_all(text)
    (before,) = load_all(case.workload)
    (workload,) = [o for o in objects if o["kind"] == case.kind]
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    assert pod_specs_of(workload)[victim.pod] == pod_specs_of(before)[victim.pod], "the refused pod changed"
    params = ray_params(MIGRATED[case.kind], workload)
    if victim.pod in params:
        assert params[victim.pod] == ray_params(MIGRATED[case.kind], before)[victim.pod]
    for t in templates.values():  # the workload keeps the refused value: the API server refuses it as before
        validate(t)
    check_pods(case, workload, templates, blocked=frozenset({victim.pod}))
    if result.rewritten is not None:
        assert run(result.rewritten.encode(), fix=True).rewritten is None, "a second fix changed the text"


# -- kinds the packs only report ---------------------------------------------------------------------------


@st.composite
def reported_cases(draw: st.DrawFn) -> tuple[str, str, list[Container]]:
    """A workload of a kind the packs report and never rewrite: (kind, text, its containers)."""
    kind = draw(st.sampled_from(sorted(REPORTED)))
    shape = REPORTED[kind]
    style = draw(cases()).style
    bare = "{containers:0}" in str(shape.body)  # a serving runtime: a bare container list, no init containers
    conts = [
        c
        for pod, layout in enumerate(shape.layouts)
        for c in draw(pod_containers(layout, pod, 3))
        if not bare or c.role == "app"
    ]
    case = Case(kind=kind, name="w0", namespace="", containers=conts, style=style)
    specs = [
        pod_spec_yaml(
            layout, slot, case.in_pod(slot), style, case, str, {"restartPolicy": "Never"} if slot in shape.jobs else {}
        )
        for slot, layout in enumerate(shape.layouts)
    ]
    case.workload = to_yaml(workload_object(kind, {"name": "w0"}, specs, "w0", kinds=REPORTED), style)
    return kind, case.raw().decode(), conts


@settings(COMMON, max_examples=15 * SCALE)
@given(reported=reported_cases())
def test_a_kind_the_packs_only_report_is_reported_and_never_rewritten(
    reported: tuple[str, str, list[Container]],
) -> None:
    """Knative and Volcano workloads, serverless KServe, serving and training runtimes: every device request is
    a report-only-kind warning on its container, none is an error (lint stays green), and fix writes nothing."""
    kind, text, conts = reported
    lint = run(text.encode(), fix=False)
    found = sorted((f.container, f.resource) for f in lint.findings if f.rule == "report-only-kind")
    assert found == sorted((c.name, r) for c in conts for r in c.counts), [f.message for f in lint.findings]
    assert not [f.rule for f in lint.findings if f.severity.value == "error"]
    assert run(text.encode(), fix=True).rewritten is None, f"{kind} was rewritten"


# -- lint, diff and fix agree, as the CLI runs them ---------------------------------------------------------


def cli(*args: str) -> tuple[int, bytes]:
    """dramigrate ARGS in process: (exit code, standard output's bytes)."""
    from typer.testing import CliRunner

    from dramigrate.cli import app

    out = CliRunner().invoke(app, list(args))
    assert out.exit_code in (0, 1), f"dramigrate {' '.join(args)}: exit {out.exit_code}\n{out.output}"
    return out.exit_code, out.stdout_bytes


# No shrinking here: four CLI runs an example make it slow (a failure is reported as found).
@settings(COMMON, max_examples=6 * SCALE, phases=(Phase.explicit, Phase.generate))
@given(case=cases(), as_json=st.booleans())
def test_lint_diff_and_fix_agree(case: Case, as_json: bool) -> None:
    """Through the CLI: lint exits 1 exactly when fix changes the file, `diff --check` likewise, diff's patch
    applied to the file gives what fix writes, and after fix lint and `diff --check` exit 0."""
    # PyYAML (load_all) reads 0_8 as text where go-yaml reads the float 8: such a count does not go into JSON as it is
    assume(not as_json or not re.search(r":\s*0_[89]", case.workload))
    with tempfile.TemporaryDirectory(prefix="dramigrate-agree-") as top:
        path = Path(top) / ("w.json" if as_json else "w.yaml")
        raw = (json.dumps(load_all(case.workload)[0], indent=2) + "\n").encode() if as_json else case.raw()
        path.write_bytes(raw)
        lint, _ = cli("lint", str(path))
        check, _ = cli("diff", "--check", str(path))
        _, patch = cli("diff", str(path))
        fix, _ = cli("fix", str(path))
        fixed = path.read_bytes()
        changed = fixed != raw
        assert lint == int(changed), f"lint exit {lint}, fix changed the file: {changed}"
        assert check == int(changed), f"diff --check exit {check}, fix changed the file: {changed}"
        assert fix == 0
        copy = Path(top) / "copy"
        copy.mkdir()
        (copy / path.name).write_bytes(raw)
        if patch:
            import subprocess

            subprocess.run(["patch", "-s", str(copy / path.name)], input=patch, check=True)
        assert (copy / path.name).read_bytes() == fixed, "diff's patch is not what fix wrote"
        assert cli("lint", str(path))[0] == 0 and cli("diff", "--check", str(path))[0] == 0


# -- anchors and merge keys ------------------------------------------------------------------------------


SHARING = ("alias", "alias-limits", "merge-resources", "merge-container")


SHARED_KINDS = ("Pod", "Deployment", "Job", "CronJob", "StatefulSet", "PyTorchJob", "RayCluster", "JobSet")


@st.composite
def shared_pods(draw: st.DrawFn) -> tuple[str, dict[str, int]]:
    """A workload (its first pod spec) whose containers share one resources map through an anchor (of resources or
    of its limits), a merge key in resources, or a merge key of the whole container; a container that merges may
    override the shared limits with its own count: (text, container -> the devices Kubernetes gives it)."""
    n = draw(st.integers(2, 4))
    count = draw(st.integers(1, 4))
    form = COUNT_FORMS[draw(st.sampled_from(range(len(COUNT_FORMS))))]
    how = draw(st.sampled_from(SHARING))
    kind = draw(st.sampled_from(SHARED_KINDS))
    lines = ["containers:"]
    if how == "merge-container":
        lines += ["- &c0", "  name: c0"]
    else:
        lines += ["- name: c0"]
    lines += ["  image: app:1  # keep me"]
    if how == "alias-limits":
        lines += ["  resources:", "    limits: &r"]
    else:
        lines += ["  resources: &r", "    limits:"]
    lines += [f"      nvidia.com/gpu: {form(count)}", "      memory: 1Gi"]
    seen = {"c0": count}
    for i in range(1, n):
        own = draw(st.none() | st.integers(0, 4)) if how.startswith("merge") else None
        override = ["    limits:", f"      nvidia.com/gpu: {form(own)}"] if own is not None else []
        seen[f"c{i}"] = count if own is None else own
        if how == "alias":
            lines += [f"- name: c{i}", "  image: app:1", "  resources: *r"]
        elif how == "alias-limits":
            lines += [f"- name: c{i}", "  image: app:1", "  resources:", "    limits: *r"]
        elif how == "merge-resources":
            lines += [f"- name: c{i}", "  image: app:1", "  resources:", "    <<: *r", *override]
        else:
            lines += ["- <<: *c0", f"  name: c{i}", *(["  resources:", *override] if override else [])]
    if 0 in MIGRATED[kind].jobs:
        lines += ["restartPolicy: Never"]
    # The kind's other pod specs ask for no device; the first one's text goes where its marker is.
    others = [{"containers": [{"name": "other", "image": "other:1"}]} for _ in MIGRATED[kind].layouts[1:]]
    skeleton = workload_object(kind, {"name": S("shared  # keep me")}, [{"@": "@"}, *others], "shared")
    indent = draw(st.sampled_from([2, 4]))
    style = Style(indent=indent, offset=draw(st.sampled_from([0, 2, indent])), newline="\n", quote_counts=False)
    out = []
    for line in to_yaml(skeleton, style).splitlines():
        if line.strip() == "@: @":
            pad = " " * (len(line) - len(line.lstrip()))
            out += [pad + x for x in lines]
        else:
            out.append(line)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(out) + newline, seen


def without_devices(obj: Any) -> Any:
    """The object less its device-plugin requests and the DRA fields fix writes (claims, tolerations of the
    device resources), empty maps left behind dropped: what must be equal before and after fix."""
    if isinstance(obj, list):
        kept = [without_devices(x) for x in obj if not (isinstance(x, dict) and x.get("key") in CLASSES)]
        return [x for x in kept if x not in ({}, [])]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if k in CLASSES or k in ("claims", "resourceClaims", "num-gpus"):  # num-gpus: checked in check_pods
            continue
        v = without_devices(v)
        if v not in ({}, []):
            out[k] = v
    return out


# Found by the fuzzer: a document indented by four whose containers are indented by two inside (a pasted
# snippet), its limits shared through an anchor with a tagged count: the unshared `limits:` took the dump's column,
# so the merge did not parse back and the whole dump, which cannot keep the tag, was refused as bad input.
MIXED_INDENT_SHARED_TAGGED = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n    name: shared  # keep me\nspec:\n    containers:\n    - name: c0\n"
    "      image: app:1  # keep me\n      resources:\n        limits: &r\n          nvidia.com/gpu: !!int 1\n"
    "          memory: 1Gi\n    - name: c1\n      image: app:1\n      resources:\n        limits: *r\n"
)


# Found next by the long profile: a container anchored whole (`- &c0`, then `name:`) in a flush container list
# inside a document whose other sequences are indented; the unshared container's `- name: c0` took the dump's column.
FLUSH_ANCHORED_CONTAINER_TAGGED = (
    "apiVersion: jobset.x-k8s.io/v1alpha2\n"
    "kind: JobSet\n"
    "metadata:\n"
    "  name: shared  # keep me\n"
    "spec:\n"
    "  replicatedJobs:\n"
    "    - name: leader\n"
    "      replicas: 1\n"
    "      template:\n"
    "        spec:\n"
    "          template:\n"
    "            metadata:\n"
    "              labels:\n"
    "                app: shared\n"
    "            spec:\n"
    "              containers:\n"
    "              - &c0\n"
    "                name: c0\n"
    "                image: app:1  # keep me\n"
    "                resources: &r\n"
    "                  limits:\n"
    "                    nvidia.com/gpu: !!int 1\n"
    "                    memory: 1Gi\n"
    "              - <<: *c0\n"
    "                name: c1\n"
    "              restartPolicy: Never\n"
    "    - name: workers\n"
    "      replicas: 1\n"
    "      template:\n"
    "        spec:\n"
    "          template:\n"
    "            metadata:\n"
    "              labels:\n"
    "                app: shared\n"
    "            spec:\n"
    "              containers:\n"
    "                - name: other\n"
    "                  image: other:1\n"
)


@settings(COMMON, max_examples=15 * SCALE)
@given(case=shared_pods())
@example(case=(MIXED_INDENT_SHARED_TAGGED, {"c0": 1, "c1": 1}))
@example(case=(FLUSH_ANCHORED_CONTAINER_TAGGED, {"c0": 1, "c1": 1}))
def test_shared_resources_keep_each_containers_own_devices(case: tuple[str, dict[str, int]]) -> None:
    text, seen = case
    result = run(text.encode(), fix=True)
    assert result.rewritten is not None
    if "\r\n" in text:
        assert result.rewritten.count("\n") == result.rewritten.count("\r\n"), "mixed line endings after fix"
    objects = [d for d in yaml.safe_load_all(result.rewritten) if d is not None]
    (pod,) = [o for o in objects if o["kind"] != "ResourceClaimTemplate"]
    claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    validate(pod)
    for t in claims.values():
        validate(t)
    spec = pod_specs_of(pod)[0][1]
    by_claim = {c["name"]: claims[c["resourceClaimTemplateName"]] for c in spec.get("resourceClaims") or []}
    for c in spec["containers"]:
        left = set((c.get("resources") or {}).get("limits") or {}) & set(CLASSES)
        assert not left, f"{c['name']} keeps a device-plugin request"
        want = {"gpu.nvidia.com": seen[c["name"]]} if seen[c["name"]] else {}
        assert seen_by_container(c, by_claim) == want, c["name"]
    assert without_devices(pod) == without_devices(yaml.safe_load(text)), "a field other than the devices changed"
    assert result.rewritten.count("# keep me") == 2
    assert run(result.rewritten.encode(), fix=True).rewritten is None, "a second fix changed the text"


# -- the engine's count reader (_dramigrate.tpl) against the core's ---------------------------------------


@cache
def count_chart() -> Path:
    """A chart whose one template prints the engine helper's count of `.Values.c` (built once per session)."""
    from dramigrate.helm.engine import helper_text, prefix

    root = Path(tempfile.mkdtemp(prefix="dramigrate-count-chart-")) / "counts"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: counts\nversion: 0.1.0\n")
    (root / "templates" / "_dramigrate.tpl").write_text(helper_text("counts", rules(), Settings()))
    (root / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n"
        f'  n: "{{{{ include "{prefix("counts")}.count" .Values.c }}}}"\n'
    )
    return root


quantity_texts = st.one_of(
    st.builds(
        lambda sign, whole, frac, tail, pad: f"{pad}{sign}{whole}{frac}{tail}{pad}",
        st.sampled_from(["", "+", "-"]),
        st.integers(0, 10**6).map(str) | st.sampled_from(["010", "0", "00"]),
        st.sampled_from(["", ".", ".0", ".00", ".5", ".25", ".000"]),
        st.sampled_from(["", "m", "k", "M", "u", "n", "e0", "e3", "E2", "e-1", "e-3", "e+2", "Ki", "e17", "e-12"]),
        st.sampled_from(["", " "]),
    ),
    st.text(alphabet="0123456789.+-eEmkiKM ", max_size=6),
)
# The tpl fails where Kubernetes accepts these: no digit before the point (".5", "-", "e3"), binary suffixes ("1Ki").
UNSUPPORTED = re.compile(r"\s*[+-]?([^0-9]|$|[0-9.]*[KMGTPE]i\s*$)")


@settings(COMMON, max_examples=25 * SCALE, phases=(Phase.explicit, Phase.generate))
@given(value=quantity_texts | st.integers(-3, 2**53) | st.floats(-3, 1e16, allow_nan=False))
# Values that once slipped through the tpl's old `^[0-9]+$` (the device was silently left on the device plugin)
# and forms Kubernetes reads differently from a plain integer: kept as explicit regression examples.
@example(value="2.0")
@example(value="2000m")
@example(value="1e3")
@example(value="+2")
@example(value=" 3 ")
@example(value="010")
@example(value=2.0)
@example(value="2500m")
@example(value=-1)
@example(value="9223372036854776")
@example(value=0.99999)  # Kubernetes rounds thousandths up: 1 (the tpl refused it)
@example(value="0.9999")
@example(value=0.999)
@example(value="1.0009999")
@example(value="9223372036854774.9999")
def test_engine_counts_are_read_as_kubernetes_reads_them(value: Any) -> None:
    from dramigrate.helm.render import HelmError, RenderOptions, render_chart
    from dramigrate.quantity import count_of

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"c": value}, handle)
    try:
        try:
            [manifest] = render_chart(count_chart(), RenderOptions(values_files=(Path(handle.name),)))
            got: int | None = int(yaml.safe_load(manifest.text)["data"]["n"])
        except HelmError as exc:
            assert "dramigrate: a device count is not a whole number" in str(exc), str(exc)
            got = None
    finally:
        os.unlink(handle.name)
    want = count_of(value, json.dumps(value))
    if got is not None:
        assert want.ok and got == want.value, f"{value!r}: the tpl reads {got}, Kubernetes {want.shown or want.problem}"
    else:
        assert not want.ok or (isinstance(value, str) and UNSUPPORTED.match(value)), (
            f"{value!r}: Kubernetes reads {want.value}, the tpl fails the render"
        )


# -- failing examples kept (tests/data/fuzz-regressions/README.md) ----------------------------------------

REGRESSIONS = Path(__file__).parent / "data" / "fuzz-regressions"


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.yaml")), ids=lambda p: p.stem)
def test_fuzz_regressions(path: Path) -> None:
    raw = path.read_bytes()
    header = dict(
        line[2:].split(": ", 1) for line in raw.decode().splitlines() if line.startswith(("# found: ", "# expect: "))
    )
    expect = json.loads(header["expect"])
    result = run(raw, fix=True)
    if expect is None:
        assert result.rewritten is None, "the pod must be left whole"
        assert any(f.rule == "invalid-count" for f in result.findings)
        return
    assert result.rewritten is not None
    objects = [d for d in yaml.safe_load_all(result.rewritten) if d is not None]
    claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    (workload,) = [o for o in objects if o["kind"] != "ResourceClaimTemplate"]
    for o in objects:
        validate(o)
    ((_, spec),) = pod_specs_of(workload)
    by_claim = {c["name"]: claims[c["resourceClaimTemplateName"]] for c in spec.get("resourceClaims") or []}
    seen = {c["name"]: seen_by_container(c, by_claim) for c in spec["containers"]}
    assert seen == expect
    for c in spec["containers"]:
        for section in ("limits", "requests"):
            left = {k: v for k, v in ((c.get("resources") or {}).get(section) or {}).items() if k in CLASSES and v}
            assert not left, f"{c['name']} keeps device-plugin requests {left}"
    for comment in re.findall(r"#\s*(keep me)", raw.decode()):
        assert comment in result.rewritten
    assert run(result.rewritten.encode(), fix=True).rewritten is None, "a second fix changed the text"
