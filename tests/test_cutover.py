"""Cutover guidance (issue 9 item 6): once per run the order of operations, and a warning per migrated workload
when an autoscaler in the paths is known not to provision nodes for claim-only pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dramigrate.config import Settings
from dramigrate.engine import run
from dramigrate.rules import load_rules
from dramigrate.sources import expand
from dramigrate.versions import Target

RULES = load_rules()

WORKLOAD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      containers:
      - name: server
        image: server
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
      - name: sidecar
        image: sidecar
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
NODEPOOL = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec: {}\n"
CLUSTER_AUTOSCALER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: cluster-autoscaler}}
spec:
  template:
    spec:
      containers:
      - name: cluster-autoscaler
        image: registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.0
        command: [./cluster-autoscaler, --cloud-provider=aws{extra}]
"""


def _run(tmp_path: Path, files: dict[str, str], **settings: object):  # type: ignore[no-untyped-def]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return run(expand([str(tmp_path)], ()), RULES, Settings(**settings), Target.parse("1.36"), fix=False)


def _lint(tmp_path: Path, files: dict[str, str], **settings: object) -> list:
    return _run(tmp_path, files, **settings).findings


def test_the_order_of_operations_comes_once_per_run(tmp_path: Path) -> None:
    result = _run(tmp_path, {"a.yaml": WORKLOAD.format(name="a"), "b.yaml": WORKLOAD.format(name="b")})
    assert result.cutover is not None
    assert result.cutover.device_classes == ("gpu.nvidia.com",) and result.cutover.drivers == ("gpu.nvidia.com",)
    assert "--strategy extended-resource" in result.cutover.message
    assert not [f for f in result.findings if f.rule == "autoscaler-claims"], "no autoscaler in the paths"
    assert _run(tmp_path, {}, strategy="extended-resource").cutover is None, "pods keep their requests"


def test_the_plan_is_in_the_footer_and_json_never_a_sarif_result(tmp_path: Path) -> None:
    """A CI gate sees the plan once in the human report and as JSON data; SARIF and annotations get no result that
    is about the rollout rather than a line, so nothing has to be suppressed or baselined for it."""
    from typer.testing import CliRunner

    from dramigrate.cli import app

    (tmp_path / "a.yaml").write_text(WORKLOAD.format(name="a"))
    text = CliRunner().invoke(app, ["lint", str(tmp_path)])
    assert text.exit_code == 1 and "cutover plan: rolling out the claims" in text.stdout
    doc = json.loads(CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"]).stdout)
    plan = doc["cutover"]
    assert plan["deviceClasses"] == ["gpu.nvidia.com"] and "remove the device plugin" in plan["plan"]
    sarif = json.loads(CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "sarif"]).stdout)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"legacy-device-request"}
    markdown = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "markdown"]).stdout
    assert "**Cutover plan.**" in markdown
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    clean = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    assert json.loads(clean.stdout)["cutover"] is None, "nothing to migrate: no plan"


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        pytest.param("", True, id="cluster-autoscaler"),
        pytest.param(", --enable-dynamic-resource-allocation", False, id="dra-on"),
    ],
)
def test_each_migrated_workload_is_warned_beside_an_autoscaler(tmp_path: Path, extra: str, warned: bool) -> None:
    files = {
        "a.yaml": WORKLOAD.format(name="a"),
        "b.yaml": WORKLOAD.format(name="b"),
        "ca.yaml": CLUSTER_AUTOSCALER.format(extra=extra),
    }
    findings = _lint(tmp_path, files)
    warnings = [f for f in findings if f.rule == "autoscaler-claims"]
    if not warned:
        assert warnings == []
        return
    assert sorted(f.name for f in warnings) == ["a", "b"], "one per workload, not per container"
    assert all("cluster-autoscaler" in f.message and f.severity.value == "warning" for f in warnings)


def test_a_karpenter_nodepool_warns_too(tmp_path: Path) -> None:
    findings = _lint(tmp_path, {"a.yaml": WORKLOAD.format(name="a"), "pool.yaml": NODEPOOL})
    (w,) = [f for f in findings if f.rule == "autoscaler-claims"]
    assert "Karpenter" in w.message and "pool.yaml:1" in w.message
