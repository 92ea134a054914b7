"""Device keys a `range` over a values map writes beside the chart's own device key (kubeflow/arena's charts:
`{{- range $key, $value := .Values.devices }}` / `{{ $key }}: {{ $value }}` under `limits:` and `requests:`, after
`nvidia.com/gpu: {{ $gpuCount | quote }}`; `arena submit --device amd.com/gpu=1` fills the map). The map's keys are
known only when Helm renders it, so the pattern-A rewrite of the chart's own key takes them at render time: with the
switch on, each key of the map the rule packs migrate leaves the container (the others stay), and the pod's claim
(the migration's one claim for all its devices) gets a request for it after the chart's own one, with the class and
selectors the migration gives that device (looked up by name among those the value sets render, and the others of
their rule pack; a device it does not know fails the render with the way back), named as the migration names them
(the device, then `-2`...: `gpu` and `gpu-2` for nvidia.com/gpu and amd.com/gpu), and the pod a toleration for it.
With the switch off the map renders as before."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.rewrite import RewriteError
from dramigrate.helm.values import resource_sections
from dramigrate.plan import dns_label
from dramigrate.validate import MAX_DEVICES_PER_CLAIM

if TYPE_CHECKING:
    from collections.abc import Callable

    from dramigrate.helm.listed import Listed
    from dramigrate.helm.model import Alternative, Device, PodDelta
    from dramigrate.helm.templatelines import Edit
    from dramigrate.rules import RuleSet

# `{{ $key }}: {{ $value }}`: a resource key and its count, the two variables of a `range` over a map (the count
# perhaps quoted: `{{ $value | quote }}`, `"{{ $value }}"`)
_KEY_LINE = re.compile(
    r'\s*\{\{-?\s*\$(\w+)\s*-?\}\}\s*:\s*(?:"\{\{-?\s*\$(\w+)\s*-?\}\}"|\{\{-?\s*(?:quote\s+)?\$(\w+)(?:\s*\|\s*quote)?\s*-?\}\})\s*'
)


@dataclass(frozen=True)
class KeyedMap:
    """The map a pod's container writes its device keys from, and what the migration asks for each device it may
    hold: `entries`, device resource -> the claim request's `exactly` without its count; `base`, the request (and
    claim) name the migration gives each of them alone."""

    over: str  # the map, read from the chart's root (`$.Values.devices`)
    lines: tuple[int, ...]  # the key lines of the pod (0-based)
    entries: dict[str, dict[str, Any]]
    base: str


def key_lines(lines: list[str]) -> list[tuple[int, str, str]]:
    """Each line (0-based) that writes `{{ $k }}: {{ $v }}` directly under `limits:`/`requests:` as the body of a
    `range $k, $v := X` over a values map, with `$k` and X read from the root; [] when a line writes more."""
    from dramigrate.helm.templatelines import bare, is_key, parent_line

    out = []
    for i, line in enumerate(lines):
        m = _KEY_LINE.fullmatch(line)
        if not m or (up := parent_line(lines, i)) < 0 or not is_key(lines[up], "limits", "requests"):
            continue
        count = m.group(2) or m.group(3)
        head = re.fullmatch(
            rf"\s*\{{\{{-?\s*range\s+\${m.group(1)}\s*,\s*\${count}\s*:=\s*\$?(\.Values(?:\.\w+)+)\s*-?\}}\}}\s*",
            bare(lines[i - 1]),
        )
        end = re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", bare(lines[i + 1])) if i + 1 < len(lines) else None
        if head is None or end is None:
            return []
        out.append((i, f"${m.group(1)}", "$" + head.group(1)))
    return out


def literal_only(docs: list[dict[str, Any]], literal: str, held: set[str]) -> list[dict[str, Any]]:
    """The rendered objects with each container asking for the chart's own device (`literal`) only: a device of the
    map (`held`) renamed to it where the container does not ask for it, the others dropped; what the pattern-A
    rewrite of the chart's own key is built from."""
    out = copy.deepcopy(docs)
    for holder, section in resource_sections(out):
        own = holder[section]
        mapped = [k for k in own if k in held]
        if not mapped:
            continue
        kept = {k: v for k, v in own.items() if k not in held}
        if literal not in own:
            kept = {literal: own[mapped[0]], **kept}
        holder[section] = kept
    return out


