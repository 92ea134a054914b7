"""Node labels from a values map the pod's `nodeSelector:` renders whole (`{{- toYaml .Values.gpu.nvidia.nodeSelector |
nindent 8 }}`) that the claim makes unnecessary: a GPU Feature Discovery presence label (`nvidia.com/gpu.present:
"true"`) that the device class implies, so the manifest migration removes it from the pod and adds no selector. The
DRA branch renders the map without it (`omit`), as the migration leaves the pod, and the proof compares with that
migration; other labels from values stay on the pods (the chart cannot translate them into CEL), with a warning."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dramigrate.helm.goexpr import as_arg
from dramigrate.helm.templatelines import Edit, line_indent
from dramigrate.helm.values import Leaf
from dramigrate.rules import RuleSet

_MAP_LINE = re.compile(r"\s*\{\{-?\s*toYaml\s+(\.Values(?:\.[A-Za-z_]\w*)+)\s*\|\s*nindent\s+\d+\s*-?\}\}\s*")


def _written_maps(root: Path, rules: RuleSet) -> set[str]:
    """The values maps (`.Values.a.b`) rendered whole right under a `nodeSelector:` line of the chart's own templates
    that write a literal device key (pattern A, whose rewrite leaves the labels out: idiomatic._label_edits; the
    pass-through of a resources map keeps the pod's node selection as it is)."""
    from dramigrate.helm.idiomatic import find_devices

    out: set[str] = set()
    templates = root / "templates"
    for path in sorted(templates.rglob("*")) if templates.is_dir() else []:
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        maps = {
            m.group(1)
            for line, after in zip(lines, lines[1:], strict=False)
            if line.strip() == "nodeSelector:" and (m := _MAP_LINE.fullmatch(after))
        }
        if maps and find_devices(text, path.relative_to(root).as_posix(), rules):
            out |= maps
    return out


def omittable(root: Path, found: list[tuple[str, Leaf]], rules: RuleSet) -> bool:
    """Whether each node label from values (`found`: label, the values leaf that sets it) is one the migration drops
    with no selector (a feature label whose value the device class implies) and sits in a map a template renders
    whole under `nodeSelector:`: the rewrite then leaves it out of the DRA branch (map_edit)."""
    if not found:
        return False
    maps = _written_maps(root, rules)
    for key, leaf in found:
        rule = rules.labels.get(key)
        if rule is None or rule.role != "feature" or rule.cel or str(leaf.value) not in rule.implied:
            return False
        if leaf.path[-1:] != (key,) or not all(isinstance(p, str) and p.isidentifier() for p in leaf.path[:-1]):
            return False
        if ".Values." + ".".join(str(p) for p in leaf.path[:-1]) not in maps:
            return False
    return True


def map_line(lines: list[str], pod: int, pod_end: int) -> int:
    """The pod's `nodeSelector:` line whose map a values map renders whole (0-based), or -1."""
    return next(
        (
            at
            for at in range(pod + 1, min(pod_end, len(lines) - 1))
            if lines[at].strip() == "nodeSelector:" and _MAP_LINE.fullmatch(lines[at + 1])
        ),
        -1,
    )


def map_edit(lines: list[str], at: int, keys: list[str], unless: str) -> Edit:
    """The `nodeSelector:` at line `at` (map_line) rendered as it is unless `unless` (the claim's condition), else
    without the labels `keys` (nothing when they were all it held, as the migration drops an emptied nodeSelector)."""
    ind = " " * line_indent(lines[at])
    expr = _MAP_LINE.fullmatch(lines[at + 1]).group(1)  # type: ignore[union-attr]
    left = f"omit {expr} {' '.join(json.dumps(k) for k in keys)}"
    return Edit(
        at,
        at + 2,
        [
            f"{ind}{{{{- if not {as_arg(unless)} }}}}",
            lines[at],
            lines[at + 1],
            f"{ind}{{{{- else if {left} }}}}",
            lines[at],
            lines[at + 1].replace(f"toYaml {expr}", f"toYaml ({left})", 1),
            f"{ind}{{{{- end }}}}",
        ],
    )
