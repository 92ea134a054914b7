"""The pipeline for one file: documents -> detect -> plan -> emit -> apply -> validate.

lint, diff and fix all run this one code path; only fix and diff keep the rewritten text.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from dramigrate.classes import extended_resource_class, named_class
from dramigrate.config import Settings
from dramigrate.detect import Detector, ObjectInfo, objects_of, require_name
from dramigrate.documents import (
    Document,
    YamlFile,
    dump_yaml,
    indent_of,
    parse_document,
    split_documents,
    start_edit,
    to_plain,
)
from dramigrate.embedded import embedded_findings
from dramigrate.emit import PLACEHOLDER, STAND_IN, claim_template, name_base, stand_in
from dramigrate.fastyaml import fast_documents
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.limits import Limits, check_structure, read_regular, size_message
from dramigrate.plan import plan_pod, split_claims
from dramigrate.quota import check_quota
from dramigrate.rules import DeviceClassInfo, RuleSet
from dramigrate.suppress import parse as parse_suppressions
from dramigrate.templated import template_line, templated_finding, unparsed_template
from dramigrate.triage import any_relevant, fast_relevant, may_matter
from dramigrate.validate import claim_template_errors, pod_spec_errors
from dramigrate.versions import Target
from dramigrate.writer import as_json, bom_encoding


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    raw: bytes | None = None  # the bytes read, to refuse writing over a file that changed since
    original: str | None = None
    rewritten: str | None = None  # None when nothing changes
    error: InputError | None = None
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)  # DeviceClasses no chart ships, to emit
    changes: list[str] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)  # ResourceClaimTemplates emitted (fix mode)
    not_written: bool = False  # fix had a rewrite for it that could not be written
    decisions: list[str] = field(default_factory=list)  # --verbose: why each thing was done or left alone
    suppressed: list[Finding] = field(default_factory=list)  # findings its suppression comments hid (not rewritten)

    @property
    def failed(self) -> bool:
        """The file could not be processed (bad input, a limit, an OS error or a bug): it counts toward exit 2."""
        return self.error is not None or any(f.rule == "internal-error" for f in self.findings)


@dataclass(frozen=True)
class Job:
    path: str
    raw: bytes | None  # None: read the file when the job runs (memory grows with the largest file only)
    fix: bool
    report_only_reason: str = ""  # set for kustomize patches and the bases overlays patch
    # Block and file comments in the text suppress findings; not in a rendered chart, whose comments come from many
    # templates (its findings are matched to each template's and values file's comments after mapping, suppress.py)
    suppressions: bool = True


REPORT_HINT = "set DRAMIGRATE_DEBUG=1 for the traceback and please report it"


def run_file(job: Job, rules: RuleSet, settings: Settings, target: Target) -> FileResult:
    """One file's result, whatever happens: a failure on this file is this file's finding, never the run's end."""
    try:
        return _run_file(job, rules, settings, target)
    except Exception as exc:
        return failed_file(job.path, exc)


def failed_file(path: str, exc: BaseException, what: str = "") -> FileResult:
    """The result of a file whose processing raised: OS errors and limits are bad input, anything else a bug."""
    prefix = f"{what}: " if what else ""
    if isinstance(exc, InputError):
        return FileResult(path, error=InputError(prefix + exc.message, exc.file or path, exc.line, exc.column))
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
        return FileResult(path, error=InputError(f"{prefix or 'cannot process: '}{reason}", path))
    if isinstance(exc, RecursionError):
        return FileResult(path, error=InputError(f"{prefix}nested too deeply to process", path))
    return FileResult(path, findings=[internal_error(path, exc, what)])