def entries(
    rel: str,
    docs: list[dict[str, Any]],
    literal: PodDelta,
    resource: str,
    names: list[str],
    alternative: Alternative,
    rules: RuleSet,
) -> tuple[dict[str, dict[str, Any]], str]:
    """What the migration asks for each device resource of `names` (and the others of their rule packs) in place of
    the chart's own `resource` in the pods of `docs` (which ask for it alone), and the request name it gives them; a
    device it migrates to a claim of another name, or with more than its request and toleration, raises."""
    from dramigrate.helm.patterns import name_candidates
    from dramigrate.helm.poddelta import pod_delta

    wanted = [resource, *(c for n in names for c in name_candidates(n, rules))]
    out: dict[str, dict[str, Any]] = {}
    for res in dict.fromkeys(wanted):
        got = pod_delta(*alternative(docs, resource, res)) if res != resource else [literal]
        d = got[0]
        requests = without_api_defaults(d.spec).get("spec", {}).get("devices", {}).get("requests", [])
        plain = [{"key": res, "operator": "Exists", "effect": "NoSchedule"}]
        if (
            len(requests) != 1
            or "exactly" not in requests[0]
            or d.claim != literal.claim
            or requests[0].get("name") != literal.claim
            or (d.tolerations or plain) != plain
            or d.labels
            or d.affinity
        ):
            raise RewriteError(
                f"{rel}: the migration asks for {res} otherwise than for {resource} (another claim or request name, "
                "node selection moved into it, or other tolerations): a device of the values map is looked up by name "
                "in one request shape"
            )
        out[res] = {k: v for k, v in requests[0]["exactly"].items() if k != "count"}
    if dns_label(resource.split("/", 1)[-1]) != literal.claim:
        raise RewriteError(
            f"{rel}: the migration names the request of {resource} after its device ({literal.claim}) only while the "
            "pod asks for no other device of that name"
        )
    return out, literal.claim


def of_pod(lines: list[str], keyed: list[tuple[int, str, str]], devices: list[Device], rel: str) -> list[int]:
    """The key lines of `keyed` in the container of the pod's device keys: each in a section that holds one of them,
    after it."""
    from dramigrate.helm.templatelines import parent_line

    sections = {parent_line(lines, d.index): d.index for d in devices}
    out = []
    for i, _, _ in keyed:
        at = parent_line(lines, i)
        if at in sections:
            if i < sections[at]:
                raise RewriteError(f"{rel}:{i + 1}: the values map writes its device keys before the chart's own key")
            out.append(i)
        elif parent_line(lines, at) in {parent_line(lines, s) for s in sections}:
            raise RewriteError(f"{rel}:{i + 1}: the values map writes its device keys in a section without the key")
    return out


def _define(chart: str) -> str:
    return f"{chart}.draKeyed"


def holds(chart: str, over: str, counted: bool) -> str:
    """A condition true when the map holds a device the migration moves to a claim: with a count above 0
    (`counted`: the claim asks for it), or set at all (the pod tolerates it)."""
    return f'(include "{_define(chart)}" (list {over} {"true" if counted else "false"}))'


