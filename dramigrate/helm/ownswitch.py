"""A chart whose own DRA switch covers only some of its device requests (llm-d-modelservice's `accelerator.dra` with
the requester values: the switch turns the prefill pods' helper to claims, but the requester ReplicaSet writes
`nvidia.com/gpu` itself, and the prefill container keeps the `nvidia.com/gpu` its values set beside the new claim).

Such a switch is not used (it would leave device-plugin requests, or ask for the device twice), and the chart goes on
to the rewrite; when that ends as manual work, the message says what turning the chart's own switch on leaves, read
from the render with it on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dramigrate.findings import Finding
from dramigrate.helm.prove import documents
from dramigrate.helm.values import Leaf, display, key_line


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


def left_by(leaf: Leaf, stream: str, uses: dict[tuple[str, ...], Any], findings: list[Finding], root: Path) -> str:
    """What the chart's own switch leaves on the device plugin, from its render with the switch on (`uses`:
    device_uses of that render), in words for a manual message: for each, what to change by hand, read from the
    device-plugin render's `findings` (the chart at `root`): a device key the values set beside the claim the switch
    adds is left out of the values, a key a template writes itself is a line the switch does not reach."""
    docs = {}
    for doc in documents(stream):
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            docs[(str(doc.get("kind", "")), str(doc["metadata"].get("name") or ""))] = doc
    said = []
    for kind, _, name, path, container, resource in sorted(uses):
        node = _node(docs.get((kind, name)), path)
        claims = isinstance(node, dict) and isinstance(node.get("resources"), dict) and node["resources"].get("claims")
        where = _where(findings, (kind, name, container, resource), root, bool(claims))
        said.append(f"{kind}/{name} container {container} {resource}{' beside its claim' if claims else ''}{where}")
    return (
        f"; the chart has its own DRA switch {display(leaf.path)}, but with it on {len(said)} device-plugin "
        f"request(s) stay: {', '.join(dict.fromkeys(said))}{_held_as_text(findings)}"
    )


def _held_as_text(findings: list[Finding]) -> str:
    """What the message adds for device requests held in strings of the device-plugin render (llm-d's requester
    ReplicaSet holds its decode containers in the `dual-pod.llm-d.ai/server-patch` annotation): the manifest migration
    leaves a string as it is, while a chart's own switch may write its claims into it (llm-d's does), so the two
    renders cannot be made equal by the changes named before, and the string is the user's to decide."""
    held = []
    for f in findings:
        where = re.search(r"inside the string (\S+) \(", f.message)
        if f.rule == "embedded-device-request" and where:
            held.append(f"{f.kind}/{f.name} {where.group(1)}")
    if not held:
        return ""
    return (
        f"; and {', '.join(dict.fromkeys(held))} hold{'s' if len(held) == 1 else ''} a device request as text (a pod "
        "spec in a string), which the manifest migration leaves as it is while the chart's switch may write its "
        "claims there too: decide by hand what the pods made from that text should ask for"
    )


def _where(findings: list[Finding], key: tuple[str, str, str, str], root: Path, beside: bool) -> str:
    """Where the device request `key` (kind, name, container, resource) is set, and what to change there: a device key
    a values map holds (the values lines that set it, in limits and in requests) is left out of the values with the
    switch on; a key a template writes is named at its line, with the values settings that render it and set its
    count, which no values file can turn into a claim (a count of 0 takes the device away)."""
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
    return f" ({_shown(found.file, root)}:{found.line} writes it, {what}{given})"


def _path(text: str) -> tuple[str | int, ...]:
    """A values path from its display (`prefill.containers[0].resources`)."""
    return tuple(int(i) if i else k for k, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", text))


def _shown(file: str, root: Path) -> str:
    """A file as the manual message names it: a chart file from the chart's folder, any other as it is."""
    try:
        return Path(file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return file


def note(outcome: Any, text: str, hint: str) -> None:
    """The manual message of a chart outcome, and its chart-rewrite-unproven finding, extended with `text` (before
    `hint`, the closing advice, when the message ends with it)."""

    def extended(message: str) -> str:
        return f"{message.removesuffix(hint)}{text}{hint}" if message.endswith(hint) else f"{message}{text}"

    outcome.manual = extended(outcome.manual)
    for f in outcome.findings:
        if f.rule == "chart-rewrite-unproven":
            f.message = extended(f.message)