def internal_error(path: str, exc: BaseException, what: str = "") -> Finding:
    """A bug met on one file: its finding names the file, says how to report it, and the traceback goes to
    stderr only with DRAMIGRATE_DEBUG=1."""
    if os.environ.get("DRAMIGRATE_DEBUG"):
        import traceback

        print(f"dramigrate: internal error on {path}:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(str(exc).split())[:200]
    return Finding(
        "internal-error",
        RULES["internal-error"][0],
        f"internal error{' while ' + what if what else ''}: {type(exc).__name__}"
        f"{': ' + detail if detail else ''}; this file was left alone ({REPORT_HINT})",
        path,
        1,
        1,
    )


def _run_file(job: Job, rules: RuleSet, settings: Settings, target: Target) -> FileResult:
    raw = job.raw
    limits = Limits(max_bytes=settings.max_file_size)
    if raw is None:
        try:
            raw = read_regular(job.path, limits)
        except OSError as exc:
            return FileResult(job.path, error=InputError(f"cannot read: {exc.strerror}", job.path))
    elif len(raw) > limits.max_bytes:
        return FileResult(job.path, error=InputError(size_message(len(raw), limits), job.path))
    result = FileResult(job.path, raw=raw)  # the bytes as read: a write checks them and keeps their encoding
    if (encoding := bom_encoding(raw)) is not None:  # UTF-16/32 with a BOM: processed as text, written back in it
        try:
            raw = raw.decode(encoding).encode("utf-8")
        except UnicodeDecodeError:
            return FileResult(job.path, error=InputError(f"not valid {encoding.upper()} text", job.path))
    if not may_matter(raw, rules):
        result.raw = None
        result.decisions.append(f"{job.path}: nothing to check: no device resource name or device field in its bytes")
        return result
    text = raw.decode("utf-8", "replace")
    try:  # bounded nesting and document count before any parser recurses into the text
        check_structure(job.path, text, limits)
    except InputError as exc:
        return FileResult(job.path, error=exc)
    fast = fast_documents(job.path, raw, text)  # libyaml once; ruamel only if it declines, and for what fix edits
    if (not any_relevant(fast.roots, rules)) if fast is not None else fast_relevant(raw, rules) is False:
        result.raw = None
        result.decisions.append(f"{job.path}: nothing to check: no pod template or quota names a device resource")
        return result
    if (line := template_line(raw)) is not None:
        result.findings = [templated_finding(job.path, line, 1, raw, rules)]
        result.decisions.append(f"{job.path}:{line}: not migrated: Helm or Go template syntax, not a manifest")
        result.raw = None
        return result
    if job.fix and fast is not None:  # fix edits through ruamel: only the documents that can need it, not a
        for doc in fast.yf.documents:  # 30 MB ConfigMap beside one Deployment (minutes in pure Python)
            if doc.data is not None and any_relevant([doc.data], rules):
                doc.data, doc.parsed = None, False
    try:
        yf = fast.yf if fast is not None else split_documents(job.path, raw, limits, text)
        result.original = yf.render()
        _process(yf, job, rules, settings, target, result)
    except RewriteInvalid as exc:
        for f in result.findings:
            f.fixed = False
        result.findings.append(exc.finding)
        return result
    except InputError as exc:
        if not exc.file:
            exc.file = job.path
        if unparsed_template(raw) and exc.message.startswith("invalid YAML"):
            result.findings = [templated_finding(job.path, exc.line, exc.column, raw, rules)]
            result.decisions.append(f"{job.path}:{exc.line}: not migrated: template syntax makes it invalid YAML")
            return result
        result.error = exc
        result.findings = []
        result.rewritten = None
        return result
    if not result.findings and not result.decisions:
        result.decisions.append(f"{job.path}: checked: no device-plugin request in it")
    if yf.changed:
        result.rewritten = yf.render()
        if job.path.endswith(".json"):  # a JSON manifest stays JSON
            result.rewritten = as_json(result.original or "", result.rewritten)
        if result.rewritten == result.original:
            result.rewritten = None
    if result.rewritten is None:  # keep the bytes only where a write must check them
        result.raw = result.original = None
    return result


def _process(yf: YamlFile, job: Job, rules: RuleSet, settings: Settings, target: Target, result: FileResult) -> None:
    for doc in yf.documents:
        parse_document(job.path, doc)
    templates = _claim_templates(yf)
    det = Detector(job.path, rules, settings, target, {k: v[1] for k, v in templates.items()})
    if job.suppressions:
        det.suppressions = parse_suppressions(result.original or "")
    det.decisions, det.suppressed = result.decisions, result.suppressed
    if job.report_only_reason:
        result.decisions.append(f"{job.path}: reported, not rewritten here: {job.report_only_reason}")
    emitted: set[str] = set()
    for doc in yf.documents:
        if doc.data is None:
            continue
        findings, pods = det.analyze(doc)
        findings.extend(embedded_findings(job.path, doc, rules))
        for info in objects_of(doc.data):
            quota = check_quota(det, doc, info, fix=False, drop_legacy=settings.drop_legacy_quota)
            if job.fix and any(f.fixable for f in quota) and not job.report_only_reason:
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
        result.findings.extend(findings)
        if not pods:
            continue
        for pa in pods:
            for use in pa.uses:
                info = rules.classes.get(use.match.rule.device_class)
                if use.count and info is not None and not info.shipped_by:
                    result.classes[info.name] = info
        if not job.fix:
            if settings.named_classes:  # lint names the same classes fix would, for the same findings
                for pa in pods:
                    _use_named_classes(plan_pod(pa), rules, result)
            continue
        _fix_document(yf, doc, pods, templates, emitted, target, result, rules if settings.named_classes else None)


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
    from dramigrate.unshare import unshare_resources

    path = yf.path
    plans = []
    for pa in pods:
        require_name(path, doc, pa.info)
        planned = plan_pod(pa)
        if named_classes is not None:
            _use_named_classes(planned, named_classes, result)
        plans.extend(split_claims(planned))
    before = {
        id(p.analysis.ref.spec): pod_spec_errors(
            to_plain(p.analysis.ref.spec), target.text, {k: v[0] for k, v in templates.items()}
        )
        for p in plans
    }
    start_edit(doc)
    unshare_resources(doc.data, [u.container.container for plan in plans for u in plan.analysis.uses])
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
    for plan in plans:
        after = pod_spec_errors(to_plain(plan.analysis.ref.spec), target.text, local_templates)
        introduced = sorted(set(after) - set(before[id(plan.analysis.ref.spec)]))
        if introduced:
            raise_invalid(result, doc, plan, "the rewritten pod template", introduced)
        for f in plan.analysis.findings:
            f.fixed = True
            for other in result.findings:
                if (
                    other.rule == "extended-resource-beside-claim"
                    and other.container == f.container
                    and other.resource == f.resource
                    and other.pod_template_path == f.pod_template_path
                ):
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
                    plan,
                    fixed=True,
                )
            )
    result.templates.extend(new_docs)
    indent = indent_of(doc.body)
    for rct in new_docs:
        doc.appended.append(dump_yaml(rct, indent))


class RewriteInvalid(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def raise_invalid(result: FileResult, doc: Document, plan: Any, what: str, errors: list[str]) -> None:
    message = (
        f"{what} would not validate for the target Kubernetes version, so nothing is written for this file: "
        + "; ".join(errors[:5])
    )
    raise RewriteInvalid(_pod_finding("rewrite-invalid", message, result.path, doc, plan.analysis.ref.spec, plan))


def _pod_finding(
    rule: str, message: str, path: str, doc: Document, node: Any, plan: Any, fixed: bool = False
) -> Finding:
    """A finding on a planned pod template, at the given node of its document."""
    info: ObjectInfo = plan.analysis.info
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
        plan.analysis.ref.path,
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