def section(chart: str, maps: list[KeyedMap], binned: bool = False) -> str:
    """The claim template file's defines: `holds` (a `1` per such device of the map), and the requests of the map's
    devices (`requests`), looked up in the devices the maps of `maps` may hold; `binned`: the requests define takes
    a third argument, the devices of one claim (`bins`), and writes only theirs (each named as among them all)."""
    from dramigrate.helm.namelookup import _literal, migrated_define

    entries = {res: entry for keyed in maps for res, entry in keyed.entries.items()}
    if len({keyed.base for keyed in maps}) > 1:
        raise RewriteError("the migration names the requests of the values maps' devices differently")
    base, over = json.dumps(maps[0].base), maps[0].over.removeprefix("$.Values.")
    known = "".join(f"\n    {json.dumps(res)} {_literal(entry)}" for res, entry in entries.items())
    message = (
        f"dra.enabled: {over} holds a device the chart's DRA claim does not know (it knows {', '.join(entries)}): set "
        "dra.enabled=false to request it from its device plugin, or add it to the dict in "
        "templates/resourceclaimtemplate.yaml"
    )
    return (
        f'{{{{- define "{_define(chart)}" -}}}}\n'
        "{{- range $key, $count := index . 0 }}\n"
        f'{{{{- if and (include "{migrated_define(chart)}" $key) '
        '(ternary (gt (int $count) 0) (ne (cat $count) "") (index $ 1)) }}1{{ end }}\n'
        "{{- end }}\n"
        "{{- end }}\n"
        f'{{{{- define "{_requests(chart)}" -}}}}\n'
        f"{{{{- $draKnown := dict{known} -}}}}\n"
        f'{{{{- $draDevices := len (include "{_define(chart)}" (list (index . 0) true)) }}}}\n'
        f"{{{{- $draTaken := dict }}}}\n"
        f"{{{{- if index . 1 }}}}{{{{ $draDevices = add1 $draDevices }}}}{{{{ $_ := set $draTaken {base} true }}}}"
        "{{ end }}\n"
        "{{- range $draKey, $draCount := index . 0 }}\n"
        f'{{{{- if and (include "{migrated_define(chart)}" $draKey) (gt (int $draCount) 0) }}}}\n'
        f"{{{{- if not (hasKey $draKnown $draKey) }}}}{{{{ fail {json.dumps(message)} }}}}{{{{ end }}}}\n"
        # alone, the device's request name (none given: its own); beside others, its own (the device's name), -2...
        f"{{{{- $draBase := {base} }}}}\n"
        '{{- if or (gt $draDevices 1) (not $draBase) }}{{ $draBase = regexReplaceAll "-+" '
        '(regexReplaceAll "[^a-z0-9-]+" (lower (last (splitList "/" $draKey))) "-") "-" | trimAll "-" '
        '| trunc 63 | trimAll "-" }}{{ end }}\n'
        "{{- $draName := $draBase }}\n"
        '{{- range $n := untilStep 2 34 1 }}{{ if hasKey $draTaken $draName }}{{ $draName = printf "%s-%d" '
        "$draBase $n }}{{ end }}{{ end }}\n"
        "{{- $_ := set $draTaken $draName true }}\n"
        + ('{{- if has $draKey (splitList "," (index $ 2)) }}\n' if binned else "")
        + "    - name: {{ $draName }}\n"
        "      exactly:\n"
        "        {{- toYaml (index $draKnown $draKey) | nindent 8 }}\n"
        "        count: {{ int $draCount }}\n" + ("{{- end }}\n" if binned else "") + "{{- end }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
    )


def bins(chart: str, overs: list[str]) -> str:
    """The define of the claims a pod's devices of the map go in, as the migration splits them (plan.split_claims:
    at most 32 devices in one claim, so 8 GPUs and 32 EFA interfaces of a p5.48xlarge go in two): the devices the
    migration moves with a count above 0, in the map's order, each in the first claim it fits in; the claims
    separated by `;`, the devices of one by `,`. With a second argument set (an existing claim template), one claim.
    A device of more than 32 alone, or more than two kinds in one of several claims, fails the render."""
    from dramigrate.helm.model import OVER_LIMIT
    from dramigrate.helm.namelookup import migrated_define

    over, limit = " or ".join(o.removeprefix("$.Values.") for o in overs), MAX_DEVICES_PER_CLAIM
    alone = f"dra.enabled: {over}: {OVER_LIMIT}"  # the migration refuses such a pod: the proof knows this failure
    many = (
        f"dra.enabled: {over} asks for more than {MAX_DEVICES_PER_CLAIM} devices of more than two kinds, which the "
        "chart's claims do not split: set dra.enabled=false to request them from their device plugins, or "
        "dra.existingClaimTemplate"
    )
    return (
        f'{{{{- define "{bins_define(chart)}" -}}}}\n'
        "{{- $draBins := dict }}{{ $draSizes := dict }}\n"
        "{{- range $draKey, $draCount := index $ 0 }}"
        f'{{{{ if and (include "{migrated_define(chart)}" $draKey) (gt (int $draCount) 0) }}}}\n'
        "{{- $draAt := len $draSizes }}{{ if index $ 1 }}{{ $draAt = 0 }}{{ else }}"
        f"{{{{ if gt (int $draCount) {limit} }}}}{{{{ fail {json.dumps(alone)} }}}}{{{{ end }}}}\n"
        "{{- range $n := until (len $draSizes) | reverse }}"  # the first claim it fits in
        f"{{{{ if le (add (get $draSizes (toString $n)) $draCount) {limit} }}}}{{{{ $draAt = $n }}}}{{{{ end }}}}"
        "{{ end }}{{ end }}\n"
        "{{- $draAt = toString $draAt }}{{ $_ := set $draBins $draAt (append (default (list) (get $draBins $draAt)) "
        "$draKey) }}\n"
        "{{- $_ := set $draSizes $draAt (add (default 0 (get $draSizes $draAt)) $draCount) }}\n"
        "{{- end }}{{ end }}\n"
        "{{- range $n := until (len $draSizes) }}{{ $draBin := get $draBins (toString $n) }}{{ if $n }};{{ end }}"
        '{{ join "," $draBin }}\n'
        f"{{{{- if and (gt (len $draSizes) 1) (gt (len $draBin) 2) }}}}{{{{ fail {json.dumps(many)} }}}}{{{{ end }}}}"
        "{{ end }}\n"
        "{{- end }}\n"
    )


