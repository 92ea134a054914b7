"""A GPU key and a shared RDMA HCA key in one container, the HCA's *name* from values (the shape of Azure's
AI-infrastructure charts: `{{ .Values.gpuResource }}: {{ .Values.gpusPerNode }}` beside
`{{ .Values.rdmaResource }}: {{ .Values.gpusPerNode }}`, `rdma/ib`, with the same count knob; or a literal
`nvidia.com/gpu` beside the named HCA). The migration leaves the shared HCA a device-plugin request (report only in
rules/networking.yaml), so the rewrite migrates the GPU and leaves the HCA key as written. Was: manual work ('pattern E
... this line is none of them') with the GPU named from values, and an unproven rewrite that moved the HCA key into the
DRA branch ('expected {"rdma/ib": 8}, the rewritten chart has none') with a literal GPU key. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart, run_dramigrate

from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.render import RenderOptions, render_chart


def _pod(gpu_key: str) -> str:
    return deployment(
        "{{ .Release.Name }}-check",
        f"""\
      containers:
      - name: check
        image: check:1
        resources:
          requests:
            {gpu_key}: {{{{ .Values.gpusPerNode }}}}
            {{{{ .Values.rdmaResource }}}}: {{{{ .Values.gpusPerNode }}}}
          limits:
            {gpu_key}: {{{{ .Values.gpusPerNode }}}}
            {{{{ .Values.rdmaResource }}}}: {{{{ .Values.gpusPerNode }}}}
""",
    )


VALUES = 'gpusPerNode: 8\ngpuResource: "nvidia.com/gpu"\nrdmaResource: "rdma/ib"\n'
SHAPES = {"named-gpu": "{{ .Values.gpuResource }}", "literal-gpu": "nvidia.com/gpu"}


def _render(chart: Path, sets: tuple[str, ...]) -> str:
    options = RenderOptions(set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pod_of(stream: str) -> tuple[Any, ...]:
    """The pod's claims (name -> its ResourceClaimTemplate's spec without the API's defaults), and the container's
    claims, requests and limits."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    specs = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    claims = {c["name"]: without_api_defaults(specs[c["resourceClaimTemplateName"]]) for c in pod["resourceClaims"]}
    res = pod["containers"][0]["resources"]
    return claims, res.get("claims"), res.get("requests"), res.get("limits")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_gpu_is_claimed_and_the_named_rdma_key_stays(tmp_path: Path, shape: str) -> None:
    files = {"values.yaml": VALUES, "templates/check.yaml": _pod(SHAPES[shape])}
    chart = chart_with(tmp_path / "fixed", "check", files)
    original = chart_with(tmp_path / "original", "check", files)
    fix_chart(chart)

    for sets in ((), ("gpusPerNode=2",)):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        rewritten = _pod_of(_render(chart, sets))
        assert rewritten == _pod_of(migrated), sets
        count = 2 if sets else 8
        assert rewritten[2] == rewritten[3] == {"rdma/ib": count}  # the shared HCA, as the chart asks for it
        assert _render(chart, (*sets, "dra.enabled=false")) == _render(original, sets)


PLACEHOLDER = deployment(
    "{{ .Release.Name }}-check",
    """\
      containers:
      - name: check
        image: check:1
        resources:
          limits:
            {{ .Values.deviceResource }}: {{ .Values.devices }}
""",
)


def test_a_placeholder_name_your_values_set_to_a_gpu_is_the_gpus_key(tmp_path: Path) -> None:
    """A name no pack knows is left as written only where the render asks for it: a chart whose default is a
    placeholder (`example.org/accelerator`), fixed with values that name the GPU, gets the GPU's rewrite."""
    files = {
        "values.yaml": "devices: 1\ndeviceResource: example.org/accelerator\n",
        "templates/check.yaml": PLACEHOLDER,
    }
    chart = chart_with(tmp_path / "fixed", "check", files)
    original = chart_with(tmp_path / "original", "check", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("deviceResource: nvidia.com/gpu\n")
    fix_chart(chart, values=(gpu,))

    sets = ("deviceResource=nvidia.com/gpu",)
    code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
    assert code == 0, err
    rewritten = _pod_of(_render(chart, sets))
    assert rewritten == _pod_of(migrated)
    assert rewritten[3] is None  # the GPU claimed


def test_two_device_kinds_each_named_from_values_are_told_to_write_the_keys_literally(tmp_path: Path) -> None:
    """A GPU and an EFA NIC (both moved to claims by the migration), each named by a values key: manual work whose
    reason names both keys and the change that makes fix rewrite them (was: '... this line is none of them'); the
    keys written literally, as told, are rewritten and proven."""
    values = VALUES.replace("rdma/ib", "vpc.amazonaws.com/efa")
    named = chart_with(
        tmp_path / "named", "check", {"values.yaml": values, "templates/check.yaml": _pod(SHAPES["named-gpu"])}
    )
    code, _, err = run_dramigrate(["fix", str(named)])
    assert "values keys gpuResource (nvidia.com/gpu), rdmaResource (vpc.amazonaws.com/efa)" in err
    assert "write these keys literally (`nvidia.com/gpu: <count>`, `vpc.amazonaws.com/efa: <count>`)" in err

    literal = _pod("nvidia.com/gpu").replace("{{ .Values.rdmaResource }}", "vpc.amazonaws.com/efa")
    fix_chart(chart_with(tmp_path / "literal", "check", {"values.yaml": values, "templates/check.yaml": literal}))
