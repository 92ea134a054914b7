"""Device selection: node-label hacks on a pod become CEL selectors on its device requests.

A nodeSelector or required node-affinity term that only picks the device (GPU Feature Discovery product,
memory, family; GKE/Karpenter accelerator labels; TPU accelerator and topology) states the same intent as
a CEL selector on the request. Label rules in the packs say how each label maps; a mapping that is not
exact is reported and left alone. Node-feature labels leave the pod once translated; cloud node-pool
labels stay (autoscalers scale node pools from them) unless --remove-node-selectors.
A preferred node-affinity choice between device models becomes a `firstAvailable` list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramigrate.findings import InputError
from dramigrate.rules import LabelRule, RuleSet

# A device attribute or capacity named with a field: device.attributes['gpu.nvidia.com'].productName
DEVICE_FIELD = re.compile(r"device\.(?:attributes|capacity)\[(?:'[^'\\]*'|\"[^\"\\]*\")\]\.[A-Za-z_][A-Za-z0-9_]*")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
Report = Callable[[str, str, Any, Any], None]  # (rule, message, node, key)


class Inexact(Exception):
    """A label requirement with no exact translation for the driver."""


@dataclass
class Alternative:
    weight: int
    selectors: dict[str, list[str]]  # class -> selectors


@dataclass
class Selection:
    selectors: dict[str, list[str]] = field(default_factory=dict)  # class -> CEL, ANDed on its requests
    alternatives: dict[str, list[Alternative]] = field(default_factory=dict)  # class -> preferred choices
    # edits on the pod spec, applied by apply.py
    drop_node_selector: list[str] = field(default_factory=list)
    required_terms: list[tuple[int, list[int]]] | None = None  # (term index kept, its expressions to drop)
    drop_required: bool = False
    drop_preferred: list[int] = field(default_factory=list)
    drop_tolerations: list[int] = field(default_factory=list)
    slugs: dict[str, str] = field(default_factory=dict)  # CEL -> readable name part, for named DeviceClasses

    def add(self, cls: str, cel: str, slug: str = "") -> None:
        if cel and cel not in self.selectors.setdefault(cls, []):
            self.selectors[cls].append(cel)
        if cel and slug:
            self.slugs.setdefault(cel, slug)


def slug(rule: LabelRule, operator: str, values: list[str]) -> str:
    """A readable name for a requirement: the value for In, `<label>-gt-<n>` for comparisons."""
    short = rule.key.rsplit("/", 1)[-1].removeprefix("gpu.").replace(".", "-")
    joined = "-".join(values).lower()
    return {"In": joined, "NotIn": f"not-{joined}"}.get(operator, f"{short}-{operator.lower()}-{joined}")


def literal(text: str) -> str:
    """A CEL single-quoted string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def check_label_value(value: Any, where: str) -> str:
    """A label value as Kubernetes accepts it: a string (YAML 8 or true must be quoted), at most 63 characters."""
    if not isinstance(value, str):
        raise InputError(f"{where}: {value!r} is not a string; the API server rejects it: quote the label value")
    if len(value) > 63 or not LABEL_VALUE.match(value):
        raise InputError(f"{where}: {value!r} is not a valid Kubernetes label value")
    return str(value)


def _coerce_version(text: str) -> str:
    """Masterminds semver coercion as GFD applies it: 535.104.05 -> 535.104.5, 8.0 -> 8.0.0."""
    parts = text.removeprefix("v").split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise Inexact(f"{text!r} is not a version")
    nums = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(nums)


def _eq(rule: LabelRule, value: str) -> str:
    """CEL for `label == value` ('' when the device class already implies it)."""
    if value in rule.implied:
        return ""
    if rule.value_map:
        if value not in rule.value_map:
            raise Inexact(f"{rule.key}={value} has no exact device attribute value in pack {rule.pack}")
        mapped = rule.value_map[value]
        values = mapped if isinstance(mapped, list) else [mapped]
    else:
        values = [value]
    template = rule.cel.get("eq")
    if not template:
        raise Inexact(f"{rule.key}={value} has no device attribute in pack {rule.pack}")
    exprs = [_fill(template, rule, v) for v in values]
    return exprs[0] if len(exprs) == 1 else "(" + " || ".join(exprs) + ")"


