"""A chart whose own DRA switch covers only some of its device requests (llm-d-modelservice's `accelerator.dra` with
the requester values: the switch turns the prefill pods' helper to claims, but the requester ReplicaSet writes
`nvidia.com/gpu` itself, and the prefill container keeps the `nvidia.com/gpu` its values set beside the new claim).

Such a switch is not used (it would leave device-plugin requests, or ask for the device twice), and the chart goes on
to the rewrite; when that ends as manual work, the message says what turning the chart's own switch on leaves, read
from the render with it on.
"""

from __future__ import annotations

import re
from typing import Any

from dramigrate.helm.prove import documents
from dramigrate.helm.values import Leaf, display


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


def left_by(leaf: Leaf, stream: str, uses: dict[tuple[str, ...], Any]) -> str:
    """What the chart's own switch leaves on the device plugin, from its render with the switch on (`uses`:
    device_uses of that render), in words for a manual message."""
    docs = {}
    for doc in documents(stream):
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            docs[(str(doc.get("kind", "")), str(doc["metadata"].get("name") or ""))] = doc
    said = []
    for kind, _, name, path, container, resource in sorted(uses):
        node = _node(docs.get((kind, name)), path)
        claims = isinstance(node, dict) and isinstance(node.get("resources"), dict) and node["resources"].get("claims")
        said.append(f"{kind}/{name} container {container} {resource}{' beside its claim' if claims else ''}")
    return (
        f"; the chart has its own DRA switch {display(leaf.path)}, but with it on {len(said)} device-plugin "
        f"request(s) stay: {', '.join(dict.fromkeys(said))}"
    )


def note(outcome: Any, text: str, hint: str) -> None:
    """The manual message of a chart outcome, and its chart-rewrite-unproven finding, extended with `text` (before
    `hint`, the closing advice, when the message ends with it)."""

    def extended(message: str) -> str:
        return f"{message.removesuffix(hint)}{text}{hint}" if message.endswith(hint) else f"{message}{text}"

    outcome.manual = extended(outcome.manual)
    for f in outcome.findings:
        if f.rule == "chart-rewrite-unproven":
            f.message = extended(f.message)
