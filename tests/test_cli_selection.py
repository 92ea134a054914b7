"""Device selection through the installed command: fit, --classes, --strategy extended-resource, flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import RunCli, dramigrate_in_process


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


INVENTORIES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"

PINNED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pinned
  namespace: ml
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
        cloud.google.com/gke-accelerator: nvidia-a100-80gb
      tolerations:
      - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}
      containers:
      - name: app
        image: app:1
        resources:
          limits:
            nvidia.com/gpu: 4
"""

MIG = """\
apiVersion: v1
kind: Pod
metadata:
  name: mig
spec:
  initContainers:
  - name: warm
    image: w:1
    resources: {limits: {nvidia.com/mig-1g.5gb: 1}}
  containers:
  - name: c
    image: c:1
    resources: {limits: {nvidia.com/mig-1g.5gb: 2}}
"""


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def test_fit_reports_where_claims_fit_and_exits_1_when_one_fits_nowhere(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(tmp_path, "pinned.yaml", PINNED)
    code, out, err = run_cli(["fit", "--inventory", INVENTORIES / "a100-80gb.yaml", f])
    assert code == 0, err
    assert "fits on 1 node(s)" in out and "4 x gpu.nvidia.com" in out
    code, out, err = run_cli(["fit", "--inventory", INVENTORIES / "h100.yaml", f, "--format", "json"])
    assert code == 1, err
    (claim,) = json.loads(out)["claims"]
    assert claim["fits"] is False and claim["requests"][0]["matches"] == {}
    assert f.read_text() == PINNED, "fit writes nothing"


def test_fit_on_bad_inventory_is_bad_input(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(tmp_path, "pinned.yaml", PINNED)
    code, _, err = run_cli(["fit", "--inventory", tmp_path / "missing.yaml", f])
    assert code == 2 and "missing.yaml" in err and "Traceback" not in err
    deep = write(tmp_path, "deep.yaml", "items: " + "[" * 5000 + "]" * 5000 + "\n")  # refused before parsing
    code, _, err = run_cli(["fit", "--inventory", deep, f])
    assert code == 2 and "deep.yaml:1: nested more than 100 levels deep" in err and "internal error" not in err, err


def test_drop_tolerations_and_remove_node_selectors(run_cli: RunCli) -> None:
    code, out, _ = run_cli(["fix", "-"], stdin=PINNED)
    assert code == 0
    pod = next(yaml.safe_load_all(out))["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"}
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in pod["tolerations"]
    code, out, err = run_cli(["fix", "-", "--removed-taint", "sku=gpu", "--remove-node-selectors"], stdin=PINNED)
    assert code == 0, err
    pod = next(yaml.safe_load_all(out))["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_named_classes_go_to_the_classes_file(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(tmp_path, "pinned.yaml", PINNED)
    classes = tmp_path / "cluster" / "classes.yaml"
    code, _, err = run_cli(["fix", f, "--classes", "--classes-file", classes])
    assert code == 0, err
    rct = [d for d in yaml.safe_load_all(f.read_text()) if d["kind"] == "ResourceClaimTemplate"][0]
    exact = rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert "selectors" not in exact
    (cls,) = [d for d in yaml.safe_load_all(classes.read_text()) if d]
    assert cls["metadata"]["name"] == exact["deviceClassName"] and cls["kind"] == "DeviceClass"
    assert any("NVIDIA-A100-SXM4-80GB" in s["cel"]["expression"] for s in cls["spec"]["selectors"])
    assert "named-class-quota" in err


def test_extended_resource_strategy_leaves_pods_and_emits_mig_class(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(tmp_path, "mig.yaml", MIG)
    classes = tmp_path / "classes.yaml"
    code, _, err = run_cli(
        [
            "fix",
            f,
            "--strategy",
            "extended-resource",
            "--classes-file",
            classes,
            "--kube-version",
            "1.34",
            "--assume-extended-resource-enabled",
        ]
    )
    assert code == 0, err
    assert f.read_text() == MIG
    (cls,) = [d for d in yaml.safe_load_all(classes.read_text()) if d]
    assert cls["spec"]["extendedResourceName"] == "nvidia.com/mig-1g.5gb"
    assert cls["metadata"]["name"] == "mig-1g-5gb.gpu.nvidia.com"
    assert "DRAExtendedResource" in err and "extended-resource-init" in err
    code, _, err = run_cli(["lint", f, "--strategy", "extended-resource", "--kube-version", "1.33"])
    assert code == 2 and "1.34" in err


def test_templated_file_outside_a_chart_is_reported(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "t.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.name }}\nspec:\n"
        "  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
    )
    code, out, _ = run_cli(["lint", f, "--format", "json"])
    (finding,) = json.loads(out)["findings"]
    assert finding["rule"] == "templated-device-file" and finding["line"] == 4
    assert code == 1  # it asks for a device: an error, so a lint gate cannot pass it unchecked


def test_invalid_label_value_is_bad_input(run_cli: RunCli, tmp_path: Path) -> None:
    f = write(tmp_path, "bad.yaml", PINNED.replace("NVIDIA-A100-SXM4-80GB", '"NVIDIA A100\'"'))
    before = f.read_text()
    code, _, err = run_cli(["fix", f])
    assert code == 2 and "not a valid Kubernetes label value" in err and f"{f}:" in err
    assert f.read_text() == before
