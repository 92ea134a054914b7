"""A user's --set of a device count over values that ask for devices already (pattern B): t9k's stable-diffusion
chart run `--set resources.limits.nvidia\\.com/gpu=2` over its default `nvidia.com/gpu: 1`, substratus' TGI chart
the same over `-f example.yaml`. The DRA values (values-dra.yaml, a -f file's -dra.yaml variant) drop the device
key, so the --set cannot go with them; fix writes the DRA values of the user's values, --set and all, into
values-set-dra.yaml, which stands in place of that --set after the user's -f files as they are, proven so; the
chart's values-dra.yaml stays the defaults' (was: manual, "put those --set options in a -f values file").

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TOYAML_SERVER, RunCli, chart_with, dramigrate_in_process

from dramigrate.helm.render import RenderOptions, render_chart


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


DEVICE_SET = "resources.limits.nvidia\\.com/gpu=2"
GPU = "resources:\n  requests:\n    cpu: 500m\n  limits:\n    nvidia.com/gpu: 1\n"


def rendered(chart: Path, *files: Path, sets: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, int]]:
    """The Deployment's pod spec and each ResourceClaimTemplate's device count by name."""
    options = RenderOptions(values_files=files, set_values=sets)
    docs = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    return pod, counts


def test_a_set_count_over_the_defaults_gets_values_set_dra_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": TOYAML_SERVER, "values.yaml": GPU})
    code, _, err = run_cli(["fix", str(chart), "--set", DEVICE_SET])
    assert code == 0, err
    assert f"-f {chart}/values-set-dra.yaml in place of --set {DEVICE_SET}" in err, err
    written = (chart / "values-set-dra.yaml").read_text()
    assert f"in place of `--set {DEVICE_SET}`" in written.splitlines()[0], written
    # the file alone, without the --set: the pod's claim asks for the 2 GPUs, no device-plugin request left
    pod, counts = rendered(chart, chart / "values-set-dra.yaml")
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "500m"}, "claims": [{"name": "gpu"}]}, pod
    (claim,) = pod["resourceClaims"]
    assert counts == {claim["resourceClaimTemplateName"]: 2}, (claim, counts)
    # the chart's values-dra.yaml is the defaults' still: one GPU, for the users who set no count
    _, counts = rendered(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1], counts
    # without DRA values the user's run renders as before
    pod, counts = rendered(chart, sets=(DEVICE_SET,))
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2} and not counts, pod


def test_a_set_count_over_a_values_file_goes_after_that_file(run_cli: RunCli, tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": TOYAML_SERVER, "values.yaml": GPU})
    example = tmp_path / "l4.yaml"
    example.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\nnodeSelector: {pool: l4}\n")
    code, _, err = run_cli(["fix", str(chart), "-f", str(example), "--set", DEVICE_SET])
    assert code == 0, err
    assert "failed parsing --set data" not in err, err
    assert f"-f {example} -f {chart}/values-set-dra.yaml in place of --set {DEVICE_SET}" in err, err
    pod, counts = rendered(chart, example, chart / "values-set-dra.yaml")
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "500m"}, "claims": [{"name": "gpu"}]}, pod
    assert list(counts.values()) == [2], counts
    # the file's own DRA variant, for it without the --set, keeps its one GPU
    _, counts = rendered(chart, tmp_path / "l4-dra.yaml")
    assert list(counts.values()) == [1], counts


def test_a_set_count_over_a_shipped_file_key_not_in_the_defaults(run_cli: RunCli, tmp_path: Path) -> None:
    # foldingathome's shape: values.yaml asks for no GPU, the chart's values-gpu.yaml adds `nvidia.com/gpu: 1`.
    # Helm deletes a null only for a key of values.yaml, so values-set-dra.yaml's null for the file's key rendered
    # `nvidia.com/gpu: null` (was: manual, "the render is not valid")
    cpu = "resources:\n  limits:\n    cpu: 1\n"
    files = {"templates/server.yaml": TOYAML_SERVER, "values.yaml": cpu, "values-gpu.yaml": GPU}
    chart = chart_with(tmp_path, "server", files)
    shipped = chart / "values-gpu.yaml"
    code, _, err = run_cli(["fix", str(chart), "-f", str(shipped), "--set", DEVICE_SET])
    assert code == 0, err
    assert f"-f {shipped} -f {chart}/values-set-dra.yaml in place of --set {DEVICE_SET}" in err, err
    pod, counts = rendered(chart, shipped, chart / "values-set-dra.yaml")
    resources = pod["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": 1}, "requests": {"cpu": "500m"}, "claims": [{"name": "gpu"}]}, pod
    (claim,) = pod["resourceClaims"]
    assert counts == {claim["resourceClaimTemplateName"]: 2}, (claim, counts)
    # the user's run without DRA values renders as before: the device-plugin request of 2
    pod, counts = rendered(chart, shipped, sets=(DEVICE_SET,))
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": 1, "nvidia.com/gpu": 2} and not counts, pod
    # the shipped file's own DRA variant, without the --set, keeps its one GPU
    _, counts = rendered(chart, chart / "values-gpu-dra.yaml")
    assert list(counts.values()) == [1], counts
