"""The idiomatic rewrite for a container's resources map built in template variables (pattern F): the template
assembles `$resources` with `dict` and `merge`, the device entry added by `dict <name> <count>` in a vendor's branch
(the name and the count from values), and writes the map with `toYaml $resources` under `resources:` (helix-sandbox:
`dict $nvidiaKey (.Values.gpu.nvidia.count | default 1)`, `dict .Values.gpu.amd.resourceName 1`).

No line names the device key, so the rewrite works on the map itself, behind the `dra.enabled` switch: right before
the toYaml line, the DRA branch looks each device resource the chart may write (those its renders and values name)
up in the map's `limits` and `requests`, keeps its count, drops it (a section left empty goes too, as the migration
drops it) and adds the container's claim. Template variables live to the end of the block they are set in, so after
the pod spec's last key the pod gets its `resourceClaims` and the toleration, and after the workload document its
ResourceClaimTemplate: for each device resource the spec the core's migration gives it, the count the map held, named
after the workload plus a hash of the spec. A map that holds several device resources at once (MIG profiles side by
side) keeps each one's count in a dict, `$draCounts`, and its claim asks for each with one request, named as the
core's plan names them (Several). proveswitch.py proves (L) and (D) with prove_switch.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.conventions import conventions
from dramigrate.helm.goexpr import as_arg
from dramigrate.helm.idiomatic import _metadata_line, _single_heads, capabilities_check, fail_when, values_block
from dramigrate.helm.patterns import (
    NotIdiomatic,
    Pattern,
    count_expression,
    known_regex,
    literal_entries,
    shares_regex,
    untaken_message,
)
from dramigrate.helm.poddelta import pod_delta, pod_groups
from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.rewrite import Change, RewriteError, chart_name
from dramigrate.helm.templatelines import (
    BlockDumper,
    bare,
    block_end,
    emits_text,
    is_control,
    is_key,
    line_indent,
    parent_line,
)
from dramigrate.helm.tolerationedits import (
    _merge_tolerations,
    given_tolerations,
    split_inline_lists,
    tolerated_define,
    tolerated_test,
)
from dramigrate.helm.values import resource_sections
from dramigrate.rules import NATIVE_RESOURCES, RuleSet

# `{{- toYaml $resources | nindent 12 }}` (or `$resources | toYaml`) alone on its line
# (or `{{ toYaml $resources | indent 12 }}` at column 0, below its `resources:` key)
_TOYAML = re.compile(r"^(\s*)\{\{-?\s*(?:toYaml\s+(\$\w+)|(\$\w+)\s*\|\s*toYaml)\s*\|\s*(n?)indent\s+\d+\s*-?\}\}\s*$")
_BLOCK_WORD = re.compile(r"\{\{-?\s*(if|with|range|define|block|end)\b")
# an entry whose name is not literal (`dict $key 1`, devtron's `dict $gpu.provider 1`,
# `dict (.Values.gpu.resource | default "nvidia.com/gpu") 1`)
_DICT_ENTRY = re.compile(r"\bdict\s+(\$\w+(?:\.\w+)*|\$?\.Values[\w.]*|\(\s*\$?\.Values[^()]*\))\s+")
# an entry set into the map or one of its sections, its name not literal (`set $res.limits .Values.gpu.resourceName 1`)
_SET_ENTRY = re.compile(r"\bset\s+\$\w+(?:\.\w+)*\s+(\$\w+|\$?\.Values[\w.]*|\(\s*\$?\.Values[^()]*\))\s+")
_CLAIM = "gpu"
_COUNT, _KEY = "$draCount", "$draKey"
# the scheduler allocates at most 32 devices to one claim (plan.MAX_DEVICES_PER_CLAIM): the map's one claim fails above
OVER_LIMIT = (
    "the container's resources map asks for more than 32 devices, and the scheduler allocates at most 32 to one "
    "claim (AllocationResultsMaxSize): the chart's DRA claim holds them all (the manifest migration gives each device "
    "kind a claim of its own then, and refuses one kind over 32): lower the counts in values, or set dra.enabled=false"
)

Alternative = Callable[[list[dict[str, Any]], str, str], tuple[list[dict[str, Any]], list[dict[str, Any]], dict]]


class NotMapBuilt(RewriteError):
    """The template's device request is not a map built in variables that this rewrite takes."""


class _NotTaken(NotMapBuilt):
    """The pod's tolerations are in a block the map may be built without."""


@dataclass(frozen=True)
class Site:
    """Where a template writes a resources map built in a variable."""

    toyaml: int  # 0-based line of `{{- toYaml $var | nindent N }}`
    var: str
    pod: int  # the pod spec's line (the parent of `containers:`)
    section: int = -1  # the `limits:` line when the variable holds that section only, not the whole map
    literal: tuple[str, ...] = ()  # the names of the template's own `dict "<name>" <count>` entries


def _depths(lines: list[str]) -> list[int]:
    """The number of template blocks open at the start of each line."""
    out, depth = [], 0
    for line in lines:
        out.append(depth)
        for word in _BLOCK_WORD.findall(line):
            depth += -1 if word == "end" else 1
    return out


def _heads() -> frozenset[str]:
    """The lines a pod's containers start at: `containers:`, or a kind's single container (KServe's `model:`)."""
    return frozenset({"containers:", "- containers:", *_single_heads()})


def site(text: str) -> Site | None:
    """The map-built resources of a template: a `resources:` key whose value is `toYaml $var` (or its `limits:` or
    `requests:` section's value, tvarr's `$limits`), `$var` set with `:=` once in a block enclosing the toYaml line and
    given a `dict` entry whose name comes from values or a variable, or a device resource's literal name (`merge $res
    (dict "limits" (dict "nvidia.com/gpu" N))` on `$res := deepCopy .Values.resources`); else None. The first of the
    template's (sites)."""
    found = _candidates(text)
    return found[0] if found else None


def sites(text: str) -> list[Site]:
    """Every map-built resources site of a template, in line order, when the first `resources:` key written from a
    variable is one (site): nemo-retriever builds `$resources` in the standalone Deployment and again in the split
    mode's, one per branch of `if eq .Values.topology.mode "standalone"`. From a later key written from a variable in
    a shape the rewrite does not take on, the keys are left as they are (the proof's render then shows their device
    requests); a map's second section written from a variable of its own is the first's (_other_sections)."""
    return [w for w in _candidates(text, every=True) if w is not None]


def _candidates(text: str, every: bool = False) -> list[Site | None]:
    """The verdict (a Site, or None) for each `resources:` key written from a variable, up to the first (all with
    `every`, once the first is a Site)."""
    lines = text.splitlines()
    depths = _depths(lines)
    out: list[Site | None] = []
    owners: set[int] = set()
    for i, line in enumerate(lines):
        m = _TOYAML.match(line)
        if m and not m.group(4) and m.group(1):
            m = None  # `indent` writes the map's first line where the action is: only at column 0, on a line of its own
        dotted = _with_var(lines, i, depths) if not m else None
        parent = parent_line(lines, i) if not m or m.group(4) else _key_above(lines, i)
        section = parent if is_key(lines[parent], "limits", "requests") else -1
        owner = parent_line(lines, section) if section >= 0 else parent
        if not (m or dotted) or not is_key(lines[owner], "resources"):  # the map may be built between the two
            continue
        if owner in owners:  # the other section of a map taken (devtron's `requests:` beside `limits:`)
            continue
        owners.add(owner)
        var = (m.group(2) or m.group(3)) if m else dotted
        out.append(_verdict(lines, depths, i, var, dotted is not None, section, owner))
        if out[-1] is None or not every:
            break
    return out


def _verdict(
    lines: list[str], depths: list[int], i: int, var: str, dotted: bool, section: int, owner: int
) -> Site | None:
    """The Site of the `resources:` key at line `owner` written from `var` at line `i`, or None (site)."""
    sets = _declared(lines[:i], var)
    if len(sets) > 1:  # those of a branch that ends before line i (nemo-retriever's standalone one) are not its
        sets = [j for j in sets if _encloses(lines, j, i, depths)]
    if len(sets) != 1 or min(depths[sets[0] : i + 1]) < depths[sets[0]]:
        return None
    if section < 0 and depths[sets[0]] != depths[i] - dotted:
        return None
    built = lines[_first_part(lines, sets[0], depths) : i]
    literal = tuple(dict.fromkeys(n for x in built for n in literal_entries(x)))
    if not literal and not any(e.search(x) for x in built for e in (_DICT_ENTRY, _SET_ENTRY)):
        return None
    containers = next((j for j in range(i - 1, -1, -1) if bare(lines[j]) in _heads()), -1)
    if containers < 0 or line_indent(lines[containers]) >= line_indent(lines[owner]):
        return None
    return Site(i, var, parent_line(lines, containers), section, literal)


def _encloses(lines: list[str], at: int, i: int, depths: list[int]) -> bool:
    """Whether a variable declared at line `at` is still set at line `i`: no block it is in closes between them, nor
    does one pass its `else`."""
    mine = _open_blocks(lines, at)
    return min(depths[at : i + 1]) >= depths[at] and _open_blocks(lines, i)[: len(mine)] == mine