def _fill(template: str, rule: LabelRule, value: str) -> str:
    subs = {"value": literal(value)}
    if rule.value_type == "int":
        if not re.fullmatch(r"-?[0-9]+", value):
            raise Inexact(f"{rule.key}={value} is not an integer")
        subs.update(int=str(int(value)), int_next=str(int(value) + 1))
    if rule.value_type == "version":
        subs["version"] = literal(_coerce_version(value))
    return template.format(**subs)


def guard(expression: str) -> str:
    """The expression behind `has()` for every device attribute and capacity it reads that no `has()` guards yet.
    A driver may leave any of them out (the NVIDIA driver publishes no memory capacity when NVML cannot read it,
    the TPU driver no topology on some multi-host nodes), and reading a missing one is a CEL runtime error that
    aborts the whole allocation instead of skipping that device."""
    guarded = set(re.findall(r"has\(\s*(" + DEVICE_FIELD.pattern + r")\s*\)", expression))
    fields = [f for f in dict.fromkeys(DEVICE_FIELD.findall(expression)) if f not in guarded]
    if not fields:
        return expression
    body = f"({expression})" if "||" in expression and not _parenthesized(expression) else expression
    return " && ".join(f"has({f})" for f in fields) + " && " + body


def _parenthesized(expression: str) -> bool:
    """The whole expression is one (...) group (label values hold no parentheses, so counting is enough)."""
    if not expression.startswith("(") or not expression.endswith(")"):
        return False
    depth = 0
    for i, char in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and i < len(expression) - 1:
            return False
    return True


def requirement(rule: LabelRule, operator: str, values: list[str]) -> str:
    """CEL for one node-selector requirement, guarded with has(); '' means no selector is needed."""
    return guard(_requirement(rule, operator, values))


def _requirement(rule: LabelRule, operator: str, values: list[str]) -> str:
    if not rule.exact:
        raise Inexact(f"{rule.key}: {rule.reason or 'no exact mapping'}")
    if operator == "In":
        exprs = [_eq(rule, v) for v in values]
        if any(e == "" for e in exprs):
            return ""
        return exprs[0] if len(exprs) == 1 else "(" + " || ".join(exprs) + ")"
    if operator == "NotIn":
        exprs = [_eq(rule, v) for v in values]
        if any(e == "" for e in exprs):
            raise Inexact(f"{rule.key} NotIn an implied value excludes every device")
        return " && ".join(f"!({e})" for e in exprs)
    if operator == "Exists":
        if rule.implied or rule.cel:
            return ""
        raise Inexact(f"{rule.key} Exists has no device attribute")
    if operator in ("Gt", "Lt"):
        template = rule.cel.get(operator.lower())
        if not template or len(values) != 1:
            raise Inexact(f"{rule.key} {operator} has no exact device attribute comparison")
        return _fill(template, rule, values[0])
    raise Inexact(f"{rule.key} {operator} has no exact translation")


def _relevant(rules: RuleSet, key: Any, classes: set[str]) -> LabelRule | None:
    rule = rules.labels.get(str(key))
    return rule if rule is not None and set(rule.classes) & classes else None


def _expr_values(expr: dict[str, Any], where: str) -> list[str]:
    return [check_label_value(v, where) for v in expr.get("values") or []]


def select(
    spec: dict[str, Any],
    classes: set[str],
    rules: RuleSet,
    report: Report,
    *,
    remove_pool_labels: bool,
    prioritized_list: bool,
    drop_tolerations: bool,
    removed_resources: set[str],
    removed_taints: tuple[str, ...] = (),
) -> Selection:
    sel = Selection()
    _node_selector(spec, classes, rules, report, sel, remove_pool_labels)
    affinity = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}) if isinstance(spec.get("affinity"), dict) else {}
    )
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    if isinstance(required, dict) and isinstance(required.get("nodeSelectorTerms"), list):
        _required(required, classes, rules, report, sel, remove_pool_labels)
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, dict) else None
    if isinstance(preferred, list):
        _preferred(preferred, classes, rules, report, sel, remove_pool_labels, prioritized_list)
    _tolerations(spec, rules, report, sel, drop_tolerations, removed_resources, removed_taints)
    return sel