def bins_define(chart: str) -> str:
    return f"{chart}.draKeyedClaims"


def _requests(chart: str) -> str:
    return f"{chart}.draKeyedRequests"


def key_guard(chart: str, on: str, var: str) -> str:
    """The `if` around a key line: the key stays unless the switch is on and the migration moves it to a claim."""
    from dramigrate.helm.goexpr import from_root
    from dramigrate.helm.namelookup import migrated_define

    return f'if not (and {from_root(on)} (include "{migrated_define(chart)}" {var}))'


def tolerations(chart: str, keyed: KeyedMap, pad: str) -> list[str]:
    """The pod's tolerations list entries for the map's devices (the device plugin's taint of each)."""
    from dramigrate.helm.namelookup import migrated_define
    from dramigrate.helm.tolerationedits import DRA_KEY

    return [
        f"{pad}{{{{- range {DRA_KEY}, $draCount := {keyed.over} }}}}",
        f'{pad}{{{{- if and (include "{migrated_define(chart)}" {DRA_KEY}) (ne (cat $draCount) "") }}}}',
        f"{pad}- key: {{{{ {DRA_KEY} }}}}",
        f"{pad}  operator: Exists",
        f"{pad}  effect: NoSchedule",
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- end }}}}",
    ]


def spec(chart: str, inner: str, own: str, keyed: KeyedMap) -> str:
    """The claim spec (`inner`, the chart's own request) with that request only where its key asks for a device
    (`own`), then one request per device of the map with a count above 0, named as the migration names them."""
    head, found, rest = inner.partition("  requests:\n")
    if not found or not rest.startswith("    - name: "):
        raise RewriteError("the claim spec has no requests list")
    if not own:
        return f'{head}{found}{rest}{{{{- include "{_requests(chart)}" (list {keyed.over} true) }}}}\n'
    return (
        f"{head}{found}{{{{- $draOwn := false }}}}\n{{{{- if {own} }}}}{{{{ $draOwn = true }}}}\n{rest}{{{{- end }}}}\n"
        f'{{{{- include "{_requests(chart)}" (list {keyed.over} $draOwn) }}}}\n'
    )


def split_conditions(text: str, rel: str, keyed: KeyedMap, res: int, in_pod: list[str]) -> tuple[list[str], list[str]]:
    """The conditions the pod's claim reads (`in_pod`) split in two: those around the container's `resources:` line
    (0-based `res`), under which the map's keys render too (they sit in no `if` of their own), and the chart's own
    key's own ones; raises RewriteError when the key lines sit in blocks of their own."""
    from dramigrate.helm.idiomatic import _conditions, _enclosing
    from dramigrate.helm.patterns import Pattern

    lines = text.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[:res])
    common = _conditions(text, offset, rel, Pattern("A", res + 1, lines[res].strip()))[0]
    around = _enclosing(text, res)
    for i in keyed.lines:
        if _enclosing(text, i) != [*around, "range"]:
            raise RewriteError(f"{rel}:{i + 1}: the values map's device keys sit in blocks of their own")
    if in_pod[: len(common)] != common:
        raise RewriteError(f"{rel}:{res + 1}: the chart's own device key and the values map's render apart")
    return common, in_pod[len(common) :]


# a pod's tolerations list written from a values list (`{{- range $v := .Values.tolerations }}`, awssamples' eksml)
_TOLERATIONS_RANGE = re.compile(r"\s*\{\{-?\s*range\s+(?:\$\w+\s*:=\s*)?\$?(\.Values(?:\.\w+)+)\s*-?\}\}\s*")


