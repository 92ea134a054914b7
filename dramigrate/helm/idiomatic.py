"""The idiomatic chart rewrite for pattern A (a literal device key with a values count), the shape chart
maintainers converged on when they added DRA themselves (KubeRay, ollama-helm, llm-d-modelservice):

- values.yaml gets a `dra:` block (`enabled`, `deviceClassName`, `existingClaimTemplate`) documented in
  the chart's own comment style;
- the template keeps its device key in the `else` branch (`{{- if not .Values.dra.enabled }}`), and in
  the DRA branch the container gets `claims`, the pod a `resourceClaims` entry and the explicit toleration
  the device plugin's admission used to add, guarded by `gt (int <count>) 0` (a zero count renders no claim);
- a new `templates/resourceclaimtemplate.yaml` renders the ResourceClaimTemplate whose count is the
  chart's existing knob, named with the workload's own name plus the hash of its spec (the spec is
  immutable, so a changed count gives a new template).

Pattern E, a device key whose name is one values key (`{{ .Values.gpu.type }}: N`), takes the same shape: what the
migration derives from the name (CEL selectors, the toleration key) is looked up in the claim template by the name's
value, among the resources its rule pack names (name_candidates); a name the packs migrate that the lookup does not
know fails the render, and one they leave alone (no pack knows it, or a report-only one) keeps its device-plugin
request, as the migration does (migrated_guard).

What the DRA branch writes (claim names, request names, device class, CEL selectors, tolerations) is
taken from the core's migration of the chart's own render, so the rewrite cannot drift from `fix -`;
proveswitch.py proves it by rendering with the switch off (byte-identical) and on (equal to the migration).
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import functools
import itertools
import json
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from dramigrate.documents import chart_text
from dramigrate.helm import keyedmap, multiclaim, omitlabels, unpin, zeropods
from dramigrate.helm.calltolerations import joined_call, tolerations_calls
from dramigrate.helm.chosencount import as_one, chosen_counts
from dramigrate.helm.conventions import conventions
from dramigrate.helm.goexpr import and_all, as_arg, from_root, grouped, unparenthesized, values_expr, whole_root
from dramigrate.helm.keptnames import asked_for, kept_names, several_named, template_values
from dramigrate.helm.librarypod import pod_advice
from dramigrate.helm.listed import Listed
from dramigrate.helm.listed import rewrite as listed_rewrite
from dramigrate.helm.listindent import indented_tolerations
from dramigrate.helm.locate import defines
from dramigrate.helm.model import (
    _VARIABLE,
    CLAIM_TEMPLATE_FILE,
    NAME,
    OVER_LIMIT,
    SWITCH,
    UNEQUAL_REQUEST,
    Alternative,
    Device,
    Loop,
    PodDelta,
    Workload,
)
from dramigrate.helm.namelookup import (
    _alternatives,
    _looked_up,
    _lookup,
    _lookup_lines,
    _request_resources,
    _request_twins,
    _requests,
    _sentinels,
    migrated_define,
    migrated_guard,
    migrated_section,
    split_literal,
)
from dramigrate.helm.nested import rewrite as nested_rewrite
from dramigrate.helm.patterns import (
    _LITERAL_KEY,
    NotIdiomatic,
    Pattern,
    _grouped,
    _split_top,
    classify,
    count_expression,
    held_entries,
    helpers_text,
    inline_guard,
    name_source,
    named_key_in,
)
from dramigrate.helm.poddelta import pod_containers, pod_delta, pod_groups, shipped_rules
from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.rewrite import Change, RewriteError, _actions, _terms, chart_name
from dramigrate.helm.sharedspec import shared_specs
from dramigrate.helm.templatelines import (
    BlockDumper,
    Edit,
    FlowMap,
    action_body,
    bare,
    block_end,
    child_indent,
    emits_text,
    is_control,
    is_key,
    item_key,
    line_indent,
    parent_line,
)
from dramigrate.helm.tolerationedits import (
    _END,
    _TOYAML,
    _TOYAML_DOT,
    _WITH,
    DRA_KEY,
    NO_SHAPE,
    TOLERATED,
    _adjacent,
    _closed,
    _dump_list,
    _joined,
    _merge_tolerations,
    _pod_key_lines,
    _vendor_tolerations,
    _wrap,
    given_tolerations,
    last_written_first,
    tolerated_check,
)
from dramigrate.helm.twinnames import names_check
from dramigrate.plan import DNS_LABEL_MAX, dns_label
from dramigrate.rules import RuleSet

_FIELD = re.compile(r"(?<![\w$)\]])\.(?!Values\b)([A-Za-z_]\w*)")
_ANY_FIELD = re.compile(r"(?<![\w$)\]])\.([A-Za-z_]\w*)")


# a range writing list items: its next YAML line (past actions and blank lines) is one
_LIST_ITEM_NEXT = re.compile(r"[^\n]*\n(?:[ \t]*(?:\{\{[^\n]*\}\})?[ \t]*\n)*[ \t]*- ")
_ITEM_CONTAINERS = (
    "The rewrite takes the containers of a `range` only over `until N` or `untilStep 0 N 1`, with one count. By hand, "
    "as the migration does: the pod gets one claim, `gpu`; a container that asks for the device alone takes it whole "
    "(`claims: [{name: gpu}]`), several each take a request of it (`{name: gpu, request: <container>-gpu}`, with that "
    "container's count), a list to build in a `range` over the same items before the pod spec, for its "
    "`resourceClaims` and the claim template"
)
_RELATIVE_NAME = re.compile(r"^\s*\{\{-?\s*\.(?!Values\b)[A-Za-z_][\w.]*\s*-?\}\}\s*:")  # `{{ .gpu.resourceName }}:`
ITEM = "<range item>"  # the context inside `range .Values.x`: `.` is one item of the list
_RANDOM = re.compile(r"\b(?:randAlphaNum|randAlpha|randNumeric|randAscii|uuidv4)\b")


def _item_containers(text: str, opened: int) -> str:
    """_ITEM_CONTAINERS, and where the container the `range` at offset `opened` writes takes a random name (a Nebius
    docker chart's `- name: {{ ... }}{{ randAlphaNum 4 | lower }}`), why the requests cannot be named after it."""
    first = _LIST_ITEM_NEXT.match(text, opened)
    line = text[first.end() : text.find("\n", first.end())] if first else ""
    if not _RANDOM.search(line):
        return _ITEM_CONTAINERS
    return (
        f"{_ITEM_CONTAINERS}. This chart's container names are random (`{line.strip()}`: a new name each render), so "
        "with several containers asking, neither the claim template nor a proof can name their requests as the "
        "migration does: name each request after the item's index instead (`range $i, $c := ...`, `gpu-{{ $i }}`), "
        "or give the containers stable names"
    )


def _rooted(expr: str, context: str) -> str:
    """An expression written inside `with <context>` as read from the chart's root (`.gpu` ->
    `.Values.resources.gpu`); inside `range`, one that reads only the root (`$.Values.gpu.count`)."""
    if context == ITEM:
        return expr
    if context and expr.strip() == ".":  # `nvidia.com/gpu: {{ . }}` inside `with .Values.gpus`: the value itself
        return context
    if not context:
        return expr
    expr = _DOT_ARGUMENT.sub(lambda m: m.group(1) + context, expr)  # `include "x.gpus" .`: the helper gets the scope
    if context.startswith("$"):  # `with $ctx`: `.Values` too is the variable's (a map with its own Values)
        return _ANY_FIELD.sub(lambda m: f"{context}.{m.group(1)}", expr)
    return _FIELD.sub(lambda m: f"{context}.{m.group(1)}", expr)


_DOT_ARGUMENT = re.compile(r'(\b(?:include|template)\s+"[^"]+"\s+)\.(?=\s*(?:[)|]|$))')


def _steps(listed: str) -> str:
    """The number of items of `range <listed>` as an argument of `int`, when the range counts (`until N`, `untilStep 0 N
    1`: the ColonyOS executor's one container per step); else ""."""
    m = re.fullmatch(r"until\s+(.+)|untilStep\s+0\s+(.+?)\s+1", listed, re.S)
    if m is None:
        return ""
    count = (m.group(1) or m.group(2)).strip()
    inner = re.fullmatch(r"\(int\s+(.+)\)", count, re.S)
    return as_arg(inner.group(1).strip()) if inner else count


def _top_field(text: str, before: int, listed: str) -> bool:
    """Whether `listed` is a field path of a template variable assigned at the template's top level before offset
    `before`, outside every block (NVIDIA DeepStream's `$values := .Values`, then `range $node :=
    $values.nvidia.nodes`): a list the claim template reads the same way, the assignment carried (_definitions); not a
    field of a `range` item (`$pod.containers`)."""
    m = re.fullmatch(r"\$([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)+", listed)
    if m is None:
        return False
    depth = 0
    for start, end, word in _actions(text):
        if start >= before:
            break
        body = action_body(text[start:end])
        if word in ("if", "with", "range", "define", "block"):
            depth += 1
        elif word == "end" and depth:
            depth -= 1
        elif depth == 0 and (a := _ASSIGNMENT.match(body)) and a.group(1) == m.group(1):
            return True
    return False


def _nonempty(listed: str) -> str:
    """The condition under which `range <listed>` renders its body at least once (read from the chart's root), or ""
    for a range the rewrite does not take: a values list (`.Values.workers`), a template variable (`$models`, which
    the claim template assigns the same way: _definitions), or a count of steps (one pod per rank: triton's
    `range $i := until (int $pod_count)`)."""
    if re.fullmatch(r"\.Values(?:\.[A-Za-z_]\w*)+", listed) or re.fullmatch(r"\$[A-Za-z_][\w.]*", listed):
        return listed  # a values list or map, or a template variable or its field (the claim template sets it too)
    steps = _steps(listed)
    return f"(gt (int {steps}) 0)" if steps else ""


def _conditions(
    text: str, offset: int, rel: str, pattern: Pattern, whole: frozenset[str] = frozenset()
) -> tuple[list[str], str, tuple[int, int] | None, int, Loop | None]:
    """The `if` conditions around `offset`, read from the chart's root (an `else` branch reads as the `not` of the
    conditions before it), what `.` is there ("" the root, else the values path of an enclosing `with .Values.x`,
    which counts as a condition too), the innermost enclosing `if` (its offset and branch), how many of the last
    conditions that branch adds, and the enclosing `range` blocks; other enclosing actions make the shape not
    pattern A. A define named in `whole` (whole_defines) is a template's own body, as one the file includes so."""
    # word, condition, the conditions of the branches before (an if's else), in an else, offset
    stack: list[tuple[str, str, list[str], bool, int]] = []
    for start, end, word in _actions(text):
        if start >= offset:
            break
        body = action_body(text[start:end])
        if word in ("if", "with", "range", "define", "block"):
            stack.append((word, body[len(word) :].strip(), [], False, start))
        elif word == "else" and stack:
            top = stack[-1]
            chained = re.fullmatch(r"else\s+if\s+(.+)", body, re.S)
            if top[0] == "if" and chained:
                stack[-1] = (top[0], chained.group(1).strip(), [*top[2], top[1]], False, top[4])
            else:
                stack[-1] = (top[0], "" if top[0] == "if" else top[1], [*top[2], top[1]], True, top[4])
        elif word == "end" and stack:
            stack.pop()
    out: list[str] = []
    context = ""
    branch: tuple[int, int] | None = None
    added = 0
    loop: Loop | None = None
    scope = ""  # inside the range, what a `with` around the key made `.` (`$gres.limits`), read from the item
    for depth, (word, cond, before, in_else, start) in enumerate(stack):
        if word == "define" and (_whole_template(text, cond) or cond.strip().strip('"') in whole):
            continue  # the template's own body, named so it can also be wrapped (silogen's `define "job"`)
        if scope:
            cond, before = _in_scope(cond, scope), [_in_scope(c, scope) for c in before]
        if (
            word == "with"
            and not in_else
            and context == ITEM
            and loop is not None
            and _ITEM_PATH.fullmatch(cond)
            and _POD_LIST.search(text, loop.opened, offset)
        ):
            # a `with` on the item's own map (`with $gres.limits`, `$gres := $g.advanced.resources` set per item) in
            # a `range` that writes whole pods (a RayCluster's worker groups): an `if` on it, and `.` that map
            out.append(cond)
            scope = cond
            continue
        if word == "define":
            raise NotIdiomatic(Pattern("D", pattern.line, pattern.text), rel, "the device key is inside a helper")
        if context == ITEM and _FIELD.search(cond):
            if word != "if" and loop is not None and _LIST_ITEM_NEXT.match(text, loop.opened):
                # a Nebius docker chart's `with .resources`, then `with .limits`, of each container of the list
                why = (
                    f"the device key is inside `{word} {cond}` of a container that `{loop.headers[-1]}` writes, each "
                    f"item a container with its own count: {_item_containers(text, loop.opened)}"
                )
                raise NotIdiomatic(pattern, rel, why)
            if word != "if" or in_else or loop is None:
                raise NotIdiomatic(pattern, rel, f"`{word} {cond}` reads the `range` item")
            loop = loop if loop.item_read else dataclasses.replace(loop, item_read=f"{word} {cond}")
        if word == "with" and not in_else and context == "" and re.fullmatch(r"\$[A-Za-z_]\w*", cond):
            out.append(cond)  # `with $ctx` (a map the template built): what it reads is read through the variable,
            context = cond  # which the claim template assigns the same way (_definitions)
            continue
        path = _rooted(cond, context).removeprefix("$")
        if word == "with" and not in_else and re.fullmatch(r"\.Values(?:\.[A-Za-z_]\w*)+", path):
            out.append(path)  # `with` renders its body only when the value is set: an `if` on it
            context = path
            continue
        listed = _rooted(cond.split(":=", 1)[-1].strip(), context)
        kept = _VARIABLE.fullmatch(listed) or _top_field(text, start, listed)  # `$models`, `$values.workers` stay
        listed = listed if kept else listed.removeprefix("$")
        if word == "range" and not in_else and (nonempty := _nonempty(listed)):
            declared = cond.split(":=", 1)[0].strip() + " := " if ":=" in cond else ""
            header = f"range {declared}{listed}"
            loop = loop or Loop(len(out))
            loop = Loop(
                loop.start,
                (*loop.headers, header),
                (*loop.nonempty, nonempty),
                start,
                steps=_steps(listed),
                item_read=loop.item_read,
            )
            out.append(nonempty)  # the body renders once per item: only when there is one
            context = ITEM  # `.` is the item: what the rewrite adds reads the root as `$`
            continue
        if word != "if":
            where = f"{word} {cond}".strip() + (" ... else" if in_else else "")
            reason = f"the device key is inside `{where}`"
            if word == "range" and _LIST_ITEM_NEXT.match(text, start):
                # NVIDIA DeepStream's `range $container := $pod.containers`, then `range $index, $gpu := $node.gpus`
                # inside it for one container per GPU of the node: the items decide the pod's claim
                inner = [f"`range {c}`" for w, c, _, _, at in stack[depth + 1 :] if w == "range"]
                inside = f" (with {' and '.join(inner)} inside it)" if inner else ""
                reason += (
                    f", which writes one container per item{inside}, each asking for the device: the migration gives "
                    "the pod one claim with a request per such container, named after it, so the items decide the "
                    f"claim's requests and their names. {_item_containers(text, start)}"
                )
            elif context == ITEM and loop is not None and _LIST_ITEM_NEXT.match(text, loop.opened):
                reason += (  # loft's component chart: `with $container.resources.limits` of each container's own count
                    f" of a container that `{loop.headers[-1]}` writes, each item a container with its own count: "
                    f"{_item_containers(text, loop.opened)}"
                )
            raise NotIdiomatic(pattern, rel, reason)
        # an `else if eq .Values.gpu.type "amd"` after `if eq .Values.gpu.type "nvidia"`: its own test says it all
        own = [f"(not {grouped(_rooted(c, context))})" for c in before if not (cond and _other_literal(c, cond))]
        if cond:
            own.append(grouped(_rooted(cond, context)))
        out += own
        branch, added = (start, len(before)), len(own)
    if loop is not None:
        body, nested, openers = _range_body(text, offset)
        names = _range_locals(text, offset)
        loop = dataclasses.replace(loop, names=names, body=body, nested=nested, openers=openers, scope=scope)
    return out, context, branch, added, loop


# a path from the `range` item (`.resources.limits`) or a variable (`$gres.limits`)
_ITEM_PATH = re.compile(r"(?:\$[A-Za-z_]\w*)?(?:\.[A-Za-z_]\w*)+")
# a pod's container list: a `range` above it writes whole pods, one per item
_POD_LIST = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:initContainers|containers):[ \t]*$", re.M)
_SCOPE_DOT = re.compile(r"(?<![\w$)\]])\.(?:([A-Za-z_]\w*)|(?![\w.]))")  # `.gpu`, the dot itself


def _in_scope(expr: str, scope: str) -> str:
    """`expr` written where `.` is `scope` (inside `with $gres.limits`), read where `.` is the `range` item (or,
    with scope `$`, the chart's root): `.gpu` -> `$gres.limits.gpu`, `hasKey . "gpu"` -> `hasKey $gres.limits
    "gpu"`; string literals kept."""
    if not scope:
        return expr
    parts = re.split(r'("(?:[^"\\]|\\.)*")', expr)
    for k in range(0, len(parts), 2):
        parts[k] = _SCOPE_DOT.sub(lambda m: f"{scope}.{m.group(1)}" if m.group(1) else scope, parts[k])
    return "".join(parts)


def _plain_else(d: Device) -> bool:
    """Whether the key sits in the plain `else` of its `if` chain (its conditions: only the `not` of those before)."""
    return (
        bool(d.branch)
        and d.branch[1] == len(d.branch_conditions)
        and all(c.startswith("(not ") for c in d.branch_conditions)
    )


def _compared(cond: str) -> tuple[str, str] | None:
    """`eq <value> <literal>` (either order, parenthesised or not) as (value, literal); None for another test."""
    m = _EQ_LITERAL.fullmatch(grouped(cond.strip()))
    return None if m is None else (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))


def _other_literal(before: str, cond: str) -> bool:
    """Whether `cond` compares the value `before` compares with another literal: `cond` holding implies `not before`."""
    a, b = _compared(before), _compared(cond)
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1]


def _range_locals(text: str, offset: int) -> frozenset[str]:
    """The variables (without `$`) that the `range` blocks open at `offset` set per item: those their actions
    declare (`range $i := until N`, `range $k, $v := ...`) and those declared with `:=` inside them before `offset`."""
    open_: list[tuple[str, set[str]]] = []  # each enclosing block: its word, the variables a range sets
    for start, end, word in _actions(text):
        if start >= offset:
            break
        body = action_body(text[start:end])
        if word in ("if", "with", "range", "define", "block"):
            declared = body.split(":=", 1)[0] if word == "range" and ":=" in body else ""
            open_.append((word, set(_VARIABLE.findall(declared))))
        elif word == "end" and open_:
            open_.pop()
        elif (m := re.match(r"^\$([A-Za-z_]\w*)\s*:=", body)) and any(w == "range" for w, _ in open_):
            open_[-1][1].add(m.group(1))
    first = next((k for k, (word, _) in enumerate(open_) if word == "range"), len(open_))
    return frozenset(v for _, names in open_[first:] for v in names)


def _range_body(text: str, offset: int) -> tuple[tuple[tuple[str, str, int], ...], frozenset[str], tuple[str, ...]]:
    """The assignments (variable, action body, depth) the innermost `range` open at `offset` makes before `offset` at
    its own level or inside the `if` blocks (first branch) still open at `offset`, depth counting those blocks (a
    models chart's `if eq $model.engine "vllm"`, then `$gpu := ...` inside it, around the device key), in template
    order; the variables it sets inside other blocks of its own; and the actions of those `if` blocks, as far as
    the deepest assignment taken. An `if`/`with`/`range` block closed before the key that sets a variable of the
    range again (deepgram's `$gpuRequest := int ...`, then `$gpuRequest = int $typeOverrides...` inside `if` blocks
    of a per-type override; slurm's `range $pool.gres` setting `$isGpuPool = true`) is taken whole, as its actions
    only (_skeleton), once for each variable it sets."""
    stack: list[
        tuple[str, int, str, int]
    ] = []  # each open block: its word ("else" past its else), offset, action, index
    seen: list[tuple[int, tuple[int, ...], str, str]] = []  # (offset, the blocks open there, variable, body)
    acts: list[tuple[int, str, str]] = []  # every action: offset, word, body
    closed: list[tuple[tuple[int, ...], int, int, str]] = []  # a block closed: the blocks around it, its actions, word
    for start, end, word in _actions(text):
        if start >= offset:
            break
        body = action_body(text[start:end])
        acts.append((start, word, body))
        if word in ("if", "with", "range", "define", "block"):
            stack.append((word, start, body, len(acts) - 1))
        elif word == "else" and stack:
            stack[-1] = ("else", start, body, stack[-1][3])
        elif word == "end" and stack:
            first = stack.pop()[3]
            closed.append((tuple(at for _, at, _, _ in stack), first, len(acts) - 1, acts[first][1]))
        elif m := _ASSIGNMENT.match(body):
            seen.append((start, tuple(at for _, at, _, _ in stack), m.group(1), body))
    ranges = [k for k, (word, _, _, _) in enumerate(stack) if word == "range"]
    if not ranges:
        return (), frozenset(), ()
    own = ranges[-1] + 1
    ifs = list(itertools.takewhile(lambda b: b[0] == "if", stack[own:]))
    paths = {tuple(at for _, at, _, _ in stack[: own + k]): k for k in range(len(ifs) + 1)}
    entries = [(at, name, body, paths[opened]) for at, opened, name, body in seen if opened in paths]
    taken: list[tuple[int, int]] = []  # the offsets of the blocks taken whole
    for opened, first, last, word in closed:
        skeleton = _skeleton(acts[first : last + 1]) if opened in paths and word in ("if", "with", "range") else None
        if skeleton is not None:
            taken.append((acts[first][0], acts[last][0]))
            reset = dict.fromkeys(m.group(1) for _, _, b in acts[first:last] if (m := _REASSIGNMENT.match(b)))
            entries += [(acts[first][0], name, skeleton, paths[opened]) for name in reset]
    entries.sort(key=lambda e: e[0])
    top = tuple((name, body, depth) for _, name, body, depth in entries)
    inside = tuple(at for _, at, _, _ in stack[:own])
    nested = frozenset(
        name
        for at, opened, name, _ in seen
        if opened[:own] == inside and opened not in paths and not any(a < at < b for a, b in taken)
    )
    openers = tuple(action for _, _, action, _ in ifs[: max((depth for _, _, depth in top), default=0)])
    return top, nested, openers


_REASSIGNMENT = re.compile(r"^\$([A-Za-z_]\w*)\s*=")  # `$gpus = ...`: a variable declared before, set again


def _skeleton(actions: list[tuple[int, str, str]]) -> str | None:
    """An `if`/`with`/`range` block as template text of its actions that decide and set variables (its `if`, `else`,
    `with`, `range`, `end` and assignments; the text it writes and the actions that write are left out), which
    renders nothing; None when it holds a `define` or sets no variable declared before it. A `range` in it (slurm's
    `range $pool.gres` that reads each gres string into `$gpuCount`) runs over the same list where the claim template
    file replays it."""
    if any(word in ("define", "block", "template") for _, word, _ in actions):
        return None
    if not any(_REASSIGNMENT.match(body) for _, _, body in actions):
        return None
    words = ("if", "else", "with", "range", "break", "continue", "end")
    kept = [body for _, word, body in actions if word in words or _ASSIGNMENT.match(body)]
    return "".join(f"{{{{- {body} }}}}" for body in kept)


def _either(devices: list[Device]) -> tuple[list[str] | None, list[str]]:
    """The conditions under which a pod renders at least one of its device keys, when they can be written as one
    list (_one_list); failing that, without the conditions that test a key's own count (`if .Values.limits.gpu`
    around `nvidia.com/gpu: {{ .Values.limits.gpu }}`, the request under its own), which the count's gate covers:
    then also those left out."""
    found = _one_list([d.conditions for d in devices])
    if found is not None:
        return found, []
    return _one_list([[c for c in d.conditions if not _own(d, c)] for d in devices]), [
        c for d in devices for c in d.conditions if _own(d, c)
    ]


def _own(d: Device, cond: str) -> bool:
    """Whether `cond` tests the device key's own count (`if .Values.limits.gpu` around the key that writes it)."""
    return grouped(cond) == grouped(d.count)


def _one_list(lists: list[list[str]]) -> list[str] | None:
    """The conditions of the keys as one list: the same list for every key; or the list of one key that every other
    key's list includes (a key under `if .Values.gpu.enabled` and another under `if .Values.models` inside it); or
    what the keys share, where the rest of each list is one `if`'s condition or its plain `else` (ersatztv writes
    the key in both branches of `if or .Values.resources.limits .Values.resources.requests`). None otherwise."""
    if all(c == lists[0] for c in lists):
        return lists[0]
    for candidate in lists:
        if all(set(candidate) <= set(c) for c in lists):
            return candidate
    shared = [c for c in lists[0] if all(c in other for other in lists)]
    rests = {tuple(c for c in other if c not in shared) for other in lists}
    if all(len(rest) == 1 for rest in rests) and len(rests) == 2:
        a, b = (rest[0] for rest in rests)
        if _negates(a, b) or _negates(b, a):
            return shared
    return None


def _negates(a: str, b: str) -> bool:
    """Whether condition `a` is `(not b)` as _conditions writes an `else` branch (`b` parenthesised or not)."""
    inner = b[1:-1] if b.startswith("(") and b.endswith(")") else b
    return a in (f"(not {inner})", f"(not ({inner}))")


def _enclosing(text: str, index: int) -> list[str]:
    """The blocks (`if`, `with`, `range`, ...) around line `index` (0-based) of the template, outermost first."""
    offset = sum(len(line) for line in text.splitlines(keepends=True)[:index])
    return [word for _, word in _open_blocks(text, offset)]


def _inside_with(text: str, index: int) -> bool:
    """Whether line `index` (0-based) of the template sits inside a `with` or `range` block, where `.` is not the
    root: a line added there reads values as `$.Values` (plex-media-server's `resources:` is inside
    `with .Values.pms.resources`, rffmpeg-worker's Deployment inside `range .Values.workers`)."""
    return bool({"with", "range"} & set(_enclosing(text, index)))


