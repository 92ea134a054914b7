"""Charts that already have their own DRA switch (ollama's `draEnabled`, llm-d's `accelerator.dra`): no template
change; _own_dra_switch finds the switch, lint reports the values setting to use (_report_switch), and fix writes it
into the values files (_use_switch) when the switch migrates every device request, proven like any rewrite.

A chart whose own DRA switch covers only some of its device requests (llm-d-modelservice's `accelerator.dra` with
the requester values: the switch turns the prefill pods' helper to claims, but the requester ReplicaSet writes
`nvidia.com/gpu` itself, and the prefill container keeps the `nvidia.com/gpu` its values set beside the new claim).

Such a switch is not used when its render keeps any device-plugin request the manifest migration moves (it would
leave device-plugin requests, or ask for the device twice), however many it moves: with values that leave the prefill
key out, the switch moves the prefill request and only the requester's stays, and fix turned it on, said the chart
proven and marked the requester's request fixed. The chart goes on to the rewrite; when that ends as manual work, the
message says what turning the chart's own switch on leaves, read from the render with it on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dramigrate.findings import RULES, Finding, Location
from dramigrate.helm.outcome import (
    UNPROVEN,
    ChartOptions,
    ChartOutcome,
    Workdir,
    _manual,
)
from dramigrate.helm.probe import DeviceKey, device_uses, matches, override
from dramigrate.helm.prove import (
    documents,
)
from dramigrate.helm.renderpool import (
    cached_render,
)
from dramigrate.helm.rewrite import Change
from dramigrate.helm.switchname import FALLBACK
from dramigrate.helm.values import (
    Leaf,
    ValueSources,
    display,
    key_line,
    locate,
    with_paths,
)
from dramigrate.rules import RuleSet


def _node(doc: Any, path: str) -> Any:
    """The node at a device_uses container path (`spec.template.spec.containers[0]`)."""
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if isinstance(doc, dict) and key:
            doc = doc.get(key)
        elif isinstance(doc, list) and index and int(index) < len(doc):
            doc = doc[int(index)]
        else:
            return None
    return doc


def left_by(
    leaf: Leaf,
    stream: str,
    uses: dict[tuple[str, ...], Any],
    findings: list[Finding],
    root: Path,
    base: str,
    scoped: list[tuple[tuple[Any, ...], list[str]]],
) -> str:
    """What the chart's own switch leaves on the device plugin, from its render with the switch on (`stream`; `uses`:
    the device requests left in it that the manifest migration moves), in words that open a manual message: for each,
    what to change by hand, read from the device-plugin render's `findings` (`base`, the chart at `root`): a device key
    the values set beside the claim the switch adds is left out of the values, a key a template writes itself is a line
    the switch does not reach; then the switch's copies that turn some objects alone (`scoped`, per_object) and the
    device requests that render holds as text (_held_as_text)."""
    docs = {}
    for doc in documents(stream):
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            docs[(str(doc.get("kind", "")), str(doc["metadata"].get("name") or ""))] = doc
    said = []
    for kind, _, name, path, container, resource in sorted(uses):
        node = _node(docs.get((kind, name)), path)
        claims = isinstance(node, dict) and isinstance(node.get("resources"), dict) and node["resources"].get("claims")
        where = _where(findings, (kind, name, container, resource), root, bool(claims), leaf.path)
        said.append(f"{kind}/{name} container {container} {resource}{' beside its claim' if claims else ''}{where}")
    return (
        f"the chart's own DRA switch {display(leaf.path)} does not migrate these values: with it on, {len(said)} "
        f"device-plugin request(s) stay: {', '.join(dict.fromkeys(said))}{_scoped(scoped)}"
        f"{_held_as_text(findings, base, docs)}"
    )


def _scoped(scoped: list[tuple[tuple[Any, ...], list[str]]]) -> str:
    said = [
        f"{display(path)}=true renders claims in {', '.join(objects)} alone, every other object as it was"
        for path, objects in scoped
    ]
    return f"; the switch also goes per object: {'; '.join(said)}" if said else ""


def per_object(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    work: Workdir,
    leaf: Leaf,
    base: str,
    findings: list[Finding],
) -> list[tuple[tuple[Any, ...], list[str]]]:
    """The chart's own switch repeated under a values map that sets a device count (llm-d's `prefill.accelerator.dra`
    beside `accelerator.dra`, a per-role override its values.yaml documents in comments only, so no values leaf names
    it) which, turned on alone, renders claims into some objects and leaves every other object of the render `base` as
    it was: each such path with the objects it turns. The maps tried are those the device counts' values paths start
    with (findings' related notes); one render each, on the manual path only."""
    from dramigrate.helm.values import get_path

    tops = []
    for f in findings:
        for r in f.related if f.rule == "legacy-device-request" else ():
            top = re.match(r"([A-Za-z_][\w-]*)[.\[]", r.note) if r.note.endswith(" sets this device count") else None
            if top and top.group(1) != leaf.path[0] and isinstance(sources.merged.get(top.group(1)), dict):
                tops.append(top.group(1))
    found = []
    for top in dict.fromkeys(tops):
        path = (top, *leaf.path)
        if get_path(sources.merged, path) is not None:
            continue
        values = override(sources, with_paths(sources.merged, [(path, True)]))
        rendered = cached_render(root, copts.render((work.values_file(values),), sets=False))
        turned = [] if rendered.error else _turned(base, rendered.stream)
        if turned:
            found.append((path, turned))
    return found


def _turned(base: str, stream: str) -> list[str]:
    """The objects (`Kind/name`) the render `stream` changes from `base` when each of them now names a
    ResourceClaimTemplate and every other difference is a new ResourceClaimTemplate; [] otherwise."""

    def objects(text: str) -> dict[tuple[str, str], Any]:
        out = {}
        for doc in documents(text):
            meta = doc.get("metadata") if isinstance(doc, dict) else None
            if isinstance(meta, dict):
                out[(str(doc.get("kind", "")), str(meta.get("name") or ""))] = doc
        return out

    before, after = objects(base), objects(stream)
    if set(before) - set(after) or any(kind != "ResourceClaimTemplate" for kind, _ in set(after) - set(before)):
        return []
    changed = [key for key in before if after[key] != before[key]]
    if not changed or any(not _under(after[key], "resourceClaimTemplateName") for key in changed):
        return []
    return [f"{kind}/{name}" for kind, name in changed]


def _held_as_text(findings: list[Finding], base: str, switched: dict[tuple[str, str], Any]) -> str:
    """What the message adds for device requests held in strings of the device-plugin render `base` (llm-d's requester
    ReplicaSet holds its decode containers in the `dual-pod.llm-d.ai/server-patch` annotation): the manifest migration
    leaves a string as it is; whether the render with the switch on (`switched`, its objects by kind and name) changes
    it, and the claims it then names that neither the string nor its object's pod spec declares (llm-d's switch writes
    `claims: [nvidia-decode-claim]` into the server patch, a claim no pod entry declares); what to do: the string is
    the user's to decide, or the chart keeps the device plugin under --strategy extended-resource."""
    held, changed, undeclared = [], False, set()
    for f in findings:
        where = re.search(r"inside the string (\S+) \(", f.message)
        if f.rule != "embedded-device-request" or not where:
            continue
        held.append(f"{f.kind}/{f.name} {where.group(1)}")
        before = _string(next((d for d in documents(base) if _named(d, f.kind, f.name)), None), where.group(1))
        after = _string(switched.get((f.kind, f.name)), where.group(1))
        if after is not None and after != before:
            changed = True
            undeclared |= _claims(after) - _declared(after) - _declared(switched.get((f.kind, f.name)))
    if not held:
        return ""
    said = list(dict.fromkeys(held))
    if changed:
        names = ", ".join(sorted(undeclared))
        how = (
            f"with the switch on the chart writes claims into it ({names}, which neither that text nor the pod spec "
            "around it declares in resourceClaims)"
            if undeclared
            else "with the switch on the chart changes it"
        )
    else:
        how = "the switch leaves it as it is too"
    return (
        f"; and {', '.join(said)} hold{'s' if len(said) == 1 else ''} a device request as text (a pod spec in a "
        f"string), which the manifest migration leaves as it is while {how}: keep the device-plugin requests and serve "
        "them with a DeviceClass with extendedResourceName (--strategy extended-resource, Kubernetes 1.34+), or "
        "migrate by hand, deciding what the pods made from that text should ask for"
    )


def _named(doc: Any, kind: str, name: str) -> bool:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return isinstance(meta, dict) and (str(doc.get("kind", "")), str(meta.get("name") or "")) == (kind, name)


def _string(doc: Any, key: str) -> str | None:
    """The string under `key` anywhere in `doc` (an annotation, Argo's podSpecPatch)."""
    from dramigrate.embedded import _strings

    return next((text for _, k, text in _strings(doc) if str(k) == key), None) if doc is not None else None


def _under(node: Any, key: str) -> list[Any]:
    """Every value under `key` in the parsed node, at any depth."""
    found, stack, seen = [], [node], set()
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:  # an alias is the same object again: walked once (a string's alias bomb)
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            found += [v for k, v in item.items() if k == key]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _parsed(node: Any) -> Any:
    """A string parsed as YAML (None when it is not), anything else as it is."""
    if not isinstance(node, str):
        return node
    import yaml

    try:
        return yaml.load(node, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None


def _claims(node: Any) -> set[str]:
    """The claim names the containers of `node` (a string is parsed first) name in resources.claims."""
    return {
        str(c["name"])
        for resources in _under(_parsed(node), "resources")
        if isinstance(resources, dict) and isinstance(resources.get("claims"), list)
        for c in resources["claims"]
        if isinstance(c, dict) and c.get("name")
    }


def _declared(node: Any) -> set[str]:
    """The claim names the pod specs of `node` (a string is parsed first) declare in resourceClaims."""
    return {
        str(c["name"])
        for entries in _under(_parsed(node), "resourceClaims")
        if isinstance(entries, list)
        for c in entries
        if isinstance(c, dict) and c.get("name")
    }


def _where(
    findings: list[Finding], key: tuple[str, str, str, str], root: Path, beside: bool, switch: tuple[Any, ...]
) -> str:
    """Where the device request `key` (kind, name, container, resource) is set, and what to change there: a device key
    a values map holds (the values lines that set it, in limits and in requests) is left out of the values with the
    switch on; a key a template writes is named at its line, with the values settings that render it and set its
    count, which no values file can turn into a claim (a count of 0 takes the device away): by hand, that line under
    the `switch` turned off, and the container a claim of its own with it on."""
    found = next(
        (f for f in findings if f.rule == "legacy-device-request" and (f.kind, f.name, f.container, f.resource) == key),
        None,
    )
    if found is None:
        return ""
    for r in found.related:
        path = r.note.removesuffix(" sets this device count").rsplit(": ", 1)[0]
        held = re.fullmatch(rf"(.+)\.(?:limits|requests)\[\"{re.escape(key[3])}\"\]", path)
        if r.note.endswith("sets this device count") and held:
            lines = [f"{_shown(r.file, root)}:{r.line}"]
            for section in ("limits", "requests"):
                line = key_line(Path(r.file), (*_path(held.group(1)), section, key[3])) if r.file else 0
                if line and line != r.line:
                    lines.append(f":{line}")  # the same file
            said = f"{' and '.join(lines)} set{'s' if len(lines) == 1 else ''}"
            return f" ({said} it: leave {key[3]} out of {held.group(1)} with the switch on)"
    what = "which the switch leaves beside the claim" if beside else "which the switch does not reach"
    settings = [f"{_shown(r.file, root)}:{r.line} {r.note}" for r in found.related if r.file and r.line]
    given = f"; {', '.join(settings)}: no values setting makes that line a claim" if settings and not beside else ""
    if not beside:
        read = ".Values." + ".".join(map(str, switch)) if all(_NAME.fullmatch(str(p)) for p in switch) else ""
        off = f"`{{{{- if not {read} }}}}`" if read else f"the switch {display(switch)} off"
        given += (
            f"; by hand: write that line only under {off}, and with the switch on give container {key[2]} a claim "
            f"of its own in resources.claims (its pod's resourceClaims, a ResourceClaimTemplate asking for its "
            f"count of {key[3]}'s device class), as the switch does for the chart's other pods"
        )
    return f" ({_shown(found.file, root)}:{found.line} writes it, {what}{given})"


_NAME = re.compile(r"[A-Za-z_]\w*")


def _path(text: str) -> tuple[str | int, ...]:
    """A values path from its display (`prefill.containers[0].resources`)."""
    return tuple(int(i) if i else k for k, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", text))


def _shown(file: str, root: Path) -> str:
    """A file as the manual message names it: a chart file from the chart's folder, any other as it is."""
    try:
        return Path(file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return file


def note(outcome: Any, text: str) -> None:
    """The manual message of a chart outcome, and its chart-rewrite-unproven finding, opened with `text`, what the
    chart's own switch leaves (what the user changes first: the switch is the chart's own way to DRA); the rewrite's
    reason follows it, its closing advice (ENGINE_HINT) last."""

    def extended(message: str) -> str:
        head = UNPROVEN if message.startswith(UNPROVEN) else ""
        return f"{head}{text}; nor does the rewrite take the chart: {message.removeprefix(head)}"

    outcome.manual = extended(outcome.manual)
    for f in outcome.findings:
        if f.rule == "chart-rewrite-unproven":
            f.message = extended(f.message)


_SWITCH_KEY = re.compile(r"^(dra|draEnabled|dra_enabled|enableDra|useDra)$", re.IGNORECASE)
_SWITCHES = (["dra"], [FALLBACK])  # `dra.enabled`, and the rewrite's own switch beside a chart's `dra:` (switchname.py)


def _own_dra_switch(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    base: dict[DeviceKey, Any],
    rules: RuleSet,
    work: Workdir,
    findings: list[Finding],
    partial: list[Any] | None = None,
) -> Leaf | None:
    """A boolean values key of the chart's own (`draEnabled`, `dra`, `dra.enabled`) that is off and, turned
    on, renders ResourceClaims in place of the device requests: the chart migrates itself. Device requests its render
    keeps are allowed only where the manifest migration keeps them too (`findings`, of the chart's render with the
    switch off: a request no fixable legacy-device-request finding names, a shared GPU, a report-only kind).
    `partial` gets, for a switch that renders claims but keeps a request the migration moves, (the switch, its render,
    the device requests left that the migration moves), for ownswitch.left_by."""
    from dramigrate.helm.chartvalues import packed_defaults
    from dramigrate.helm.values import get_path, walk

    leaves = list(walk(sources.merged))
    for key, values in packed_defaults(root).items():  # a packed subchart's switch (open-webui's ollama dependency)
        leaves += [
            Leaf((key, *leaf.path), leaf.value)
            for leaf in walk(values)
            if get_path(sources.merged, (key, *leaf.path)) is None
        ]
    for leaf in leaves:
        if leaf.value is not False or not leaf.path:
            continue
        named = [str(p) for p in leaf.path if isinstance(p, str)]
        if not named or not (_SWITCH_KEY.match(named[-1]) or (named[-1] == "enabled" and named[-2:-1] in _SWITCHES)):
            continue
        values = override(sources, with_paths(sources.merged, [(leaf.path, True)]))
        rendered = cached_render(root, copts.render((work.values_file(values),), sets=False))
        if rendered.error or "resourceClaimTemplateName" not in rendered.stream:
            continue
        uses = device_uses(rendered.stream, rules)
        left = {key: value for key, value in uses.items() if _moved(key, base, findings)}
        if len(uses) < len(base) and not left:
            return leaf
        if partial is not None:
            partial.append((leaf, rendered.stream, left))
    return None


def _moved(key: DeviceKey, base: dict[DeviceKey, Any], findings: list[Finding]) -> bool:
    """Whether the manifest migration moves the device request `key` of a render with the chart's own switch on to a
    claim: a request the render with the switch off does not have, or one a fixable legacy-device-request finding of
    that render names."""
    return key not in base or any(f.rule == "legacy-device-request" and f.fixable and matches(f, key) for f in findings)


def _report_switch(outcome: ChartOutcome, leaf: Leaf, sources: ValueSources, root: Path) -> None:
    loc = locate(leaf.path, sources)
    setting = f"{display(leaf.path)}=true"
    outcome.findings.append(
        Finding(
            "chart-dra-switch",
            RULES["chart-dra-switch"][0],
            f"the chart has its own DRA switch: set {setting} (with it on, the chart renders ResourceClaims instead "
            "of device-plugin requests); fix writes it into the values file, not into the templates",
            loc.file or f"{outcome.display}/values.yaml",
            loc.line,
        )
    )
    for f in outcome.findings:
        if f.resource:
            f.related.append(Location(loc.file or f"{outcome.display}/values.yaml", loc.line, 0, f"set {setting}"))


def _use_switch(outcome: ChartOutcome, root: Path, leaf: Leaf, copts: ChartOptions) -> None:
    """fix: the switch goes on in the last -f file the user named, else in the chart's values.yaml."""
    from dramigrate.documents import parse_document, split_documents, start_edit

    path = copts.values_files[-1] if copts.values_files else root / "values.yaml"
    rel = str(path.resolve()) if copts.values_files else "values.yaml"
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    yf = split_documents(str(path), before.encode("utf-8"))
    doc = next((d for d in yf.documents if parse_document(str(path), d) is not None), None)
    if doc is None or not isinstance(doc.data, dict):
        _manual(outcome, f"cannot set {display(leaf.path)} in {path}: it is not a YAML mapping", "")
        return
    start_edit(doc)
    node = doc.data
    for key in leaf.path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[leaf.path[-1]] = True
    outcome.changes = [Change(rel, before if path.is_file() else None, yf.render())]
    if not copts.values_files:  # the chart's defaults change: its version too, as for any rewrite
        from dramigrate.helm.conventions import chart_bump

        outcome.changes += chart_bump(root, f"DRA ResourceClaims on by default ({display(leaf.path)}=true)")
    outcome.checked.append(f"the chart's own switch {display(leaf.path)}=true")
    for f in outcome.findings:
        if f.resource:
            f.fixed = True
