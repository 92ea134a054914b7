"""Pattern A in containers that a `range` over a values list writes, each item a container with its own count (a
Nebius docker-deployment chart: `range .Values.containers.containers`, then `with .resources`, `with .limits` and
`{{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}`; its init containers the same way).

The manifest migration gives such a pod one claim; a container that asks for the device alone takes it whole. So the
rewrite reads each item's count as the template renders it (the limit's key when it renders, else the request's),
gathers the items that ask for the device in a `range` over the same lists, and, with `dra.enabled`:
- the pod gets the claim and the device plugin's toleration when some item asks (a list of counts, `$draCounts`,
  built at the top of the pod spec, rendering nothing);
- the container that asks gets `claims: [{name: <claim>}]` under its `resources:`, its device keys an extra `not
  $.Values.dra.enabled` in their `if`;
- the claim template file builds the same list and renders one ResourceClaimTemplate with that item's count; with
  several items asking it fails the render by name: the migration names each container's request after its
  container, which these charts may not name steadily (the Nebius chart's names end in `randAlphaNum`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dramigrate.helm.patterns import _INLINE_IF, _LITERAL_KEY, count_expression
from dramigrate.helm.rewrite import RewriteError, _actions
from dramigrate.helm.templatelines import action_body, bare, is_key

if TYPE_CHECKING:
    from dramigrate.helm.model import PodDelta
    from dramigrate.helm.templatelines import Edit
    from dramigrate.rules import RuleSet

COUNTS = "$draCounts"
_PATH = re.compile(r"\.[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_ITEM_PATH = re.compile(r"(?<![\w$)\]])\.(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?(?![\w.])")  # `.gpu`, `.a.b`, `.`


@dataclass
class _Key:
    index: int  # 0-based line of the device key
    resource: str
    section: str  # the line above: `limits:` or `requests:`
    rendered: str  # from the item: the key's count where it renders, else a value that is not above 0
    opened: int  # offset of the `range` that writes its container
    header: str  # that range, read from the root (`range $.Values.containers.containers`)
    outer: tuple[str, ...]  # the root's conditions around that range (read from the root)
    inline: bool  # the key is under an `if` of its own line


@dataclass
class Listed:
    """The rewrite of one template: its text after, the claim template file's section, the device resource, the
    device class of the claim."""

    before: str
    after: str
    section: str
    resource: str
    device_class: str


def _body(text: str, start: int, end: int) -> str:
    return action_body(text[start:end])


def _from_item(expr: str, context: str) -> str:
    """An expression written where `.` is the item's field `context` (`.resources.limits`), read from the item."""
    if not context:
        return expr
    if expr.strip() == ".":
        return context
    return re.sub(r"(?<![\w$)\]])\.(?!Values\b)([A-Za-z_]\w*)", lambda m: f"{context}.{m.group(1)}", expr)


def _relative(expr: str, context: str, rel: str) -> str:
    """An expression read from the item as written where `.` is the item's field `context`."""
    if not context:
        return expr

    def one(m: re.Match[str]) -> str:
        path = m.group(0)
        if path == context:
            return "."
        if path.startswith(context + "."):
            return path[len(context) :]
        raise RewriteError(
            f"{rel}: the device count reads `{path}`, outside `{context}` where the container's claims go"
        )

    return _ITEM_PATH.sub(one, expr)