# `{{- toYaml . | nindent 12 }}` alone on its line, `.` being the map (`{{- with $resources }}` just above its key)
_TOYAML_DOT = re.compile(r"^\s+\{\{-?\s*(?:toYaml\s+\.|\.\s*\|\s*toYaml)\s*\|\s*nindent\s+\d+\s*-?\}\}\s*$")
_WITH_VAR = re.compile(r"^\s*\{\{-?\s*with\s+(\$\w+)\s*-?\}\}\s*$")


def _with_var(lines: list[str], at: int, depths: list[int]) -> str | None:
    """The variable a `toYaml .` at line `at` writes: that of the `{{- with $var }}` whose block holds it directly
    (unmanic's `{{- with $resources }}`, `resources:`, `{{- toYaml . | nindent 12 }}`), else None."""
    if not _TOYAML_DOT.match(lines[at]):
        return None
    opener = next((j for j in range(at - 1, -1, -1) if depths[j] < depths[at]), -1)
    found = _WITH_VAR.match(lines[opener]) if opener >= 0 else None
    return found.group(1) if found else None


def takes(text: str, hint: Pattern, rules: RuleSet) -> bool:
    """Whether the map-built rewrite takes a template whose first device request is `hint`: pattern F with a map
    built in variables (site), or A or E at a device key the pod writes beside that map."""
    where = site(text) if hint.letter in ("A", "E", "F") else None
    return where is not None and (hint.letter == "F" or hint.line - 1 in keys_beside(text.splitlines(), where, rules))


# a key line whose name an action writes or that names a resource (`{{ $gpuType }}: {{ $gpuCount }}`)
_KEY_LINE = re.compile(r"""^\s*(\{\{.*?\}\}|["']?[\w.-]+/[\w.-]+["']?)\s*:\s*\S""")


def keys_beside(lines: list[str], where: Site, rules: RuleSet) -> list[int]:
    """The lines of the pod spec, outside the map, that write a device key under `limits:` or `requests:` (its name an
    action, or a device resource): smg-gateway's `{{ $gpuType }}: {{ $gpuCount }}` in the `else` of the
    `if $worker.resources` whose branch builds the map."""
    found = []
    for j in range(where.pod + 1, block_end(lines, where.pod)):
        m = _KEY_LINE.match(lines[j])
        if not m or is_control(lines[j]) or not is_key(lines[parent_line(lines, j)], "limits", "requests"):
            continue
        name = m.group(1).strip("\"'")
        if name.startswith("{{") or rules.is_device_candidate(name):
            found.append(j)
    return found


# a device key written beside the map: its name one action or a literal resource, then its count
_BESIDE = re.compile(
    r"""^\s*(?:\{\{-?\s*(?!(?:if|else|end|with|range|include|template)\b)(.+?)\s*-?\}\}|(["']?)([\w.-]+/[\w.-]+)\2)\s*:\s*(\S.*)$"""
)
_BESIDE_WHY = (
    "the pod also writes a device key outside the map the template builds (a branch without the map), in a form "
    "the rewrite does not take"
)


@dataclass(frozen=True)
class _Beside:
    """The device key lines a branch without the map writes (smg-gateway's `else` of `if $worker.resources`): its
    name and count as Go expressions, and the lines the DRA branch writes the claim instead of."""

    name: str
    count: str
    start: int  # the first line the DRA branch replaces
    stop: int  # one past the last
    whole: bool  # the lines replaced are the whole `resources:` block (else its sections, or the key lines alone)
    after: int = -1  # with the key lines alone (a section keeps other keys): where the claim goes, after the sections
    keys: tuple[int, ...] = ()  # with the key lines alone: each one (one a section: `limits:` and `requests:`)


def _beside(lines: list[str], keys: list[int], rel: str) -> _Beside:
    """How the DRA branch takes the device key lines `keys` written beside the map: one name and count, under the
    sections of one `resources:` key; raises NotMapBuilt."""
    why = f"{rel}:{keys[0] + 1}: {_BESIDE_WHY}"
    read = []
    for j in keys:
        m = _BESIDE.match(lines[j])
        count = count_expression(m.group(4)) if m else None
        if m is None or count is None:
            raise NotMapBuilt(f"{why} (one name and a count from values or a variable)")
        name = m.group(1) if m.group(1) else json.dumps(m.group(3))
        read.append((f"({name})" if re.search(r"\s", name) else name, count))
    sections = [parent_line(lines, j) for j in keys]
    owners = {parent_line(lines, s) for s in sections}
    if len(set(read)) != 1 or len(owners) != 1 or not is_key(lines[min(owners)], "resources"):
        raise NotMapBuilt(f"{why} (one name and count under the sections of one `resources:` key)")
    (name, count), owner = read[0], min(owners)

    def alone(start: int, stop: int) -> bool:  # the lines hold nothing but sections and the device key lines
        quiet = (k for k in range(start, stop) if k not in keys and k not in sections)
        return all(is_control(lines[k]) and not emits_text(lines[k]) for k in quiet)

    if alone(owner + 1, block_end(lines, owner)):
        return _Beside(name, count, owner, block_end(lines, owner), True)
    first, stop = min(sections), max(block_end(lines, s) for s in sections)
    if alone(first, stop):
        return _Beside(name, count, first, stop, False)
    if len(set(sections)) != len(keys):
        raise NotMapBuilt(f"{why} (a section holds the key twice, beside other keys)")
    # the key line alone in each section (llm-service's `{{ $acceleratorType }}: ..` beside cpu and memory under both
    # `limits:` and `requests:`): the claim after the last section, which keeps the other keys
    after, depths = max(block_end(lines, s) for s in sections), _depths(lines)
    while (
        after < len(lines) and depths[after] > depths[owner] and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}", lines[after])
    ):
        after += 1  # past the `{{- end }}` of a block the last section ends in (`if $model.storageSize`)
    return _Beside(name, count, keys[0], keys[-1] + 1, False, after, tuple(keys))


def _beside_in(
    lines: list[str], where: Site, keys: list[int], scope: int, rel: str, several: Several | None
) -> _Beside:
    """The device key lines `keys` beside the map (_beside), where the DRA variables set at line `scope` are seen."""
    why = f"{rel}:{keys[0] + 1}: {_BESIDE_WHY}"
    if several:
        raise NotMapBuilt(f"{why} (the map may hold several device resources at once)")
    b = _beside(lines, keys, rel)
    depths = _depths(lines)
    if b.start < scope or min(depths[scope : b.stop]) < depths[scope]:
        raise NotMapBuilt(f"{why} (a block the DRA variables are not set in)")
    owner = parent_line(lines, where.toyaml)
    owner = parent_line(lines, owner) if is_key(lines[owner], "limits", "requests") else owner
    if _item_of(lines, owner) != _item_of(lines, parent_line(lines, parent_line(lines, keys[0]))):
        raise NotMapBuilt(f"{why} (in another container than the map)")
    return b


def _item_of(lines: list[str], at: int) -> int:
    """The line of the list item (a container) the key at line `at` is in, or -1."""
    want = line_indent(lines[at])
    return next(
        (
            j
            for j in range(at - 1, -1, -1)
            if not is_control(lines[j]) and line_indent(lines[j]) < want and lines[j].lstrip().startswith("- ")
        ),
        -1,
    )


def _beside_edits(
    lines: list[str], b: _Beside, names: list[str], enabled: str, v: _Vars
) -> list[tuple[int, int, list[str]]]:
    """The DRA branch for the device key written beside the map: with the switch on and a name the claim takes, the
    count and name kept in the DRA variables and the container's claim written instead of the lines; with the switch
    on and another device resource, the render fails (as the map's own DRA branch does)."""
    pad = " " * line_indent(lines[b.start])
    taken = f"and {enabled} (has {b.name} (list {_listed(tuple(names))}))"
    keep = f"{{{{- {_COUNT} = {b.count} }}}}{{{{- {_KEY} = {b.name} }}}}"
    keep = f'{{{{- if ne (cat {as_arg(b.count)}) "" }}}}{keep}{{{{- end }}}}'  # a null count asks for no device
    fail = _untaken("", f"range $left := list {b.name}", names, v.known).strip()
    untaken = f"{{{{- else }}}}{{{{- if {enabled} }}}}{fail}{{{{- end }}}}"
    if b.after >= 0:  # the key line alone: the claim after its section, which keeps the other keys
        spad = " " * line_indent(lines[parent_line(lines, b.start)])
        claim = [
            f"{spad}{{{{- if and {enabled} (has {b.name} (list {_listed(tuple(names))})) (gt (int {b.count}) 0) }}}}",
            f"{spad}claims:",
            f"{spad}  - name: {v.claim_text}",
            f"{spad}{{{{- end }}}}",
        ]
        # each key line keeps the count; the first also fails on a device the claim does not take
        opening = [f"{{{{- if {taken} }}}}{keep}{untaken}"] + [f"{{{{- if {taken} }}}}{keep}{{{{- else }}}}"] * (
            len(b.keys) - 1
        )
        wrapped = [
            edit
            for k, head in zip(b.keys, opening, strict=True)
            for edit in (
                (k, k, [f"{' ' * line_indent(lines[k])}{head}"]),
                (k + 1, k + 1, [f"{' ' * line_indent(lines[k])}{{{{- end }}}}"]),
            )
        ]
        return [*wrapped, (b.after, b.after, claim)]
    head = [f"{pad}resources:"] if b.whole else []
    inner = pad + "  " * b.whole
    return [
        (
            b.start,
            b.start,
            [
                f"{pad}{{{{- if {taken} }}}}{keep}",
                f"{pad}{{{{- if gt (int {_COUNT}) 0 }}}}",
                *head,
                f"{inner}claims:",
                f"{inner}  - name: {v.claim_text}",
                f"{pad}{{{{- end }}}}",
                f"{pad}{untaken}",
            ],
        ),
        (b.stop, b.stop, [f"{pad}{{{{- end }}}}"]),
    ]


