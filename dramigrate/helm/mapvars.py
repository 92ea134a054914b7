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
after the workload plus a hash of the spec. run.py proves (L) and (D) with prove_switch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.idiomatic import (
    _block_end,
    _control,
    _Dumper,
    _indent,
    _merge_tolerations,
    _metadata_line,
    _parent,
    conventions,
    pod_delta,
    values_block,
)
from dramigrate.helm.rewrite import Change, RewriteError, chart_name
from dramigrate.rules import NATIVE_RESOURCES, RuleSet

# `{{- toYaml $resources | nindent 12 }}` (or `$resources | toYaml`) alone on its line
_TOYAML = re.compile(r"^(\s*)\{\{-?\s*(?:toYaml\s+(\$\w+)|(\$\w+)\s*\|\s*toYaml)\s*\|\s*nindent\s+\d+\s*-?\}\}\s*$")
_BLOCK_WORD = re.compile(r"\{\{-?\s*(if|with|range|define|block|end)\b")
# an entry whose name is not literal (`dict $key 1`, `dict (.Values.gpu.resource | default "nvidia.com/gpu") 1`)
_DICT_ENTRY = re.compile(r"\bdict\s+(\$\w+|\$?\.Values[\w.]*|\(\s*\$?\.Values[^()]*\))\s+")
_LITERAL_ENTRY = re.compile(r'\bdict\s+"([^"]+)"\s+')  # `merge $limits (dict "nvidia.com/gpu" 1)` (tvarr)
# an entry set into the map or one of its sections, its name not literal (`set $res.limits .Values.gpu.resourceName 1`)
_SET_ENTRY = re.compile(r"\bset\s+\$\w+(?:\.\w+)*\s+(\$\w+|\$?\.Values[\w.]*|\(\s*\$?\.Values[^()]*\))\s+")
_SECTIONS = ("limits:", "requests:")
_CLAIM = "gpu"
_COUNT, _KEY = "$draCount", "$draKey"

Alternative = Callable[[list[dict[str, Any]], str, str], tuple[list[dict[str, Any]], list[dict[str, Any]], dict]]


class NotMapBuilt(RewriteError):
    """The template's device request is not a map built in variables that this rewrite takes."""


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


def site(text: str) -> Site | None:
    """The map-built resources of a template: a `resources:` key whose value is `toYaml $var` (or its `limits:` or
    `requests:` section's value, tvarr's `$limits`), `$var` set with `:=` once in a block enclosing the toYaml line and
    given a `dict` entry whose name comes from values or a variable (or, for a section, a literal name); else None."""
    lines = text.splitlines()
    depths = _depths(lines)
    for i, line in enumerate(lines):
        m = _TOYAML.match(line)
        parent = _parent(lines, i)
        section = parent if lines[parent].strip() in _SECTIONS else -1
        owner = _parent(lines, section) if section >= 0 else parent
        if not m or lines[owner].strip() != "resources:":  # the map may be built between the two
            continue
        var = m.group(2) or m.group(3)
        sets = _declared(lines[:i], var)
        if len(sets) != 1 or min(depths[sets[0] : i + 1]) < depths[sets[0]]:
            return None
        if section < 0 and depths[sets[0]] != depths[i]:
            return None
        built = lines[_first_part(lines, sets[0], depths) : i]
        literal = tuple(dict.fromkeys(n for x in built for n in _LITERAL_ENTRY.findall(x)))
        if not (literal and section >= 0) and not any(e.search(x) for x in built for e in (_DICT_ENTRY, _SET_ENTRY)):
            return None
        containers = next((j for j in range(i - 1, -1, -1) if lines[j].strip() in ("containers:", "- containers:")), -1)
        if containers < 0 or _indent(lines[containers]) >= _indent(lines[owner]):
            return None
        return Site(i, var, _parent(lines, containers), section, literal)
    return None


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


