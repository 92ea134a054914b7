"""Pods asking for two device kinds in one container (a GPU and EFA interfaces: AWS's multi-node Triton
LeaderWorkerSet) in the idiomatic rewrite of pattern A. The manifest migration gives such a pod one claim with a
request per kind while the counts add up to 32 devices at most, and a claim per kind above that (plan.split_claims:
the scheduler allocates at most 32 devices to one claim); a count of 0 drops that kind's request or claim. The
rewritten pod has both shapes, `if le (add A B) 32` / `else`: the claim of both is the one pattern A writes for
several device keys (it switches every key off, adds the tolerations and reads dra.deviceClassName for the first
kind), and each kind's own claim comes with its own guarded entries and ResourceClaimTemplate (merge_edits joins the
entries of one list)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TYPE_CHECKING, Any

from dramigrate.helm.rewrite import RewriteError
from dramigrate.rules import RuleSet

if TYPE_CHECKING:
    from dramigrate.helm.model import Device, PodDelta
    from dramigrate.helm.templatelines import Edit


def claim_deltas(
    old: dict[str, Any], new: dict[str, Any], claim_templates: dict[str, Any], error: type[RewriteError]
) -> list[PodDelta]:
    """What the migration added to one pod spec, one delta per claim it added, in its order ([] when none). Every
    delta carries all the pod's changes (tolerations, moved labels), which `shapes` gives the claim of both kinds."""
    from dramigrate.helm.poddelta import claim_delta

    claims = new.get("resourceClaims") or []
    if old.get("resourceClaims") and len(claims) > len(old["resourceClaims"]) + 1:
        raise error("the migration gives this pod several claims beside claims of its own")
    if len(claims) < 2 or old.get("resourceClaims"):
        delta = claim_delta(old, new, claim_templates, error)  # one claim (a pod's own claims beside: refused)
        return [delta] if delta is not None else []
    out = []
    for claim in claims:
        delta = claim_delta(old, {**new, "resourceClaims": [claim]}, claim_templates, error)
        if delta is not None:
            out.append(delta)
    return out


def pod_claims(
    original: list[dict[str, Any]], migrated: list[dict[str, Any]], claim_templates: dict[str, Any]
) -> list[list[PodDelta]]:
    """What the migration added to each pod of a template that got a claim, in document order: per pod, its claims."""
    from dramigrate.helm.poddelta import pod_groups

    before = [group for doc in original for group in pod_groups(doc, [])]
    after = [group for doc in migrated for group in pod_groups(doc, [])]
    out = []
    for (old_group, old), (new_group, new) in zip(before, after, strict=False):
        if deltas := claim_deltas(old, new, claim_templates, RewriteError):
            params = (old_group or {}).get("rayStartParams") or {}
            changed = {k: v for k, v in ((new_group or {}).get("rayStartParams") or {}).items() if params.get(k) != v}
            out.append([dataclasses.replace(d, params=changed) for d in deltas])
    if not out:
        raise RewriteError("the migration adds no claim to this template's pods")
    return out


def takes(devices: list[Device], claims: list[list[PodDelta]], rules: RuleSet, rel: str) -> bool:
    """Whether the template's pods go the way of this module: the migration gives a pod several claims, or its device
    keys name resources of distinct device classes that are no vendor choice (one branch of an `if` each)."""
    from dramigrate.helm.idiomatic import _choice

    if any(len(own) > 1 for own in claims):
        return True
    resources = {d.resource for d in devices}
    if len(resources) < 2 or any(d.loop is not None or d.name for d in devices):
        return False
    matches = [rules.lookup(r) for r in resources]  # each a device of its own class (not HAMi's GPU memory)
    classes = {m.rule.device_class for m in matches if m is not None and m.rule.device_class and not m.rule.report_only}
    if len(classes) != len(resources):
        return False
    if any(set(d.spec.get("spec", {}).get("devices", {})) != {"requests"} for own in claims for d in own):
        return False  # a claim that ties the devices together (--align-nics): one claim whatever the counts
    return all(_choice(devices, own[0], rules, rel) is None for own in claims)


def own_conditions_in_counts(devices: list[Device]) -> list[Device]:
    """A pod's device keys with the conditions of their own (`if .Values.efa.enabled` around the EFA key) folded into
    their counts, `ternary <count> "" <conditions>`: no device where the key does not render, so neither a request
    nor the toleration, whose gates read the count (`gt (int X) 0`, `ne (cat X) ""`)."""
    from dramigrate.helm.goexpr import and_all, as_arg, grouped

    shared = [c for c in devices[0].conditions if all(c in d.conditions for d in devices)]
    out = []
    for d in devices:
        own = [c for c in d.conditions if c not in shared]
        if own:
            count = f'ternary {as_arg(d.count)} "" {grouped(and_all(*own))}'
            d = dataclasses.replace(d, count=count, conditions=list(shared), branch=None, branch_conditions=[])
        out.append(d)
    return out