def _key_above(lines: list[str], at: int) -> int:
    """The line of the key a column-0 `indent` action at `at` writes the value of: the nearest line above it that is
    not a control action (-1 when there is none)."""
    return next((j for j in range(at - 1, -1, -1) if lines[j].strip() and not is_control(lines[j])), -1)


_LEAVES = re.compile(r"\s*\{\{-?\s*else\b")  # a line that leaves the branch it is in, at the branch's depth
_OPENER = re.compile(r"\{\{-?\s*((?:if|with|range|define|block)\b.*?)\s*-?\}\}")
_ELSE = re.compile(r"\{\{-?\s*else\b")


def _open_blocks(lines: list[str], at: int) -> list[tuple[str, bool]]:
    """The blocks open at the start of line `at`, outermost first: each opener's action (`if .Values.gpu.enabled`) and
    whether the line is past its `else`."""
    stack: list[tuple[str, bool]] = []
    for line in lines[:at]:
        for word in _BLOCK_WORD.finditer(line):
            if word.group(1) == "end":
                stack = stack[:-1]
            else:
                opener = _OPENER.match(line, word.start())
                stack.append((re.sub(r"\s+", " ", opener.group(1)) if opener else word.group(1), False))
        if _ELSE.search(line) and stack:
            stack[-1] = (stack[-1][0], True)
    return stack


def _taken_with(lines: list[str], at: int, toyaml: int, level: int) -> bool:
    """Whether line `at` renders whenever the map's toYaml line does: each block it is in beyond the first `level`
    ones is a branch the toYaml line is in too (navillasa's `if .Values.gpu.enabled` around both the map and the
    GPU tolerations)."""
    mine, opened = _open_blocks(lines, toyaml), _open_blocks(lines, at)
    return len(opened) >= level and all(block in mine and not block[1] for block in opened[level:])


def _early_key(lines: list[str], where: Site, level: int) -> tuple[str, str, int] | None:
    """The map's one device entry `set` with a name that is one values expression (`set $limits
    .Values.gpu.resourceName .Values.gpu.count`), its only entry whose name is not literal: (that expression, the
    conditions of the `if` blocks it is set in beyond the first `level` ones, its line); else None."""
    built = range(where.pod, where.toyaml)
    sets = [(j, m.group(1)) for j in built if (m := _SET_ENTRY.search(lines[j]))]
    if any(_DICT_ENTRY.search(lines[j]) for j in built) or len({name for _, name in sets}) != 1:
        return None
    at, name = sets[0]
    if not re.fullmatch(r"\$?\.Values(?:\.\w+)+", name):
        return None
    blocks = _open_blocks(lines, at)[level:]
    if any(in_else or not block.startswith("if ") for block, in_else in blocks):
        return None
    conditions = [f"({block[3:]})" for block, _ in blocks]
    entry = _SET_ENTRY.search(lines[at])
    count = re.match(r"(\$?\.Values[\w.]*)\s*-?\}\}", lines[at][entry.end() :]) if entry else None
    if count:  # a count set to null renders the key with no count: no device, no toleration (`cat` drops nil)
        conditions.append(f'(ne (cat {count.group(1)}) "")')
    return name, " ".join(conditions), at


def _declared(lines: list[str], var: str) -> list[int]:
    """The lines that declare `var` with `:=`."""
    return [j for j, x in enumerate(lines) if re.search(rf"\{{\{{-?\s*{re.escape(var)}\s*:=", x)]


def _first_part(lines: list[str], at: int, depths: list[int]) -> int:
    """The first line building the map declared at line `at`: that line, or the earlier declaration of a variable it
    is made of, at the same block depth (suse-pytorch's `$ressources := deepCopy (dict "limits" $limits) | ...`,
    `$limits` built from `$limits := default dict .Values.resources.limits` on)."""
    first = at
    for var in re.findall(r"\$\w+", lines[at].split(":=", 1)[1]):
        sets = _declared(lines[:at], var)
        if len(sets) == 1 and depths[sets[0]] == depths[at]:
            first = min(first, sets[0])
    return first


def resource_names(node: Any) -> list[str]:
    """The resource names the containers of rendered objects ask for under `resources` (limits and requests), in
    the order they first appear."""
    if isinstance(node, list):
        return list(dict.fromkeys(n for v in node for n in resource_names(v)))
    if not isinstance(node, dict):
        return []
    own = node.get("resources") if isinstance(node.get("resources"), dict) else {}
    found = [str(k) for part in ("limits", "requests") if isinstance(own.get(part), dict) for k in own[part]]
    return list(dict.fromkeys([*found, *(n for v in node.values() for n in resource_names(v))]))


def self_tolerated(renders: list[list[dict[str, Any]]]) -> set[str]:
    """The resources a template's pods tolerate the taint of themselves (suse-pytorch writes `key: nvidia.com/gpu`
    whenever its map holds nvidia.com/gpu, the MIG profiles' keys whenever it holds those): asked for in some of
    `renders` (a template's objects in each value set), and in every render that asks for one, its pod tolerates it
    (the device plugin's NoSchedule taint). The DRA branch adds no toleration for these."""
    asked: set[str] = set()
    untolerated: set[str] = set()
    for docs in renders:
        for pod in _pods(docs):
            names = set(resource_names([pod.get("containers"), pod.get("initContainers")]))
            asked |= names
            untolerated |= {n for n in names if not _tolerates(pod.get("tolerations"), n)}
    return asked - untolerated


def _pods(node: Any) -> list[dict[str, Any]]:
    """The pod specs (maps with `containers`) in rendered objects."""
    if isinstance(node, list):
        return [p for v in node for p in _pods(v)]
    if not isinstance(node, dict):
        return []
    own = [node] if isinstance(node.get("containers"), list) else []
    return own + [p for k, v in node.items() if k != "containers" for p in _pods(v)]


def _tolerates(tolerations: Any, name: str) -> bool:
    """Whether a pod's tolerations tolerate the `name:NoSchedule` taint the device plugin's nodes carry."""
    return any(
        isinstance(t, dict)
        and t.get("operator", "Equal") == "Exists"
        and t.get("key") in (None, "", name)
        and t.get("effect") in (None, "", "NoSchedule")
        for t in (tolerations if isinstance(tolerations, list) else [])
    )


def _names(docs: list[dict[str, Any]], rules: RuleSet) -> list[str]:
    """The device resources a render of the template asks for."""
    return [n for n in resource_names(docs) if rules.is_device_candidate(n) and rules.lookup(n) is not None]


def values_names(values: str, rules: RuleSet) -> list[str]:
    """The device resources the chart's values.yaml names as string values (`resourceName: "amd.com/gpu"`)."""
    found = re.findall(r"""^\s*[\w-]+:\s*["']?([a-z0-9.-]+\.[a-z]+/[\w.-]+)["']?\s*(?:#.*)?$""", values, re.M)
    return [n for n in dict.fromkeys(found) if rules.is_device_candidate(n) and _migrated(n, rules)]


def _migrated(resource: str, rules: RuleSet) -> bool:
    match = rules.lookup(resource)
    return match is not None and not match.rule.report_only and bool(match.rule.device_class)


def _request(spec: dict[str, Any]) -> str | None:
    """The name of a claim spec's one request (None: not one)."""
    requests = json.loads(json.dumps(spec.get("spec", spec))).get("devices", {}).get("requests", [])
    return str(requests[0].get("name")) if len(requests) == 1 else None


def _spec_text(spec: dict[str, Any], rel: str) -> str:
    """A claim spec as template text, its request's count the count the map held, the API's defaults left to it
    (`allocationMode: ExactCount` in each branch read as a needless line)."""
    data = without_api_defaults(spec.get("spec", spec))  # the ResourceClaimTemplate's spec.spec, as a chart writes it
    requests = data.get("devices", {}).get("requests", [])
    if len(requests) != 1:
        raise NotMapBuilt(f"{rel}: the migration's claim asks for {len(requests)} device requests")
    exact = requests[0].get("exactly", requests[0])
    exact["count"] = "@@COUNT@@"
    device_class, exact["deviceClassName"] = exact.get("deviceClassName"), "@@CLASS@@"
    text = _yaml(data).replace("'@@COUNT@@'", "{{ int .count }}")
    return text.replace("'@@CLASS@@'", f"{{{{ .Values.dra.deviceClassName | default {json.dumps(device_class)} }}}}")


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=BlockDumper, sort_keys=False, default_flow_style=False, width=1000)