def _key(text: str, rel: str, index: int, offset: int, line: str, resource: str, section: str) -> _Key:
    """The device key at line `index` read from the item of the `range` that writes its container."""
    guarded = _INLINE_IF.match(line)
    value = _LITERAL_KEY.match(guarded.group(3) if guarded else line)
    assert value is not None
    count = count_expression(value.group(3))
    if count is None:
        raise RewriteError(f"{rel}:{index + 1}: the device count is not one expression")
    stack: list[tuple[str, str, bool, int]] = []  # word, its expression, in an else, offset
    for start, end, word in _actions(text):
        if start >= offset:
            break
        body = _body(text, start, end)
        if word in ("if", "with", "range", "define", "block"):
            stack.append((word, body[len(word) :].strip(), False, start))
        elif word == "else" and stack:
            stack[-1] = (*stack[-1][:2], True, stack[-1][3])
        elif word == "end" and stack:
            stack.pop()
    from dramigrate.helm.goexpr import from_root, grouped
    from dramigrate.helm.idiomatic import _LIST_ITEM_NEXT, _rooted

    ranges = [k for k, (word, _, _, at) in enumerate(stack) if word == "range" and _LIST_ITEM_NEXT.match(text, at)]
    if not ranges:
        raise RewriteError(f"{rel}:{index + 1}: the device key is not in a container a `range` writes")
    k = ranges[-1]
    outer, context = [], ""
    for word, cond, in_else, _ in stack[:k]:  # the root's blocks around the range
        if in_else or word not in ("if", "with"):
            raise RewriteError(f"{rel}:{index + 1}: the `range` of containers is inside `{word} {cond}`")
        if word == "with" and re.fullmatch(r"\$?\.Values(?:\.[A-Za-z_]\w*)+", _rooted(cond, context)):
            context = _rooted(cond, context).removeprefix("$")
        elif word == "if":
            outer.append(from_root(grouped(_rooted(cond, context))))
        else:
            raise RewriteError(f"{rel}:{index + 1}: the `range` of containers is inside `with {cond}`")
    listed = stack[k][1]
    if ":=" in listed:
        raise RewriteError(f"{rel}:{index + 1}: the `range` of containers declares variables (`{listed}`)")
    listed = _rooted(listed, context).removeprefix("$")
    if not re.fullmatch(r"\.Values(?:\.[A-Za-z_]\w*)+", listed):
        raise RewriteError(f"{rel}:{index + 1}: the `range` of containers is over `{listed}`, not a values list")
    conditions, item = [], ""
    for word, cond, in_else, _ in stack[k + 1 :]:  # the item's blocks around the key
        if in_else or word not in ("if", "with") or "$" in cond.replace("$.Values", ""):
            raise RewriteError(f"{rel}:{index + 1}: the device key is inside `{word} {cond}` of the item")
        if word == "with":
            if not _PATH.fullmatch(cond) or cond.startswith(".Values"):
                raise RewriteError(f"{rel}:{index + 1}: the device key is inside `with {cond}` of the item")
            item = _from_item(cond, item)
            conditions.append(item)
        else:
            conditions.append(grouped(_from_item(cond, item)))
    if guarded:
        conditions.append(grouped(_from_item(guarded.group(2), item)))
    count = _from_item(count, item)
    if "$" in count.replace("$.Values", ""):
        raise RewriteError(f"{rel}:{index + 1}: the device count `{count}` reads a template variable")
    parts = list(dict.fromkeys([*conditions, grouped(count)]))
    rendered = parts[0] if len(parts) == 1 else f"(and {' '.join(parts)})"
    return _Key(
        index, resource, section, rendered, stack[k][3], f"range $.Values{listed[7:]}", tuple(outer), bool(guarded)
    )


def keys(text: str, rel: str, rules: RuleSet) -> list[_Key]:
    """The template's device keys, each in a container a `range` over a values list writes; RewriteError when one is
    elsewhere."""
    from dramigrate.helm.templatelines import parent_line

    lines = text.splitlines()
    out, offset = [], 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        row = line.rstrip("\n")
        guarded = _INLINE_IF.match(row)
        m = _LITERAL_KEY.match(guarded.group(3) if guarded else row)
        if m and rules.is_device_candidate(m.group(2)) and rules.lookup(m.group(2)) is not None:
            up = parent_line(lines, i)
            if up >= 0 and is_key(lines[up], "limits", "requests"):
                out.append(_key(text, rel, i, offset, row, m.group(2), bare(lines[up])[:-1]))
        offset += len(line)
    if not out:
        raise RewriteError(f"{rel}: no device key in a container a `range` writes")
    if len({k.resource for k in out}) > 1:
        raise RewriteError(f"{rel}: the containers ask for several device resources")
    return out


