"""B5: a selector translated from a node label must skip a device that lacks the attribute or capacity it reads.

Kubernetes turns a CEL runtime error in a selector into an allocation error for the whole claim
(dynamic-resource-allocation allocator_stable.go: "selector #%d on device %s: CEL runtime error"), and drivers
leave attributes out: the NVIDIA driver publishes no `memory` capacity when NVML cannot read it, the TPU driver
no `topology` on some multi-host nodes. Every label rule of every shipped pack is checked on a device of its
class's driver that publishes nothing but the driver name.
"""

from __future__ import annotations

import pytest
import yaml

from dramigrate.cel import CelError, device_matches
from dramigrate.config import Settings
from dramigrate.inventory import Device
from dramigrate.migrate import Job, run_file
from dramigrate.rules import LabelRule, load_rules
from dramigrate.selectors import Inexact, requirement
from dramigrate.versions import Target

RULES = load_rules()


def _sample(rule: LabelRule) -> str:
    if rule.value_map:
        return str(next(iter(rule.value_map)))
    return {"int": "8", "version": "535.104.05"}.get(rule.value_type, "sample-value")


def _translations(rule: LabelRule) -> list[str]:
    out = []
    value = _sample(rule)
    for operator in ("In", "NotIn", "Gt", "Lt"):
        try:
            cel = requirement(rule, operator, [value])
        except Inexact:
            continue
        if cel:
            out.append(cel)
    return out


CASES = [
    pytest.param(rule, cel, id=f"{rule.key}:{i}")
    for rule in RULES.labels.values()
    for i, cel in enumerate(_translations(rule))
    if "device.attributes" in cel or "device.capacity" in cel
]


@pytest.mark.parametrize(("rule", "cel"), CASES)
def test_a_device_without_the_attribute_is_skipped_not_an_allocation_error(rule: LabelRule, cel: str) -> None:
    driver = RULES.classes[rule.classes[0]].driver
    bare = Device(driver=driver, pool="p", node="n", name="d0")
    try:
        matched = device_matches(cel, bare)
    except CelError as exc:
        pytest.fail(f"{rule.key}: {cel!r} aborts the allocation on a device without the field: {exc}")
    assert matched is False or "!(" in cel  # NotIn holds for a device without the value, as for a node


MEMORY_PINNED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: big-memory}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.memory: "81559"}
      containers:
      - name: app
        image: app
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_migrated_memory_selector_skips_a_gpu_that_publishes_no_memory() -> None:
    result = run_file(Job("m.yaml", MEMORY_PINNED.encode(), True), RULES, Settings(), Target.parse("1.36"))
    assert result.error is None and result.rewritten
    rct = [d for d in yaml.safe_load_all(result.rewritten) if d and d["kind"] == "ResourceClaimTemplate"][0]
    (cel,) = [s["cel"]["expression"] for s in rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]]
    no_memory = Device("gpu.nvidia.com", "p", "n", "gpu-0", {"gpu.nvidia.com": {"type": "gpu"}})
    h100 = Device(
        "gpu.nvidia.com",
        "p",
        "n",
        "gpu-1",
        {"gpu.nvidia.com": {"type": "gpu"}},
        {"gpu.nvidia.com": {"memory": "81559Mi"}},
    )
    assert device_matches(cel, no_memory) is False
    assert device_matches(cel, h100) is True
