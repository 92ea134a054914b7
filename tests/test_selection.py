"""Label hacks become CEL that selects exactly the devices the legacy pod could have been given.

The oracle computes each inventory device's legacy node labels the way GPU Feature Discovery and the cloud
providers derive them (sanitised NVML name, memory in MiB rounded down, lower-case family, ...), applies the
pod's node-selector semantics to them, and compares with evaluating the emitted CEL (class selectors plus the
request's) on the same devices.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dramigrate.cel import Quantity, compile_selector
from dramigrate.classes import class_selectors
from dramigrate.config import Settings
from dramigrate.findings import InputError
from dramigrate.fit import fit_claim
from dramigrate.inventory import Device, load_inventory
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

INVENTORIES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"
RULES = load_rules()
DEVICES = [d for p in sorted(INVENTORIES.glob("*.yaml")) for d in load_inventory(p)]
NV = "gpu.nvidia.com"


def gfd_labels(d: Device) -> dict[str, str] | None:
    """The GFD labels a node with this device carries; None for devices that are not whole NVIDIA GPUs."""
    attrs = d.attributes.get(NV, {})
    if d.driver != NV or attrs.get("type") != "gpu":
        return None
    name = str(attrs["productName"])
    product = "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", name).split())
    mib = math.floor(Quantity.parse(str(d.capacity[NV]["memory"])).value / 2**20)
    cc = str(attrs["cudaComputeCapability"]).split(".")
    return {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.memory": str(mib),
        "nvidia.com/gpu.family": str(attrs["architecture"]).lower().replace(" ", "-"),
        "nvidia.com/gpu.compute.major": cc[0],
        "nvidia.com/gpu.compute.minor": cc[1],
        "productName": name,
    }


def holds(labels: dict[str, str], key: str, op: str, values: list[str]) -> bool:
    v = labels.get(key)
    return {
        "In": lambda: v in values,
        "NotIn": lambda: v not in values,
        "Gt": lambda: v is not None and int(v) > int(values[0]),
        "Lt": lambda: v is not None and int(v) < int(values[0]),
    }[op]()


def pod(resources: str, scheduling: str) -> bytes:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
{scheduling}  containers:
  - name: c
    image: c
    resources:
      limits:
        {resources}
""".encode()


def migrate(raw: bytes, **overrides: Any) -> tuple[list[dict[str, Any]], Any]:
    result = run_file(Job("p.yaml", raw, True), RULES, Settings(**overrides), Target.parse("1.36"))
    assert result.error is None, result.error
    assert result.rewritten is not None
    return [d for d in yaml.safe_load_all(result.rewritten) if d and d["kind"] == "ResourceClaimTemplate"], result


def selected(template: dict[str, Any], devices: list[Device], extra_classes: dict[str, Any] | None = None) -> set[str]:
    """Devices the template's (single, exactly) request admits: class selectors AND request selectors."""
    (req,) = template["spec"]["spec"]["devices"]["requests"]
    exact = req["exactly"]
    cls = {**RULES.classes, **(extra_classes or {})}[exact["deviceClassName"]]
    exprs = [compile_selector(e) for e in class_selectors(cls)]
    exprs += [compile_selector(s["cel"]["expression"]) for s in exact.get("selectors", [])]
    return {f"{d.node}/{d.name}" for d in devices if all(e.matches(d.driver, d.attributes, d.capacity) for e in exprs)}


def oracle(predicate: Any) -> set[str]:
    return {f"{d.node}/{d.name}" for d in DEVICES if (labels := gfd_labels(d)) is not None and predicate(labels)}