def _specs(
    rel: str,
    names: list[str],
    originals: list[dict[str, Any]],
    migrated: list[dict[str, Any]],
    claim_templates: dict[str, Any],
    alternative: Alternative,
    rules: RuleSet,
    together: bool = False,
) -> tuple[dict[str, dict[str, Any]], Several | None, tuple[str, ...]]:
    """The migration's claim spec for each device resource of `names`: the rendered one's from the migration, the
    others' from the migration of the same objects asking for that resource instead; with several rendered in the
    map (MIG profiles side by side), or `together` (another value set's render holds several, at_once), each one's
    from the objects asking for it alone, and how the claim holds them (Several); and the resources whose taint the
    pod's own tolerations do not tolerate in the reference render (suse-pytorch tolerates nvidia.com/gpu itself, not
    amd.com/gpu)."""
    rendered = _names(originals, rules)
    if not rendered:
        raise NotMapBuilt(f"{rel}: the map holds no device resource in the reference render")
    deltas = pod_delta(originals, migrated, claim_templates)
    apart = len(rendered) > 1 and not together and _one_each(originals, deltas, rendered, rules)
    if (
        len(deltas) != 1
        and not apart
        and (len(rendered) > 1 or any(_uncounted(d, rendered) != _uncounted(deltas[0], rendered) for d in deltas))
    ):
        # a pod for each item of a `range` (smg-gateway's workers): one rewrite if their claims differ in count only
        # (and in the device's toleration, which the DRA branch adds to each pod whose own list does not have it)
        raise NotMapBuilt(f"{rel}: {len(deltas)} pods of the template ask for devices, not with one claim shape")
    out: dict[str, dict[str, Any]] = {}
    tolerate: list[str] = []  # the resources whose taint the pod does not tolerate itself
    alone = _without(originals, set(rendered[1:]))  # each resource's own claim: the others' keys left out
    for name in names:
        delta = deltas[0]
        if name != rendered[0] or len(rendered) > 1:
            renamed, other, rcts = alternative(alone, rendered[0], name)
            delta = pod_delta(renamed, other, rcts)[0]
        toleration = [{"key": name, "operator": "Exists", "effect": "NoSchedule"}]
        # several: the claim is named after its requests; one: `gpu`, or the one request of the resource's own claim
        # (habana.ai/gaudi's `gaudi`), the name the DRA branch looks up by the resource it took (_Vars.claims)
        one = (len(rendered) == 1 or apart) and not together
        claim = _CLAIM if one and delta.claim != _request(delta.spec) else delta.claim
        if delta.claim != claim or delta.tolerations not in ([], toleration) or delta.labels:
            raise NotMapBuilt(f"{rel}: the migration of {name} adds more than the claim and its toleration")
        out[name] = delta.spec
        if delta.tolerations:
            tolerate.append(name)
    if (len(rendered) == 1 or apart) and not together:
        return out, None, tuple(tolerate)
    several = Several.of(out, tolerate)  # MIG profiles side by side: the claim asks for each with one request
    if several.spec(rendered, _counts(originals, rendered)) != _plain(deltas[0]):
        raise NotMapBuilt(
            f"{rel}: the map holds {len(rendered)} device resources ({', '.join(rendered)}) in the reference "
            "render, and the migration's claim is not one request for each as the rewrite would write it"
        )
    return out, several, tuple(tolerate)


def _one_each(originals: list[dict[str, Any]], deltas: list[Any], rendered: list[str], rules: RuleSet) -> bool:
    """Whether the template's pods (a `range` over models, each picking its device by a values key) each ask for one
    device resource and the pods of one resource got the same claim from the migration but for its count: each pod
    then takes its resource's claim spec as one pod whose resource comes from values does."""
    pods = [pod for doc in originals for _, pod in pod_groups(doc, [])]  # as pod_delta finds them (KServe's too)
    asked = [names for pod in pods if (names := [n for n in _names([pod], rules) if n in rendered])]
    if len(asked) != len(deltas) or any(len(names) != 1 for names in asked):
        return False
    first: dict[str, tuple[Any, ...]] = {}  # each resource's first pod's claim, its count left out
    shapes = [(n, _uncounted(d, [n])) for (n,), d in zip(asked, deltas, strict=True)]
    return all(first.setdefault(n, shape) == shape for n, shape in shapes)


def at_once(renders: list[list[dict[str, Any]]], rules: RuleSet) -> bool:
    """Whether a container of the renders (a template's objects in each value set) asks for more than one device
    resource at once: tvarr merges `dict "gpu.intel.com/i915" 1` into the values' limits when gpu.type is intel,
    and those limits may name nvidia.com/gpu already. The DRA branch then keeps each one's count (Several). Only the
    resources the migration takes count: a report-only slice beside the device (HAMi's `nvidia.com/gpumem`) is no
    second request of the claim (the map that holds one stays on its device plugin, shares_regex)."""
    return any(
        len([n for n in _names([c], rules) if _migrated(n, rules)]) > 1
        for docs in renders
        for pod in _pods(docs)
        for c in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]
    )


def _without(docs: list[dict[str, Any]], drop: set[str]) -> list[dict[str, Any]]:
    """The objects with the device keys `drop` left out of every limits and requests."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: {n: c for n, c in v.items() if n not in drop}
                if k in ("limits", "requests") and isinstance(v, dict)
                else walk(v)
                for k, v in node.items()
            }
        return [walk(v) for v in node] if isinstance(node, list) else node

    return [walk(d) for d in docs]


def _counts(docs: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Each device resource's count in the rendered objects (requests over limits, as the DRA branch reads them)."""
    found: dict[str, Any] = {}
    for holder, section in resource_sections(docs):
        own = holder[section]
        found.update({n: own[n] for n in names if n in own})
    return found


def _uncounted(delta: Any, names: list[str]) -> tuple[Any, ...]:
    """What the migration added to a pod, its claim's device counts and the tolerations of the device resources
    `names` left out."""
    spec = json.loads(json.dumps(delta.spec.get("spec", delta.spec)))
    for request in spec.get("devices", {}).get("requests", []):
        request.get("exactly", request).pop("count", None)
    device = {"operator": "Exists", "effect": "NoSchedule"}
    tolerations = [t for t in delta.tolerations if not (t.get("key") in names and t == {**device, "key": t["key"]})]
    return delta.claim, spec, tolerations, delta.labels


def _plain(delta: Any) -> tuple[str, Any]:
    return delta.claim, json.loads(json.dumps(delta.spec.get("spec", delta.spec)))


