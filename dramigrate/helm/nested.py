"""Pattern A in containers that `range` blocks write, nested in any way, each container with its own count (NVIDIA's
DeepStream chart: one Deployment per node and pod, `range $container := $pod.containers`, then `range $index, $gpu
:= $node.gpus` inside it for one container per GPU of the node, each `nvidia.com/gpu: 1`, or in its `else` one
container with `len $node.gpus`).

The manifest migration gives such a pod one claim, `gpu`, from one claim template in the pod's namespace: a
container that alone asks for the device takes the claim whole (the request named `gpu`), several each take a request
named after the container (`{name: gpu, request: <container>-gpu}`) with its own count. The items decide all of that,
so the rewrite has the template say it as it renders:

- at the top of the workload's document, a gather that renders nothing: the template's own `if`/`range`/`with`
  blocks around the containers (copied, the text and output left out) that records, in the order the containers
  render, each container's name as its `name:` line writes it and the count its device key renders
  (`$draAsks`: name -> count, `$draOrder`: the names), then the claim template's name (the workload's name and a
  hash of the spec);
- with `dra.enabled` and some container asking, a ResourceClaimTemplate document right before the workload, in its
  namespace (the workload's `namespace:` line), and the pod's `resourceClaims` and the device plugin's toleration;
- each container's `resources:` gets `claims` when its name is in `$draAsks` (`request:` when several ask), and
  each device key an `if not $.Values.dra.enabled` around it.

The claim's spec is one define in the claim template file, given the names and counts. The names follow the
migration's: `<container>-gpu` cut to 63 characters (a container's name is a DNS label already).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dramigrate.helm.foldguards import _arg
from dramigrate.helm.listed import Listed, switched_off
from dramigrate.helm.patterns import _INLINE_IF, _LITERAL_KEY, count_expression
from dramigrate.helm.rewrite import RewriteError, _actions
from dramigrate.helm.templatelines import action_body, bare, is_key

if TYPE_CHECKING:
    from dramigrate.helm.model import PodDelta
    from dramigrate.rules import RuleSet

ASKS, ORDER, NAME, TEMPLATE = "$draAsks", "$draOrder", "$draName", "$draClaimTemplate"
_BLOCKS = ("if", "with", "range")
_DECLARED = re.compile(r"\$([A-Za-z_]\w*)\s*(?:,\s*\$([A-Za-z_]\w*)\s*)?:=")
_USED = re.compile(r"\$([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"^\$[A-Za-z_]\w*\s*=(?!=)")
_RANDOM = re.compile(r"\b(?:randAlphaNum|randAlpha|randNumeric|randAscii|randInt|uuidv4|now)\b")  # a new name each read
_MUTATES = re.compile(r"\b(?:set|unset|merge|mergeOverwrite|mustMerge|mustMergeOverwrite)\b(?:\s+\$(\w+))?")
_NAME_KEY = re.compile(r"^(\s*)(-\s+)?name:\s*(\S.*)$")


@dataclass
class _Node:
    """A block of the gather (`if`/`with`/`range`, its `else` branches) or one line of it."""

    head: str  # the action's body (`range $container := $pod.containers`), or a line of the gather
    branches: list[list[_Node]] = field(default_factory=lambda: [[]])
    elses: list[str] = field(default_factory=list)  # the body of each `else` action, in order
    leaf: bool = False
    content: bool = False  # a name or a device key: what the gather is for

    def kept(self) -> bool:
        return self.content if self.leaf else any(n.kept() for b in self.branches for n in b)


def _body(text: str, start: int, end: int) -> str:
    return action_body(text[start:end]).strip()


def _masked(text: str) -> str:
    """`text` with every action blanked (newlines kept): what YAML text the template writes around them."""
    out = list(text)
    for start, end, _ in _actions(text):
        for i in range(start, end):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def _offsets(lines: list[str]) -> list[int]:
    out, at = [], 0
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


def _stack_at(text: str, offset: int) -> list[tuple[str, str, int, bool]]:
    """The blocks open at `offset`: (word, body, offset, in an else)."""
    stack: list[tuple[str, str, int, bool]] = []
    for start, end, word in _actions(text):
        if start >= offset:
            break
        if word in (*_BLOCKS, "define", "block"):
            stack.append((word, _body(text, start, end), start, False))
        elif word == "else" and stack:
            stack[-1] = (*stack[-1][:3], True)
        elif word == "end" and stack:
            stack.pop()
    return stack


def _visible(text: str, offset: int) -> set[str]:
    """The template variables declared where `offset` is (in the blocks open there, or at the top)."""
    frames: list[set[str]] = [set()]
    for start, end, word in _actions(text):
        if start >= offset:
            break
        body = _body(text, start, end)
        if word in (*_BLOCKS, "define", "block"):
            frames.append(set())
        elif word == "end" and len(frames) > 1:
            frames.pop()
            continue
        elif word == "else":
            frames[-1] = set()
        for m in _DECLARED.finditer(body):
            frames[-1].update(x for x in m.groups() if x)
    return set().union(*frames)


def as_string(value: str, rel: str, line: int, what: str = "the container's name") -> str:
    """A YAML value the template writes (`"{{ $container.name }}-{{ $index }}"`, `{{ .name | quote }}`) as a Go
    expression of the string YAML reads from it."""
    value = value.strip()
    quoted = re.fullmatch(r'"([^"\\]*)"|\'([^\']*)\'', re.sub(r"\{\{.*?\}\}", lambda m: "x" * len(m.group(0)), value))
    if quoted:
        value = value[1:-1]
    parts = re.split(r"(\{\{.*?\}\})", value)
    if any(p.startswith("{{-") or p.endswith("-}}") for p in parts[1::2]) or any(
        re.search(r"[\"'#{}\\%]|:\s", p) for p in parts[::2]
    ):
        raise RewriteError(f"{rel}:{line}: {what} `{value}` is not one the rewrite reads")
    actions = [p[2:-2].strip() for p in parts[1::2]]
    if len(actions) == 1 and not "".join(parts[::2]) and not quoted:
        actions[0] = re.sub(r"\s*\|\s*s?quote$", "", actions[0])  # `{{ .name | quote }}`: YAML reads the name
    if any(
        (a.split() or [""])[0] in (*_BLOCKS, "else", "end", "define", "block", "template") or ":=" in a for a in actions
    ) or (_RANDOM.search(value)):
        raise RewriteError(f"{rel}:{line}: {what} `{value}` is not one the rewrite reads")
    if not actions:
        return json.dumps(value)
    fmt = "".join(p if k % 2 == 0 else "%v" for k, p in enumerate(parts))
    return f"printf {json.dumps(fmt)} " + " ".join(_arg(a) for a in actions)


@dataclass
class _Key:
    index: int  # 0-based line
    resource: str
    count: str  # the Go expression of its count
    res: int  # its container's `resources:` line


def _keys(lines: list[str], rel: str, rules: RuleSet) -> list[_Key]:
    from dramigrate.helm.templatelines import parent_line

    out = []
    for i, line in enumerate(lines):
        guarded = _INLINE_IF.match(line)
        m = _LITERAL_KEY.match(guarded.group(3) if guarded else line)
        if not (m and rules.is_device_candidate(m.group(2)) and rules.lookup(m.group(2)) is not None):
            continue
        section = parent_line(lines, i)
        res = parent_line(lines, section) if section >= 0 else -1
        if section < 0 or not is_key(lines[section], "limits", "requests") or not is_key(lines[res], "resources"):
            raise RewriteError(f"{rel}:{i + 1}: the device key is not under a container's `resources.limits`")
        count = count_expression(m.group(3))
        if count is None:
            raise RewriteError(f"{rel}:{i + 1}: the device count is not one expression")
        out.append(_Key(i, m.group(2), _arg(count), res))
    if not out:
        raise RewriteError(f"{rel}: no device key under a container's `resources`")
    if len({k.resource for k in out}) > 1:
        raise RewriteError(f"{rel}: the containers ask for several device resources")
    return out


def _ends_in_text(line: str) -> bool:
    """Whether a line ends in something other than a blank: a line of the rewrite's below it that starts with
    `{{-` then takes only its newline (the render stays byte-identical with the switch off)."""
    return bool(line) and not line[-1].isspace()


def _declares(head: str) -> set[str]:
    """The variables a block's action declares (`range $i, $port := $c.ports`: i and port)."""
    return {x for m in _DECLARED.finditer(head) for x in m.groups() if x}