def _node_selector(
    spec: dict[str, Any], classes: set[str], rules: RuleSet, report: Report, sel: Selection, remove_pool: bool
) -> None:
    ns = spec.get("nodeSelector")
    if not isinstance(ns, dict):
        return
    for key, value in ns.items():
        rule = _relevant(rules, key, classes)
        if rule is None:
            continue
        text = check_label_value(value, f"nodeSelector {key}")
        try:
            cel = requirement(rule, "In", [text])
        except Inexact as exc:
            report("inexact-label", f"nodeSelector {key}: {text}: {exc}; left on the pod, not translated", ns, key)
            continue
        for cls in set(rule.classes) & classes:
            sel.add(cls, cel, slug(rule, "In", [text]))
        if rule.role == "feature" or remove_pool:
            sel.drop_node_selector.append(str(key))
        else:
            report(
                "pool-label-kept",
                f"nodeSelector {key}: {text} is a cloud node-pool label: translated into the "
                "claim's selector and kept on the pod, since autoscalers scale node pools from it "
                "(--remove-node-selectors removes it)",
                ns,
                key,
            )


def _required(
    required: dict[str, Any], classes: set[str], rules: RuleSet, report: Report, sel: Selection, remove_pool: bool
) -> None:
    terms = required["nodeSelectorTerms"]
    parsed = []
    for term in terms:
        exprs = [e for e in (term or {}).get("matchExpressions") or [] if isinstance(e, dict)]
        device = [e for e in exprs if _relevant(rules, e.get("key"), classes)]
        other = [e for e in exprs if not _relevant(rules, e.get("key"), classes)]
        parsed.append((term, device, other, (term or {}).get("matchFields")))
    if not any(device for _, device, _, _ in parsed):
        return
    if len({repr((_plain(o), _plain(f))) for _, _, o, f in parsed}) > 1:
        report(
            "inexact-label",
            "required node affinity: the nodeSelectorTerms differ in requirements other than the "
            "device, so their OR cannot move onto the device request exactly; left as is",
            required,
            "nodeSelectorTerms",
        )
        return
    per_term: list[dict[str, list[str]]] = []
    slugs: dict[str, str] = {}
    try:
        for _, device, _, _ in parsed:
            cels: dict[str, list[str]] = {}
            for e in device:
                rule = rules.labels[str(e["key"])]
                values = _expr_values(e, f"node affinity {e['key']}")
                cel = requirement(rule, str(e.get("operator")), values)
                slugs[cel] = slug(rule, str(e.get("operator")), values)
                for cls in set(rule.classes) & classes:
                    cels.setdefault(cls, [])
                    if cel:
                        cels[cls].append(cel)
            per_term.append(cels)
    except Inexact as exc:
        report(
            "inexact-label", f"required node affinity: {exc}; left as is, not translated", required, "nodeSelectorTerms"
        )
        return
    for cls in classes:
        alts = [" && ".join(t.get(cls, [])) for t in per_term]
        if any(a == "" for a in alts):
            continue  # some term allows any device of the class
        if len(alts) == 1:
            for cel in per_term[0][cls]:
                sel.add(cls, cel, slugs.get(cel, ""))
        else:
            alt_slugs = ["-".join(slugs.get(c, "") for c in t.get(cls, [])) for t in per_term]
            sel.add(cls, " || ".join(f"({a})" for a in dict.fromkeys(alts)), "-or-".join(dict.fromkeys(alt_slugs)))
    # The terms without the translated labels (pool labels stay unless asked); identical terms collapse.
    edits: list[tuple[int, list[int]]] = []
    seen: set[str] = set()
    for idx, (term, _, _, _) in enumerate(parsed):
        exprs = term.get("matchExpressions") or []
        drop = []
        for j, e in enumerate(exprs):
            r = _relevant(rules, e.get("key"), classes)
            if r is None:
                continue
            if r.role == "feature" or remove_pool:
                drop.append(j)
            else:
                report(
                    "pool-label-kept",
                    f"node affinity {e['key']} is a cloud node-pool label: translated into the "
                    "claim's selector and kept on the pod (--remove-node-selectors removes it)",
                    exprs,
                    j,
                )
        rest = {str(k): _plain(v) for k, v in term.items() if k != "matchExpressions"}
        kept = [_plain(e) for j, e in enumerate(exprs) if j not in drop]
        if kept:
            rest["matchExpressions"] = kept
        key = repr(rest)
        if rest and key not in seen:
            seen.add(key)
            edits.append((idx, drop))
    if not edits:
        sel.drop_required = True
    elif len(edits) != len(terms) or any(drop for _, drop in edits):
        sel.required_terms = edits