def _spec_text(spec: dict[str, Any], rel: str) -> str:
    """A claim spec as template text, its request's count the count the map held."""
    data = json.loads(json.dumps(spec.get("spec", spec)))  # the ResourceClaimTemplate's spec.spec
    requests = data.get("devices", {}).get("requests", [])
    if len(requests) != 1 or requests[0].get("name") != _CLAIM:
        raise NotMapBuilt(f"{rel}: the migration's claim asks for {len(requests)} device requests")
    exact = requests[0].get("exactly", requests[0])
    exact["count"] = "@@COUNT@@"
    device_class, exact["deviceClassName"] = exact.get("deviceClassName"), "@@CLASS@@"
    text = _yaml(data).replace("'@@COUNT@@'", "{{ int .count }}")
    return text.replace("'@@CLASS@@'", f"{{{{ .Values.dra.deviceClassName | default {json.dumps(device_class)} }}}}")


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def _specs(
    rel: str,
    names: list[str],
    originals: list[dict[str, Any]],
    migrated: list[dict[str, Any]],
    claim_templates: dict[str, Any],
    alternative: Alternative,
    rules: RuleSet,
) -> dict[str, dict[str, Any]]:
    """The migration's claim spec for each device resource of `names`: the rendered one's from the migration, the
    others' from the migration of the same objects asking for that resource instead."""
    rendered = _names(originals, rules)
    if len(rendered) != 1:
        held = f" ({', '.join(rendered)})" if rendered else ""
        raise NotMapBuilt(
            f"{rel}: the map holds {len(rendered)} device resources{held} in the reference render; the map rewrite "
            "takes one device resource a map (one request of one claim): several in one map (MIG profiles side by "
            "side) need the claim written by hand"
        )
    deltas = pod_delta(originals, migrated, claim_templates)
    if len(deltas) != 1:
        raise NotMapBuilt(f"{rel}: {len(deltas)} pods of the template ask for devices")
    out = {}
    for name in names:
        delta = deltas[0]
        if name != rendered[0]:
            renamed, other, rcts = alternative(originals, rendered[0], name)
            delta = pod_delta(renamed, other, rcts)[0]
        toleration = [{"key": name, "operator": "Exists", "effect": "NoSchedule"}]
        if delta.claim != _CLAIM or delta.tolerations not in ([], toleration) or delta.labels:
            raise NotMapBuilt(f"{rel}: the migration of {name} adds more than the claim and its toleration")
        out[name] = delta.spec
    return out


def _untaken(pad: str, keys: str, names: list[str]) -> str:
    """In the DRA branch, after the device keys the claim takes are out: a line that fails the render when the map
    still asks for an extended resource (`keys`: a range clause over its names, as rules.is_device_candidate reads
    one), a name set in values the rewrite does not migrate (`nvidia.com/mig-1g.5gb` where it takes `nvidia.com/gpu`):
    else the pod would ask its device plugin for it and get no claim."""
    message = (  # a literal, as the other guards of the rewrite: Helm shows it as it is
        f"dra.enabled: the container resources ask for a device resource the DRA claim of the chart does not take "
        f"(it takes {', '.join(names)}): set dra.enabled=false to request it from its device plugin"
    )
    device = f'and (contains "/" $left) (not (regexMatch {json.dumps(NATIVE_RESOURCES.pattern)} $left))'
    fail = f"{{{{ fail {json.dumps(message)} }}}}"
    return f"{pad}{{{{- {keys} }}}}{{{{- if {device} }}}}{fail}{{{{ end }}}}{{{{- end }}}}"


def _map_lines(pad: str, var: str, names: list[str], state: str) -> list[str]:
    """Before the toYaml line: the DRA branch takes the device key out of the map and adds the claim."""
    listed = " ".join(json.dumps(n) for n in names)
    left = f'range $left, $_ := merge dict (get {var} "limits" | default dict) (get {var} "requests" | default dict)'
    return [
        f"{pad}{{{{- if {state} }}}}",
        f"{pad}{{{{- range $name := list {listed} }}}}",
        f'{pad}{{{{- range $part := list "limits" "requests" }}}}',
        f"{pad}{{{{- $section := get {var} $part | default dict }}}}",
        f"{pad}{{{{- if hasKey $section $name }}}}",
        f"{pad}{{{{- {_COUNT} = get $section $name }}}}{{{{- {_KEY} = $name }}}}",
        f"{pad}{{{{- $kept := omit $section $name }}}}",
        f"{pad}{{{{- if $kept }}}}{{{{- $_ := set {var} $part $kept }}}}"
        f"{{{{- else }}}}{{{{- $_ := unset {var} $part }}}}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        _untaken(pad, left, names),
        f'{pad}{{{{- if gt (int {_COUNT}) 0 }}}}{{{{- $_ := set {var} "claims" (list (dict "name" "{_CLAIM}")) }}}}'
        "{{- end }}",
        f"{pad}{{{{- end }}}}",
    ]


