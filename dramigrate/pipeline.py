"""The pipeline for one file that triage let through: documents -> detect -> plan -> emit -> apply -> validate.

migrate.run_file reads and triages the file and calls process(); only fix and diff keep the rewritten text.
"""

from __future__ import annotations

import json
from typing import Any

from dramigrate.classes import extended_resource_class, named_class
from dramigrate.config import Settings
from dramigrate.detect import Detector, ObjectInfo, objects_of, require_name
from dramigrate.documents import (
    Document,
    YamlFile,
    check_version,
    dump_yaml,
    indent_of,
    parse_document,
    split_documents,
    start_edit,
    to_plain,
)
from dramigrate.embedded import embedded_findings
from dramigrate.emit import PLACEHOLDER, STAND_IN, claim_template, name_base, stand_in
from dramigrate.fastyaml import Mapping, Sequence, fast_parse
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.limits import Limits, check_edited_document, check_structure
from dramigrate.migrate import FileResult, Job
from dramigrate.plan import PodPlan, plan_pod, split_claims
from dramigrate.quota import check_quota
from dramigrate.rules import RuleSet
from dramigrate.suppress import parse as parse_suppressions
from dramigrate.templated import template_line, templated_finding, unparsed_template
from dramigrate.triage import fast_relevant, needs_pipeline
from dramigrate.validate import claim_template_errors, pod_spec_errors
from dramigrate.versions import Target
from dramigrate.writer import as_json


def process(
    job: Job, raw: bytes, result: FileResult, rules: RuleSet, settings: Settings, target: Target, limits: Limits
) -> FileResult:
    """The file's findings and, for fix and diff, its rewritten text; raw is its UTF-8 bytes."""
    text = raw.decode("utf-8", "replace")
    try:  # bounded nesting and document count before any parser recurses into the text
        check_structure(job.path, text, limits)
    except InputError as exc:
        return FileResult(job.path, error=exc)
    # each document from libyaml once (kept for _process), ruamel only for a document it cannot reproduce exactly
    # or that fix edits: a whole-file C-loader load first doubled the work on a 30 MB manifest (60 s past a CI limit)
    yf: YamlFile | None
    try:
        yf = split_documents(job.path, raw, limits, text, helm_render=job.helm_render, comments=job.comments)
    except InputError:
        yf = None  # said below, with the file's bad-input handling
    relevant = yf is None or _lint_relevant(job.path, yf, rules)
    if not relevant:
        result.raw = None
        result.decisions.append(f"{job.path}: nothing to check: no pod template or quota names a device resource")
        return result
    if (line := template_line(raw)) is not None:
        result.findings = [templated_finding(job.path, line, 1, raw, rules)]
        result.decisions.append(f"{job.path}:{line}: not migrated: Helm or Go template syntax, not a manifest")
        result.raw = None
        return result
    before = len(result.decisions)
    try:
        yf = yf or split_documents(job.path, raw, limits, text, helm_render=job.helm_render, comments=job.comments)
        check_version(yf)
        result.original = yf.render()
        if _process(yf, job, rules, settings, target, result) is not None:  # fix writes nothing for this file
            for f in result.findings:
                f.fixable = f.fixed = False
            result.changes.clear()
            return result
    except RewriteInvalid as exc:  # as fix again would: the file's requests are no longer called fixable
        for f in result.findings:
            f.fixable = f.fixed = False
        result.findings.append(exc.finding)
        result.changes.clear()  # nothing is written for this file
        return result
    except InputError as exc:
        if not exc.file:
            exc.file = job.path
        if unparsed_template(raw) and exc.message.startswith("invalid YAML"):
            result.findings = [templated_finding(job.path, exc.line, exc.column, raw, rules)]
            result.decisions.append(f"{job.path}:{exc.line}: not migrated: template syntax makes it invalid YAML")
            return result
        result.error = exc
        result.findings, result.changes = [], []
        result.rewritten = None
        del result.decisions[before:]  # lint parses while it checks: what it decided before the error is void
        result.classes, result.suppressed[:] = {}, []
        return result
    if not result.findings and not result.decisions:
        result.decisions.append(f"{job.path}: checked: no device-plugin request in it")
    if yf.changed:
        result.rewritten = yf.render()
        if job.path.endswith(".json") or (job.path == "-" and _is_json(text)):  # JSON in, JSON out
            result.rewritten = as_json(result.original or "", result.rewritten)
        if result.rewritten == result.original:
            result.rewritten = None
    if result.rewritten is None:  # keep the bytes only where a write must check them
        result.raw = result.original = None
    return result


