"""A container that writes its resources only from the variables of a `range` over values maps (awssamples'
eksml triton chart: `range $k, $v := .Values.resources.requests`, then `.limits`, each `{{ $k }}: {{ $v }}`), with
no device key of the chart's own, and a `.Values.resources` that holds `node_type` too (the pod's nodeSelector).
Was: manual work, 'the values map resources is not passed through as is'. Now the keyed-map rewrite takes it
(keyedmap.map_only), proven: with the switch on each migrated key of the maps leaves the container, the pod gets the
claim (named after its requests, as the migration names it) and a toleration for each device its values list does
not tolerate already, and the claim template asks for each device of the limits map; switch off: as before. A shape
it does not take is refused at the key line with the steps by hand. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, dramigrate_in_process, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      tolerations:
      {{- range $v := .Values.tolerations }}
        - key: {{ $v.key }}
          {{- if $v.operator }}
          operator: {{ $v.operator }}
          {{- end }}
      {{- end }}
      nodeSelector:
        node.kubernetes.io/instance-type: {{ .Values.resources.node_type }}
      containers:
        - name: server
          image: busybox
          resources:
            requests:
            {{- range $k, $v := .Values.resources.requests }}
              {{ $k }}: {{ $v }}
            {{- end }}
            limits:
            {{- range $k, $v := .Values.resources.limits }}
              {{ $k }}: {{ $v }}
            {{- end }}
"""
VALUES = "tolerations: []\nresources:\n  node_type: g6.48xlarge\n  requests: {}\n  limits: {}\n"
GPU = "resources:\n  node_type: g6.48xlarge\n  requests:\n    nvidia.com/gpu: 8\n  limits:\n    nvidia.com/gpu: 8\n"


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("maponly")
    made = chart_with(root, "triton", {"templates/server.yaml": SERVER, "values.yaml": VALUES})
    neuron = root / "neuron.yaml"  # the chart's claim knows this device, and NVIDIA's GPU
    neuron.write_text(GPU.replace("nvidia.com/gpu", "aws.amazon.com/neuron"))
    fix_chart(made, values=(neuron,))  # was: manual, 'the values map resources is not passed through as is'
    return made


def _render(chart: Path, values: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The pod spec, and the ResourceClaimTemplates' claim specs."""
    given = chart.parent / "given.yaml"
    given.write_text(values)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    pod = next(d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment")
    return pod, [d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"]


def test_the_maps_device_is_claimed_with_the_switch_on(chart: Path) -> None:
    pod, claims = _render(chart, "dra: {enabled: true}\n" + GPU)
    resources = {k: v for k, v in pod["containers"][0]["resources"].items() if v}
    assert resources == {"claims": [{"name": "gpu"}]}, pod
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "g6.48xlarge"}
    (claim,) = claims
    assert [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in claim["devices"]["requests"]
    ] == [("gpu", "gpu.nvidia.com", 8)]


def test_a_values_toleration_of_the_device_is_not_repeated(chart: Path) -> None:
    pod, _ = _render(chart, "dra: {enabled: true}\ntolerations: [{key: nvidia.com/gpu, operator: Exists}]\n" + GPU)
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}], pod


def test_two_devices_of_the_map_share_a_claim_named_after_both(chart: Path) -> None:
    """As the migration gives a container asking for both: one claim, named after its requests (`neuron-gpu`)."""
    both = GPU.replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 8\n    aws.amazon.com/neuron: 1")
    pod, claims = _render(chart, "dra: {enabled: true}\n" + both)
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "neuron-gpu"}]
    assert [c["name"] for c in pod["resourceClaims"]] == ["neuron-gpu"]
    assert [t["key"] for t in pod["tolerations"]] == ["aws.amazon.com/neuron", "nvidia.com/gpu"]
    named = [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in claims[0]["devices"]["requests"]
    ]
    assert named == [("neuron", "neuron.aws.com", 1), ("gpu", "gpu.nvidia.com", 8)], named