def _section_lines(pad: str, var: str, names: list[str], state: str) -> list[str]:
    """Before a section built in a variable (`limits:` of `toYaml $limits`): the DRA branch takes the device key out
    of the section and writes the container's claim beside it."""
    listed = " ".join(json.dumps(n) for n in names)
    return [
        f"{pad}{{{{- if {state} }}}}",
        f"{pad}{{{{- range $name := list {listed} }}}}",
        f"{pad}{{{{- if hasKey {var} $name }}}}",
        f"{pad}{{{{- {_COUNT} = get {var} $name }}}}{{{{- {_KEY} = $name }}}}{{{{- {var} = omit {var} $name }}}}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
        _untaken(pad, f"range $left, $_ := {var}", names),
        f"{pad}{{{{- if gt (int {_COUNT}) 0 }}}}",
        f"{pad}claims:",
        f"{pad}  - name: {_CLAIM}",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
    ]


def _map_edits(lines: list[str], where: Site, names: list[str], state: str, rel: str) -> tuple[int, list]:
    """The line whose block depth the DRA variables live at, and the edits that take the device key out of the map."""
    pad = re.match(r"\s*", lines[where.toyaml]).group(0)  # type: ignore[union-attr]
    declare = f'{{{{- {_COUNT} := 0 }}}}{{{{- {_KEY} := "" }}}}'
    if where.section < 0:
        depths = _depths(lines)
        at = next(j for j in range(where.pod + 1, len(lines)) if lines[j].strip() in ("containers:", "- containers:"))
        if depths[at] == depths[where.toyaml]:
            return where.toyaml, [
                (where.toyaml, where.toyaml, [pad + declare, *_map_lines(pad, where.var, names, state)])
            ]
        # the map is written inside a block (suse-pytorch's `if .Values.resources`): the DRA variables are set at the
        # pod's depth, right after `containers:` (trimming only its line end), so the pod's claim after its last key
        # reads them
        if lines[at] != lines[at].rstrip() or lines[at].strip() != "containers:":
            raise NotMapBuilt(f"{rel}:{at + 1}: no `containers:` line to set the DRA variables after")
        ind = " " * (_indent(lines[at]) + 2)
        edits = [
            (at + 1, at + 1, [ind + declare]),
            (where.toyaml, where.toyaml, _map_lines(pad, where.var, names, state)),
        ]
        return at + 1, edits
    owner = _parent(lines, where.section)
    guard = re.fullmatch(rf"\{{\{{-?\s*if\s+{re.escape(where.var)}\s*-?\}}\}}", lines[where.section - 1].strip())
    at = where.section - 1 if guard else where.section
    pad = " " * _indent(lines[where.section])
    return owner, [
        (owner, owner, [" " * _indent(lines[owner]) + declare]),
        (at, at, _section_lines(pad, where.var, names, state)),
    ]


