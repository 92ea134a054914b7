"""Umbrella charts: a device request that comes from a subchart is rewritten in the subchart, in its `file://`
source folder and in the umbrella's charts/ copy alike, and proven by rendering the umbrella (the switch is
`<subchart>.dra.enabled` there).

Renders are real (the Helm engine embedded in helm-python-sdk). One fix per module, shared by the tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, dra_render
from test_helm_idiomatic import write_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
UMBRELLA = """\
apiVersion: v2
name: platform
version: 2.0.0
dependencies:
  - name: app
    alias: trainer
    version: 0.1.0
    repository: file://../app
"""


def write_umbrella(root: Path) -> Path:
    """root/app (the leaf, pattern A) and root/platform, which takes it as `trainer` from file://../app."""
    leaf = write_chart(root)
    umbrella = root / "platform"
    umbrella.mkdir()
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text("# the platform's trainer\ntrainer:\n  numGpus: 2\n")
    shutil.copytree(leaf, umbrella / "charts" / "app")  # as `helm dependency build` leaves it, unpacked
    return umbrella


def docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    return [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("umbrella")
    original = write_umbrella(root / "original")
    copy = root / "fixed"
    shutil.copytree(root / "original", copy)
    umbrella = copy / "platform"
    outcome = run_chart(umbrella, ChartOptions(), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, umbrella, outcome


def test_leaf_is_rewritten_in_its_source_and_in_charts(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, umbrella, outcome = fixed
    source, vendored = umbrella.parent / "app", umbrella / "charts" / "app"
    for leaf in (source, vendored):
        assert "{{- if not .Values.dra.enabled }}" in (leaf / "templates" / "deployment.yaml").read_text()
        assert (leaf / "templates" / "resourceclaimtemplate.yaml").is_file()
        assert yaml.safe_load((leaf / "values.yaml").read_text())["dra"]["enabled"] is True
        assert yaml.safe_load((leaf / "Chart.yaml").read_text())["version"] == "0.1.0"  # pinned by the umbrella
    assert yaml.safe_load((umbrella / "Chart.yaml").read_text())["version"] == "2.0.1"
    assert "trainer.numGpus switched off with 0" in outcome.checked  # the proof perturbs the umbrella's values


def test_umbrella_renders_claims_and_the_way_back(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, umbrella, _ = fixed
    out = docs(umbrella)
    (rct,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2  # the umbrella's own value
    back = [
        (m.source, m.text) for m in render_chart(umbrella, RenderOptions(set_values=("trainer.dra.enabled=false",)))
    ]
    assert back == [(m.source, m.text) for m in render_chart(original, RenderOptions())]


def test_stale_charts_copy_is_manual(run_cli: RunCli, tmp_path: Path) -> None:
    umbrella = write_umbrella(tmp_path)
    deployment = umbrella.parent / "app" / "templates" / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("image:", "imagePullPolicy: Always\n          image:"))
    code, _, err = run_cli(["fix", str(umbrella)])
    assert "differs from its file:// source" in err and "helm dependency build" in err, err
    assert "nvidia.com/gpu" in (umbrella / "charts" / "app" / "templates" / "deployment.yaml").read_text()


def test_pass_through_in_a_vendored_subchart(tmp_path: Path) -> None:
    """fixtures/charts/subchart: the umbrella's values give its `worker` subchart a GPU through `toYaml`; the
    subchart's template gets the pass-through and values-dra.yaml sets the claims under `worker:`."""
    chart = shutil.copytree(Path(__file__).parents[1] / "fixtures/charts/subchart/chart", tmp_path / "platform")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert "resourceClaims" in (chart / "charts/worker/templates/deployment.yaml").read_text()
    overlay = yaml.safe_load((chart / "values-dra.yaml").read_text())
    (name,) = overlay["worker"]["resourceClaimTemplates"]
    ref = "{{ .Release.Name }}-" + name  # the subchart renders it with tpl, so each release has its own
    assert overlay["worker"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": ref}]
    out = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(chart / "values-dra.yaml",)))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    assert sorted(d["kind"] for d in out) == ["ConfigMap", "Deployment", "ResourceClaimTemplate"]


SERVING = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
spec:
  selector:
    matchLabels: {app: {{ .Chart.Name }}}
  template:
    metadata:
      labels: {app: {{ .Chart.Name }}}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
SERVING_UMBRELLA = """\
apiVersion: v2
name: rag
version: 1.0.0
dependencies:
  - name: llm
    alias: guard
    version: 0.1.0
    condition: guard.enabled
  - name: llm
    version: 0.1.0
  - name: embed
    version: 0.1.0
"""


def test_pass_through_in_two_subcharts(tmp_path: Path) -> None:
    """An umbrella whose values file gives two vendored subcharts a device each through `toYaml` (one of them also
    included under an alias, disabled): both subcharts get the pass-through and the DRA variant puts each claim
    template under the key its subchart reads (was: manual, "the device requests come from several charts")."""
    umbrella = tmp_path / "rag"
    for name in ("llm", "embed"):
        sub = umbrella / "charts" / name
        (sub / "templates").mkdir(parents=True)
        (sub / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
        (sub / "values.yaml").write_text("resources: {}\n")
        (sub / "templates" / "deployment.yaml").write_text(SERVING)
    (umbrella / "charts" / "llm" / "tests").mkdir()  # the llm subchart keeps helm-unittest suites
    (umbrella / "Chart.yaml").write_text(SERVING_UMBRELLA)
    (umbrella / "values.yaml").write_text("guard:\n  enabled: false\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "llm:\n  resources:\n    limits: {nvidia.com/gpu: 2}\nembed:\n  resources:\n    limits: {nvidia.com/gpu: 1}\n"
    )
    outcome = run_chart(umbrella, ChartOptions(values_files=(gpu,)), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for name in ("llm", "embed"):
        assert "resourceClaims" in (umbrella / "charts" / name / "templates" / "deployment.yaml").read_text()
    variant = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert variant["llm"]["resourceClaimTemplates"] and variant["embed"]["resourceClaimTemplates"]
    _, counts, pods = dra_render(umbrella, tmp_path / "gpu-dra.yaml")
    assert {name: counts[pod["resourceClaims"][0]["resourceClaimTemplateName"]] for name, pod in pods.items()} == {
        "release-name-llm": 2,
        "release-name-embed": 1,
    }
    assert "nvidia.com/gpu" not in json.dumps([pod["containers"] for pod in pods.values()])
    # the llm subchart's suite, in its own keys (`resources`, not `llm.resources`), holds on its real renders
    from test_helm_unittest_suite import holds, set_values

    leaf = umbrella / "charts" / "llm"
    body = yaml.safe_load((leaf / "tests" / "deployment-dra_test.yaml").read_text())
    assert [sorted(set_values(case["set"])) for case in body["tests"]] == [
        ["resources"],
        ["resourceClaimTemplates", "resourceClaims", "resources", "tolerations"],
    ]
    for i, case in enumerate(body["tests"]):
        values = tmp_path / f"case{i}.yaml"
        values.write_text(yaml.safe_dump(set_values(case["set"])))
        rendered: dict[str, list[Any]] = {}
        for m in render_chart(leaf, RenderOptions(values_files=(values,), kube_version="1.34")):
            rendered.setdefault(m.source.split("/templates/", 1)[1], []).extend(yaml.safe_load_all(m.text))
        assert all(holds(a, [d for d in rendered.get(a["template"], []) if d]) for a in case["asserts"]), case["it"]
    assert not (umbrella / "charts" / "embed" / "tests").exists()


def test_shipped_file_of_a_subchart_fix_leaves(tmp_path: Path) -> None:
    """The user's values give one subchart a device through `toYaml`; a values file the chart ships gives another
    subchart one (OPEA's gaudi-tgi-values.yaml beside gaudi-values.yaml). fix changes the user's subchart only: the
    shipped file gets no DRA variant (said why) instead of one whose claims no template renders (was: manual, "the
    rewritten chart renders differently from the migrated original rendering", naming the shipped file)."""
    umbrella = tmp_path / "rag"
    for name in ("llm", "embed"):
        sub = umbrella / "charts" / name
        (sub / "templates").mkdir(parents=True)
        (sub / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
        (sub / "values.yaml").write_text("resources: {}\n")
        (sub / "templates" / "deployment.yaml").write_text(SERVING)
    (umbrella / "Chart.yaml").write_text("apiVersion: v2\nname: rag\nversion: 1.0.0\n")  # vendored, no aliases
    shipped = umbrella / "embed-gpu-values.yaml"
    shipped.write_text("embed:\n  resources:\n    limits: {nvidia.com/gpu: 1}\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("llm:\n  resources:\n    limits: {nvidia.com/gpu: 2}\n")
    outcome = run_chart(umbrella, ChartOptions(values_files=(gpu,)), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    assert any("embed-gpu-values.yaml" in c and "no DRA variant" in c for c in outcome.checked), outcome.checked
    write_changes(outcome)
    assert "resourceClaims" in (umbrella / "charts" / "llm" / "templates" / "deployment.yaml").read_text()
    assert (umbrella / "charts" / "embed" / "templates" / "deployment.yaml").read_text() == SERVING
    assert not (umbrella / "embed-gpu-values-dra.yaml").exists()
    _, counts, pods = dra_render(umbrella, tmp_path / "gpu-dra.yaml")
    claim = pods["release-name-llm"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert counts[claim] == 2 and "nvidia.com/gpu" not in json.dumps(pods["release-name-llm"]["containers"])