def _scopes(text: str, index: int) -> int:
    """How many `with` and `range` blocks rebind the dot around line `index` (0-based) of the template."""
    return sum(word in ("with", "range") for word in _enclosing(text, index))


def _named_key_at(
    text: str, offset: int, line: str, helpers: str
) -> tuple[str, tuple[str, ...], str | None, str] | None:
    """named_key_in for the template line at `offset`; inside `with .Values.x` a name relative to its scope
    (`{{ .gpu.resourceName }}: "{{ .gpu.count }}"`) reads as from the root (`.Values.x.gpu.resourceName`)."""
    if (key := named_key_in(line, text, helpers)) is not None or not _RELATIVE_NAME.match(line):
        return key
    context = with_scope(text, offset)
    return named_key_in(_rooted(line, context), text, helpers) if context else None


def named_key_at(text: str, index: int, helpers: str) -> tuple[str, tuple[str, ...], str | None, str] | None:
    """_named_key_at for line `index` (0-based) of the template: a device key named by one values key, or None."""
    lines = text.splitlines(keepends=True)
    if not 0 <= index < len(lines):
        return None
    return _named_key_at(text, sum(map(len, lines[:index])), lines[index].rstrip("\n"), helpers)


def scoped_name_keys(texts: list[str], helpers: str = "") -> dict[tuple[str, ...], str | None]:
    """The values keys that name a device resource in these templates (pattern E keys, also those read inside
    `with .Values.x`), each with its default."""
    out: dict[tuple[str, ...], str | None] = {}
    for text in texts:
        offset = 0
        for line in text.splitlines(keepends=True):
            if (key := _named_key_at(text, offset, line.rstrip("\n"), helpers)) is not None:
                out[key[1]] = key[2]
            offset += len(line)
    return out


def with_scope(text: str, offset: int) -> str:
    """The values path `.` is at `offset` when only `with .Values.x` blocks (and `if`s) rebind it there, else ""."""
    try:
        context = _conditions(text, offset, "", Pattern("E", 0, ""))[1]
    except NotIdiomatic:
        return ""
    return context if context.startswith(".Values.") else ""


def _whole_template(text: str, define: str) -> bool:
    """Whether a `define` is the template's own body: the same file renders it with the root context at its top
    level (`{{- include "job" . }}`, outside any define), and every include of it there passes `.` or `$`."""
    name = re.fullmatch(r'"([^"]+)"', define.strip())
    if name is None:
        return False
    calls = list(re.finditer(r"\{\{-?\s*(?:include|template)\s+" + re.escape(define.strip()) + r"\s+([^\s|)}]+)", text))
    if not calls or any(c.group(1) not in (".", "$") for c in calls):
        return False
    depth, top = 0, False
    for start, end, word in _actions(text):
        if word in ("define", "block") or (word in ("if", "with", "range") and depth):
            depth += 1
        elif word == "end" and depth:
            depth -= 1
        elif depth == 0 and any(start <= c.start() < end for c in calls):
            top = True
    return top


def find_devices(
    text: str,
    rel: str,
    rules: RuleSet,
    named: str = "",
    helpers: str = "",
    kept: Iterable[tuple[str, ...]] = (),
    whole: frozenset[str] = frozenset(),
) -> list[Device]:
    """The template's device keys with a values count; a key whose name is one values key, perhaps held in a template
    variable (pattern E), or mapped from values by one of the chart's `helpers` (patterns.name_source), too when
    `named`, the device resource it renders to, is given, unless that values key is one of `kept` (it names a
    resource the migration leaves alone: keptnames.py). `whole`: the defines of the file the chart renders as a
    template's own body (whole_defines)."""
    lines = text.splitlines()
    offsets, pos = [], 0
    for line in text.splitlines(keepends=True):
        offsets.append(pos)
        pos += len(line)
    out = []
    for i, line in enumerate(lines):
        m, key = _LITERAL_KEY.match(line), _named_key_at(text, offsets[i], line, helpers) if named else None
        guarded = inline_guard(line) if m is None and key is None else None
        m = _LITERAL_KEY.match(guarded[1]) if guarded else m  # `{{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}`
        if (m or key) and ((up := parent_line(lines, i)) < 0 or not is_key(lines[up], "limits", "requests")):
            continue  # a key elsewhere (a nodeSelector label `amd.com/gpu: "true"`, its name from values or not)
        if not (m or key) or line.lstrip().startswith("-") or (key and key[1] in kept):
            continue
        resource, name, value = (m.group(2), "", m.group(3)) if m else (named, key[0], key[3])  # type: ignore[index]
        if not rules.is_device_candidate(resource) or rules.lookup(resource) is None:
            continue
        pattern = classify(text, i + 1, resource)
        count = count_expression(value, True)
        if count is None:
            raise NotIdiomatic(Pattern("F", i + 1, line.strip()), rel, "the count is not one expression")
        conditions, context, branch, added, loop = _conditions(text, offsets[i], rel, pattern, whole)
        if loop and loop.scope:  # inside `with $gres.limits` of the item: `.gpu` is `$gres.limits.gpu`
            count = _in_scope(count, loop.scope)
            guarded = (_in_scope(guarded[0], loop.scope), guarded[1]) if guarded else None
        if guarded:  # the line's own `if`: as one around the line
            inline = grouped(_rooted(guarded[0], context))
            if loop and context == ITEM and _FIELD.search(guarded[0]) and not loop.item_read:
                loop = dataclasses.replace(loop, item_read=f"if {guarded[0]}")
            conditions, branch, added = [*conditions, inline], (offsets[i] + line_indent(line), 0), 1
        if name and context and re.search(r"\s\.\s*$", name.split("|")[0]) and name_source(name, text + helpers):
            continue  # `include "x.gpuResource" .` inside `with`/`range`: the helper's `.` is not the chart's root
        per_item = _reads_item(count, context, loop)
        if context == ITEM and _FIELD.search(count) and not per_item:
            raise NotIdiomatic(pattern, rel, f"the count `{count}` reads the item of nested `range` blocks")
        if loop and loop.item_read and not per_item:
            raise NotIdiomatic(pattern, rel, f"`{loop.item_read}` reads the `range` item")
        for what, expr in (("count", "" if per_item else count), ("resource name", name)):
            if loop and (reads := sorted(set(_VARIABLE.findall(expr)) & loop.names)):
                why = f"the {what} `{expr}` reads `${reads[0]}`, which the `range` sets per item: one {what} per item"
                raise NotIdiomatic(pattern, rel, why)
        own = conditions[len(conditions) - added :]
        rooted = re.sub(r"^\$(?=\.)", "", _rooted(name, context))  # `$.Values.x` -> `.Values.x`; `$gpuKey` stays
        key_path = ".".join(key[1]) if key else ""
        out.append(
            Device(
                i,
                resource,
                _rooted(count, context),
                conditions,
                bool(context),
                branch,
                own,
                rooted,
                key_path,
                loop,
                per_item,
            )
        )
    # keys a variable holds: `$limits = merge (dict "nvidia.com/gpu" 1) ...`, then `limits: {{ $limits | toJson }}`
    for held in held_entries(lines):
        if not rules.is_device_candidate(held.resource) or rules.lookup(held.resource) is None:
            continue
        at = Pattern("A", held.line + 1, lines[held.line].strip())
        conditions, context, branch, added, loop = _conditions(text, offsets[held.line], rel, at)
        if context or loop:
            raise NotIdiomatic(at, rel, "the variable that holds the device key is set inside `with` or `range`")
        own = conditions[len(conditions) - added :]
        out.append(Device(held.line, held.resource, held.count, conditions, False, branch, own, section=held.section))
    return out


def section_line(lines: list[str], d: Device) -> int:
    """The `limits:`/`requests:` line of a device key: its parent, or the line that writes the variable holding it."""
    return d.section if d.section >= 0 else parent_line(lines, d.index)


def migrated_devices(devices: list[Device], rules: RuleSet) -> list[Device]:
    """The device keys the migration moves to claims: a report-only resource (a shared RDMA HCA, `rdma/hca` beside
    arena's GPU key under its own `if .Values.enableRDMA`) stays a device-plugin request in the migrated render, so
    the rewrite leaves its key as the chart writes it."""
    kept = []
    for d in devices:
        match = rules.lookup(d.resource)
        if d.name or match is None or not match.rule.report_only:
            kept.append(d)
    return kept


def _refuse_at_hint(
    text: str, rel: str, hint: Pattern | None, exc: NotIdiomatic, whole: frozenset[str] = frozenset()
) -> NoReturn:
    """Raise `exc`, or, when the line the findings map to (`hint`, a line the values render) is another device key
    refused for its blocks, that refusal: a Nebius docker chart's `range .Values.containers.containers` rather than
    the same shape's `range` of init containers its values leave empty."""
    if hint is not None and hint.letter == exc.pattern.letter and hint.line != exc.pattern.line:
        offset = sum(len(line) for line in text.splitlines(keepends=True)[: hint.line - 1])
        try:
            _conditions(text, offset, rel, hint, whole)
        except NotIdiomatic as at_hint:
            raise at_hint from None
    raise exc


def _map_in_other_branch(lines: list[str], d: Device) -> tuple[int, str, str] | None:
    """A `toYaml` line of the container's `resources:` block that an `if` around the device key renders in another of
    its branches, when that `if` asks for the map itself (a models chart's `if hasKey $model "resources"` around
    `toYaml $model.resources`, the literal key in the `else`): its 1-based line, the `toYaml` and the `if`; else
    None. (An `if` on something else, a GPU switch, is the proof's to try.)"""
    res = parent_line(lines, parent_line(lines, d.index))
    if res < 0 or d.section >= 0:
        return None
    start = sum(len(x) + 1 for x in lines[:res])
    text = "\n".join(lines[res : max(block_end(lines, res), d.index + 1)])
    key = sum(len(x) + 1 for x in lines[: d.index]) - start
    stack: list[tuple[int, int]] = []  # each open `if`: its offset and the branch the text is in
    maps: list[tuple[int, tuple[tuple[int, int], ...]]] = []
    path: tuple[tuple[int, int], ...] | None = None  # the `if` branches the key is in
    for at, _, word in _actions(text):
        if at >= key and path is None:
            path = tuple(stack)
        if word in ("if", "with", "range"):
            stack.append((at, 0))
        elif word == "else" and stack:
            stack[-1] = (stack[-1][0], stack[-1][1] + 1)
        elif word == "end" and stack:
            stack.pop()
        elif word == "toYaml":
            maps.append((at, tuple(stack)))
    path = tuple(stack) if path is None else path
    for at, opened in maps:
        line = res + text.count("\n", 0, at)
        shown = re.search(r"toYaml\s+(([$.\w]*?)\.?(\w+))\s*(?:\||-?\}\})", lines[line])
        if shown is None:
            continue
        expr, base, key = shown.groups()
        for (a, x), (b, y) in zip(opened, path, strict=False):
            cond = text[a : text.index("}}", a)]
            if a == b and x != y and (expr in cond or (base and base in cond and f'"{key}"' in cond)):
                return line + 1, f"toYaml {expr}", re.sub(r"^\{\{-?\s*", "", cond).strip().rstrip("-").strip()
    return None


def maps_beside(text: str, rel: str, rules: RuleSet) -> Pattern | None:
    """The `toYaml` of a values map (pattern B) that a template writes as a container's resources in another branch
    of an `if` on that map than its literal device key (_map_in_other_branch), for the pass-through to take beside
    the key's `dra.enabled` switch; None when there is none (or the template's keys are not pattern A)."""
    try:
        devices = find_devices(text, rel, rules)
    except RewriteError:
        return None
    lines = text.splitlines()
    for d in devices:
        if beside := _map_in_other_branch(lines, d):
            return Pattern("B", beside[0], lines[beside[0] - 1].strip())
    return None


def _reads_item(count: str, context: str, loop: Loop | None) -> bool:
    """Whether a count inside `range` reads the item (`.gpuRequestCount`, `$model.gpus` of `range $model := ...`): a
    count per item, which one claim template per item takes. A variable set inside the range (`$gpus := mul .a .b`)
    is not taken."""
    if loop is None or context != ITEM or len(loop.headers) > 1:
        return False
    read = set(_VARIABLE.findall(count))
    if read & (loop.names - loop.per_item):
        return False
    return bool(_ITEM_DOT.search(re.sub(r'"[^"]*"', "", count)) or read & loop.per_item)


_ITEM_DOT = re.compile(r"(?<![\w$)\]])\.(?:[A-Za-z_]\w*|(?![\w.]))")  # `.gpus`, or `.` itself


def template_devices(
    root: Path, rel: str, text: str, docs: list[dict[str, Any]], rules: RuleSet, helpers: str = ""
) -> list[Device]:
    """find_devices for template `rel` of the chart at `root` rendered as `docs`, its pattern-E keys too: those naming
    a resource the migration leaves alone (keptnames.py) stay as written, the one left names the device the render
    asks for."""
    keys = _name_keys(text, helpers)
    kept = kept_names(keys, template_values(root, rel), rules, asked_for(docs)) if keys else {}
    named = _named_resource(text, docs, rules, helpers, kept)
    return find_devices(text, rel, rules, named, helpers, kept, whole_defines(root, rel, text))


def whole_defines(root: Path, rel: str, text: str) -> frozenset[str]:
    """The defines of `text`, a file of a library chart unpacked in the chart's charts/ (`rel` under it), that render
    as a template's own body: the chart's templates include one only with the root context outside any block (`{{
    include "kubeflow-template.pytorch-job" . }}`), and no other file of the library includes it, so its lines read
    the chart's values as the template's would."""
    parts = Path(rel).parts
    if len(parts) < 4 or parts[0] != "charts" or parts[2] != "templates" or "define" not in text:
        return frozenset()

    def texts(folder: Path) -> list[str]:
        files = (p for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink() and p != root / rel)
        return [p.read_text(encoding="utf-8", errors="replace") for p in files]

    own, library = texts(root / "templates"), texts(root / "charts" / parts[1] / "templates")
    return frozenset(
        name
        for name in defines({rel: text})
        if not any(f'"{name}"' in t for t in library)
        and (calls := [t for t in own if f'"{name}"' in t])
        and all(_whole_template(t, f'"{name}"') for t in calls)
    )


def _name_keys(text: str, helpers: str) -> list[tuple[tuple[str, ...], str | None]]:
    """The values key of each pattern-E key of the template, with the default the template gives it."""
    offsets = list(itertools.accumulate((len(line) for line in text.splitlines(keepends=True)), initial=0))
    keys = [k for i, line in enumerate(text.splitlines()) if (k := _named_key_at(text, offsets[i], line, helpers))]
    return [(k[1], k[2]) for k in keys]


def _named_resource(
    text: str,
    docs: list[dict[str, Any]],
    rules: RuleSet,
    helpers: str = "",
    kept: dict[tuple[str, ...], str] | None = None,
) -> str:
    """The device resource a pattern-E key of the template rendered to: the one device resource the render's pods
    ask for that the template does not write as a literal key, nor a `kept` key names; "" when there is none or more
    than one."""
    offsets = list(itertools.accumulate((len(line) for line in text.splitlines(keepends=True)), initial=0))
    if not any(_named_key_at(text, offsets[i], line, helpers) for i, line in enumerate(text.splitlines())):
        return ""
    literal = {m.group(2) for line in text.splitlines() if (m := _LITERAL_KEY.match(line))}
    unnamed = _rendered_devices(docs, rules) - literal - set((kept or {}).values())
    return unnamed.pop() if len(unnamed) == 1 else ""


def _rendered_devices(docs: list[dict[str, Any]], rules: RuleSet) -> set[str]:
    """The device resources the containers of these rendered objects ask for."""
    return {r for r in asked_for(docs) if rules.lookup(r) is not None}


# `{{ $key }}: {{ $value }}`: a resource key and its count, both from the variables of a `range` over a map
_RANGE_KEY = re.compile(r"\s*\{\{-?\s*\$(\w+)\s*-?\}\}\s*:\s*\{\{.*\}\}\s*")


def range_named_keys(text: str, rel: str, docs: list[dict[str, Any]], devices: list[Device], rules: RuleSet) -> None:
    """Raise NotIdiomatic when the render asks for a device resource that no key found (`devices`) writes and a
    `range` over a values map writes a resource key under `limits:`/`requests:` (arena's `{{ $key }}: {{ $value }}`
    of `.Values.devices` beside its own `nvidia.com/gpu` count): that device stays on the device plugin. The reason
    says what to change by hand: which device leaves the map, where each pod's claims go, and the class they ask for."""
    missed = sorted(_rendered_devices(docs, rules) - {d.resource for d in devices})
    lines = text.splitlines()
    keyed = _range_keys(lines) if missed else []
    if not keyed:
        return
    keyed, ray = _holding(lines, keyed, docs, set(missed), rules)
    (first, var, over), others = keyed[0], [i for i, _, m in keyed[1:] if m == keyed[0][2]]
    heads = list(dict.fromkeys(h for i in (first, *others) if (h := _pod_head(lines, i)) >= 0))
    classes = [f"{r} asks for device class {m.rule.device_class}" for r in missed if (m := rules.lookup(r))]
    also = f"; line{'s' if len(others) > 1 else ''} {', '.join(str(i + 1) for i in others)} too" if others else ""
    at = f" above line{'s' if len(heads) > 1 else ''} {', '.join(str(h + 1) for h in heads)}"
    why = (
        f"the resource name `{var}` is each key of the map `{over}` (the "
        f"`range` above it{also}), and these values put {', '.join(missed)} there: the idiomatic rewrites name each "
        "device when fix runs (a literal key, or one values key), and this map's keys are known only when Helm "
        "renders it, so the DRA switch would leave that device on the device plugin. To keep the chart as it is, "
        "serve it through a DeviceClass with extendedResourceName (`--strategy extended-resource`, whole devices "
        "only). By hand: take "
        f"{', '.join(missed)} out of `{over}` and ask for it by a claim from values: a `resourceClaims` list in the "
        f"pod spec{at if heads else ''} (`containers:`), a `claims` list under the container's `resources:` naming "
        f"it, and a ResourceClaimTemplate ({'; '.join(classes) or 'its device class'}; `helm template ... | "
        "dramigrate fix -` shows the claim these values get)"
        + (
            f"; and in its Ray group, rayStartParams (line {', '.join(str(i + 1) for i in ray)}) gets num-gpus, the "
            "GPU count, with the claim: KubeRay reads it from the limits the claim replaces"
            if ray
            else ""
        )
    )
    raise NotIdiomatic(Pattern("E", first + 1, lines[first].strip()), rel, why)


def _holding(
    lines: list[str], keyed: list[tuple[int, str, str]], docs: list[dict[str, Any]], missed: set[str], rules: RuleSet
) -> tuple[list[tuple[int, str, str]], list[int]]:
    """The key lines of `keyed` in the pods whose render asks for a device of `missed` (rayserve: the worker group's
    `.Values.resources`, not the head's `.Values.ray.resources`, which the values give a CPU count), told apart
    when the render has a pod for each pod of the key lines, else all; and the `rayStartParams:` lines (0-based) of
    the Ray groups of those pods that ask for a GPU (KubeRay counts a name ending in gpu)."""
    groups = [(group, pod) for doc in docs for group, pod in pod_groups(doc, [])]
    heads = list(dict.fromkeys(h for i, _, _ in keyed if (h := _pod_head(lines, i)) >= 0))
    if len(groups) != len(heads):
        return keyed, []
    holding, ray = set(), []
    for head, (group, pod) in zip(heads, groups, strict=True):
        asked = {
            str(k)
            for c in pod_containers(pod)
            if isinstance(c.get("resources"), dict)
            for section in ("limits", "requests")
            if isinstance(own := c["resources"].get(section), dict)
            for k in own
        }
        if not asked & missed:
            continue
        holding.add(head)
        params = [i for i in range(head) if re.match(r"^\s*(- )?rayStartParams:", lines[i])]
        if isinstance(group, dict) and "rayStartParams" in group and params and any(r.endswith("gpu") for r in asked):
            ray.append(params[-1])
    return [k for k in keyed if _pod_head(lines, k[0]) in holding] or keyed, ray


def _keyed_map(
    text: str, docs: list[dict[str, Any]], devices: list[Device], rules: RuleSet
) -> tuple[set[str], list[tuple[int, str, str]]] | None:
    """The devices a `range` over a values map writes as keys beside the chart's own device key (one resource, from
    no values name), which the render asks for and the migration moves to claims, and those key lines
    (keyedmap.py); None when there are none, or the shape is another."""
    held = {r for r in _rendered_devices(docs, rules) - {d.resource for d in devices} if _migrates(r, rules)}
    keyed = keyedmap.key_lines(text.splitlines()) if held and devices else []
    plain = len({d.resource for d in devices}) == 1 and not any(d.name or d.loop for d in devices)
    return (held, keyed) if keyed and plain else None


def _map_only(
    root: Path,
    rel: str,
    text: str,
    originals: dict[str, list[dict[str, Any]]],
    migrated: dict[str, list[dict[str, Any]]],
    claim_templates: dict[str, Any],
    alternative: Alternative | None,
    rules: RuleSet,
    names: dict[str, list[str]] | None,
) -> Listed | None:
    """The rewrite of a template whose containers write their device keys only from `range` maps, with no key of the
    chart's own (keyedmap.map_only): each pod asks for the devices of its container's map (one or several: a GPU and
    EFA interfaces), and the migration gives it a claim of a request per device (or a claim per device kind, above 32
    devices), without constraints (--align-nics ties a GPU to its NICs: refused), and in a Ray group KubeRay's
    num-gpus; None when the template has another shape (the refusal stands)."""
    docs = originals.get(rel, [])
    held = sorted(r for r in _rendered_devices(docs, rules) if _migrates(r, rules))
    if alternative is None or not held or not keyedmap.key_lines(text.splitlines()):
        return None
    claims = multiclaim.pod_claims(docs, migrated.get(rel, []), claim_templates)
    first = claims[0][0]  # the pods' claims: one, or one per device kind above 32 devices (keyedmap.bins)
    ray = any(str(d.get("apiVersion", "")).startswith("ray.io/") for d in docs)  # KubeRay: num-gpus from limits
    if any(set(d.params) - ({"num-gpus"} if ray else set()) for own in claims for d in own):
        raise RewriteError(f"{rel}: a Ray group's rayStartParams count the devices of the values map too")
    specs = [without_api_defaults(d.spec).get("spec", {}) for own in claims for d in own]
    if any(set(spec) != {"devices"} or set(spec["devices"]) != {"requests"} for spec in specs):
        raise RewriteError(
            f"{rel}: the migration ties the map's devices together (a GPU and its NICs under one PCIe root, "
            "--align-nics) or configures them: the map's devices are asked for side by side"
        )
    # the map's devices in these values, those of the other value sets, and NVIDIA's GPU (the map of a chart with
    # no key of its own holds whichever device the user names; its examples switch between GPU and accelerator)
    given = sorted({*held, "nvidia.com/gpu", *(n for n in (names or {}).get(rel, ()) if _migrates(n, rules))})
    given = [n for n in given if _migrates(n, rules)]
    # the workloads asking for the first device only (not the template's ConfigMaps: pytorchjob's scripts are 7,000
    # lines, which each migration of them below parsed again)
    alone = keyedmap.literal_only([d for d in docs if pod_groups(d, [])], held[0], set(held[1:]))
    known = {}
    for res in given:  # each device alone: one request, named (as its claim) after the device, and its toleration
        d = first if len(held) == 1 and res == held[0] else pod_delta(*alternative(alone, held[0], res))[0]
        requests = without_api_defaults(d.spec).get("spec", {}).get("devices", {}).get("requests", [])
        label = dns_label(res.split("/", 1)[-1])
        plain = [{"key": res, "operator": "Exists", "effect": "NoSchedule"}]
        if len(requests) != 1 or "exactly" not in requests[0] or d.claim != label or requests[0].get("name") != label:
            continue
        if (
            (d.tolerations or plain) != plain
            or d.labels
            or d.affinity
            or set(d.params) - ({"num-gpus"} if ray else set())
        ):
            continue
        if ray and (m := rules.lookup(res)) is not None and m.rule.ray_resource:
            continue  # KubeRay makes a Ray resource of it (TPU), which the migration writes into rayStartParams
        known[res] = {k: v for k, v in requests[0]["exactly"].items() if k != "count"}
    if _ties_nics(alone, held[0], given, rules, alternative):
        raise RewriteError(
            f"{rel}: the migration ties a GPU to its NICs under one PCIe root (--align-nics): the map's devices are "
            "asked for side by side"
        )
    if lost := [r for r in held if r not in known]:
        raise RewriteError(f"{rel}: the migration asks for {', '.join(lost)} otherwise than one request named after it")
    name = chart_name(root)
    wiring = functools.partial(_ray_gpus, rel, name) if ray else None
    done = keyedmap.map_only(text, rel, first, known, name, wiring)
    done.section += migrated_section(name, rules) + (_ray_gpus_section(name, rules, known) if ray else "")
    return done


def _ray_gpus(rel: str, chart: str, lines: list[str], pod: int, over: str) -> Edit:
    """The edit setting KubeRay's `rayStartParams.num-gpus` in the Ray group of a pod whose container writes its
    device keys from the map `over` (keyedmap.map_only): with the switch on, the count of the map's first key KubeRay
    counts as a GPU, where the migration moves it to a claim (KubeRay reads it from the limits the claim replaces)."""
    from dramigrate.helm.helper import _ray_params

    count = f'include "{chart}.draRayGpus" {as_arg(over)}'
    cond = f'and $.Values.dra.enabled (ne ({count}) "")'
    start, stop, new = _ray_params(lines, pod, {"num-gpus": ""}, cond, f"({count})", rel)
    return Edit(start, stop, new)


def _ray_gpus_section(chart: str, rules: RuleSet, known: dict[str, Any]) -> str:
    """The define of the num-gpus KubeRay derives from a Ray container's limits map (ray.py): the count of its first
    key (in sorted order) that KubeRay counts as a GPU with a count other than 0, when the migration moves it to a
    claim; "" otherwise. A GPU is what the packs say (rayNumGpus), else a name ending in `gpu` (KubeRay's own test)."""
    said = {r: bool((m := rules.lookup(r)) and m.rule.ray_num_gpus) for r in known}
    gpus = " ".join(json.dumps(r) for r, gpu in said.items() if gpu)
    others = " ".join(json.dumps(r) for r, gpu in said.items() if not gpu)
    return (
        f'{{{{- define "{chart}.draRayGpus" -}}}}\n'
        "{{- $draSeen := false }}\n"
        "{{- range $draKey, $draCount := . }}\n"
        f"{{{{- if and (not $draSeen) (ne (int $draCount) 0) (or (has $draKey (list {gpus})) (and (not (has $draKey "
        f'(list {others}))) (hasSuffix "gpu" $draKey))) }}}}{{{{ $draSeen = true }}}}\n'
        f'{{{{- if include "{migrated_define(chart)}" $draKey }}}}{{{{ int $draCount }}}}{{{{ end }}}}\n'
        "{{- end }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
    )