def _map_pods(lines: list[str], rel: str, found: list[tuple[int, str, str]]) -> list[tuple[int, int, str]]:
    """Per pod whose container takes the maps (a LeaderWorkerSet's leader and worker, a PyTorchJob's master and
    worker, a Ray head and worker group), its pod spec line, its container's `resources:` line (0-based) and the map
    its claim counts (the container's limits map, else its requests map)."""
    from dramigrate.helm.listed import _list_key
    from dramigrate.helm.templatelines import bare, is_key, parent_line

    by_resources: dict[int, list[tuple[int, str]]] = {}
    for i, _, over in found:
        by_resources.setdefault(parent_line(lines, parent_line(lines, i)), []).append((i, over))
    pods = []
    for at, keys in by_resources.items():
        if at < 0 or not is_key(lines[at], "resources"):
            raise RewriteError(f"{rel}: the values maps' device keys are not under one `resources:` of a container")
        sections = {bare(lines[parent_line(lines, i)])[:-1]: over for i, over in keys}
        if len(sections) != len(keys):
            raise RewriteError(f"{rel}:{at + 1}: a container writes its limits or requests from two values maps")
        pod = parent_line(lines, _list_key(lines, at))
        if pod < 0:
            raise RewriteError(f"{rel}:{at + 1}: the container of the values maps' device keys is in no pod spec")
        pods.append((pod, at, sections.get("limits") or sections["requests"]))
    if len({pod for pod, _, _ in pods}) != len(pods):
        raise RewriteError(f"{rel}: two containers of one pod write device keys from the values maps")
    return sorted(pods)


def _map_pod_edits(lines: list[str], rel: str, pod: int, at: int, over: str, chart: str, keyed: KeyedMap) -> list[Edit]:
    """One pod's edits for `map_only`: its claim, its container's `claims`, and the tolerations of the map's devices
    its values tolerations list does not tolerate (the key lines' guards are the caller's)."""
    from dramigrate.helm.templatelines import Edit, block_end, child_indent, is_control, line_indent

    on = "$.Values.dra.enabled"
    counted, present = holds(chart, over, True), holds(chart, over, False)
    named = f'(include "{chart}.draKeyedClaimTemplateName" (dict "root" $ "map" {over} "claim" $draClaim))'
    claim = f'{{{{ include "{chart}.draKeyedClaimName" (list {over} $draClaim) }}}}'
    each = (
        f'{{{{- range $draClaim := include "{bins_define(chart)}" (list {over} $.Values.dra.existingClaimTemplate) '
        '| splitList ";" }}'
    )
    pad = " " * child_indent(lines, pod)
    pod_lines = [
        f"{{{{- if and {on} {counted} }}}}",
        "resourceClaims:",
        each,
        f"  - name: {claim}",
        f"    resourceClaimTemplateName: {{{{ $.Values.dra.existingClaimTemplate | default {named} }}}}",
        "{{- end }}",
        "{{- end }}",
    ]
    edits: list[Edit] = []
    tol = [i for i in range(pod + 1, block_end(lines, pod)) if re.match(r"tolerations:(\s|$)", lines[i].strip())]
    tol = [i for i in tol if line_indent(lines[i]) == len(pad)]
    if tol:
        base = line_indent(lines[tol[0]])  # the list's end: the pod's next key (the `end` of its `range` before it)
        end = next(
            (i for i in range(tol[0] + 1, len(lines)) if not is_control(lines[i]) and line_indent(lines[i]) <= base),
            len(lines),
        )
        while end > tol[0] + 1 and _OPENS.fullmatch(lines[end - 1]):
            end -= 1  # a block the pod's next key opens (`if .Values.nodeSelector`): the list ends above it
        given = _TOLERATIONS_RANGE.fullmatch(lines[tol[0] + 1]) if tol[0] + 1 < end else None
        given = given if lines[tol[0]].strip() == "tolerations:" else None  # `tolerations: {{- toYaml ... }}`
        if given is None:
            raise RewriteError(f"{rel}:{tol[0] + 1}: the pod's tolerations are not a `range` over a values list")
        entries = _uncovered(lines, tol[0], end, len(pad), over, given.group(1), chart)
        wrap = _IF_LIST.fullmatch(lines[tol[0] - 1])
        if wrap and wrap.group(2) == given.group(1) and _END.fullmatch(lines[end - 1]):
            # `if .Values.tolerations` around the list (rayserve): it renders for the DRA tolerations too
            head = f"{wrap.group(1)}if or {wrap.group(2)} (and {on} {present}) {wrap.group(3)}"
            edits += [Edit(tol[0] - 1, tol[0], [head]), Edit(end - 1, end - 1, entries)]
        else:
            edits.append(Edit(end, end, entries))
    else:
        pod_lines += [f"{{{{- if and {on} {present} }}}}", "tolerations:", *tolerations(chart, keyed, ""), "{{- end }}"]
    edits.append(Edit(pod + 1, pod + 1, [pad + x for x in pod_lines]))
    ind = " " * child_indent(lines, at)
    claims = [f"{{{{- if and {on} {counted} }}}}", "claims:", each, f"  - name: {claim}", "{{- end }}", "{{- end }}"]
    edits.append(Edit(at + 1, at + 1, [ind + x for x in claims]))
    return edits