def _gather(text: str, start: int, stop: int, events: dict[int, str], rel: str) -> list[str]:
    """The gather's lines: the blocks of text[start:stop] around `events` (offset -> a line of the gather), the
    output and the blocks without an event left out."""
    root = _Node("", leaf=False)
    stack = [root]
    mutations: list[tuple[str, _Node | None]] = []  # a declaration that changes a map, the block owning the map
    marks = sorted(events)
    items: list[tuple[int, str, str]] = [(at, "event", events[at]) for at in marks]
    for a, b, word in _actions(text[start:stop]):
        items.append((start + a, word or "", _body(text, start + a, start + b)))
    items.sort(key=lambda x: x[0])
    for _, word, body in items:
        top = stack[-1]
        if word == "event":
            top.branches[-1].append(_Node(body, leaf=True, content=True))
        elif word in _BLOCKS:
            node = _Node(body)
            top.branches[-1].append(node)
            stack.append(node)
        elif word == "else":
            if len(stack) == 1:
                raise RewriteError(f"{rel}: an `else` of a block outside the containers' lines")
            top.elses.append(body)
            top.branches.append([])
        elif word == "end":
            if len(stack) == 1:
                raise RewriteError(f"{rel}: an `end` of a block outside the containers' lines")
            stack.pop()
        elif word in ("define", "block", "template", "break", "continue"):
            raise RewriteError(f"{rel}: `{word}` among the containers' lines")
        elif _ASSIGNED.match(body):
            raise RewriteError(f"{rel}: `{body}` among the containers' lines sets a variable of the template")
        elif _DECLARED.match(body):
            if m := _MUTATES.search(body):  # the block whose own variable holds the map changed, if one does
                owner = next((n for n in reversed(stack[1:]) if m.group(1) in _declares(n.head)), None)
                mutations.append((body, owner))
            top.branches[-1].append(_Node(body, leaf=True))
    if len(stack) != 1:
        raise RewriteError(f"{rel}: a block around the containers' lines ends after them")
    for body, owner in mutations:
        # loft's `$_ := unset $portMap "name"` in a `range` over a container's ports: a map of a block the gather
        # leaves out (no name or count in it), which the gather neither reads nor changes; any other map it might
        if owner is None or owner.kept():
            raise RewriteError(f"{rel}: `{body}` among the containers' lines changes a map the template reads")
    out: list[str] = []

    def emit(nodes: list[_Node], depth: int) -> None:
        pad = "  " * depth
        for node in nodes:
            if node.leaf:
                out.extend(f"{pad}{x}" for x in node.head.split("\n"))
                continue
            if not node.kept():
                continue
            out.append(f"{pad}{{{{- {node.head} }}}}")
            for k, branch in enumerate(node.branches):
                if k:
                    out.append(f"{pad}{{{{- {node.elses[k - 1]} }}}}")
                emit(branch, depth + 1)
            out.append(f"{pad}{{{{- end }}}}")

    emit(root.branches[0], 0)
    return out