def _is_json(text: str) -> bool:
    """Standard input that is one JSON value (`kubectl get -o json | dramigrate fix -`): written back as JSON, as a
    .json file is; YAML that merely starts with a flow mapping is not JSON."""
    if not text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return False
    from dramigrate.longints import loads_json

    try:
        loads_json(text.lstrip("\ufeff"))
    except ValueError:
        return False
    return True


def _lint_relevant(path: str, yf: YamlFile, rules: RuleSet) -> bool:
    """Does any document need the full pipeline? Parses the documents (kept for _process) up to the first that does."""
    for doc in yf.documents:
        if fast_parse(path, doc):
            if needs_pipeline(doc, rules):
                return True
        elif fast_relevant(doc.body.encode("utf-8"), rules) is not False:
            return True
    return False


def read_document(path: str, doc: Document) -> None:
    """libyaml where it reproduces ruamel exactly, else ruamel; fix re-parses with ruamel a document it edits."""
    if not fast_parse(path, doc):
        parse_document(path, doc)


def _round_trip(path: str, doc: Document) -> bool:
    """Give a document libyaml parsed ruamel's round-trip data, which fix edits and dumps; False if it has it."""
    if type(doc.data) is not Mapping and type(doc.data) is not Sequence:
        return False
    doc.data, doc.parsed, doc.counted = None, False, -1
    parse_document(path, doc)
    return True


def _process(
    yf: YamlFile, job: Job, rules: RuleSet, settings: Settings, target: Target, result: FileResult
) -> Finding | None:
    """The file's findings, and for fix its edits; the finding why fix writes nothing for it (pod templates that
    share one spec), found alike by lint and fix, or None."""
    # lint parses each document when it comes to it and lets its data go after its findings, so memory holds one
    # document at a time (a 30 MB manifest); fix parses all first (it edits them)
    stream = not job.fix
    if not stream or "ResourceClaimTemplate" in yf.text:  # templates in the file: known before any workload
        for doc in yf.documents:
            read_document(job.path, doc)
    templates = _claim_templates(yf)
    det = Detector(job.path, rules, settings, target, {k: v[1] for k, v in templates.items()})
    if job.suppressions:
        det.suppressions = parse_suppressions(result.original or "")
    det.decisions, det.suppressed = result.decisions, result.suppressed
    if job.report_only_reason:
        result.decisions.append(f"{job.path}: reported, not rewritten here: {job.report_only_reason}")
    emitted: set[str] = set()
    edits = job.fix and not job.report_only_reason
    refusal: Finding | None = None
    for doc in yf.documents:
        read_document(job.path, doc)
        if doc.data is None:
            continue
        marks = len(result.decisions), len(result.suppressed)
        findings, pods, quotas = _analyze(det, doc, job.path, rules, settings)
        editable = not job.report_only_reason and (
            pods and settings.strategy == "claims" or any(f.fixable for _, q in quotas for f in q)
        )
        if editable:  # a document fix would refuse to rewrite is bad input for lint too (lint says what fix does)
            check_edited_document(job.path, doc.body, doc.start_line, doc.data, doc.counted)
        edited = job.fix and editable
        if edited and _round_trip(job.path, doc):  # fix edits it: analysed again on ruamel's data, as if parsed so
            del result.decisions[marks[0] :], result.suppressed[marks[1] :]
            findings, pods, quotas = _analyze(det, doc, job.path, rules, settings)
        for info, quota in quotas:
            if edits and any(f.fixable for f in quota):
                start_edit(doc)
                quota = check_quota(det, doc, info, fix=True, drop_legacy=settings.drop_legacy_quota)
            findings.extend(quota)
        if job.report_only_reason:
            findings = [_report_only(f, job.report_only_reason) for f in findings]
            pods = []
        if settings.strategy == "claims" and not job.report_only_reason:
            named: set[int] = set()
            for pa in pods:
                require_name(job.path, doc, pa.info)
                if id(pa.info.obj) not in named:
                    named.add(id(pa.info.obj))
                    findings.extend(name_findings(job.path, doc, pa.info))
        if pods and settings.strategy == "extended-resource":
            findings = extended_resource(findings, pods, rules, target, result)
            pods = []
        if pods and refusal is None and (refusal := shared_spec(job.path, doc, pods)):
            findings.append(refusal)
        result.findings.extend(findings)
        if not pods:
            if stream:
                doc.data = None  # its findings are made: let the document go
            continue
        for pa in pods:
            for use in pa.uses:
                info = rules.classes.get(use.match.rule.device_class)
                if use.count and info is not None and not info.shipped_by:
                    result.classes[info.name] = info
        if not job.fix or refusal is not None:
            if settings.named_classes:  # lint names the same classes fix would, for the same findings
                for pa in pods:
                    _use_named_classes(plan_pod(pa), rules, result)
            doc.data = None  # its findings are made: let the document go
            continue
        _fix_document(yf, doc, pods, templates, emitted, target, result, rules if settings.named_classes else None)
    return refusal