@dataclass(frozen=True)
class Several:
    """The claim of a map that may hold several device resources at once, as the core's plan names it: one request
    for each resource the map holds, named after the resource's request (`mig`) or, when two share one, after the
    resource (`mig-1g-10gb`); the claim named after the requests (`gpu-mig`, `devices` past two)."""

    requests: dict[str, dict[str, Any]]  # resource -> its own claim's request, without the name
    bases: dict[str, str]  # resource -> the request name of its own claim
    labels: dict[str, str]  # resource -> its name when it shares a request name
    # the resources whose device taint the pod's own tolerations do not tolerate in the reference render (the chart
    # tolerates suse-pytorch's MIG profiles itself): the DRA branch adds a toleration for these only
    tolerate: tuple[str, ...] = ()

    @classmethod
    def of(cls, specs: dict[str, dict[str, Any]], tolerate: list[str]) -> Several:
        from dramigrate.plan import dns_label

        requests, bases = {}, {}
        for name, spec in specs.items():
            data = json.loads(json.dumps(spec.get("spec", spec)))
            own = data.get("devices", {}).get("requests", [])
            if list(data) != ["devices"] or list(data["devices"]) != ["requests"] or len(own) != 1:
                raise NotMapBuilt(f"the migration's claim for {name} is more than one device request")
            bases[name] = str(own[0].pop("name"))
            requests[name] = own[0]
        labels = {n: dns_label(n.split("/", 1)[-1]) for n in specs}
        return cls(requests, bases, labels, tuple(tolerate))

    def defines(self, claim: str, spec: str) -> list[str]:
        """The `claim` helper (the claim's name for a dict of counts by resource) and the `spec` helper (the claim
        spec for `(dict "counts" ... "Values" .Values)`), as the plan names them (claim, spec)."""
        bases = "dict " + " ".join(f"{json.dumps(n)} {json.dumps(b)}" for n, b in self.bases.items())
        labels = "dict " + " ".join(f"{json.dumps(n)} {json.dumps(b)}" for n, b in self.labels.items())
        out = [
            f'{{{{- define "{claim}" -}}}}',
            f"{{{{- $bases := {bases} }}}}",
            "{{- $seen := list }}",
            "{{- range $name, $_ := . }}{{- $seen = append $seen (get $bases $name) }}{{- end }}",
            "{{- $seen = uniq $seen }}",
            '{{- if le (len $seen) 2 }}{{ join "-" $seen }}{{ else }}devices{{ end -}}',
            "{{- end }}",
            f'{{{{- define "{spec}" -}}}}',
            f"{{{{- $bases := {bases} }}}}",
            f"{{{{- $labels := {labels} }}}}",
            "{{- $all := list }}",
            "{{- range $name, $_ := .counts }}{{- $all = append $all (get $bases $name) }}{{- end -}}",
            "devices:",
            "  requests:",
            "{{- range $name, $count := .counts }}",
            "{{- $base := get $bases $name }}",
        ]
        named = "ternary (get $labels $name) $base (gt (sub (len $all) (len (without $all $base))) 1)"
        if len(set(self.labels.values())) == len(self.labels):
            out.append(f"    - name: {{{{ {named} }}}}")
        else:  # two resources may share a label (nvidia.com/gpu, amd.com/gpu): the later one gets -2, as in the plan
            out[-2:-2] = ["{{- $used := list }}"]
            out += [
                f"{{{{- $request := {named} }}}}{{{{- $unique := $request }}}}",
                "{{- range $k := untilStep 2 9 1 }}{{- if has $unique $used }}"
                '{{- $unique = printf "%s-%d" $request $k }}{{- end }}{{- end }}{{- $used = append $used $unique }}',
                "    - name: {{ $unique }}",
            ]
        for k, (resource, request) in enumerate(self.requests.items()):
            out.append(f'{{{{- {"if" if k == 0 else "else if"} eq $name "{resource}" }}}}')
            data = json.loads(json.dumps(request))
            exact = data.get("exactly", data)
            exact["count"] = "@@COUNT@@"
            device_class, exact["deviceClassName"] = exact.get("deviceClassName"), "@@CLASS@@"
            text = _yaml(data).replace("'@@COUNT@@'", "{{ int $count }}")
            default = json.dumps(device_class)
            text = text.replace("'@@CLASS@@'", f"{{{{ $.Values.dra.deviceClassName | default {default} }}}}")
            out += ["      " + line for line in text.rstrip("\n").splitlines()]
        return [*out, "{{- end }}", "{{- end }}", "{{- end }}"]

    def claim(self, names: list[str]) -> str:
        seen = list(dict.fromkeys(self.bases[n] for n in sorted(names)))
        return "-".join(seen) if len(seen) <= 2 else "devices"

    def spec(self, held: list[str], counts: dict[str, Any]) -> tuple[str, Any]:
        """The claim name and spec for the resources `held` with `counts` (what the template renders)."""
        from dramigrate.plan import _unique

        shared = [self.bases[n] for n in held]
        requests, taken = [], set()
        for n in sorted(held):
            request = json.loads(json.dumps(self.requests[n]))
            request.get("exactly", request)["count"] = int(counts[n])
            named = self.labels[n] if shared.count(self.bases[n]) > 1 else self.bases[n]
            requests.append({"name": _unique(named, taken), **request})
        return self.claim(held), {"devices": {"requests": requests}}


def _untaken(pad: str, keys: str, names: list[str], known: str = "") -> str:
    """In the DRA branch, after the device keys the claim takes are out: a line that fails the render when the map
    still asks for an extended resource (`keys`: a range clause over its names, as rules.is_device_candidate reads
    one), a name set in values the rewrite does not migrate (`nvidia.com/mig-1g.5gb` where it takes `nvidia.com/gpu`):
    else the pod would ask its device plugin for it and get no claim. With `known`, only a resource a rule pack names
    fails: one no pack knows stays on its device plugin, as the migration leaves it (a report-only slice beside the
    device, HAMi's `nvidia.com/gpumem`, keeps the whole map on its device plugin where the chart names one (shares);
    elsewhere it fails)."""
    device = f'and (contains "/" $left) (not (regexMatch {json.dumps(NATIVE_RESOURCES.pattern)} $left))'
    if known:
        device += f" (regexMatch {json.dumps(known)} $left)"  # one line: the branch's added lines stay as they were
    return "\n".join(
        [f"{pad}{{{{- {keys} }}}}", *fail_when(device, untaken_message(names), pad), f"{pad}{{{{- end }}}}"]
    )


@dataclass(frozen=True)
class _Vars:
    """The DRA branch's template variables: one device resource's count and name (`$draCount`, `$draKey`), or with
    `define` (several resources in one map) a dict of the counts by name, `$draCounts`, and the claim's name from
    the `<define>` helper (Several)."""

    define: str = ""
    root: str = "."  # `$.` inside a `range` or `with`, where `.` is not the chart's root
    known: str = ""  # the resources a rule pack names (patterns.known_regex): only those fail as untaken
    # each resource's claim name where one is not `gpu` (habana.ai/gaudi's `gaudi`), looked up by `$draKey`
    claims: tuple[tuple[str, str], ...] = ()
    shares: str = ""  # the slices of the device (patterns.shares_regex) that keep a map on its device plugin

    @property
    def _lookup(self) -> str:
        pairs = " ".join(f"{json.dumps(r)} {json.dumps(c)}" for r, c in self.claims)
        return f"get (dict {pairs}) {_KEY}"

    @property
    def declare(self) -> str:
        if self.define:
            return "{{- $draCounts := dict }}{{- $draTaken := dict }}"
        return f'{{{{- {_COUNT} := 0 }}}}{{{{- {_KEY} := "" }}}}'

    def take(self, count: str) -> str:
        """Inside `if hasKey`: keep the count `count` (a Go expression) of the resource `$name`, when it is set: a
        null count renders `nvidia.com/gpu:`, which asks for no device (no claim, no toleration; `cat` drops nil)."""
        arg = count if count.startswith("(") else f"({count})"
        if self.define:  # the counts the claim asks for, and every resource taken (each gets its toleration)
            return (
                f'{{{{- if ne (cat {arg}) "" }}}}{{{{- $_ := set $draTaken $name true }}}}'
                f"{{{{- if gt (int {count}) 0 }}}}{{{{- $_ := set $draCounts $name {count} }}}}{{{{- end }}}}"
                "{{- end }}"
            )
        return f'{{{{- if ne (cat {arg}) "" }}}}{{{{- {_COUNT} = {count} }}}}{{{{- {_KEY} = $name }}}}{{{{- end }}}}'

    @property
    def held(self) -> str:
        """The condition that the map held a device."""
        return "$draCounts" if self.define else f"(gt (int {_COUNT}) 0)"

    @property
    def claim(self) -> str:
        """The claim's name as a Go expression."""
        if self.define:
            return f'(include "{self.define}" $draCounts)'
        return f"({self._lookup})" if self.claims else f'"{_CLAIM}"'

    @property
    def claim_text(self) -> str:
        """The claim's name as YAML text."""
        if self.define:
            return f'{{{{ include "{self.define}" $draCounts }}}}'
        return f"{{{{ {self._lookup} }}}}" if self.claims else _CLAIM

    @property
    def args(self) -> str:
        if self.define:
            return f'(dict "counts" $draCounts "Values" {self.root}Values)'
        return f'(dict "key" {_KEY} "count" {_COUNT} "Values" {self.root}Values)'


def _over_limit(claimed: str, several: bool) -> list[str]:
    """Lines that fail the render when the map's one claim asks for more than 32 devices (8 GPUs and 32 EFA
    interfaces), which no scheduler allocates: the pod would stay pending with no word."""
    if not several:
        return fail_when(f"{claimed} (gt (int {_COUNT}) 32)", OVER_LIMIT)
    total = "{{- $draTotal := 0 }}{{- range $draCounts }}{{- $draTotal = add $draTotal (int .) }}{{- end }}"
    return [total, *fail_when(f"{claimed} (gt $draTotal 32)", OVER_LIMIT)]


def _map_lines(pad: str, var: str, names: list[str], state: str, v: _Vars) -> list[str]:
    """Before the toYaml line: the DRA branch takes the device key out of the map and adds the claim."""
    listed = " ".join(json.dumps(n) for n in names)
    held = f'merge dict (get {var} "limits" | default dict) (get {var} "requests" | default dict)'
    left = f"range $left, $_ := {held}"
    shared = []
    if v.shares:  # a whole device beside a slice of it (HAMi's) is a share: it stays as the migration leaves it
        shared = [
            f'{pad}{{{{- $draShared := regexMatch {json.dumps("(?m)" + v.shares)} (keys ({held}) | join "\\n") }}}}'
        ]
        state = f"and {state} (not $draShared)"
    return [
        *shared,
        f"{pad}{{{{- if {state} }}}}",
        f"{pad}{{{{- range $name := list {listed} }}}}",
        f'{pad}{{{{- range $part := list "limits" "requests" }}}}',
        f"{pad}{{{{- $section := get {var} $part | default dict }}}}",
        f"{pad}{{{{- if hasKey $section $name }}}}",
        f"{pad}{v.take('(get $section $name)' if v.define else 'get $section $name')}",
        f"{pad}{{{{- $kept := omit $section $name }}}}",
        f"{pad}{{{{- if $kept }}}}{{{{- $_ := set {var} $part $kept }}}}"
        f"{{{{- else }}}}{{{{- $_ := unset {var} $part }}}}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        _untaken(pad, left, names, v.known),
        f'{pad}{{{{- if {v.held.strip("()")} }}}}{{{{- $_ := set {var} "claims" (list (dict "name" {v.claim})) }}}}'
        "{{- end }}",
        f"{pad}{{{{- end }}}}",
    ]


