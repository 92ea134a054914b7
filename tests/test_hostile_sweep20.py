"""Hostile inputs of the twentieth sweep (issue 11's checker): each beside good files, which are still checked, while
the bad one is named and left as it was; lint and fix agree; no message carries a control character of the input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest.mock import ANY

import pytest
from conftest import GPU_POD_TEMPLATE, ONE_GPU_POD, chart_with, run_dramigrate

FORMATS = ["text", "json", "github", "sarif", "junit", "markdown"]


def _no_control(text: str) -> None:
    """No control character of the input in a report (ESC would drive the terminal, a line break start a line)."""
    assert "Traceback" not in text
    assert not any(c in text for c in "\x1b\x07\x00\x85")


CONTROL_NAMES = ["po\x1b[31md.yaml", "pod\r.yaml", 'pod\nx: "\n#.yaml', "pod\x85.yaml"]


def test_a_template_file_name_with_a_control_character_is_refused_by_lint_as_by_fix(tmp_path: Path) -> None:
    """Helm writes a template's path into the rendered output's `# Source:` comment. With ESC in it, lint called
    the chart's request fixable (exit 1) while fix refused the chart ("would not parse back", exit 2); a line break
    started a line of YAML of the file name's choosing in the output. Now lint, diff and fix all refuse the chart,
    naming the file escaped, and the good file beside it is still checked. A chart for each name, in one run."""
    charts = [f"c{i}" for i in range(len(CONTROL_NAMES))]
    templates = []
    for chart_name, name in zip(charts, CONTROL_NAMES, strict=True):
        chart = chart_with(tmp_path, chart_name, {"values.yaml": "gpus: 1\n"})
        (chart / "templates" / name).write_text(GPU_POD_TEMPLATE)
        templates.append(chart / "templates" / name)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = [t.read_bytes() for t in templates]

    outcomes = []
    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, *charts, "good.yaml", "--format", "json"], cwd=tmp_path)
        _no_control(out + err)
        report = json.loads(out)
        outcomes.append((code, sorted((e["file"], "template file name" in e["message"]) for e in report["errors"])))
    assert outcomes == [(2, [(c, True) for c in charts])] * 3
    assert [t.read_bytes() for t in templates] == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()  # fix wrote the good file


@pytest.mark.parametrize(
    ("config", "line", "what"),
    [
        ("kube-version: '1.36'\nexclude: 3\n", 2, "`exclude` must be a list of strings, not a number"),
        ("kube-version: '1.36'\nexlude: [x]\n", 2, "did you mean `exclude`"),
        ("fail-on: error\nsharing: [a]\n", 2, "`sharing` must map"),
        ("- a\n", 1, "config must be a mapping of settings, not a list"),
        ("exclude: [a\n", 2, "invalid YAML"),
    ],
)
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_malformed_config_is_named_at_its_line_in_every_report(
    tmp_path: Path, config: str, line: int, what: str, fmt: str
) -> None:
    """A `.dramigrate.yaml` that does not load stops the run (exit 2: its excludes and overrides decide what a run
    says). Before, a wrong setting was named without its line, and only on standard error: `--format json` or
    `sarif` wrote nothing to standard output, so the consumer failed on an empty report. Now the report of every
    format comes out, naming the config at the line of the setting, and says nothing was scanned."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dramigrate.yaml").write_text(config)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", "good.yaml", "--format", fmt], cwd=tmp_path)

    _no_control(out + err)
    assert code == 2
    assert "nothing checked" in err
    shown = out + err
    places = (f".dramigrate.yaml:{line}", f'"line": {line}', f"line={line}", f'"startLine": {line}')
    assert any(place in shown for place in places)
    if fmt == "json":
        report = json.loads(out)
        assert report["summary"]["files"] == 0 and report["summary"]["badInput"] == 1
        assert [(e["file"], e["line"]) for e in report["errors"]] == [(".dramigrate.yaml", line)]
        assert what in report["errors"][0]["message"]
    if fmt == "sarif":
        json.loads(out)  # a SARIF document a code-scanning upload takes