# a line that opens a block (`{{- if .Values.nodeSelector }}`), an `{{- end }}`, and an `if` on a values list alone
_OPENS = re.compile(r"\s*\{\{-?\s*(?:if|with|range)\b.*\}\}\s*")
_END = re.compile(r"\s*\{\{-?\s*end\s*-?\}\}\s*")
_IF_LIST = re.compile(r"(\s*\{\{-?\s*)if\s+\$?(\.Values(?:\.\w+)+)\s*(-?\}\})\s*")


def _uncovered(lines: list[str], tol: int, end: int, pad: int, over: str, given: str, chart: str) -> list[str]:
    """The entries after a pod's tolerations list (line `tol`, written from the values list `given` up to line `end`):
    one per device of the map the migration moves to a claim that the values list does not tolerate already."""
    from dramigrate.helm.namelookup import migrated_define
    from dramigrate.helm.templatelines import line_indent
    from dramigrate.helm.tolerationedits import DRA_KEY, TOLERATED, tolerated_check

    items = [line_indent(x) for x in lines[tol + 1 : end] if x.strip().startswith("- ")]
    p = " " * (items[0] if items else pad + 2)
    tail = re.search(r"\}\}(\s*)$", lines[end - 1])
    return [
        f"{p}{{{{- range {DRA_KEY}, $draCount := {over} }}}}",
        *(f"{p}{c}" for c in tolerated_check(f"$.Values{given[7:]}", DRA_KEY, True)),
        f'{p}{{{{- if and $.Values.dra.enabled (include "{migrated_define(chart)}" {DRA_KEY}) (ne (cat $draCount) "") '
        f"(not {TOLERATED}) }}}}",
        f"{p}- key: {{{{ {DRA_KEY} }}}}",
        f"{p}  operator: Exists",
        f"{p}  effect: NoSchedule",
        f"{p}{{{{- end }}}}",
        # the blanks after the list's last action (`{{- end }} `), which the new lines' first `{{-` trims
        f"{p}{{{{- end }}}}" + (tail.group(1) if tail else ""),
    ]