def _section_lines(pad: str, var: str, names: list[str], state: str, v: _Vars, claims: bool = True) -> list[str]:
    """Before a section built in a variable (`limits:` of `toYaml $limits`): the DRA branch takes the device key out
    of the section and (`claims`: the last section of the map) writes the container's claim beside it."""
    listed = " ".join(json.dumps(n) for n in names)
    take = v.take(f"(get {var} $name)") if v.define else v.take(f"get {var} $name")
    return [
        f"{pad}{{{{- if {state} }}}}",
        f"{pad}{{{{- range $name := list {listed} }}}}",
        f"{pad}{{{{- if hasKey {var} $name }}}}",
        f"{pad}{take}{{{{- {var} = omit {var} $name }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        _untaken(pad, f"range $left, $_ := {var}", names, v.known),
        *[f"{pad}{{{{- if {v.held.strip('()')} }}}}", f"{pad}claims:", f"{pad}  - name: {v.claim_text}"] * claims,
        *[f"{pad}{{{{- end }}}}"] * claims,
        f"{pad}{{{{- end }}}}",
    ]


def _map_edits(lines: list[str], where: Site, names: list[str], state: str, rel: str, v: _Vars) -> tuple[int, list]:
    """The line whose block depth the DRA variables live at, and the edits that take the device key out of the map."""
    pad = re.match(r"\s*", lines[where.toyaml]).group(0)  # type: ignore[union-attr]
    declare = v.declare
    if where.section < 0:
        depths = _depths(lines)
        at = next(j for j in range(where.pod + 1, len(lines)) if bare(lines[j]) in _heads())
        if depths[at] == depths[where.toyaml]:
            return where.toyaml, [
                (where.toyaml, where.toyaml, [pad + declare, *_map_lines(pad, where.var, names, state, v)])
            ]
        # the map is written inside a block (suse-pytorch's `if .Values.resources`): the DRA variables are set at the
        # pod's depth, right after `containers:` (trimming only its line end), so the pod's claim after its last key
        # reads them
        if lines[at] != lines[at].rstrip() or bare(lines[at]) not in _heads() - {"- containers:"}:
            raise NotMapBuilt(f"{rel}:{at + 1}: no `containers:` line to set the DRA variables after")
        ind = " " * (line_indent(lines[at]) + 2)
        edits = [
            (at + 1, at + 1, [ind + declare]),
            (where.toyaml, where.toyaml, _map_lines(pad, where.var, names, state, v)),
        ]
        return at + 1, edits
    owner = parent_line(lines, where.section)
    scope = owner
    others = _other_sections(lines, where, owner)
    if _pod_end(lines, where, _depths(lines)[owner]) < 0:
        # the `resources:` key is written inside a block that closes before the pod spec does (devtron's `if or
        # $limits $requests`): the DRA variables are set right after the sections' variables are, at their depth
        scope = 1 + max(_declared(lines[: where.toyaml], var)[-1] for var in (where.var, *(v for _, v in others)))
    edits = [(scope, scope, [" " * line_indent(lines[owner]) + declare])]
    # each section built in a variable (`limits:` and `requests:`) gives its device key up; the last writes the claim
    sections = sorted([(where.section, where.var), *others])
    for k, (section, var) in enumerate(sections):
        guard = re.fullmatch(rf"\{{\{{-?\s*if\s+{re.escape(var)}\s*-?\}}\}}", lines[section - 1].strip())
        at = section - 1 if guard else section
        pad = " " * line_indent(lines[section])
        edits.append((at, at, _section_lines(pad, var, names, state, v, k == len(sections) - 1)))
    return scope, edits


def _other_sections(lines: list[str], where: Site, owner: int) -> list[tuple[int, str]]:
    """The other sections of the `resources:` key at `owner` written from a variable of their own as the site's is
    (devtron's `requests:` from `toYaml $requests` beside `limits:` from `toYaml $limits`): (section line, variable)."""
    out = []
    for j in range(owner + 1, block_end(lines, owner)):
        m = _TOYAML.match(lines[j])
        if not m or j == where.toyaml or (not m.group(4) and m.group(1)):
            continue
        section = parent_line(lines, j) if m.group(4) else _key_above(lines, j)
        if (
            is_key(lines[section], "limits", "requests")
            and section != where.section
            and parent_line(lines, section) == owner
        ):
            out.append((section, m.group(2) or m.group(3)))
    return out


def _pod_end(lines: list[str], where: Site, level: int) -> int:
    """The line after the pod spec's last key and the `end`s that close its last blocks, when it is at block depth
    `level` (where template variables set at that depth are still set); else -1."""
    end = block_end(lines, where.pod)
    depths = [*_depths(lines), _depths([*lines, ""])[-1]]  # and after the last line
    while end < len(lines) and depths[end] > level and is_control(lines[end]):
        end += 1  # the `end`s that close the pod's last blocks (`{{- with .Values.tolerations }}`)
    return end if depths[end] == level else -1


def spec_define(chart: str, rel: str) -> str:
    """The name of the claim-spec define a template's rewrite writes."""
    stem = re.sub(r"[^\w]+", "", Path(rel).stem)
    return f"{chart}.{stem}.draClaimSpec"


SHARED_SPEC_FILE = "templates/_dra.tpl"


