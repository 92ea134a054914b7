"""A helper whose device key is a vendor choice: one `if`/`else if` chain with another device resource's key in
each branch (kse's `deepseek.resources`: `if .Values.enableAMD` writes `amd.com/gpu`, `else if .Values.enableNvidia`
writes `nvidia.com/gpu`, each counted by a helper of its own, under `requests:` and again under `limits:`).

A render takes one branch, so the rendered key names one vendor; the other branches' keys are read from the chain
itself. With the switch on, every branch's key goes to the DRA branch: `<helper>.draCount` replays the chain and
writes the count of the branch that renders, `<helper>.draDevice` its device resource, and `<helper>.draClaimSpec`
and the pod's toleration pick the migration's spec and toleration for that device (what the migration adds when
the pod asks for it instead: run.py's alternative migration of the rendered template).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dramigrate.helm.helper import _KEY_LINE, Block, CallSite, KeyLine, NotHelper, blocks, enclosing, included_count
from dramigrate.helm.patterns import count_expression

if TYPE_CHECKING:
    from dramigrate.helm.model import PodDelta
    from dramigrate.rules import RuleSet


@dataclass
class Choice:
    """The other branches of a vendor choice: their key lines, and per device resource what the migration adds to
    each call site's pod (file, line of the include) when the pod asks for that device instead."""

    keys: list[KeyLine]
    deltas: dict[str, dict[tuple[str, int], PodDelta]] = field(default_factory=dict)
    migrated: str = ""  # the device resources the migration takes (patterns.migrated_regex), for a map's guard

    @property
    def resources(self) -> list[str]:
        return list(dict.fromkeys(k.resource for k in self.keys))


def _chain(all_blocks: list[Block], define: Block, index: int) -> Block | None:
    """The innermost `if` with `else` branches around line `index` inside the helper, past the `if`s without one
    between (a count guard, `if gt (int .Values.gpu.count) 0`, around the key in each branch)."""
    around = [b for b in enclosing(all_blocks, index) if b.start > define.start]
    for b in reversed(around):
        if b.word == "if" and b.branches:
            return b
        if b.word != "if":
            return None
    return None


def _branch(chain: Block, index: int) -> int:
    return sum(1 for at, _ in chain.branches if at < index)


def other_keys(text: str, define: Block, keys: list[KeyLine], rules: RuleSet) -> list[KeyLine]:
    """The key lines of the other branches of each `if`/`else if` chain that holds a rendered literal key (perhaps
    each under a guard `if` of its own), at the key's indent, naming another device resource the rules migrate; []
    when none."""
    lines = text.splitlines()
    all_blocks = blocks(text)
    out: dict[int, KeyLine] = {}
    for k in keys:
        chain = _chain(all_blocks, define, k.index)
        if k.name_expr or k.var or chain is None:
            continue
        pad = len(lines[k.index]) - len(lines[k.index].lstrip())
        for i in range(chain.start + 1, chain.end):
            m = _KEY_LINE.match(lines[i])
            if m is None or len(m.group(1)) != pad or i in out or _branch(chain, i) == _branch(chain, k.index):
                continue
            if _chain(all_blocks, define, i) is not chain:
                continue
            name = m.group(2).strip("\"'")
            if name == k.resource or name.startswith("{{") or not rules.is_device_candidate(name):
                continue
            if rules.lookup(name) is None:
                continue
            count = count_expression(m.group(3)) or included_count(m.group(3))
            if count is None:
                raise NotHelper(f"{k.file}:{i + 1}: the helper's {name} count is not one expression")
            out[i] = KeyLine(k.file, i, k.define, name, None, count)
    return [out[i] for i in sorted(out)]


def chosen(text: str, define: Block, key: KeyLine, others: list[KeyLine]) -> dict[tuple[tuple[int, int], ...], KeyLine]:
    """branches.per_branch's map for the chain that holds `key`: each of its branches -> the key line there."""
    from dramigrate.helm.branches import branch_of

    all_blocks = blocks(text)
    chain = _chain(all_blocks, define, key.index)
    out = {branch_of(all_blocks, define, key.index): key}
    for k in others:
        if chain is not None and _chain(all_blocks, define, k.index) is chain:
            out.setdefault(branch_of(all_blocks, define, k.index), k)
    return out


def device_define(text: str, define: str, block: Block, key: KeyLine, others: list[KeyLine]) -> str:
    """`<helper>.draDevice`: the device resource of the branch that renders its key, else empty."""
    from dataclasses import replace

    from dramigrate.helm.branches import count_define

    named = {b: replace(k, count=json.dumps(k.resource)) for b, k in chosen(text, block, key, others).items()}
    return pruned(count_define(text, define, block, named, "draDevice"))


def count_text(text: str, define: str, block: Block, key: KeyLine, others: list[KeyLine]) -> str:
    """`<helper>.draCount` and `<helper>.draDevice` for the chain that holds `key`."""
    from dramigrate.helm.branches import count_define

    count = pruned(count_define(text, define, block, chosen(text, block, key, others)))
    return count + device_define(text, define, block, key, others)