def rewrite(
    text: str, rel: str, chart: str, where: Site, specs: dict[str, dict[str, Any]], enabled: str
) -> tuple[str, str]:
    """The template with the DRA branch, and the claim-spec define (appended to the template)."""
    lines = text.splitlines()
    name = _metadata_line(lines, "name")
    if name is None:
        raise NotMapBuilt(f"{rel}: the workload's metadata.name is not one line")
    stem = re.sub(r"[^\w]+", "", Path(rel).stem)
    define = f"{chart}.{stem}.draClaimSpec"
    args = f'(dict "key" {_KEY} "count" {_COUNT} "Values" .Values)'
    claimed = f"and {enabled} (gt (int {_COUNT}) 0)"
    # the migration tolerates the device's taint for a count of 0 too (it drops the key, the pod claims nothing)
    keyed = f'and {enabled} (ne {_KEY} "")'
    # the workload's name as its template writes it, then a hash of the claim spec (a spec cannot change)
    written = name.strip("\"'")
    own_name = f'{written}-{{{{ include "{define}" {args} | sha256sum | trunc 8 }}}}'
    template_name = f"{{{{ with .Values.dra.existingClaimTemplate }}}}{{{{ . }}}}{{{{ else }}}}{own_name}{{{{ end }}}}"
    scope, edits = _map_edits(lines, where, list(specs), enabled, rel)
    containers = next(
        j for j in range(where.pod + 1, len(lines)) if lines[j].strip() in ("containers:", "- containers:")
    )
    ind = " " * _indent(lines[containers])
    end = _block_end(lines, where.pod)
    depths = [*_depths(lines), _depths([*lines, ""])[-1]]  # and after the last line
    level = depths[scope]
    while end < len(lines) and depths[end] > level and _control(lines[end]):
        end += 1  # the `end`s that close the pod's last blocks (`{{- with .Values.tolerations }}`)
    if depths[end] != level:
        raise NotMapBuilt(f"{rel}:{end + 1}: the pod spec ends inside a block the map's variable is not set in")
    pod_lines = [
        f"{ind}{{{{- if {claimed} }}}}",
        f"{ind}resourceClaims:",
        f"{ind}  - name: {_CLAIM}",
        f"{ind}    resourceClaimTemplateName: {template_name}",
        f"{ind}{{{{- end }}}}",
    ]
    tolerations = [
        f"{ind}  - key: {{{{ {_KEY} }}}}",
        f"{ind}    operator: Exists",
        f"{ind}    effect: NoSchedule",
    ]
    own = [j for j in range(where.pod + 1, end) if lines[j] == f"{ind}tolerations:"]
    given = re.fullmatch(r"\{\{-?\s*(?:with|if)\s+(\S+)\s*-?\}\}", lines[own[0] - 1].strip()) if own else None
    if own and given:
        # the pod's own tolerations may tolerate the device's taint already (helix' values-eks.yaml): the migration
        # then adds none, nor does the chart
        tolerated = f'(include "{chart}.{stem}.draTolerated" (dict "key" {_KEY} "tolerations" {given.group(1)}))'
        e = _merge_tolerations(lines, own[0], ind, f"{keyed} (not {tolerated})", tolerations, rel)
        if e.index < where.toyaml:
            raise NotMapBuilt(f"{rel}:{own[0] + 1}: the pod's tolerations come before the map is built")
        if not _taken_with(lines, e.index, where.toyaml, level):
            raise NotMapBuilt(f"{rel}:{own[0] + 1}: the pod's tolerations are in a block the map may be built without")
        edits.append((e.index, e.stop, e.lines))
    else:
        pod_lines += [f"{ind}{{{{- if {keyed} }}}}", f"{ind}tolerations:", *tolerations, f"{ind}{{{{- end }}}}"]
    edits.append((end, end, pod_lines))
    # the workload document ends at a `---`, at the `end` that closes the variable's block, or with the file
    doc_end = next(
        (j for j in range(end, len(lines)) if lines[j].strip() == "---" or depths[j + 1] < level), len(lines)
    )
    namespace = _metadata_line(lines, "namespace")
    rct = [
        f"{{{{- if {claimed} (not .Values.dra.existingClaimTemplate) }}}}",
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
        body[:0] = [
            f'{{{{- define "{chart}.{stem}.draTolerated" -}}}}',
            "{{- range .tolerations }}",
            '{{- if and (eq (.operator | default "Equal") "Exists") (has (.key | default "") (list "" $.key))'
            ' (has (.effect | default "") (list "" "NoSchedule")) }}true{{ end }}',
            "{{- end }}",
            "{{- end }}",
        ]
    for k, (resource, spec) in enumerate(specs.items()):
        body.append(f'{{{{- {"if" if k == 0 else "else if"} eq .key "{resource}" -}}}}')
        body += _spec_text(spec, rel).rstrip("\n").splitlines()
    body += ["{{- end -}}", "{{- end }}"]
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), "\n".join(body) + "\n"


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
) -> list[Change]:
    """The changes for the templates `rels`, each a map-built resources site (site); `rendered`: the device resources
    each template renders with the value sets the chart is used with. Raises NotMapBuilt."""
    chart = chart_name(root)
    values_path = root / "values.yaml"
    values = values_path.read_text(encoding="utf-8") if values_path.is_file() else ""
    if re.search(r"^dra:", values, re.M):
        raise RewriteError("values.yaml already has a top-level `dra:` key")
    changes, all_names = [], []
    for rel in sorted(rels):
        text = (root / rel).read_text(encoding="utf-8")
        where = site(text)
        if where is None or rel not in originals:
            raise NotMapBuilt(f"{rel}: no resources map built in a variable")
        listed = [*rendered.get(rel, []), *where.literal, *values_names(values, rules)]
        names = [n for n in dict.fromkeys(listed) if _migrated(n, rules)]
        specs = _specs(rel, names, originals[rel], migrated[rel], claim_templates, alternative, rules)
        after, define = rewrite(text, rel, chart, where, specs, ".Values.dra.enabled")
        changes.append(Change(rel, text, after + define))
        all_names += names
    resource = " or ".join(dict.fromkeys(all_names))
    changes += conventions(root, "", not opt_in)
    changes.append(Change("values.yaml", values or None, values + values_block(values, '""', resource, not opt_in)))
    return changes