AFFINITY = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
{terms}"""


def affinity(*terms: list[tuple[str, str, list[str]]]) -> str:
    out = []
    for term in terms:
        out.append("        - matchExpressions:")
        for key, op, values in term:
            flow = "[" + ", ".join(f"'{v}'" for v in values) + "]"
            out.append(f"          - {{key: {key}, operator: {op}, values: {flow}}}")
    return AFFINITY.format(terms="\n".join(out) + "\n")


CASES = [
    ("product A100-80GB", [[("nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-80GB"])]]),
    ("product H100 or L4", [[("nvidia.com/gpu.product", "In", ["NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"])]]),
    ("product not A100-40GB", [[("nvidia.com/gpu.product", "NotIn", ["NVIDIA-A100-SXM4-40GB"])]]),
    ("memory exactly 81920 MiB", [[("nvidia.com/gpu.memory", "In", ["81920"])]]),
    ("memory > 40000 MiB", [[("nvidia.com/gpu.memory", "Gt", ["40000"])]]),
    ("memory > 81559 MiB (H100 is 81559)", [[("nvidia.com/gpu.memory", "Gt", ["81559"])]]),
    ("memory < 40961 MiB", [[("nvidia.com/gpu.memory", "Lt", ["40961"])]]),
    ("family ampere", [[("nvidia.com/gpu.family", "In", ["ampere"])]]),
    ("family not hopper", [[("nvidia.com/gpu.family", "NotIn", ["hopper"])]]),
    ("family ada-lovelace", [[("nvidia.com/gpu.family", "In", ["ada-lovelace"])]]),
    ("compute major > 8", [[("nvidia.com/gpu.compute.major", "Gt", ["8"])]]),
    ("compute 8.9", [[("nvidia.com/gpu.compute.major", "In", ["8"]), ("nvidia.com/gpu.compute.minor", "In", ["9"])]]),
    (
        "two terms: hopper or > 45000 MiB",
        [[("nvidia.com/gpu.family", "In", ["hopper"])], [("nvidia.com/gpu.memory", "Gt", ["45000"])]],
    ),
]


@pytest.mark.parametrize("name,terms", CASES, ids=[c[0] for c in CASES])
def test_gfd_labels_select_exactly_the_legacy_devices(name: str, terms: list[list[tuple[str, str, list[str]]]]):
    (template,), result = migrate(pod("nvidia.com/gpu: 1", affinity(*terms)))
    expected = oracle(lambda labels: any(all(holds(labels, *e) for e in term) for term in terms))
    assert expected, "the oracle must select something for the case to mean anything"
    assert selected(template, DEVICES) == expected
    assert "nvidia.com/gpu.product" not in (result.rewritten or "").split("kind: ResourceClaimTemplate")[0]


def test_node_selector_is_an_in_requirement_and_leaves_the_pod():
    (template,), result = migrate(
        pod("nvidia.com/gpu: 2", "  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n    team: ml\n")
    )
    assert selected(template, DEVICES) == oracle(
        lambda labels: labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    )
    workload = yaml.safe_load_all(result.rewritten).__next__()
    assert workload["spec"]["nodeSelector"] == {"team": "ml"}


@pytest.mark.parametrize(
    "value,names",
    [
        ("nvidia-l4", {"NVIDIA L4"}),
        ("nvidia-a100-80gb", {"NVIDIA A100-SXM4-80GB"}),
        ("nvidia-h100-80gb", {"NVIDIA H100 80GB HBM3"}),
        ("nvidia-tesla-a100", {"NVIDIA A100-SXM4-40GB"}),
    ],
)
def test_gke_accelerator_label_selects_its_model_and_stays(value: str, names: set[str]):
    (template,), result = migrate(
        pod("nvidia.com/gpu: 1", f"  nodeSelector:\n    cloud.google.com/gke-accelerator: {value}\n")
    )
    assert selected(template, DEVICES) == oracle(lambda labels: labels["productName"] in names)
    assert f"cloud.google.com/gke-accelerator: {value}" in result.rewritten  # node-pool label kept
    assert any(f.rule == "pool-label-kept" for f in result.findings)


def test_remove_node_selectors_removes_pool_labels_too():
    _, result = migrate(
        pod("nvidia.com/gpu: 1", "  nodeSelector:\n    cloud.google.com/gke-accelerator: nvidia-l4\n"),
        remove_node_selectors=True,
    )
    assert "gke-accelerator" not in result.rewritten.split("---")[0]


def test_karpenter_gpu_name_a100_covers_both_memory_sizes():
    (template,), _ = migrate(
        pod("nvidia.com/gpu: 8", affinity([("karpenter.k8s.aws/instance-gpu-name", "In", ["a100"])]))
    )
    assert selected(template, DEVICES) == oracle(lambda labels: labels["productName"].startswith("NVIDIA A100-SXM4"))


def test_mig_profile_selects_exactly_that_profile():
    (template,), _ = migrate(pod("nvidia.com/mig-1g.5gb: 1", ""))
    expected = {
        f"{d.node}/{d.name}"
        for d in DEVICES
        if d.driver == NV and d.attributes[NV].get("type") == "mig" and d.attributes[NV].get("profile") == "1g.5gb"
    }
    assert expected and selected(template, DEVICES) == expected


def test_amd_partition_selects_exactly_cpx_nps4():
    (template,), _ = migrate(pod("amd.com/cpx_nps4: 1", ""))
    amd = "gpu.amd.com"
    expected = {
        f"{d.node}/{d.name}"
        for d in DEVICES
        if d.driver == amd
        and d.attributes[amd].get("computePartition") == "cpx"
        and d.attributes[amd].get("memoryPartition") == "nps4"
    }
    assert expected and selected(template, DEVICES) == expected


def test_tpu_accelerator_and_topology():
    tpus = [
        Device("tpu.google.com", "p", f"n{i}", f"tpu-{i}", {"tpu.google.com": {"accelerator": acc, "topology": topo}})
        for i, (acc, topo) in enumerate(
            [("tpu-v5-lite-podslice", "4x4"), ("tpu-v5-lite-podslice", "2x4"), ("tpu-v6e-slice", "4x4")]
        )
    ]
    (template,), _ = migrate(
        pod(
            "google.com/tpu: 4",
            "  nodeSelector:\n    cloud.google.com/gke-tpu-accelerator: "
            "tpu-v5-lite-podslice\n    cloud.google.com/gke-tpu-topology: 4x4\n",
        )
    )
    assert selected(template, tpus) == {"n0/tpu-0"}


def test_inexact_labels_are_reported_not_translated():
    (template,), result = migrate(
        pod("nvidia.com/gpu: 1", '  nodeSelector:\n    karpenter.k8s.aws/instance-gpu-memory: "22888"\n')
    )
    assert "selectors" not in template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert [f.rule for f in result.findings if f.rule == "inexact-label"] == ["inexact-label"]
    assert "instance-gpu-memory" in result.rewritten


@pytest.mark.parametrize("value", ["NVIDIA A100", "x'||true||'", "-bad", "a" * 64])
def test_invalid_label_values_are_bad_input(value: str):
    raw = pod(
        "nvidia.com/gpu: 1", f"  nodeSelector:\n    nvidia.com/gpu.product: {yaml.safe_dump(value).splitlines()[0]}\n"
    )
    result = run_file(Job("p.yaml", raw, True), RULES, Settings(), Target.parse("1.36"))
    assert isinstance(result.error, InputError) and "not a valid Kubernetes label value" in result.error.message
    assert result.rewritten is None


def test_preferred_models_become_first_available_ordered_by_weight():
    pref = """  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-L4]}]}
      - weight: 90
        preference: {matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}]}