def _shared_spec(chart: str, written: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """Templates whose claim-spec defines are the same text but for their names (tonic's two ML workers, each
    building its resources map alike): each reads one `<chart>.draClaimSpec`, written in its own file, in place of
    its own; `written` as it is (each template's rel, text, rewritten text and defines) when they differ."""
    shared = f"{chart}.draClaimSpec"
    starts = [define.find(f'{{{{- define "{spec_define(chart, rel)}" -}}}}') for rel, _, _, define in written]
    specs = {
        define[at:].replace(f'"{spec_define(chart, rel)}"', f'"{shared}"')
        for (rel, _, _, define), at in zip(written, starts, strict=True)
    }
    if len(written) < 2 or min(starts) < 0 or len(specs) != 1 or any(f'"{shared}"' in w[2] for w in written):
        return written
    out = [
        (rel, text, after.replace(f'"{spec_define(chart, rel)}"', f'"{shared}"'), define[:at])
        for (rel, text, after, define), at in zip(written, starts, strict=True)
    ]
    header = "{{- /* The claim spec of the DRA ResourceClaimTemplates the templates write (values: dra.*) */}}\n"
    return [*out, (SHARED_SPEC_FILE, "", "", header + specs.pop())]


def rewrite(
    text: str,
    rel: str,
    chart: str,
    where: Site,
    specs: dict[str, dict[str, Any]],
    enabled: str,
    several: Several | None = None,
    tolerate: tuple[str, ...] | None = None,
    beside: list[int] | None = None,
    known: str = "",
    self_tolerated: frozenset[str] = frozenset(),
    shares: str = "",
) -> tuple[str, str]:
    """The template with the DRA branch, and the claim-spec define (appended to the template). `several`: the map
    may hold several device resources at once (one request for each). `tolerate`: the resources the DRA branch
    tolerates when the pod writes its own tolerations in a form that reads no values list (None: all). `beside`: the
    device key lines the pod writes outside the map (keys_beside). `self_tolerated`: the resources the pod tolerates
    itself in every render that asks for them, with no values list's help (self_tolerated). `shares`: the slices of
    the device that keep a whole map on its device plugin (patterns.shares_regex), read where the map is one
    variable and the pod writes no device key beside it."""
    lines = text.splitlines()
    name = _metadata_line(lines, "name", where.pod)
    if name is None:
        raise NotMapBuilt(f"{rel}: the workload's metadata.name is not one line")
    stem = re.sub(r"[^\w]+", "", Path(rel).stem)
    define = spec_define(chart, rel)
    root = "$." if any(block.startswith(("range", "with")) for block, _ in _open_blocks(lines, where.toyaml)) else "."
    enabled = enabled.replace(".Values.", f"{root}Values.", 1) if enabled.startswith(".Values.") else enabled
    named = {r: _request(spec) or _CLAIM for r, spec in specs.items()}
    claims = tuple(named.items()) if not several and set(named.values()) != {_CLAIM} else ()
    shares = shares if where.section < 0 and not beside else ""
    v = _Vars(f"{chart}.{stem}.draClaimName" if several else "", root, known, claims, shares)
    args = v.args
    claimed = f"and {enabled} {v.held}"
    # the migration tolerates the device's taint for a count of 0 too (it drops the key, the pod claims nothing):
    # with several, each resource the map held with a count, 0 too, is in $draTaken (the claim's counts in $draCounts)
    keyed = f"and {enabled} $draTaken" if several else f'and {enabled} (ne {_KEY} "")'
    # the workload's name as its template writes it, then a hash of the claim spec (a spec cannot change)
    written = name.strip("\"'")
    own_name = f'{written}-{{{{ include "{define}" {args} | sha256sum | trunc 8 }}}}'
    existing = f"{root}Values.dra.existingClaimTemplate"
    template_name = f"{{{{ with {existing} }}}}{{{{ . }}}}{{{{ else }}}}{own_name}{{{{ end }}}}"
    scope, edits = _map_edits(lines, where, list(specs), enabled, rel, v)
    if beside:
        edits += _beside_edits(lines, _beside_in(lines, where, beside, scope, rel, several), list(specs), enabled, v)
    containers = next(j for j in range(where.pod + 1, len(lines)) if bare(lines[j]) in _heads())
    ind = " " * line_indent(lines[containers])
    depths = [*_depths(lines), _depths([*lines, ""])[-1]]  # and after the last line
    level = depths[scope]
    end = _pod_end(lines, where, level)
    if end < 0:
        at = block_end(lines, where.pod)
        raise NotMapBuilt(f"{rel}:{at + 1}: the pod spec ends inside a block the map's variable is not set in")
    pod_lines = [
        f"{ind}{{{{- if {claimed} }}}}",
        f"{ind}resourceClaims:",
        f"{ind}  - name: {v.claim_text}",
        f"{ind}    resourceClaimTemplateName: {template_name}",
        f"{ind}{{{{- end }}}}",
    ]
    tolerations = [
        f"{ind}  - key: {{{{ {_KEY} }}}}",
        f"{ind}    operator: Exists",
        f"{ind}    effect: NoSchedule",
    ]
    own = [j for j in range(where.pod + 1, end) if lines[j] == f"{ind}tolerations:"]
    # the pod's tolerations written before the map is built: the device's name is the one values expression the map's
    # device entry is set with, under the conditions it is set in (swiru's `set $limits .Values.gpu.resourceName ..`)
    early = _early_key(lines, where, level) if own and own[0] < where.toyaml and not several else None
    key = early[0] if early else _KEY
    if early:
        keyed = f"and {enabled} {early[1]}".rstrip()
        tolerations[0] = f"{ind}  - key: {{{{ {key} }}}}"
    given = given_tolerations(lines, own[0]) if own else None
    tolerated = ""
    if given:  # the pod's own tolerations may tolerate the device's taint already (helix' values-eks.yaml): the
        # migration then adds none, nor does the chart
        tolerated = tolerated_test(f"{chart}.{stem}.draTolerated", key, given)
    untolerated = ""  # several: the counts of the resources the pod's own tolerations do not tolerate
    if several:  # a toleration for each device resource the map held, that the pod does not tolerate already
        inside = tolerated.replace(" .Values.", " $.Values.")  # read in a `range`, from the root
        unless = f"{{{{- if not {inside} }}}}" if tolerated else ""
        listed = _listed(several.tolerate)
        untolerated = "$draTaken" if given else f"(pick $draTaken {listed})"
        if given and self_tolerated & set(specs):  # and the pod's own entries (suse-pytorch's MIG profiles')
            untolerated = f"(omit $draTaken {_listed(tuple(sorted(self_tolerated & set(specs))))})"
        tolerations = [
            f"{ind}  {{{{- range {_KEY}, $_ := {untolerated} }}}}{unless}",
            *tolerations,
            f"{ind}  {{{{- end }}}}" + ("{{- end }}" if tolerated else ""),
        ]

    def merge(cond: str) -> list[tuple[int, int, list[str]]]:
        """The edits that append the DRA toleration to the pod's own list under `cond`: in place, or, for a list the
        pod writes before the map is built (devtron's `{{- if .Values.tolerations }}` above the containers), the
        list moved after the pod's last key with the switch on, where the map's device is known."""
        try:
            e = _merge_tolerations(lines, own[0], ind, cond, tolerations, rel, key_expr="" if several else key)
        except NotIdiomatic as err:
            raise NotMapBuilt(
                f"{rel}:{own[0] + 1}: the pod writes its own tolerations in a shape the DRA toleration cannot be "
                f"merged into ({err.why}); a second `tolerations:` key would drop them: add the toleration by hand"
            ) from None
        if e.index < where.toyaml and not early:
            if _open_blocks(lines, e.index) != _open_blocks(lines, end):
                raise NotMapBuilt(f"{rel}:{own[0] + 1}: the pod's tolerations come before the map is built")
            head = " " * line_indent(lines[e.index])
            kept = [f"{head}{{{{- if not {enabled} }}}}", *lines[e.index : e.stop], f"{head}{{{{- end }}}}"]
            moved = [f"{ind}{{{{- if {enabled} }}}}", *e.lines, f"{ind}{{{{- end }}}}"]
            return [(e.index, e.stop, kept), (end, end, moved)]
        if not _taken_with(lines, e.index, early[2] if early else where.toyaml, level):
            raise _NotTaken(f"{rel}:{own[0] + 1}: the pod's tolerations are in a block the map may be built without")
        return [(e.index, e.stop, e.lines)]

    # the pod writes its own list (suse-pytorch tolerates nvidia.com/gpu itself): the DRA toleration goes into that
    # list, for the resources it does not tolerate; a second `tolerations:` would drop the first
    untaken = several.tolerate if several else tuple(n for n in specs if tolerate is None or n in tolerate)
    if given and not several:  # the values list the reference render tolerated with is checked in the template
        untaken = tuple(n for n in specs if n not in self_tolerated)
    only = "" if several or len(untaken) == len(specs) else f" (has {key} (list {_listed(untaken)}))"
    try:
        if own and given and (several or untaken):  # nor those the values list it writes tolerates (an AMD file's)
            cond = keyed if several else f"{keyed}{only} (not {tolerated})"
            edits += merge(cond)
        elif own and not given and untaken:
            edits += merge(f"{keyed}{only}")
    except _NotTaken:
        if several or early:
            raise
        # the pod writes its tolerations in branches the map is not built in (smg-gateway's values list, else its own
        # GPU toleration, under an `if or` of the pod's scheduling keys): the DRA toleration goes into each
        branches = _Branches(own, level, ind, where.toyaml, rel)
        # `given`: a values list the branches read, whose test's define goes at the end of the template
        more, given = _branch_tolerations(lines, branches, keyed, tolerations, f"{chart}.{stem}.draTolerated")
        edits += more
    if not own and (not several or several.tolerate):
        cond = f"and {enabled} {untolerated}" if several else keyed
        pod_lines += [f"{ind}{{{{- if {cond} }}}}", f"{ind}tolerations:", *tolerations, f"{ind}{{{{- end }}}}"]
    edits.append((end, end, pod_lines))
    # the workload document ends at a `---`, at the `end` that closes the variable's block, at the `else` that leaves
    # it (nemo-retriever's standalone Deployment, before the split mode's), or with the file
    doc_end = next(
        (
            j
            for j in range(end, len(lines))
            if lines[j].strip() == "---" or depths[j + 1] < level or (depths[j] == level and _LEAVES.match(lines[j]))
        ),
        len(lines),
    )
    while doc_end > end and depths[doc_end] > level and is_control(lines[doc_end - 1]):
        doc_end -= 1  # a `---` that opens the next document inside a block of its own (devtron's secondaryWorkload)
    namespace = _metadata_line(lines, "namespace", where.pod)
    rct = [  # on a cluster without DRA's GA API the render fails with a clear message, as the other rewrites' do
        *capabilities_check(claimed, "set dra.enabled=false").splitlines(),  # where the pod takes a claim
        *_over_limit(claimed, several is not None),
        f"{{{{- if {claimed} (not {existing}) }}}}",
        "---",
        "apiVersion: resource.k8s.io/v1",
        "kind: ResourceClaimTemplate",
        "metadata:",
        f"  name: {own_name}",
        *([f"  namespace: {namespace}"] if namespace else []),
        "spec:",
        "  spec:",
        f'    {{{{- include "{define}" {args} | nindent 4 }}}}',
        "{{- end }}",
    ]
    edits.append((doc_end, doc_end, rct))
    out = list(lines)
    # from the end; at one place the edit listed later first, so the pod's keys come before the claim template
    for _, start, stop, new in sorted(((n, *e) for n, e in enumerate(edits)), key=lambda e: (e[1], e[2], e[0]))[::-1]:
        out[start:stop] = new
    body = [f'{{{{- define "{define}" -}}}}']
    if given:
        body[:0] = tolerated_define(f"{chart}.{stem}.draTolerated")
    if several:
        body = [*body[:-1], *several.defines(v.define, define)]
    else:
        for k, (resource, spec) in enumerate(specs.items()):
            body.append(f'{{{{- {"if" if k == 0 else "else if"} eq .key "{resource}" -}}}}')
            body += _spec_text(spec, rel).rstrip("\n").splitlines()
        body += ["{{- end -}}", "{{- end }}"]
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), "\n".join(body) + "\n"


@dataclass(frozen=True)
class _Branches:
    """The pod's `tolerations:` lines (own) at its indent (ind), the map's DRA variables set at block depth `level`,
    the map written at line `toyaml`."""

    own: list[int]
    level: int
    ind: str
    toyaml: int
    rel: str


_BLOCK_ACTION = re.compile(r"\{\{-?\s*(if|with|range|define|block|end|else)\b(.*?)-?\}\}")


@dataclass(frozen=True)
class _Block:
    """A template block: its opening line, its `end` line, its word, the lines of its `else`s and whether the last
    is a plain `else`."""

    start: int
    end: int
    word: str
    elses: tuple[int, ...]
    plain: bool

    def branches(self) -> list[tuple[int, int]]:
        """Each branch's lines: from its opening or `else` line to the next (or the `end`)."""
        cuts = [self.start, *self.elses, self.end]
        return list(zip(cuts[:-1], cuts[1:], strict=True))


