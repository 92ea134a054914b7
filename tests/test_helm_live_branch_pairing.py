"""The other branch of a vendor choice is read from a value set of the proof that renders it (run._live_branch: dell's
node label moved into the NVIDIA claim while the user's values pick AMD), and that render's objects are paired with
the template's as the proof pairs objects: by kind, namespace and name (generateName when there is none). Before,
they were paired by kind and name only, so a Deployment of one name in another namespace (a shadow beside the
served one, rendered after it) stood for the template's, the branch's label was not seen, and the chart was refused
("the pods select nodes by a device label that a template writes itself"); two objects with only a generateName
were one. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart
from test_helm_template_labels import HELPERS, VENDORS

from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import _live_branch


def _in(namespace: str, template: str) -> str:
    return template.replace("  name: tgi\n", f"  name: tgi\n  namespace: {namespace}\n", 1)


SERVED = _in("serving", VENDORS)  # NVIDIA with its product label, or AMD without, as .Values.vendor picks
# the same kind and name in another namespace, always on the AMD branch (no label)
SHADOW = _in("shadow", VENDORS.replace('eq .Values.vendor "nvidia"', "false"))


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("live-branch")
    files = {"templates/_helpers.tpl": HELPERS, "templates/served.yaml": SERVED, "templates/shadow.yaml": SHADOW}
    files["values.yaml"] = "vendor: nvidia\ninstance: h100\nshards: 8\n"
    chart = chart_with(root, "tgi", files)
    amd = root / "amd.yaml"
    amd.write_text("vendor: amd\nshards: 4\n")
    fix_chart(chart, values=(amd,))  # was: manual, the shadow's pod read as the served one's AMD branch
    return chart, amd


def _served(chart: Path, *values: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    files = []
    for i, text in enumerate(values):
        files.append(chart.parent / f"v{i}.yaml")
        files[-1].write_text(text)
    docs = [
        d for m in render_chart(chart, RenderOptions(values_files=tuple(files))) for d in yaml.safe_load_all(m.text)
    ]
    docs = [d for d in docs if d]
    (served,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["namespace"] == "serving"]
    return served["spec"]["template"]["spec"], [d for d in docs if d["kind"] == "ResourceClaimTemplate"]


def test_the_nvidia_branch_label_moves_into_its_claim(fixed: tuple[Path, Path]) -> None:
    chart, _ = fixed
    pod, templates = _served(chart, "dra: {enabled: true}\n")
    assert "nodeSelector" not in pod and pod["resourceClaims"], pod
    claims = {t["metadata"]["name"]: t["spec"]["spec"]["devices"]["requests"][0]["exactly"] for t in templates}
    (mine,) = [claims[c["resourceClaimTemplateName"]] for c in pod["resourceClaims"]]
    assert mine["deviceClassName"] == "gpu.nvidia.com" and mine["count"] == 8
    assert mine["selectors"][0]["cel"]["expression"].endswith("== 'NVIDIA-H100-80GB-HBM3'")


def test_the_amd_branch_asks_for_its_own_device_without_the_label(fixed: tuple[Path, Path]) -> None:
    chart, amd = fixed
    pod, templates = _served(chart, amd.read_text(), "dra: {enabled: true}\n")
    claims = {t["metadata"]["name"]: t["spec"]["spec"]["devices"]["requests"][0]["exactly"] for t in templates}
    (mine,) = [claims[c["resourceClaimTemplateName"]] for c in pod["resourceClaims"]]
    assert mine["deviceClassName"] == "gpu.amd.com" and mine["count"] == 4
    assert "gpu.product" not in str(mine.get("selectors"))
    assert "nodeSelector" not in pod


def test_switch_off_renders_the_label_as_before(fixed: tuple[Path, Path]) -> None:
    chart, _ = fixed
    pod, _ = _served(chart, "dra: {enabled: false}\n")
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: {name}-
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: {name}
          image: {name}:1
          resources:
            limits:
              {device}: 1
"""


def test_objects_with_only_a_generate_name_are_told_apart() -> None:
    """Two Jobs named by generateName alone: the one asked for is paired with itself, not with the other."""
    train, other = JOB.format(name="train", device="amd.com/gpu"), JOB.format(name="eval", device="amd.com/gpu")
    render = f"---\n{train}---\n{other}"
    (doc,) = yaml.safe_load_all(train)
    found = _live_branch([doc], render, render, "nvidia.com/gpu", "amd.com/gpu")
    assert found is not None and found[0] == [doc]  # was: the eval Job, the later object of "name" None
    twice = f"---\n{train}---\n{train}"  # two objects of one generateName: which is the template's is not known
    assert _live_branch([doc], twice, twice, "nvidia.com/gpu", "amd.com/gpu") is None