def test_values_offer_only_the_dra_keys_a_template_reads(chart: Path) -> None:
    """Each device of the maps asks for the class its migration gives it, so `dra.deviceClassName` would change
    nothing: values.yaml does not offer it (was: `deviceClassName: gpu.nvidia.com`, read by no template)."""
    dra = yaml.safe_load((chart / "values.yaml").read_text())["dra"]
    templates = "".join(p.read_text() for p in (chart / "templates").iterdir())
    assert sorted(dra) == ["enabled", "existingClaimTemplate"], dra
    assert all(f".Values.dra.{key}" in templates for key in dra), dra


def test_a_device_the_claim_does_not_know_fails_with_the_way_back(chart: Path) -> None:
    with pytest.raises(HelmError, match=r"resources.limits holds a device the chart's DRA claim does not know"):
        _render(chart, "dra: {enabled: true}\n" + GPU.replace("nvidia.com/gpu", "amd.com/gpu"))


def test_the_maps_render_as_before_with_the_switch_off(chart: Path) -> None:
    pod, claims = _render(chart, "dra: {enabled: false}\n" + GPU)
    assert not claims and "resourceClaims" not in pod
    assert pod["containers"][0]["resources"] == {"requests": {"nvidia.com/gpu": 8}, "limits": {"nvidia.com/gpu": 8}}
    pod, claims = _render(chart, "dra: {enabled: true}\n" + GPU.replace("nvidia.com/gpu", "rdma/hca"))
    assert not claims and "resourceClaims" not in pod  # a resource the migration leaves alone stays
    assert pod["containers"][0]["resources"]["limits"] == {"rdma/hca": 8}


def test_a_map_only_container_it_does_not_take_is_refused_with_the_steps_by_hand_and_why(
    tmp_path: Path,
) -> None:
    """The pod's tolerations written with toYaml, not a `range` over a values list: refused at the key line with
    the steps by hand and that line (was: 'the values map resources is not passed through as is')."""
    helper = SERVER.replace(
        "      {{- range $v := .Values.tolerations }}\n        - key: {{ $v.key }}\n          {{- if $v.operator }}\n"
        "          operator: {{ $v.operator }}\n          {{- end }}\n      {{- end }}\n",
        "        {{- toYaml .Values.tolerations | nindent 8 }}\n",
    )
    assert helper != SERVER
    chart = chart_with(tmp_path, "triton", {"templates/server.yaml": helper, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    options = ChartOptions(values_files=(gpu,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven and not outcome.changes
    key = helper.splitlines().index("              {{ $k }}: {{ $v }}") + 1
    line = helper.splitlines().index("      tolerations:") + 1
    assert f"templates/server.yaml:{key}: pattern E" in outcome.manual, outcome.manual
    assert "By hand: take nvidia.com/gpu out of `.Values.resources.requests`" in outcome.manual, outcome.manual
    assert f"templates/server.yaml:{line}: the pod's tolerations are not a `range` over a values list" in (
        outcome.manual
    ), outcome.manual
    assert "not passed through" not in outcome.manual, outcome.manual


def test_fix_says_the_maps_device_request_is_fixed_and_exits_0(tmp_path: Path, run_cli: Any) -> None:
    """The pass-through is tried first and fails on this shape, which cleared every finding's fixed; the keyed-map
    rewrite then wrote and proved the chart, yet its device request still said (fixable), the summary counted an
    error and fix exited 1 (charts45 eksml triton and rayserve), while a lint right after found nothing."""
    chart = chart_with(tmp_path, "triton", {"templates/server.yaml": SERVER, "values.yaml": VALUES})
    (tmp_path / "gpu.yaml").write_text(GPU)
    code, out, err = run_cli(["fix", "triton", "-f", "gpu.yaml"], cwd=tmp_path)
    said = out + err  # the findings and the summary go to stderr
    assert "written:" in said and (chart / "templates/resourceclaimtemplate.yaml").is_file(), said
    requests = [line for line in said.splitlines() if "[legacy-device-request]" in line]
    assert requests and all("(fixed)" in line for line in requests), said
    assert "fixable with" not in said, said
    assert code == 0, said
    assert run_cli(["lint", "triton", "-f", "gpu.yaml"], cwd=tmp_path)[0] == 0
