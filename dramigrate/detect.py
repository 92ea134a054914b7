"""Detect: findings on one parsed document, and the device uses that `fix` can rewrite."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from dramigrate.config import Settings
from dramigrate.crds import load_crds, pruned_fields
from dramigrate.documents import Document
from dramigrate.fastyaml import seen
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.quantity import Count, device_count, plain_source
from dramigrate.ray import RayLimit
from dramigrate.rules import ResourceMatch, RuleSet, WorkloadKind, resource_name_problem, shown_origin
from dramigrate.selectors import Selection, select
from dramigrate.suppress import IGNORE, Suppressions, rules_named, source_lines
from dramigrate.triage import KUBESPAWNER_KEYS
from dramigrate.validate import MAX_DEVICES_PER_CLAIM
from dramigrate.versions import Target
from dramigrate.workloads import ContainerRef, PodSpecRef, containers, pod_metadata, pod_specs, resolve

# why a plain device resource is reported shared when a node label the pod is pinned to says so (GFD's -SHARED)
SHARED_BY_LABEL = "shared (the pod is pinned to, or tolerates, a -SHARED or -MIG- product label)"

IGNORE_ANNOTATION = "dramigrate.io/ignore"
REPLICATED_KINDS = {
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
    "Job",
    "CronJob",
    "JobSet",
    "LeaderWorkerSet",
}


@dataclass
class ObjectInfo:
    """Identity of one Kubernetes object inside a document (a document, or an item of a List)."""

    obj: Any
    api_version: str
    kind: str
    name: str
    namespace: str
    generate_name: str
    path: str  # "" for the document itself, items[3] for an item of a List

    @property
    def annotations(self) -> dict[str, Any]:
        meta = self.obj.get("metadata")
        ann = meta.get("annotations") if isinstance(meta, dict) else None
        return ann if isinstance(ann, dict) else {}


@dataclass
class DeviceUse:
    container: ContainerRef
    resource: str
    match: ResourceMatch
    count: int
    line: int
    column: int


@dataclass
class PodAnalysis:
    info: ObjectInfo
    ref: PodSpecRef
    kind: WorkloadKind
    uses: list[DeviceUse] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # the legacy-device-request ones, one per use
    selection: Selection | None = None  # node-label hacks and tolerations, translated
    ray_limits: list[RayLimit] = field(default_factory=list)  # the Ray container's limits, for KubeRay groups
    ray_accelerators: frozenset[str] = frozenset()  # Ray resources KubeRay makes of accelerators (TPU, ...)
    align: dict[str, str] = field(default_factory=dict)  # container path -> GPU/NIC alignment: preferred|required
    plugin_tolerations: bool = True  # write out what ExtendedResourceToleration added (extended-resource-toleration)
    drop_annotations: list[str] = field(default_factory=list)  # pod-template annotations fix removes (SR-IOV)


def objects_of(data: Any, of_list: tuple[str, str] | None = None) -> list[ObjectInfo]:
    """The objects of a document as kubectl reads them (apimachinery's unstructured decoder): any object holding an
    `items` list is a list of them (`kind: List`, `PodList`, or another kind), and an item with neither kind nor
    apiVersion takes the list's kind less `List` and the list's apiVersion (of_list: that kind and apiVersion)."""
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("items"), list):
        out = []
        kind, api_version = _text(data.get("kind")), _text(data.get("apiVersion"))
        for i, item in enumerate(data["items"]):
            for o in objects_of(item, (kind.removesuffix("List"), api_version)):
                o.path = f"items[{i}]"
                out.append(o)
        return out
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    kind, api_version = str(data.get("kind", "")), str(data.get("apiVersion", ""))
    if of_list and not _text(data.get("kind")) and not _text(data.get("apiVersion")):
        kind, api_version = of_list
    return [
        ObjectInfo(
            obj=data,
            api_version=api_version,
            kind=kind,
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            generate_name=str(meta.get("generateName") or ""),
            path="",
        )
    ]


def _text(value: Any) -> str:
    """A kind or apiVersion as apimachinery reads it: a string, else none."""
    return value if isinstance(value, str) else ""


# a request in a container of a pod spec dramigrate does not know: that pod's own, not merged into another
_OWN_POD_CONTAINER = re.compile(r"(^|\.)(initContainers|containers|ephemeralContainers)\[\d+\]\.resources$")


class Detector:
    """Findings for one file. Keeps the file's ResourceClaimTemplates to check existing DRA wiring."""

    def __init__(
        self, path: str, rules: RuleSet, settings: Settings, target: Target, claim_templates: dict[str, set[str]]
    ):
        self.path = path
        self.rules = rules
        self.settings = settings
        self.target = target
        self.claim_templates = claim_templates  # "<namespace>/<name>" -> device classes
        self.suppressions = Suppressions()  # block and file-level comments (suppress.py), set by the caller
        self._lines: tuple[Document | None, list[str]] = (None, [])  # the source lines of the document in hand
        self.decisions: list[str] = []  # --verbose: which rule and workload path matched, what was suppressed
        self.suppressed: list[Finding] = []  # findings a comment suppressed (kustomize leaves their graph alone)

    def finding(
        self, rule: str, message: str, doc: Document, node: Any, key: Any, info: ObjectInfo | None, **extra: Any
    ) -> Finding:
        line, column = doc.line_of(node, key)
        f = Finding(
            rule=rule, severity=RULES[rule][0], message=message, file=self.path, line=line, column=column, **extra
        )
        if info is not None:
            f.kind, f.name, f.namespace = info.kind, info.name or info.generate_name, info.namespace
        return f

    def ignored(self, doc: Document, line: int, rule: str) -> bool:
        why = self.suppressions.reason(line, rule)
        lines = self.lines_of(doc)
        for n in (line, line - 1) if not why else ():
            idx = n - doc.start_line
            if 0 <= idx < len(lines):
                m = IGNORE.search(lines[idx])  # a comment's, not a string's (an argument Kubernetes passes)
                if (
                    m
                    and self.suppressions.is_directive(lines[idx], n, m.start())
                    and (not m.group(1) or rule in rules_named(m.group(1)))
                ):
                    why = f"the `# dramigrate: ignore` comment on line {n}"
                    break
        if why:
            self.decisions.append(f"{self.path}:{line}: [{rule}] not reported and not rewritten: suppressed by {why}")
        return bool(why)

    # -- pod specs ---------------------------------------------------------------------------------

    def analyze(self, doc: Document) -> tuple[list[Finding], list[PodAnalysis]]:
        findings: list[Finding] = []
        pods: list[PodAnalysis] = []
        for info in objects_of(doc.data):
            if IGNORE_ANNOTATION in info.annotations:
                self.decisions.append(
                    f"{self.path}: {info.kind}/{info.name}: skipped: annotated {IGNORE_ANNOTATION} "
                    f"({info.annotations[IGNORE_ANNOTATION]})"
                )
                continue
            kind = self.rules.workload(info.api_version, info.kind)
            covered: dict[int, dict[str, Any]] = {}  # id -> each resources block analyze_pod read
            mine: list[PodAnalysis] = []
            if kind is not None:
                for ref in pod_specs(info.obj, kind):
                    pa = self.analyze_pod(doc, info, kind, ref, findings, covered)
                    if pa.uses:
                        mine.append(pa)
            stray = self.stray_requests(doc, info, kind, covered)
            beside = self._beside_pods(stray, info, kind) if mine else ""
            for pa in mine:
                if beside:  # claims beside what the object merges into its pods could ask for a device twice
                    findings.extend(
                        f.recast(
                            "legacy-device-request",
                            f"{use.resource}: {use.count} is a device-plugin request, but fix leaves this pod as it "
                            f"is: {beside}, and a pod is migrated whole or not at all",
                        )
                        for use, f in zip(pa.uses, pa.findings, strict=True)
                    )
                    continue
                pods.append(pa)
                findings.extend(pa.findings)
            findings.extend(stray)
        findings, pods = self._suppressed_whole(doc, findings, pods)
        for pa in pods:
            findings.extend(self.selection(doc, pa))
        firsts: dict[int, PodAnalysis] = {}  # each object's first pod (a List of 10,000 pods: one pass, not 10,000)
        for pa in pods:
            firsts.setdefault(id(pa.info.obj), pa)
        for first in firsts.values():
            if (f := self.operator_version(doc, first)) is not None:
                findings.append(f)
        hidden = [f for f in findings if self.ignored(doc, f.line, f.rule)]
        self.suppressed.extend(hidden)
        gone = {id(f) for f in hidden}
        findings = [f for f in findings if id(f) not in gone]
        kept = {id(f) for f in findings}
        for pa in pods:
            pa.uses = [u for u, f in zip(pa.uses, pa.findings, strict=True) if id(f) in kept]
            pa.findings = [f for f in pa.findings if id(f) in kept]
        return findings, [pa for pa in pods if pa.uses]

    def _suppressed_whole(
        self, doc: Document, findings: list[Finding], pods: list[PodAnalysis]
    ) -> tuple[list[Finding], list[PodAnalysis]]:
        """A pod one of whose device requests a comment suppresses (`# dramigrate: ignore`) stays as it is, whole:
        that request stays on the device plugin, and claims for the others beside it would need a node serving the
        same devices through both, which none does. (findings, the pods fix migrates)."""
        out: list[PodAnalysis] = []
        for pa in pods:
            quiet = [(u, f) for u, f in zip(pa.uses, pa.findings, strict=True) if self.ignored(doc, f.line, f.rule)]
            if not quiet:
                out.append(pa)
                continue
            self.suppressed.extend(f for _, f in quiet)
            mine = {id(f) for f in pa.findings}
            findings = [f for f in findings if id(f) not in mine]
            use = quiet[0][0]
            findings.extend(
                f.recast(
                    "legacy-device-request",
                    f"{u.resource}: {u.count} is a device-plugin request, but fix leaves this pod as it is: container "
                    f"{use.container.name}'s {use.resource} is suppressed (line {quiet[0][1].line}) and stays on the "
                    "device plugin, and a pod is migrated whole or not at all",
                )
                for u, f in zip(pa.uses, pa.findings, strict=True)
                if all(f is not g for _, g in quiet)
            )
            pa.uses, pa.findings = [], []
        return findings, out

    def selection(self, doc: Document, pa: PodAnalysis) -> list[Finding]:
        """Translate the pod's node-label hacks and device tolerations for the classes its claims will use."""
        out: list[Finding] = []
        uses = [u for u in pa.uses if u.count > 0]
        ctx = {
            "kind": pa.info.kind,
            "namespace": pa.info.namespace,
            "name": pa.info.name,
            "pod_template_path": pa.ref.path,
        }

        def report(rule: str, message: str, node: Any, key: Any) -> None:
            f = self.finding(rule, message, doc, node, key, pa.info)
            f.pod_template_path = pa.ref.path
            out.append(f)

        classes = {u.match.rule.device_class for u in uses}
        sel = select(
            pa.ref.spec,
            classes,
            self.rules,
            report,
            remove_pool_labels=self.settings.remove_node_selectors,
            prioritized_list=self.target.enabled("DRAPrioritizedList"),
            drop_tolerations=self.settings.drop_tolerations,
            removed_resources={u.resource for u in pa.uses},
            removed_taints=self.settings.removed_taints,
        )
        for cls in list(sel.alternatives):
            if sum(1 for u in uses if u.match.rule.device_class == cls) != 1:
                report(
                    "preference-lost",
                    f"preferred node affinity between models of {cls}: several requests of "
                    "that class would each choose on their own; left on the pod, not translated",
                    pa.ref.spec,
                    "affinity",
                )
                del sel.alternatives[cls]
                sel.drop_preferred = []
        out.extend(self.alignment(doc, pa, uses, sel, ctx))
        out.extend(self.topology_lost(doc, pa, ctx))
        pa.selection = sel
        return out

    def alignment(
        self, doc: Document, pa: PodAnalysis, uses: list[DeviceUse], sel: Selection, ctx: dict[str, str]
    ) -> list[Finding]:
        """Which containers' GPUs and NICs get a PCIe-root constraint (`pa.align`), and an info finding for each
        container whose GPUs and NICs stay unaligned. The device plugin never aligned them, and a matchAttribute
        constraint never chooses a device without the attribute (drivers publish pcieRoot only when available),
        so alignment is opt-in: --align-nics preferred (firstAvailable: aligned, else any) or required."""
        from dramigrate.plan import topology_shape

        out: list[Finding] = []
        mode = self.settings.align_nics
        plain_init = any(u.container.init and not u.container.sidecar for u in uses)
        by_container: dict[str, list[DeviceUse]] = {}
        for u in uses:
            by_container.setdefault(u.container.path, []).append(u)
        for path, cuses in by_container.items():
            if not any(u.match.rule.nic for u in cuses) or all(u.match.rule.nic for u in cuses):
                continue
            asks = ", ".join(f"{x.count} {x.resource}" for x in cuses)
            shape = topology_shape(cuses)
            why = ""
            if shape is None:
                why = "not N devices with k*N NICs of each kind, so no PCIe-root constraint pairs them"
            elif mode == "off":
                why = (
                    "they keep the device plugin's placement, with no PCIe-root constraint (GPU and NICs may sit "
                    "under different PCIe roots); --align-nics preferred pairs each GPU with its NICs under one "
                    "PCIe root when the node allows it, --align-nics required always (a device without "
                    "resource.kubernetes.io/pcieRoot is then never chosen)"
                )
            elif plain_init:
                why = "the pod has a plain init container that reuses devices, so no PCIe-root constraint pairs them"
            elif mode == "preferred" and not self.target.enabled("DRAPrioritizedList"):
                why = (
                    f"--align-nics preferred needs firstAvailable, which Kubernetes {self.target.text} does not "
                    "have on by default (1.34 and later), so they stay unaligned; --align-nics required pairs them"
                )
            elif mode == "preferred" and shape[0].match.rule.device_class in sel.alternatives:
                why = (
                    "the preferred node affinity between models already makes the request a firstAvailable list, "
                    "so they stay unaligned; --align-nics required pairs them"
                )
            else:
                pa.align[path] = mode
                gpu = shape[0]
                if gpu.count > 1 and gpu.match.rule.device_class in sel.alternatives:
                    out.append(
                        self.finding(
                            "preference-lost",
                            f"preferred node affinity between models of {gpu.match.rule.device_class}: the "
                            f"{gpu.count} GPUs are paired with NICs one by one, and each pair would choose its "
                            "model on its own; left on the pod, not translated",
                            doc,
                            pa.ref.spec,
                            "affinity",
                            pa.info,
                            **ctx,
                        )
                    )
                    del sel.alternatives[gpu.match.rule.device_class]
                    sel.drop_preferred = []
                continue
            u = cuses[0]
            out.append(
                self.finding(
                    "topology-unaligned",
                    f"container {u.container.name} asks for {asks}: {why}",
                    doc,
                    u.container.container,
                    "resources",
                    pa.info,
                    **ctx,
                    container=u.container.name,
                )
            )
        return out

    def topology_lost(self, doc: Document, pa: PodAnalysis, ctx: dict[str, str]) -> list[Finding]:
        """Info findings where the device plugin placed devices with topology in mind and a claim does not (B6)."""
        from dramigrate.topology import lost_alignment

        return [
            self.finding(
                "topology-lost",
                f"{what}. The claim keeps the device count, not that placement; if the "
                "workload depends on it, add a matchAttribute constraint on a topology attribute the driver "
                "publishes (resource.kubernetes.io/pcieRoot) to the ResourceClaimTemplate",
                doc,
                ctr.container,
                "resources",
                pa.info,
                **ctx,
                container=ctr.name,
            )
            for ctr, what in lost_alignment(pa)
        ]

    def analyze_pod(
        self,
        doc: Document,
        info: ObjectInfo,
        kind: WorkloadKind,
        ref: PodSpecRef,
        findings: list[Finding],
        covered: dict[int, dict[str, Any]],
    ) -> PodAnalysis:
        pa = PodAnalysis(info, ref, kind, plugin_tolerations=self.settings.extended_resource_toleration)
        if ref.location.ray_start_params:
            pa.ray_limits = self.ray_limits(doc, ref.spec)
            pa.ray_accelerators = frozenset(r.ray_resource for r in self.rules.resources if r.ray_resource)
        accepts = kind.accepts(info.annotations)
        pruned = self.crd_pruned(info, kind)
        pod_claims = {str(c.get("name")): c for c in ref.spec.get("resourceClaims") or [] if isinstance(c, dict)}
        shared_by_label = self.shared_product_label(ref.spec)
        ctx = {
            "kind": info.kind,
            "namespace": info.namespace,
            "name": info.name or info.generate_name,
            "pod_template_path": ref.path,
        }
        blocked: list[str] = []  # containers whose count cannot be migrated: the pod is then left whole
        for c in containers(ref, kind):
            resources = c.container.get("resources")
            if not isinstance(resources, dict):
                continue
            covered[id(resources)] = resources
            findings.extend(self.existing_claims(doc, info, ref, c, resources, pod_claims, ctx))
            entries = self.device_entries(resources)
            # A whole device beside a slice of the same vendor's device (nvidia.com/gpu with HAMi's
            # nvidia.com/gpumem) is a share of one device: rewriting it would make it exclusive.
            slices = {
                r.split("/")[0]: r
                for r in entries
                if (m := self.rules.lookup(r)) and m.rule.report_only not in ("", "config")  # a VF is no GPU slice
            }
            for res, (_value, holder) in entries.items():
                where = {**ctx, "container": c.name, "resource": res}
                if why := resource_name_problem(res):
                    blocked.append(f"container {c.name}'s {res}")
                    findings.append(self.invalid_name(doc, holder, res, why, info, where))
                    continue
                match = self.rules.lookup(res)
                self.explain_match(doc, info, kind, ref, c.name, holder, res, match)
                if match is None:
                    findings.append(
                        self.finding(
                            "unknown-resource",
                            f"{res} is an extended resource no rule pack knows; if it is a device, add a rule pack "
                            "(--rules FILE) that maps it to a device class",
                            doc,
                            holder,
                            res,
                            info,
                            **where,
                        )
                    )
                    continue
                rule = match.rule
                where["device_class"] = rule.device_class
                if rule.report_only == "config":
                    derived = self.vf_config(doc, info, ref, kind, match, resources, res) if rule.vf_config else None
                    if isinstance(derived, ResourceMatch):
                        match, rule = derived, derived.rule
                        where["device_class"] = rule.device_class
                        if rule.vf_config["annotation"] not in pa.drop_annotations:
                            pa.drop_annotations.append(rule.vf_config["annotation"])
                    else:
                        why = f" ({derived})" if derived else ""
                        findings.append(
                            self.finding(
                                "driver-config-needed",
                                f"{res}: {rule.advice}; left as is{why}",
                                doc,
                                holder,
                                res,
                                info,
                                **where,
                            )
                        )
                        continue
                shared = rule.report_only or self.shared_mode(rule, shared_by_label)
                if not shared and res.split("/")[0] in slices:
                    shared = f"shared (asked for with {slices[res.split('/')[0]]})"
                if shared:
                    advice = rule.advice or rule.sharing.get("advice", "")
                    findings.append(
                        self.finding(
                            "shared-device",
                            f"{res} is a {shared} device resource: a per-pod claim would give each pod a whole device; "
                            f"left as is. The DRA way: {advice}",
                            doc,
                            holder,
                            res,
                            info,
                            **where,
                        )
                    )
                    continue
                counts = self.counts(doc, resources, res)
                count = counts[0].value if len({c.value for c in counts}) == 1 else None
                if accepts and pruned:
                    findings.append(
                        self.finding(
                            "crd-prunes-claims",
                            f"{res}: the installed {info.kind} CRD ({self.settings.crds}) has no "
                            f"{', '.join(pruned[:2])}{' ...' if len(pruned) > 2 else ''}, so the API server would "
                            f"drop the claims and the pod would run without devices; left as is. Upgrade to "
                            f"{_operator_versions(kind, info.api_version)}, then fix",
                            doc,
                            holder,
                            res,
                            info,
                            **where,
                        )
                    )
                    continue
                if not accepts:
                    findings.append(
                        self.finding(
                            "report-only-kind",
                            f"{info.kind} ({info.api_version}) asks for {res}, but {kind.reason}; left as is",
                            doc,
                            holder,
                            res,
                            info,
                            **where,
                        )
                    )
                    continue
                if count is None:
                    blocked.append(f"container {c.name}'s {res}")
                    findings.append(
                        self.finding(
                            "invalid-count",
                            self.count_problem(res, counts),
                            doc,
                            holder,
                            res,
                            info,
                            **where,
                        )
                    )
                    continue
                if rule.whole_host and count:
                    host = _host_devices(ref.spec, rule.whole_host)
                    if host is not None and host[0] != count:
                        blocked.append(f"container {c.name}'s {res}")
                        findings.append(
                            self.finding(
                                "tpu-partial-host",
                                f"{res}: {count} of the {host[0]} devices of a host ({host[1]}): "
                                f"{rule.whole_host['reason']}, so the migrated pod would not start; left as is. "
                                f"Ask for all {host[0]}, or keep the device plugin for this workload",
                                doc,
                                holder,
                                res,
                                info,
                                **where,
                            )
                        )
                        continue
                    if host is None:
                        labels = " or ".join(str(x["key"]) for x in rule.whole_host["labels"])
                        findings.append(
                            self.finding(
                                "tpu-host-chips",
                                f"{res}: {count}: {rule.whole_host['reason']}; the claim asks for {count}, so the pod "
                                f"starts only on hosts with exactly {count}, and the pod does not say its host's "
                                f"count (a node selector on {labels})",
                                doc,
                                holder,
                                res,
                                info,
                                **where,
                            )
                        )
                if count == 0:
                    msg = f"{res}: {counts[0].shown} asks for no device; fix drops the key and emits no claim"
                else:
                    msg = (
                        f"{res}: {counts[0].shown} is a device-plugin request; fix moves it to a ResourceClaimTemplate "
                        f"request on device class {rule.device_class}"
                    )
                f = self.finding("legacy-device-request", msg, doc, holder, res, info, fixable=True, **where)
                if count > MAX_DEVICES_PER_CLAIM and not c.init and self.settings.strategy == "claims":
                    # lint called it fixable, and fix wrote nothing (rewrite-invalid) while fit found no claim; an
                    # init container may ask for more, reusing the app containers' devices (cases/many-containers)
                    f.fixable = False
                    f.message = (
                        f"{res}: {counts[0].shown} is a device-plugin request, but fix leaves it: one claim holds at "
                        f"most {MAX_DEVICES_PER_CLAIM} devices (AllocationResultsMaxSize), and this request alone asks "
                        f"for {count}, so the migrated pod would never be scheduled"
                    )
                if rule.caution and count:
                    findings.append(
                        self.finding("mapping-caution", f"{res}: {rule.caution}", doc, holder, res, info, **where)
                    )
                line, column = doc.line_of(holder, res)
                pa.uses.append(DeviceUse(c, res, match, count, line, column))
                pa.findings.append(f)
        if not blocked and pa.uses and (why := self.unwritable_ray_params(ref, pa)):
            for use, f in zip(pa.uses, pa.findings, strict=True):
                findings.append(
                    f.recast(
                        "legacy-device-request",
                        f"{use.resource}: {use.count} is a device-plugin request, but fix leaves this pod as it is: "
                        f"{why}",
                    )
                )
            pa.uses, pa.findings = [], []
        if blocked and pa.uses:
            # Claims beside device-plugin requests would be half a migration: the pod stays as it is, whole.
            why = ", ".join(blocked)
            for use, f in zip(pa.uses, pa.findings, strict=True):
                findings.append(
                    f.recast(
                        "legacy-device-request",
                        f"{use.resource}: {use.count} is a device-plugin request, but fix leaves this pod as it is: "
                        f"the count of {why} cannot be migrated, and a pod is migrated whole or not at all",
                    )
                )
            pa.uses, pa.findings = [], []
        return pa

    def unwritable_ray_params(self, ref: PodSpecRef, pa: PodAnalysis) -> str:
        """Why fix cannot write the `ray start` flags KubeRay derived from the limits it moves ("" when it can): the
        group's rayStartParams is there but no map (`rayStartParams: "num-cpus=4"`). diff said num-gpus was set and
        set nothing, and Ray would have started with no GPU."""
        from dramigrate.ray import ray_start_params

        path = ref.location.ray_start_params
        if not path:
            return ""
        params = next((p for p, _, _ in resolve(ref.owner, path)), None)
        if params is None or isinstance(params, dict):
            return ""
        derived = ray_start_params(pa.ray_limits, {u.resource for u in pa.uses}, None, pa.ray_accelerators)
        if not derived:
            return ""
        what = "a string" if isinstance(params, str) else "a list" if isinstance(params, list) else "a scalar"
        return (
            f"{path} is {what}, where KubeRay takes a map, so fix cannot write the `ray start` flags KubeRay derives "
            "from the limits it moves "
            f"({', '.join(derived)}), and Ray would start without those devices; make {path} a map"
        )

    def explain_match(
        self,
        doc: Document,
        info: ObjectInfo,
        kind: WorkloadKind,
        ref: PodSpecRef,
        container: str,
        holder: Any,
        res: str,
        match: ResourceMatch | None,
    ) -> None:
        """--verbose: the rule-pack entry a device request matched and the workload path that found its pod spec."""
        line, _ = doc.line_of(holder, res)
        loc = ref.location
        how = f"spec: {loc.spec}" + (f", at: {loc.at}" if loc.at else "")
        self.decisions.append(
            f"{self.path}:{line}: {info.kind}/{info.name or info.generate_name} container {container}: {res} matched "
            + (self.rules.describe(match) if match else "no rule-pack entry")
            + f"; its pod template {ref.path} was found by the {kind.group or 'core'}/{kind.kind} entry of "
            f"{shown_origin(kind.origin) or 'the workloads file'} ({how})"
        )

    def vf_config(
        self,
        doc: Document,
        info: ObjectInfo,
        ref: PodSpecRef,
        kind: WorkloadKind,
        match: ResourceMatch,
        resources: Any,
        res: str,
    ) -> ResourceMatch | str:
        """--sriov-vf-config: the match that migrates this VF with VfConfig{netAttachDefName} from the network the
        pod's annotation names, or why it cannot be told (then the VF stays report-only). One VF pool and one
        network in the pod, one VF: which network uses which pool is otherwise only in the NADs."""
        vf = match.rule.vf_config
        if not self.settings.sriov_vf_config:
            return "--sriov-vf-config migrates it when the driver runs in STANDALONE mode with pools named after it"
        if self.settings.strategy != "claims":
            return "--sriov-vf-config writes VfConfig into claims, which --strategy extended-resource does not make"
        key = vf["annotation"]
        meta = pod_metadata(info.obj, ref.path)
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        value = annotations.get(key) if isinstance(annotations, dict) else None
        if not isinstance(value, str) or not value.strip():
            return f"the pod has no {key} annotation to take the network from"
        networks = parse_networks(value)
        pools = {
            r
            for c in containers(ref, kind)
            if isinstance(c.container.get("resources"), dict)
            for r in self.device_entries(c.container["resources"])
            if (m := self.rules.lookup(r)) is not None and m.rule.report_only == "config"
        }
        if networks is None or len({(ns, name) for ns, name, _ in networks}) != 1 or len(pools) != 1:
            return (
                f"cannot tell which network of the pod's {key} annotation ({value.strip()}) uses {res}: "
                "the NetworkAttachmentDefinitions say it; write the claim by hand"
            )
        if {c.value for c in self.counts(doc, resources, res)} != {1} or len(networks) != 1:
            return "more than one VF: one request's VfConfig would give them one interface name; write it by hand"
        namespace, name, iface = networks[0]
        params: dict[str, str] = {"apiVersion": vf["apiVersion"], "kind": vf["kind"], "netAttachDefName": name}
        if namespace:
            params["netAttachDefNamespace"] = namespace
        params["ifName"] = iface or "net1"  # Multus names the first network's interface net1
        rule = replace(
            match.rule,
            device_class=vf["deviceClass"],
            request=vf["request"],
            report_only="",
            config=({"opaque": {"driver": vf["driver"], "parameters": params}},),
        )
        selector = vf["selector"].replace("{resource}", res.replace("\\", "\\\\").replace("'", "\\'"))
        return ResourceMatch(rule, res, (*match.selectors, selector))

    def ray_limits(self, doc: Document, spec: dict[str, Any]) -> list[RayLimit]:
        """The limits of a Ray pod's Ray container (containers[0]), as KubeRay reads them (dramigrate/ray.py): each
        count as the API server decoded it (KubeRay takes Quantity.Value(), the device count Kubernetes gives)."""
        listed = spec.get("containers")
        first = listed[0] if isinstance(listed, list) and listed else None
        resources = first.get("resources") if isinstance(first, dict) else None
        limits = resources.get("limits") if isinstance(resources, dict) else None
        out = []
        for key, value in (limits or {}).items() if isinstance(limits, dict) else ():
            key = str(key)
            if not self.rules.is_device_candidate(key):
                continue
            match = self.rules.lookup(key)
            gpu = match.rule.ray_num_gpus if match else key.endswith("gpu")  # KubeRay's own test, for the rest
            number = device_count(value, plain_source(self.lines_of(doc), limits, key)).value
            out.append(RayLimit(key, number, gpu, match.rule.ray_resource if match else ""))
        return out

    def crd_pruned(self, info: ObjectInfo, kind: WorkloadKind) -> list[str]:
        """The claim fields the installed CRD (--crds) would prune from this object; empty when it keeps them, or
        when there is no CRD file or no CRD of the kind in it (operator_version reports that)."""
        if self.settings.crds is None or not kind.operators(info.api_version):
            return []
        schema = load_crds(self.settings.crds).schema(info.api_version, info.kind)
        return pruned_fields(schema, kind) if schema is not None else []

    def operator_version(self, doc: Document, pa: PodAnalysis) -> Finding | None:
        """Claims migrated into a custom resource survive only when its CRD keeps them: name the operator release
        that does, unless the installed CRD (--crds) shows it."""
        info, kind = pa.info, pa.kind
        operators = kind.operators(info.api_version)
        if not operators:
            return None
        since = _operator_versions(kind, info.api_version)
        if any(o.kept_by == "controller" for o in operators):  # no CRD shows what the running controller keeps
            return self.finding(
                "operator-version",
                f"{info.kind} passes resourceClaims on to its pods only with {since}: an older controller drops "
                "them, and the API server rejects pods whose containers name claims the pod lacks; check the "
                "installed release before you apply",
                doc,
                info.obj,
                "kind",
                info,
            )
        if self.settings.crds is not None:
            if load_crds(self.settings.crds).schema(info.api_version, info.kind) is not None:
                return None  # checked: a CRD that prunes turned the requests into crd-prunes-claims
            why = f"{self.settings.crds} has no CRD for {info.kind} ({info.api_version})"
        else:
            why = "pass the installed CRDs with --crds FILE (kubectl get crd -o yaml) to check"
        return self.finding(
            "operator-version",
            f"{info.kind} keeps resourceClaims and resources.claims only with {since}: "
            "an older CRD prunes them and the pods run without devices; " + why,
            doc,
            info.obj,
            "kind",
            info,
        )

    def invalid_name(
        self, doc: Document, holder: Any, res: str, why: str, info: ObjectInfo, where: dict[str, Any]
    ) -> Finding:
        """A resource name the API server rejects (rules.resource_name_problem): said with what it probably meant,
        never rewritten (fix does not guess which device was meant)."""
        import unicodedata

        prefix, _, name = res.partition("/")
        # the domain as the packs spell device names, without invisible characters (a zero-width space pasted in)
        meant = "".join(ch for ch in f"{prefix.lower()}/{name}" if unicodedata.category(ch) != "Cf")
        known = self.rules.lookup(meant)
        guess = f"; did you mean {meant}" + (f" (device class {known.rule.device_class})?" if known else "?")
        shown = res.encode("ascii", "backslashreplace").decode("ascii")  # a valid name is ASCII: the rest shown
        return self.finding(
            "invalid-resource-name",
            f"{shown} is not a valid resource name, so the API server rejects this object ({why}){guess} "
            "fix leaves the pod as it is: it does not guess which device was meant",
            doc,
            holder,
            res,
            info,
            **where,
        )

    def device_entries(self, resources: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        """Extended resources of a container: name -> (value, mapping holding it); limits win over requests."""
        out: dict[str, tuple[Any, Any]] = {}
        for section in ("requests", "limits"):
            values = resources.get(section)
            if isinstance(values, dict):
                for res, value in values.items():
                    if self.rules.is_device_candidate(str(res)):
                        out[str(res)] = (value, values)
        return out

    def lines_of(self, doc: Document) -> list[str]:
        """The document's source lines, split once per document (asked for each finding and count: a document of
        10,000 pods was split 30,000 times, for minutes), as positions number them: splitlines() also broke lines at
        U+2028, so five of them in an annotation made the count of `nvidia.com/gpu: 1` be read from another line,
        `4` (fix wrote count: 4) or `abc` (an invalid-count warning, lint exit 0)."""
        if self._lines[0] is not doc:
            self._lines = (doc, source_lines(doc.body))
        return self._lines[1]

    def counts(self, doc: Document, resources: dict[str, Any], res: str) -> list[Count]:
        """The counts Kubernetes reads for res in limits and in requests (one or two), from the source text."""
        lines = self.lines_of(doc)
        return [
            device_count(resources[s][res], plain_source(lines, resources[s], res))
            for s in ("limits", "requests")
            if isinstance(resources.get(s), dict) and res in resources[s]
        ]

    @staticmethod
    def count_problem(res: str, counts: list[Count]) -> str:
        if len(counts) == 2 and all(c.ok for c in counts):
            a, b = counts
            return f"{res}: limits ({a.value}) and requests ({b.value}) differ; an extended resource needs them equal"
        bad = next(c for c in counts if not c.ok)
        return f"{res}: {bad.problem}"

    def shared_mode(self, rule: Any, shared_by_label: set[str]) -> str:
        if not rule.sharing:
            return ""
        mode = self.settings.sharing.get(rule.sharing["setting"], "none")
        if mode != "none":
            return f"shared ({mode}, from the sharing setting)"
        if rule.sharing.get("nodeLabel") in shared_by_label:
            return SHARED_BY_LABEL
        return ""

    def shared_product_label(self, spec: dict[str, Any]) -> set[str]:
        """Node labels whose pinned values say the plain resource is a slice (GFD -SHARED, -MIG-<profile>): in a
        node selector, in required node affinity, or as the value of a toleration for the resource's taint
        (OpenShift samples taint time-sliced nodes nvidia.com/gpu=Tesla-T4-SHARED)."""
        hits: set[str] = set()
        selector = spec.get("nodeSelector")
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
        for r in self.rules.resources:
            label, pattern = r.sharing.get("nodeLabel"), r.sharing.get("sharedValuePattern")
            if not label or not pattern:
                continue
            values: list[Any] = []
            if isinstance(selector, dict) and label in selector:
                values.append(selector[label])
            values.extend(_affinity_values(spec, label))
            taint_keys = {label} | {k for k, res in self.rules.taints.items() if res and res == r.match}
            values.extend(
                t.get("value")
                for t in tolerations
                if t.get("key") in taint_keys and t.get("operator") in (None, "Equal") and t.get("value") is not None
            )
            if any(pattern.search(str(v)) for v in values):
                hits.add(label)
        return hits

    # -- objects that already use DRA ---------------------------------------------------------------

    def existing_claims(
        self,
        doc: Document,
        info: ObjectInfo,
        ref: PodSpecRef,
        c: ContainerRef,
        resources: dict[str, Any],
        pod_claims: dict[str, Any],
        ctx: dict[str, str],
    ) -> list[Finding]:
        out: list[Finding] = []
        claims = resources.get("claims")
        if not isinstance(claims, list):
            return out
        for i, entry in enumerate(claims):
            if not isinstance(entry, dict):
                continue
            name = str(entry.get("name"))
            where = {**ctx, "container": c.name}
            if name not in pod_claims:
                out.append(
                    self.finding(
                        "dangling-claim",
                        f"container {c.name} uses claim {name!r}, which is not in the pod's "
                        f"spec.resourceClaims ({', '.join(pod_claims) or 'none'})",
                        doc,
                        claims,
                        i,
                        info,
                        **where,
                    )
                )
                continue
            pod_claim = pod_claims[name]
            if pod_claim.get("resourceClaimName") and info.kind in REPLICATED_KINDS:
                out.append(
                    self.finding(
                        "shared-claim-replicated",
                        f"claim {name!r} names ResourceClaim {pod_claim['resourceClaimName']!r}: every replica of this "
                        f"{info.kind} shares its devices; use resourceClaimTemplateName for a device per pod",
                        doc,
                        claims,
                        i,
                        info,
                        **where,
                    )
                )
            template = pod_claim.get("resourceClaimTemplateName")
            classes = self.claim_templates.get(f"{info.namespace}/{template}", set()) if template else set()
            for res in self.device_entries(resources):
                match = self.rules.lookup(res)
                if match and not match.rule.report_only and match.rule.device_class in classes:
                    out.append(
                        self.finding(
                            "extended-resource-beside-claim",
                            f"container {c.name} asks for {res} and for claim {name!r} of class "
                            f"{match.rule.device_class}: that allocates two devices; drop {res} or the claim",
                            doc,
                            claims,
                            i,
                            info,
                            **{**where, "resource": res},
                        )
                    )
        return out

    # -- device requests outside pod specs dramigrate knows ------------------------------------------

    def _beside_pods(self, stray: list[Finding], info: ObjectInfo, kind: WorkloadKind | None) -> str:
        """Why the pods of a known kind are left whole ("" when they are not): the object also asks for a device
        outside the pod specs dramigrate knows, other than at a pod's own (pod-level) resources, which the API
        server refuses, or in a container list (KServe's `workerSpec.containers`: the containers of pods of their
        own, never merged). The controller may merge it into those pods (Argo merges `templateDefaults` into every
        template): a claim for the pod's own request beside it would ask for the device twice."""
        if kind is None:
            return ""
        pod_level = {f"{ref.path}.resources" for ref in pod_specs(info.obj, kind)}
        away = next(
            (
                f
                for f in stray
                if f.rule == "unknown-kind"
                and f.pod_template_path not in pod_level
                and not _OWN_POD_CONTAINER.search(f.pod_template_path)
            ),
            None,
        )
        if away is None:
            return ""
        return (
            f"{info.kind} also asks for {away.resource} at {away.pod_template_path}, outside the pod specs dramigrate "
            "knows, which its controller may merge into this pod (Argo merges spec.templateDefaults into every "
            "template)"
        )

    def stray_requests(
        self, doc: Document, info: ObjectInfo, kind: WorkloadKind | None, covered: dict[int, dict[str, Any]]
    ) -> list[Finding]:
        out: list[Finding] = []
        met = seen(doc)
        if met is not None and not met.sections:  # the parse met no limits or requests mapping: no block to find
            return out
        if met is not None and doc.counted >= 0 and not self._uncovered_device_section(met.sections, covered):
            return out  # every limits or requests mapping naming a device is a container's the pods read
        # the pods' own resources (pod-level, PodLevelResources, on by default from Kubernetes 1.34): a chart's
        # library may render a values map there (DND-IT's common renders its top-level `resources` there from 1.34)
        pod_level = {f"{ref.path}.resources" for ref in pod_specs(info.obj, kind)} if kind is not None else set()
        for resources, path in _resource_blocks(info.obj, info.path):
            if id(resources) in covered:
                continue
            for res, (_, holder) in self.device_entries(resources).items():
                match = self.rules.lookup(res)
                if match is None:
                    continue  # resources no pack knows are reported where pods are known
                if path in pod_level:
                    what = (
                        "this is the pod's own resources (pod-level), which take only cpu, memory and hugepages, so "
                        "the API server refuses a device there; ask for it in a container's resources, which fix "
                        "migrates to a claim (a chart's library may render a values map here from Kubernetes 1.34 "
                        "and another as the container's: set the device in that one)"
                    )
                    where = {"resource": res, "pod_template_path": path}
                    out.append(
                        self.finding("unknown-kind", f"{res} at {path}: {what}", doc, holder, res, info, **where)
                    )
                    continue
                if not info.kind:
                    what = "this is not a Kubernetes object (a Helm values file?), so its pods are built elsewhere"
                elif kind is None:
                    what = f"{info.kind} ({info.api_version}) is not a kind dramigrate knows"
                else:
                    what = f"{path} is not a pod spec dramigrate knows in {info.kind}"
                out.append(
                    self.finding(
                        "unknown-kind",
                        f"{res} at {path}: {what}; add the kind to a workloads file (--rules) to "
                        "migrate it, or migrate it by hand",
                        doc,
                        holder,
                        res,
                        info,
                        resource=res,
                        pod_template_path=path,
                    )
                )
        return out

    def _uncovered_device_section(self, sections: list[Any], covered: dict[int, dict[str, Any]]) -> bool:
        """Does a mapping the parse met as the value of a limits, requests or extra_resource_* key name a device the
        rules know, other than the limits and requests of the containers' resources blocks in covered? Without one,
        _resource_blocks can find no block with a device outside them. Only for a document without aliases: there
        each mapping has one parent, so a covered block's limits are no other block's."""
        reached = {id(r.get(key)) for r in covered.values() for key in ("limits", "requests")}
        for values in sections:
            if not isinstance(values, dict) or id(values) in reached:
                continue
            for res in values:
                name = str(res)
                if self.rules.is_device_candidate(name) and self.rules.lookup(name) is not None:
                    return True
        return False


def _resource_blocks(node: Any, path: str) -> list[tuple[dict[str, Any], str]]:
    """Every `resources`-like mapping (with limits or requests) in an object, with its path."""
    out: list[tuple[dict[str, Any], str]] = []
    # a collection's path is made only for a block: (collection, (parent's entry, key, is item)), root path text
    stack: list[tuple[Any, Any]] = [(node, path)]
    seen: set[int] = set()
    while stack:
        entry = stack.pop()
        cur = entry[0]
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, dict):
            if isinstance(cur.get("limits"), dict) or isinstance(cur.get("requests"), dict):
                out.append((cur, _path_of(entry)))
            for key in KUBESPAWNER_KEYS:  # JupyterHub values: KubeSpawner builds pods from these at run time
                if isinstance(cur.get(key), dict):
                    p = _path_of(entry)
                    out.append(({"limits": cur[key]}, f"{p}.{key}" if p else key))
            # only collections can hold a block: no path for each scalar of the object (plain loops, and isinstance
            # of a tuple: this walk meets every value of every device file, and a generator per collection and a
            # union type cost a third of its time)
            for k, v in cur.items():
                if isinstance(v, _COLLECTIONS):
                    stack.append((v, (entry, k, False)))
        elif isinstance(cur, list):
            for i, v in enumerate(cur):
                if isinstance(v, _COLLECTIONS):
                    stack.append((v, (entry, i, True)))
    return out


_COLLECTIONS = (dict, list)


def _path_of(entry: tuple[Any, Any]) -> str:
    """The path text of a _resource_blocks stack entry: `a.b[0].c`, as joined one step at a time."""
    steps: list[tuple[Any, bool]] = []
    link = entry[1]
    while type(link) is tuple:
        parent, key, item = link
        steps.append((key, item))
        link = parent[1]
    p: str = link
    for key, item in reversed(steps):
        p = f"{p}[{key}]" if item else f"{p}.{key}" if p else str(key)
    return p


def _operator_versions(kind: WorkloadKind, api_version: str) -> str:
    return " or ".join(f"{o.operator} {o.version} or newer" for o in kind.operators(api_version))


def _affinity_values(spec: dict[str, Any], label: str) -> list[Any]:
    values: list[Any] = []
    try:
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    except (KeyError, TypeError):
        return values
    for term in terms or []:
        for expr in (term or {}).get("matchExpressions") or []:
            if isinstance(expr, dict) and expr.get("key") == label and expr.get("operator") == "In":
                values.extend(expr.get("values") or [])
    return values


_HOST_COUNT = re.compile(r"\s*([0-9]+)\s*")  # a node label holding the node's device count, as a wholeHost label reads


def _host_devices(spec: dict[str, Any], whole_host: dict[str, Any]) -> tuple[int, str] | None:
    """(the node's device count, the label that says it) from the pod's node selector or required node affinity,
    when every value the pod pins agrees; None when the pod does not say."""
    found: dict[int, str] = {}
    selector = spec.get("nodeSelector")
    for label in whole_host["labels"]:
        key, pattern = str(label["key"]), label.get("pattern")
        values = [selector[key]] if isinstance(selector, dict) and key in selector else []
        for value in values + _affinity_values(spec, key):
            m = (pattern or _HOST_COUNT).fullmatch(str(value))
            if m:
                found.setdefault(int(m.group(1)), f"{key}: {value}")
    return next(iter(found.items())) if len(found) == 1 else None


def parse_networks(value: str) -> list[tuple[str, str, str]] | None:
    """Multus's k8s.v1.cni.cncf.io/networks: `ns/name@iface, ...` or a JSON list of {name, namespace, interface},
    as (namespace, name, interface); None when it is neither."""
    text = value.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            return None
        named = isinstance(items, list) and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items)
        if not named:
            return None
        return [(str(i.get("namespace") or ""), i["name"], str(i.get("interface") or "")) for i in items]
    out = []
    for entry in (e.strip() for e in text.split(",")):
        m = re.fullmatch(r"(?:([a-z0-9.-]+)/)?([a-z0-9.-]+)(?:@([A-Za-z0-9_.-]+))?", entry)
        if m is None:
            return None
        out.append((m.group(1) or "", m.group(2), m.group(3) or ""))
    return out


