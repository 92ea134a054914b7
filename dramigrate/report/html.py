"""HTML migration report: one self-contained page (inline CSS, JS and SVG, no fetches) from the JSON report.

Every number on the page is computed here from the JSON report's document (report/json.py), so the page and
`--format json` agree by construction. The before/after views use the same unified diff that `diff` prints.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from dramigrate import __version__
from dramigrate.report.diff import unified
from dramigrate.report.escape import encodable, plain

# Each device-plugin key in a container yields exactly one finding of these rules on its pod template
# (detect.py; migrate.py recasts some), so counting them counts device requests.
REQUEST_RULES = frozenset(
    {
        "legacy-device-request",
        "extended-resource",
        "kustomize-patch",
        "report-only-kind",
        "shared-device",
        "invalid-count",
        "unknown-resource",
        "unknown-kind",
    }
)
# Requests dramigrate leaves as they are by design (the kind's controller rejects claims, a shared device, a
# request served through a DeviceClass extendedResourceName): reported, nothing to migrate by hand.
REPORT_ONLY_RULES = frozenset({"report-only-kind", "shared-device", "extended-resource"})
OUTCOMES = ("fixed", "manual", "report-only")
NOT_AN_OBJECT = "(not a Kubernetes object)"  # the kind shown for a request in a values file, say


@dataclass(frozen=True)
class FileChange:
    """One file as `diff` shows it: its path as displayed, the text before and the text fix would write."""

    path: str
    before: str
    after: str


def outcome(finding: dict[str, Any]) -> str:
    """fixed (this run fixes it; for diff: would fix), report-only (left as is by design) or manual."""
    if finding["fixed"] or finding.get("wouldFix"):
        return "fixed"
    return "report-only" if finding["rule"] in REPORT_ONLY_RULES else "manual"


def workload_key(finding: dict[str, Any]) -> tuple[str, str, str, str]:
    return (finding["file"], finding["kind"], finding["namespace"], finding["name"])


def is_request(finding: dict[str, Any]) -> bool:
    """A device request in a pod template (not a quota's invalid-count, which has no pod template)."""
    return finding["rule"] in REQUEST_RULES and bool(finding["podTemplatePath"])


def figures(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary the page shows, from the JSON report alone."""
    requests = [f for f in doc["findings"] if is_request(f)]
    return {
        "workloads": len({workload_key(f) for f in requests}),
        "requests": len(requests),
        "outcomes": {o: sum(1 for f in requests if outcome(f) == o) for o in OUTCOMES},
        "byVendor": _counts(f["resource"].split("/")[0] for f in requests),
        "byKind": _counts(f["kind"] or NOT_AN_OBJECT for f in requests),
        "byClass": _counts(f.get("deviceClass") or "(no class)" for f in requests),
    }


def _counts(values: Any) -> list[tuple[str, int]]:
    """(value, count), most frequent first, then by name."""
    return sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0]))


def _bars(counts: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """A bar chart's rows: label, count, and the bar's share of the longest bar (0..1)."""
    top = max((n for _, n in counts), default=0)
    return [{"label": label, "count": n, "share": n / top if top else 0} for label, n in counts]


def _stack(outcomes: dict[str, int]) -> list[dict[str, Any]]:
    """The outcome bar's segments: outcome, count, start and width as shares of all requests (0..1)."""
    total = sum(outcomes.values())
    segments, start = [], 0.0
    for name in OUTCOMES:
        share = outcomes[name] / total if total else 0
        segments.append({"outcome": name, "count": outcomes[name], "start": start, "share": share})
        start += share
    return segments


@dataclass(frozen=True)
class Row:
    """One row of a side-by-side view: line numbers (0: none) and text on each side."""

    kind: str  # equal, delete, insert, replace, hunk
    old_no: int = 0
    old: str = ""
    new_no: int = 0
    new: str = ""


def _range(start: int, stop: int) -> str:
    """A hunk header's range, as difflib.unified_diff writes it: `3` for one line, `2,0` for none."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def side_by_side(before: str, after: str, context: int = 3) -> list[Row]:
    """The hunks of the unified diff of two texts (same matcher and context), old lines beside new ones."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)  # as report.diff.unified splits
    rows: list[Row] = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        rows.append(Row("hunk", old=f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"))
        for tag, i1, i2, j1, j2 in group:
            for k in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + k, j1 + k
                left = i < i2
                right = j < j2
                kind = tag if tag != "replace" else ("replace" if left and right else "delete" if left else "insert")
                rows.append(
                    Row(
                        kind,
                        i + 1 if left else 0,
                        a[i].rstrip("\r\n") if left else "",
                        j + 1 if right else 0,
                        b[j].rstrip("\r\n") if right else "",
                    )
                )
    return rows


def _sections(doc: dict[str, Any], changes: list[FileChange]) -> list[dict[str, Any]]:
    """One section per file with device requests or a change: its workloads, and the before and after."""
    by_file: dict[str, dict[tuple[str, str, str, str], list[dict[str, Any]]]] = {}
    for f in doc["findings"]:
        if f["kind"] or is_request(f):  # about one object or request (not the run-wide classes-file-needed)
            by_file.setdefault(f["file"], {}).setdefault(workload_key(f), []).append(f)
    changed = {c.path: c for c in changes}
    sections = []
    for path in sorted(set(by_file) | set(changed)):
        workloads = []
        for (_, kind, namespace, name), found in by_file.get(path, {}).items():
            requests = [f for f in found if is_request(f)]
            workloads.append(
                {
                    "kind": kind or NOT_AN_OBJECT,
                    "namespace": namespace,
                    "name": name,
                    "requests": requests,
                    "outcomes": _counts(outcome(f) for f in requests),
                    "findings": found,
                }
            )
        change = changed.get(path)
        sections.append(
            {
                "path": path,
                "anchor": "f-" + hashlib.sha256(os.fsencode(path)).hexdigest()[:10],
                "workloads": workloads,
                "rows": side_by_side(change.before, change.after) if change else [],
                "diff": unified(path, change.before, change.after).splitlines() if change else [],
                "new": change is not None and change.before == "",
            }
        )
    return sections


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def _shown(value: Any) -> Any:
    """Text from input as the page shows it: terminal escapes, other controls, bidirectional overrides and the bytes
    of names that are not UTF-8 as \\xNN or \\uNNNN (a name shown in another order than it is, or a bell, in a
    review page), never the character itself; the page's own style and script (Markup) as they are. A line break
    of input text is a character reference (`&#10;`, the same text to a browser): a file named `a\\n::error ...` put
    `::error` at the start of a line of the HTML file, a workflow command for a CI job that prints the report."""
    from markupsafe import Markup, escape

    if not isinstance(value, str) or isinstance(value, Markup):
        return value
    return Markup(str(escape(plain(value))).replace("\n", "&#10;"))


def render(doc: dict[str, Any], changes: list[FileChange], command: str, paths: list[str]) -> str:
    """The page for a JSON report document and the files it changes (for diff: would change)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined  # only here: fix and diff import FileChange

    env = Environment(
        loader=PackageLoader("dramigrate.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    style = env.get_template("report.css").render()
    script = env.get_template("report.js").render()
    findings = sorted(doc["findings"], key=lambda f: (f["file"], f["line"], f["column"], f["rule"]))
    fig = figures(doc)
    sections = _sections(doc, changes)
    charts = [
        ("byVendor", "Device requests by vendor", _bars(fig["byVendor"])),
        ("byKind", "Device requests by kind", _bars(fig["byKind"])),
        ("byClass", "Device requests by device class", _bars(fig["byClass"])),
    ]
    return encodable(
        env.get_template("report.html.j2").render(
            command=command,
            paths=paths,
            version=__version__,
            summary=doc["summary"],
            figures=fig,
            stack=_stack(fig["outcomes"]),
            charts=charts,
            fixed_word="would fix" if command == "diff" else "fixed",
            migrated_word="would be migrated" if command == "diff" else "migrated",
            anchors={s["path"]: s["anchor"] for s in sections},
            findings=findings,
            outcome=outcome,
            errors=doc["errors"],
            sections=sections,
            style=style,
            script=script,
            csp=f"default-src 'none'; style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
            "img-src data:; form-action 'none'; base-uri 'none'",
        )
    )
