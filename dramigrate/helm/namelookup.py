"""Pattern E, a device key whose name comes from values (`{{ .Values.gpu.type }}: 1`): what the migration derives from
the name (CEL selectors, the toleration key, the request name) for each resource the key may plausibly name, as a
`dict` the claim template looks the name up in at render time; a name the packs migrate that the lookup does not
know fails the render (migrated_guard).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from dramigrate.helm.goexpr import as_arg
from dramigrate.helm.model import CLAIM_TEMPLATE_FILE, NAME, Alternative, Device, Lookup, PodDelta
from dramigrate.helm.patterns import name_candidates
from dramigrate.helm.poddelta import pod_delta, pod_groups
from dramigrate.helm.rewrite import RewriteError
from dramigrate.helm.templatelines import bare, is_key, parent_line
from dramigrate.helm.twinnames import one_name
from dramigrate.rules import RuleSet


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else None
    return {path: node} if items is None else {p: v for k, x in items for p, v in _leaves(x, (*path, k)).items()}


def _lookup(
    rel: str,
    text: str,
    devices: list[Device],
    delta: PodDelta,
    k: int,
    originals: list[dict[str, Any]],
    alternative: Alternative | None,
    rules: RuleSet,
    given: tuple[str, ...] = (),
) -> Lookup:
    """Pattern E: what the migration adds to pod `k` of the template for each device resource its values key may
    name, as a Lookup: the resources of its rule pack and those the value sets `given` render (each with its own
    entry); the resources must give claims of one shape (the same claim, requests and leaves)."""
    resource, expr = devices[0].resource, one_name(rel, devices, _request_twins(text.splitlines(), devices))
    if any(d.resource != resource for d in devices):
        raise RewriteError(f"{rel}: the pod's device keys are not all the one resource name from values ({expr})")
    deltas = {resource: delta}
    own = [n for n in given if name_candidates(n, rules)]
    for other in dict.fromkeys([*name_candidates(resource, rules)[1:], *own]):
        if other == resource:
            continue
        if alternative is None:
            raise RewriteError(f"{rel}: the device resource name comes from values ({expr})")
        got = pod_delta(*alternative(originals, resource, other))
        if len(got) <= k:
            raise RewriteError(f"{rel}: the migration adds claims to {len(got)} pod(s) when {expr} is {other}")
        deltas[other] = got[k]
    pods = [pod for doc in originals for _, pod in pod_groups(doc, [])]
    tolerated = [t.get("key") for p in pods for t in p.get("tolerations") or [] if isinstance(t, dict)]
    if not delta.tolerations and resource in tolerated:
        for res, d in deltas.items():  # the values that pick a name tolerate it, as they do the rendered one
            if all(t.get("key") == res for t in d.tolerations):
                deltas[res] = dataclasses.replace(d, tolerations=[])
    tolerations = {res: _leaves(d.tolerations) for res, d in deltas.items()}
    for res, d in deltas.items():
        if (d.labels, d.namespaced) != (delta.labels, delta.namespaced) or (
            tolerations[res].keys() != tolerations[resource].keys()
        ):
            raise RewriteError(f"{rel}: the migration gives the pod a claim of another shape when {expr} is {res}")
    # the claim is named after the device (a MIG profile's `mig`, a GPU's `gpu`): the pod looks its name up too
    claims = {res: d.claim for res, d in deltas.items()} if len({d.claim for d in deltas.values()}) > 1 else {}
    entries: dict[str, dict[str, Any]] = {res: {} for res in deltas}
    fields: tuple[dict[tuple[Any, ...], str], ...] = ({}, {})
    for path, value in tolerations[resource].items():
        if all(tolerations[res][path] == res for res in deltas):
            fields[1][path] = NAME
        elif any(tolerations[res][path] != value for res in deltas):  # the tolerations read the name only
            raise RewriteError(f"{rel}: the migration's toleration differs by more than the name {expr}")
    for path, values in _spots({res: d.spec for res, d in deltas.items()}).items():
        if all(v == res for res, v in values.items()):
            fields[0][path] = NAME
            continue
        name = re.sub(r"\W", "", next((p for p in reversed(path) if isinstance(p, str)), "value"))
        while name in {f.rstrip("?") for f in fields[0].values()}:
            name += "X"
        fields[0][path] = name + "?" * any(v is _MISSING for v in values.values())  # `?`: some resources have none
        for res, v in values.items():
            if v is not _MISSING:
                entries[res][name] = v
    return Lookup(expr, devices[0].name_key, entries, *fields, claims)


_MISSING = object()


def _spots(trees: dict[str, Any], path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Where the trees (one per device resource) differ, each place with its value per resource (_MISSING where a
    tree has no such key): the deepest paths down dicts and down lists of one length."""
    nodes = list(trees.values())
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    if all(isinstance(n, dict) for n in nodes):
        for key in dict.fromkeys(k for n in nodes for k in n):
            sub = {res: n.get(key, _MISSING) for res, n in trees.items()}
            missing = any(v is _MISSING for v in sub.values())
            out.update({(*path, key): sub} if missing else _spots(sub, (*path, key)))
        return out
    if all(isinstance(n, list) for n in nodes) and len({len(n) for n in nodes}) == 1:
        for i in range(len(nodes[0])):
            out.update(_spots({res: n[i] for res, n in trees.items()}, (*path, i)))
        return out
    return {} if all(n == nodes[0] for n in nodes) else {path: trees}