def require_name(path: str, doc: Document, info: ObjectInfo) -> None:
    if not info.name and not info.generate_name:
        line, _ = doc.line_of(info.obj.get("metadata") or info.obj)
        raise InputError(
            f"{info.kind} has no metadata.name or generateName: the ResourceClaimTemplate name is derived from it; "
            "give the workload a name",
            path,
            line,
        )


def explain_requests(findings: list[Finding], rules: RuleSet) -> list[str]:
    """--verbose for findings made away from the source text (a chart's rendered stream mapped back to its templates,
    kustomize patches): the rule-pack entry each device request matched, once per request, and where its count
    comes from."""
    out, seen = [], set()
    for f in findings:
        if not f.resource or (f.file, f.line, f.resource) in seen or not rules.is_device_candidate(f.resource):
            continue
        seen.add((f.file, f.line, f.resource))
        match = rules.lookup(f.resource)
        who = f"{f.kind}/{f.name} container {f.container}: " if f.kind and f.container else ""
        where = f"; pod template {f.pod_template_path}" if f.pod_template_path else ""
        kinds = [k for k in rules.kinds.values() if k.kind == f.kind]
        if where and len(kinds) == 1:
            where += f", found by the {kinds[0].group or 'core'}/{f.kind} entry of {shown_origin(kinds[0].origin)}"
        counts = "".join(f"; {r.note} ({r.file}:{r.line})" for r in f.related if r.line)
        out.append(
            f"{f.file}:{f.line}: {who}{f.resource} matched "
            + (rules.describe(match) if match else "no rule-pack entry")
            + where
            + counts
        )
    return out