def map_only(
    text: str,
    rel: str,
    delta: PodDelta,
    known: dict[str, dict[str, Any]],
    chart: str,
    ray: Callable[[list[str], int, str], Edit] | None = None,
) -> Listed:
    """The rewrite of a template whose containers write their device keys only from `range` maps (awssamples'
    eksml charts: `range $k, $v := .Values.resources.requests`, then `.limits`, no key of the chart's own), one
    container in each pod that takes a map (triton: one Deployment; triton-lws: a LeaderWorkerSet's leader and
    worker; pytorchjob: a PyTorchJob's master and worker; rayserve: a Ray head on `.Values.ray.resources`, a worker
    group on `.Values.resources`): with the switch on each key of the maps the migration moves leaves the container;
    while a pod's limits map (else its requests map) holds such a device with a count above 0 the pod gets the claim,
    its container its `claims`, and a claim template one request per device (`section`'s requests, looked up in
    `known`: GPU and EFA side by side, as the migration asks for them without --align-nics), shared by the pods
    asking for the same; each pod tolerates each device set in its map that its values tolerations list does not
    tolerate already; `ray` gives the edit of a Ray group's num-gpus (KubeRay reads it from the limits)."""
    from dramigrate.helm.idiomatic import DRA_OFF, _metadata_line, capabilities_check
    from dramigrate.helm.listed import Listed, _root_reads
    from dramigrate.helm.namelookup import migrated_define
    from dramigrate.helm.templatelines import Edit, line_indent

    lines = text.splitlines()
    found = key_lines(lines)
    if not found:
        raise RewriteError(f"{rel}: no device key a `range` over a values map writes")
    if delta.namespaced or delta.labels or delta.affinity or (delta.params and ray is None):
        raise RewriteError(f"{rel}: the migration moves more than the map's devices into the claim")
    pods = _map_pods(lines, rel, found)
    overs = list(dict.fromkeys(over for _, _, over in pods))
    on = "$.Values.dra.enabled"
    counted = (
        holds(chart, overs[0], True) if len(overs) == 1 else f"(or {' '.join(holds(chart, o, True) for o in overs)})"
    )
    migrated = migrated_define(chart)
    name_define, spec_define = f"{chart}.draKeyedClaimTemplateName", f"{chart}.draKeyedClaimSpec"
    claim_define = f"{chart}.draKeyedClaimName"
    edits: list[Edit] = []
    for pod, at, over in pods:
        keyed = KeyedMap(over, tuple(i for i, _, _ in found), known, delta.claim)
        edits += _map_pod_edits(lines, rel, pod, at, over, chart, keyed)
        if ray is not None:
            edits.append(ray(lines, pod, over))
    for i, var, _ in found:
        p = " " * line_indent(lines[i])
        guard = f'{p}{{{{- if not (and {on} (include "{migrated}" {var})) }}}}'
        edits.append(Edit(i, i + 1, [guard, lines[i], f"{p}{{{{- end }}}}"]))
    out = list(lines)
    for e in sorted(edits, key=lambda e: (e.index, e.stop), reverse=True):
        out[e.index : e.stop] = e.lines
    after = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    name = _metadata_line(lines, "name", pods[0][0])
    if not name:
        raise RewriteError(f"{rel}: the workload's metadata.name is not one line")
    name = _root_reads(name[1:-1] if name[0] == name[-1] and name[0] in "\"'" else name, rel)
    maps = [KeyedMap(over, tuple(i for i, _, _ in found), known, "") for over in overs]
    each = f"list {' '.join(overs)}"
    section_text = (
        capabilities_check(f"and {on} {counted}", DRA_OFF)
        + f"{{{{- if and {on} (not $.Values.dra.existingClaimTemplate) {counted} }}}}\n"
        # a claim template per claim of each map (one, unless its devices are more than one claim holds), once
        "{{- $draDone := dict }}\n"
        f"{{{{- range $draMap := {each} }}}}\n"
        f'{{{{- range $draClaim := include "{bins_define(chart)}" (list $draMap "") | splitList ";" }}}}\n'
        f'{{{{- $draName := include "{name_define}" (dict "root" $ "map" $draMap "claim" $draClaim) }}}}\n'
        "{{- if and $draClaim (not (hasKey $draDone $draName)) }}{{ $_ := set $draDone $draName true }}\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\n"
        "kind: ResourceClaimTemplate\n"
        "metadata:\n"
        "  name: {{ $draName }}\n"
        "spec:\n"
        "  spec:\n"
        f'    {{{{- include "{spec_define}" (dict "root" $ "map" $draMap "claim" $draClaim) | nindent 4 }}}}\n'
        "{{- end }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
        f'{{{{- define "{spec_define}" -}}}}\n'
        "devices:\n"
        "  requests:\n"
        f'{{{{- include "{_requests(chart)}" (list .map false .claim) }}}}\n'
        "{{- end }}\n"
        f'{{{{- define "{name_define}" -}}}}\n'
        f'{name}-{{{{ include "{spec_define}" . | sha256sum | trunc 8 }}}}\n'
        "{{- end }}\n"
        # the migration names a claim after its requests, joined (`neuron-gpu`, `gpu-efa`)
        f'{{{{- define "{claim_define}" -}}}}\n'
        f'{{{{- regexFindAll "- name: [a-z0-9-]+" (include "{_requests(chart)}" (list (index . 0) false (index . 1))) '
        '-1 | join "-" | replace "- name: " "" }}\n'
        "{{- end }}\n" + section(chart, maps, binned=True) + bins(chart, overs)
    )
    first = next(iter(known.values()))
    device_class = str(first.get("deviceClassName") or "")
    return Listed(
        text,
        after,
        section_text,
        f"each device of {', '.join(o.removeprefix('$.Values.') for o in overs)}",
        device_class,
    )
