"""Cutover guidance (issue 9 item 6): once per run the order of operations, and a warning per migrated workload
when an autoscaler in the paths is known not to provision nodes for claim-only pods."""

from __future__ import annotations

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


def _lint(tmp_path: Path, files: dict[str, str], **settings: object) -> list:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = run(expand([str(tmp_path)], ()), RULES, Settings(**settings), Target.parse("1.36"), fix=False)
    return result.findings


def test_the_order_of_operations_comes_once_per_run(tmp_path: Path) -> None:
    findings = _lint(tmp_path, {"a.yaml": WORKLOAD.format(name="a"), "b.yaml": WORKLOAD.format(name="b")})
    (plan,) = [f for f in findings if f.rule == "cutover-plan"]
    assert "gpu.nvidia.com" in plan.message and "--strategy extended-resource" in plan.message
    assert not [f for f in findings if f.rule == "autoscaler-claims"], "no autoscaler in the paths"
    assert not [f for f in _lint(tmp_path, {}, strategy="extended-resource") if f.rule == "cutover-plan"]


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