def test_fix_with_a_malformed_config_writes_nothing_and_reports_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".dramigrate.yaml").write_text("exclude: 3\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "good.yaml", "--format", "json", "--output", "report.json"], cwd=tmp_path)

    _no_control(out + err)
    assert code == 2
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["files"] == {"written": [], "notWritten": [], "failed": [{"file": ".dramigrate.yaml", "reason": ANY}]}
    assert (tmp_path / "good.yaml").read_text() == ONE_GPU_POD.format(name="good")


def test_a_values_file_linked_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    """CI runs `dramigrate lint chart -f values/prod.yaml`; a pull request turns values/prod.yaml into a link to a
    YAML file of the runner holding a token, and has the chart render the value as a device count: the finding said
    `nvidia.com/gpu: <token> is not an integer`. A -f that is, or goes through, a link out of the tree (or into
    .git) is now refused as a path named on the command line is, before anything reads it."""
    secret = tmp_path / "runner" / "credentials.yaml"
    secret.parent.mkdir()
    secret.write_text("gpus: s3cr3t-token-value\n")
    repo = tmp_path / "repo"
    chart_with(repo, "c", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (repo / "values").mkdir()
    (repo / "values" / "prod.yaml").symlink_to(secret)

    for fmt in ("text", "json"):
        code, out, err = run_dramigrate(["lint", "c", "-f", "values/prod.yaml", "--format", fmt], cwd=repo)
        _no_control(out + err)
        assert code == 2
        assert "s3cr3t" not in out + err
        assert "values/prod.yaml" in err and "symlink" in err


def _kustomized(tmp_path: Path, kustomization: str) -> Path:
    """A git work tree with app/kustomization.yaml (the text given) and app/charts/gpu, a chart asking for
    `gpus` GPUs (none by default)."""
    (tmp_path / ".git").mkdir()
    app = tmp_path / "app"
    chart_with(app / "charts", "gpu", {"values.yaml": "gpus: 0\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (app / "kustomization.yaml").write_text(kustomization)
    return app


@pytest.mark.parametrize("kind", ["fifo", "device", "git-config", "proc"])
def test_a_kustomize_chart_values_file_that_is_no_file_of_the_tree_is_never_read(tmp_path: Path, kind: str) -> None:
    """A helmCharts entry whose valuesFile or additionalValuesFiles is a FIFO (a read blocks for ever), a device, or
    a link into .git or to /proc/self/environ: the entry is named as not checked, and nothing of it is read."""
    app = _kustomized(tmp_path, "helmCharts:\n- name: gpu\n  valuesFile: v.yaml\n  additionalValuesFiles: [w.yaml]\n")
    (app / "v.yaml").write_text("gpus: 1\n")
    (tmp_path / ".git" / "config").write_text("[remote]\n  token = s3cr3t\n")
    target = {"device": "/dev/zero", "git-config": str(tmp_path / ".git" / "config"), "proc": "/proc/self/environ"}
    if kind == "fifo":
        os.mkfifo(app / "w.yaml")
    else:
        (app / "w.yaml").symlink_to(target[kind])

    code, out, err = run_dramigrate(["lint", "app/kustomization.yaml", "--format", "json"], cwd=tmp_path, timeout=60)

    _no_control(out + err)
    assert "s3cr3t" not in out + err
    findings = json.loads(out)["findings"]
    assert [(f["rule"], f["line"]) for f in findings] == [("kustomize-helm-chart", 2)]
    assert "w.yaml" in findings[0]["message"]
    assert code == 0


def test_a_kustomization_inflating_a_chart_a_thousand_times_is_checked_in_bounded_time(tmp_path: Path) -> None:
    """An entry repeated hundreds of times is linted once (each of its requests still said at its own line); past
    32 distinct charts or value sets the rest is bad input at the first entry not checked, instead of rendering a
    chart hundreds of times (minutes)."""
    same = "- name: gpu\n  valuesInline: {gpus: 1}\n" * 200
    distinct = "".join(f"- name: gpu\n  releaseName: r{i}\n  valuesInline: {{gpus: 1}}\n" for i in range(40))
    _kustomized(tmp_path, "helmCharts:\n" + same + distinct)

    code, out, err = run_dramigrate(["lint", "app", "--format", "json"], cwd=tmp_path, timeout=240)

    _no_control(out + err)
    report = json.loads(out)
    assert code == 2
    lines = [f["line"] for f in report["findings"] if f["rule"] == "kustomize-helm-device"]
    assert len(lines) == 200 + 31 and len(set(lines)) == len(lines)
    assert [(e["file"], "more than 32 distinct" in e["message"]) for e in report["errors"]] == [
        ("app/kustomization.yaml", True)
    ]


def test_a_chart_inflated_through_a_generator_configuration_is_checked_too(tmp_path: Path) -> None:
    """kustomize also inflates a chart listed under `generators:` as a HelmChartInflationGenerator configuration (a
    file of the kustomization's folder, or inline): that passed in silence where helmCharts is now checked. The
    file's chart is rendered with its values, the inline one named as not checked, and an alias bomb in its values
    named without being expanded."""
    app = _kustomized(tmp_path, "generators:\n- helm.yaml\n- bomb.yaml\n- |\n" + _indented(_GENERATOR + _PULLED))
    (app / "helm.yaml").write_text(_GENERATOR + "name: gpu\nreleaseName: web\nvaluesInline:\n  gpus: 3\n")
    bomb = "".join(f"  a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9))
    (app / "bomb.yaml").write_text(_GENERATOR + "name: gpu\nvaluesInline:\n  a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + bomb)

    code, out, err = run_dramigrate(["lint", "app/kustomization.yaml", "--format", "json"], cwd=tmp_path, timeout=60)

    _no_control(out + err)
    assert code == 1
    found = [(f["rule"], f["line"]) for f in json.loads(out)["findings"] if f["rule"].startswith("kustomize-")]
    assert found == [("kustomize-helm-device", 2), ("kustomize-helm-chart", 3), ("kustomize-helm-chart", 4)]


_GENERATOR = "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: g\n"
_PULLED = "name: vllm\nrepo: https://charts.example.org\nversion: 1.0.0\n"


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


@pytest.mark.parametrize(
    "entry", ['name: "gp\\0u"', 'name: gpu\n  valuesFile: "v\\0.yaml"', 'name: gpu\n  additionalValuesFiles: ["a\\0"]']
)
def test_a_nul_in_a_kustomize_chart_path_is_named_not_an_internal_error(tmp_path: Path, entry: str) -> None:
    """A helmCharts entry whose chart name or values file holds a NUL (a YAML escape) ended the check of the
    kustomization with an internal error (`embedded null byte`); the entry is now named as not checked."""
    _kustomized(tmp_path, f'generators: ["g\\0"]\nhelmCharts:\n- {entry}\n')

    code, out, err = run_dramigrate(["lint", "app/kustomization.yaml", "--format", "json"], cwd=tmp_path)

    _no_control(out + err)
    report = json.loads(out)
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("kustomize-helm-chart", 3)]
    assert "NUL" in report["findings"][0]["message"]
    assert code == 0