def rewrite(text: str, rel: str, rules: RuleSet, delta: PodDelta, chart: str) -> Listed:
    """The rewrite of a template whose pod's containers a `range` over a values list writes, each with its own count
    (see the module's docstring); RewriteError when the template or the migration's claim has another shape."""
    from dramigrate.helm.idiomatic import DRA_OFF, _sentinel_yaml, capabilities_check, fail_when
    from dramigrate.helm.templatelines import Edit, block_end, child_indent, line_indent, parent_line
    from dramigrate.helm.tolerationedits import _dump_list

    found = keys(text, rel, rules)
    lines = text.splitlines()
    requests = (delta.spec.get("spec", {}).get("devices") or {}).get("requests") or []
    if delta.namespaced or delta.labels or delta.affinity or delta.params or len(requests) != 1:
        raise RewriteError(f"{rel}: the migration's claim for the containers of a `range` has more than one request")
    if COUNTS in text:
        raise RewriteError(f"{rel}: the template uses `{COUNTS}` itself")
    containers: dict[int, dict[str, _Key]] = {}  # the range's offset -> section -> key
    res_lines: dict[int, int] = {}  # the range's offset -> its container's `resources:` line
    for k in found:
        if containers.setdefault(k.opened, {}).setdefault(k.section, k) is not k:
            raise RewriteError(f"{rel}:{k.index + 1}: a container of the `range` writes its {k.section} key twice")
        res = parent_line(lines, parent_line(lines, k.index))
        if res < 0 or not is_key(lines[res], "resources") or res_lines.setdefault(k.opened, res) != res:
            raise RewriteError(f"{rel}:{k.index + 1}: the device keys are not under one `resources:` of the container")
    heads = {k.opened: k for k in found}
    counts = {
        at: _either([own[s].rendered for s in ("limits", "requests") if s in own]) for at, own in containers.items()
    }
    pods = {parent_line(lines, _list_key(lines, res_lines[at])) for at in containers}
    if len(pods) != 1 or -1 in pods:
        raise RewriteError(f"{rel}: the containers of the `range` blocks are in several pods")
    pod = pods.pop()
    on = "$.Values.dra.enabled"
    gather = [f"{{{{- {COUNTS} := list }}}}"]
    for at in sorted(containers):
        key = heads[at]
        loop = (
            f"{{{{- {key.header} }}}}{{{{ $n := int {counts[at]} }}}}{{{{ if gt $n 0 }}}}"
            f"{{{{ {COUNTS} = append {COUNTS} $n }}}}{{{{ end }}}}{{{{ end }}}}"
        )
        if key.outer:
            cond = key.outer[0] if len(key.outer) == 1 else f"and {' '.join(key.outer)}"
            loop = f"{{{{- if {cond} }}}}{loop}{{{{ end }}}}"
        gather.append(loop)
    edits: list[Edit] = []
    pad = " " * child_indent(lines, pod)
    name_define, spec_define = f"{chart}.draClaimTemplateName", f"{chart}.draClaimSpec"
    args = f'(dict "root" $ "count" (first {COUNTS}))'
    named = f"(include {json.dumps(name_define)} {args})"
    pod_lines = [
        *gather,
        f"{{{{- if and {on} {COUNTS} }}}}",
        "resourceClaims:",
        f"  - name: {delta.claim}",
        f"    resourceClaimTemplateName: {{{{ $.Values.dra.existingClaimTemplate | default {named} }}}}",
    ]
    if delta.tolerations:
        if any(
            lines[i].strip().startswith("tolerations:")
            for i in range(pod + 1, block_end(lines, pod))
            if line_indent(lines[i]) == len(pad)
        ):
            raise RewriteError(f"{rel}: the pod writes its own tolerations beside the containers of a `range`")
        pod_lines += ["tolerations:", *(f"  {t}" for t in _dump_list(delta.tolerations))]
    pod_lines.append("{{- end }}")
    edits.append(Edit(pod + 1, pod + 1, [pad + x for x in pod_lines]))
    for at, res in res_lines.items():
        key = heads[at]
        context = _context_at(text, res, lines, key.opened, rel)
        mine = _relative(counts[at], context, rel)
        ind = " " * child_indent(lines, res)
        claim = [
            f"{ind}{{{{- if and {on} (gt (int {mine}) 0) }}}}",
            f"{ind}claims:",
            f"{ind}  - name: {delta.claim}",
            f"{ind}{{{{- end }}}}",
        ]
        edits.append(Edit(res + 1, res + 1, claim))
    for k in found:
        edits.append(Edit(k.index, k.index + 1, switched_off(lines[k.index], on)))
    after, name = edited_and_named(lines, edits, text, pod, rel)
    device_class = str((requests[0].get("exactly") or requests[0]).get("deviceClassName") or "")
    spec = _sentinel_yaml(delta.spec.get("spec", {}), {requests[0]["name"]: ".count"}, device_class)
    spec = spec.replace("{{ .Values.", "{{ .root.Values.")
    too_many = (
        f"dra.enabled: several containers of {rel} ask for {found[0].resource}; the migration gives each a request "
        "named after its container, which this rewrite does not name: set dra.enabled=false, or give one container "
        "the device"
    )
    check = capabilities_check(f"and {on} {COUNTS}", DRA_OFF)
    section = (
        "".join(f"{x}\n" for x in gather)
        + "\n".join(fail_when(f"and {on} (gt (len {COUNTS}) 1)", too_many))
        + "\n"
        + check
        + f"{{{{- if and {on} (not $.Values.dra.existingClaimTemplate) {COUNTS} }}}}\n"
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata:\n"
        f"  name: {{{{ include {json.dumps(name_define)} {args} }}}}\n"
        "spec:\n"
        "  spec:\n"
        f"    {{{{- include {json.dumps(spec_define)} {args} | nindent 4 }}}}\n"
        "{{- end }}\n"
        f"{{{{- define {json.dumps(spec_define)} -}}}}\n{spec}{{{{- end }}}}\n"
        f"{{{{- define {json.dumps(name_define)} -}}}}\n"
        f"{name}-{{{{ include {json.dumps(spec_define)} . | sha256sum | trunc 8 }}}}\n"
        "{{- end }}\n"
    )
    return Listed(text, after, section, found[0].resource, device_class)


