"""Hostile inputs of the twenty-second sweep (issue 11's checker, run from outside the repo): each beside a good
file, which is still migrated, while the bad one is named and left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GPU_POD_TEMPLATE, ONE_GPU_POD, chart_with, run_dramigrate

from dramigrate.helm.sandbox import MAX_SUBCHART_DEPTH


def _tree(files: dict[Path, str]) -> dict[Path, bytes]:
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {path: path.read_bytes() for path in files}


def test_subchart_folders_nested_past_the_bound_are_refused_at_once(tmp_path: Path) -> None:
    """A chart whose subchart folders nest charts/s0/charts/s1/... (Helm loads them at any depth) was checked level
    by level: each level multiplied the work of the proof, and 150 levels ran `diff` and `fix` for minutes. Past
    MAX_SUBCHART_DEPTH levels the chart is refused by name, before any render, and the good file beside it is
    migrated."""
    chart = chart_with(tmp_path, "deep", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    files: dict[Path, str] = {}
    folder = chart
    for level in range(MAX_SUBCHART_DEPTH + 1):
        folder = folder / "charts" / f"s{level}"
        files[folder / "Chart.yaml"] = f"apiVersion: v2\nname: s{level}\nversion: 0.1.0\n"
        files[folder / "values.yaml"] = "gpus: 1\n"
        files[folder / "templates" / "pod.yaml"] = GPU_POD_TEMPLATE.replace("-pod", f"-pod{level}")
    before = _tree(files)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "deep", "good.yaml", "--format", "json"], cwd=tmp_path)

    assert "Traceback" not in out + err
    report = json.loads(out)
    assert code == 2
    assert [(e["file"], e["rule"]) for e in report["errors"]] == [("deep", "chart-archive-limit")]
    assert f"nested more than {MAX_SUBCHART_DEPTH} deep" in report["errors"][0]["message"]
    assert {path: path.read_bytes() for path in before} == before
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_subchart_folders_up_to_the_bound_are_still_checked(tmp_path: Path) -> None:
    """The bound refuses only what nests past it: a chart whose subcharts nest exactly MAX_SUBCHART_DEPTH deep is
    rendered and its deepest subchart's device request found."""
    chart = chart_with(tmp_path, "deep", {"values.yaml": "gpus: 0\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    files: dict[Path, str] = {}
    folder = chart
    for level in range(MAX_SUBCHART_DEPTH):
        folder = folder / "charts" / f"s{level}"
        files[folder / "Chart.yaml"] = f"apiVersion: v2\nname: s{level}\nversion: 0.1.0\n"
        files[folder / "values.yaml"] = "gpus: 0\n"
    files[folder / "values.yaml"] = "gpus: 1\n"
    files[folder / "templates" / "pod.yaml"] = GPU_POD_TEMPLATE
    _tree(files)

    code, out, err = run_dramigrate(["lint", "deep", "--format", "json"], cwd=tmp_path)

    report = json.loads(out)
    assert report["errors"] == [], err
    assert [f["rule"] for f in report["findings"] if f["rule"] == "legacy-device-request"] == ["legacy-device-request"]
    assert code == 1


BACKTRACKING_PACK = """\
schemaVersion: 1
kind: RulePack
name: evil
description: a regex that backtracks
domains: [b.example.com]
resources:
  - regex: '(a+)+b\\.example\\.com/y'
    deviceClass: y.example.com
    request: y
deviceClasses:
  - name: y.example.com
    driver: y.example.com
"""


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_rule_pack_that_does_not_load_is_named_in_the_report_asked_for(tmp_path: Path, fmt: str) -> None:
    """A repository's config naming a rule pack whose regex could backtrack for hours stops the run when the pack
    loads (exit 2), as a malformed config does. But only a line on standard error said so: `--format json` and
    `sarif` wrote nothing to standard output, and the consumer failed on an empty report. Now the report comes
    out, naming the pack as the run's bad input."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pack.yaml").write_text(BACKTRACKING_PACK)
    (tmp_path / ".dramigrate.yaml").write_text("rules: [pack.yaml]\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", "good.yaml", "--format", fmt], cwd=tmp_path)

    assert "Traceback" not in out + err
    assert code == 2
    report = json.loads(out)
    if fmt == "json":
        assert [(e["file"], e["rule"]) for e in report["errors"]] == [("pack.yaml", "bad-input")]
        assert "repeat inside a repeat" in report["errors"][0]["message"]
    else:
        assert "pack.yaml" in json.dumps(report["runs"])


def test_a_huge_pyproject_is_refused_by_its_size_not_read_to_look_for_settings(tmp_path: Path) -> None:
    """The config is looked up upward from the working folder, and a pyproject.toml was read whole to see whether
    it holds [tool.dramigrate]: a sparse pyproject.toml of 8 GiB (8 MB in a git pack) in a pull request made the
    gate read 8 GiB into memory. One larger than a config may be is now refused by its size, before it is read:
    the run stops as for any config that does not load, with its report."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    with open(tmp_path / "pyproject.toml", "wb") as sparse:
        sparse.truncate(64 << 20)

    code, out, err = run_dramigrate(["lint", "good.yaml", "--format", "json"], cwd=tmp_path)

    assert "Traceback" not in out + err
    assert code == 2
    errors = json.loads(out)["errors"]
    assert [e["file"] for e in errors] == ["pyproject.toml"]
    assert "64.0 MiB, larger than the 1 MiB limit of a config or rule pack" in errors[0]["message"]
