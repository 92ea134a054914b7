"""Golden cases: fixtures/cases/<case>/input.yaml -> expected.yaml (what fix writes) and findings.yaml.

Regenerate after a reviewed change with `pytest tests/test_golden.py --force-regen`, then read the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "cases"
RULES = load_rules()


def _run(raw: bytes, fix: bool, name: str) -> tuple[bytes, list[dict[str, object]]]:
    result = run_file(Job(f"{name}/input.yaml", raw, fix), RULES, Settings(), Target.parse("1.36"))
    assert result.error is None, str(result.error)
    out = raw if result.rewritten is None else result.rewritten.encode("utf-8")
    findings = [
        {
            k: f.to_json()[k]
            for k in (
                "rule",
                "severity",
                "line",
                "column",
                "kind",
                "name",
                "podTemplatePath",
                "container",
                "resource",
                "fixable",
                "fixed",
            )
        }
        for f in result.findings
    ]
    return out, findings


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if (p / "input.yaml").is_file()))
def test_golden(case: str, file_regression, data_regression) -> None:
    raw = (CASES / case / "input.yaml").read_bytes()
    fixed, findings = _run(raw, fix=True, name=case)
    file_regression.check(fixed, binary=True, fullpath=CASES / case / "expected.yaml")
    data_regression.check({"findings": findings}, fullpath=CASES / case / "findings.yaml")
    # fix twice changes nothing the second time
    again, _ = _run(fixed, fix=True, name=case)
    assert again == fixed
    # lint reports exactly what fix saw (less what only a rewrite shows), none of it fixed
    _, lint_findings = _run(raw, fix=False, name=case)
    fix_only = ("count-from-limits", "rewrite-invalid")
    assert [f["rule"] for f in lint_findings] == [f["rule"] for f in findings if f["rule"] not in fix_only]
    assert not any(f["fixed"] for f in lint_findings)