def _blocks(lines: list[str]) -> list[_Block]:
    """Every template block of the lines."""
    stack: list[tuple[int, str, list[int], list[bool]]] = []
    out = []
    for j, line in enumerate(lines):
        for m in _BLOCK_ACTION.finditer(line):
            if m.group(1) == "end" and stack:
                start, word, elses, plain = stack.pop()
                out.append(_Block(start, j, word, tuple(elses), bool(plain) and plain[-1]))
            elif m.group(1) == "else" and stack:
                stack[-1][2].append(j)
                stack[-1][3].append(not m.group(2).strip())
            elif m.group(1) not in ("end", "else"):
                stack.append((j, m.group(1), [], []))
    return out


def _literal_tolerations(lines: list[str], at: int) -> tuple[int, list[str]] | None:
    """For `tolerations:` at `at` followed by literal items only (smg-gateway's own `- key: nvidia.com/gpu`): where the
    items end and the taints they tolerate as the device plugin's (`Exists`, NoSchedule or any effect); else None."""
    stop = at + 1
    while stop < len(lines) and not is_control(lines[stop]) and line_indent(lines[stop]) > line_indent(lines[at]):
        stop += 1
    try:
        items = yaml.safe_load("\n".join(lines[at:stop]))["tolerations"] if stop > at + 1 else None
    except yaml.YAMLError:
        return None
    if not isinstance(items, list) or not all(isinstance(t, dict) for t in items) or "{{" in "".join(lines[at:stop]):
        return None
    return stop, [str(t.get("key") or "") for t in items if _tolerates([t], str(t.get("key") or "*"))]


def _branch_tolerations(
    lines: list[str], b: _Branches, keyed: str, tolerations: list[str], define: str
) -> tuple[list[tuple[int, int, list[str]]], str | None]:
    """The DRA toleration in each of the pod's `tolerations:` lists written in branches the map is not built in:
    appended to a values list (unless it tolerates the taint) or to a literal list (unless one of its items does),
    and, for each `if` around them that may render none of them while the map holds a device, a plain `else`
    writing the DRA toleration alone (the migration adds it to a pod with no tolerations); and a values list read
    (the `define` that tests it is then added), or None."""
    edits: list[tuple[int, int, list[str]]] = []
    read = None
    for at in b.own:
        if at < b.toyaml:
            raise NotMapBuilt(f"{b.rel}:{at + 1}: the pod's tolerations come before the map is built")
        given = given_tolerations(lines, at)
        literal = _literal_tolerations(lines, at) if given is None else None
        if literal:
            unless = f" (not (has {_KEY} (list {_listed(tuple(literal[1]))})))" if literal[1] else ""
            if "" not in literal[1]:  # a toleration of every taint tolerates the device's too
                edits.append(
                    (
                        literal[0],
                        literal[0],
                        [f"{b.ind}{{{{- if {keyed}{unless} }}}}", *tolerations, f"{b.ind}{{{{- end }}}}"],
                    )
                )
            continue
        if given is None:
            raise NotMapBuilt(
                f"{b.rel}:{at + 1}: the pod's tolerations have a shape the DRA toleration cannot be merged into"
            )
        read, tolerated = given, tolerated_test(define, _KEY, given)
        try:
            e = _merge_tolerations(lines, at, b.ind, f"{keyed} (not {tolerated})", tolerations, "")
        except NotIdiomatic as err:
            raise NotMapBuilt(
                f"{b.rel}:{at + 1}: the pod's tolerations have a shape the DRA toleration cannot be merged into "
                f"({err.why})"
            ) from None
        if e is not None:
            edits.append((e.index, e.stop, e.lines))
    replaced = [(i, stop) for i, stop, _ in edits if stop > i]
    around = {
        block
        for at in b.own
        for block in _blocks(lines)
        if block.start < at < block.end
        and not block.start < b.toyaml < block.end
        and not any(i <= block.start < stop for i, stop in replaced)
    }
    depth = _depths(lines)
    fresh = [f"{b.ind}tolerations:", *tolerations]
    for block in sorted(around, key=lambda k: k.start):
        if depth[block.start] < b.level:
            continue
        cuts = (block.start, *block.elses, block.end)
        if block.word != "if" or any(len(_BLOCK_ACTION.findall(lines[k])) != 1 for k in cuts):
            raise NotMapBuilt(  # an `else` goes right before the line that ends a branch: one action on it
                f"{b.rel}:{block.start + 1}: the pod's tolerations are in a `{block.word}` block the map may be "
                "built without"
            )
        for first, stop in block.branches():  # a branch that writes none of the pod's lists writes the DRA one
            if not any(first < at < stop for at in b.own):
                edits.append((stop, stop, [f"{b.ind}{{{{- if {keyed} }}}}", *fresh, f"{b.ind}{{{{- end }}}}"]))
        if not block.plain:  # none of the branches may render: a plain `else` for the DRA toleration alone
            edits.append((block.end, block.end, [f"{b.ind}{{{{- else if {keyed} }}}}", *fresh]))
    return edits, read


_DEFINE = re.compile(r'^\{\{-?\s*define\s+"([^"]+)"', re.M)


def _union(texts: list[str], where: str) -> str:
    """The defines the rewrites of a template's maps wrote (each its claim spec, and the tolerations test of a pod
    whose own list comes from values), each once: a define of one name must read alike in each."""
    found: dict[str, str] = {}
    for text in texts:
        starts = [m.start() for m in _DEFINE.finditer(text)]
        for start, stop in zip(starts, [*starts[1:], len(text)], strict=True):
            name = _DEFINE.match(text, start).group(1)  # type: ignore[union-attr]
            if found.setdefault(name, text[start:stop]) != text[start:stop]:
                raise NotMapBuilt(f"{where}: the template's maps need claim specs of their own ({name})")
    return "".join(found.values())


def _listed(names: tuple[str, ...]) -> str:
    return " ".join(json.dumps(n) for n in names)


def build(
    root: Path,
    rels: set[str],
    rules: RuleSet,
    originals: dict[str, list[dict[str, Any]]],
    migrated: dict[str, list[dict[str, Any]]],
    claim_templates: dict[str, Any],
    opt_in: bool,
    alternative: Alternative,
    rendered: dict[str, list[str]],
    tolerated: dict[str, set[str]] | None = None,
    together: frozenset[str] = frozenset(),
) -> list[Change]:
    """The changes for the templates `rels`, each a map-built resources site (site); `rendered`: the device resources
    each template renders with the value sets the chart is used with; `tolerated`: the resources each template's
    pods tolerate themselves in those renders (self_tolerated); `together`: the templates a container of which asks
    for several device resources at once in a value set the proof renders (at_once). Raises NotMapBuilt."""
    chart = chart_name(root)
    values_path = root / "values.yaml"
    values = values_path.read_text(encoding="utf-8") if values_path.is_file() else ""
    changes, all_names = [], []
    written: list[tuple[str, str, str, str]] = []  # each template's rel, text, rewritten text and defines
    for rel in sorted(rels):
        original = (root / rel).read_text(encoding="utf-8")
        text = split_inline_lists(original)  # renders the same; the pod's `tolerations:` key alone takes the DRA entry
        found = sites(text)
        if not found or rel not in originals:
            raise NotMapBuilt(f"{rel}: no resources map built in a variable")
        literal = tuple(dict.fromkeys(n for where in found for n in where.literal))
        listed = [*rendered.get(rel, []), *literal, *values_names(values, rules)]
        names = [n for n in dict.fromkeys(listed) if _migrated(n, rules)]
        specs, several, tolerate = _specs(
            rel, names, originals[rel], migrated[rel], claim_templates, alternative, rules, rel in together
        )
        # the reference render alone cannot tell (the MIG run's nvidia.com/gpu)
        own = frozenset((tolerated or {}).get(rel, set()))
        tolerate = tuple(n for n in tolerate if n not in own)
        if several:
            several = dataclasses.replace(several, tolerate=tuple(n for n in several.tolerate if n not in own))
        shares = shares_regex(rules, names, listed)
        after, defines = text, []
        for where in reversed(found):  # from the last, so the lines of those above stay where they are
            beside = keys_beside(text.splitlines(), where, rules)
            after, define = rewrite(
                after,
                rel,
                chart,
                where,
                specs,
                ".Values.dra.enabled",
                several,
                tolerate,
                beside,
                known_regex(rules),
                own,
                shares,
            )
            defines.append(define)
        written.append((rel, original, after, _union(defines, f"{rel}:{found[0].toyaml + 1}")))
        all_names += names
    for rel, text, after, define in written if (root / SHARED_SPEC_FILE).exists() else _shared_spec(chart, written):
        changes.append(Change(rel, text or None, after + define))
    resource = " or ".join(dict.fromkeys(all_names))
    changes += conventions(root, "", not opt_in)
    changes.append(
        Change(
            "values.yaml",
            values if values_path.is_file() else None,
            values + values_block(values, '""', resource, not opt_in),
        )
    )
    return changes
