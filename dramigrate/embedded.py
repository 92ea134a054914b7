"""Device requests held inside strings: reported, never rewritten, never silent.

Some objects carry a pod spec or a whole manifest as a string: Argo's `podSpecPatch` and
`resource.manifest`, JobSet or MPIJob templates kept in a ConfigMap for a launcher to apply. dramigrate
does not rewrite inside strings (the string is someone else's document), but a device request there
is still a device request: it gets a warning with the file and line where it sits.

Charts also hide requests in a Secret's base64 `data`: z2jh writes its whole values into the hub Secret
(`{{ .Values | toYaml | b64enc }}`), and KubeSpawner creates the user pods from `singleuser.extraResource`
there. Those pods keep the device plugin whatever fix does to the chart's own pods (its placeholders), so
`secret_findings` reports each such request in a rendered chart.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

import yaml

from dramigrate.detect import ObjectInfo, objects_of
from dramigrate.documents import Document
from dramigrate.fastyaml import seen
from dramigrate.findings import RULES, Finding
from dramigrate.memo import remember
from dramigrate.rules import RuleSet
from dramigrate.suppress import source_lines
from dramigrate.triage import KUBESPAWNER_KEYS

SECTIONS = ("limits", "requests", *KUBESPAWNER_KEYS)
# The string of the object itself that kubectl keeps; its requests are the object's own, reported already.
SKIP_KEYS = {"kubectl.kubernetes.io/last-applied-configuration"}
_SECTION_LINE = re.compile(r"(?m)^[ \t\-]*[\"']?(?:limits|requests)[\"']?[ \t]*:")
# A literal block scalar's indicator line (`key: |`, `- |-`, with an optional comment): its lines are the string's.
_LITERAL = re.compile(r"(?:^|[:\-])[ \t]*\|[-+0-9]*[ \t]*(?:#.*)?$")
_MAX_DEPTH = 3  # a manifest in a string in a manifest in a string ...


def embedded_findings(path: str, doc: Document, rules: RuleSet) -> list[Finding]:
    """A warning for each string of the document that holds a device request."""
    out: list[Finding] = []
    met = seen(doc)
    if met is not None and not met.texts:  # the parse met no string holding a section word: none to look into
        return out
    for info in objects_of(doc.data):
        for parent, key, text in _strings(info.obj):
            resources = _requests_in(text, rules, 0)
            if not resources:
                continue
            out.append(_finding(path, doc, info, parent, key, text, resources))
    return out


def held_as_text(docs: Iterable[Any], rules: RuleSet, changed: set[tuple[str, str]]) -> str:
    """A clause for a proof's failure on rendered documents whose objects hold device requests in strings (jump-cannon's
    gpu-session-template ConfigMap holds its RayCluster, rendered by the helper that renders the chart's own): the
    manifest migration leaves a string as it is, while a chart rewritten at the template writes its claims there
    too, so the renders cannot be equal; what to do instead. Only objects the rewrite renders otherwise count
    (`changed`: kind, name). '' when none does."""
    held = []
    for doc in docs:
        for info in objects_of(doc):
            if (info.kind, info.name or info.generate_name) not in changed:
                continue
            kind = f"{info.kind}/{info.name or info.generate_name}"
            held += [f"{kind} {key}" for _, key, text in _strings(info.obj) if _requests_in(text, rules, 0)]
    said = list(dict.fromkeys(held))  # a document rendered twice (a hook and its copy) is said once
    if not said:
        return ""
    return (
        f"; with these values {', '.join(said)} hold{'s' if len(said) == 1 else ''} a device request "
        "as text (a pod spec in a string), which the manifest migration leaves as it is while the rewritten template "
        "writes its claims there too: keep the device-plugin requests and serve them with a DeviceClass with "
        "extendedResourceName (--strategy extended-resource, Kubernetes 1.34+), or migrate by hand, deciding what "
        "the pods made from that text should ask for"
    )


def _strings(root: Any) -> list[tuple[Any, Any, str]]:
    """Every (container, key, string) below root whose string may hold a manifest, in document order."""
    found: list[tuple[Any, Any, str]] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                if key not in SKIP_KEYS and ":" in value and ("\n" in value or "{" in value):
                    found.append((node, key, value))
            elif isinstance(value, dict | list):
                stack.append(value)
    return found


# a string's device requests by its text and depth, with the rules they were read with: a chart's proof reads the same
# strings (a RayCluster's scripts, a ConfigMap's manifests) in the render of every value set
_HELD: dict[tuple[str, int], tuple[RuleSet, list[str]]] = {}


def _requests_in(text: str, rules: RuleSet, depth: int) -> list[str]:
    """The device resources a string asks for: from its parsed documents, or from its lines when it does not
    parse (a template inside the string)."""
    if not any(s in text for s in SECTIONS):
        return []
    known = _HELD.get((text, depth))
    if known is None or known[0] is not rules:
        known = remember(_HELD, (text, depth), (rules, _read_requests(text, rules, depth)), 2048)
    return list(known[1])


def _read_requests(text: str, rules: RuleSet, depth: int) -> list[str]:
    try:
        docs = list(yaml.load_all(str(text), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return _requests_in_lines(text, rules)
    found: list[str] = []
    stack: list[Any] = list(docs)
    seen: set[int] = set()  # an alias is the same object again: a string's alias bomb is walked once per node
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, dict):
            for section in SECTIONS:
                values = node.get(section)
                if isinstance(values, dict):
                    found.extend(str(k) for k in values if rules.is_device_candidate(str(k)))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and depth < _MAX_DEPTH and ":" in node:
            found.extend(_requests_in(node, rules, depth + 1))
    return sorted(set(found))


def _requests_in_lines(text: str, rules: RuleSet) -> list[str]:
    """A string that is not YAML (a template): known device resources named after a limits/requests line."""
    section = _SECTION_LINE.search(text)
    if section is None:
        return []
    names = re.findall(r"[\"']?([a-z0-9][-a-z0-9.]*\.[a-z]{2,}/[-\w.]+)[\"']?[ \t]*:", text[section.start() :])
    return sorted({n for n in names if rules.is_device_candidate(n) and rules.lookup(n)})


def _finding(
    path: str, doc: Document, info: ObjectInfo, parent: Any, key: Any, text: str, resources: list[str]
) -> Finding:
    line, column = doc.line_of(parent, key)
    lines = source_lines(doc.body)  # as line_of numbers them (not at U+2028)
    at = min((i for r in resources if (i := text.find(r)) >= 0), default=-1)
    row = line - doc.start_line
    if at >= 0 and 0 <= row < len(lines) and _LITERAL.search(lines[row]):  # content starts a line below
        line += 1 + text[:at].count("\n")
        row = line - doc.start_line
        column = lines[row].find(text[at:].split("\n", 1)[0]) + 1 if 0 <= row < len(lines) else 1
        column = max(column, 1)
    where = f"{key}" if isinstance(key, str) else f"item {key}"
    return Finding(
        "embedded-device-request",
        RULES["embedded-device-request"][0],
        f"{', '.join(resources)} requested inside the string {where} (a pod spec or manifest held as text, such "
        "as Argo's podSpecPatch or resource.manifest, or a template in a ConfigMap): dramigrate does not rewrite "
        "inside strings; migrate it by hand, or keep the manifest in its own file",
        path,
        line,
        column,
        info.kind,
        info.namespace,
        info.name or info.generate_name,
        resource=resources[0],
    )


def secret_findings(stream: str, name: str, rules: RuleSet) -> list[Finding]:
    """A warning for each base64 value of a Secret's `data` in a rendered stream that holds a device request,
    at the value's line of the stream."""
    try:
        nodes = list(yaml.compose_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return []
    out: list[Finding] = []
    for node in nodes:
        fields = _scalar_fields(node)
        data = fields.get("data")
        if fields.get("kind") is None or fields["kind"].value != "Secret" or not isinstance(data, yaml.MappingNode):
            continue
        meta = fields.get("metadata")
        meta_fields = _scalar_fields(meta) if meta is not None else {}
        secret = meta_fields["name"].value if "name" in meta_fields else ""
        namespace = meta_fields["namespace"].value if "namespace" in meta_fields else ""
        for key, value in data.value:
            text = _decoded(value)
            resources = _requests_in(text, rules, 0) if text else []
            if not resources:
                continue
            out.append(
                Finding(
                    "embedded-device-request",
                    RULES["embedded-device-request"][0],
                    f"{', '.join(resources)} requested inside the Secret's data {key.value} (base64): pods that a "
                    "controller creates from it (JupyterHub's KubeSpawner makes the user pods from the chart's "
                    "values this way) keep asking the device plugin, whatever fix does to the chart's own pods; "
                    "dramigrate does not rewrite inside strings: migrate those pods in the controller's settings",
                    name,
                    value.start_mark.line + 1,
                    value.start_mark.column + 1,
                    "Secret",
                    namespace,
                    secret,
                    resource=resources[0],
                )
            )
    return out


def _scalar_fields(node: Any) -> dict[str, Any]:
    """A mapping node's values by their plain string keys."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode) and isinstance(k.value, str)}


def _decoded(node: Any) -> str:
    """The text of a base64 scalar, or "" when it is not base64 of UTF-8 text."""
    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str) or len(node.value) > 1 << 22:
        return ""
    try:
        return base64.b64decode("".join(node.value.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return ""