def _requests_of(delta: PodDelta, rel: str) -> list[dict[str, Any]]:
    devices = delta.spec.get("spec", {}).get("devices", {})
    if set(devices) != {"requests"}:
        why = "ties its devices together (constraints) or configures them" if devices else "asks for no device"
        raise RewriteError(f"{rel}: the migration's claim {delta.claim} {why}: the rewrite splits no such claim")
    return list(devices["requests"])


def missing_request(
    rel: str,
    devices: list[Device],
    deltas: list[PodDelta],
    rules: RuleSet,
    originals: list[dict[str, Any]],
    alternative: Any,
    pod: int,
) -> list[dict[str, Any]]:
    """The claim requests of the pod's device kinds its claims leave out (a count of 0 with the values the rewrite is
    read from: EFA off): the migration's, of the pod's objects with those counts set to 1."""
    from dramigrate.helm.namelookup import _request_resources
    from dramigrate.helm.values import resource_sections

    taken = {r for d in deltas for r in _request_resources(d.spec, devices, rules, rel).values()}
    left = sorted({d.resource for d in devices} - taken)
    if not left:
        return []
    if alternative is None:
        raise RewriteError(f"{rel}: the pod asks for {', '.join(left)} with no claim in the migration")
    raised = json.loads(json.dumps(originals))
    for holder, section in resource_sections(raised):
        for res in left:
            if res in holder[section]:
                holder[section][res] = 1
    _, migrated, templates = alternative(raised, "", "")
    claims = pod_claims(raised, migrated, templates)
    if pod >= len(claims):
        raise RewriteError(f"{rel}: with a count of 1 for {', '.join(left)} the migration gives the pod no claim")
    out = []
    for delta in claims[pod]:
        names = _request_resources(delta.spec, devices, rules, rel)
        out += [r for r in _requests_of(delta, rel) if names.get(str(r.get("name"))) in left]
    if {r for r in left} - {
        res for delta in claims[pod] for res in _request_resources(delta.spec, devices, rules, rel).values()
    }:
        raise RewriteError(f"{rel}: with a count of 1 for {', '.join(left)} the migration leaves a device unclaimed")
    return out


def shapes(
    rel: str, devices: list[Device], deltas: list[PodDelta], rules: RuleSet, extra: list[dict[str, Any]]
) -> tuple[PodDelta, list[tuple[list[Device], PodDelta, dict[str, str]]]]:
    """The two shapes the migration gives a pod asking for two device kinds: one claim with a request for each
    (while they add up to 32 devices at most; it takes the pod's tolerations and moved labels), and a claim of each
    (above, each its device keys and requests by resource). `extra`: requests of kinds the claims leave out."""
    from dramigrate.helm.namelookup import _request_resources

    requests = [r for d in deltas for r in _requests_of(d, rel)] + extra
    joint = dataclasses.replace(
        deltas[0],
        claim="-".join(str(r.get("name")) for r in requests),
        spec={"spec": {"devices": {"requests": requests}}},
    )
    names = _request_resources(joint.spec, devices, rules, rel)
    if len(set(names.values())) != len(names):
        raise RewriteError(f"{rel}: the migration asks for one device kind in two requests of a pod")
    parts = []
    for request in requests:
        resource = names[str(request["name"])]
        part = dataclasses.replace(
            deltas[0],
            claim=str(request["name"]),
            spec={"spec": {"devices": {"requests": [request]}}},
            tolerations=[],
            covered=[],
            labels={},
            affinity=[],
            params={},
        )
        parts.append(([d for d in devices if d.resource == resource], part, {str(request["name"]): resource}))
    return joint, parts


_IF_LINE = re.compile(r"(\s*)\{\{- if (.+) \}\}")
_OPENS = re.compile(r"\{\{-?\s*(?:if|with|range)\b")
_CLOSES = re.compile(r"\{\{-?\s*end\s*-?\}\}")
Block = tuple[str, str, str, list[str]]  # (indent, condition, key, the key's lines after `key:`)


def _blocks(lines: list[str]) -> list[Block] | None:
    """An inserted run of `{{- if C }}` / `key:` + its lines / `{{- end }}` blocks (one `if` may hold several keys)
    as one entry per key; None when the lines are not that."""
    out: list[Block] = []
    k = 0
    while k < len(lines):
        m = _IF_LINE.fullmatch(lines[k])
        if m is None:
            return None
        ind, cond, depth, j = m.group(1), m.group(2), 0, k + 1
        while j < len(lines):
            if lines[j] == f"{ind}{{{{- end }}}}" and depth == 0:
                break
            depth += len(_OPENS.findall(lines[j])) - len(_CLOSES.findall(lines[j]))
            j += 1
        if j == len(lines):
            return None
        key_at = [i for i in range(k + 1, j) if re.fullmatch(re.escape(ind) + r"[\w-]+:", lines[i])]
        if not key_at or key_at[0] != k + 1:
            return None
        for at, end in zip(key_at, [*key_at[1:], j], strict=True):
            out.append((ind, cond, lines[at].strip(), lines[at + 1 : end]))
        k = j + 1
    return out


