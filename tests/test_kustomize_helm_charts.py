"""Helm charts a kustomization inflates (`helmCharts:`): kustomize runs helm when it builds, so what the chart renders
is in no file dramigrate reads, and a GPU chart pulled by kustomize passed the gate without a word. A chart in the
repository where kustomize looks for it is now rendered with the entry's values and its findings placed at the
entry; any other chart is named as not checked; fix writes nothing of it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import GPU_POD_TEMPLATE, ONE_GPU_POD, chart_with, dramigrate_in_process


def _repo(tmp_path: Path, kustomization: str, chart_home: str = "charts/gpu", default_gpus: int = 0) -> Path:
    """A git work tree with app/kustomization.yaml (the text given), a ConfigMap it lists, and a chart that asks for
    `gpus` GPUs (none by default) at app/<chart_home>."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text(kustomization)
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n")
    home = (app / chart_home).parent
    home.mkdir(parents=True, exist_ok=True)
    chart_with(home, "gpu", {"values.yaml": f"gpus: {default_gpus}\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    return app


def _lint(tmp_path: Path, *args: str) -> tuple[int, list[dict[str, object]], dict[str, object]]:
    code, out, err = dramigrate_in_process(["lint", "app", "--format", "json", *args], cwd=tmp_path)
    assert "Traceback" not in out + err
    report = json.loads(out)
    return code, report["findings"], report


INLINE = """\
resources:
- cm.yaml
helmCharts:
- name: gpu
  releaseName: web
  namespace: ml
  valuesInline:
    gpus: 2
"""


def test_a_device_request_the_entrys_values_switch_on_fails_the_gate_at_the_entry(tmp_path: Path) -> None:
    """The chart asks for no GPU with its own values; the kustomization's valuesInline asks for two. Before: lint
    said nothing and exited 0. Now: an error at the helmCharts entry's line, naming the pod the release renders,
    with the template and the inline value as related locations; not fixable."""
    _repo(tmp_path, INLINE)

    code, findings, _ = _lint(tmp_path)

    assert code == 1
    device = [f for f in findings if f["rule"] == "kustomize-helm-device"]
    assert [(f["file"], f["line"], f["name"], f["fixable"]) for f in device] == [
        ("app/kustomization.yaml", 4, "web-pod", False)
    ]
    assert "nvidia.com/gpu: 2" in str(device[0]["message"])
    related = [(r["file"], r["line"]) for r in device[0]["related"]]  # type: ignore[attr-defined]
    assert ("app/charts/gpu/templates/pod.yaml", 12) in related
    assert ("app/kustomization.yaml", 4) in related


@pytest.mark.parametrize("fmt", ["text", "github", "sarif", "junit", "markdown"])
def test_every_format_names_the_inflated_charts(tmp_path: Path, fmt: str) -> None:
    """The checked chart's request and a chart kustomize pulls when it builds appear in every report format."""
    _repo(tmp_path, INLINE + "- name: vllm\n  repo: https://charts.example.org\n  version: 1.2.0\n")

    code, out, err = dramigrate_in_process(["lint", "app", "--format", fmt], cwd=tmp_path)

    assert code == 1, err
    assert "kustomize-helm-device" in out
    assert "kustomize-helm-chart" in out and "vllm" in out


@pytest.mark.parametrize(
    ("merge", "count"), [("", "2"), ("valuesMerge: override\n  ", "2"), ("valuesMerge: merge\n  ", "4")]
)
def test_the_entrys_values_merge_as_kustomize_merges_them(tmp_path: Path, merge: str, count: str) -> None:
    """valuesFile asks for 4, valuesInline for 2: override (kustomize's default) takes the inline value, merge the
    file's."""
    app = _repo(
        tmp_path,
        f"helmCharts:\n- name: gpu\n  valuesFile: gpu-values.yaml\n  {merge}valuesInline:\n    gpus: 2\n",
    )
    (app / "gpu-values.yaml").write_text("gpus: 4\n")

    _, findings, _ = _lint(tmp_path)

    device = [f for f in findings if f["rule"] == "kustomize-helm-device"]
    assert len(device) == 1
    assert f"nvidia.com/gpu: {count} " in str(device[0]["message"])


def test_a_chart_laid_out_by_version_is_found_where_kustomize_pulls_it(tmp_path: Path) -> None:
    """With a version and a repo, kustomize looks for (and pulls into) <chartHome>/<name>-<version>/<name>; a chart
    vendored there is checked, with the chart's own default values and a chartHome of the kustomization's."""
    _repo(
        tmp_path,
        "helmGlobals:\n  chartHome: vendor\nhelmCharts:\n- name: gpu\n  repo: https://charts.example.org\n"
        "  version: 0.1.0\n",
        chart_home="vendor/gpu-0.1.0/gpu",
        default_gpus=1,
    )

    code, findings, _ = _lint(tmp_path)

    assert code == 1
    assert [(f["rule"], f["line"]) for f in findings if f["rule"].startswith("kustomize-")] == [
        ("kustomize-helm-device", 4)
    ]


def test_a_chart_kustomize_pulls_is_named_as_not_checked(tmp_path: Path) -> None:
    """A chart kustomize pulls from its repo when it builds is not in the repository: a warning at its entry names
    it and says how to have it checked (nothing is fetched)."""
    _repo(tmp_path, "helmCharts:\n- name: vllm\n  repo: https://charts.example.org\n  version: 1.2.0\n")

    code, findings, _ = _lint(tmp_path)

    assert code == 0
    assert [(f["rule"], f["severity"], f["line"]) for f in findings] == [("kustomize-helm-chart", "warning", 2)]
    assert "vllm" in str(findings[0]["message"]) and "charts/vllm-1.2.0/vllm" in str(findings[0]["message"])
    code, _, _ = dramigrate_in_process(["lint", "app", "--fail-on", "warning"], cwd=tmp_path)
    assert code == 1


@pytest.mark.parametrize("where", ["chartHome", "valuesFile"])
def test_nothing_outside_the_repository_is_rendered_or_read(tmp_path: Path, where: str) -> None:
    """A chartHome, or a values file, outside the repository (a hostile pull request's kustomization naming a chart
    or values elsewhere on the runner) is not read: the entry is named as not checked, and what lies outside says
    nothing (a GPU chart there gives no device finding)."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside"
    chart_with(outside, "gpu", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (outside / "values.yaml").write_text("gpus: 3\n")
    if where == "chartHome":
        text = f"helmGlobals:\n  chartHome: {outside}\nhelmCharts:\n- name: gpu\n"
    else:
        text = "helmCharts:\n- name: gpu\n  valuesFile: linked.yaml\n"
    app = _repo(repo, text)
    (app / "linked.yaml").symlink_to(outside / "values.yaml")

    code, out, err = dramigrate_in_process(["lint", "app/kustomization.yaml", "--format", "json"], cwd=repo)

    assert "Traceback" not in out + err
    findings = json.loads(out)["findings"]
    assert [f["rule"] for f in findings] == ["kustomize-helm-chart"]
    assert "outside the repository" in findings[0]["message"]
    assert code == 0


def test_fix_writes_nothing_of_a_graph_that_inflates_a_chart_and_lint_says_so(tmp_path: Path) -> None:
    """A base asking for a GPU in a kustomization that also inflates a chart: kubectl kustomize builds it only with
    --enable-helm (which runs helm and may pull charts), so fix cannot prove the graph. lint called the base's
    request fixable while fix wrote nothing; both now say the graph is left as it is, at the helmCharts line."""
    app = _repo(tmp_path, "resources:\n- cm.yaml\n- pod.yaml\nhelmCharts:\n- name: gpu\n")
    (app / "pod.yaml").write_text(ONE_GPU_POD.format(name="base"))
    before = {p: p.read_bytes() for p in app.rglob("*") if p.is_file()}

    code, findings, _ = _lint(tmp_path)
    assert code == 0
    assert not any(f["fixable"] for f in findings)
    blocker = [f for f in findings if f["rule"] == "kustomize-unproven"]
    assert [(f["file"], f["line"]) for f in blocker] == [("app/kustomization.yaml", 4)]

    code, out, err = dramigrate_in_process(["fix", "app"], cwd=tmp_path)
    assert "Traceback" not in out + err
    assert {p: p.read_bytes() for p in app.rglob("*") if p.is_file()} == before


def test_fix_reports_the_inflated_charts_request_and_writes_nothing(tmp_path: Path) -> None:
    app = _repo(tmp_path, INLINE)
    before = {p: p.read_bytes() for p in app.rglob("*") if p.is_file()}

    code, out, err = dramigrate_in_process(["fix", "app"], cwd=tmp_path)

    assert "Traceback" not in out + err
    assert code == 1  # the request remains
    assert "kustomize-helm-device" in err
    assert {p: p.read_bytes() for p in app.rglob("*") if p.is_file()} == before
