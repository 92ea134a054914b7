"""Topology of a migrated pod.

B3: the device plugin never aligned GPUs with NICs, and `matchAttribute` never chooses a device that lacks the
attribute (KA resource/v1 types.go); NVIDIA drivers before v25.3.2 publish no `pcieRoot`. So GPU/NIC pairing is
opt-in: by default a claim fits wherever the device plugin's request fitted; `--align-nics preferred` prefers one
PCIe root per pair and falls back to any devices; `--align-nics required` insists.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dramigrate.config import Settings
from dramigrate.fit import fit_claim
from dramigrate.inventory import Device, load_inventory
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
INVENTORIES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

GPU_EFA = b"""\
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: train
    image: train
    resources:
      limits: {nvidia.com/gpu: 2, vpc.amazonaws.com/efa: 8}
"""


def _fix(raw: bytes, **settings: Any) -> tuple[dict[str, Any], FileResult]:
    result = run_file(Job("p.yaml", raw, True), RULES, Settings(**settings), Target.parse("1.36"))
    assert result.error is None and result.rewritten, result.error
    (rct,) = [d for d in yaml.safe_load_all(result.rewritten) if d and d["kind"] == "ResourceClaimTemplate"]
    return rct, result


@pytest.fixture(scope="module")
def inventories() -> tuple[list[Device], list[Device]]:
    aligned = load_inventory(INVENTORIES / "gpu-efa.yaml")
    old_driver = copy.deepcopy(aligned)  # what a driver that does not publish pcieRoot shows
    for d in old_driver:
        for attrs in d.attributes.values():
            attrs.pop("pcieRoot", None)
        d.attributes.pop("resource.kubernetes.io", None)
    return aligned, old_driver


def test_default_keeps_the_device_plugin_placement(inventories: tuple[list[Device], list[Device]]) -> None:
    rct, result = _fix(GPU_EFA)
    devices = rct["spec"]["spec"]["devices"]
    assert "constraints" not in devices
    assert fit_claim(rct, RULES.classes, inventories[1]).fits, "a driver without pcieRoot still serves the pod"
    (f,) = [f for f in result.findings if f.rule == "topology-unaligned"]
    assert "--align-nics" in f.message and f.severity.value == "info"


def test_preferred_aligns_where_it_can_and_falls_back(inventories: tuple[list[Device], list[Device]]) -> None:
    rct, result = _fix(GPU_EFA, align_nics="preferred")
    devices = rct["spec"]["spec"]["devices"]
    assert [r["name"] for r in devices["requests"]] == ["gpu-0", "efa-0", "gpu-1", "efa-1"]
    assert all([s["name"] for s in r["firstAvailable"]] == ["aligned", "unaligned"] for r in devices["requests"])
    assert devices["constraints"] == [
        {"requests": ["gpu-0/aligned", "efa-0/aligned"], "matchAttribute": PCIE_ROOT},
        {"requests": ["gpu-1/aligned", "efa-1/aligned"], "matchAttribute": PCIE_ROOT},
    ]
    assert fit_claim(rct, RULES.classes, inventories[0]).fits
    assert fit_claim(rct, RULES.classes, inventories[1]).fits
    assert not [f for f in result.findings if f.rule == "topology-unaligned"]


def test_required_pairs_and_never_chooses_devices_without_pcie_root(
    inventories: tuple[list[Device], list[Device]],
) -> None:
    rct, _ = _fix(GPU_EFA, align_nics="required")
    assert rct["spec"]["spec"]["devices"]["constraints"][0] == {
        "requests": ["gpu-0", "efa-0"],
        "matchAttribute": PCIE_ROOT,
    }
    assert fit_claim(rct, RULES.classes, inventories[0]).fits
    assert not fit_claim(rct, RULES.classes, inventories[1]).fits
