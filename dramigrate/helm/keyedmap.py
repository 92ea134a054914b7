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

if TYPE_CHECKING:
    from dramigrate.helm.idiomatic import Alternative, Device, PodDelta
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
    from dramigrate.helm.idiomatic import _parent

    out = []
    for i, line in enumerate(lines):
        m = _KEY_LINE.fullmatch(line)
        if not m or (up := _parent(lines, i)) < 0 or lines[up].strip() not in ("limits:", "requests:"):
            continue
        count = m.group(2) or m.group(3)
        head = re.fullmatch(
            rf"\s*\{{\{{-?\s*range\s+\${m.group(1)}\s*,\s*\${count}\s*:=\s*\$?(\.Values(?:\.\w+)+)\s*-?\}}\}}\s*",
            lines[i - 1],
        )
        end = re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[i + 1]) if i + 1 < len(lines) else None
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
    from dramigrate.helm.idiomatic import pod_delta
    from dramigrate.helm.patterns import name_candidates

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
    from dramigrate.helm.idiomatic import _parent

    sections = {_parent(lines, d.index): d.index for d in devices}
    out = []
    for i, _, _ in keyed:
        at = _parent(lines, i)
        if at in sections:
            if i < sections[at]:
                raise RewriteError(f"{rel}:{i + 1}: the values map writes its device keys before the chart's own key")
            out.append(i)
        elif _parent(lines, at) in {_parent(lines, s) for s in sections}:
            raise RewriteError(f"{rel}:{i + 1}: the values map writes its device keys in a section without the key")
    return out


def _define(chart: str) -> str:
    return f"{chart}.draKeyed"


def holds(chart: str, over: str, counted: bool) -> str:
    """A condition true when the map holds a device the migration moves to a claim: with a count above 0
    (`counted`: the claim asks for it), or set at all (the pod tolerates it)."""
    return f'(include "{_define(chart)}" (list {over} {"true" if counted else "false"}))'


def section(chart: str, maps: list[KeyedMap]) -> str:
    """The claim template file's defines: `holds` (a `1` per such device of the map), and the requests of the map's
    devices (`requests`), looked up in the devices the maps of `maps` may hold."""
    from dramigrate.helm.idiomatic import _literal, migrated_define

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
        # alone, the device's request name; beside others of that name, its own (the device's name), then -2, -3...
        f"{{{{- $draBase := {base} }}}}\n"
        '{{- if gt $draDevices 1 }}{{ $draBase = regexReplaceAll "-+" (regexReplaceAll "[^a-z0-9-]+" '
        '(lower (last (splitList "/" $draKey))) "-") "-" | trimAll "-" | trunc 63 | trimAll "-" }}{{ end }}\n'
        "{{- $draName := $draBase }}\n"
        '{{- range $n := untilStep 2 34 1 }}{{ if hasKey $draTaken $draName }}{{ $draName = printf "%s-%d" '
        "$draBase $n }}{{ end }}{{ end }}\n"
        "{{- $_ := set $draTaken $draName true }}\n"
        "    - name: {{ $draName }}\n"
        "      exactly:\n"
        "        {{- toYaml (index $draKnown $draKey) | nindent 8 }}\n"
        "        count: {{ int $draCount }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
        "{{- end }}\n"
    )


def _requests(chart: str) -> str:
    return f"{chart}.draKeyedRequests"


def key_guard(chart: str, on: str, var: str) -> str:
    """The `if` around a key line: the key stays unless the switch is on and the migration moves it to a claim."""
    from dramigrate.helm.idiomatic import _from_root, migrated_define

    return f'if not (and {_from_root(on)} (include "{migrated_define(chart)}" {var}))'


def tolerations(chart: str, keyed: KeyedMap, pad: str) -> list[str]:
    """The pod's tolerations list entries for the map's devices (the device plugin's taint of each)."""
    from dramigrate.helm.idiomatic import migrated_define

    return [
        f"{pad}{{{{- range $draKey, $draCount := {keyed.over} }}}}",
        f'{pad}{{{{- if and (include "{migrated_define(chart)}" $draKey) (ne (cat $draCount) "") }}}}',
        f"{pad}- key: {{{{ $draKey }}}}",
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