def _either(parts: list[str]) -> str:
    """The count the migration takes: the limit's where it renders, else the request's."""
    return parts[0] if len(parts) == 1 else f"(or {' '.join(parts)})"


def _list_key(lines: list[str], res: int) -> int:
    """The `containers:`/`initContainers:` line above the container whose `resources:` is at line `res`."""
    from dramigrate.helm.templatelines import line_indent

    for i in range(res - 1, -1, -1):
        if is_key(lines[i], "containers", "initContainers") and line_indent(lines[i]) < line_indent(lines[res]):
            return i
    return -1


def _context_at(text: str, index: int, lines: list[str], opened: int, rel: str) -> str:
    """The item's field `.` is at line `index` inside the `range` opened at offset `opened` (its `with` blocks)."""
    offset = sum(len(x) + 1 for x in lines[:index])
    stack: list[tuple[str, str]] = []
    for start, end, word in _actions(text):
        if start >= offset:
            break
        if start < opened:
            continue
        body = _body(text, start, end)
        if word in ("if", "with", "range", "define", "block"):
            stack.append((word, body[len(word) :].strip()))
        elif word == "end" and stack:
            stack.pop()
    context = ""
    for word, cond in stack[1:]:  # the range itself first
        if word == "with":
            context = _from_item(cond, context)
    return context


def edited_and_named(lines: list[str], edits: list[Edit], text: str, pod: int, rel: str) -> tuple[str, str]:
    """The template with the edits made (from the bottom up), and its workload's name as the claim template's define
    reads it (_root_reads)."""
    from dramigrate.helm.idiomatic import _metadata_line

    out = list(lines)
    for e in sorted(edits, key=lambda e: (e.index, e.stop), reverse=True):
        out[e.index : e.stop] = e.lines
    name = _metadata_line(lines, "name", pod)
    if not name:
        raise RewriteError(f"{rel}: the workload's metadata.name is not one line")
    name = _root_reads(name[1:-1] if name[0] == name[-1] and name[0] in "\"'" else name, rel)
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), name


def _root_reads(name: str, rel: str) -> str:
    """The workload's name as a define given (dict "root" $ ...) reads it: what read the root reads `.root`."""

    def action(m: re.Match[str]) -> str:
        body = m.group(0)
        body = re.sub(r'(\b(?:include|template)\s+"[^"]+"\s+)\.(?=\s*(?:[)|}-]|$))', r"\1$", body)
        body = re.sub(r"(?<![\w$)\]])\.(Values|Release|Chart|Capabilities|Template)\b", r"$.\1", body)
        if re.search(r"\$\w", body) or re.search(r"(?<![\w$)\]])\.[A-Za-z_]", body.replace("$.", "")):
            raise RewriteError(f"{rel}: the workload's name reads `{body}`, which its claim template cannot read")
        return body.replace("$.", ".root.").replace("$", ".root")

    return re.sub(r"\{\{.*?\}\}", action, name)


def switched_off(line: str, on: str) -> list[str]:
    """A device key's line rendered only with the DRA switch `on` off: its own inline `if` gains `(not on)`, or an
    `if not` goes around it."""
    from dramigrate.helm.templatelines import line_indent

    guarded = _INLINE_IF.match(line)
    if guarded:
        cond = guarded.group(2)
        cond = cond if re.fullmatch(r"[\w.$]+|\(.*\)", cond) else f"({cond})"
        return [line.replace(guarded.group(2), f"and {cond} (not {on})", 1)]
    p = " " * line_indent(line)
    return [f"{p}{{{{- if not {on} }}}}", line, f"{p}{{{{- end }}}}"]