def _joined_tolerations(
    lines: list[str], own: list[int], pad: str, cond: str, tol_text: list[str], tolerations: list[Any], rel: str
) -> tuple[int, int, list[str]]:
    """The edit that joins the DRA tolerations (`tol_text`, rendered under `cond`) to the pod's own `tolerations:`
    (at the one line of `own`), as pattern A does (tolerationedits._merge_tolerations): after the values list it
    renders, only where that list does not tolerate the taint already (the migration adds none then)."""
    from dramigrate.helm.tolerationedits import _merge_tolerations

    if len(own) != 1:
        raise RewriteError(f"{rel}:{own[1] + 1}: the pod writes `tolerations:` twice beside the containers' `range`")
    key = str(tolerations[0].get("key", "")) if len(tolerations) == 1 else ""
    edit = _merge_tolerations(lines, own[0], pad, cond, tol_text, rel, key)  # NotIdiomatic for a shape it does not take
    if edit is None:
        raise RewriteError(f"{rel}:{own[0] + 1}: the pod's own tolerations are not joined")
    return edit.index, edit.stop, edit.lines


def rewrite(text: str, rel: str, rules: RuleSet, deltas: list[PodDelta], chart: str) -> Listed:
    """The rewrite of a template whose pod's containers `range` blocks write (see the module's docstring);
    RewriteError when the template or the migration's claims have another shape."""
    from dramigrate.helm.idiomatic import DRA_OFF, capabilities_check
    from dramigrate.helm.templatelines import block_end, child_indent, line_indent, parent_line
    from dramigrate.helm.tolerationedits import _dump_list

    lines = text.splitlines()
    if any(n in text for n in (ASKS, ORDER, NAME, TEMPLATE)):
        raise RewriteError(f"{rel}: the template uses the rewrite's variables itself")
    keys = _keys(lines, rel, rules)
    resource = keys[0].resource
    match = rules.lookup(resource)
    assert match is not None
    device_class, base = match.rule.device_class, match.rule.request
    if not device_class or match.rule.report_only:
        raise RewriteError(f"{rel}: {resource} is not a whole device the migration moves to a claim")
    claims = {d.claim for d in deltas}
    for d in deltas:
        requests = (d.spec.get("spec", {}).get("devices") or {}).get("requests") or []
        classes = {str((r.get("exactly") or r).get("deviceClassName") or "") for r in requests}
        if d.labels or d.affinity or d.params or classes != {device_class}:
            raise RewriteError(f"{rel}: the migration's claim of a pod has more than requests of {device_class}")
    if len(claims) != 1:
        raise RewriteError(f"{rel}: the migration names the pods' claims differently")
    claim = claims.pop()
    masked = _masked(text).splitlines()
    offsets = _offsets(lines)

    def list_line(res: int) -> int:
        for i in range(res - 1, -1, -1):
            if masked[i].strip() and line_indent(masked[i]) < line_indent(lines[res]) and bare(masked[i]).endswith(":"):
                if is_key(masked[i], "containers", "initContainers"):
                    return i
                if not masked[i].lstrip().startswith("-"):
                    break
        return -1

    lists = {list_line(k.res) for k in keys}
    if len(lists) != 1 or -1 in lists:
        raise RewriteError(f"{rel}: the device keys are not all in one pod's `containers:` list")
    cl = lists.pop()
    if not is_key(masked[cl], "containers"):
        raise RewriteError(f"{rel}:{cl + 1}: the device keys are in init containers")
    end = next(
        (
            i
            for i in range(cl + 1, len(lines))
            if masked[i].strip()
            and (
                line_indent(masked[i]) < line_indent(masked[cl])
                or (line_indent(masked[i]) == line_indent(masked[cl]) and not masked[i].lstrip().startswith("-"))
            )
        ),
        len(lines),
    )
    start, stop = offsets[cl + 1] if cl + 1 < len(lines) else len(text), offsets[end] if end < len(lines) else len(text)
    items = [i for i in range(cl + 1, end) if re.match(r"^\s*-\s", masked[i])]
    if not items:
        raise RewriteError(f"{rel}:{cl + 1}: the containers are not list items of the template's lines")
    item_indent = min(line_indent(masked[i]) for i in items)
    events: dict[int, str] = {}
    # an item's first line -> its `name:` lines and their expressions: several in the branches of an `if` (loft's
    # `name: {{ $container.name | quote }}`, else `name: "container-{{ $containerIndex }}"`)
    names: dict[int, dict[int, str]] = {}
    current, owner = -1, {}
    for i in range(cl + 1, end):
        if re.match(r"^\s*-\s", masked[i]) and line_indent(masked[i]) == item_indent:
            current = i
        m = _NAME_KEY.match(lines[i])
        if (
            m
            and masked[i][: m.start(3)] == lines[i][: m.start(3)]
            and current >= 0
            and ((m.group(2) and i == current) or (not m.group(2) and line_indent(masked[i]) == item_indent + 2))
        ):
            value = lines[i][m.start(3) :]
            names.setdefault(current, {})[i] = as_string(value, rel, i + 1)
        owner[i] = current
    for k in keys:
        item = owner.get(k.index, -1)
        if item not in names or k.res < max(names[item]):
            raise RewriteError(f"{rel}:{k.index + 1}: the container asking for the device has no `name:` line above")
        for at, name in names[item].items():
            events[offsets[at] + len(lines[at]) - len(lines[at].lstrip())] = f"{{{{- {NAME} = {name} }}}}"
        key_at = offsets[k.index] + (m.start(3) if (m := _INLINE_IF.match(lines[k.index])) else 0)
        literal = k.count.isdigit()
        if literal and int(k.count) == 0:
            continue  # a count of 0 asks for no device
        asks = f"not (hasKey {ASKS} {NAME})" if literal else f"and (gt (int {k.count}) 0) (not (hasKey {ASKS} {NAME}))"
        events[key_at] = "\n".join(
            [
                f"{{{{- if {asks} }}}}",
                f"  {{{{- $_ := set {ASKS} {NAME} {k.count if literal else f'(int {k.count})'} }}}}",
                f"  {{{{- {ORDER} = append {ORDER} {NAME} }}}}",
                "{{- end }}",
            ]
        )
    gather = _gather(text, start, stop, events, rel)
    # the workload's document: its `apiVersion:` line above the pod, its metadata
    doc = next((i for i in range(cl, -1, -1) if re.match(r"^apiVersion:", masked[i])), -1)
    if doc < 0 or (doc > 0 and not _ends_in_text(lines[doc - 1])):
        raise RewriteError(f"{rel}: the workload's document does not start on a line of its own below a line of text")
    outer = _stack_at(text, offsets[doc])
    inner = _stack_at(text, start)
    if inner[: len(outer)] != outer or any(w not in ("if", "with") or e for w, _, _, e in inner[len(outer) :]):
        raise RewriteError(f"{rel}: the containers are inside blocks the rewrite does not repeat")
    for word, body, _, _ in reversed(inner[len(outer) :]):
        gather = [f"{{{{- {word} {body[len(word) :].strip()} }}}}", *("  " + x for x in gather), "{{- end }}"]
    meta = {}
    top = next((i for i in range(doc + 1, cl) if masked[i].rstrip() == "metadata:"), cl)
    for i in range(top + 1, cl):
        if masked[i].strip() and line_indent(masked[i]) == 0:
            break
        m = re.match(r"^  (name|namespace):\s*(\S.*)$", lines[i])
        if m and masked[i][: m.start(2)] == lines[i][: m.start(2)]:
            if _stack_at(text, offsets[i]) != outer:
                raise RewriteError(f"{rel}:{i + 1}: the workload's {m.group(1)} is inside a block")
            meta.setdefault(m.group(1), lines[i][m.start(2) :].strip())
    if "name" not in meta:
        raise RewriteError(f"{rel}: the workload's metadata.name is not one line")
    workload = as_string(meta["name"], rel, doc + 1, "the workload's name")
    needed = {v for line in gather for v in _USED.findall(line)} - {"_"}
    declared = {x for line in gather for m in _DECLARED.finditer(line) for x in m.groups() if x}
    missing = needed - declared - _visible(text, offsets[doc]) - {n[1:] for n in (ASKS, ORDER, NAME, TEMPLATE)}
    for v in _USED.findall(workload + meta.get("namespace", "")):
        if v not in _visible(text, offsets[doc]):
            missing.add(v)
    if missing:
        raise RewriteError(
            f"{rel}: the containers read `${sorted(missing)[0]}`, set after the workload's document starts"
        )
    spec_define = f"{chart}.draClaimSpec"
    args = f'(dict "root" $ "asks" {ASKS} "order" {ORDER})'
    on = "$.Values.dra.enabled"
    hashed = f"include {json.dumps(spec_define)} {args} | sha256sum | trunc 8"
    head = [
        f"{{{{- /* DRA (values: dra.*): the containers below that ask for {resource}, by name, and their counts */}}}}",
        f"{{{{- {ASKS} := dict }}}}",
        f"{{{{- {ORDER} := list }}}}",
        f'{{{{- {NAME} := "" }}}}',
        *gather,
        f'{{{{- {TEMPLATE} := printf "%s-%s" {_arg(workload)} ({hashed}) }}}}',
        *capabilities_check(f"and {on} {ORDER}", DRA_OFF).splitlines(),
        f"{{{{- if and {on} {ORDER} (not $.Values.dra.existingClaimTemplate) }}}}",
        "apiVersion: resource.k8s.io/v1",
        "kind: ResourceClaimTemplate",
        "metadata:",
        f"  name: {{{{ {TEMPLATE} }}}}",
        *([f"  namespace: {meta['namespace']}"] if "namespace" in meta else []),
        "spec:",
        "  spec:",
        f"    {{{{- include {json.dumps(spec_define)} {args} | nindent 4 }}}}",
        "---",
        "{{- end }}" if doc else "{{ end -}}",  # at the file's top: the newline it ends with is not the document's
    ]
    # the pod: its claim and the device plugin's toleration before `containers:`
    pod = parent_line(lines, cl)
    if pod < 0 or not _ends_in_text(lines[cl - 1]):
        raise RewriteError(f"{rel}:{cl + 1}: the line above `containers:` ends in a blank")
    pad = " " * line_indent(lines[cl])
    tolerations = [t for d in deltas for t in d.tolerations]
    tolerations = [t for k, t in enumerate(tolerations) if t not in tolerations[:k]]
    if any(
        masked[i].strip().startswith("resourceClaims:") and line_indent(masked[i]) == len(pad)
        for i in range(pod + 1, block_end(lines, pod))
    ):
        raise RewriteError(f"{rel}: the pod writes its own resourceClaims beside the containers of a `range`")
    own = [
        i
        for i in range(pod + 1, block_end(lines, pod))
        if masked[i].strip().startswith("tolerations:") and line_indent(masked[i]) == len(pad)
    ]
    tol_text = [f"{pad}  {t}" for t in _dump_list(tolerations)] if tolerations else []
    edits: list[tuple[int, int, list[str]]] = []
    if tol_text and own:  # loft's `tolerations:` then `{{ toYaml $.Values.tolerations | indent 8 }}`: joined, one key
        edits.append(_joined_tolerations(lines, own, pad, f"and {on} {ORDER}", tol_text, tolerations, rel))
        tol_text = []
    pod_lines = [
        f"{pad}{{{{- if and {on} {ORDER} }}}}",
        f"{pad}resourceClaims:",
        f"{pad}  - name: {claim}",
        f"{pad}    resourceClaimTemplateName: {{{{ $.Values.dra.existingClaimTemplate | default {TEMPLATE} }}}}",
        *([f"{pad}tolerations:", *tol_text] if tol_text else []),
        f"{pad}{{{{- end }}}}",
    ]
    edits += [(doc, doc, head), (cl, cl, pod_lines)]
    for item in sorted({owner[k.index] for k in keys}):  # the container's name, as the gather reads it
        for at, name in names[item].items():
            if not _ends_in_text(lines[at]):
                raise RewriteError(f"{rel}:{at + 1}: the container's `name:` line ends in a blank")
            edits.append((at + 1, at + 1, [f"{' ' * line_indent(lines[at])}{{{{- {NAME} = {name} }}}}"]))
    for res in sorted({k.res for k in keys}):
        if not _ends_in_text(lines[res]):
            raise RewriteError(f"{rel}:{res + 1}: the container's `resources:` line ends in a blank")
        name = NAME
        ind = " " * child_indent(lines, res)
        edits.append(
            (
                res + 1,
                res + 1,
                [
                    f"{ind}{{{{- if and {on} (hasKey {ASKS} {name}) }}}}",
                    f"{ind}claims:",
                    f"{ind}  - name: {claim}",
                    f"{ind}  {{{{- if gt (len {ORDER}) 1 }}}}",
                    f'{ind}    request: {{{{ printf "%s-{base}" {name} | trunc 63 | trimSuffix "-" }}}}',
                    f"{ind}  {{{{- end }}}}",
                    f"{ind}{{{{- end }}}}",
                ],
            )
        )
    for k in keys:
        line = lines[k.index]
        if not _INLINE_IF.match(line) and not (_ends_in_text(lines[k.index - 1]) and _ends_in_text(line)):
            raise RewriteError(f"{rel}:{k.index + 1}: the device key's line, or the one above it, ends in a blank")
        edits.append((k.index, k.index + 1, switched_off(line, on)))
    out = list(lines)
    for index, stop_at, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out[index:stop_at] = new
    after = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    several = "gt (len $.order) 1"
    section = (
        f"{{{{- /* DRA (values: dra.*): the claim of each pod of {rel}, a request per container asking (its "
        "ResourceClaimTemplate is written there, beside the pod, named with a hash of this spec) */}}\n"
        f"{{{{- define {json.dumps(spec_define)} -}}}}\n"
        "devices:\n"
        "  requests:\n"
        "  {{- range .order }}\n"
        f'    - name: {{{{ if {several} }}}}{{{{ printf "%s-{base}" . | trunc 63 | trimSuffix "-" }}}}'
        f"{{{{ else }}}}{base}{{{{ end }}}}\n"
        "      exactly:\n"
        "        deviceClassName: {{ $.root.Values.dra.deviceClassName }}\n"
        "        count: {{ get $.asks . }}\n"
        "  {{- end }}\n"
        "{{- end }}\n"
    )
    return Listed(text, after, section, resource, device_class)
