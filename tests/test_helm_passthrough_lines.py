"""Lines of the pass-through rewrite (pattern B) that carried nothing (issue 7: median added lines at most 60 per
chart): a values file's DRA overlay opened with two comment lines and wrote each toleration over three, the
claim-template file's defines closed their blocks on a line of `{{- end }}`s alone, and a chart without values.yaml
got one starting with a blank line; the DRA values wrote each claim, pod claim and request's device over two to
four lines (a `-dra.yaml` file is about 20 lines, and a chart with a GPU values file has two). Each says the same in
fewer lines; what the chart renders, and the check that
fails on a device key left beside the claims, stay. Renders are real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import TOYAML_SERVER, chart_with, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

GPU = "resources:\n  limits:\n    nvidia.com/gpu: 1\ntolerations:\n  - key: spot\n    operator: Exists\n"
SERVER = (
    TOYAML_SERVER + "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n"
)
SERVER += "      {{- end }}\n"


def _pod(chart: Path, *files: Path) -> dict:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    return pod


def test_the_pass_through_writes_no_line_that_carries_nothing(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": SERVER})  # no values.yaml: the GPU file has all
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    fix_chart(chart, values=(gpu,))
    values = (chart / "values.yaml").read_text()
    assert values.startswith("# "), values  # no blank line opening a file of its own
    overlay = (tmp_path / "gpu-dra.yaml").read_text().splitlines()
    assert overlay[0].startswith("# ") and "give it after that file, `-f gpu.yaml -f gpu-dra.yaml`" in overlay[0]
    assert not overlay[1].startswith("#"), overlay  # the how-to is one line
    # a toleration a line, on its key's line when alone; so are the container's claims and a request's device
    assert "resourceTolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]" in overlay, overlay
    assert "  claims: [{name: gpu}]" in overlay, overlay
    assert "            exactly: {deviceClassName: gpu.nvidia.com, count: 1}" in overlay, overlay
    assert any(re.fullmatch(r"  - \{name: gpu, resourceClaimTemplateName: '.*-gpu-[0-9a-f]{8}'\}", x) for x in overlay)
    claims = (chart / "templates/resourceclaimtemplates.yaml").read_text()
    assert "draTolerations" in claims and "draDevices" in claims, claims
    defines = claims[claims.index('{{- define "server.') :]
    assert not re.search(r"^\{\{- end \}\}(\{\{ end \}\})*$", defines, re.M), defines
    pod = _pod(chart, gpu, tmp_path / "gpu-dra.yaml")
    assert pod["resourceClaims"] and pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
    assert [t["key"] for t in pod["tolerations"]] == ["spot", "nvidia.com/gpu"], pod
    assert _pod(chart, gpu)["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    again = tmp_path / "again.yaml"  # a device key set again after the DRA values
    again.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    with pytest.raises(HelmError, match="ask for it twice"):
        _pod(chart, gpu, tmp_path / "gpu-dra.yaml", again)


def test_a_shipped_file_that_asks_for_the_defaults_devices_gets_no_variant(tmp_path: Path) -> None:
    """A values file the chart ships whose DRA values are the defaults' (an example for a GPU node pool: its replicas
    and tolerations, a comment naming nvidia.com/gpu; another that sets the defaults' count again) got a -dra.yaml
    variant that repeated values-dra.yaml line for line (two such examples: 30 more lines in the chart). Now
    values-dra.yaml names them and serves them, given after them; the user's own file gets no copy either."""
    values = "replicas: 1\n" + GPU
    example = "# spot nodes with nvidia.com/gpu cards\nreplicas: 3\ntolerations:\n  - key: spot\n    operator: Exists\n"
    again = "replicas: 2\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"
    files = {"templates/server.yaml": SERVER, "values.yaml": values, "examples/spot.yaml": example}
    chart = chart_with(tmp_path, "server", {**files, "examples/again.yaml": again})
    outcome = fix_chart(chart, values=(chart / "examples/spot.yaml",))
    assert sorted(p.name for p in chart.rglob("*-dra.yaml")) == ["values-dra.yaml"], outcome.report()
    overlay = (chart / "values-dra.yaml").read_text()
    head = overlay.splitlines()[0]
    assert re.search(r"\(also after (spot|again)\.yaml, (spot|again)\.yaml, which ask for the same\)", head), head
    assert "-f spot.yaml -f values-dra.yaml" in outcome.usage, outcome.usage
    for example in ("spot", "again"):
        pod = _pod(chart, chart / f"examples/{example}.yaml", chart / "values-dra.yaml")
        assert pod["resourceClaims"] and pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
        assert [t["key"] for t in pod["tolerations"]] == ["spot", "nvidia.com/gpu"], pod
        device = _pod(chart, chart / f"examples/{example}.yaml")["containers"][0]["resources"]
        assert device == {"limits": {"nvidia.com/gpu": 1}}, device


def test_a_file_that_asks_for_other_devices_keeps_its_variant(tmp_path: Path) -> None:
    """A shipped file that asks for another count keeps its variant: its DRA values are not the defaults'."""
    example = "resources:\n  limits:\n    nvidia.com/gpu: 2\n"
    files = {"templates/server.yaml": SERVER, "values.yaml": GPU, "examples/two.yaml": example}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)
    assert "count: 2" in (chart / "examples/two-dra.yaml").read_text()
    assert "also after" not in (chart / "values-dra.yaml").read_text()


COUNTED = TOYAML_SERVER.replace(
    "          resources:\n",
    '          env:\n            - {name: SHARDS, value: "{{ index .Values.resources.limits "nvidia.com/gpu" }}"}\n'
    "          resources:\n",
)


def test_a_section_that_keeps_other_keys_drops_the_device_on_one_line(tmp_path: Path) -> None:
    """A map whose limits and requests hold cpu beside the device: each section's null of the device key, and the
    counts a template line reads, on one line each in the DRA values (were two lines each: `limits:` then
    `nvidia.com/gpu: null`). The render is the same: the container keeps its cpu and asks through its claim, and the
    template line reads the count from deviceCounts."""
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits: {cpu: '1', nvidia.com/gpu: 2}\n  requests: {cpu: '1', nvidia.com/gpu: 2}\n")
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": COUNTED, "values.yaml": "resources: {}\n"})
    fix_chart(chart, values=(gpu,))
    overlay = (tmp_path / "gpu-dra.yaml").read_text().splitlines()
    assert "  limits: {nvidia.com/gpu: null}" in overlay and "  requests: {nvidia.com/gpu: null}" in overlay, overlay
    assert "deviceCounts: {nvidia.com/gpu: 2}" in overlay, overlay
    container = _pod(chart, gpu, tmp_path / "gpu-dra.yaml")["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}
    assert container["env"] == [{"name": "SHARDS", "value": "2"}]
