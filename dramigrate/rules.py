"""Rule packs and workload kinds: loading, validation and lookups. Vendor facts live in rules/*.yaml."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.limits import (
    MAX_RESOURCE_NAME,
    SETTINGS,
    BoundedRegex,
    expands_within,
    nodes_upto,
    read_regular,
    regex_problem,
    repeated_key,
)
from dramigrate.report.escape import clipped
from dramigrate.ruleindex import RuleIndex
from dramigrate.validate import DNS_LABEL

# Resources the kubelet and scheduler handle natively: never device requests.
NATIVE_RESOURCES = re.compile(r"^(cpu|memory|ephemeral-storage|storage|pods|hugepages-.+|(.+\.)?kubernetes\.io/.+)$")
# apimachinery's IsQualifiedName, which the API server applies to a domain-prefixed resource name: the prefix a DNS
# subdomain (lowercase letters, digits, `-` and `.`, at most 253), the name at most 63 of [-A-Za-z0-9_.] that start and
# end with a letter or digit (each label matched on its own, validate.DNS_LABEL: no pattern that backtracks over the
# whole name)
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")


def resource_name_problem(resource: str) -> str:
    """Why the API server rejects a domain-prefixed resource name ("" when it is valid, or has no prefix)."""
    prefix, slash, name = resource.partition("/")
    if not slash:
        return ""
    if len(prefix) > 253 or not all(DNS_LABEL.fullmatch(label) for label in prefix.split(".")):
        return "its domain prefix must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
    if len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return "its name after the '/' must be 1 to 63 letters, digits, '-', '_' and '.', alphanumeric at both ends"
    return ""


@dataclass(frozen=True)
class DeviceClassInfo:
    name: str
    driver: str
    shipped_by: str = ""
    extended_resource_name: str = ""
    extended_resource_caveat: str = ""  # when the shipped class carries extendedResourceName only sometimes
    selectors: tuple[str, ...] = ()
    config: tuple[dict[str, Any], ...] = ()
    pack: str = ""
    derived_from: str = ""  # --classes: the vendor class this named class narrows


@dataclass(frozen=True)
class ResourceRule:
    pack: str
    match: str = ""
    regex: re.Pattern[str] | BoundedRegex | None = None
    device_class: str = ""
    request: str = ""
    selectors: tuple[str, ...] = ()
    config: tuple[dict[str, Any], ...] = ()
    report_only: str = ""
    advice: str = ""
    ray_num_gpus: bool = False
    caution: str = ""  # a warning that goes with every migrated request of this rule
    ray_resource: str = ""  # the Ray resource KubeRay makes of this limit (TPU), see dramigrate/ray.py
    nic: bool = False
    preferred_allocation: str = ""  # what the device plugin's GetPreferredAllocation chose that a claim does not
    sharing: dict[str, str] = field(default_factory=dict)
    whole_host: dict[str, Any] = field(default_factory=dict)  # wholeHost: {labels: [{key, pattern}], reason}
    vf_config: dict[str, str] = field(default_factory=dict)  # vfConfig: the SR-IOV opt-in (--sriov-vf-config)


@dataclass(frozen=True)
class ResourceMatch:
    """A resource name resolved against a rule: selectors filled in from the regex captures."""

    rule: ResourceRule
    name: str
    selectors: tuple[str, ...]


PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill(selector: str, captures: dict[str, str]) -> str:
    """Put the regex captures into a selector template; they land inside CEL string literals, so escape them."""
    return PLACEHOLDER.sub(
        lambda m: captures.get(m.group(1), m.group(0)).replace("\\", "\\\\").replace("'", "\\'"), selector
    )


@dataclass(frozen=True)
class PodSpecLocation:
    at: str
    spec: str = ""
    name: str = ""
    ray_start_params: str = ""


@dataclass(frozen=True)
class OperatorVersion:
    """The first release of an operator whose CRD keeps the claim fields (for the API versions it serves)."""

    operator: str
    version: str
    api_versions: tuple[str, ...] = ()
    kept_by: str = "crd"  # "controller": an older controller drops the fields whatever the CRD keeps


@dataclass(frozen=True)
class WorkloadKind:
    group: str
    kind: str
    pod_specs: tuple[PodSpecLocation, ...]
    container_lists: tuple[str, ...] = ("initContainers", "containers")
    single_containers: tuple[str, ...] = ()
    accepts_claims: bool | dict[str, Any] = True
    reason: str = ""
    count_from_limits: str = ""
    claims_since: tuple[OperatorVersion, ...] = ()
    origin: str = ""  # the workloads file that declared the kind (--verbose names it)

    def operators(self, api_version: str) -> tuple[OperatorVersion, ...]:
        """The operator releases that matter for an object of this apiVersion."""
        return tuple(o for o in self.claims_since if not o.api_versions or api_version in o.api_versions)

    def accepts(self, annotations: dict[str, Any]) -> bool:
        if isinstance(self.accepts_claims, bool):
            return self.accepts_claims
        value = scalar_text(annotations.get(self.accepts_claims["annotation"]))
        return value in self.accepts_claims["values"]


def scalar_text(value: Any) -> Any:
    """A scalar as the API server reads it, where ruamel keeps something else: a tagged one (`!!str Always`,
    `!Custom x`: ruamel's TaggedScalar) is its text, and a `!!binary` one (bytes) the text it decodes to, as go-yaml
    gives them."""
    if type(value).__name__ == "TaggedScalar":
        return value.value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@dataclass(frozen=True)
class LabelRule:
    """A node label that picks a device, and how it becomes CEL on requests of its classes."""

    key: str
    role: str  # feature (removed once translated) or pool (kept: autoscalers scale from it)
    classes: tuple[str, ...]
    exact: bool = True
    reason: str = ""
    implied: tuple[str, ...] = ()
    value_type: str = "string"
    value_map: dict[str, Any] = field(default_factory=dict)
    cel: dict[str, str] = field(default_factory=dict)
    pack: str = ""


@dataclass
class RuleSet:
    """Every loaded pack and workload file, with the lookups the pipeline needs."""

    resources: list[ResourceRule] = field(default_factory=list)
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)
    taints: dict[str, str] = field(default_factory=dict)
    taint_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    labels: dict[str, LabelRule] = field(default_factory=dict)
    kinds: dict[tuple[str, str], WorkloadKind] = field(default_factory=dict)
    packs: dict[str, dict[str, Any]] = field(default_factory=dict)
    pack_files: dict[str, str] = field(default_factory=dict)
    shipped_kinds: frozenset[tuple[str, str]] = frozenset()  # (group, kind) of the shipped workloads file
    _index: RuleIndex | None = field(default=None, repr=False, compare=False)

    def lookup(self, resource: str) -> ResourceMatch | None:
        """The rule for a resource name; the first pack that matches wins, user packs first. Only the rules that may
        match it are tried (ruleindex.py: 2,800 regexes of a user's pack over 4,000 names took lint 55 s)."""
        if self._index is None or self._index.size != len(self.resources):
            self._index = RuleIndex(self.resources)
        for i in self._index.candidates(resource):
            rule = self.resources[i]
            if rule.match:
                if rule.match == resource:
                    return ResourceMatch(rule, resource, rule.selectors)
            elif (
                rule.regex is not None and len(resource) <= MAX_RESOURCE_NAME and (m := rule.regex.fullmatch(resource))
            ):
                captures = {k: v for k, v in m.groupdict().items() if v is not None}
                return ResourceMatch(rule, resource, tuple(fill(s, captures) for s in rule.selectors))
        return None

    def describe(self, match: ResourceMatch) -> str:
        """Which rule-pack entry a resource matched, and what it decides (for --verbose)."""
        rule = match.rule
        entry = f"match: {rule.match}" if rule.match else f"regex: {rule.regex.pattern if rule.regex else ''}"
        origin = shown_origin(self.pack_files.get(rule.pack, rule.pack))
        if rule.report_only:
            decides = f"report-only ({rule.report_only})"
        else:
            decides = f"device class {rule.device_class}"
            if match.selectors:
                decides += " with selectors " + ", ".join(f"({s})" for s in match.selectors)
        return f"rule pack {rule.pack} ({origin}) entry `{entry}`: {decides}"

    def is_device_candidate(self, resource: str) -> bool:
        """An extended resource: not native, and qualified with a domain."""
        return "/" in resource and not NATIVE_RESOURCES.match(resource)

    def workload(self, api_version: str, kind: str) -> WorkloadKind | None:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        return self.kinds.get((group, kind))


def _shipped(name: str) -> Path:
    return Path(str(files("dramigrate.rules_data").joinpath(name)))


# the shipped data files that are not rules files: the Kubernetes version table and the autoscaler facts
SHIPPED_DATA = ("kube-versions.yaml", "autoscalers.yaml")


def shipped_rule_files() -> list[Path]:
    """The shipped rule packs, workload kinds and finding rules."""
    found = Path(str(files("dramigrate.rules_data"))).glob("*.yaml")
    return sorted(p for p in found if p.name not in SHIPPED_DATA)


@cache  # every device request's --verbose line names its pack and workloads file: a few origins, asked for often
def shown_origin(origin: str) -> str:
    """A rules file as a user knows it: rules/<name>.yaml for a shipped one, else the path given."""
    return f"rules/{Path(origin).name}" if origin in _shipped_paths() else origin


@cache
def _shipped_paths() -> frozenset[str]:
    return frozenset(str(p) for p in shipped_rule_files())


@cache
def shipped_json(name: str) -> dict[str, Any]:
    """A shipped JSON data file (a schema, rules/library-values.json, rules/chart-dra-releases.json), read once; the
    caller does not change it."""
    return json.loads(_shipped(name).read_text(encoding="utf-8"))


# Each kind of rules file and its JSON Schema (FindingRules: the finding rule catalogue, catalogue.py).
SCHEMAS = {
    "RulePack": "rule-pack.schema.json",
    "Workloads": "workloads.schema.json",
    "FindingRules": "findings.schema.json",
}


def validate_rule_file(path: Path, data: Any) -> list[str]:
    """Schema errors of one rules file, as 'path: where: message' strings (empty when valid)."""
    import jsonschema

    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or data["kind"] not in SCHEMAS:
        return [f"{path}: not a rules file: expected `kind: RulePack`, `kind: Workloads` or `kind: FindingRules`"]
    schema = shipped_json(SCHEMAS[data["kind"]])
    validator = jsonschema.Draft202012Validator(schema)
    errors = []
    for err in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "(top)"
        errors.append(f"{path}: {where}: {clipped(err.message, 300)}")  # it quotes the value (thousands of entries)
    if data["kind"] == "RulePack" and not errors:
        errors.extend(_check_selectors(path, data))
    return errors


def _check_selectors(path: Path, data: dict[str, Any]) -> list[str]:
    """Regexes compile, selector placeholders name regex groups, and every selector compiles as CEL."""
    from dramigrate.cel import CelError, compile_selector

    errors = []
    for i, res in enumerate(data.get("resources", [])):
        groups: set[str] = set()
        if "regex" in res:
            if problem := regex_problem(res["regex"]):  # first: compiling `((((...a))))` recursed past the stack
                errors.append(f"{path}: resources.{i}.regex: {problem}")
                continue
            try:
                groups = set(re.compile(res["regex"]).groupindex)
            except re.error as exc:
                errors.append(f"{path}: resources.{i}.regex: {exc}")
                continue
        for where, pattern in _label_patterns(res):
            if problem := regex_problem(pattern):
                errors.append(f"{path}: resources.{i}.{where}: {problem}")
        for j, selector in enumerate(res.get("selectors", [])):
            unknown = set(PLACEHOLDER.findall(selector)) - groups
            if unknown:
                errors.append(
                    f"{path}: resources.{i}.selectors.{j}: {{{', '.join(sorted(unknown))}}} is not a named "
                    "group of the resource's regex"
                )
                continue
            try:
                compile_selector(fill(selector, dict.fromkeys(groups, "x")))
            except CelError as exc:
                errors.append(f"{path}: resources.{i}.selectors.{j}: {exc}")
    for i, label in enumerate(data.get("labels", [])):
        for op, template in (label.get("cel") or {}).items():
            if problem := _label_cel_problem(template):
                errors.append(f"{path}: labels.{i}.cel.{op}: {problem}")
    for i, cls in enumerate(data.get("deviceClasses", [])):
        for j, selector in enumerate(cls.get("selectors", [])):
            try:
                compile_selector(selector)
            except CelError as exc:
                errors.append(f"{path}: deviceClasses.{i}.selectors.{j}: {exc}")
    return errors


# what a label's CEL template may name, each filled in by selectors._fill with a label value (a CEL literal when quoted)
_LABEL_FIELDS = {"value": "'x'", "int": "1", "int_next": "2", "version": "'1.0.0'"}


def _label_cel_problem(template: str) -> str:
    """Why a label's CEL template cannot be filled and compiled ("" when it can). It was checked by nothing: a
    `{nope}` ended every file pinning the label in an internal error (KeyError), and Python's format took
    `{value:>999999999}` too."""
    import string

    from dramigrate.cel import CelError, compile_selector

    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:  # a lone `{` or `}`
        return f"not a template: {exc} (write a brace of CEL as {{{{ or }}}})"
    for _, name, spec, conversion in parts:
        if name is not None and (name not in _LABEL_FIELDS or spec or conversion):
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            return f"{{{shown}}} is not one of {', '.join('{' + f + '}' for f in _LABEL_FIELDS)}"
    try:
        compile_selector(template.format(**_LABEL_FIELDS))
    except CelError as exc:
        return str(exc)
    return ""


# values a rule file may hold (the shipped packs hold under a thousand): a 1 MiB pack of 90,000 entries took 25 s and
# 700 MB to load and validate on every lint; counted from libyaml's events before any is built
MAX_RULE_FILE_VALUES = 20_000


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_rule_file(path: Path, shipped: bool = False) -> dict[str, Any]:
    """A rules file's data. One of the user's (shipped: False, which a repository's config may name) is refused when
    it sets a key twice in one mapping, as the config is: PyYAML keeps the last silently, and a second `resources:`
    turned nvidia.com/gpu report-only where the review of the pull request read the first."""
    try:  # a regular file of a bounded size (a FIFO blocked, 13 MB ran for minutes), UTF-8
        text = read_regular(str(path), SETTINGS).decode("utf-8")
        if len(text) > MAX_RULE_FILE_VALUES and nodes_upto(text, MAX_RULE_FILE_VALUES) > MAX_RULE_FILE_VALUES:
            raise InputError(
                f"rules file holds more than {MAX_RULE_FILE_VALUES:,} values (the shipped packs hold under a "
                "thousand); not read (limit on values)",
                str(path),
            )
        loader = _LOADER(text)  # one parse: the data, and the nodes that say where a key is set twice
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
        if not expands_within(data, MAX_RULE_FILE_VALUES):  # the schema's messages quote values, aliases expanded
            raise InputError(
                f"rules file expands to more than {MAX_RULE_FILE_VALUES:,} values (YAML alias bomb?); not read",
                str(path),
            )
        if not shipped and node is not None and (twice := repeated_key(node)) is not None:
            raise InputError(
                f"rules file sets `{twice.value}` twice in one mapping (the last one wins, and a reviewer reads the "
                "first); keep one",
                str(path),
                twice.start_mark.line + 1,
                twice.start_mark.column + 1,
            )
    except OSError as exc:
        raise InputError(f"cannot read rules file: {exc.strerror}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"rules file is not UTF-8 text (byte {exc.start + 1})", str(path)) from exc
    except yaml.YAMLError as exc:
        from dramigrate.documents import yaml_problem

        what, line, column = yaml_problem(text, exc)
        raise InputError(f"rules file: {what}", str(path), line, column) from exc
    return data


def _safe_regex(pattern: str, origin: str, shipped: bool) -> re.Pattern[str] | BoundedRegex:
    """A rule's regex, refused when it could backtrack catastrophically (a hostile pack must not hang lint); a
    user's pack is matched with a time limit too (BoundedRegex), since no static check catches every such regex."""
    problem = regex_problem(pattern)
    if problem:
        raise InputError(f"rule-pack regex {pattern!r}: {problem}", origin)
    return re.compile(pattern) if shipped else BoundedRegex(pattern, origin)


def _label_patterns(res: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, pattern) of each node-label pattern a resource rule holds, besides its regex."""
    sharing, whole = res.get("sharing") or {}, res.get("wholeHost") or {}
    out = [("sharing.sharedValuePattern", sharing.get("sharedValuePattern"))]
    out += [
        (f"wholeHost.labels.{j}.pattern", label.get("pattern")) for j, label in enumerate(whole.get("labels") or [])
    ]
    return [(where, p) for where, p in out if isinstance(p, str)]


def _sharing(sharing: dict[str, Any], origin: str, shipped: bool) -> dict[str, Any]:
    """A resource's `sharing`, its sharedValuePattern compiled and checked as a resource regex is: it was compiled
    only when a pod pinned the label, unchecked (a repository pack's `^(a+)+$` kept lint for ever, and one that
    does not compile was an internal error on each such file)."""
    out = dict(sharing)
    if isinstance(out.get("sharedValuePattern"), str):
        out["sharedValuePattern"] = _safe_regex(out["sharedValuePattern"], origin, shipped)
    return out


def _whole_host(whole_host: dict[str, Any], origin: str, shipped: bool) -> dict[str, Any]:
    """A resource's `wholeHost`, each label's pattern compiled and checked as a resource regex is."""
    out = dict(whole_host)
    if isinstance(out.get("labels"), list):
        out["labels"] = [
            {**label, "pattern": _safe_regex(label["pattern"], origin, shipped)}
            if isinstance(label, dict) and isinstance(label.get("pattern"), str)
            else label
            for label in out["labels"]
        ]
    return out


def _add_pack(rs: RuleSet, data: dict[str, Any], origin: str, first: bool) -> None:
    name = data["name"]
    rs.packs[name] = data
    rs.pack_files[name] = origin
    new_rules = []
    for res in data.get("resources", []):
        new_rules.append(
            ResourceRule(
                pack=name,
                match=res.get("match", ""),
                regex=_safe_regex(res["regex"], origin, shipped=not first) if "regex" in res else None,
                device_class=res.get("deviceClass", ""),
                request=res.get("request", ""),
                selectors=tuple(res.get("selectors", ())),
                config=tuple(res.get("config", ())),
                report_only=res.get("reportOnly", ""),
                advice=res.get("advice", ""),
                ray_num_gpus=res.get("rayNumGpus", False),
                ray_resource=res.get("rayResource", ""),
                caution=res.get("caution", ""),
                nic=res.get("nic", False),
                preferred_allocation=res.get("preferredAllocation", ""),
                sharing=_sharing(res.get("sharing", {}), origin, shipped=not first),
                whole_host=_whole_host(res.get("wholeHost", {}), origin, shipped=not first),
                vf_config=dict(res.get("vfConfig", {})),
            )
        )
    rs.resources = new_rules + rs.resources if first else rs.resources + new_rules
    for cls in data.get("deviceClasses", []):
        if first or cls["name"] not in rs.classes:
            rs.classes[cls["name"]] = DeviceClassInfo(
                name=cls["name"],
                driver=cls["driver"],
                shipped_by=cls.get("shippedBy", ""),
                extended_resource_name=cls.get("extendedResourceName", ""),
                extended_resource_caveat=cls.get("extendedResourceCaveat", ""),
                selectors=tuple(cls.get("selectors", ())),
                config=tuple(cls.get("config", ())),
                pack=name,
            )
    for domain in data.get("domains", []):
        rs.domains.setdefault(domain, name)
    for taint in data.get("taints", []):
        rs.taints[taint["key"]] = taint.get("resource", "")
        if taint.get("values"):
            rs.taint_values[taint["key"]] = tuple(taint["values"])
    for label in data.get("labels", []):
        if first or label["key"] not in rs.labels:
            rs.labels[label["key"]] = LabelRule(
                key=label["key"],
                role=label["role"],
                classes=tuple(label["classes"]),
                exact=label.get("exact", True),
                reason=label.get("reason", ""),
                implied=tuple(label.get("implied", ())),
                value_type=label.get("valueType", "string"),
                value_map=dict(label.get("valueMap", {})),
                cel=dict(label.get("cel", {})),
                pack=name,
            )


def _add_workloads(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for k in data["kinds"]:
        rs.kinds[(k["group"], k["kind"])] = WorkloadKind(
            group=k["group"],
            kind=k["kind"],
            pod_specs=tuple(
                PodSpecLocation(
                    at=p["at"],
                    spec=p.get("spec", ""),
                    name=p.get("name", ""),
                    ray_start_params=p.get("rayStartParams", ""),
                )
                for p in k["podSpecs"]
            ),
            container_lists=tuple(k.get("containerLists", ("initContainers", "containers"))),
            single_containers=tuple(k.get("singleContainers", ())),
            accepts_claims=k.get("acceptsClaims", True),
            reason=k.get("reason", ""),
            count_from_limits=k.get("countFromLimits", ""),
            claims_since=tuple(
                OperatorVersion(
                    o["operator"], str(o["version"]), tuple(o.get("apiVersions", ())), o.get("keptBy", "crd")
                )
                for o in k.get("claimsSince", ())
            ),
            origin=origin,
        )


def report_only_overrides(rs: RuleSet, files: tuple[Path, ...]) -> list[str]:
    """What these rule files (a repository's config names them) leave unmigrated: resources their packs mark
    report-only, kinds their workloads files say take no claims, and shipped kinds they redefine (a Pod whose
    containers are under another key is an unknown-kind warning), each with its file (for the config overview)."""
    origins = {str(p) for p in files}
    parts = []
    for name, origin in rs.pack_files.items():
        if origin in origins:
            entries = [
                f"{r.match or (r.regex.pattern if r.regex else '')} ({r.report_only})"
                for r in rs.resources
                if r.pack == name and r.report_only
            ]
            if entries:
                parts.append(f"report-only resources {', '.join(entries)} (rule pack {origin})")
    kinds: dict[str, list[str]] = {}
    redefined: dict[str, list[str]] = {}  # where a pod spec or its containers are is redefined: the gate goes green
    for kind in rs.kinds.values():
        name = f"{kind.group}/{kind.kind}" if kind.group else kind.kind
        if kind.origin in origins and kind.accepts_claims is not True:
            kinds.setdefault(kind.origin, []).append(name)
        elif kind.origin in origins and (kind.group, kind.kind) in rs.shipped_kinds:
            redefined.setdefault(kind.origin, []).append(name)
    parts.extend(f"kinds that take no claims {', '.join(names)} (workloads file {o})" for o, names in kinds.items())
    parts.extend(
        f"shipped kinds redefined {', '.join(names)} (where their pods and containers are; workloads file {o})"
        for o, names in redefined.items()
    )
    return parts


def load_rules(user_files: tuple[Path, ...] = ()) -> RuleSet:
    """The shipped packs and workload kinds, then the user's files (whose rules take precedence)."""
    rs = RuleSet()
    for path in shipped_rule_files():
        data = read_rule_file(path, shipped=True)
        if data.get("kind") == "RulePack":
            _add_pack(rs, data, str(path), first=False)
        elif data.get("kind") == "Workloads":
            _add_workloads(rs, data, str(path))
    rs.shipped_kinds = frozenset(rs.kinds)
    for path in user_files:
        data = read_rule_file(path)
        errors = validate_rule_file(path, data)
        if errors:  # one line (cli._fail), of the first few: 2,800 bad entries made it 160 KB, printed twice
            more = f"; and {len(errors) - 5:,} more (`dramigrate rules validate` lists them)" if len(errors) > 5 else ""
            raise InputError("invalid rules file: " + "; ".join(errors[:5]) + more, str(path))
        if data["kind"] == "FindingRules":  # was loaded as a workloads file: internal error (KeyError 'kinds')
            raise InputError(
                "`kind: FindingRules` is the shipped finding catalogue, not a rule pack or workloads file; "
                "--rules takes `kind: RulePack` or `kind: Workloads`",
                str(path),
            )
        if data["kind"] == "RulePack":
            _add_pack(rs, data, str(path), first=True)
        else:
            _add_workloads(rs, data, str(path))
    return rs