def _and_terms(cond: str) -> list[str]:
    from dramigrate.helm.goexpr import grouped
    from dramigrate.helm.idiomatic import _terms

    terms = _terms(cond)
    return [grouped(t) for t in terms[1:]] if terms[:1] == ["and"] else [grouped(cond)]


def _shape_split(rests: list[list[str]]) -> tuple[str, str, list[str]] | None:
    """For the blocks of one claim of both device kinds (first, its rest ending in `(le S 32)`) and a claim of each
    (`(gt S 32)`) whose other conditions are one count each, those of the first `or`-ed (or none, for a literal
    count): the first's condition, the `le` test and the parts' conditions, for an `if`/`else`; None else."""
    from dramigrate.helm.goexpr import and_all
    from dramigrate.helm.idiomatic import _or

    first, *others = rests
    if not others or not first or not first[-1].startswith("(le "):
        return None
    split = "(gt " + first[-1][len("(le ") :]
    if any(not rest or rest[-1] != split for rest in others):
        return None
    own = [and_all(*rest[:-1]) if rest[:-1] else "" for rest in others]
    if not first[:-1]:  # the claim of both always renders (a literal count): so does one of each kind's own
        return ("", first[-1], own) if not all(own) else None
    if not all(own) or and_all(*first[:-1]) != _or(*own):
        return None
    return and_all(*first[:-1]), first[-1], own


def _joined_blocks(blocks: list[Block]) -> list[str]:
    """One `key:` per key, each block's lines under it inside `if` the condition that block has beyond those all of
    the key's blocks share (`and .Values.dra.enabled` once, then each claim's own count); the claim of both device
    kinds and the claim of each as `if le (add A B) 32` / `else`."""
    from dramigrate.helm.goexpr import and_all, grouped, unparenthesized
    from dramigrate.helm.idiomatic import _or

    out: list[str] = []
    for key in dict.fromkeys(b[2] for b in blocks):
        own = [b for b in blocks if b[2] == key]
        ind = own[0][0]
        terms = [_and_terms(b[1]) for b in own]
        common = [t for t in terms[0] if all(t in other for other in terms[1:])]
        rests = [[t for t in ts if t not in common] for ts in terms]
        if shape := _shape_split(rests):
            either, test, parts = shape
            out += [f"{ind}{{{{- if {and_all(*common, grouped(either) if either else '')} }}}}", f"{ind}{key}"]
            out += [f"{ind}  {{{{- if {unparenthesized(test)} }}}}", *own[0][3], f"{ind}  {{{{- else }}}}"]
            for (_, _, _, body), cond in zip(own[1:], parts, strict=True):
                out += (
                    [f"{ind}  {{{{- if {unparenthesized(cond)} }}}}", *body, f"{ind}  {{{{- end }}}}"] if cond else body
                )
            out += [f"{ind}  {{{{- end }}}}", f"{ind}{{{{- end }}}}"]
            continue
        either = "" if any(not rest for rest in rests) else _or(*(grouped(and_all(*rest)) for rest in rests))
        out += [f"{ind}{{{{- if {and_all(*common, either)} }}}}", f"{ind}{key}"]
        for (_, _, _, body), rest in zip(own, rests, strict=True):
            if rest:
                out += [f"{ind}  {{{{- if {unparenthesized(and_all(*rest))} }}}}", *body, f"{ind}  {{{{- end }}}}"]
            else:
                out += body
        out.append(f"{ind}{{{{- end }}}}")
    return out


def merge_edits(parts: list[list[Edit]], rel: str) -> list[Edit]:
    """The edits of one template's claims together: insertions at one line (the container's `claims:`, the pod's
    `resourceClaims:` and `tolerations:`) joined key by key; any other overlap is refused."""
    from dramigrate.helm.templatelines import Edit

    inserts: dict[int, list[Edit]] = {}
    others: list[Edit] = []
    for edits in parts:
        for e in edits:
            if e.index == e.stop:
                inserts.setdefault(e.index, []).append(e)
            else:
                others.append(e)
    out = list(others)
    for a, b in ((a, b) for k, a in enumerate(others) for b in others[k + 1 :]):
        if max(a.index, b.index) < min(a.stop, b.stop):
            raise RewriteError(f"{rel}:{b.index + 1}: the rewrite of the pod's claims changes one place twice")
    for at, edits in sorted(inserts.items()):
        if any(o.index < at < o.stop for o in others):
            raise RewriteError(f"{rel}:{at + 1}: the rewrite of the pod's claims changes one place twice")
        if len(edits) == 1:
            out.append(edits[0])
            continue
        blocks = [_blocks(e.lines) for e in edits]
        if any(b is None for b in blocks):
            raise RewriteError(f"{rel}:{at + 1}: the pod's claims change one line in two ways")
        out.append(Edit(at, at, _joined_blocks([b for own in blocks for b in own or []]), edits[0].reads))
    return out
