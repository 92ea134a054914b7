"""Templated files: a Go/Helm (or Jinja) template outside a chart is not a manifest, and is never skipped silently.

A file is templated when a template action stands where YAML expects a value or a line. Text that is data to
the YAML (a block scalar holding a chat template or a Prometheus rule, a quoted string) does not make the file
templated: the manifests around it are still migrated. A templated file that asks for a device is an error,
so a lint gate cannot pass it unchecked; any other templated file is a warning.
"""

from __future__ import annotations

import re

import yaml

from dramigrate.findings import RULES, Finding
from dramigrate.rules import RuleSet
from dramigrate.triage import mentions_device

# A Go template action where YAML expects a value or a line, or a quoted value that starts with a Helm action.
# Quoted {{ $labels }} in a Prometheus rule, or a values file's string for `tpl` in the middle of a value, is not one.
GO_TEMPLATE = re.compile(
    rb"(?m)^[ \t]*(?:- )?(?:[\w.\-/]+[ \t]*:[ \t]*)?\{\{"
    rb"|:[ \t]*[\"']\{\{-?\s*(?:\.Values|\.Release|\.Chart|\.Capabilities|include |template |toYaml |tpl |\$\.Values)"
)
# What makes a file that does not parse as YAML a template rather than broken YAML.
TEMPLATE_MARKUP = (b"{{", b"{%")


def template_line(raw: bytes) -> int | None:
    """The 1-based line of the first template action outside YAML data, or None when the file is not templated.

    Block scalars are found with the C event parser; an action on a line inside one is data, not a template.
    When the file does not parse, every action counts (the first one is reported)."""
    if b"{{" not in raw:  # both forms of GO_TEMPLATE hold it: a C search instead of a regex tried at every byte
        return None
    matches = list(GO_TEMPLATE.finditer(raw))
    if not matches:
        return None
    lines = [raw[: m.start()].count(b"\n") + 1 for m in matches]
    blocks = _block_scalar_lines(raw)
    if blocks is None:
        return lines[0]
    for line in lines:
        if not any(first <= line <= last for first, last in blocks):
            return line
    return None


def _block_scalar_lines(raw: bytes) -> list[tuple[int, int]] | None:
    """1-based (first, last) content lines of every block scalar (`|`, `>`), or None if the file is not YAML."""
    out: list[tuple[int, int]] = []
    try:
        for event in yaml.parse(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">"):
                # marks are 0-based; a block scalar's starts at its indicator (content from the next line) and
                # ends at column 0 of the line after its content, or inside the last line at the end of the stream
                end = event.end_mark
                out.append((event.start_mark.line + 2, end.line if end.column == 0 else end.line + 1))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    return out


def unparsed_template(raw: bytes) -> bool:
    """A file that did not parse as YAML and carries template markup: a template, not broken YAML."""
    return any(m in raw for m in TEMPLATE_MARKUP)


def templated_finding(path: str, line: int, column: int, raw: bytes, rules: RuleSet) -> Finding:
    how = "render it, pipe it in: helm template ... | dramigrate lint -"
    if mentions_device(raw, rules):
        return Finding(
            "templated-device-file",
            RULES["templated-device-file"][0],
            "a Go/Helm template outside a chart (no Chart.yaml above it) that asks for a device: it cannot be "
            f"checked or migrated until it is rendered; {how}",
            path,
            line,
            column,
        )
    return Finding(
        "templated-file",
        RULES["templated-file"][0],
        f"a Go/Helm template outside a chart (no Chart.yaml above it), not a manifest; {how}",
        path,
        line,
        column,
    )