"""
    (template,), _ = migrate(pod("nvidia.com/gpu: 1", pref))
    subs = template["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"]
    assert [s["name"] for s in subs] == ["choice-1", "choice-2", "fallback"]
    assert (
        "H100" in subs[0]["selectors"][0]["cel"]["expression"] and "L4" in subs[1]["selectors"][0]["cel"]["expression"]
    )
    assert "selectors" not in subs[2]
    r = run_file(
        Job("p.yaml", pod("nvidia.com/gpu: 1", pref), True),
        RULES,
        Settings(kube_version="1.33", assume_dra_enabled=True),
        Target.parse("1.33"),
    )
    assert any(f.rule == "preference-lost" for f in r.findings)
    assert "firstAvailable" not in (r.rewritten or "")


def test_fit_agrees_with_evaluation():
    (template,), _ = migrate(
        pod("nvidia.com/gpu: 8", "  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n")
    )
    a100 = load_inventory(INVENTORIES / "a100-80gb.yaml")
    h100 = load_inventory(INVENTORIES / "h100.yaml")
    assert fit_claim(template, RULES.classes, a100).fits
    assert not fit_claim(template, RULES.classes, h100).fits
    nine = {**template}
    nine["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    assert not fit_claim(nine, RULES.classes, a100).fits  # 8 GPUs on the node: 9 never fit


def test_gpu_efa_pairs_fit_under_one_pcie_root_each():
    # 40 devices: more than one claim may hold (32), so the GPU/EFA pairs are packed into two claims, each pair whole
    templates, _ = migrate(pod("nvidia.com/gpu: 8\n        vpc.amazonaws.com/efa: 32", ""), align_nics="required")
    inventory = load_inventory(INVENTORIES / "gpu-efa.yaml")
    assert len(templates) == 2
    counts = []
    for template in templates:
        devices = template["spec"]["spec"]["devices"]
        in_claim = {r["name"] for r in devices["requests"]}
        assert all(set(c["requests"]) <= in_claim for c in devices["constraints"])
        assert sum(r["exactly"]["count"] for r in devices["requests"]) <= 32
        assert fit_claim(template, RULES.classes, inventory).fits
        counts.append(len(devices["constraints"]))
    assert sum(counts) == 8


def test_named_classes_select_the_same_devices():
    raw = pod("nvidia.com/gpu: 1", "  nodeSelector:\n    nvidia.com/gpu.family: hopper\n")
    (plain,), _ = migrate(raw)
    (named,), result = migrate(raw, named_classes=True)
    cls_name = named["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
    assert cls_name.endswith(".gpu.nvidia.com") and cls_name in result.classes
    assert selected(named, DEVICES, result.classes) == selected(plain, DEVICES) != set()


WORD = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(WORD, min_size=1, max_size=4), other=st.lists(WORD, min_size=1, max_size=4))
def test_product_translation_is_exact(words: list[str], other: list[str]):
    name, other_name = " ".join(words), " ".join(other)
    label = "-".join(name.split())
    if len(label) > 63 or not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", label):
        return
    devices = [
        Device(NV, "p", "n", f"d{i}", {NV: {"type": "gpu", "productName": n}}, {NV: {"memory": "1Gi"}})
        for i, n in enumerate((name, other_name))
    ]
    (template,), _ = migrate(pod("nvidia.com/gpu: 1", f"  nodeSelector:\n    nvidia.com/gpu.product: '{label}'\n"))
    expected = {f"n/d{i}" for i, n in enumerate((name, other_name)) if "-".join(n.split()) == label}
    assert selected(template, devices) == expected


@settings(max_examples=60, deadline=None)
@given(
    mib=st.integers(1, 300_000),
    extra=st.integers(0, 2**20 - 1),
    threshold=st.integers(0, 300_000),
    op=st.sampled_from(["Gt", "Lt", "In"]),
)
def test_memory_translation_is_exact(mib: int, extra: int, threshold: int, op: str):
    device = Device(
        NV, "p", "n", "d", {NV: {"type": "gpu", "productName": "X"}}, {NV: {"memory": str(mib * 2**20 + extra)}}
    )
    value = str(mib if op == "In" and threshold % 2 else threshold)
    (template,), _ = migrate(pod("nvidia.com/gpu: 1", affinity([("nvidia.com/gpu.memory", op, [value])])))
    assert (selected(template, [device]) == {"n/d"}) == holds({"m": str(mib)}, "m", op, [value])
