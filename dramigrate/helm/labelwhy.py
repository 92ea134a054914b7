"""Why a chart rewrite cannot move a device node label into the claim: the template line that writes the label, where
it writes it (nodeSelector, required or preferred node affinity), what it reads from values, and why the rewrite of
that shape has no place for the CEL selectors the manifest migration gives the claim. Read from the original render
and its migration (the label keys the migration takes off the pods) and from the chart's template files."""

from __future__ import annotations

import re
from pathlib import Path

PASSTHROUGH = (
    "the pass-through takes each claim template's spec from values (resourceClaimTemplates, in the -dra.yaml files), "
    "so no template logic turns the values the template selects nodes with into the claim's selectors at render time"
)
LITERAL = "the rewrite leaves this node selection of the chart as it is"
AFFINITY_FED = "the rewrite translates a label value a template expression writes only in the pod's nodeSelector"
AFFINITY_LITERAL = (
    "the rewrite drops a node affinity the template writes literally only where the migration drops the whole of it, "
    "not a requirement beside others the migration keeps"
)
_WHERE = (
    ("preferredDuringSchedulingIgnoredDuringExecution", "a preferred node affinity"),
    ("requiredDuringSchedulingIgnoredDuringExecution", "a required node affinity"),
    ("nodeSelector", "the pod's nodeSelector"),
)
_VALUES = re.compile(r"\{\{[^{}]*?(\$?\.Values(?:\.[\w-]+)+)[^{}]*\}\}")


def moved_labels(original: str, migrated: str) -> list[str]:
    """The node label keys the pods of `original` select on that the migration took off them, in order."""
    before, after = _label_keys(original), set(_label_keys(migrated))
    return [k for k in before if k not in after]


def _label_keys(stream: str) -> list[str]:
    from dramigrate.helm.labelleaves import pod_labels

    return list(pod_labels(stream))


def label_refusal(root: Path, original: str, migrated: str, passthrough: bool) -> str:
    """The reason (a clause ending in `; `) naming the template line that writes the first device label the
    migration moves off the pods, where, what it reads from values and why the rewrite cannot follow; '' when no
    template file writes such a label as a key of its own (the label comes whole from values, or from a library)."""
    for key in moved_labels(original, migrated):
        found = _written(root, key)
        if found is None:
            continue
        rel, index, lines = found
        where = _where(lines, index)
        moves = "moves it into CEL selectors of the claim"
        if where.startswith("a preferred"):
            moves = "makes it a firstAvailable list of the claim's CEL selectors"
        reads = _reads(lines, index)
        fed = f", its values from `{reads[0]}` (line {reads[1] + 1})" if reads else ""
        why = PASSTHROUGH if passthrough else LITERAL
        if not passthrough and "affinity" in where:
            why = AFFINITY_FED if reads else AFFINITY_LITERAL
        return (
            f"{rel}:{index + 1}: the pods select nodes by a device label that a template writes itself, {key} in "
            f"{where}{fed} (the migration {moves}; {why}): translate the label by "
            "hand; "
        )
    return ""


def _written(root: Path, key: str) -> tuple[str, int, list[str]] | None:
    """The first template line writing `key` as a label key (`key: <key>` in an affinity, in flow style too, `<key>:`
    in a nodeSelector): (the file relative to the chart, its 0-based index, the file's lines)."""
    pattern = re.compile(r"^\s*(?:-\s*)?\{?\s*(?:key:\s*)?[\"']?" + re.escape(key) + r"[\"']?\s*(?:[:,}]|$)")
    for path in sorted((root / "templates").rglob("*")) + sorted((root / "charts").glob("*/templates/**/*")):
        if not path.is_file() or path.suffix not in (".yaml", ".yml", ".tpl"):
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for i, line in enumerate(lines):
            if pattern.match(line):
                return path.relative_to(root).as_posix(), i, lines
    return None


def _where(lines: list[str], index: int) -> str:
    """Where the label at line `index` sits: the nearest enclosing nodeSelector or node affinity key above it."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for line in reversed(lines[:index]):
        text = line.strip()
        if not text or text.startswith("{{") or len(line) - len(line.lstrip()) >= indent:
            continue
        indent = len(line) - len(line.lstrip())
        for word, said in _WHERE:
            if text.split(":", 1)[0].lstrip("- ") == word:  # not `nodeSelectorTerms:` for `nodeSelector:`
                return said
    return "the pod's node selection"


def _reads(lines: list[str], index: int) -> tuple[str, int] | None:
    """The first values path a template expression reads for the label at line `index`: on its line, or in the
    lines of its requirement below (`values:` then `{{- toYaml .Values.gpus | nindent 22 }}`)."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for i in range(index, min(len(lines), index + 12)):
        line = lines[i]
        shallow = len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith(("operator", "values"))
        if i > index and line.strip() and not line.strip().startswith("{{") and shallow:
            break  # the next requirement or term
        if m := _VALUES.search(line):
            return m.group(1).lstrip("$"), i
    return None