def _ties_nics(
    alone: list[dict[str, Any]], resource: str, given: list[str], rules: RuleSet, alternative: Alternative
) -> bool:
    """Whether the migration ties a device of `given` to a NIC of `given` (EFA) when a pod asks for one of each
    (--align-nics: a GPU and its NICs under one PCIe root), in the pods of `alone` (which ask for `resource`)."""
    from dramigrate.helm.values import resource_sections

    nics = [r for r in given if (m := rules.lookup(r)) is not None and m.rule.nic]
    others = [r for r in given if r not in nics]
    if not nics or not others:
        return False
    probe = copy.deepcopy(alone)
    for holder, section in resource_sections(probe):
        if resource in holder[section]:
            holder[section] = {**{k: v for k, v in holder[section].items() if k != resource}, others[0]: 1, nics[0]: 1}
    spec = without_api_defaults(pod_delta(*alternative(probe, others[0], others[0]))[0].spec).get("spec", {})
    return set(spec) != {"devices"} or set(spec["devices"]) != {"requests"}


def _migrates(resource: str, rules: RuleSet) -> bool:
    match = rules.lookup(resource)
    return match is not None and not match.rule.report_only and bool(match.rule.device_class)


def _keyed_pods(
    rel: str,
    text: str,
    pods: list[list[Device]],
    deltas: list[PodDelta],
    keyed: tuple[set[str], list[tuple[int, str, str]]] | None,
    docs: list[dict[str, Any]],
    alternative: Alternative | None,
    rules: RuleSet,
    names: dict[str, list[str]] | None,
) -> list[keyedmap.KeyedMap | None]:
    """For each pod, the values map whose device keys its container writes beside the chart's own (None when it
    writes none); raises RewriteError when a map's key line is in no such pod's container."""
    if keyed is None or alternative is None:
        return [None] * len(pods)
    held, at = keyed
    if any(d.params for d in deltas):  # KubeRay's num-gpus, which the migration sets from the claim's devices
        raise RewriteError(f"{rel}: a Ray group's rayStartParams count the devices of the values map too")
    lines = text.splitlines()
    given = sorted(held | {n for n in (names or {}).get(rel, ()) if _migrates(n, rules)})
    entries, base = keyedmap.entries(rel, docs, deltas[0], pods[0][0].resource, given, alternative, rules)
    out: list[keyedmap.KeyedMap | None] = []
    for own in pods:
        mine = keyedmap.of_pod(lines, at, own, rel)
        overs = {over for i, _, over in at if i in mine}
        if len(overs) > 1:
            raise RewriteError(f"{rel}: a container writes device keys from two values maps")
        out.append(keyedmap.KeyedMap(overs.pop(), tuple(mine), entries, base) if mine else None)
    if missed := sorted({i for i, _, _ in at} - {i for k in out if k for i in k.lines}):
        why = "a values map writes device keys in a pod without the chart's own key"
        raise RewriteError(f"{rel}:{missed[0] + 1}: {why}")
    return out


def _range_keys(lines: list[str]) -> list[tuple[int, str, str]]:
    """Each line (0-based) under `limits:`/`requests:` that writes a key and its count from the variables of a
    `range` over a map (`{{ $key }}: {{ $value }}`), with the key's variable and the map that `range` reads."""
    out = []
    for i, line in enumerate(lines):
        key = _RANGE_KEY.fullmatch(line)
        if not key or (up := parent_line(lines, i)) < 0 or not is_key(lines[up], "limits", "requests"):
            continue
        ranges = re.findall(rf"\brange\s+\${key.group(1)}\s*,\s*\$\w+\s*:=\s*(.+?)\s*-?\}}\}}", "\n".join(lines[:i]))
        if ranges:
            out.append((i, f"${key.group(1)}", ranges[-1]))
    return out


def guard_range_keys(text: str, taken: list[str], rules: RuleSet) -> str:
    """The rewritten template with a guard above each resource key a `range` over a values map writes (arena's
    `{{ $key }}: {{ $value }}` of `.Values.devices` beside its own `nvidia.com/gpu`): with the switch on, a key the
    migration would move to a claim fails the render by name, as the claim (which takes `taken`) does not ask for it;
    the device would stay on the device plugin beside the claims. Renders nothing otherwise."""
    from dramigrate.helm.patterns import migrated_regex, untaken_message

    lines = text.splitlines(keepends=True)
    for i, var, _ in reversed(_guarded_range_keys(text, lines)):
        if i and ".draMigrated" in lines[i - 1]:
            continue  # the claim asks for the map's devices (keyedmap.py)
        pad = " " * line_indent(lines[i])
        matched = f"regexMatch {split_literal(migrated_regex(rules), pad=pad + '    ')} {var}"
        guard = fail_when(f"and $.Values.dra.enabled ({matched})", untaken_message(taken), pad)
        lines[i:i] = [line + "\n" for line in guard]
    return "".join(lines)


def _guarded_range_keys(text: str, lines: list[str]) -> list[tuple[int, str, str]]:
    """The range key lines (_range_keys) that need a guard of their own: not a second `range` over the same map
    inside the same blocks as one guarded before it, with no `else` of those blocks between them (the map's
    `requests:` and `limits:` of one container): wherever it renders, the first renders too, and its guard fails
    the render."""
    offsets = list(itertools.accumulate((len(line) for line in lines), initial=0))
    out: list[tuple[int, str, str]] = []
    seen: dict[tuple[str, tuple[tuple[int, str], ...]], int] = {}
    for i, var, over in _range_keys([line.rstrip("\n") for line in lines]):
        inside = tuple(_open_blocks(text, offsets[i])[:-1])  # without the key's own `range`
        first = seen.get((over, inside))
        start = offsets[first] if first is not None else 0
        elses = [start + a for a, _, word in _actions(text[start : offsets[i]]) if word == "else"]
        if first is None or any((_open_blocks(text, at) or [None])[-1] in inside for at in elses):
            seen[over, inside] = i
            out.append((i, var, over))
    return out


def _pod_head(lines: list[str], index: int) -> int:
    """The `containers:` line (0-based) of the pod spec that holds line `index`, or -1."""
    for i in range(index - 1, -1, -1):
        if item_key(lines[i]) == "containers:" and line_indent(lines[i]) < line_indent(lines[index]):
            return i
    return -1


def _resources_line(lines: list[str], d: Device, rel: str) -> int:
    """The `resources:` line above a device key (through its `limits:`/`requests:`)."""
    parent = section_line(lines, d)
    if parent < 0 or (d.section < 0 and not is_key(lines[parent], "limits", "requests")):
        raise NotIdiomatic(Pattern("F", d.index + 1, lines[d.index].strip()), rel, "not under limits/requests")
    return parent_line(lines, parent)


def _containers_line(lines: list[str], res: int) -> int:
    """The line that holds the container of the `resources:` line `res`: its `containers:` (`initContainers:`) list,
    or the container itself when it is the single container of a pod (KServe's `predictor.model:`)."""
    parent = parent_line(lines, res)
    if parent >= 0 and bare(lines[parent]) in _single_heads():
        return parent
    return next(
        (
            i
            for i in range(res - 1, -1, -1)
            if is_key(lines[i], "containers", "initContainers") and line_indent(lines[i]) < line_indent(lines[res])
        ),
        -1,
    )


@functools.cache
def _single_heads() -> frozenset[str]:
    """The key lines (`model:`) of the single containers the workload kinds declare (rules/workloads.yaml)."""
    return frozenset(f"{k}:" for kind in shipped_rules().kinds.values() for k in kind.single_containers)


def pods_of(text: str, rel: str, devices: list[Device]) -> list[list[Device]]:
    """The device keys by the pod that holds them, in template order (an LWS leader and worker, a Ray head and
    worker group); several containers of one pod asking for devices are not taken."""
    lines = text.splitlines()
    by_res: dict[int, list[Device]] = {}
    for d in devices:
        by_res.setdefault(_resources_line(lines, d, rel), []).append(d)
    pods = [_containers_line(lines, res) for res in sorted(by_res)]
    if len(set(pods)) != len(pods):
        raise RewriteError(f"{rel}: the device keys are in several containers of one pod")
    return [by_res[res] for res in sorted(by_res)]


def _template_pods(text: str, rel: str, devices: list[Device]) -> list[list[Device]]:
    """The device keys by the pod of the template that holds them (the containers of one pod together), in template
    order."""
    lines = text.splitlines()
    by_pod: dict[int, list[Device]] = {}
    for d in devices:
        by_pod.setdefault(parent_line(lines, _containers_line(lines, _resources_line(lines, d, rel))), []).append(d)
    return [by_pod[pod] for pod in sorted(by_pod)]


def _branch_delta(text: str, rel: str, pod: list[Device], delta: PodDelta) -> PodDelta:
    """The migration's delta of the branch the values render, for the pod of another branch: the device plugin's
    toleration that the rendered pod wrote itself (delta.covered), this one gets when its block writes none (an
    ollama Deployment beside a vLLM one that tolerates the taint)."""
    lines = text.splitlines()
    start = parent_line(lines, _containers_line(lines, _resources_line(lines, pod[0], rel)))
    writes = any("toleration" in line for line in lines[start : block_end(lines, start)])
    return delta if delta.tolerations or writes else dataclasses.replace(delta, tolerations=delta.covered)


def _own_pods(deltas: list[PodDelta], pods: list[list[Device]], devices: list[Device]) -> bool:
    """Whether the template's pods ask for one device resource and the value sets render a claim for some of them
    only (the others under conditions of their own, or with a count of 0), the same claim but for its count: what
    the migration gives each pod once its own condition holds and its count is above 0."""
    return (
        len(deltas) < len(pods)
        and _alike(deltas, per_item=True, tolerated=True)
        and len({d.resource for d in devices}) == 1
    )


def _exclusive(pods: list[list[Device]]) -> bool:
    """Whether the template holds several pods of which no two render together: each pair sits in the two branches
    of one `if`/`else` (one pod's conditions hold the `not` of one of the other's) and asks for the device with
    one count."""
    return (
        len(pods) > 1
        and len({d.count for pod in pods for d in pod}) == 1
        and all(
            any(_negates(a, b) or _negates(b, a) for a in p[0].conditions for b in q[0].conditions)
            for p, q in itertools.combinations(pods, 2)
        )
    )


def _comment_style(values: str) -> str:
    if re.search(r"^\s*## @param ", values, re.M):
        return "bitnami"
    if re.search(r"^\s*# -- ", values, re.M):
        return "helm-docs"
    return "plain"