def pruned(define_text: str) -> str:
    """A replayed define without the blocks that hold nothing but other control lines (the `requests:` chain
    replayed beside the `limits:` one that writes the count): they render nothing."""
    lines = define_text.rstrip("\n").splitlines()
    while True:
        inner = [b for b in blocks("\n".join(lines)) if b.word != "define" and b.end > 0]
        empty = next((b for b in inner if all(_bare(x) for x in lines[b.start : b.end + 1])), None)
        if empty is None:
            return "\n".join(lines) + "\n"
        del lines[empty.start : empty.end + 1]


def _bare(line: str) -> bool:
    """A line of one `if`/`else`/`end` action (no output, no assignment)."""
    return bool(re.fullmatch(r"\s*\{\{-?\s*(if|else|end)\b[^{}]*-?\}\}\s*", line))


def device_is(define: str, context: str, resource: str) -> str:
    return f'(eq (include "{define}.draDevice" {context} | trim) {json.dumps(resource)})'


DEVICE = "$draDevice"  # the device resource of the branch that renders, in once_for_all's lines
_ACTION = re.compile(r"(\{\{.*?\}\})")
_PLAIN = re.compile(r"[A-Za-z0-9][\w./-]*")  # a device resource YAML writes unquoted, as `{{ $draDevice }}` renders it


def picked(define: str, context: str, texts: dict[str, list[str]], first: str, pad: str = "") -> list[str]:
    """Lines that render `texts[resource]` for the device the helper's branch writes, `first`'s in the `else`: one
    text with the device read from `<helper>.draDevice` when the texts differ only in naming their own device (each
    vendor's toleration of its device's taint), else a branch per device."""
    once = once_for_all(define, context, texts, first, pad)
    if once is not None:
        return once
    out: list[str] = []
    for n, (resource, lines) in enumerate(r for r in texts.items() if r[0] != first):
        out += [f"{pad}{{{{- {'if' if n == 0 else 'else if'} {device_is(define, context, resource)} }}}}", *lines]
    return [*out, f"{pad}{{{{- else }}}}", *texts[first], f"{pad}{{{{- end }}}}"] if out else texts[first]


def _named(resource: str, lines: list[str]) -> list[str]:
    """`lines` with `resource` named by DEVICE: the quoted name in actions, `{{ DEVICE }}` in the YAML between."""
    quoted = json.dumps(resource)
    bare = re.compile(rf"(?<![\w./-]){re.escape(resource)}(?![\w./-])")
    return [
        "".join(
            part.replace(quoted, DEVICE) if _ACTION.fullmatch(part) else bare.sub(f"{{{{ {DEVICE} }}}}", part)
            for part in _ACTION.split(line)
        )
        for line in lines
    ]


def once_for_all(define: str, context: str, texts: dict[str, list[str]], first: str, pad: str) -> list[str] | None:
    """The texts as one, each device's name read from `<helper>.draDevice` (`first` when it renders none, as the
    `else` branch takes it), when they differ in nothing else; None when they do."""
    if len(texts) < 2 or not all(_PLAIN.fullmatch(r) for r in texts):
        return None
    named = {r: _named(r, lines) for r, lines in texts.items()}
    if len({tuple(lines) for lines in named.values()}) != 1:
        return None
    if named[first] == texts[first]:
        return texts[first]
    device = f'{{{{- {DEVICE} := include "{define}.draDevice" {context} | trim | default {json.dumps(first)} }}}}'
    return [f"{pad}{device}", *named[first]]


def spec_text(inner: dict[str, str], first: str, define: str) -> str:
    """The body of `<helper>.draClaimSpec` for each device of the choice: `inner` device -> its spec as YAML."""
    if len(inner) == 1:
        return inner[first]
    bodies = {r: [*text.rstrip("\n").splitlines()] for r, text in inner.items()}
    head, tail = _shared_ends(list(bodies.values()))
    if head:  # the lines every device's spec has (`devices:` down to `exactly:`, the count) written once
        middles = {r: lines[head : len(lines) - tail] for r, lines in bodies.items()}
        shared = bodies[first]
        lines = [*shared[:head], *picked(define, ".", middles, first), *shared[len(shared) - tail :]]
        return "\n".join(lines) + "\n"  # each branch's YAML starts on a new line: left-trimmed actions eat the old
    lines = picked(define, ".", bodies, first)
    # each branch's YAML starts after a right-trimmed action and ends before a left-trimmed one
    return "\n".join(re.sub(r"\s*\}\}$", " -}}", line) if line.startswith("{{-") else line for line in lines) + "\n"


def _shared_ends(texts: list[list[str]]) -> tuple[int, int]:
    """How many first and last lines all `texts` share (not overlapping)."""
    shortest = min(len(t) for t in texts)
    head = next((i for i in range(shortest) if len({t[i] for t in texts}) > 1), shortest)
    tail = next((i for i in range(shortest - head) if len({t[-1 - i] for t in texts}) > 1), shortest - head)
    return head, tail


