"""Node selection the migration drops from a pod because its claim now asks for the device (GPU Feature Discovery's
`nvidia.com/gpu.present`, NFD's `intel.feature.node.kubernetes.io/gpu`), where a template writes it as literal YAML:
the rewrite puts those lines under the negation of the DRA switch, so with the switch off the render keeps them
byte for byte and with it on drops them, as the migration does. A label written from values is left to the values."""

from __future__ import annotations

import re
from typing import Any

FIELDS = ("nodeSelector", "affinity")
_KEY = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([^\s"'#{-][^:]*?))\s*:(?:\s|$)""")


def dropped(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, ...]]:
    """The pod-spec paths under nodeSelector and affinity that the migration removed: each nodeSelector label, and
    the topmost affinity key that went whole (a term edited inside a list is not named)."""
    out: list[tuple[str, ...]] = []

    def walk(a: dict[str, Any], b: dict[str, Any], path: tuple[str, ...]) -> None:
        for k, v in a.items():
            if k not in b and not (path == () and k == "nodeSelector"):
                out.append((*path, str(k)))
            elif isinstance(v, dict) and isinstance(b.get(k, {}), dict):
                walk(v, b.get(k, {}), (*path, str(k)))

    walk({k: old[k] for k in FIELDS if isinstance(old.get(k), dict)}, new, ())
    return out


def blocks(lines: list[str], pod: int, paths: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """The line ranges [start, stop) of the pod block at line `pod` that write `paths` as literal YAML, in order; a
    block whose every YAML line goes is taken whole (no `nodeSelector:` left empty). A path the template does not
    write literally (`{{ toYaml .Values.nodeSelector }}`) has none."""
    from dramigrate.helm.templatelines import block_end, is_control, parent_line

    def children(at: int) -> list[int]:
        end = block_end(lines, at) if at >= 0 else len(lines)
        return [i for i in range(at + 1, end) if not is_control(lines[i]) and parent_line(lines, i) == at]

    def literal(at: int) -> bool:
        return "{{" not in "".join(lines[at : block_end(lines, at)])

    def find(path: tuple[str, ...]) -> int:
        at = pod
        for part in path:
            at = next((i for i in children(at) if (m := _KEY.match(lines[i])) and part in m.groups()), -1)
            if at < 0:
                return -1
        return at

    found = {at for path in paths if (at := find(path)) >= 0 and literal(at)}
    changed = True
    while changed:  # a parent all of whose keys go, goes whole
        changed = False
        for parent in {parent_line(lines, at) for at in found} - {pod, -1}:
            if set(children(parent)) <= found and literal(parent):
                found = (found - set(children(parent))) | {parent}
                changed = True
    return sorted((at, block_end(lines, at)) for at in found)


def need(path: tuple[str, ...]) -> str:
    """A dropped path as an entry of what a values map needs of the pods it feeds (passthrough.template_edits),
    beside the sibling keys' names."""
    return " ".join(("unpin", *path))


def needed(needs: set[str]) -> list[tuple[str, ...]]:
    return sorted(tuple(n.split(" ")[1:]) for n in needs if n.startswith("unpin "))