def _comment_lines(text: str, width: int) -> list[str]:
    """A comment's lines, cut at spaces only: `device-plugin` or a file name `gpu-dra.yaml` cut at its hyphen reads
    as a typo in the chart's values.yaml."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def reads_class(texts: list[str | None]) -> bool:
    """Whether a rewritten template reads `dra.deviceClassName`: the values block offers the key only then (a
    keyed map's claims take each device's class from the migration, and a key that changes nothing misleads)."""
    return any("dra.deviceClassName" in (t or "") for t in texts)


def values_block(values: str, device_class: str | None, resource: str, enabled: bool) -> str:
    """The `dra:` block appended to values.yaml, in the chart's comment style; without `deviceClassName` when
    `device_class` is None (no template reads it)."""
    docs = {
        "dra": "Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34+)",
        "enabled": f"Request {resource} through a DRA ResourceClaim (false: the device-plugin resource, as before)",
        "enabled, alone": f"Request {resource} through a DRA ResourceClaim (Kubernetes 1.34+; false: the "
        "device-plugin resource)",
        "deviceClassName": "DeviceClass the claim's "
        + (f"{resource.split(' and ')[0]} request" if " and " in resource else "device request")
        + " asks for"
        + (" (empty: the class of the device resource asked for)" if device_class == '""' else ""),
        "existingClaimTemplate": "Name of an existing ResourceClaimTemplate to use instead of the chart's own",
    }
    items = [("enabled", "true" if enabled else "false")]
    if device_class is not None:
        items.append(("deviceClassName", device_class))
    items.append(("existingClaimTemplate", '""'))
    style = _comment_style(values)
    out = [
        "" if values.endswith("\n") or not values else "\n",
        "\n" if values.strip() and not values.endswith("\n\n") else "",
    ]
    if style == "bitnami":
        out.append(f"## @section DRA\n## {docs['dra']}\n##\n")
        for key, _ in items:
            out.append(f"## @param dra.{key} {docs[key]}\n")
        out.append("##\n")
    else:  # the `enabled` line says what `dra:` is (a heading over it said it again)
        lead = "# -- " if style == "helm-docs" else "# "
        docs["enabled"] = docs.pop("enabled, alone")
    out.append("dra:\n")
    for key, value in items:
        if style != "bitnami":
            out.extend(f"  {lead if i == 0 else '# '}{part}\n" for i, part in enumerate(_comment_lines(docs[key], 110)))
        out.append(f"  {key}: {value}\n")
    return "".join(out)


def _metadata_line(lines: list[str], key: str, pod: int = -1) -> str | None:
    """The text after `key:` in the workload's top-level metadata (its name or namespace): that of the document
    holding line `pod` when given (the last top-level `metadata:` above it; triton's leader and worker Deployments in
    one template), else the template's first. A workload with only `generateName:` (a Job created again and again)
    is named by its prefix without the trailing `-`, as the manifest migration names its claim template from it."""
    found = _metadata_entry(lines, key, pod)
    if found is None and key == "name" and (prefix := _metadata_entry(lines, "generateName", pod)):
        return re.sub(r"[-.]+(?=[\"']?$)", "", prefix) or None
    return found


def _metadata_entry(lines: list[str], key: str, pod: int) -> str | None:
    tops = [i for i, line in enumerate(lines) if line.rstrip() == "metadata:" or _FLOW_METADATA.match(line)]
    above = [i for i in tops if i < pod]
    for i in above[-1:] or tops:
        if lines[i].rstrip() != "metadata:":  # `metadata: {name: jellyfin}` (dseif0x's arr chart)
            return _flow_entry(lines[i], key)
        for j in range(i + 1, len(lines)):
            if not is_control(lines[j]) and line_indent(lines[j]) == 0:
                break
            m = re.match(rf"^  {key}:\s*(\S.*)$", lines[j])
            if m:
                return m.group(1).strip()
    return None


_FLOW_METADATA = re.compile(r"metadata:\s*\{.*\}\s*(#.*)?$")


def _flow_entry(line: str, key: str) -> str | None:
    """The text of `key` in a top-level flow mapping `metadata: {name: x, namespace: y}`, its template actions kept
    as written; None where the line does not parse as YAML with the actions set aside."""
    actions = re.findall(r"\{\{.*?\}\}", line)
    marked = re.sub(r"\{\{.*?\}\}", lambda m: f"__DRAACTION{actions.index(m.group(0))}__", line)
    try:
        parsed = yaml.safe_load(marked)
    except yaml.YAMLError:
        return None
    meta = parsed.get("metadata") if isinstance(parsed, dict) else None
    value = meta.get(key) if isinstance(meta, dict) else None
    if not isinstance(value, str) or not value:
        return None
    return re.sub(r"__DRAACTION(\d+)__", lambda m: actions[int(m.group(1))], value)


def _one_line_cel(node: Any) -> Any:
    """`node` with each CEL selector whose fields are plain strings on one line, `- cel: {expression: '...'}`, as the
    DRA values files write it (was two lines a selector: an AMD GPU's claim has two); one a sentinel fills in later
    (a looked-up name's, `@@DRA:expression@@`) keeps its line."""
    if isinstance(node, list):
        return [_one_line_cel(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _one_line_cel(v) for k, v in node.items()}
    cel = out.get("cel")
    if isinstance(cel, dict) and cel and all(isinstance(v, str) and "@@" not in v for v in cel.values()):
        out["cel"] = FlowMap(cel)
    return out


def _sentinel_yaml(spec: dict[str, Any], request_counts: dict[str, str], device_class: str) -> str:
    """The claim spec as template text: the device class from values, each request's count the chart's knob, the
    API's defaults left to it."""
    data = without_api_defaults(spec)
    requests = data.get("devices", {}).get("requests", [])
    for req in requests:
        exact = req.get("exactly", req)
        if exact.get("deviceClassName") == device_class:
            exact["deviceClassName"] = "@@CLASS@@"
        name = req.get("name")
        if name not in request_counts and len(requests) == len(request_counts) == 1:
            name = next(iter(request_counts))  # one request named after the device a values key names (_lookup)
        if name in request_counts:
            exact["count"] = f"@@COUNT:{name}@@"
    text = yaml.dump(_one_line_cel(data), Dumper=BlockDumper, sort_keys=False, default_flow_style=False, width=1000)
    text = text.replace("'@@CLASS@@'", "{{ .Values.dra.deviceClassName }}")
    for name, expr in request_counts.items():
        literal = re.fullmatch(r"[0-9]+", expr)  # a literal count stays one
        text = text.replace(f"'@@COUNT:{name}@@'", expr if literal else f"{{{{ int {as_arg(expr)} }}}}")
    return text


def build(
    root: Path,
    rels: set[str],
    rules: RuleSet,
    originals: dict[str, list[dict[str, Any]]],
    migrated: dict[str, list[dict[str, Any]]],
    claim_templates: dict[str, Any],
    opt_in: bool,
    hints: dict[str, Pattern] | None = None,
    guards: tuple[str, ...] = (),
    alternative: Alternative | None = None,
    names: dict[str, list[str]] | None = None,
    rendered: Any = None,
    beside: frozenset[str] = frozenset(),
    left: dict[str, frozenset[int]] | None = None,
    pinned: dict[str, str] | None = None,
) -> list[Change]:
    """The idiomatic changes for the workload templates `rels` of the chart at `root`; raises
    NotIdiomatic (with the pattern) or RewriteError when the chart is not pattern A throughout. `alternative`
    migrates a template's objects with another device resource, for a vendor choice's other branches; `names`, the
    resource names each template renders with the value sets the chart is used with (pattern E's lookup knows them);
    `rendered`, every object of the templates (unittest_suite.Rendered), for their helm-unittest suites; `beside`,
    the templates whose values map in another branch of the key's `if` (maps_beside) the pass-through takes;
    `left`, the lines of device keys the migration of the reference render leaves as they are (leftwhy.left_lines),
    whose pods keep their device-plugin request with no DRA branch, as the migration keeps it; `pinned`, more guards
    (leftwhy.shared_guards), each with the node label of the product it tests: the switch keeps it in the pods that
    select on that label only (_pinned_guards)."""
    name = chart_name(root)
    values_path = root / "values.yaml"
    values = values_path.read_text(encoding="utf-8") if values_path.is_file() else ""
    if re.search(r"^dra:", values, re.M):
        raise RewriteError("values.yaml already has a top-level `dra:` key")
    if (root / CLAIM_TEMPLATE_FILE).exists():
        raise RewriteError(f"{CLAIM_TEMPLATE_FILE} exists already")
    workloads = []
    zeros: list[Change] = []  # templates whose pods ask for 0 devices (zeropods.py)
    listed: dict[str, Listed] = {}  # templates whose containers a `range` over a values list writes (listed.py)
    helpers = helpers_text(root)
    for rel in sorted(rels):
        text = chart_text((root / rel).read_bytes().decode("utf-8"))  # the write gives the file its line ends back
        try:
            devices = template_devices(root, rel, text, originals.get(rel, []), rules, helpers)
        except NotIdiomatic as exc:
            if (done := _listed(root, text, rel, rules, originals, migrated, claim_templates, exc)) is not None:
                listed[rel] = done
                continue
            _refuse_at_hint(text, rel, (hints or {}).get(rel), exc, whole_defines(root, rel, text))
        devices = migrated_devices(devices, rules)
        if devices and (lines := (left or {}).get(rel)):
            devices = [
                d for pod in _template_pods(text, rel, devices) if not {d.index + 1 for d in pod} & lines for d in pod
            ]
            if not devices:
                continue  # every pod of the template stays on the device plugin, as the migration leaves it
        if zeropods.asks_for_none(devices):  # a node agent's `nvidia.com/gpu: 0`: no claim, the toleration kept
            listing = indented_tolerations(text)  # the DRA branch's toleration renders into the pod's list
            own = zeropods.rewrite(
                rel, listing, devices, originals.get(rel, []), migrated.get(rel, []), guards, helpers
            )
            zeros.append(Change(rel, text, _applied(listing, own)))
            continue
        try:
            only = (
                None
                if devices
                else _map_only(root, rel, text, originals, migrated, claim_templates, alternative, rules, names)
            )
        except RewriteError as exc:  # not the shape the rewrite of such a map takes: what to change by hand, and why
            try:
                range_named_keys(text, rel, originals.get(rel, []), devices, rules)
            except NotIdiomatic as refused:
                why = f"{refused.why} (the rewrite of a map of device keys does not take this template: {exc})"
                raise NotIdiomatic(refused.pattern, refused.rel, why) from exc
            raise
        if only is not None:
            listed[rel] = only  # a container's device keys only from `range` maps (keyedmap.map_only)
            continue
        own_originals, own_migrated, own_templates = originals.get(rel, []), migrated.get(rel, []), claim_templates
        keyed = _keyed_map(text, originals.get(rel, []), devices, rules) if alternative is not None else None
        if keyed is None:
            range_named_keys(text, rel, originals.get(rel, []), devices, rules)
        else:  # the rewrite of the chart's own key is built from the pods asking for it alone, the map's keys beside
            alone = keyedmap.literal_only(own_originals, devices[0].resource, keyed[0])
            own_originals, own_migrated, own_templates = alternative(alone, devices[0].resource, devices[0].resource)
        if not devices:
            first = (hints or {}).get(rel) or first_device_line(text, rules)
            if not rel.startswith("charts/") and (library := library_writes(root, text)):
                raise NotIdiomatic(first, rel, library)
            if whole := _containers_whole(text, first):
                raise NotIdiomatic(first, rel, whole)
            if first.letter == "D":  # helper.py found no helper line that renders the key (see docs/helm.md)
                why = (
                    "no line of a helper in this chart writes the device key, nor a map from a variable with toYaml "
                    "(`{{- $resources | toYaml | nindent 12 }}`, `$model.resources` too), so the helper rewrite has no "
                    "place for the DRA branch"
                )
                raise NotIdiomatic(first, rel, why)
            from dramigrate.helm.passthrough import helper_built_map

            if built := helper_built_map(text):  # groundx: `$rs := get $svcData "resources"` in a range
                raise NotIdiomatic(Pattern("F", built[0], text.splitlines()[built[0] - 1].strip()), rel, built[1])
            several = several_named(_name_keys(text, helpers), template_values(root, rel), rules)
            why = _helper_name(text, first.text) or _range_keyed(text, first) or several or _set_name(text, first)
            why = why or NO_SHAPE
            raise NotIdiomatic(first, rel, why)
        for d in devices if rel not in beside else []:
            if beside_map := _map_in_other_branch(text.splitlines(), d):
                why = (
                    f"the container's resources are `{beside_map[1]}` (pattern B, line {beside_map[0]}) in another "
                    f"branch of `{beside_map[2]}`, which holds this key: a device in that map would stay on the "
                    "device plugin with the DRA switch on, and the rewrite takes one of them per container (a "
                    "literal key behind dra.enabled, or a map passed through with resourceClaims beside it)"
                )
                raise NotIdiomatic(classify(text, d.index + 1, d.resource), rel, why)
        claims = multiclaim.pod_claims(own_originals, own_migrated, own_templates)
        if multiclaim.takes(devices, claims, rules, rel):
            workloads += _several_claims(rel, text, devices, claims, rules, originals.get(rel, []), alternative)
            continue
        deltas = [own[0] for own in claims]
        if "range" in _enclosing(text, devices[0].index) and _alike(deltas, devices[0].per_item):
            # the template's pods, rendered once per item of a list or rank of `until` (triton's leader for rank 0,
            # a worker for each other rank): each gets the one claim template, and each rendered pod its own claim
            pods = _template_pods(text, rel, devices)
            deltas = deltas[:1] * len(pods)
        elif len(deltas) == 1 and _exclusive(branches := _template_pods(text, rel, devices)):
            # one pod per branch of an `if`/`else` (an ollama Deployment or a vLLM one): the value sets render one,
            # and each branch gets its claim, the same claim template
            pods, deltas = branches, [_branch_delta(text, rel, own, deltas[0]) for own in branches]
        elif _own_pods(deltas, branches := _template_pods(text, rel, devices), devices):
            # pods each asking for the device (a Ray head and worker group, each under `if` its own GPU count), fewer
            # of them rendered with a claim: each gets that claim with its own count
            base = min(deltas, key=lambda d: len(d.tolerations))  # a pod that tolerates the taint itself: covered
            pods, deltas = branches, [_branch_delta(text, rel, own, base) for own in branches]
        else:
            pods = pods_of(text, rel, devices) if len(deltas) > 1 else [devices]
        if len(pods) != len(deltas):
            raise RewriteError(f"{rel}: {len(pods)} pod(s) ask for devices, the migration adds claims to {len(deltas)}")
        try:
            keyed_pods = _keyed_pods(rel, text, pods, deltas, keyed, own_originals, alternative, rules, names)
        except RewriteError:  # the map's devices not taken: what to change by hand
            range_named_keys(text, rel, originals.get(rel, []), devices, rules)
            raise
        for k, (own, delta) in enumerate(zip(pods, deltas, strict=True)):
            given = tuple((names or {}).get(rel, ()))
            if own[0].name and (source := name_source(own[0].name, text + helpers)):
                given += source.names  # each name the helper may map the values to (comfyui's vendors)
            named = (
                _lookup(rel, text, own, delta, k, originals.get(rel, []), alternative, rules, given)
                if own[0].name
                else None
            )
            choice = _choice(own, delta, rules, rel)
            if choice:
                own, choices = choice, _alternatives(rel, choice, originals.get(rel, []), alternative, rules)
                requests = _request_resources(delta.spec, own[:1], rules, rel)
            else:
                choices, requests = {}, _request_resources(delta.spec, own, rules, rel)
            match = rules.lookup(own[0].resource)
            base = match.rule.request if match is not None else ""
            workloads.append(
                Workload(rel, text, own, delta, requests, base, choices, named, keyed=keyed_pods[k], helpers=helpers)
            )
    if zeros and (listed or not workloads):
        raise RewriteError(f"{zeros[0].rel}: its pods ask for 0 devices, and no other template's pods get a claim")
    if listed:
        if workloads or len(listed) > 1:
            raise RewriteError(
                f"{', '.join(listed)}: containers a `range` writes, each with its own count, are rewritten only in a "
                "chart whose one template asks for devices"
            )
        return _listed_changes(root, name, listed, values, opt_in)
    own_class = _template_classes(workloads)
    device_class = str(own_class[workloads[0].rel])
    several = len(set(own_class.values())) > 1  # templates of several vendors (an AMD profile beside an NVIDIA one)
    if several or any(w.named and "deviceClassName" in w.named.spec.values() for w in workloads):
        device_class = '""'  # each template's (pattern E: each name's) own class unless dra.deviceClassName is set
    primary_class, device_class = device_class, '""' if any(w.choices for w in workloads) else device_class
    changes = []
    sections = []
    by_rel: dict[str, list[Workload]] = {}
    for w in workloads:
        by_rel.setdefault(w.rel, []).append(w)
    for rel, parts in by_rel.items():
        suffix = "" if len(by_rel) == 1 else f".{_template_label(rel, by_rel)}"
        # the DRA branch's toleration renders into the pod's list, which must parse (listindent.py)
        indented = [dataclasses.replace(w, text=indented_tolerations(w.text)) for w in parts]
        indented = [dataclasses.replace(w, guards=_pinned_guards(w, pinned or {}, workloads)) for w in indented]
        after, own = _rewrite_template(name, suffix, indented, guards)
        after = guard_range_keys(after, sorted({d.resource for w in parts for d in w.devices}), rules)
        # values.yaml leaves dra.deviceClassName empty: a spec that reads it bare falls back to its template's class
        # (nvidia-playground's triton, whose pattern-E lookup knows one name, beside templates that know MIG profiles)
        own = [_classless(section, own_class[rel]) for section in own] if several or device_class == '""' else own
        changes.append(Change(rel, parts[0].text, after))
        sections += own
    changes += zeros
    head = "{{- /* DRA ResourceClaimTemplates (values: dra.*), named with a hash of the spec, which cannot change */}}"
    head += "\n"
    # each separator inside its section's guard: between guards that are off, a bare `---` renders a document
    start = "apiVersion: resource.k8s.io/v1\n"
    sections = [
        s if k == 0 or "---\n" + start in s else s.replace(start, "---\n" + start, 1) for k, s in enumerate(sections)
    ]
    if device_class != primary_class:  # a vendor choice: the class the values leave empty is each request's own
        sections = [_classless(s, primary_class) for s in sections]
    sections = shared_specs(name, sections)  # templates asking for the same devices: one spec define per class
    if any(w.named or w.keyed for w in workloads):
        sections.append(migrated_section(name, rules))
    if maps := [w.keyed for w in workloads if w.keyed]:
        sections.append(keyedmap.section(name, maps))
    if any(f'"{free_claim_define(name)}"' in c.after for c in changes):
        sections.append(free_claim_section(name))
    from dramigrate.helm.oldcluster import one_check
    from dramigrate.helm.oneswitch import stated_once
    from dramigrate.helm.sharedtemplate import one_template, ranged, renamed

    fail = fail_when("", OLD_CLUSTER.format(DRA_OFF))[1].strip()
    taken = helpers + "".join(c.after for c in changes)
    claim_file, renames = one_template(name, one_check(head + "".join(sections), SERVED, fail), taken)
    changes = [dataclasses.replace(c, after=renamed(c.after, renames)) for c in changes]
    changes.append(Change(CLAIM_TEMPLATE_FILE, None, claim_file))
    # the guards once, not in each `if`
    changes = stated_once(name, changes, (*guards, *(pinned or {})), CLAIM_TEMPLATE_FILE, helpers)
    # claim templates alike but for name and count: one range over them
    changes = [
        dataclasses.replace(c, after=ranged(name, c.after)) if c.rel == CLAIM_TEMPLATE_FILE else c for c in changes
    ]
    resource = (" or " if several or any(w.choices or w.named for w in workloads) else " and ").join(
        dict.fromkeys(r for w in workloads for r in (w.named.entries if w.named else [d.resource for d in w.devices]))
    )
    for over in dict.fromkeys(w.keyed.over.removeprefix("$.Values.") for w in workloads if w.keyed):
        resource += f" and each device of {over}"  # a values map's device keys (keyedmap.py)
    if not reads_class([c.after for c in changes]):
        device_class = None
    changes += conventions(root, device_class and device_class.strip('"'), not opt_in)
    if (root / "tests").is_dir():
        lone = [w for w in workloads if len(by_rel[w.rel]) == 1 and _containers(w) is None and not w.choices]
        lone = [w for w in lone if w.named is None and w.keyed is None and not _per_step(w)]
        changes += unit_tests(root, lone, originals, rendered)
    changes.append(
        Change(
            "values.yaml",
            values if values_path.is_file() else None,
            values + values_block(values, device_class, resource, not opt_in),
        )
    )
    return changes


def containers_of_ranges(exc: NotIdiomatic) -> bool:
    """Whether `exc` refuses a device key in containers that `range` blocks write, each with its own count: the shape
    listed.py and nested.py rewrite when the migration's claims allow (known once the value sets are migrated)."""
    return "of a container that `range" in exc.why or "which writes one container per item" in exc.why


def _listed(
    root: Path,
    text: str,
    rel: str,
    rules: RuleSet,
    originals: dict[str, list[dict[str, Any]]],
    migrated: dict[str, list[dict[str, Any]]],
    claim_templates: dict[str, Any],
    exc: NotIdiomatic,
) -> Listed | None:
    """The rewrite of a template whose containers a `range` over a values list writes, each with its own count
    (listed.py), when `exc` refused that shape and the template takes it; else None (the refusal stands)."""
    if not containers_of_ranges(exc):
        return None
    try:
        claims = multiclaim.pod_claims(originals.get(rel, []), migrated.get(rel, []), claim_templates)
    except RewriteError:
        return None
    if any(len(own) != 1 for own in claims):
        return None
    if "of a container that `range" in exc.why and len(claims) == 1:
        try:
            return listed_rewrite(text, rel, rules, claims[0][0], chart_name(root))
        except RewriteError:
            pass
    try:  # containers that nested `range` blocks write, each a request of the pod's claim named after it
        return nested_rewrite(text, rel, rules, [own[0] for own in claims], chart_name(root))
    except RewriteError:
        return None


def _listed_changes(root: Path, name: str, listed: dict[str, Listed], values: str, opt_in: bool) -> list[Change]:
    """The changes of a chart whose one device template is rewritten by listed.py."""
    from dramigrate.helm.oldcluster import one_check

    ((rel, done),) = listed.items()
    head = (
        "{{- /* DRA ResourceClaimTemplates (values: dra.*), named with a hash of the spec, which cannot change */}}\n"
        if "kind: ResourceClaimTemplate" in done.section
        else ""  # nested.py writes each claim template beside its pod: this file holds the spec's define
    )
    fail = fail_when("", OLD_CLUSTER.format(DRA_OFF))[1].strip()
    values_path = root / "values.yaml"
    device_class = done.device_class if reads_class([done.after, done.section]) else None
    return [
        Change(rel, done.before, done.after),
        Change(CLAIM_TEMPLATE_FILE, None, one_check(head + done.section, SERVED, fail)),
        *conventions(root, device_class, not opt_in),
        Change(
            "values.yaml",
            values if values_path.is_file() else None,
            values + values_block(values, device_class, done.resource, not opt_in),
        ),
    ]


def _several_claims(
    rel: str,
    text: str,
    devices: list[Device],
    claims: list[list[PodDelta]],
    rules: RuleSet,
    originals: list[dict[str, Any]],
    alternative: Alternative | None,
) -> list[Workload]:
    """The workloads of a template whose pods ask for two device kinds (a GPU and EFA interfaces): for each such pod,
    the one claim of both (the migration's while they add up to 32 devices at most) and a claim of each (its split
    above that, AllocationResultsMaxSize), each shape under its condition; a pod of one kind as before."""
    if devices[0].loop is not None or any(d.name for d in devices):
        why = "inside `range`" if devices[0].loop is not None else "with a resource name from values"
        raise RewriteError(
            f"{rel}:{devices[0].index + 1}: a pod asks for several device kinds "
            f"({', '.join(dict.fromkeys(d.resource for d in devices))}), with device keys {why}: the claims of "
            "both kinds (one claim, or one of each above 32 devices) are written for one pod at a time"
        )
    pods = pods_of(text, rel, devices) if len(claims) > 1 else [devices]
    if len(pods) != len(claims):
        raise RewriteError(f"{rel}: {len(pods)} pod(s) ask for devices, the migration adds claims to {len(claims)}")
    out = []
    for k, (own, deltas) in enumerate(zip(pods, claims, strict=True)):
        resources = list(dict.fromkeys(d.resource for d in own))
        if len(resources) == 1 and len(deltas) == 1:
            match = rules.lookup(own[0].resource)
            requests = _request_resources(deltas[0].spec, own, rules, rel)
            out.append(Workload(rel, text, own, deltas[0], requests, match.rule.request if match else ""))
            continue
        if len(resources) != 2:
            raise RewriteError(
                f"{rel}: a pod asks for {', '.join(resources)}: the rewrite takes two device kinds in a pod"
            )
        own = multiclaim.own_conditions_in_counts(own)
        counts = {}
        for d in own:
            if counts.setdefault(d.resource, d.count) != d.count:
                raise RewriteError(f"{rel}:{d.index + 1}: {d.resource} is asked for with two counts in one pod")
        extra = multiclaim.missing_request(rel, own, deltas, rules, originals, alternative, k)
        joint, parts = multiclaim.shapes(rel, own, deltas, rules, extra)
        total = f"(add {' '.join(c if c.isdigit() else f'(int {as_arg(c)})' for c in counts.values())})"
        match = rules.lookup(resources[0])
        base = match.rule.request if match is not None else ""
        requests = _request_resources(joint.spec, own, rules, rel)
        limits = tuple(counts.values())
        out.append(Workload(rel, text, own, joint, requests, base, over=f"(le {total} 32)", limits=limits))
        for keys, delta, own_requests in parts:
            out.append(
                Workload(
                    rel,
                    text,
                    keys,
                    delta,
                    own_requests,
                    base,
                    part=delta.claim,
                    over=f"(gt {total} 32)",
                    keeps_class=keys[0].resource != resources[0],
                )
            )
    return out


def _template_classes(workloads: list[Workload]) -> dict[str, str]:
    """Each template's device class (the migration's, for its device resource); raises RewriteError where a template
    asks for several resources or its migration for several classes. Templates may differ: a chart with one
    template per serving profile, some for AMD and some for NVIDIA GPUs, gets each its own class."""
    resources: dict[str, set[str]] = {}
    classes: dict[str, set[str | None]] = {}
    for w in workloads:
        if w.part:
            continue  # a claim of one of a pod's two device kinds: the claim of both stands for it (multiclaim.py)
        resources.setdefault(w.rel, set()).add(w.devices[0].resource)
        classes.setdefault(w.rel, set()).add(_class_of(w.delta.spec, w.devices[0].resource, w.requests))
    for rel, found in resources.items():
        if len(found) > 1:
            raise RewriteError(f"{rel}: its pods request different device resources ({', '.join(sorted(found))})")
    if any(len(found) != 1 or None in found for found in classes.values()):
        raise RewriteError("the migration asks for several device classes")
    return {rel: str(next(iter(found))) for rel, found in classes.items()}


def _template_label(rel: str, rels: Iterable[str]) -> str:
    """The word a template's own helpers are named with: its file's stem, or its path under templates/ when another
    of the templates has that stem (`cloud-model/inferenceservice.yaml` beside `quantized-model/...`)."""
    stem = Path(rel).stem
    if sum(Path(other).stem == stem for other in rels) == 1:
        return stem
    return "-".join(Path(rel).with_suffix("").parts[1:])


def _choice(devices: list[Device], delta: PodDelta, rules: RuleSet, rel: str) -> list[Device] | None:
    """The pod's device keys, the migrated one's first, when they are a vendor choice: one device resource per branch
    of one `if`/`else` chain, and the migration's claim asks for one of them; else None. Each branch may have a count
    of its own (_branch_counts)."""
    by_resource: dict[str, list[Device]] = {}
    for d in devices:
        by_resource.setdefault(d.resource, []).append(d)
    if len(by_resource) < 2 or any(d.branch is None for d in devices):
        return None
    # one chain, or several alike (thorix's comfyui: the same `if eq .Values.gpu.type "nvidia"` / `else if ... "amd"`
    # under `requests:` and again under `limits:`): each chain's branch -> its resource, and its branch conditions
    chains: dict[int, dict[int, tuple[str, tuple[str, ...]]]] = {}
    for d in devices:
        if d.branch:
            chains.setdefault(d.branch[0], {})[d.branch[1]] = (d.resource, tuple(d.branch_conditions))
    branches = {res: {d.branch[1] for d in own if d.branch} for res, own in by_resource.items()}
    if (
        len({tuple(sorted(c.items())) for c in chains.values()}) != 1
        or any(len(b) != 1 for b in branches.values())
        or len({next(iter(b)) for b in branches.values()}) != len(branches)
    ) and not _compared_ifs(by_resource):
        return None
    classes = {(r.get("exactly") or r).get("deviceClassName") for r in _requests(delta.spec)}
    asked = [res for res in by_resource if (m := rules.lookup(res)) is not None and m.rule.device_class in classes]
    if len(asked) != 1:
        return None
    return [*by_resource[asked[0]], *(d for res, own in by_resource.items() if res != asked[0] for d in own)]


_EQ_LITERAL = re.compile(r'\(eq (\S+) ("[^"]*"|-?[0-9]+)\)|\(eq ("[^"]*"|-?[0-9]+) (\S+)\)')


def _compared_ifs(by_resource: dict[str, list[Device]]) -> bool:
    """Whether each device resource's keys sit in an `if` of their own that compares one value with a literal of
    their own, under the same outer conditions (hs3434: `if eq .Values.gpu.vendor "amd"` around amd.com/gpu, then
    another `if eq .Values.gpu.vendor "nvidia"` around nvidia.com/gpu): no two of them render together, a choice
    as one `if`/`else if` chain is."""
    compared: dict[str, tuple[str, str]] = {}
    outer: set[tuple[str, ...]] = set()
    for res, own in by_resource.items():
        tests = {tuple(d.branch_conditions) for d in own}
        test = _compared(next(iter(tests))[0]) if len(tests) == 1 and len(next(iter(tests))) == 1 else None
        if test is None or any(d.branch is None or d.branch[1] for d in own):
            return False
        compared[res] = test
        outer |= {tuple(d.conditions[: len(d.conditions) - 1]) for d in own}
    values = {value for value, _ in compared.values()}
    return len(outer) == 1 and len(values) == 1 and len({lit for _, lit in compared.values()}) == len(compared)


def unit_tests(
    root: Path, workloads: list[Workload], originals: dict[str, list[dict[str, Any]]], rendered: Any = None
) -> list[Change]:
    """helm-unittest suites for the rewritten templates (the chart keeps its unit tests in `tests/`)."""
    from dramigrate.helm.unittest_suite import Rendered, suite, suite_path, switch_cases

    rendered = rendered or Rendered()

    out = []
    for w in workloads:
        if (root / suite_path(w.rel)).exists():
            continue
        resource = w.devices[0].resource
        count = w.devices[0].count if len(w.devices) == 1 else None
        cases = switch_cases(resource, SWITCH, count, 1 if len(workloads) == 1 else None)
        made = suite(
            w.rel,
            CLAIM_TEMPLATE_FILE,
            originals.get(w.rel, []),
            resource,
            w.delta.claim,
            cases,
            f"DRA ResourceClaims behind the {SWITCH} switch",
            rendered.documents.get(w.rel),
            rendered.release,
        )
        if made is not None:
            out.append(made)
    return out


SERVED = (  # the cluster serves DRA's GA API
    '(and ($.Capabilities.APIVersions.Has "resource.k8s.io/v1") '
    '(semverCompare ">=1.34-0" $.Capabilities.KubeVersion.Version))'
)
OLD_CLUSTER = "DRA ResourceClaims need Kubernetes 1.34+ (resource.k8s.io/v1): on an older cluster, {}"
DRA_OFF = "set dra.enabled=false"  # the way back the old-cluster message names


def fail_when(condition: str, message: str, pad: str = "") -> list[str]:
    """A guard that fails the render with `message` (a literal: Helm prints it as it is) when `condition` holds: the
    condition on one line, the message on the next (one line of both ran to 300-900 characters). Renders nothing
    otherwise, as the one-line guard did."""
    return [f"{pad}{{{{- if {condition} }}}}", f"{pad}  {{{{- fail {json.dumps(message)} }}}}{{{{ end }}}}"]


def capabilities_check(condition: str, way_back: str) -> str:
    """Template text that fails the render, with a clear message, when `condition` holds and the cluster
    serves no `resource.k8s.io/v1` or is older than Kubernetes 1.34 (DRA's GA): a chart that asks for claims
    on such a cluster would otherwise install pods that never schedule."""
    both = f"{condition} (not {SERVED})" if condition.startswith("and ") else f"and {as_arg(condition)} (not {SERVED})"
    return "\n".join(fail_when(both, OLD_CLUSTER.format(way_back))) + "\n"


def _class_of(spec: dict[str, Any], resource: str, requests: dict[str, str]) -> str | None:
    """The device class of the request for `resource` (the chart's first device: dra.deviceClassName)."""
    names = {
        (r.get("exactly") or r).get("deviceClassName") for r in _requests(spec) if requests.get(r["name"]) == resource
    }
    return names.pop() if len(names) == 1 else None


def _device_class(spec: dict[str, Any]) -> str | None:
    names = {
        (r.get("exactly") or r).get("deviceClassName")
        for r in spec.get("spec", spec).get("devices", {}).get("requests", [])
    }
    return names.pop() if len(names) == 1 else None


def _alike(deltas: list[PodDelta], per_item: bool = False, tolerated: bool = False) -> bool:
    """Whether the migration gave every pod the same claim (name, spec, tolerations): the items of a `range`; with a
    count per item (`per_item`), the same but for the counts; with `tolerated`, the same but for whether the pod
    tolerated the device plugin's taint itself (an LWS leader that does and its worker that does not)."""

    def claim(d: PodDelta) -> tuple[Any, ...]:
        spec = json.loads(json.dumps(d.spec))
        for req in _requests(spec) if per_item else []:
            req.get("exactly", req).pop("count", None)
        return d.claim, spec, d.tolerations + d.covered if tolerated else d.tolerations

    return all(claim(d) == claim(deltas[0]) for d in deltas)


def _writes_yaml(text: str) -> bool:
    """Whether a template writes a YAML line itself, outside its `define` blocks (not only actions and comments)."""
    depth, outside, pos = 0, [], 0
    for start, end, word in _actions(text):
        if depth == 0:
            outside.append(text[pos:start])
        if word in ("define", "block") or (depth and word in ("if", "with", "range")):
            depth += 1
        elif word == "end" and depth:
            depth -= 1
        pos = end
    if depth == 0:
        outside.append(text[pos:])
    return any(
        line.strip() and not line.strip().startswith("#") and line.strip() != "---"
        for chunk in outside
        for line in chunk.splitlines()
    )


def library_writes(root: Path, text: str) -> str:
    """Why a template that only includes a library chart's templates (bjw-s common under app-template and immich,
    k8s-at-home common) is left to the user: its objects, device request included, are written by the library,
    which the chart pulls as a dependency. "" when the template writes YAML of its own outside its defines (a chart
    that only names its objects with a library's helpers, bitnami `common.names.fullname`) or includes no define
    of a library subchart."""
    if _writes_yaml(text):
        return ""
    named = defines(
        {
            str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(root.glob("charts/*/templates/**/*"))
            if p.is_file() and p.suffix in (".tpl", ".yaml", ".yml")
        }
    )
    for call in re.findall(r'\b(?:include|template)\s+"([^"]+)"', text):
        found = named.get(call)
        if found is None:
            continue
        library = "/".join(found.file.split("/")[:2])
        advice = pod_advice(root, library) or "the library templates have no place for the DRA claim"
        return (
            f'the objects are written by the library chart {library} (`include "{call}"`), which the chart pulls '
            "as a dependency: the rewrite changes only the templates of the chart itself (a change in the library "
            f"would be undone by `helm dependency update`), and {advice}"
        )
    return ""


def first_device_line(text: str, rules: RuleSet) -> Pattern:
    """The pattern of a template's first line that names a device resource or passes a resources map through."""
    for i, line in enumerate(text.splitlines()):
        for res in re.findall(r"[A-Za-z0-9.\-]+\.[a-z]+/[A-Za-z0-9.\-_]+", line):
            if rules.is_device_candidate(res) and rules.lookup(res) is not None:
                return classify(text, i + 1, res)
        if re.search(r"\b(resources|Resources)\b", line) and "toYaml" in line:
            return classify(text, i + 1, "")
    lines = [(i, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip() not in ("", "---")]
    if lines and all(_INCLUDE_ONLY.fullmatch(line) for _, line in lines):  # a library's define writes the objects
        return Pattern("D", lines[0][0] + 1, lines[0][1])
    return Pattern("F", 1, "")


def _pinned_guards(w: Workload, pinned: dict[str, str], workloads: list[Workload]) -> tuple[str, ...]:
    """The guards of `pinned` (guard -> the node label of the product it tests) the switch of pod `w` keeps: those of
    a label its pod selects on, which the migration moved into the claim or kept (a pod that selects no product is
    not left as shared, whatever the values name: a training Deployment beside a pinned inference one); each guard
    in every pod when no pod of the chart is seen to select its label (a label in a shape the migration reports
    neither way)."""

    def selects(v: Workload, label: str) -> bool:
        return label in v.delta.labels or label in v.delta.kept

    return tuple(g for g, label in pinned.items() if selects(w, label) or not any(selects(v, label) for v in workloads))


_INCLUDE_ONLY = re.compile(r"\{\{-?\s*(?:include|template)\s+\"[^\"]+\"[^}]*-?\}\}")


def _rewrite_template(
    chart: str, suffix: str, parts: list[Workload], guards: tuple[str, ...] = ()
) -> tuple[str, list[str]]:
    """A template with the DRA switch around each of its pods' device keys (`parts`: one per pod, in template
    order), and the claim-template sections. Pods whose claim template would be the same text (a LeaderWorkerSet's
    leader and worker asking for the same devices) share one; else each pod's defines and template name carry its
    own label (the migration's: `leader`, `worker`)."""
    by_part: dict[str, list[Workload]] = {}  # two device kinds' own claims (multiclaim.py): their own defines
    for w in parts:
        by_part.setdefault(w.part, []).append(w)
    edits_by_part, sections = [], []
    carried: list[str] = []  # the template variables the claim template has set so far for this template's pods
    for part, own in by_part.items():
        edits, own_sections, carried = _claim_sections(
            chart, suffix + (f".{part}" if part else ""), own, guards, carried
        )
        edits_by_part.append(edits)
        sections += own_sections
    edits = multiclaim.merge_edits(edits_by_part, parts[0].rel) if len(by_part) > 1 else edits_by_part[0]
    return _applied(parts[0].text, edits), sections


def _applied(text: str, edits: list[Edit]) -> str:
    """The template `text` with `edits` made (each moved past the blank and trailing-space lines around its place)."""
    lines = text.splitlines()
    out = list(lines)
    later = _later_assigned(text)
    edits = [
        _end_after_trailing_space(_after_trailing_space(lines, _above_blanks(lines, _inlined(text, later, e))))
        for e in edits
    ]
    for e in sorted(edits, key=lambda e: (e.index, e.stop), reverse=True):
        out[e.index : e.stop] = e.lines
    return _one_variable("\n".join(out) + ("\n" if text.endswith("\n") else ""))


def _claim_sections(
    chart: str, suffix: str, parts: list[Workload], guards: tuple[str, ...], carried: list[str]
) -> tuple[list[Edit], list[str], list[str]]:
    """The edits and claim-template sections of one claim of each pod of a template (and the template variables the
    sections have set, after `carried`)."""
    lines = parts[0].text.splitlines()
    part = parts[0].part
    shared = [_serving(w, _pod_edits(chart, suffix, w, guards, part, [])) for w in parts]
    if len({section for _, section, _ in shared}) == 1:
        return [e for own, _, _ in shared for e in own], [shared[0][1]], carried
    labels = [w.delta.template.rsplit("-", 2)[-2] for w in parts]
    if len(set(labels)) != len(labels):  # one claim for each (the pods of a `range`): the last word of their names
        labels = [
            (re.findall(r"[a-z0-9]+", re.sub(r"\{\{.*?\}\}", "", _pod_name(lines, w))) or [""])[-1] for w in parts
        ]
    if len(set(labels)) != len(labels) or not all(labels):
        labels = [_holder_label(lines, w) for w in parts]
    if len(set(labels)) != len(labels) or not all(labels):
        labels = [str(k) for k in range(1, len(parts) + 1)]
    pair = _branch_pair(parts)
    for names in ((), (*labels, *([part] if part else []))) if pair else ():  # as both are named, else after both
        joint = [_serving(w, _pod_edits(chart, suffix, w, guards, part, [], _Joint(pair, names))) for w in parts]
        if len({section for _, section, _ in joint}) == 1:
            return [e for own, _, _ in joint for e in own], [joint[0][1]], carried
    edits, sections = [], []
    for w, label in zip(parts, labels, strict=True):
        named = f"{label}-{part}" if part else label
        own, section, carried = _serving(w, _pod_edits(chart, f"{suffix}.{label}", w, guards, named, carried))
        edits += own
        sections.append(section)
    return edits, sections, carried


def _serving(w: Workload, made: tuple[list[Edit], str, list[str]]) -> tuple[list[Edit], str, list[str]]:
    """_pod_edits' result, each edit told the line of the pod's last device key (Edit.reads)."""
    last = max(d.index for d in w.devices)
    for e in made[0]:
        e.reads = last
    return made


@dataclass(frozen=True)
class _Joint:
    """Two pods of a template told apart by one condition, one in its `if` and one in its `else` (triton's leader
    `if eq $i 0` in a `range`, its workers in the `else`; a StatefulSet or a Deployment by a values switch), that ask
    for the same devices: one claim template serves both, rendered when one of them renders; named as they are, or
    after both where their names differ (`-leader-worker`)."""

    pair: tuple[str, str]  # the condition and its negation, which the claim template does not read
    labels: tuple[str, ...]  # where the name is after both: their labels (and the claim's part)


def _branch_pair(parts: list[Workload]) -> tuple[str, str] | None:
    """For two pods whose conditions differ in one condition and its negation, that pair (_Joint); else None. A
    guess: the claim-template sections it gives must come out the same text."""
    if len(parts) != 2:
        return None
    owns = []
    for w in parts:
        d, loop = w.devices[0], w.devices[0].loop
        owns.append([c for c in d.conditions[loop.start :] if c not in loop.nonempty] if loop else d.conditions)
    a, b = ([c for c in x if c not in y] for x, y in ((owns[0], owns[1]), (owns[1], owns[0])))
    if len(a) == 1 and len(b) == 1 and (_negates(a[0], b[0]) or _negates(b[0], a[0])):
        return a[0], b[0]
    return None


def _later_assigned(text: str) -> dict[str, list[tuple[int, str]]]:
    """The template variables assigned only with `:=` outside any block: each with the offset and the expression of
    every assignment, in template order (what an edit above that line reads in its place). A Ray chart's head and
    worker groups each set `$gpucnt := .Values.rayCluster.<group>.gpu` (sagemaker-hyperpod-recipes): one name, two
    assignments, each read by its own group's device key."""
    depth, found, dropped = 0, {}, set()
    for start, end, word in _actions(text):
        body = action_body(text[start:end])
        if word in ("if", "with", "range", "define", "block"):
            depth += 1
        elif word == "end" and depth:
            depth -= 1
        elif m := _ASSIGNMENT.match(body):
            name = m.group(1)
            if depth or not m.group(0).endswith(":="):
                dropped.add(name)
            else:
                found.setdefault(name, []).append((start, body[m.end() :].strip()))
    return {name: seen for name, seen in found.items() if name not in dropped}


def _in_effect(assigned: list[tuple[int, str]], at: int) -> tuple[int, str] | None:
    """The assignment of a variable a template reads at offset `at` (the last one before it; None: none yet)."""
    before = [a for a in assigned if a[0] < at]
    return before[-1] if before else None


def _inlined(text: str, later: dict[str, list[tuple[int, str]]], e: Edit) -> Edit:
    """An edit placed above the assignment of a template variable it reads (comfyui's `$gpuResource := include
    "comfyui.gpuResource" .`, set inside the container's `requests:` and read by the `if` around its device key, while
    the pod's claims and toleration go above the container): there the variable is not declared yet, or holds what
    another pod's assignment set (a Ray worker group's edits below the head's `$gpucnt :=`), so the edit reads the
    expression its device key sees (`later`: _later_assigned; the key at `e.reads`), with the root as `$` inside
    `with`/`range` (the chart's or the edit's own). Without the key's line, only a variable assigned once is inlined."""
    offsets = [0]
    for line in text.splitlines():
        offsets.append(offsets[-1] + len(line) + 1)
    at = offsets[min(e.index, len(offsets) - 1)]
    key = offsets[min(e.reads + 1, len(offsets) - 1)] if e.reads >= 0 else None
    body = "\n".join(e.lines)
    for _ in range(len(later)):
        chosen: dict[str, str] = {}
        for v in dict.fromkeys(_VARIABLE.findall(body)):
            if v not in later:
                continue
            if key is None:
                if len(later[v]) == 1 and later[v][0][0] >= at:
                    chosen[v] = later[v][0][1]
            elif (seen := _in_effect(later[v], key)) is not None and seen != _in_effect(later[v], at):
                chosen[v] = seen[1]
        if not chosen:
            break
        for v, expr in chosen.items():
            if _inside_with(text, e.index) or "{{- range " in body:  # or in the edit's own range (tolerated_check)
                expr = whole_root(expr)
            body = re.sub(rf"\{{{{ \${v} \}}}}", lambda _m, x=expr: f"{{{{ {x} }}}}", body)  # `{{ $v }}`: as it is
            body = re.sub(rf"\${v}(?!\w)", lambda _m, x=expr: as_arg(x), body)
    return e if body == "\n".join(e.lines) else Edit(e.index, e.stop, body.split("\n"), e.reads)


def _pod_name(lines: list[str], w: Workload) -> str:
    """The metadata.name line of the document holding the workload's pod, as the template writes it ("" if none)."""
    pod = parent_line(lines, _containers_line(lines, _resources_line(lines, w.devices[0], w.rel)))
    return _metadata_line(lines, "name", pod) or ""


def _holder_label(lines: list[str], w: Workload) -> str:
    """The key that holds the workload's pod template, in kebab case without its `Spec`/`Template` words: a Ray
    group's `headGroupSpec` reads `head-group`, an item of `workerGroupSpecs` `worker-group` ("" if none)."""
    at = parent_line(lines, parent_line(lines, _containers_line(lines, _resources_line(lines, w.devices[0], w.rel))))
    if at >= 0 and item_key(lines[at]) == "template:":
        at = parent_line(lines, at)
    if at >= 0 and lines[at].lstrip().startswith("- "):
        item = at
        at = parent_line(lines, at)  # an item of a list of groups: the list's key
        for i in range(item - 1, at, -1):  # `workerGroupSpecs:` with its items at its own indent (a RayJob's)
            if (
                is_control(lines[i])
                or line_indent(lines[i]) > line_indent(lines[item])
                or lines[i].lstrip().startswith("- ")
            ):
                continue  # an earlier item of the list, or its content
            at = i if line_indent(lines[i]) == line_indent(lines[item]) and bare(lines[i]).endswith(":") else at
            break
    words = re.findall(r"[A-Z]?[a-z0-9]+", item_key(lines[at]).split(":")[0]) if at >= 0 else []
    while words and words[-1].lower() in ("spec", "specs", "template"):
        words.pop()
    return "-".join(words).lower()


def _after_trailing_space(lines: list[str], e: Edit) -> Edit:
    """An insertion `{{- if X }}` ... `{{- end }}` after a line ending in spaces (immich's `{{- end }}        ` above
    `containers:`): its trim would take those spaces, which the chart renders. It trims rightwards instead,
    `{{ if X -}}` ... `{{ end -}}`, so with the switch off the spaces, the line break and the next line's indent
    stay as they were."""
    if e.stop != e.index or e.index == 0 or len(e.lines) < 3 or e.index >= len(lines):
        return e
    before = lines[e.index - 1]
    if not before.strip() or before == before.rstrip():
        return e
    first = re.fullmatch(r"(\s*)\{\{- (if .*) \}\}", e.lines[0])
    last = re.fullmatch(r"(\s*)\{\{- end \}\}", e.lines[-1])
    if first is None or last is None or not first.group(1) == last.group(1) == " " * line_indent(lines[e.index]):
        return e
    if line_indent(e.lines[1]) != len(first.group(1)):
        return e
    ind = first.group(1)
    return Edit(e.index, e.stop, [f"{ind}{{{{ {first.group(2)} -}}}}", *e.lines[1:-1], f"{ind}{{{{ end -}}}}"])


def _end_after_trailing_space(e: Edit) -> Edit:
    """A wrap `{{- if not X }}` ... `{{- end }}` whose last wrapped line ends in spaces (nvidia-playground's
    `{{ .Values.jupyter.gpu.type }}: {{ .Values.jupyter.gpu.count }} `): the end's trim would take those spaces,
    which the chart renders with the switch off. The end goes on that line, after the spaces, without a trim
    (`... }} {{ end }}`), so the spaces and the line break after them render as they did."""
    if len(e.lines) < 2 or not re.fullmatch(r"\s*\{\{- end \}\}", e.lines[-1]):
        return e
    last = e.lines[-2]
    if not last.strip() or last == last.rstrip():
        return e
    return Edit(e.index, e.stop, [*e.lines[:-2], last + "{{ end }}"], e.reads)


def _above_blanks(lines: list[str], e: Edit) -> Edit:
    """An edit whose first line is a trimming action (`{{- if ... }}`) put above the blank lines before its place:
    there the action would trim them, and the chart would render without them with the switch off (sglang-helm's
    blank line before `containers:`). An insertion moves above them; a wrap takes them in, after its `if`."""
    k = e.index
    while k > 0 and not lines[k - 1].strip():
        k -= 1
    if k == e.index or not e.lines or not e.lines[0].lstrip().startswith("{{-"):
        return e
    if e.index < len(lines) and lines[e.index].lstrip().startswith("{{-"):
        return e  # the line there trims them already
    if e.stop == e.index:
        return Edit(k, k, e.lines)
    return Edit(k, e.stop, [e.lines[0], *lines[k : e.index], *e.lines[1:]])


def _containers(w: Workload) -> list[list[Device]] | None:
    """The device keys by container, in template order, when several containers of the pod ask for the one device
    resource (each with its own count: silogen's evaluation judge, a model and a judge server); else None."""
    lines = w.text.splitlines()
    by_res: dict[int, list[Device]] = {}
    for d in w.devices:
        parent = section_line(lines, d)
        if parent < 0 or (d.section < 0 and not is_key(lines[parent], "limits", "requests")):
            return None
        by_res.setdefault(parent_line(lines, parent), []).append(d)
    if len(by_res) < 2 or len({d.resource for d in w.devices}) != 1 or min(by_res) < 0:
        return None
    return [by_res[res] for res in sorted(by_res)]


def _branch_counts(w: Workload, twins: dict[int, Device], lines: list[str]) -> dict[str, str]:
    """A vendor choice's count per branch, by device resource: the one count of its keys, or the limit's where its
    request reads another expression (transcript-create: `index .Values.resources.limits "amd.com/gpu" | default 1`
    and the same from `.requests`; the claim template checks that the two are equal, _equal_check). Branches may ask
    for different counts: each one's goes into its own claim spec (_choice_spec)."""
    out: dict[str, str] = {}
    for d in w.devices:
        if d.index in twins:
            continue
        if out.setdefault(d.resource, d.count) != d.count:
            raise RewriteError(
                f"{w.rel}:{d.index + 1}: the {d.resource} branch of the device choice asks for two counts "
                f"({out[d.resource]} and {d.count}) that are not a request and its limit in one container"
            )
    return out


def _as_rendered(d: Device, shared: list[str]) -> str:
    """The count of a device key as a value that is false where the key does not render: the count under the
    conditions of its own (those not in `shared`), `(and <conditions> <count>)`, or the condition alone when it ends in
    the count already (`and .Values.model.accelerator .Values.model.accelerator.max` around that count)."""
    own = [c for c in d.conditions if c not in shared]
    words = _split_top(_grouped(own[0]) or own[0], " ") if len(own) == 1 else []
    if _own(d, own[0] if own else "") or (words[:1] == ["and"] and words[-1] == d.count):
        return grouped(own[0])
    if len(own) > 1 and own[-1] == d.count:  # `if .Values.gpu` then `if .Values.gpu.count`: the count is said once
        return f"(and {' '.join(map(grouped, own))})"
    return f"(and {' '.join(map(grouped, own))} {as_arg(d.count)})" if own else as_arg(d.count)


def _renders(d: Device, shared: list[str]) -> str:
    """Where a device key renders, beyond the conditions it shares with its twin: `(and <its own conditions>)`,
    "" when it has none (it renders wherever the pod does); with a count of 0 too, unless the condition is its count."""
    own = [c for c in d.conditions if c not in shared]
    return grouped(and_all(*own)) if own else ""


def _resolved(expr: str, text: str, index: int) -> str:
    """A count expression with each template variable assigned outside any block replaced by what it holds at line
    `index` (sagemaker-hyperpod-recipes' `$gpucnt := .Values.rayCluster.workerNodes.gpu` above the limit it counts)."""
    offset = sum(len(line) + 1 for line in text.splitlines()[: index + 1])
    later = _later_assigned(text)
    for v in dict.fromkeys(_VARIABLE.findall(expr)):
        if v in later and (seen := _in_effect(later[v], offset)) is not None:
            expr = re.sub(rf"\${v}(?!\w)", lambda _m, x=seen[1]: as_arg(x), expr)
    return expr


def _twin_keys(
    devices: list[Device], twins: dict[int, Device], text: str = ""
) -> tuple[list[Device], dict[str, str], list[str], dict[str, str]]:
    """The pod's device keys with each request and limit pair whose limit sits under conditions of its own (alphahack:
    `if and .Values.model.accelerator .Values.model.accelerator.min` around the request, `... .max` around the limit)
    as one key under the conditions the two share; with the count the migration of each rendering takes: the
    limit's where the limit renders, else the request's (a request alone is migrated with its count). Returns those
    keys, by device resource, that count (`or` of the two, each false where its key does not render), and where one
    of each pair renders (the migration adds the toleration there, a count of 0 too: a block under `if
    .Values.resources.limits` renders `nvidia.com/gpu: 0`); and, by that count, whether the key that renders has
    its count set (_set of each key under its own conditions: the `or` of the two counts passes over a count of 0)."""
    merged: dict[str, str] = {}
    renders: list[str] = []
    set_when: dict[str, str] = {}
    keys = [d for d in devices if d.index not in twins]
    for index, limit in twins.items():
        request = next(d for d in devices if d.index == index)
        shared = [c for c in limit.conditions if c in request.conditions]
        if shared == limit.conditions:
            continue  # the limit renders wherever the request does: its count is the claim's (_equal_check)
        merged[limit.resource] = f"or {_as_rendered(limit, shared)} {_as_rendered(request, shared)}"
        set_when[merged[limit.resource]] = _or(
            *(grouped(and_all(_renders(d, shared), _set(d.count))) for d in (limit, request))
        )
        if not _renders(request, shared) and _resolved(limit.count, text, limit.index) == as_arg(request.count):
            merged[limit.resource] = request.count  # the limit, where it renders, counts what the request does
        keys[keys.index(limit)] = dataclasses.replace(limit, count=merged[limit.resource], conditions=shared)
        if (either := [_renders(limit, shared), _renders(request, shared)]) and all(either):
            renders.append(_or(*either))
    return keys, merged, renders, set_when


def _equal_check(twins: dict[int, Device], devices: list[Device], cond: tuple[str, ...], text: str = "") -> str:
    """Template text that fails the render when the DRA branch is on (`cond`), both keys render (their own
    conditions: `{{- if .Values.setRequests }}` around the request) and a request the claim leaves out differs from
    its limit (the claim asks for the limit's count; the device-plugin request was invalid). The message is plain
    template text: Helm prints it as it is, and the `if` before it names both values; it has no apostrophe,
    which the report's hiding of chart data would read as a quoted value."""
    out = []
    for index, limit in twins.items():
        request = next(d for d in devices if d.index == index)
        own = [c for c in dict.fromkeys([*limit.conditions, *request.conditions]) if c not in cond]  # both render
        if limit.count == request.count or _resolved(limit.count, text, limit.index) == as_arg(request.count):
            continue
        differ = f"(ne (int {as_arg(limit.count)}) (int {as_arg(request.count)}))"
        device = f"the {limit.resource} request" if not limit.name else f"the request of the device {limit.name_key}"
        out.append("\n".join(fail_when(and_all(*cond, *own, differ), f"{device} {UNEQUAL_REQUEST}")) + "\n")
    return "".join(out)


_SWITCH = re.compile(r"and \$?\.Values\.dra\.enabled\b")


def _switch_uses(text: str) -> list[tuple[int, int, list[str], list[str]]]:
    """Each condition of the DRA switch in the template's actions (`if and .Values.dra.enabled ...`, or such an `and`
    in parentheses): its span, its top-level terms, and those terms read from the root (`$.Values`)."""
    uses = []
    for start, end, word in _actions(text):
        for m in _SWITCH.finditer(text, start, end):
            at = m.start()
            if text[at - 1] == "(":
                depth, stop = 0, at - 1
                for stop in range(at - 1, end):
                    depth += {"(": 1, ")": -1}.get(text[stop], 0)
                    if depth == 0:
                        break
            elif word == "if" and re.fullmatch(r"\{\{-?\s*if ", text[start:at]):
                stop = start + len(re.sub(r"\s*-?\}\}$", "", text[start:end]))
            else:
                continue
            terms = _terms(text[at:stop])
            uses.append((at, stop, terms, [from_root(t) for t in terms]))
    return uses


# an action of a workload's name that reads the `range` item as `.`: a field (`{{ .name }}`) or the item itself
# (`{{ . }}`, `{{ . | lower }}`, a list of test names), with the separator before it
_ITEM_NAME_READ = re.compile(r"[-_.]?\{\{-?[^{}]*?(?<![\w$)\]])\.(?:(?!Values\b)[A-Za-z_]|(?=[\s|)]))[^{}]*?-?\}\}")
_NOT_ROOTED = re.compile(r"\$(?!\.)|(?<![\w$)\]])\.(?!Values\b)[A-Za-z_]")  # a template variable, or `.` not `.Values`


def _one_variable(text: str) -> str:
    """The template with the DRA switch's conditions sharing one variable where they share a long start (three
    terms or more: comfyui's `and .Values.dra.enabled .Values.gpu.enabled (or (eq ...) (eq ...))`, written four
    times), defined once where every use sees it: `{{- $dra := ... }}`, then `if $dra`, `if and $dra (gt ...)`."""
    uses = _switch_uses(text)
    common = _shared_start([u[3] for u in uses])
    if len(uses) < 2 or len(common) < 4:
        return text
    spans = []
    for start, stop, terms, _ in uses:
        rest = terms[len(common) :]
        wrapped = text[start - 1] == "(" and not rest  # `(and .Values.dra.enabled ...)` whole: `$dra`
        spans.append((start - wrapped, stop + wrapped, " ".join(["and", "$dra", *rest]) if rest else "$dra"))
    return define_once(text, spans, "$dra", " ".join(common))


def define_once(text: str, spans: list[tuple[int, int, str]], name: str, value: str) -> str:
    """`text` with each span (start, stop, its new text) replaced and `{{- <name> := <value> }}` defined once before
    the first, where every span sees it (`value` reads the root as `$.Values`; `.Values` where `.` is the root).
    `text` as it is when the name is taken, `value` reads a template variable or `.` (the place of the definition may
    read them otherwise), a span sits in a `define` the others are not in, or no line can take the definition."""
    if re.search(re.escape(name) + r"\b", text) or _NOT_ROOTED.search(value):
        return text
    spans = sorted(spans)
    stacks = [_open_blocks(text, start) for start, _, _ in spans]
    prefix = len(_shared_start(stacks))
    if any(word in ("define", "block") for stack in stacks for _, word in stack[prefix:]):
        return text  # a use inside a helper's body: a variable outside it is not seen there
    lines = text.splitlines(keepends=True)
    at = stacks[0][prefix][0] if len(stacks[0]) > prefix else spans[0][0]
    line = bisect.bisect_right(list(itertools.accumulate(map(len, lines))), at)
    if line == 0:
        return text
    if not any(word in ("with", "range") for _, word in stacks[0][:prefix]):
        value = re.sub(r"\$\.Values\b", ".Values", value)
    out = text
    for start, stop, new in sorted(spans, reverse=True):
        out = out[:start] + new + out[stop:]
    ind = re.match(r"[ \t]*", lines[line]).group(0)  # type: ignore[union-attr]
    head = sum(map(len, lines[:line]))
    define = f"{{{{- {name} := {value} }}}}"
    if lines[line - 1].strip() and not lines[line - 1].endswith((" \n", "\t\n")):
        return out[:head] + f"{ind}{define}\n" + out[head:]  # its `{{-` trims the line end it stands for
    if lines[line].startswith(f"{ind}{{{{-"):  # a blank line or trailing spaces before: beside the trimming action
        return out[: head + len(ind)] + define + out[head + len(ind) :]
    return text


def _shared_start(lists: Sequence[Sequence[Any]]) -> list[Any]:
    """The items every list starts with."""
    same = itertools.takewhile(lambda items: len(set(items)) == 1, zip(*lists, strict=False))
    return [items[0] for items in same]


def _open_blocks(text: str, offset: int) -> list[tuple[int, str]]:
    """The blocks open at `offset`, outermost first: each one's opening offset and word."""
    stack: list[tuple[int, str]] = []
    for start, _end, word in _actions(text):
        if start >= offset:
            break
        if word in ("if", "with", "range", "define", "block"):
            stack.append((start, word))
        elif word == "end" and stack:
            stack.pop()
    return stack


def _pod_edits(
    chart: str,
    suffix: str,
    w: Workload,
    guards: tuple[str, ...],
    label: str,
    carried: list[str],
    joint: _Joint | None = None,
) -> tuple[list[Edit], str, list[str]]:
    """The edits for one pod of a template and its claim-template section; the section sets the template variables its
    guard reads (returned too), but not those an earlier section of the template (`carried`) set the same way already
    (triton's leader and workers: `$pod_count` and what it reads, once). `joint`: the section serves the other pods of
    its `range` too."""
    lines = w.text.splitlines()
    guards = (*guards, *w.guards)
    if w.named:  # pattern E: the leaves that differ by resource name read the lookup (and the name)
        delta = dataclasses.replace(
            w.delta,
            spec=_sentinels(w.delta.spec, w.named.spec),
            tolerations=_sentinels(w.delta.tolerations, w.named.tolerations),
        )
        w = dataclasses.replace(w, delta=delta)
        guards = (*guards, migrated_guard(chart, w.named.expr))
    spec_define = f"{chart}{suffix}.draClaimSpec"
    name_define = f"{chart}{suffix}.draClaimTemplateName"
    conditions = w.devices[0].conditions
    groups = _containers(w)
    steps = _per_step(w)
    if steps and groups is not None:
        raise RewriteError(f"{w.rel}: the containers of a `range` and others ask for the device in one pod")
    counts: dict[str, str] = {}  # device resource -> its count expression, in the template's order
    picks: dict[str, str] = {}  # a vendor choice: each branch's device resource -> the condition of its branch
    twins = _request_twins(lines, w.devices) if groups is None else {}
    branch_counts: dict[str, str] = {}  # a vendor choice: each branch's device resource -> its count
    if w.choices:
        first = w.devices[0]
        conditions = first.conditions[: len(first.conditions) - len(first.branch_conditions)]
        branch_counts = _branch_counts(w, twins, lines)
        counts[first.resource] = branch_counts[first.resource]
        for d in w.devices:
            own = and_all(*d.branch_conditions) or "true"
            picks.setdefault(d.resource, f"({own})" if own.startswith("and ") else own)
    # keys of one resource in branches of which one renders at most (ddl, distributed or single mode): one count
    chosen = {} if w.choices or groups is not None else chosen_counts([d for d in w.devices if d.index not in twins])
    if any(d.resource in chosen for d in twins.values()):
        chosen = {}
    for d in w.devices if not w.choices else []:
        if d.index in twins:
            continue  # a request that must equal its limit: the limit is the count, the claim template checks it
        if d.resource in chosen:
            counts.setdefault(d.resource, chosen[d.resource].count)
            continue
        if groups is not None:  # each container its own count: the same count on each of its keys
            own = next(g for g in groups if d in g)
            if d.count != own[0].count:
                raise RewriteError(
                    f"{w.rel}:{d.index + 1}: {d.resource} is asked for with two counts in one container "
                    f"({own[0].count} and {d.count})"
                )
            counts.setdefault(d.resource, d.count)
        elif counts.setdefault(d.resource, d.count) != d.count:
            first = next(e for e in w.devices if e.resource == d.resource and e.index not in twins)
            where = (
                "one container"
                if parent_line(lines, section_line(lines, first)) == parent_line(lines, section_line(lines, d))
                else "two of its containers"
            )
            raise RewriteError(
                f"{w.rel}:{d.index + 1}: {d.resource} is asked for with two counts in one pod "
                f"({counts[d.resource]} and {d.count}: {where}); the idiomatic rewrite takes one count "
                "per device resource in a pod"
            )
    keys, merged, twin_renders, set_when = _twin_keys(w.devices, twins, w.text)
    keys = as_one(keys, chosen)
    set_when |= {one.count: one.is_set for one in chosen.values()}  # the count of the key that renders, if any
    if w.choices and merged:
        why = "a branch of the device choice writes its request and limit under other conditions"
        raise RewriteError(f"{w.rel}: {why}")
    counts.update(merged)
    union, own_counts = (conditions, []) if w.choices else _either(keys)  # a choice: the picks, below
    own_conds: list[list[str]] = []  # several containers with their own counts: each one's own conditions
    if groups is not None and len({g[0].count for g in groups}) > 1:
        common = [c for c in w.devices[0].conditions if all(c in d.conditions for d in w.devices)]
        own_conds = [[c for c in g[0].conditions if c not in common] for g in groups]
        # each container's request gated by its count and its own conditions (a judge `if .Values.judge.enabled`)
        alike = all(d.conditions == g[0].conditions for g in groups for d in g)
        union = common if alike else None
    if union is None:
        d = next(d for d in w.devices if d.conditions != conditions)
        raise RewriteError(
            f"{w.rel}:{d.index + 1}: the device keys sit under different conditions "
            f"({' '.join(conditions) or 'none'} and {' '.join(d.conditions) or 'none'})"
        )
    conditions = union
    # several containers with one count where the migration's claim has one request: they share it (an init
    # container pulling models on the GPU before the server, ollama charts), each container naming that request
    shared = groups is not None and len({g[0].count for g in groups}) == 1 and len(_requests(w.delta.spec)) == 1
    gates = {res: f"(gt (int {as_arg(c)}) 0)" for res, c in counts.items()}
    gate = next(iter(gates.values())) if len(gates) == 1 else f"(or {' '.join(gates.values())})"
    own_gates = [
        grouped(and_all(*own, f"(gt (int {as_arg(g[0].count)}) 0)"))
        for g, own in zip(groups or [], own_conds or [[]] * len(groups or []), strict=True)
    ]
    gated = list(counts.values())
    if len(set(branch_counts.values())) > 1:  # each branch of the choice its own count: the picked branch's
        gated = list(branch_counts.values())
        gate = _or(*(f"(and {grouped(picks[r])} (gt (int {as_arg(c)}) 0))" for r, c in branch_counts.items()))
    if groups is not None and len(set(own_gates)) > 1:
        gate, gated = f"(or {' '.join(dict.fromkeys(own_gates))})", [g[0].count for g in groups]
    if any(re.fullmatch(r"[1-9][0-9]*", c) for c in gated) and not any(own_conds):
        gate = ""  # a literal count (triton's `nvidia.com/gpu: 1`): the claim always renders with the pod
    on = and_all(".Values.dra.enabled", *guards)  # guards: values that render a kind the migration leaves as is
    # inside `with .Values.x` the key's own line reads the switch from the root, `$`
    on_at = {d.index: from_root(on) if d.scoped else on for d in w.devices}
    # the branches' conditions, unless one of them is the chain's `else` (then one branch always renders)
    whole = any(_plain_else(d) and len(d.branch_conditions) == len(picks) - 1 for d in w.devices)
    picked = [_or(*picks.values())] if picks and not whole else []
    in_pod = conditions  # what the pod reads: inside `range`, not that the range has items
    loop, first = (
        w.devices[0].loop,
        parent_line(lines, _containers_line(lines, _resources_line(lines, w.devices[0], w.rel))),
    )
    if loop and loop.opened < sum(len(x) + 1 for x in lines[:first]):
        in_pod = [c for c in conditions if c not in loop.nonempty]
    claim_cond = and_all(".Values.dra.enabled", *guards, *in_pod, *picked, gate, w.over)
    common: list[str] = []  # a values map's device keys beside the chart's own (keyedmap.py): the pod's conditions,
    keyed_own = ""  # and where the chart's own key asks for a device; the claim is there or where the map holds one
    if w.keyed:
        res_at = parent_line(lines, section_line(lines, w.devices[0]))
        common, own_conds_of_key = keyedmap.split_conditions(w.text, w.rel, w.keyed, res_at, in_pod)
        keyed_own = and_all(*own_conds_of_key, *picked, gate)
        if keyed_own:
            holds = keyedmap.holds(chart, w.keyed.over, True)
            claim_cond = and_all(".Values.dra.enabled", *guards, *common, _or(grouped(keyed_own), holds), w.over)
    # keys under `if` their own count: the toleration comes with the counted key (the claim's count)
    counted = [c for c in dict.fromkeys(own_counts) if grouped(c) in {grouped(x) for x in counts.values()}]
    own_counted = bool(counted)  # the key renders only while its count is set (and above 0)
    counted += twin_renders  # a request and a limit each under its own conditions: while one of them renders
    # containers each under their own conditions: the toleration while one of them renders its key
    rendering = [_or(*(grouped(and_all(*own)) for own in own_conds))] if own_conds and all(own_conds) else []
    # a count set to null or "" renders the key with no count: no device, so no toleration either (0 keeps it)
    literal = any(re.fullmatch(r"[0-9]+", c) for c in gated)
    set_gate = "" if own_counted or literal else _or(*(set_when.get(c) or _set(c) for c in dict.fromkeys(gated)))
    if len(set(branch_counts.values())) > 1 and not literal:  # each branch of the choice its own count
        set_gate = _or(*(f"(and {grouped(picks[r])} {_set(c)})" for r, c in branch_counts.items()))
    tol_cond = and_all(".Values.dra.enabled", *guards, *in_pod, *counted, *rendering, set_gate)
    keyed_tol = and_all(*in_pod[len(common) :], *counted, *rendering, set_gate) if w.keyed else ""
    if keyed_tol and w.keyed:  # the chart's own key's toleration, or the map's
        holds = keyedmap.holds(chart, w.keyed.over, False)
        tol_cond = and_all(".Values.dra.enabled", *guards, *common, _or(grouped(keyed_tol), holds))
    edits: list[Edit] = []
    maps: dict[int, list[Device]] = {}
    for d in w.devices:
        _resources_line(lines, d, w.rel)  # under limits/requests
        # a claim of one of a pod's two device kinds: its place only, the claim of both switches the keys off
        maps.setdefault(section_line(lines, d), []).extend([] if w.part else [d])
    resources_lines = {parent_line(lines, m) for m in maps}
    if groups is not None:
        res_lines = [parent_line(lines, section_line(lines, g[0])) for g in groups]
    elif min(resources_lines) < 0 or len({parent_line(lines, r) for r in resources_lines}) != 1:
        raise RewriteError(f"{w.rel}: the device keys are in several containers")
    elif len(resources_lines) > 1 and not w.choices:
        raise RewriteError(f"{w.rel}: the device keys are in several `resources:` blocks of one container")
    else:  # a vendor choice may write the container's whole `resources:` block in each branch (jellyfin, immich)
        res_lines = sorted(resources_lines)
    for res in res_lines:
        if item_key(lines[res]) != "resources:":
            why = "the container's resources are templated"
            raise NotIdiomatic(Pattern("F", res + 1, lines[res].strip()), w.rel, why)
    res = res_lines[0]
    whole: list[tuple[int, int, str]] = []  # maps of device keys only: one `if` around adjacent ones (requests, limits)
    for m, devices in maps.items():
        end = block_end(lines, m)
        children = [i for i in range(m + 1, end) if not is_control(lines[i]) or emits_text(lines[i])]
        if set(children) == {d.index for d in devices}:
            whole.append((m, _closed(lines, m, end), f"if not {as_arg(on_at[devices[0].index])}"))
        else:
            runs: list[list[int]] = []  # adjacent device keys share one `if`
            for index in sorted(d.index for d in devices):
                if runs and index == runs[-1][-1] + 1:
                    runs[-1].append(index)
                else:
                    runs.append([index])
            for run in runs:
                if not _joined(edits, lines, run[0], run[-1] + 1, f"(not {as_arg(on_at[run[0]])})"):
                    _wrap(edits, lines, run[0], run[-1] + 1, f"if not {as_arg(on_at[run[0]])}")
            named = [as_arg(from_root(d.name) if d.scoped else d.name) for d in devices if d.name]
            for i in children if named else ():
                # a `with .Values.resources.limits` around the sibling map's `toYaml .` rebinds the dot there
                rebound = _scopes(w.text, i) > _scopes(w.text, devices[0].index)
                on_i = on_at[devices[0].index]
                at_i = (named, on_i) if not rebound else ([whole_root(n) for n in named], whole_root(on_i))
                edits += [e] if (e := _without_names(lines, i, *at_i)) else []
    for start, stop, cond in _adjacent(sorted(whole), lines):
        _wrap(edits, lines, start, stop, cond)
    for i in w.keyed.lines if w.keyed else ():  # a device of the map stays unless the claim asks for it
        _wrap(edits, lines, i, i + 1, keyedmap.key_guard(chart, on, lines[i].split("}}")[0].strip("{- ")))
    if any(delta.claim != w.delta.claim for delta, _ in w.choices.values()):
        raise RewriteError(f"{w.rel}: the migration names the claim differently in the branches of the device choice")
    # the pod's claims go before its `containers:` list: an `initContainers:` list may sit inside its own `if`
    lists = [_containers_line(lines, at) for at in res_lines]
    containers = next((i for i in lists if i >= 0 and is_key(lines[i], "containers")), lists[0])
    if containers < 0:
        raise RewriteError(f"{w.rel}: no `containers:` line above the device key")
    pod = parent_line(lines, containers)
    if any(parent_line(lines, _containers_line(lines, at)) != pod for at in res_lines):
        raise RewriteError(f"{w.rel}: the device keys are in containers of several pods")
    p = " " * line_indent(lines[containers])
    pod_end = block_end(lines, pod) if pod >= 0 else len(lines)
    pod_claims = _pod_key_lines(lines, pod, pod_end, p, "resourceClaims")
    claim_define = f"{chart}{suffix}.draClaimName"
    claim = w.delta.claim if len(counts) == 1 else f'{{{{ include "{claim_define}" . }}}}'
    claim_of = ""  # pattern E with claims named after the device (_lookup): the define that looks the name up
    if w.named and w.named.claims and len(counts) == 1:
        claim_of = f"{chart}{suffix}.draClaimOf"
        named = from_root(w.named.expr) if _inside_with(w.text, containers) else w.named.expr
        claim = f'{{{{ include "{claim_of}" {as_arg(named)} }}}}'
    listed = _values_list(lines, pod_claims[0]) if pod_claims and len(counts) == 1 else None
    if listed:  # the pod's own claims from values: the claim takes a name they leave free, as the migration does
        base = re.sub(r"-[0-9]+$", "", claim) or claim
        claim = f'{{{{ include "{free_claim_define(chart)}" (list {json.dumps(base)} {from_root(listed)}) }}}}'
    names: list[str] = []
    several = ""  # several containers ask for the device: each names its own request of the claim
    if groups is None:
        for res in res_lines:  # one, or one per branch of the vendor choice: the container's claims in each
            ind = " " * child_indent(lines, res)
            cond = from_root(claim_cond) if _inside_with(w.text, res) else claim_cond
            own_claims = [f"{ind}{{{{- if {cond} }}}}", f"{ind}claims:", f"{ind}  - name: {claim}"]
            if steps:  # several steps: each container names its own request, as the migration does
                request = f"{{{{ {_request_name(_container_name(lines, res, w.rel), w.base)} }}}}"
                own_claims += [f"{ind}    {{{{- if gt (int {from_root(steps)}) 1 }}}}", f"{ind}    request: {request}"]
                own_claims.append(f"{ind}    {{{{- end }}}}")
            edits.append(_container_claims(lines, res, ind, cond, own_claims, w.rel))
    else:
        names = [str(r["name"]) for r in _requests(w.delta.spec)]
        if shared:  # an init container and the main one, one count: the migration gives them one request
            names = names * len(groups)
        if len(names) != len(groups) or not w.base:
            own = [c for g in groups for c in g[0].conditions if c not in conditions]
            on = f" and its own condition true ({', '.join(dict.fromkeys(own))})" if own else ""
            raise RewriteError(
                f"{w.rel}: {len(groups)} containers of one pod ask for {w.devices[0].resource}, the migration's claim "
                f"has {len(names)} request(s): set each container's count above 0 in the values{on}"
            )
        if len(set(own_gates)) > 1:
            pairs = [(a, b) for k, a in enumerate(own_gates) for b in own_gates[k + 1 :]]
            several = _or(*(f"(and {a} {b})" for a, b in pairs))
        alone = [c for g in groups for c in g[0].conditions if c not in conditions]
        if shared and alone:  # the request is named only while every container renders (as the migration does)
            several = and_all(*dict.fromkeys(alone))
        for at, own_gate, request in zip(res_lines, own_gates, names, strict=True):
            ind = " " * child_indent(lines, at)
            entry = [f"{ind}    request: {request}"]
            if several:
                entry = [f"{ind}    {{{{- if {several} }}}}", *entry, f"{ind}    {{{{- end }}}}"]
            cond = and_all(".Values.dra.enabled", *guards, *conditions, own_gate)
            cond = from_root(cond) if _inside_with(w.text, at) else cond
            own_claims = [f"{ind}{{{{- if {cond} }}}}", f"{ind}claims:", f"{ind}  - name: {claim}", *entry]
            edits.append(_container_claims(lines, at, ind, cond, own_claims, w.rel))
    if _inside_with(w.text, containers):  # the pod inside `range` (or `with`): `.` is not the root there
        claim_cond, tol_cond = from_root(claim_cond), from_root(tol_cond)
    root = "$" if _inside_with(w.text, containers) else "."
    item_name = _item_name(w, lines, pod) if w.devices[0].per_item else None
    item_reads = " ".join(
        [*counts.values(), *(d.count for d in twins.values()), from_root(w.named.expr) if w.named else ""]
    )
    per_item = _Item.of(w, item_name, item_reads) if w.devices[0].per_item else None
    if per_item is not None and (picks or steps or groups is not None or len(counts) > 1):
        shape = (
            "a choice of device resources"
            if picks
            else "one container per step"
            if steps
            else "several containers asking for the device"
            if groups is not None
            else "several device resources"
        )
        raise RewriteError(
            f"{w.rel}:{w.devices[0].index + 1}: a count per `range` item takes one device resource in one container "
            f"per pod, and this pod has {shape}: write the claim by hand (docs/helm.md#counts-per-range-item)"
        )
    pod_lines = [
        f"{p}{{{{- if {claim_cond} }}}}",
        f"{p}resourceClaims:",
        f"{p}  - name: {claim}",
        f"{p}    resourceClaimTemplateName: {{{{ {root.rstrip('.')}.Values.dra.existingClaimTemplate"
        f' | default (include "{name_define}" {per_item.args() if per_item else root}) }}}}'
        if not w.part  # the claim of one of two device kinds (a GPU, EFA interfaces): the chart's own template
        else f'{p}    resourceClaimTemplateName: {{{{ include "{name_define}" {root} }}}}',
        f"{p}{{{{- end }}}}",
    ]
    tolerations = w.delta.tolerations
    tol_text = [f"{p}  {t}" for t in _dump_list(tolerations)] if tolerations else []
    sets = {res: set_when.get(c) or _set(c) for res, c in counts.items()}
    if not picks and set_gate and len(set(sets.values())) > 1:  # devices of their own counts: each its toleration
        tol_text = [line for t in tolerations for line in _own_toleration(t, sets, p)]
    elif not picks and literal and not own_counted and len(counts) > 1:  # a literal count beside one from values
        sets = {res: gate for res, gate in sets.items() if not re.fullmatch(r"[0-9]+", counts[res])}
        tol_text = [line for t in tolerations for line in _own_toleration(t, sets, p)]
    if pod_claims:  # the pod renders `resourceClaims:` itself (the chart's list, a pass-through's): the claim joins it
        edits.append(_merge_tolerations(lines, pod_claims[0], p, claim_cond, pod_lines[2:-1], w.rel))
        pod_lines = []
    existing = last_written_first(lines, _pod_key_lines(lines, pod, pod_end, p, "tolerations"))
    if picks:  # each branch of the choice its own tolerations (the device plugin's taint key differs per vendor)
        tol_cond = and_all(".Values.dra.enabled", *guards, *in_pod, *picked, set_gate)
        deltas = {res: w.choices[res][0] if res in w.choices else w.delta for res in picks}
        # a branch whose taint the values list tolerates (thorix' README values for amd): the migration adds its
        # toleration where that list does not
        branch_tols = {res: d.tolerations or d.covered for res, d in deltas.items()}
        given = given_tolerations(lines, existing[0]) if existing else None
        if len({json.dumps(t, sort_keys=True) for t in branch_tols.values()}) > 1 or any(
            d.covered and not d.tolerations for d in deltas.values()
        ):
            tolerations = [t for own in branch_tols.values() for t in own]
            tol_text = _vendor_tolerations(branch_tols, picks, given, w.text, p)
            for res, own in branch_tols.items() if not tol_text else {}:
                entries = [f"{p}  {t}" for t in _dump_list(own)]
                if entries and given and re.fullmatch(r"[\w.$]+", given) and len(own) == 1:
                    check = [f"{p}  {c}" for c in tolerated_check(given, str(own[0].get("key", "")))]
                    entries = [*check, f"{p}  {{{{- if not {TOLERATED} }}}}", *entries, f"{p}  {{{{- end }}}}"]
                if entries:
                    tol_text += [f"{p}  {{{{- if {unparenthesized(picks[res])} }}}}", *entries, f"{p}  {{{{- end }}}}"]
    if w.named:
        tol_text = [_looked_up(t, from_root(w.named.expr) if root == "$" else w.named.expr) for t in tol_text]
    # the pod tolerates the taint itself with the values the rewrite is read from; with other values it may not
    covered = bool(not tolerations and existing and not picks and len(w.delta.covered) == 1)
    if covered:
        tolerations, tol_text = w.delta.covered, [f"{p}  {t}" for t in _dump_list(w.delta.covered)]
    key, key_expr = "", ""  # the taint's key (or its expression), where a values list may tolerate it already
    if (
        tolerations
        and existing
        and len(tolerations) == 1
        and tol_text == [f"{p}  {t}" for t in _dump_list(tolerations)]
    ):
        key = str(tolerations[0].get("key", ""))
    keys: tuple[str, ...] = ()  # several taints (a GPU's and an EFA NIC's): each entry checked for its own
    if tolerations and existing and len(tolerations) > 1 and not (picks or covered or w.named):
        keys = tuple(str(t.get("key", "")) for t in tolerations if t.get("key"))
    checked = ""  # the looked-up name (a values key) the values list is checked for, as a literal key is
    if covered and w.named:  # the name looked up (a values key, read from the root inside the list's `range`)
        key, key_expr = "", as_arg(from_root(w.named.expr))
        tol_text = [f"{p}  - key: {{{{ {key_expr} }}}}", f"{p}    operator: Exists", f"{p}    effect: NoSchedule"]
    elif w.named and not picks and existing and len(tolerations) == 1 and w.named.tolerations.get((0, "key")) == NAME:
        checked = as_arg(from_root(w.named.expr))
    if w.keyed:  # the chart's own key's toleration where it renders, then one for each device of the map
        if not tolerations or picks:
            raise RewriteError(f"{w.rel}: the migration adds no toleration of its own for the chart's device key")
        own_tol = [f"{p}  {{{{- if {keyed_tol} }}}}", *tol_text, f"{p}  {{{{- end }}}}"] if keyed_tol else tol_text
        tol_text, key = own_tol + keyedmap.tolerations(chart, w.keyed, f"{p}  "), ""
        # each entry rendered only where the user's list does not tolerate its taint (the map's: `$draKey`)
        keys = (*(str(t["key"]) for t in tolerations if t.get("key")), DRA_KEY)
    # a helper the pod includes writes its tolerations (`include "x.podDefaults" . | nindent 6`): the toleration joins
    # that list in the call's DRA branch, not a second `tolerations:` key (calltolerations.py)
    calls = tolerations_calls(lines, pod, pod_end, len(p), w.helpers) if tolerations and not existing else []
    if calls and (picks or w.named or w.keyed or tol_text != [f"{p}  {t}" for t in _dump_list(tolerations)]):
        raise RewriteError(
            f"{w.rel}:{calls[0] + 1}: the helper this line includes writes the pod's tolerations, and the DRA "
            "tolerations of this pod are not one plain list to join to it"
        )
    if tolerations and existing:
        merge = (lines, existing[0], p, tol_cond, tol_text, w.rel, key, covered, key_expr, checked)
        if merged := _merge_tolerations(*merge, enclosed=True, keys=keys):
            edits.append(merged)
    elif calls:
        edits += [joined_call(lines, at, tol_cond, tolerations) for at in calls]
    elif tolerations and tol_cond == claim_cond and pod_lines:  # a literal count: claim and toleration, one `if`
        pod_lines[-1:-1] = [f"{p}tolerations:", *tol_text]
    elif tolerations:
        pod_lines += [f"{p}{{{{- if {tol_cond} }}}}", f"{p}tolerations:", *tol_text, f"{p}{{{{- end }}}}"]
    at = _after_steps(lines, w.text, w.devices[0], containers, w.rel) if steps else containers
    if pod_lines:
        edits.append(Edit(at, at, pod_lines))
    if w.delta.params:  # KubeRay reads num-gpus from the limits the claim replaces: the migration sets it in the group
        from dramigrate.helm.helper import _ray_params

        if len(counts) != 1 or len(set(branch_counts.values())) > 1:
            raise RewriteError(f"{w.rel}: a Ray group asks for several device resources")
        edits.append(Edit(*_ray_params(lines, pod, w.delta.params, claim_cond, as_arg(*counts.values()), w.rel)))
    used = f"{claim_cond} {tol_cond} {' '.join(counts.values()) if w.delta.params else ''}"
    if per_item is not None and (replay_edit := _set_first(w, lines, pod, used, above=bool(w.delta.params))):
        edits.append(replay_edit)
    label_exprs, kept_exprs = _label_edits(edits, lines, pod, w, claim_cond, picks), _kept_label_exprs(lines, pod, w)
    name_expr = item_name or _metadata_line(lines, "name", pod)
    if name_expr and root == "$" and per_item is None:  # `{{ include "x.fullname" $ }}-{{ .name }}`: one for all
        name_expr = re.sub(_ITEM_NAME_READ, "", name_expr)
        items = set(re.findall(r"\brange\s+(?:\$\w+\s*,\s*)?(\$\w+)\s*:=", w.text))  # `range $w :=`: `{{ $w.name }}`
        items |= {f"${v}" for v in loop.names} if (loop := w.devices[0].loop) else set()  # `{{ $rank }}`, `{{ $i }}`
        for item in sorted(items):
            name_expr = re.sub(r"[-_.]?\{\{-?[^{}]*?" + re.escape(item) + r"\b[^{}]*?-?\}\}", "", name_expr)
        if not name_expr:  # named by the item alone (`name: {{ $key }}`): the release and the template's file
            name_expr = "{{ .Release.Name }}-" + (
                re.sub(r"[^a-z0-9]+", "-", Path(w.rel).stem.lower()).strip("-") or "dra"
            )
    if not name_expr:
        raise RewriteError(f"{w.rel}: the workload's metadata.name is not one line")
    namespace = _metadata_line(lines, "namespace", pod) if w.delta.namespaced else None
    spec_counts = {name: counts[res] for name, res in w.requests.items()}
    # a pod's second device kind in a claim of its own keeps the migration's class; the first reads dra.deviceClassName
    primary = "" if w.keeps_class else _class_of(w.delta.spec, w.devices[0].resource, w.requests) or ""
    primary = "" if primary.startswith("@@DRA:") else primary  # pattern E: each name's own class (_looked_up)
    if per_item is not None:
        inner = _sentinel_yaml(w.delta.spec.get("spec", {}), spec_counts, primary)
        inner = _with_label_exprs(inner, label_exprs, kept_exprs)
        defines = (spec_define, name_define)
        if w.named:  # the lookup runs in the claim's spec: a name it does not know fails the render there
            inner = _lookup_lines(w.named) + _looked_up(inner, w.named.expr)
        equal = _equal_check(twins, w.devices, (".Values.dra.enabled", *guards, *conditions), w.text)
        section, top = _item_section(
            w, per_item, inner, (*guards, *conditions, gate), namespace, name_expr, defines, from_root(equal)
        )
        return edits, section + _claim_of_section(claim_of, w), top
    if picks:
        inner = _choice_spec(w, picks, branch_counts, primary)
    elif steps:
        inner = _steps_spec(w, steps, _container_name(lines, res, w.rel), counts[w.devices[0].resource], primary)
    elif groups is not None and not shared:
        inner = _containers_spec(w, names, [g[0].count for g in groups], own_gates, several, primary)
    elif len(counts) == 1:
        inner = _sentinel_yaml(w.delta.spec.get("spec", {}), spec_counts, primary)
    else:
        inner = _guarded_spec(w.delta.spec.get("spec", {}), spec_counts, primary, w.requests, gates)
    inner = _with_label_exprs(inner, label_exprs, kept_exprs)
    looked, reads = inner, inner
    if w.keyed:  # the chart's own request where its key asks for a device, then one for each device of the map
        looked, reads = keyedmap.spec(chart, inner, keyed_own, w.keyed), inner + f"{{{{ {keyed_own} }}}}"
    if w.named:  # the lookup runs in the claim's spec: a name it does not know fails the render there
        looked = _lookup_lines(w.named) + _looked_up(inner, w.named.expr)
        reads += f"{{{{ {w.named.expr} }}}}"  # a name held in a template variable is carried like the count
    conditions, replay = _replayed(w.devices[0], conditions, joint.pair if joint else ())
    if replay and twins:
        raise RewriteError(f"{w.rel}: a device request and limit read two counts inside `range`")
    # a choice with no `else`: a value no branch compares with renders no device, so no claim template either
    existing = "(not .Values.dra.existingClaimTemplate)" if not w.part else ""  # the claim of both kinds only
    guard = and_all(".Values.dra.enabled", *guards, existing, *conditions, *picked, gate, w.over)
    either = _or(grouped(keyed_own), keyedmap.holds(chart, w.keyed.over, True)) if w.keyed and keyed_own else ""
    if either:  # the chart's own key asks for a device, or the values map holds one
        guard = and_all(".Values.dra.enabled", *guards, existing, *common, either, w.over)
    # the template variables the count, its conditions and the name read, set again where the claim template reads them
    before = sum(len(x) + 1 for x in lines[: max(d.index for d in w.devices)])
    name_text = _name_text(name_expr)
    own_label = f"-{label}" if label and not name_text.endswith(label) else ""  # `-worker`: named already
    if joint and joint.labels:  # `{{ $.Release.Name }}-leader` and `...-worker`: `{{ $.Release.Name }}-leader-worker`
        for own in joint.labels:
            name_text = name_text.removesuffix(f"-{own}")
        own_label = "-" + "-".join(joint.labels)

    def defs(used: str, trim: bool) -> str:
        return _carrying(_definitions(w.text, w.rel, used, before), trim)

    check = _equal_check(twins, w.devices, (".Values.dra.enabled", *guards, *conditions), w.text)
    check += names_check(twins, w.devices, (".Values.dra.enabled", *guards, *conditions))
    # an older cluster fails the render only where the pod takes a claim (not with a count of 0, or no device)
    if not w.part:  # the claim of both device kinds checks for the claims of each too (its gate is either count's)
        asks = [*common, either] if either else [*conditions, *picked, gate]
        check += capabilities_check(and_all(".Values.dra.enabled", *guards, *asks), DRA_OFF)
    if w.limits:  # a device kind over the scheduler's 32 devices per claim: the migration refuses the pod too
        over = and_all(
            ".Values.dra.enabled", *guards, *conditions, _or(*(f"(gt (int {as_arg(c)}) 32)" for c in w.limits))
        )
        check += "\n".join(fail_when(over, OVER_LIMIT)) + "\n"
    top = _definitions(w.text, w.rel, f"{replay}{{{{ {guard} }}}}{namespace or ''}{check}", before)
    section = (
        _carrying(top[len(carried) :] if top[: len(carried)] == carried else top, False)
        + replay
        + check
        + f"{{{{- if {guard} }}}}\n"  # the guard as an action
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata:\n"
        f'  name: {{{{ include "{name_define}" . }}}}\n'
        + (f"  namespace: {namespace}\n" if namespace else "")
        + "spec:\n"
        "  spec:\n"
        f'    {{{{- include "{spec_define}" . | nindent 4 }}}}\n'
        "{{- end }}\n"
        f'{{{{- define "{spec_define}" -}}}}\n' + defs(reads, True) + looked + "{{- end }}\n"
        f'{{{{- define "{name_define}" -}}}}\n' + defs(name_text, True) + f"{name_text}{own_label}-"
        f'{{{{ include "{spec_define}" . | sha256sum | trunc 8 }}}}\n'
        "{{- end }}\n"
    )
    if len(counts) > 1:  # the claim is named after the requests it has: those whose count is above 0
        section += f'{{{{- define "{claim_define}" -}}}}\n' + defs(" ".join(gates.values()), True)
        section += "{{- $requests := list -}}\n"
        for name, res in w.requests.items():
            section += (
                f"{{{{- if {gates[res]} }}}}{{{{ $requests = append $requests {json.dumps(name)} }}}}{{{{ end -}}}}\n"
            )
        section += '{{- join "-" $requests -}}\n{{- end }}\n'
    return edits, section + _claim_of_section(claim_of, w), top


def _claim_of_section(define: str, w: Workload) -> str:
    """The claim template file's define that names the pod's claim after the device resource a values key names, as
    the migration does (`nvidia.com/gpu` -> `gpu`, a MIG profile -> `mig`); a name it does not know takes the claim
    of the rendered one (its claim template fails the render by name, unless dra.existingClaimTemplate is set)."""
    if not define or w.named is None:
        return ""
    names = " ".join(f"{json.dumps(res)} {json.dumps(claim)}" for res, claim in w.named.claims.items())
    return (
        f'{{{{- define "{define}" -}}}}\n'
        f"{{{{- index (dict {names}) (toString .) | default {json.dumps(w.delta.claim)} -}}}}\n"
        "{{- end }}\n"
    )


def free_claim_define(chart: str) -> str:
    """The helper that names the pod's DRA claim beside the pod's own claims from values (free_claim_section)."""
    return f"{chart}.draFreeClaim"


def free_claim_section(chart: str) -> str:
    """The claim template file's define of free_claim_define: given (list <base> <the pod's own claims>), the base
    name, or `<base>-2`, `-3`... when a claim of the pod's own takes it (as the migration names its claim)."""
    return (
        f'{{{{- define "{free_claim_define(chart)}" -}}}}\n'
        "{{- $base := index . 0 }}{{- $taken := list }}\n"
        '{{- range (index . 1) }}{{- if kindIs "map" . }}{{- $taken = append $taken (toString .name) }}{{- end }}'
        "{{- end }}\n"
        "{{- $name := $base }}\n"
        '{{- range $n := untilStep 2 1000 1 }}{{- if has $name $taken }}{{- $name = printf "%s-%d" $base $n }}'
        "{{- end }}{{- end }}\n"
        "{{- $name }}\n"
        "{{- end }}\n"
    )


def _values_list(lines: list[str], at: int) -> str | None:
    """The values list a pod's `resourceClaims:` key at line `at` renders whole and alone (`with X`, or `if X`, around
    the key and `toYaml`; or the key above `toYaml X`), when X is read from the chart's root (`.Values.x`, `$x`);
    else None."""
    prev = lines[at - 1].strip() if at > 0 else ""
    body = lines[at + 1].strip() if at + 1 < len(lines) else ""
    after = lines[at + 2].strip() if at + 2 < len(lines) else ""
    with_m, plain = _WITH.fullmatch(prev), _TOYAML.fullmatch(body)
    if with_m and _TOYAML_DOT.fullmatch(body) and _END.fullmatch(after):
        expr: str | None = with_m.group(1)
    else:
        expr = plain.group(1) if plain and plain.group(1) != "." else None
    root = r"(?:\$?\.Values|\$[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*"
    return expr if expr is not None and re.fullmatch(root, expr) else None


def _container_claims(lines: list[str], res: int, ind: str, cond: str, own: list[str], rel: str) -> Edit:
    """The edit giving the container whose `resources:` is at line `res` the claim lines `own` (`if`, `claims:`, the
    entry): right below `resources:`, or, where the container writes `claims:` itself (a literal list, or its values
    list with `with`/`toYaml`), the entry joins that list (a second `claims:` key is invalid)."""
    mine = _pod_key_lines(lines, res, block_end(lines, res), ind, "claims")
    if not mine:
        return Edit(res + 1, res + 1, [*own, f"{ind}{{{{- end }}}}"])
    merged = _merge_tolerations(lines, mine[0], ind, cond, own[2:], rel)
    if merged is None:  # (only for a toleration the pod has, `covered`)
        raise RewriteError(f"{rel}:{mine[0] + 1}: the container's claims have a shape the rewrite does not merge into")
    return merged


# a list item's first key, its value one action (`groupName: {{ $g.name }}`): the action's expression
_ITEM_KEY = re.compile(r"[\w.-]+:[ \t]*\{\{-?\s*([^{}]*?)\s*-?\}\}[ \t]*$", re.M)


def _read_from_root(text: str) -> str:
    """Template text written where `.` is the chart's root, as read inside a `range`: `.Release` -> `$.Release`,
    `include "x.fullname" .` -> `include "x.fullname" $`."""
    return re.sub(r"\{\{.*?\}\}", lambda m: _in_scope(m.group(0), "$"), text, flags=re.S)


def _item_name(w: Workload, lines: list[str], pod: int) -> str | None:
    """The name of the claim template of a pod whose count reads the `range` item: the workload's name, and where
    that is written above the range (a RayCluster's `workerGroupSpecs` ranged over, each group with its own count)
    and so reads the root only, followed by what names the item in the range's list: the value of the list item's
    first key (`- groupName: {{ .name }}`, as the migration names each group's claim template) when it reads the
    item, else the range's index (`range $i, $g := ...`). RewriteError when neither names the item: the items'
    claim templates would share one name."""
    name = _metadata_line(lines, "name", pod)
    tops = [i for i, line in enumerate(lines) if line.rstrip() == "metadata:"]
    at = ([i for i in tops if i < pod][-1:] or tops[:1] or [None])[0]
    loop = w.devices[0].loop
    if name is None or at is None or loop is None or loop.opened <= sum(len(x) + 1 for x in lines[:at]):
        return name
    first = _LIST_ITEM_NEXT.match(w.text, loop.opened)
    key = _ITEM_KEY.match(w.text, first.end()) if first else None
    index = re.match(r"range\s+(\$\w+)\s*,\s*\$\w+\s*:=", loop.headers[-1])
    named = key.group(1) if key and _reads_item(key.group(1), ITEM, loop) else index.group(1) if index else ""
    if named:
        return f"{_read_from_root(_name_text(name))}-{{{{ {named} }}}}"
    raise RewriteError(
        f"{w.rel}:{at + 1}: the device count reads each `range` item but the workload's name is written above "
        "the range, and the range's list items name no item (a first key read from the item, or an index "
        "variable), so the items' claim templates would share one name"
    )


@dataclass(frozen=True)
class _Item:
    """What the claim template's defines of a count per `range` item read, passed to them in one dict: the chart's
    root (`root`), the item as `.` (`item`) and the range's own variables (`$model` -> `model`)."""

    dot: bool
    variables: tuple[str, ...]
    roots: frozenset[str]  # the template's variables that hold the chart's root (`$root := .`)

    @classmethod
    def of(cls, w: Workload, name: str | None, counts: str = "") -> _Item:
        """The item reads of the pod's count and name (`vllm-{{ .modelName }}`), and of `counts`, what else the claim
        reads (a limit beside its request, a resource name from values); a name that reads no item would give every
        item's claim template one name, which RewriteError refuses."""
        loop = w.devices[0].loop
        assert loop is not None
        count = f"{w.devices[0].count} {counts}"
        named = " ".join(re.findall(r"\{\{.*?\}\}", name or "", re.S))
        roots = frozenset(re.findall(r"\{\{-?\s*\$(\w+)\s*:=\s*[.$]\s*-?\}\}", w.text))
        if not (_reads_item(named, ITEM, loop) if named else False):
            raise RewriteError(
                f"{w.rel}: the device count reads the `range` item but the workload's name does not, so the claim "
                "templates of the items would share one name"
            )
        reads = set(_VARIABLE.findall(f"{count} {named}"))
        dot = bool(_ITEM_DOT.search(_unquoted(f"{count} {named}")))
        variables = tuple(v for v in sorted(loop.per_item) if v in reads)
        if {"root", "item"} & set(variables):
            raise RewriteError(f"{w.rel}: the range's variable `$root` or `$item` is read per item")
        return cls(dot, variables, roots)

    def args(self) -> str:
        """The dict the pod and the claim template pass to the defines, where the range's `.` is the item."""
        pairs = ['"root" $', *(['"item" .'] if self.dot else []), *(f'"{v}" ${v}' for v in self.variables)]
        return f"(dict {' '.join(pairs)})"

    def read(self, text: str, rel: str) -> str:
        """Template text written where the range's `.` is the item, as the defines read it from the dict."""

        own = {
            v for a in re.findall(r"\{\{.*?\}\}", text, re.S) if ":=" in a for v in _VARIABLE.findall(a.split(":=")[0])
        }

        def action(m: re.Match[str]) -> str:
            parts = re.split(r'("(?:[^"\\]|\\.)*")', m.group(0))  # string literals stay as they are
            for k in range(0, len(parts), 2):
                part = _ITEM_DOT.sub(lambda d: ".item" + d.group(0).rstrip("."), parts[k]) if self.dot else parts[k]
                part = re.sub(r"\$\.", ".root.", part)
                part = re.sub(
                    r"\$(\w+)", lambda v: v.group(0) if v.group(1) in own else self._variable(v.group(1), rel), part
                )
                parts[k] = re.sub(r"\$(?![\w.])", ".root", part)
            return "".join(parts)

        return re.sub(r"\{\{.*?\}\}", action, text, flags=re.S)

    def _variable(self, name: str, rel: str) -> str:
        if name in self.variables:
            return f".{name}"
        if name in self.roots:
            return ".root"
        raise RewriteError(f"{rel}: the device count per `range` item or the workload's name reads `${name}`")


def _unquoted(expr: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def _item_section(
    w: Workload,
    item: _Item,
    inner: str,
    conditions: tuple[str, ...],
    namespace: str | None,
    name: str,
    defines: tuple[str, str],
    equal: str = "",
) -> tuple[str, list[str]]:
    """The claim template of a pod whose count reads the `range` item (grazdev's vLLM models, each with its own
    `gpuRequestCount`): the claim template file runs the same `range` and renders one ResourceClaimTemplate for each
    item whose conditions hold and whose count is above 0, named after the item as the pod is; returns the section and
    the template variables it sets first (the `$models` the range reads)."""
    loop = w.devices[0].loop
    assert loop is not None
    spec_define, name_define = defines
    header = f"{{{{- {loop.headers[0]} }}}}\n"
    args = item.args()
    used = f"{and_all(*conditions)} {args} {namespace or ''}"
    reopened = loop.openers[: max((depth for _, depth in _body_reads(loop, used)), default=0)]
    own = [c for c in conditions if c not in loop.nonempty and c not in {grouped(o[2:].strip()) for o in reopened}]
    guard = from_root(and_all(".Values.dra.enabled", "(not .Values.dra.existingClaimTemplate)", *own))
    before = sum(len(x) + 1 for x in w.text.splitlines()[: w.devices[0].index])
    body = _reopened(_body_reads(loop, f"{guard} {args} {namespace or ''} {' '.join(reopened)} {equal}"), reopened)
    check = capabilities_check(from_root(and_all(".Values.dra.enabled", *own)), DRA_OFF)  # where a pod takes a claim
    check += equal  # a request the claim leaves out, beside its limit: the render fails when they differ
    top = _definitions(w.text, w.rel, f"{header}{body}{{{{ {guard} }}}}{namespace or ''}{check}", before)
    section = (
        _carrying(top, False) + header + body + check + f"{{{{- if {guard} }}}}\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata:\n"
        f'  name: {{{{ include "{name_define}" {args} }}}}\n'
        + (f"  namespace: {namespace}\n" if namespace else "")
        + "spec:\n"
        "  spec:\n"
        f'    {{{{- include "{spec_define}" {args} | nindent 4 }}}}\n'
        + "{{- end }}\n" * (len(reopened) + 2)
        + f'{{{{- define "{spec_define}" -}}}}\n'
        + item.read(from_root(inner), w.rel)
        + "{{- end }}\n"
        f'{{{{- define "{name_define}" -}}}}\n' + item.read(_name_text(name), w.rel) + "-"
        f'{{{{ include "{spec_define}" . | sha256sum | trunc 8 }}}}\n'
        "{{- end }}\n"
    )
    return section, top


def _set_first(w: Workload, lines: list[str], pod: int, used: str, above: bool = False) -> Edit | None:
    """The assignments of the `range` body that the pod's claim and toleration (`used`) read where the template sets
    them only inside the pod, below its first line (deepgram's `$gpuRequest`, set in the container's `env:` and again
    by a per-type override): made once more at the top of the pod spec, as the claim template file makes them, and
    rendering nothing; `above`: at the top of the range's body instead, for what the rewrite writes above the pod
    too (a Ray group's `rayStartParams`). None when the pod reads none of them there."""
    loop = w.devices[0].loop
    if loop is None or pod < 0:
        return None
    top = w.text.count("\n", 0, loop.opened) + 1 if above else pod + 1
    start = sum(len(x) + 1 for x in lines[:top])
    key = sum(len(x) + 1 for x in lines[: w.devices[0].index])
    later = {
        m.group(1)
        for at, end, _ in _actions(w.text)
        if start <= at < key and (m := _ASSIGNMENT.match(action_body(w.text[at:end])))
    }
    wanted = set(_VARIABLE.findall(used)) & later
    if not wanted:
        return None
    reads = _body_reads(loop, " ".join(f"${v}" for v in sorted(wanted)))
    if any(depth for _, depth in reads):
        raise RewriteError(
            f"{w.rel}:{w.devices[0].index + 1}: the pod's claim reads `${sorted(wanted)[0]}`, which the `range` sets "
            "inside the pod and inside an `if` around the device key, so the pod's claims cannot read it above"
        )
    pad = " " * (line_indent(lines[top]) if above and top < len(lines) else child_indent(lines, pod))
    return Edit(top, top, [pad + line for line in _reopened(reads, ()).splitlines()])


def _body_reads(loop: Loop, used: str) -> list[tuple[str, int]]:
    """The assignments of the range's body that what `used` reads needs (`$gpus := $cfg.gpus | default 1`, and
    those it reads in turn), in template order, each with how many of the loop's `openers` it is inside: the claim
    template file makes them again inside its range."""
    wanted = set(_VARIABLE.findall(used))
    for name, body, _ in reversed(loop.body):
        if name in wanted:  # a block taken whole (_skeleton) reads what its conditions and assignments read
            wanted |= set(_VARIABLE.findall(body if body.startswith("{{") else body.split("=", 1)[1]))
    return list(dict.fromkeys((body, depth) for name, body, depth in loop.body if name in wanted))


def _reopened(reads: list[tuple[str, int]], openers: tuple[str, ...]) -> str:
    """The assignments `reads` as the claim template file makes them, inside the range's `if` blocks (`openers`) they
    are inside in the template, each opened before its first assignment (all of them, the guard inside them)."""
    out, opened = "", 0
    for body, depth in [*reads, ("", len(openers))]:
        out += "".join(f"{{{{- {o} }}}}\n" for o in openers[opened:depth])
        opened = max(opened, depth)
        out += (f"{body}\n" if body.startswith("{{") else _carrying([body], False)) if body else ""
    return out


_RANKS = "$draPods"


def _replayed(device: Device, conditions: list[str], pair: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """The pod's conditions as the claim template reads them, and what it sets first to read them. A pod inside `range`
    whose conditions read what the range sets per item (triton's leader `if eq $i 0`, its workers in the `else`) gets
    its claim template when the range renders it for some item: the claim template runs the same `range` blocks with
    those conditions and reads whether one item rendered the pod ($draPods). Else the conditions as they are. `pair`:
    a condition and its negation left out (_Joint: the claim template of the pods of both branches); with no other
    condition on the item left, the range renders one of them whenever it renders its body."""
    loop = device.loop
    outer = device.conditions[: loop.start] if loop else []
    inner = [c for c in conditions if c not in outer and c not in pair]
    conditions = [c for c in conditions if c not in pair]
    if loop is None or not any(set(_VARIABLE.findall(c)) & loop.names for c in inner):
        return conditions, ""
    per_item = {v for header in loop.headers for v in _VARIABLE.findall(header.split(":=", 1)[0])}
    unset = sorted({v for c in inner for v in _VARIABLE.findall(c)} & loop.names - per_item)
    if unset:
        line = device.index + 1
        raise RewriteError(
            f"the pod at line {line} renders under a condition that reads `${unset[0]}`, set inside the `range` for "
            "each item, so the claim template cannot tell whether the range renders the pod"
        )
    own = and_all(*(c for c in inner if c not in loop.nonempty))
    opened = "".join(f"{{{{- {header} }}}}" for header in loop.headers)
    body = f"{{{{- if {own} }}}}{{{{ {_RANKS} = true }}}}{{{{ end }}}}" if own else f"{{{{ {_RANKS} = true }}}}"
    replay = f"{{{{- {_RANKS} := false }}}}\n{opened}{body}{'{{- end }}' * len(loop.headers)}\n"
    return [*(c for c in conditions if c in outer), _RANKS], replay


_ASSIGNMENT = re.compile(r"^\$([A-Za-z_]\w*)\s*:?=")


def _definitions(text: str, rel: str, used: str, before: int) -> list[str]:
    """The assignments (action bodies, in template order) that set the template variables `used` reads, and those
    they read in turn: what the claim template must carry to read them too (gpu-recipes' `{{ $gpusPerNode := min
    .Values.job.gpus 8 }}` above the workload, then `nvidia.com/gpu: {{ $gpusPerNode }}`). Only assignments before
    offset `before` count. One set inside `with`/`if` blocks is carried inside the same blocks' openers (triton's
    `{{- with .tensor }}{{- $model_tp = (int .) }}{{- end }}`, three `with` deep), when it is in each block's first
    branch; one in an `else`, a `range` or a helper, or a variable not assigned at all (a `range $i, $c :=` item),
    raises RewriteError naming it."""
    actions = re.findall(r"\{\{.*?\}\}", used, re.S) if "{{" in used else [used]  # template text: its actions only
    declared = {v for a in actions if ":=" in a for v in _VARIABLE.findall(a.split(":=", 1)[0])}  # `used` sets them
    wanted = dict.fromkeys(v for a in actions for v in _VARIABLE.findall(a) if v not in declared)
    if not wanted:
        return []
    # variable -> (offset, body, the openers of the blocks it is in, why it cannot be carried or "")
    found: dict[str, list[tuple[int, str, tuple[str, ...], str]]] = {}
    # (word, body or "" for the template's own define, in an else, offset, `if not X` for a plain `else` of it or "")
    stack: list[tuple[str, str, bool, int, str]] = []
    scoped: list[tuple[str, int, set[int]]] = []  # a `:=` inside blocks: (variable, offset, the blocks' offsets)
    # a `:=` in plain `else` branches: (variable, offset) -> the blocks' openers (`if not X` for each `else`), offsets
    elsed: dict[tuple[str, int], tuple[tuple[str, ...], set[int]]] = {}
    acts: list[tuple[int, str, str]] = []  # every action: offset, word, body
    firsts: list[int] = []  # each open block's first action (its index in `acts`)
    # a block at the top level closed: its offset -> its _skeleton and the offset of its `end`
    whole_blocks: dict[int, tuple[str | None, int]] = {}
    for start, end, word in _actions(text):
        if start >= before:
            break
        body = action_body(text[start:end])
        acts.append((start, word, body))
        if word in ("if", "with", "range", "define", "block"):
            whole = word == "define" and _whole_template(text, body[len(word) :].strip())
            stack.append((word, "" if whole else body, False, start, ""))
            firsts.append(len(acts) - 1)
        elif word == "else" and stack:
            # a plain `else` of `if X`/`with X` renders where `if not X` would: what it sets, the claim template can
            # set under that opener when the block holds the device key too (Nebius' ray-cluster: `if .Values.x
            # .putspec` writes the user's spec, its `else` sets `$cfg` and writes the chart's RayCluster)
            w, b, in_else, at, _ = stack[-1]
            plain = body == "else" and w in ("if", "with") and b and not in_else
            stack[-1] = (w, b, True, at, f"if not {grouped(b.split(None, 1)[1])}" if plain else "")
        elif word == "end" and stack:
            first = firsts.pop()
            if stack.pop()[1] and not any(e[1] for e in stack) and acts[first][1] in ("if", "with"):
                whole_blocks[acts[first][0]] = (_skeleton(acts[first:]), start)
        elif m := _ASSIGNMENT.match(body):
            blocks = [(w, b, e) for w, b, e, _, _ in stack if b]
            bad = next((b + " ... else" * e for w, b, e in blocks if w not in ("with", "if") or e), "")
            if bad and all(w in ("with", "if") for w, _, _ in blocks):  # in an `else`: the block whole, once closed
                outer = next(at for _, b, _, at, _ in stack if b)
                bad = f"{_WHOLE}{outer}\0{bad}"
                negated = tuple(n if e else b for _, b, e, _, n in stack if b)
                if m.group(0).endswith(":=") and m.group(1) != "_" and all(negated):
                    elsed[(m.group(1), start)] = (negated, {at for _, b, _, at, _ in stack if b})
            if blocks and not bad and m.group(0).endswith(":=") and m.group(1) != "_":
                bad = blocks[-1][1]  # declared in the block, Go scopes it there: the claim template reads it outside
                scoped.append((m.group(1), start, {at for _, b, _, at, _ in stack if b}))
            found.setdefault(m.group(1), []).append((start, body, tuple(b for _, b, _ in blocks), bad))
    # a `:=` in blocks that hold the device key too (triton's Job: `$model_gpu := 1` inside `if not $skip_conversion`)
    # is read only where they render: the claim template declares it first, then sets it inside the same blocks
    opened = {e[3] for e in stack}
    for name, offset, blocks in scoped:
        if blocks <= opened:
            own = found[name]
            k = next(k for k, e in enumerate(own) if e[0] == offset)
            own[k] = (offset, own[k][1].replace(":=", "=", 1), own[k][2], "")
            own.insert(k, (min(blocks), f'${name} := ""', (), ""))
    for (name, offset), (negated, blocks) in elsed.items():
        if blocks <= opened:  # set under `if not X` for each `else` it is in, declared first: an empty map, which a
            own = found[name]  # `range` over it reads as no items where the template writes none (Nebius' `$groups`)
            k = next(k for k, e in enumerate(own) if e[0] == offset)
            own[k] = (offset, own[k][1].replace(":=", "=", 1), negated, "")
            own.insert(k, (min(blocks), f"${name} := dict", (), ""))
    # an assignment in an `else` of a block closed before: that block's _skeleton, for every assignment in it
    whole = {
        int(bad.removeprefix(_WHOLE).split("\0")[0])
        for own in found.values()
        for *_, bad in own
        if bad.startswith(_WHOLE)
    }
    spans = {at: (whole_blocks[at][0], whole_blocks[at][1]) for at in whole if whole_blocks.get(at, (None,))[0]}
    for own in found.values():
        for k, (offset, body, openers, bad) in enumerate(own):
            at = next((a for a, (_, stop) in spans.items() if a < offset < stop), None)
            if at is not None:
                own[k] = (at, str(spans[at][0]), (), "")
            elif bad.startswith(_WHOLE):
                own[k] = (offset, body, openers, bad.split("\0")[-1])
    queue = list(wanted)
    carried: list[tuple[int, str, tuple[str, ...], str]] = []  # `$_ := set $cfg "gpus" 8`: changes what `$cfg` reads
    line = text.count("\n", 0, before) + 1
    while queue:
        name = queue.pop()
        if name not in found:
            raise RewriteError(
                f"{rel}:{line}: the device request reads `${name}`, which is not assigned at the template's top level, "
                "so the claim template cannot read it"
            )
        changes = [e for e in found.get("_", []) if name in _VARIABLE.findall(_reads_of(e[1]))]
        carried += changes
        for offset, body, openers, bad in found[name] + changes:
            if bad:
                raise RewriteError(
                    f"{rel}:{text.count(chr(10), 0, offset) + 1}: the device request reads `${name}`, assigned inside "
                    f"`{{{{ {bad} }}}}`, so the claim template cannot set it the same way"
                )
            for other in _VARIABLE.findall(" ".join([_reads_of(body), *openers])):
                if other not in wanted:
                    wanted[other] = None
                    queue.append(other)
    entries = {(e[0], e[1], e[2]) for e in [*carried, *(e for name in wanted for e in found[name])]}
    return [
        part
        for _, body, openers in sorted(entries)
        for part in (_parts(body) if body.startswith("{{") else (*openers, body, *["end"] * len(openers)))
    ]


_WHOLE = "\0whole:"  # _definitions: an assignment carried by the _skeleton of the block it is in


def _reads_of(body: str) -> str:
    """What an assignment (or a block's _skeleton, all of it) reads."""
    return body if body.startswith("{{") else body.split("=", 1)[1]


def _parts(skeleton: str) -> list[str]:
    """A _skeleton's action bodies."""
    return [action_body(a) for a in re.findall(r"\{\{.*?\}\}", skeleton, re.S)]


def _carrying(defs: list[str], trim: bool) -> str:
    """Assignment lines that render nothing: trimmed on both sides inside a define (its output is unchanged). An
    assignment made inside `with`/`if` blocks (_definitions: their openers, it, their ends) is one line, as it reads:
    `{{- with .Values.model }}{{ with .tp }}{{ $tp = (int .) }}{{ end }}{{ end }}` (was a line per action, nine for
    triton's three `with` deep; no text between the actions, so the output is the same)."""
    lines, line, depth = [], "", 0
    for d in defs:
        line += f"{{{{ {d} }}}}"
        word = d.split(None, 1)[0] if d.strip() else ""
        depth += 1 if word in ("if", "with") else -1 if word == "end" else 0
        if depth <= 0:
            lines.append("{{-" + line[2:-2] + ("-}}" if trim else "}}"))
            line, depth = "", 0
    if line:  # an opener left open (not made by _definitions): as it was
        lines.append("{{-" + line[2:-2] + ("-}}" if trim else "}}"))
    return "".join(f"{x}\n" for x in lines)


def _guarded_spec(
    spec: dict[str, Any], counts: dict[str, str], device_class: str, requests: dict[str, str], gates: dict[str, str]
) -> str:
    """The claim spec of several device requests as template text: each request only when its count is above
    0, a constraint only when every request it names is there."""
    devices = dict(spec.get("devices", {}))
    out = ["devices:", "  requests:"]
    for req in devices.pop("requests", []):
        item = _sentinel_yaml({"devices": {"requests": [req]}}, counts, device_class).splitlines()[2:]
        out += [f"    {{{{- if {gates[requests[req['name']]]} }}}}", *item, "    {{- end }}"]
    constraints = devices.pop("constraints", [])
    if constraints:
        out.append("  {{- if " + and_all(*(gates[r] for r in requests.values())) + " }}")
        out += ["  constraints:", *(f"  {x}" for x in _dump_list(constraints))]
        out.append("  {{- end }}")
    for key, value in devices.items():
        out += [f"  {x}" for x in yaml.dump({key: value}, Dumper=BlockDumper, sort_keys=False).splitlines()]
    rest = {k: v for k, v in spec.items() if k != "devices"}
    if rest:
        out += yaml.dump(rest, Dumper=BlockDumper, sort_keys=False).splitlines()
    return "\n".join(out) + "\n"


_LABEL_VALUE = re.compile(r"^(\s*)([\w./-]+):\s*(.*?)\s*$")


def _label_edits(
    edits: list[Edit], lines: list[str], pod: int, w: Workload, on: str, picks: dict[str, str] | None = None
) -> dict[str, str]:
    """The pod's `nodeSelector` lines of the labels the migration moved into the claim's CEL selectors (a GPU
    product label the template writes itself) kept out of the DRA branch; returns, for each label written by an
    expression (`{{ include "getNodeSelector" . | quote }}`), its rendered value -> that expression, which the
    claim's selector then reads. A device affinity the migration drops goes the same way (unpin.blocks). In a vendor
    choice (`picks`: each branch's device resource -> its condition) each branch's labels count: a label only some
    branches move (dell's `nvidia.com/gpu.product` under `if regexMatch "nvidia"`) stays while another is picked."""
    deltas = {w.devices[0].resource: w.delta, **{res: d for res, (d, _) in w.choices.items()}}
    moved: dict[str, dict[str, str]] = {}  # label -> branch resource -> the value it moved
    for res, delta in deltas.items():
        for key, value in delta.labels.items():
            moved.setdefault(key, {})[res] = value

    def when(branches: Iterable[str], at: int = -1) -> str:  # the claim's condition (and the moving branches')
        own = [picks[res] for res in sorted(set(branches)) if picks and res in picks]
        if (
            not picks
            or not own
            or len(own) == len(picks)
            or (len(own) == 1 and unparenthesized(own[0]) in _ifs(w.text, at))
        ):
            return on  # each branch moves it, or the line is inside that branch's own `if` already
        return f"and {as_arg(on)} {_or(*own)}"

    def unless(start: int, stop: int, cond: str) -> None:  # where the claim comes (a zero count: the label stays)
        _wrap(edits, lines, start, stop, f"if not {as_arg(from_root(cond) if _inside_with(w.text, start) else cond)}")

    dropped: dict[tuple[str, ...], list[str]] = {}
    for res, delta in deltas.items():
        for path in delta.affinity:
            dropped.setdefault(path, []).append(res)
    for start, stop in unpin.blocks(lines, pod, list(dropped)):
        unless(start, stop, when(res for res_list in dropped.values() for res in res_list))
    if not moved:
        return {}
    pod_end = block_end(lines, pod) if pod >= 0 else len(lines)
    exprs: dict[str, str] = {}
    from_map = [key for key in moved if _label_line(lines, pod, pod_end, key) < 0]
    if from_map:  # labels of a values map the nodeSelector renders whole (omitlabels.py): left out of the DRA branch
        branches = [res for key in from_map for res in moved.pop(key)]
        if (at := omitlabels.map_line(lines, pod, pod_end)) < 0:
            raise RewriteError(
                f"{w.rel}: the node label {from_map[0]} the migration moves into the claim is not a nodeSelector line"
            )
        edits.append(omitlabels.map_edit(lines, at, from_map, when(branches, at)))
    for key, values in moved.items():
        at = _label_line(lines, pod, pod_end, key)
        if at < 0:
            raise RewriteError(
                f"{w.rel}: the node label {key} the migration moves into the claim is not a nodeSelector line"
            )
        written = _LABEL_VALUE.match(lines[at]).group(3)  # type: ignore[union-attr]
        action = _LABEL_ACTION.fullmatch(written)
        for value in values.values():
            if action:
                exprs[value] = action.group(1)
            elif written.strip("\"'") != value:
                raise RewriteError(f"{w.rel}:{at + 1}: the node label {key} is not written as one value")
        selector = parent_line(lines, at)
        children = [i for i in range(selector + 1, block_end(lines, selector)) if not is_control(lines[i])]
        start, stop = (
            (selector, _closed(lines, selector, block_end(lines, selector))) if children == [at] else (at, at + 1)
        )
        unless(start, stop, when(values, at))
    return exprs


_LABEL_ACTION = re.compile(r"\{\{-?\s*(.+?)(?:\s*\|\s*quote)?\s*-?\}\}")  # a label value an action writes


def _label_line(lines: list[str], pod: int, pod_end: int, key: str) -> int:
    """The pod's nodeSelector line of the label `key` (0-based), or -1."""
    return next(
        (
            i
            for i in range(pod + 1, pod_end)
            if (m := _LABEL_VALUE.match(lines[i]))
            and m.group(2) == key
            and lines[parent_line(lines, i)].strip() == "nodeSelector:"
        ),
        -1,
    )


def _kept_label_exprs(lines: list[str], pod: int, w: Workload) -> dict[str, str]:
    """For each node label the pod keeps whose value the claim's CEL selector holds (GKE's gke-tpu-topology, a
    node-pool label translated and kept), that value -> the values key that writes the label: the selector reads it,
    so the claim follows the values as the label does (a label written another way stays today's value)."""
    pod_end = block_end(lines, pod) if pod >= 0 else len(lines)
    cel, out = json.dumps(w.delta.spec), {}
    for key, value in w.delta.kept.items():
        if f"'{value}'" not in cel or (at := _label_line(lines, pod, pod_end, key)) < 0:
            continue
        action = _LABEL_ACTION.fullmatch(_LABEL_VALUE.match(lines[at]).group(3))  # type: ignore[union-attr]
        if action and re.fullmatch(r"\.Values(?:\.\w+)+", action.group(1)):
            out[value] = action.group(1)
    return out


def _ifs(text: str, index: int) -> set[str]:
    """The conditions of the `if` blocks open at line `index` (0-based) of the template (none for -1)."""
    if index < 0:
        return set()
    offset = sum(len(line) for line in text.splitlines(keepends=True)[:index])
    heads = [text[start : text.find("}}", start)] for start, word in _open_blocks(text, offset) if word == "if"]
    return {re.sub(r"^\{\{-?\s*if\s+", "", head).rstrip(" -") for head in heads}


def _with_label_exprs(spec: str, exprs: dict[str, str], kept: dict[str, str] | None = None) -> str:
    """The claim spec text with each label value in its CEL selectors read from the template expression that wrote
    it (label values hold no quote, so `'{{ ... }}'` stays one CEL string). A value the selector does not hold as
    written (the migration maps it: `gpu.family` ampere -> 'Ampere', `gpu.memory` -> a quantity) cannot follow the
    template, and a claim fixed to today's value would select the wrong model for another: translated by hand. The
    values of labels the pod keeps (`kept`, _kept_label_exprs) are read where the selector holds them."""
    out, found = [], set()
    for line in spec.splitlines(keepends=True):
        if "expression:" in line:
            for value, expr in {**(kept or {}), **exprs}.items():
                if f"'{value}'" in line:
                    found.add(value)
                    line = line.replace(f"'{value}'", f"'{{{{ {expr} }}}}'")
        out.append(line)
    if missing := sorted(set(exprs) - found):
        raise RewriteError(
            f"the node label value {', '.join(missing)} written by a template expression is not in the claim's CEL "
            "selector as written (the migration maps it to another form), so the claim cannot follow the template: "
            "translate the label by hand"
        )
    return "".join(out)


def _choice_spec(w: Workload, picks: dict[str, str], counts: dict[str, str], device_class: str) -> str:
    """The claim spec of a vendor choice as template text: each branch's spec (the migration's, for the pod asking
    for that branch's device, with that branch's count) under that branch's condition; each branch reads
    dra.deviceClassName, its own class when that is empty (values.yaml leaves it empty: one class would be wrong for
    the other vendor)."""
    texts = []
    for res in picks:
        delta, requests = w.choices.get(res, (w.delta, w.requests))
        own = _class_of(delta.spec, res, requests) or device_class
        texts.append(
            _classless(_sentinel_yaml(delta.spec.get("spec", {}), dict.fromkeys(requests, counts[res]), own), own)
        )
    branches = [text.splitlines(keepends=True) for text in texts]
    # the lines every branch starts and ends with (`devices:` ... `exactly:`, `allocationMode: ExactCount`) are
    # written once, around the choice; each branch keeps at least one line of its own
    shortest = min(map(len, branches)) - 1
    head = len(_shared_start(branches)[:shortest])
    tail = len(_shared_start([b[head:][::-1] for b in branches])[: shortest - head])
    if head or tail:
        out = ["".join(branches[0][:head])]
        for k, (cond, lines) in enumerate(zip(picks.values(), branches, strict=True)):
            out.append(
                f"{{{{- {'if' if k == 0 else 'else if'} {unparenthesized(cond)} }}}}\n"
                + "".join(lines[head : len(lines) - tail])
            )
        return "".join(out) + "{{- end }}\n" + "".join(branches[0][len(branches[0]) - tail :])
    out = [
        f"{{{{- {'if' if k == 0 else 'else if'} {unparenthesized(cond)} -}}}}\n{text}"
        for k, (cond, text) in enumerate(zip(picks.values(), texts, strict=True))
    ]
    return "".join(out) + "{{- end }}\n"


def _classless(spec: str, device_class: str) -> str:
    """A claim spec that reads dra.deviceClassName, reading `device_class` when the value is empty."""
    default = f"{{{{ .Values.dra.deviceClassName | default {json.dumps(device_class)} }}}}"
    return spec.replace("{{ .Values.dra.deviceClassName }}", default)


def _own_toleration(toleration: dict[str, Any], sets: dict[str, str], p: str) -> list[str]:
    """A toleration's lines in the pod's list, inside `if` the count of the device it tolerates is set (`sets`: each
    device resource to that condition) when it tolerates one of them."""
    entry = [f"{p}  {t}" for t in _dump_list([toleration])]
    gate = sets.get(str(toleration.get("key", "")))
    return [f"{p}  {{{{- if {unparenthesized(gate)} }}}}", *entry, f"{p}  {{{{- end }}}}"] if gate else entry


def _set(count: str) -> str:
    """Whether a count is set: null and "" render the device key with no count (`nvidia.com/gpu:`), which asks for
    no device; 0 renders `nvidia.com/gpu: 0`, which the device plugin's admission still tolerates (`cat` drops nil;
    what `include` or `tpl` prints for it is `<no value>`, which Helm removes only from the final output)."""
    if re.search(r"\b(include|tpl)\b", count):
        return f'(ne ({count} | replace "<no value>" "" | trim) "")'
    return f'(ne (cat {as_arg(count)}) "")'


def _or(*parts: str) -> str:
    return parts[0] if len(parts) == 1 else f"(or {' '.join(parts)})"


def _containers_spec(
    w: Workload, names: list[str], counts: list[str], gates: list[str], several: str, device_class: str
) -> str:
    """The claim spec of one device asked for by several containers as template text: each container's request only
    when its count is above 0, named after the container when another container's request is there too (as the
    migration names them), else after the device."""
    spec = w.delta.spec.get("spec", {})
    devices = dict(spec.get("devices", {}))
    requests = devices.pop("requests", [])
    if devices or any(k != "devices" for k in spec):
        raise RewriteError(f"{w.rel}: the migration's claim for several containers has more than its requests")
    out = ["devices:", "  requests:"]
    for req, name, count, gate in zip(requests, names, counts, gates, strict=True):
        one = {**req, "name": "@@NAME@@"}
        item = _sentinel_yaml({"devices": {"requests": [one]}}, {"@@NAME@@": count}, device_class).splitlines()[2:]
        label = f"{{{{ if {several} }}}}{name}{{{{ else }}}}{w.base}{{{{ end }}}}" if several else name
        item = [line.replace("'@@NAME@@'", label) for line in item]
        out += [f"    {{{{- if {gate} }}}}", *item, "    {{- end }}"]
    return "\n".join(out) + "\n"


_SIBLING_TOYAML = re.compile(r"(\s*)\{\{-\s*toYaml\s+(.+?)\s*\|\s*(nindent\s+\d+)\s*\}\}\s*")


def _without_names(lines: list[str], at: int, names: list[str], on: str) -> Edit | None:
    """For a `toYaml` line beside a device key whose name comes from values: in the DRA branch, the map without that
    name (clusterjellyfin's example values put `nvidia.com/gpu` in workers.resources.limits too, beside the key
    `{{ .Values.workers.gpu.resource }}: 1`: Helm writes it twice and keeps the key's, and the claim stands for it)."""
    m = _SIBLING_TOYAML.fullmatch(lines[at])
    if m is None:
        return None
    pad, expr, indent = m.groups()
    dra = f"{pad}{{{{- toYaml (omit ({expr} | default dict) {' '.join(dict.fromkeys(names))}) | {indent} }}}}"
    return Edit(
        at, at + 1, [f"{pad}{{{{- if {on} }}}}", dra, f"{pad}{{{{- else }}}}", lines[at], f"{pad}{{{{- end }}}}"]
    )


def _per_step(w: Workload) -> str:
    """The number of containers (an argument of `int`) when the pod's device key sits in a `range` over `until N` or
    `untilStep 0 N 1` that writes one container per step (ColonyOS's python executor); else ""."""
    loop = w.devices[0].loop
    lines = w.text.splitlines()
    containers = _containers_line(lines, _resources_line(lines, w.devices[0], w.rel))
    if loop is None or loop.opened < sum(len(x) + 1 for x in lines[: containers + 1]):
        return ""
    if len(loop.headers) > 1 or not loop.steps:
        raise RewriteError(f"{w.rel}: the containers asking for devices are written by `{loop.headers[-1]}`")
    inner = w.devices[0].conditions[loop.start + 1 :]
    if any(re.search(r"(?<![\w$)\]])\.(?!Values\b)", c) or set(_VARIABLE.findall(c)) & loop.names for c in inner):
        raise RewriteError(
            f"{w.rel}: a container of the `{loop.headers[0]}` asks for devices under a per-step condition"
        )
    return loop.steps


def _container_name(lines: list[str], res: int, rel: str) -> str:
    """The name of the container whose `resources:` is at line `res`, as the template writes it (`executor-{{ . }}`)."""
    item = parent_line(lines, res)
    m = re.fullmatch(r"\s*- name:\s*(\S.*?)\s*", lines[item]) if item >= 0 else None
    if m is None:
        raise RewriteError(f"{rel}:{res + 1}: the container's name is not the first line of its list item")
    return _name_text(m.group(1))


def _after_steps(lines: list[str], text: str, device: Device, containers: int, rel: str) -> int:
    """The line after the `end` of the range that writes one container per step, where the pod's claim goes (its
    condition reads the template variables the template may set only after `containers:`)."""
    assert device.loop is not None
    depth = 0
    for start, _end, word in _actions(text):
        if start < device.loop.opened:
            continue
        depth += word in ("if", "with", "range", "define", "block") or -(word == "end")
        if depth == 0:
            at = text.count("\n", 0, start)
            rest = [line for line in lines[at + 1 :] if not is_control(line)]
            if is_control(lines[at]) and (
                not rest
                or (line_indent(rest[0]) <= line_indent(lines[containers]) and not rest[0].lstrip().startswith("-"))
            ):
                return at + 1
            break
    raise RewriteError(f"{rel}: the `range` of containers does not end the pod's container list on a line of its own")


def _steps_spec(w: Workload, steps: str, container: str, count: str, device_class: str) -> str:
    """The claim spec of a container per step as template text: the same `range` writes one request per container,
    named after the container when there are several (as the migration names them), else after the device."""
    spec = w.delta.spec.get("spec", {})
    devices = dict(spec.get("devices", {}))
    requests = devices.pop("requests", [])
    if devices or any(k != "devices" for k in spec) or not requests:
        raise RewriteError(f"{w.rel}: the migration's claim for the containers of a `range` has more than its requests")
    one = {**requests[0], "name": "@@NAME@@"}
    item = _sentinel_yaml({"devices": {"requests": [one]}}, {"@@NAME@@": count}, device_class).splitlines()[2:]
    several = f"gt (int {from_root(steps)}) 1"
    label = f"{{{{ if {several} }}}}{{{{ {_request_name(container, w.base)} }}}}{{{{ else }}}}{w.base}{{{{ end }}}}"
    item = [from_root(line.replace("'@@NAME@@'", label)) for line in item]
    header = w.devices[0].loop.headers[0]  # type: ignore[union-attr]
    return "\n".join(["devices:", "  requests:", f"  {{{{- {header} }}}}", *item, "  {{- end }}"]) + "\n"


def _request_name(container: str, base: str) -> str:
    """A Helm expression for the request the migration names after a container, `<container>-<base>` made a DNS label
    (plan.dns_label: runs of `-` made one, at most 63 characters, no `-` at the end; the rest of what dns_label does
    changes no valid container name). `container` is the name as the template writes it (`executor-{{ $i }}`), its
    actions read where the expression is written."""
    parts = re.split(r"\{\{-?\s*(.*?)\s*-?\}\}", container)
    text = "".join(p.replace("%", "%%") if k % 2 == 0 else "%v" for k, p in enumerate(parts))
    args = "".join(f" {p}" if re.fullmatch(r"[$\w.]+", p) else f" ({p})" for p in parts[1::2])
    name = f"printf {json.dumps(f'{text}-{base}')}{args}"
    return f'regexReplaceAll "-+" ({name}) "-" | trunc {DNS_LABEL_MAX} | trimSuffix "-"'


_QUOTING = re.compile(r"\{\{(-?\s*)(?:s?quote\s+(.+?)|(.+?)\s*\|\s*s?quote)(\s*-?)\}\}")


def _name_text(expr: str) -> str:
    """The workload's name as text the claim template's name goes on from: without the YAML quotes around it, and
    an action that quotes it (`{{ $name | quote }}`, `{{ quote .Values.name }}`) without its quoting, which would
    put the quotes inside the longer name (`"job"-1a2b3c4d`, not YAML)."""
    expr = expr[1:-1] if len(expr) > 1 and expr[0] == expr[-1] and expr[0] in "\"'" else expr
    return _QUOTING.sub(lambda m: f"{{{{{m.group(1)}{m.group(2) or m.group(3)}{m.group(4)}}}}}", expr)


# --- chart conventions: version, Artifact Hub changes, values schema ------------------------------------------


def _range_keyed(text: str, first: Pattern) -> str:
    """Why a key line `{{ $key }}:` is manual when a `range $key, $val := X` just above it sets `$key` and the
    pass-through does not take it (kubefate's `{{ $key }}:` then `toYaml $val` over `.Values.modules.python.resources`
    is taken, patterns._map_range): the key's name is each key of the map X; "" otherwise."""
    key = re.match(r"[\"']?\{\{-?\s*(\$\w+)\s*-?\}\}[\"']?\s*:", first.text)
    if key is None:
        return ""
    declares = re.compile(rf"\{{\{{-?\s*range\s+{re.escape(key.group(1))}\s*,\s*(\$\w+)\s*:=\s*(.+?)\s*-?\}}\}}")
    lines = text.splitlines()
    for at in range(first.line - 1, max(0, first.line - 4), -1):  # 1-based lines above the key
        if m := declares.search(lines[at - 1]):
            return (
                f"the key `{key.group(1)}` (with `{m.group(1)}` its content) is each key of the map `{m.group(2)}`, "
                f"written key by key by the `range` at line {at}: the idiomatic rewrites take a values map named "
                "`resources` (or `*Resources`) written whole (`toYaml`, pattern B), by its `limits:`/`requests:` "
                f"sections, or key by key with each value written whole (`{key.group(1)}:`, then `toYaml "
                f"{m.group(1)}` on that line or the next), not this `range`"
            )
    return ""


_WHOLE_LIST = re.compile(
    r"\{\{-?\s*(?:toYaml\s+(\$?\.Values(?:\.[\w-]+)*\.\w*[Cc]ontainers)\s*\||with\s+(\$?\.Values(?:\.[\w-]+)*\.\w*[Cc]ontainers)\s*-?\}\})"
)


def _containers_whole(text: str, first: Pattern) -> str:
    """Why a device request is manual when the containers around its line come whole from a values list (`containers:`
    then `{{- toYaml .Values.containers | nindent 8 }}`, or `with .Values.extraContainers` and `toYaml .`); ""
    otherwise."""
    lines = text.splitlines()
    for at in range(max(1, first.line - 2), min(len(lines), first.line + 8) + 1):
        if m := _WHOLE_LIST.search(lines[at - 1]):
            return (
                f"the containers come whole from the values list `{m.group(1) or m.group(2)}` (line {at}): the "
                "idiomatic rewrites take a container's values resources map or a key the template writes, and a DRA "
                "values file would have to repeat that whole list (Helm replaces a list, it does not merge it); write "
                "the GPU container in the template, its `resources:` from a values map (`{{- toYaml .resources | "
                "nindent 12 }}` in a `range` over the list is taken)"
            )
    return ""


def _set_name(text: str, first: Pattern) -> str:
    """Why a key line `{{ $name }}:` is manual when the template sets `$name` itself above it, to a literal and then,
    under an `if`, to something else (a device type a values item may override: `$gpuName := "nvidia.com/gpu"`, then
    `$gpuName = $svc.resources.limits.gpuType`): each assignment with its line, whether one reads the item of a
    `range` around the key (each item may name another device resource), and what to write by hand; "" otherwise."""
    key = re.match(r"[\"']?\{\{-?\s*\$(\w+)\s*-?\}\}[\"']?\s*:", first.text)
    if key is None:
        return ""
    sets = re.compile(rf"\{{\{{-?\s*\${key.group(1)}\s*:?=\s*(.+?)\s*-?\}}\}}")
    above = text.splitlines()[: first.line - 1]
    found = [(n, m.group(1)) for n, line in enumerate(above, 1) for m in sets.finditer(line)]
    if not found:
        return ""
    offset = sum(len(line) + 1 for line in above)
    heads = [text[at : text.find("}}", at)] for at, word in _open_blocks(text, offset) if word == "range"]
    items = {v for head in heads for v in re.findall(r"\$(\w+)\s*(?=[,:])", head.split(":=")[0] + ":")}
    per_item = next((e for _, e in found if any(re.search(rf"\${v}\b", e) for v in items)), "")
    said = ", then ".join(f"`{e}` (line {n})" for n, e in found)
    each = "item of the `range`" if per_item else "pod"
    return (
        f"the device resource name `${key.group(1)}` is a variable the template sets itself: {said}"
        + (
            f"; `{per_item}` reads the item of the `range` around the key, so each item may name another device"
            if per_item
            else ""
        )
        + ": the idiomatic rewrites take a name that is a literal or one values key (pattern E). By hand: keep each "
        "device key under `if not` a values switch and, in its DRA branch, write the container's resources.claims, "
        f"the pod's resourceClaims and a ResourceClaimTemplate for each {each} (its count, and the device class of "
        "the resource the variable names); or keep the key and serve it with a DeviceClass with extendedResourceName "
        "(--strategy extended-resource, Kubernetes 1.34+)"
    )


def _helper_name(text: str, line: str) -> str:
    """Why a device key whose name is a variable the template sets from a helper (`$gpuResource := include
    "x.gpuResource" .`) is manual: the helper may read several values keys (a vendor, an override); "" otherwise."""
    key = re.match(r"\{\{-?\s*\$([A-Za-z_]\w*)\s*-?\}\}\s*:", line.strip())
    if key is None:
        return ""
    helper = re.search(rf"\{{{{-?\s*\${key.group(1)}\s*:=\s*(?:include|template)\s+\"([^\"]+)\"", text)
    if helper is None:
        return ""
    return (
        f"the device resource name `${key.group(1)}` comes from the helper `{helper.group(1)}`, which the idiomatic "
        "rewrites do not read as one values key (pattern E takes a name from one values key)"
    )


def kind_guards(expected: list[Any], relations: list[Any], rules: RuleSet) -> tuple[list[str], dict[str, str]]:
    """Conditions that keep the DRA branch off where a values key makes the chart render its device request in a
    kind the manifest migration leaves as is (`isRunaiJob: true` renders a RunaiJob, `unknown-kind`), so the chart
    does what `fix -` does there; and, per proof label, the note saying so."""
    from dramigrate.helm.probe import device_uses
    from dramigrate.helm.values import display

    guards: list[str] = []
    notes: dict[str, str] = {}
    renders = {v.label: (r, want) for v, r, want, _ in expected if not r.error}
    base = next((label for label in ("your values", "default values") if label in renders), "")

    def left(label: str) -> list[str]:
        """The kinds of the devices a render asks for when the migration leaves all of it as is, else []."""
        r, want = renders.get(label, (None, ""))
        return sorted({k[0] for k in device_uses(r.stream, rules)}) if r is not None and want == r.stream else []

    for rel in relations:
        leaf = rel.leaf
        if rel.kind != "switch" or not isinstance(leaf.value, bool):
            continue
        label = f"{display(leaf.path)} flipped to {json.dumps(not leaf.value)}"
        expr = values_expr(leaf.path)
        if kinds := left(label):  # the flipped value renders the kind: the switch on only with the base value
            guards.append(expr if leaf.value else f"(not {expr})")
            where = label
        elif label in renders and renders[label][1] != renders[label][0].stream and (kinds := left(base)):
            # the values given render the kind (`kaiwo.enabled: true` in the user's file) and the flipped value
            # the pods the migration rewrites: the switch on only with the flipped value
            guards.append(f"(not {expr})" if leaf.value else expr)
            where = f"with {base}, {display(leaf.path)}: {json.dumps(leaf.value)}"
            label = base
        else:
            continue
        notes[label] = (
            f"{where}: the chart renders {', '.join(kinds)}, a kind the migration leaves on its device plugin "
            "(unknown-kind), so the DRA switch does too"
        )
    return guards, notes
