"""Tolerations of a migrated pod.

B7: node taints do not change when a cluster moves to DRA (an AKS GPU pool stays tainted `sku=gpu:NoSchedule`),
so `--drop-tolerations` alone never removes a node-taint toleration; only a taint the admin names as removed
(`--removed-taint`, config `removed-taints`) loses its toleration.
R10: a toleration for a time-sliced product (`nvidia.com/gpu=Tesla-T4-SHARED`, OpenShift samples) marks the plain
`nvidia.com/gpu` request as a slice, exactly like a `-SHARED` product node selector.
"""

from __future__ import annotations

from typing import Any

import yaml

from dramigrate.config import Settings
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()

AKS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: aks-train}
spec:
  template:
    spec:
      tolerations:
      - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}
      containers:
      - name: train
        image: train
        resources: {limits: {nvidia.com/gpu: 1}}
"""

SHARED_T4 = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: t4-serving}
spec:
  template:
    spec:
      tolerations:
      - {key: nvidia.com/gpu, operator: Equal, value: Tesla-T4-SHARED, effect: NoSchedule}
      containers:
      - name: server
        image: server
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def _fix(text: str, **settings: Any) -> FileResult:
    result = run_file(Job("w.yaml", text.encode(), True), RULES, Settings(**settings), Target.parse("1.36"))
    assert result.error is None, result.error
    return result


def _tolerations(result: FileResult) -> list[dict[str, Any]]:
    assert result.rewritten is not None
    docs = [d for d in yaml.safe_load_all(result.rewritten) if d]
    return docs[0]["spec"]["template"]["spec"]["tolerations"]


def test_drop_tolerations_keeps_the_node_pool_taint_toleration() -> None:
    result = _fix(AKS, drop_tolerations=True)
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in _tolerations(result)
    (f,) = [f for f in result.findings if f.rule == "device-toleration"]
    assert "--removed-taint sku=gpu" in f.message


def test_a_taint_the_cluster_removes_loses_its_toleration() -> None:
    result = _fix(AKS, removed_taints=("sku=gpu",))
    assert _tolerations(result) == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # a different value of the key is another taint: its toleration stays
    other = _fix(AKS, removed_taints=("sku=fpga",))
    assert any(t.get("key") == "sku" for t in _tolerations(other))


def test_a_shared_product_toleration_keeps_the_request_a_slice() -> None:
    result = run_file(Job("w.yaml", SHARED_T4.encode(), True), RULES, Settings(), Target.parse("1.36"))
    assert result.error is None
    assert result.rewritten is None, "a time-sliced GPU must not become a whole-GPU claim"
    (f,) = [f for f in result.findings if f.resource == "nvidia.com/gpu"]
    assert f.rule == "shared-device" and "-SHARED" in f.message