def device_specs(choice: Choice, claims: set[str]) -> dict[str, tuple[dict[str, Any], str]]:
    """Each other device of the choice -> the claim spec the migration gives a pod asking for it, and its request;
    NotHelper when the migration names that claim otherwise, or gives the call sites different specs or several
    requests (the helper writes one `claims` entry, the spec define one spec per device)."""

    return {device: _device_spec(choice, device, claims) for device in choice.resources}


def _device_spec(choice: Choice, device: str, claims: set[str]) -> tuple[dict[str, Any], str]:
    from dramigrate.helm.helper import _uncounted

    deltas = list(choice.deltas[device].values())
    if {d.claim for d in deltas} != claims:
        raise NotHelper(f"the migration names the claim differently for {device}, another branch of the helper")
    if len({repr(_uncounted(d.spec)) for d in deltas}) != 1:
        raise NotHelper(f"the migration gives the helper's call sites different claims for {device}")
    requests = [r["name"] for r in deltas[0].spec.get("spec", {}).get("devices", {}).get("requests", [])]
    if len(requests) != 1:
        raise NotHelper(f"the migrated claim for {device} has several requests")
    return deltas[0].spec, requests[0]


def map_others(root: Path, keys: list[KeyLine], rules: RuleSet) -> list[KeyLine]:
    """For a helper that writes a map variable with toYaml: the other device resources the chart's values.yaml names
    (ericzadara's `nvidiaResource`, `amdResource`, `intelResource`, picked by `gpu.type`), each read from the same
    place of the map as the rendered one."""
    from dramigrate.helm.helper import map_count
    from dramigrate.helm.mapvars import values_names

    key = keys[0]
    assert key.var is not None
    if all(set(k.paths) == {(k.resource,)} for k in keys):  # `limits:` then `toYaml $limits`: one device only
        return []
    values = root / "values.yaml"
    names = values_names(values.read_text(encoding="utf-8"), rules) if values.is_file() else []
    return [
        replace(
            key,
            resource=name,
            count=map_count((*key.paths[0][:-1], name), key.var),
            paths=tuple((*p[:-1], name) for p in key.paths),
        )
        for name in names
        if name not in {k.resource for k in keys}
    ]


def find(
    root: Path,
    keys: list[KeyLine],
    sites: list[CallSite],
    originals: dict[str, list[dict[str, Any]]],
    deltas: dict[tuple[str, int], tuple[PodDelta, dict[str, Any]]],
    rules: RuleSet,
    alternative: Callable[..., Any] | None,
) -> Choice | None:
    """The vendor choice around the helper's rendered keys, with what the migration adds to each call site's pod
    when it asks for each other device instead (`alternative`: run.py's migration of a template's objects with the
    device renamed); None when the keys are no such choice."""
    from dramigrate.helm.helper import _defines
    from dramigrate.helm.patterns import migrated_regex

    text = (root / keys[0].file).read_text(encoding="utf-8")
    block = next(b for name, b in _defines(text) if name == keys[0].define)
    mapped = keys[0].var is not None  # a map the helper writes with toYaml: always a guard, perhaps no others
    others = map_others(root, keys, rules) if mapped else other_keys(text, block, keys, rules)
    if not others and not mapped:
        return None
    if alternative is None and not mapped:
        raise NotHelper(f"{keys[0].file}:{others[0].index + 1}: the helper's device key is one branch of a choice")
    choice = Choice(others if alternative else [], migrated=migrated_regex(rules))
    claims = {d.claim for d, _ in deltas.values()}
    for device in choice.resources:
        try:
            choice.deltas[device] = _site_deltas(root, keys, sites, originals, deltas, alternative, device)
            if mapped:
                _device_spec(choice, device, claims)
        except NotHelper:
            if not mapped:
                raise
            choice.deltas.pop(device, None)  # the map's guard fails the render on it instead
    choice.keys = [k for k in choice.keys if k.resource in choice.deltas]
    return choice


def _site_deltas(
    root: Path,
    keys: list[KeyLine],
    sites: list[CallSite],
    originals: dict[str, list[dict[str, Any]]],
    deltas: dict[tuple[str, int], tuple[PodDelta, dict[str, Any]]],
    alternative: Callable[..., Any] | None,
    device: str,
) -> dict[tuple[str, int], PodDelta]:
    """What the migration adds to each call site's pod when it asks for `device` instead of the rendered one."""
    from dramigrate.helm.helper import pod_deltas, sites_by_pod

    assert alternative is not None
    own: dict[tuple[str, int], PodDelta] = {}
    for rel in sorted({s.rel for s in sites} & set(originals)):
        renamed, migrated, templates = alternative(originals[rel], keys[0].resource, device)
        found = pod_deltas(renamed, migrated, templates)
        pods = sites_by_pod((root / rel).read_text(encoding="utf-8"), [s for s in sites if s.rel == rel])
        if found and len(found) != len(pods):
            raise NotHelper(f"{rel}: the migration of the helper's {device} branch adds claims to {len(found)} pods")
        own.update({(s.rel, s.index): d for group, (d, _) in zip(pods, found, strict=False) for s in group})
    if not own:
        raise NotHelper(f"the migration adds no claim for {device}, another branch of the helper")
    shared = next(iter(own.values()))
    return {site: own.get(site, shared) for site in deltas}