def _analyze(
    det: Detector, doc: Document, path: str, rules: RuleSet, settings: Settings
) -> tuple[list[Finding], list[Any], list[tuple[ObjectInfo, list[Finding]]]]:
    """A document's findings, its pods with device requests, and each object's quota findings (not fixed yet)."""
    findings, pods = det.analyze(doc)
    findings.extend(embedded_findings(path, doc, rules))
    quotas = [
        (info, check_quota(det, doc, info, fix=False, drop_legacy=settings.drop_legacy_quota))
        for info in objects_of(doc.data)
    ]
    return findings, pods, quotas


def name_findings(path: str, doc: Document, info: ObjectInfo) -> list[Finding]:
    """Info findings on how a workload without a plain name gets its ResourceClaimTemplate name (R2, R3)."""
    meta = info.obj.get("metadata") if isinstance(info.obj.get("metadata"), dict) else info.obj
    if info.name and PLACEHOLDER.search(info.name):
        rule, key = "placeholder-name", "name"
        message = (
            f"the name {info.name} holds a placeholder: the ResourceClaimTemplate name keeps it (it starts "
            f"with {name_base(info.name, '')}-), so each substitution gets its own template; it was "
            f"validated with the placeholder replaced by {STAND_IN!r}"
        )
    elif not info.name and info.generate_name:
        rule, key = "generate-name-template", "generateName"
        message = (
            f"only generateName {info.generate_name!r}: the ResourceClaimTemplate is named from the prefix "
            f"({name_base(info.generate_name, '')}-<hash>), and every {info.kind} created from this file shares "
            "it; delete it only when none of them is left"
        )
    else:
        return []
    line, column = doc.line_of(meta, key)
    owner = info.name or info.generate_name
    return [Finding(rule, RULES[rule][0], message, path, line, column, info.kind, info.namespace, owner)]


def _stood_in(obj: dict[str, Any]) -> dict[str, Any]:
    """The emitted object as validation sees it: placeholders in its name and namespace replaced by a stand-in."""
    metadata = {k: stand_in(v) if isinstance(v, str) else v for k, v in obj["metadata"].items()}
    return {**obj, "metadata": metadata}


def _report_only(f: Finding, reason: str) -> Finding:
    if not f.fixable:
        return f
    return f.recast(
        "kustomize-patch", f"{f.resource}: {reason}; left as is, so an overlay does not ask for a device twice"
    )