def _sentinels(node: Any, fields: dict[tuple[Any, ...], str]) -> Any:
    """A copy of `node` with each leaf of `fields` replaced by its sentinel (`@@DRA:<field>@@`, or NAME)."""
    out = json.loads(json.dumps(node))
    for path, name in fields.items():
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = name if name == NAME else f"@@DRA:{name}@@"
    return out


def _looked_up(text: str, name: str) -> str:
    """Template text with the sentinels read from the name's entry in the lookup (`$draKnown`) and the name."""
    entry = f"(index $draKnown {as_arg(name)} | default dict)"  # an unknown name, with dra.existingClaimTemplate
    text = re.sub(  # the names' classes differ: dra.deviceClassName, when set, else the name's own
        r"'?@@DRA:deviceClassName@@'?", f"{{{{ .Values.dra.deviceClassName | default {entry}.deviceClassName }}}}", text
    )
    text = re.sub(  # a key only some resources have: written when the name's entry has it
        r"^( *)(\S+): '?@@DRA:(\w+)\?@@'?$",
        lambda m: f"{m[1]}{{{{- with {entry}.{m[3]} }}}}\n{m[1]}{m[2]}: {{{{ toJson . }}}}\n{m[1]}{{{{- end }}}}",
        text,
        flags=re.M,
    )
    text = re.sub(r"'?@@DRA:(\w+)@@'?", lambda m: f"{{{{ {entry}.{m.group(1)} | toJson }}}}", text)
    return re.sub(rf"'?{NAME}'?", f"{{{{ {name} }}}}", text)


def _literal(value: Any) -> str:
    """A value as a Go template literal (lists and maps built with sprig's `list` and `dict`)."""
    if isinstance(value, dict):
        return f"(dict{''.join(f' {json.dumps(str(k))} {_literal(v)}' for k, v in value.items())})"
    if isinstance(value, list):
        return f"(list{''.join(f' {_literal(v)}' for v in value)})"
    return "nil" if value is None else json.dumps(value)


def _lookup_lines(lookup: Lookup) -> str:
    """The claim spec's first lines: a `dict` of the resources the chart knows (`$draKnown`) and a `fail` with a clear
    message for a name it does not know, unless the pods use an existing claim template (dra.existingClaimTemplate),
    which may request any device."""
    entries = [
        f"{json.dumps(res)} (dict{''.join(f' {json.dumps(f)} {_literal(v)}' for f, v in own.items())})"
        for res, own in lookup.entries.items()
    ]
    known = f"{{{{- $draKnown := dict {entries[0]} -}}}}"  # one name known: one line, where it fits in 120
    if len(entries) > 1 or len(known) > 120:
        known = "{{- $draKnown := dict" + "".join("\n    " + e for e in entries) + " -}}"
    joined = re.match(r'printf "([^"%]*)%s([^"%]*)"', lookup.expr)  # `{{ .Values.gpu.vendor }}/gpu`: the name
    named = f"{joined.group(1)}<{lookup.key}>{joined.group(2)}" if joined else lookup.key
    message = (  # a literal: Helm shows it as it is, and dramigrate's sandbox shows only template text
        f"dra.enabled: {named} names a device resource the chart's DRA claim does not know (it knows "
        f"{', '.join(lookup.entries)}): set dra.enabled=false to request it from its device plugin, or add it to "
        f"the dict in {CLAIM_TEMPLATE_FILE}"
    )
    name = as_arg(lookup.expr)
    return (
        f"{known}\n"
        f"{{{{- if and (not .Values.dra.existingClaimTemplate) (not (hasKey $draKnown {name})) }}}}"
        f"{{{{ fail {json.dumps(message)} }}}}{{{{ end -}}}}\n"
    )


def migrated_define(chart: str) -> str:
    """The helper a pattern-E name is tested with: "true" when the rule packs migrate the device resource it names."""
    return f"{chart}.draMigrated"


def migrated_guard(chart: str, name: str) -> str:
    """Pattern E: the DRA branch only for a name the migration moves to a claim (`fix -` leaves a resource no rule pack
    migrates, or a report-only one, on its device plugin: so does the chart), or for the user's own claim template,
    which may request any device."""
    return f'(or .Values.dra.existingClaimTemplate (include "{migrated_define(chart)}" {as_arg(name)}))'