def _preferred(
    preferred: list[Any],
    classes: set[str],
    rules: RuleSet,
    report: Report,
    sel: Selection,
    remove_pool: bool,
    prioritized_list: bool,
) -> None:
    choices: list[tuple[int, int, dict[str, list[str]]]] = []
    for i, p in enumerate(preferred):
        exprs = [e for e in ((p or {}).get("preference") or {}).get("matchExpressions") or [] if isinstance(e, dict)]
        if not exprs or not all(_relevant(rules, e.get("key"), classes) for e in exprs):
            continue
        try:
            cels: dict[str, list[str]] = {}
            for e in exprs:
                rule = rules.labels[str(e["key"])]
                values = _expr_values(e, f"preferred affinity {e['key']}")
                cel = requirement(rule, str(e.get("operator")), values)
                if cel:
                    sel.slugs.setdefault(cel, slug(rule, str(e.get("operator")), values))
                for cls in set(rule.classes) & classes:
                    cels.setdefault(cls, [])
                    if cel:
                        cels[cls].append(cel)
        except Inexact as exc:
            report("inexact-label", f"preferred node affinity: {exc}; left as is", preferred, i)
            continue
        choices.append((int(p.get("weight") or 0), i, cels))
    if not choices:
        return
    if not prioritized_list:
        report(
            "preference-lost",
            "preferred node affinity between device models: the target Kubernetes version has "
            "no firstAvailable (DRAPrioritizedList is on by default from 1.34), so the claim keeps only the "
            "required choice; the node preference stays on the pod",
            preferred,
            choices[0][1],
        )
        return
    choices.sort(key=lambda c: -c[0])
    for weight, i, cels in choices:
        for cls, exprs in cels.items():
            sel.alternatives.setdefault(cls, []).append(Alternative(weight, {cls: exprs}))
        exprs_all = ((preferred[i].get("preference") or {}).get("matchExpressions")) or []
        if all(rules.labels[str(e["key"])].role == "feature" or remove_pool for e in exprs_all):
            sel.drop_preferred.append(i)


def removed_taint(t: dict[str, Any], removed_taints: tuple[str, ...]) -> str:
    """The `removed-taints` entry (`key` or `key=value`) that covers everything this toleration tolerates, or ''.
    An Exists toleration is covered only by a key-wide entry: it tolerates every value of the key."""
    key = str(t.get("key") or "")
    value = t.get("value")
    exists = t.get("operator") == "Exists"
    for entry in removed_taints:
        k, sep, v = entry.partition("=")
        if k != key:
            continue
        if not sep or (not exists and value is not None and str(value) == v):
            return entry
    return ""


def _tolerations(
    spec: dict[str, Any],
    rules: RuleSet,
    report: Report,
    sel: Selection,
    drop: bool,
    removed: set[str],
    removed_taints: tuple[str, ...],
) -> None:
    """Device-taint tolerations besides the plugin-equivalent one. Node taints do not change when a cluster moves
    to DRA (an AKS GPU pool stays tainted sku=gpu), so a toleration is removed only when its taint is named in the
    `removed-taints` setting."""
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        return
    for i, t in enumerate(tolerations):
        if not isinstance(t, dict):
            continue
        key = str(t.get("key") or "")
        gone = removed_taint(t, removed_taints)
        device_key = key in rules.taints or key in removed
        if key in rules.taint_values:
            device_key = t.get("operator") == "Exists" or str(t.get("value")) in rules.taint_values[key]
        if not device_key and not gone:
            continue
        plugin_equivalent = (
            key in removed and t.get("operator") == "Exists" and t.get("effect") in (None, "", "NoSchedule")
        )
        if plugin_equivalent:
            continue
        what = f"{key}{'=' + str(t.get('value')) if t.get('value') is not None else ''}"
        if gone:
            sel.drop_tolerations.append(i)
            report(
                "device-toleration",
                f"toleration {what}: the cluster removes the taint {gone} (removed-taints setting), so the "
                "toleration goes",
                tolerations,
                i,
            )
        elif drop:
            report(
                "device-toleration",
                f"toleration {what} is kept although --drop-tolerations is set: node taints stay when a cluster "
                "moves to DRA, so the pod still needs it; if the cluster removes this taint, name it with "
                f"--removed-taint {what} (config removed-taints)",
                tolerations,
                i,
            )
        else:
            report(
                "device-toleration",
                f"toleration {what} is a device-node taint toleration besides the one the "
                "ExtendedResourceToleration plugin added; kept, since node taints stay when a cluster moves to DRA "
                f"(--removed-taint {what} removes it if the cluster drops that taint)",
                tolerations,
                i,
            )


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node