def _fix_document(
    yf: YamlFile,
    doc: Document,
    pods: list[Any],
    templates: dict[str, Any],
    emitted: set[str],
    target: Target,
    result: FileResult,
    named_classes: RuleSet | None,
) -> None:
    from dramigrate.apply import apply_plan  # fix only: these import ruamel, which lint need not load
    from dramigrate.unshare import unshare_fields, unshare_resources

    path = yf.path
    plans = []
    for pa in pods:
        require_name(path, doc, pa.info)
        planned = plan_pod(pa)
        if named_classes is not None:
            _use_named_classes(planned, named_classes, result)
        plans.extend(split_claims(planned))
    # each pod spec as it was, once (a pod of more than 32 devices has a plan for each claim, all on one spec): its own
    # errors are looked up only when the rewrite has some (most have none)
    before: dict[int, Any] = {}
    for p in plans:
        if id(p.analysis.ref.spec) not in before:
            before[id(p.analysis.ref.spec)] = to_plain(p.analysis.ref.spec)
    known = {k: v[0] for k, v in templates.items()}
    start_edit(doc)
    unshare_resources(doc.data, [u.container.container for plan in plans for u in plan.analysis.uses])
    unshare_fields(
        doc.data,
        [(p.analysis.ref.spec, _edited_fields(p)) for p in plans]
        + [(p.analysis.ref.owner, [p.analysis.ref.location.ray_start_params]) for p in plans if p.ray_params],
    )
    new_docs: list[dict[str, Any]] = []
    local_templates = {k: v[0] for k, v in templates.items()}
    for plan in plans:
        name = None
        if plan.needs_claim:
            rct = claim_template(plan, target)
            name = rct["metadata"]["name"]
            errors = claim_template_errors(_stood_in(rct), target.text)
            if errors:
                raise_invalid(result, doc, plan, "the emitted ResourceClaimTemplate", errors)
            key = f"{plan.analysis.info.namespace}/{name}"
            local_templates[name] = rct
            if key not in emitted:
                emitted.add(key)
                new_docs.append(rct)
        result.changes.extend(
            f"{path}: {plan.analysis.info.kind}/{plan.analysis.info.name} {plan.analysis.ref.path}: {c}"
            for c in apply_plan(plan, name)
        )
    beside_claim: dict[tuple[Any, ...], list[Finding]] = {}  # by where each stands: one look-up a fixed request
    for other in result.findings:
        if other.rule == "extended-resource-beside-claim":
            beside_claim.setdefault((other.container, other.resource, other.pod_template_path), []).append(other)
    checked: set[int] = set()  # the rewritten specs validated: each once, whatever its number of plans
    for plan in plans:
        if id(plan.analysis.ref.spec) not in checked:
            checked.add(id(plan.analysis.ref.spec))
            introduced = pod_spec_errors(to_plain(plan.analysis.ref.spec), target.text, local_templates)
            if introduced:  # only the errors the rewrite brought
                was = pod_spec_errors(before[id(plan.analysis.ref.spec)], target.text, known)
                introduced = sorted(set(introduced) - set(was))
            if introduced:
                raise_invalid(result, doc, plan, "the rewritten pod template", introduced)
        for f in plan.analysis.findings:
            f.fixed = True
            for other in beside_claim.get((f.container, f.resource, f.pod_template_path), ()):
                other.fixed = True
        if plan.ray_params:
            result.findings.append(
                _pod_finding(
                    "count-from-limits",
                    "KubeRay builds `ray start` from the Ray container's limits: rayStartParams "
                    + ", ".join(f"{k} is set to {json.dumps(v)}" for k, v in plan.ray_params.items())
                    + ", as KubeRay derived it",
                    path,
                    doc,
                    plan.analysis.ref.owner,
                    plan.analysis,
                    fixed=True,
                )
            )
    result.templates.extend(new_docs)
    indent = indent_of(doc.body)
    for rct in new_docs:
        doc.appended.append(dump_yaml(rct, indent))


def shared_spec(path: str, doc: Document, pods: list[Any]) -> Finding | None:
    """Two pod templates that are one YAML node (`spec: &s` ... `spec: *s`) cannot each get their own claims (the
    second edit of the one spec gave it a duplicate claim): fix writes nothing for the file, and lint says so, each
    with this finding."""
    first: dict[int, Any] = {}
    for pa in pods:
        there = first.setdefault(id(pa.ref.spec), pa)
        if (id(pa.info), pa.ref.path) != (id(there.info), there.ref.path):
            message = (
                f"this pod spec is the same YAML node as {there.info.kind}/{there.info.name} {there.ref.path} (an "
                "anchor and its alias), and each pod template needs its own claims: nothing is written for this "
                "file; write the spec out for each and run fix again"
            )
            return _pod_finding("rewrite-invalid", message, path, doc, pa.ref.spec, pa)
    return None


def _edited_fields(plan: PodPlan) -> list[str]:
    """The pod spec fields apply_plan edits in place for this plan: each gets its own copy first when an anchor
    shares it with another pod (which would gain the device toleration or lose its node pinning)."""
    sel = plan.analysis.selection
    fields = ["resourceClaims"] if plan.needs_claim else []
    if plan.tolerations or (sel and sel.drop_tolerations):
        fields.append("tolerations")
    if sel and sel.drop_node_selector:
        fields.append("nodeSelector")
    if sel and (sel.drop_required or sel.required_terms is not None or sel.drop_preferred):
        fields.append("affinity")
    return fields


