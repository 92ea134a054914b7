"""Golden chart rewrites: fixtures/charts/<case>/chart is fixed with the options of case.yaml.

Each case keeps, beside its input chart:
- expected.diff: the patch fix writes (the helper _dramigrate.tpl shortened to its first lines; it is the
  same file for every chart and has its own tests);
- findings.yaml: lint's findings, with their template lines and related values locations;
- rendered.yaml: the rewritten chart rendered with each `renders` entry of case.yaml (values users
  already set must keep working: other counts, other resources, devices off).

Regenerate after a reviewed change with `pytest tests/test_chart_golden.py --force-regen` and read the diff.
Rendering is real (the Helm engine embedded in helm-python-sdk), not mocked.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from dramigrate.config import Settings
from dramigrate.helm.engine import HELPER_FILE
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "charts"
RULES = load_rules()
TARGET = Target.parse("1.36")
ENGINE = Settings(chart_style="engine")  # these cases are the generated-engine rewrite


def _options(spec: dict[str, Any], root: Path) -> ChartOptions:
    return ChartOptions(
        values_files=tuple(root / v for v in spec.get("values", [])),
        set_values=tuple(spec.get("set", [])),
        namespace=spec.get("namespace"),
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _patch(changes: list[Any]) -> str:
    from dramigrate.report.diff import unified

    out = []
    for c in sorted(changes, key=lambda c: c.rel):
        after = c.after
        if c.rel.endswith(HELPER_FILE):
            head = "".join(after.splitlines(keepends=True)[:14])
            after = head + "... (the rest of the helper: dramigrate/helm/templates/_dramigrate.tpl)\n"
        out.append(unified(f"chart/{c.rel}", c.before or "", after))
    return "".join(out)


def _finding(f: Any) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "file": f.file,
        "line": f.line,
        "column": f.column,
        "kind": f.kind,
        "name": f.name,
        "container": f.container,
        "resource": f.resource,
        "related": [f"{r.file}:{r.line}: {r.note}" for r in f.related],
    }


def _rendered(chart: Path, case: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    options = RenderOptions(
        values_files=tuple(case / v for v in spec.get("values", [])),
        set_values=tuple(spec.get("set", [])),
        namespace=spec.get("namespace"),
    )
    docs = []
    for manifest in render_chart(chart, options):
        for doc in yaml.safe_load_all(manifest.text):
            if isinstance(doc, dict):
                docs.append({"source": manifest.source, "object": doc})
    return sorted(docs, key=lambda d: (d["object"].get("kind", ""), d["object"]["metadata"]["name"]))


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if (p / "case.yaml").is_file()))
def test_chart_golden(case: str, tmp_path: Path, file_regression: Any, data_regression: Any) -> None:
    source = CASES / case
    spec = yaml.safe_load((source / "case.yaml").read_text(encoding="utf-8"))
    work = tmp_path / case
    shutil.copytree(source, work)
    before = _snapshot(work / "chart")
    cwd = os.getcwd()
    os.chdir(work)  # findings name files as the user named the chart: chart/...
    try:
        options = _options(spec["args"], Path("."))
        lint = run_chart(Path("chart"), options, RULES, ENGINE, TARGET, "lint")
        fixed = run_chart(Path("chart"), options, RULES, ENGINE, TARGET, "fix")
        assert lint.error is None and fixed.error is None, (lint.error, fixed.error)
        assert fixed.changes and not fixed.manual, fixed.report()
        write_changes(fixed)
        again = run_chart(Path("chart"), options, RULES, ENGINE, TARGET, "fix")
    finally:
        os.chdir(cwd)
    file_regression.check(_patch(fixed.changes), fullpath=source / "expected.diff")
    data_regression.check({"findings": [_finding(f) for f in lint.findings]}, fullpath=source / "findings.yaml")
    # every device request lint found is fixed; nothing else in the chart changed
    assert all(f.fixed for f in fixed.findings if f.rule == "legacy-device-request")
    after = _snapshot(work / "chart")
    changed = {c.rel for c in fixed.changes}
    assert {k for k in after if after[k] != before.get(k)} == changed
    # a second fix finds nothing to do
    assert not again.changes and not again.manual
    assert not [f for f in again.findings if f.rule == "legacy-device-request"]
    renders = {r["label"]: _rendered(work / "chart", work, r) for r in spec["renders"]}
    data_regression.check(renders, fullpath=source / "rendered.yaml")
    for docs in renders.values():  # no rendered container asks for a device the legacy way
        for d in docs:
            assert "nvidia.com/gpu:" not in yaml.safe_dump(d["object"]).replace("key: nvidia.com/gpu", "")