def migrated_section(chart: str, rules: RuleSet) -> str:
    """The claim template file's define of migrated_define: a regular expression of the resources the packs migrate."""
    from dramigrate.helm.patterns import migrated_regex

    pattern = split_literal(migrated_regex(rules), pad="    ")
    return (
        f'{{{{- define "{migrated_define(chart)}" -}}}}\n'
        f"{{{{- if regexMatch {pattern} (toString .) }}}}true{{{{ end -}}}}\n"
        "{{- end }}\n"
    )


def _alternatives(
    rel: str, devices: list[Device], originals: list[dict[str, Any]], alternative: Alternative | None, rules: RuleSet
) -> dict[str, tuple[PodDelta, dict[str, str]]]:
    """For each other branch of a vendor choice: what the migration adds when the pod asks for its device instead
    (the render's objects with the device renamed; the objects as a value set of the proof renders that branch when
    the migration moves node selection of that branch's own into the claim there, as dell's NVIDIA branch writes its
    `nvidia.com/gpu.product` label)."""
    if alternative is None:
        raise RewriteError(f"{rel}: the device keys are branches of a device choice")
    out: dict[str, tuple[PodDelta, dict[str, str]]] = {}
    first = devices[0].resource
    for res in dict.fromkeys(d.resource for d in devices[1:]):
        deltas = pod_delta(*alternative(originals, first, res))
        try:  # as a value set renders that branch (none: not rendered)
            shown = alternative(originals, first, res, live=True)
            live = pod_delta(*shown) if shown[0] else []
        except RewriteError:  # a live render the renamed one does not stand for: the renamed one serves
            live = []
        if len(live) == 1 and (live[0].labels or live[0].affinity) and not (deltas and deltas[0].labels):
            deltas = live
        if len(deltas) != 1:
            raise RewriteError(f"{rel}: the migration of the {res} branch adds claims to {len(deltas)} pods")
        own = [d for d in devices if d.resource == res]
        out[res] = (deltas[0], _request_resources(deltas[0].spec, own, rules, rel))
    return out


def split_literal(text: str, width: int = 96, pad: str = "    ") -> str:
    """`text` as a template string: one literal, or a `print` of literals cut at `|` (a regular expression's
    alternatives, one line each up to `width`), which prints them joined."""
    if len(text) <= width:
        return json.dumps(text)
    parts, line = [], ""
    for piece in re.split(r"(?<=\|)", text):
        if line and len(line) + len(piece) > width:
            parts.append(line)
            line = ""
        line += piece
    return "(print " + f"\n{pad}".join(json.dumps(part) for part in [*parts, line]) + ")"


def _requests(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("spec", spec).get("devices", {}).get("requests", []))


def _request_resources(spec: dict[str, Any], devices: list[Device], rules: RuleSet, rel: str) -> dict[str, str]:
    """Which device resource of the template each request of the migrated claim stands for (by device class)."""
    resources = list(dict.fromkeys(d.resource for d in devices))
    if len(resources) == 1:
        return {r["name"]: resources[0] for r in _requests(spec)}
    by_class: dict[str, str] = {}
    for res in resources:
        match = rules.lookup(res)
        cls = match.rule.device_class if match is not None else None
        if cls is None or cls in by_class:
            raise RewriteError(f"{rel}: the device resources {', '.join(resources)} do not map to distinct classes")
        by_class[cls] = res
    out = {}
    for req in _requests(spec):
        cls = (req.get("exactly") or req).get("deviceClassName")
        if cls not in by_class:
            raise RewriteError(f"{rel}: the claim's request {req.get('name')} has no device key in the template")
        out[str(req["name"])] = by_class[cls]
    return out


def _request_twins(lines: list[str], devices: list[Device]) -> dict[int, Device]:
    """The device keys under `requests:` whose container asks for the same device under `limits:` with another count
    expression (lintasarta-vllm: `index .Values.resources.limits "nvidia.com/gpu"` and the same from `.requests`),
    each with its limits key. Kubernetes needs an extended resource's request equal to its limit, so the limit is
    the count and the DRA branch checks that the two are equal."""
    by_container: dict[tuple[int, str], dict[str, Device]] = {}
    for d in devices:
        section = parent_line(lines, d.index)
        if section >= 0 and is_key(lines[section], "limits", "requests"):
            own = by_container.setdefault((parent_line(lines, section), d.resource), {})
            own.setdefault(bare(lines[section])[:-1], d)
    return {
        own["requests"].index: own["limits"]
        for own in by_container.values()
        if len(own) == 2
        and (
            own["requests"].count != own["limits"].count
            or own["requests"].conditions != own["limits"].conditions
            or own["requests"].name != own["limits"].name
        )
    }