class RewriteInvalid(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def raise_invalid(result: FileResult, doc: Document, plan: Any, what: str, errors: list[str]) -> None:
    message = (
        f"{what} would not validate for the target Kubernetes version, so nothing is written for this file: "
        + "; ".join(errors[:5])
    )
    raise RewriteInvalid(
        _pod_finding("rewrite-invalid", message, result.path, doc, plan.analysis.ref.spec, plan.analysis)
    )


def _pod_finding(rule: str, message: str, path: str, doc: Document, node: Any, pa: Any, fixed: bool = False) -> Finding:
    """A finding on an analysed pod template, at the given node of its document."""
    info: ObjectInfo = pa.info
    line, column = doc.line_of(node)
    return Finding(
        rule,
        RULES[rule][0],
        message,
        path,
        line,
        column,
        info.kind,
        info.namespace,
        info.name,
        pa.ref.path,
        fixed=fixed,
    )


def _claim_templates(yf: YamlFile) -> dict[str, tuple[dict[str, Any], set[str]]]:
    """ResourceClaimTemplates already in the file: '<namespace>/<name>' (and '<name>') -> (object, classes)."""
    out: dict[str, tuple[dict[str, Any], set[str]]] = {}
    for doc in yf.documents:
        for info in objects_of(doc.data):
            if info.kind != "ResourceClaimTemplate" or not info.api_version.startswith("resource.k8s.io/"):
                continue
            obj = to_plain(info.obj)
            try:
                requests = obj["spec"]["spec"]["devices"]["requests"]
            except (KeyError, TypeError):
                continue
            classes = set()
            for r in requests or []:
                if not isinstance(r, dict):
                    continue
                for sub in [r, r.get("exactly") or {}, *(r.get("firstAvailable") or [])]:
                    if isinstance(sub, dict) and sub.get("deviceClassName"):
                        classes.add(str(sub["deviceClassName"]))
            out[f"{info.namespace}/{info.name}"] = (obj, classes)
            out[info.name] = (obj, classes)
    return out


def _use_named_classes(plan: Any, rules: RuleSet, result: FileResult) -> None:
    """--classes: a request whose selectors were translated from node labels names a DeviceClass instead."""
    sel = plan.analysis.selection
    slugs = sel.slugs if sel is not None else {}
    for req in plan.requests:
        base = rules.classes.get(req.device_class)
        if base is None:
            continue
        choices = req.alternatives or [("", req.selectors)]
        renamed = []
        for name, selectors in choices:
            if not any(s in slugs for s in selectors):
                renamed.append((name, selectors, req.device_class))
                continue
            cls = named_class(base, selectors, slugs)
            result.classes[cls.name] = cls
            renamed.append((name, (), cls.name))
        if req.alternatives:
            req.alternatives = [(n, s) for n, s, _ in renamed]
            req.alternative_classes = [c for _, _, c in renamed]
        else:
            req.selectors, req.device_class = renamed[0][1], renamed[0][2]


def extended_resource(
    findings: list[Finding], pods: list[Any], rules: RuleSet, target: Target, result: FileResult
) -> list[Finding]:
    """--strategy extended-resource: pods stay as they are; DeviceClasses with extendedResourceName serve them."""
    by_id = {id(f): f for pa in pods for f in pa.findings}
    out = [f for f in findings if id(f) not in by_id]
    for pa in pods:
        for use, f in zip(pa.uses, pa.findings, strict=True):
            base = rules.classes.get(use.match.rule.device_class)
            if base is None or use.count == 0:
                continue
            if base.extended_resource_name == use.resource and base.shipped_by:
                cls_name = base.name
                how = f"DeviceClass {base.name} from the {base.shipped_by} maps it already"
                if base.extended_resource_caveat:
                    how += f" ({base.extended_resource_caveat})"
            else:
                cls = extended_resource_class(use.resource, base, use.match.selectors)
                result.classes[cls.name] = cls
                cls_name = cls.name
                how = f"DeviceClass {cls.name} (classes file) maps it with extendedResourceName"
            gate = (
                ""
                if target.enabled("DRAExtendedResource")
                else (
                    f"; Kubernetes {target.text} serves it only with the DRAExtendedResource feature gate on "
                    "kube-apiserver, kube-controller-manager, kube-scheduler and kubelet (on by default from 1.36)"
                )
            )
            out.append(f.recast("extended-resource", f"{use.resource}: {use.count} stays in the pod: {how}{gate}"))
            # From 1.35 a plain init container reuses the app containers' devices, as under the device plugin.
            if use.container.init and not use.container.sidecar and not target.enabled("DRAExtendedResourceInitReuse"):
                out.append(
                    f.recast(
                        "extended-resource-init",
                        f"init container {use.container.name}: under the extended-resource mapping each plain init "
                        f"container gets its own {cls_name} device instead of reusing the app containers' on "
                        f"Kubernetes {target.text} (kubernetes/kubernetes#134880; fixed in 1.35 by #134882)",
                    )
                )
    return out
