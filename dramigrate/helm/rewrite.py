"""Rewriting a chart's sources (the proof that a rewrite renders what dramigrate would write is in prove.py).

The rewrite touches only what must change: each workload template that renders device requests keeps
its text inside a `define` and is rendered through the migration helper (engine.py); a new
`templates/_dramigrate.tpl` holds the helper, a new `templates/dramigrate-resourceclaimtemplates.yaml`
renders the ResourceClaimTemplates; values.yaml changes only when the target needs a resource.k8s.io
version offline renders cannot pick (Kubernetes below 1.34), through the round-trip YAML machinery so
its comments stay. Every other file stays byte for byte.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.config import Settings
from dramigrate.documents import CRLF_OR_LF, LINE_END, line_ends_kept
from dramigrate.helm.engine import CLAIMS_FILE, HELPER_FILE, SOURCE_MARK, claims_text, helper_text, wrap_source
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

_OPENERS = {"if", "range", "with", "define", "block"}


class RewriteError(Exception):
    """A template shape the rewrite does not handle; the chart needs manual work."""


@dataclass
class Change:
    rel: str  # path relative to the chart root
    before: str | None  # None for a new file
    after: str


def with_line_ends(path: Path, change: Change) -> Change:
    """The change as written to path, with the file's own line ends: the rewrites read text through Path.read_text,
    which turns CRLF and a lone CR into LF, so a CRLF file (hpe-vulnerability-analysis' values.yaml) keeps CRLF, a
    file of old-Mac CR line ends keeps them (was refused as "file changed since it was read"), a file mixing them
    keeps each line's own, and the check that the file did not change since it was read compares the bytes on disk."""
    if change.before is None:
        return change
    try:
        raw = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return change
    if raw == change.before:
        return change
    for breaks in (CRLF_OR_LF, LINE_END):  # a CR alone inside a line read as text, or as a line end
        if breaks.sub("\n", raw) == change.before:
            return Change(change.rel, raw, line_ends_kept(raw, change.after, breaks))
    return change


# --- Go template actions ---------------------------------------------------------------------------------


_ACTION_STOP = re.compile(r"\}\}|/\*|[\"'`]")


def _actions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, keyword) of every `{{ ... }}` action, quoted strings and comments respected."""
    out: list[tuple[int, int, str]] = []
    pos = 0
    while (start := text.find("{{", pos)) >= 0:
        i = start + 2
        if text.startswith("-", i):
            i += 1
        body_start = i
        while i < len(text):
            stop = _ACTION_STOP.search(text, i)  # the action's end, a comment or a string: what the scan skips
            if stop is None:
                i = len(text)
                break
            i = stop.start()
            if stop.group(0) == "}}":
                break
            if stop.group(0) == "/*":
                close = text.find("*/", i + 2)
                i = len(text) if close < 0 else close + 2
                continue
            i = _skip_string(text, i)
        end = min(len(text), i + 2)
        body = text[body_start:i].strip().lstrip("-").strip() if i < len(text) else ""
        word = re.match(r"[A-Za-z_]+", body)
        out.append((start, end, word.group(0) if word and not body.startswith("/*") else ""))
        pos = end
    return out


def _skip_string(text: str, i: int) -> int:
    quote = text[i]
    j = i + 1
    while j < len(text):
        if text[j] == "\\" and quote != "`":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        j += 1
    return j


def split_defines(text: str) -> tuple[str, str]:
    """A template's top-level `define` blocks, moved out so the rest can be wrapped in a define
    (defines do not nest): (the defines, the rest)."""
    depth = 0
    spans: list[tuple[int, int]] = []
    open_define = -1
    for start, end, word in _actions(text):
        if word == "block":
            raise RewriteError("it uses {{ block }}, which defines a template inside the file")
        if word in _OPENERS:
            if word == "define" and depth == 0:
                open_define = start
            depth += 1
        elif word == "end":
            depth -= 1
            if depth == 0 and open_define >= 0:
                stop = end + 1 if text.startswith("\n", end) else end
                spans.append((open_define, stop))
                open_define = -1
        if depth < 0:
            raise RewriteError("its {{ end }} actions do not balance")
    defines = "".join(text[a:b] for a, b in spans)
    rest, pos = [], 0
    for a, b in spans:
        rest.append(text[pos:a])
        pos = b
    rest.append(text[pos:])
    return defines, "".join(rest)


def wrapped_sources(chart_dir: Path, chart_name: str) -> set[str]:
    """Templates of a chart dramigrate wrapped already (on an earlier run)."""
    out = set()
    templates = chart_dir / "templates"
    if not templates.is_dir():
        return out
    marker = f'{{{{- define "{chart_name}.{SOURCE_MARK}'
    for path in templates.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".tpl") and not path.name.startswith("_"):
            try:
                head = path.read_text(encoding="utf-8")[:400]
            except (OSError, UnicodeDecodeError):
                continue
            if marker in head:
                out.add(path.relative_to(chart_dir).as_posix())
    return out


# --- the rewrite -------------------------------------------------------------------------------------------


def chart_meta(chart_dir: Path) -> Any:
    """A chart's Chart.yaml as data (read only: shared between callers). The file is read each time; its text is
    parsed once (an umbrella's fix asked for its 17 subcharts' names 430 times, 0.5 s of pure-Python parsing), also
    when render threads ask at the same moment (the cache alone lets both miss and parse)."""
    text = (chart_dir / "Chart.yaml").read_text(encoding="utf-8")
    with _CHART_YAML_LOCK:
        return _parsed_chart_yaml(text)


_CHART_YAML_LOCK = threading.Lock()


@functools.lru_cache(maxsize=256)
def _parsed_chart_yaml(text: str) -> Any:
    return yaml.safe_load(text) or {}


def chart_dependencies(chart_dir: Path) -> list[dict[str, Any]]:
    """A chart's dependencies as Helm loads them: Chart.yaml's `dependencies`, or, for a chart of apiVersion v1
    (Helm 2's layout, which Helm 3 still loads), those of its requirements.yaml."""
    meta = chart_meta(chart_dir)
    deps = meta.get("dependencies")
    if not deps and str(meta.get("apiVersion")) == "v1" and (chart_dir / "requirements.yaml").is_file():
        with _CHART_YAML_LOCK:
            requirements = _parsed_chart_yaml((chart_dir / "requirements.yaml").read_text(encoding="utf-8"))
        deps = requirements.get("dependencies") if isinstance(requirements, dict) else None
    return [d for d in deps if isinstance(d, dict)] if isinstance(deps, list) else []


def chart_name(chart_dir: Path) -> str:
    return str(chart_meta(chart_dir).get("name") or chart_dir.name)


def build_rewrite(
    root: Path, sources: dict[str, set[str]], rules: RuleSet, settings: Settings, target: Target
) -> list[Change]:
    """The changes for a chart whose templates `sources` ({chart dir relative to root: template paths
    relative to that dir}) render device requests."""
    changes: list[Change] = []
    for sub, rels in sorted(sources.items()):
        chart_dir = root / sub if sub else root
        name = chart_name(chart_dir)
        wrapped = wrapped_sources(chart_dir, name)
        for rel in sorted(rels - wrapped):
            path = chart_dir / rel
            before = path.read_text(encoding="utf-8")
            defines, rest = split_defines(before)
            after = defines + wrap_source(name, rel, rest)
            changes.append(Change(_join(sub, rel), before, after))
        all_sources = sorted(rels | wrapped)
        for rel, text in (
            (HELPER_FILE, helper_text(name, rules, settings)),
            (CLAIMS_FILE, claims_text(name, all_sources)),
        ):
            path = chart_dir / rel
            before = path.read_text(encoding="utf-8") if path.exists() else None
            if before != text:
                changes.append(Change(_join(sub, rel), before, text))
        values = _values_change(chart_dir, target)
        if values is not None:
            changes.append(Change(_join(sub, "values.yaml"), values[0], values[1]))
    return changes


def _join(sub: str, rel: str) -> str:
    return f"{sub}/{rel}" if sub else rel


def _values_change(chart_dir: Path, target: Target) -> tuple[str | None, str] | None:
    """Targets below 1.34: the resource.k8s.io version goes into values.yaml, since offline renders read
    every version as served. Newer targets leave values.yaml alone (the helper picks v1)."""
    if target.at_least("1.34"):
        return None
    api = target.api_version
    path = chart_dir / "values.yaml"
    before = path.read_text(encoding="utf-8") if path.exists() else None
    current = (yaml.safe_load(before) if before else None) or {}
    block = current.get("dramigrate") if isinstance(current, dict) else None
    if isinstance(block, dict) and block.get("resourceApiVersion") == api:
        return None
    if isinstance(block, dict):
        return before, _set_in_values(path, before or "", api)
    text = before or ""
    if text and not text.endswith("\n"):
        text += "\n"
    addition = (
        "\n# dramigrate: the resource.k8s.io version of the DRA ResourceClaimTemplates (templates/_dramigrate.tpl).\n"
        '# "" picks the newest the cluster serves (v1, then v1beta2, then v1beta1); offline renders see every\n'
        f"# version as served, so a target below Kubernetes 1.34 names it.\n"
        f"dramigrate:\n  resourceApiVersion: {api}\n"
    )
    return before, text + addition


def _set_in_values(path: Path, text: str, api: str) -> str:
    """Set dramigrate.resourceApiVersion in an existing block, comments and layout kept."""
    from dramigrate.documents import parse_document, split_documents, start_edit

    yf = split_documents(str(path), text.encode("utf-8"))
    doc = next(d for d in yf.documents if parse_document(str(path), d) is not None)
    start_edit(doc)
    doc.data["dramigrate"]["resourceApiVersion"] = api
    return yf.render()


def _terms(expr: str) -> list[str]:
    """The top-level terms of a template expression (`and .a (or .b .c)` -> `and`, `.a`, `(or .b .c)`)."""
    out, depth, term = [], 0, ""
    plain = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: "\0" * len(m.group(0)), expr)  # a quoted space is no gap
    for ch, seen in zip(expr, plain, strict=True):
        depth += {"(": 1, ")": -1}.get(seen, 0)
        if seen == " " and depth == 0:
            out, term = (out + [term]) if term else out, ""
        else:
            term += ch
    return out + [term] if term else out
