"""Containers that write their resources only from `range` maps over values (awssamples' eksml charts), asking for
a GPU and EFA interfaces together, in two pods of one workload: a LeaderWorkerSet's leader and worker
(triton-inference-server-lws), a PyTorchJob's master and worker (pytorchjob-distributed). Was: manual work at the
key line (the map-only rewrite took one pod asking for one device). Now the keyed-map rewrite (keyedmap.map_only)
takes it, proven: with the switch on each pod gets the claim the migration gives it (`gpu-efa`, a request per
device, unaligned as the migration leaves them without --align-nics; a claim per device kind above 32 devices, as
on a p5.48xlarge's 8 GPUs and 32 EFA interfaces) and tolerates EFA; switch off, as before. --align-nics (a GPU tied
to its NICs) is refused at the key line with why. A Ray group whose device comes from its own map (rayserve's head
and worker groups) gets KubeRay's num-gpus with the claim; one the rewrite does not take is refused at the key line
of the map that holds the device, num-gpus among the steps. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
      spec:
        tolerations:
        {{- range $v := .Values.tolerations }}
          - key: {{ $v.key }}
            {{- if $v.operator }}
            operator: "{{ $v.operator }}"
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
SERVER = f"""\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: {{{{ .Release.Name }}}}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: {{{{ .Values.size }}}}
    leaderTemplate:
      metadata:
        labels: {{role: leader}}
{POD}    workerTemplate:
      metadata:
        labels: {{role: worker}}
{POD}"""
VALUES = "size: 2\ntolerations: []\nresources:\n  node_type: p4d.24xlarge\n  requests: {}\n  limits: {}\n"
GPU_EFA = """\
tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
resources:
  node_type: p4d.24xlarge
  requests: {nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}
  limits: {nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}
"""


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("maproles")
    made = chart_with(root, "triton-lws", {"templates/server.yaml": SERVER, "values.yaml": VALUES})
    given = root / "gpu-efa.yaml"
    given.write_text(GPU_EFA)
    fix_chart(made, values=(given,))  # was: manual, pattern E at the key line
    return made


def _render(chart: Path, values: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The leader's and the worker's pod specs, and the ResourceClaimTemplates' claim specs by name."""
    given = chart.parent / "given.yaml"
    given.write_text(values)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    lws = next(d["spec"]["leaderWorkerTemplate"] for d in docs if d["kind"] == "LeaderWorkerSet")
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    return [lws["leaderTemplate"]["spec"], lws["workerTemplate"]["spec"]], templates


def _asked(spec: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in spec["devices"]["requests"]]


def test_leader_and_worker_each_claim_the_gpu_and_efa_of_the_map(chart: Path) -> None:
    pods, templates = _render(chart, "dra: {enabled: true}\n" + GPU_EFA)
    for pod in pods:
        assert {k: v for k, v in pod["containers"][0]["resources"].items() if v} == {"claims": [{"name": "gpu-efa"}]}
        (claim,) = pod["resourceClaims"]
        assert claim["name"] == "gpu-efa"
        assert _asked(templates[claim["resourceClaimTemplateName"]]) == [
            ("gpu", "gpu.nvidia.com", 8),
            ("efa", "efa.networking.k8s.aws", 4),
        ]
        assert [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]
        assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p4d.24xlarge"}


def test_over_32_devices_each_kind_gets_a_claim_of_its_own(chart: Path) -> None:
    """A p5.48xlarge: 8 GPUs and 32 EFA interfaces, more than the 32 devices the scheduler gives one claim."""
    p5 = GPU_EFA.replace("efa: 4", "efa: 32")
    pods, templates = _render(chart, "dra: {enabled: true}\n" + p5)
    for pod in pods:
        assert [c["name"] for c in pod["containers"][0]["resources"]["claims"]] == ["gpu", "efa"]
        asked = {c["name"]: _asked(templates[c["resourceClaimTemplateName"]]) for c in pod["resourceClaims"]}
        assert asked == {"gpu": [("gpu", "gpu.nvidia.com", 8)], "efa": [("efa", "efa.networking.k8s.aws", 32)]}


def test_more_than_32_of_one_device_fails_the_render_with_the_way_back(chart: Path) -> None:
    with pytest.raises(HelmError, match=r"more than 32 devices of one kind.*set dra.enabled=false"):
        _render(chart, "dra: {enabled: true}\n" + GPU_EFA.replace("efa: 4", "efa: 33"))


def test_the_maps_render_as_before_with_the_switch_off(chart: Path) -> None:
    pods, templates = _render(chart, "dra: {enabled: false}\n" + GPU_EFA)
    assert not templates
    for pod in pods:
        assert "resourceClaims" not in pod
        both = {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4}
        assert pod["containers"][0]["resources"] == {"requests": both, "limits": both}


def _manual(chart: Path, values: str, settings: Settings) -> str:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    options = ChartOptions(values_files=(given,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.proven and not outcome.changes
    return outcome.manual


def test_nics_aligned_to_the_gpus_are_refused_at_the_key_line_with_why(tmp_path: Path) -> None:
    """--align-nics ties each GPU to its NICs under one PCIe root: the map's devices side by side would not."""
    chart = chart_with(tmp_path, "triton-lws", {"templates/server.yaml": SERVER, "values.yaml": VALUES})
    manual = _manual(chart, GPU_EFA, Settings(kube_version="1.34", align_nics="required"))
    key = SERVER.splitlines().index("                {{ $k }}: {{ $v }}") + 1
    assert f"templates/server.yaml:{key}: pattern E" in manual, manual
    assert "ties a GPU to its NICs under one PCIe root (--align-nics)" in manual, manual


RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}
spec:
  headGroupSpec:
    rayStartParams:
      dashboard-host: 0.0.0.0
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray
            resources:
              limits:
              {{- range $k, $v := .Values.ray.resources.limits }}
                {{ $k }}: {{ $v }}
              {{- end }}
  workerGroupSpecs:
    - groupName: serving
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray
              resources:
                limits:
                {{- range $k, $v := .Values.resources.limits }}
                  {{ $k }}: {{ $v }}
                {{- end }}
          {{- if .Values.tolerations }}
          tolerations:
          {{- range $v := .Values.tolerations }}
            - key: {{ $v.key }}
              operator: {{ $v.operator }}
          {{- end }}
          {{- end }}
          nodeSelector:
            node.kubernetes.io/instance-type: {{ .Values.resources.node_type }}
"""
RAY_VALUES = (
    "ray:\n  resources:\n    limits: {cpu: 2}\ntolerations: []\nresources:\n  node_type: g6.48xlarge\n  limits: {}\n"
)
WORKER_GPU = "resources:\n  node_type: g6.48xlarge\n  limits: {nvidia.com/gpu: 8}\n"


@pytest.fixture(scope="module")
def ray_chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mapray")
    made = chart_with(root, "rayserve", {"templates/ray.yaml": RAY, "values.yaml": RAY_VALUES})
    given = root / "gpu.yaml"
    given.write_text(WORKER_GPU)
    fix_chart(made, values=(given,))  # was: manual, pattern E at the head's key line
    return made


def _ray_render(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The head group, the worker group, and the ResourceClaimTemplates' claim specs by name."""
    given = chart.parent / "given.yaml"
    given.write_text(values)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    ray = next(d["spec"] for d in docs if d["kind"] == "RayCluster")
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    return ray["headGroupSpec"], ray["workerGroupSpecs"][0], templates


def test_a_ray_worker_groups_gpu_from_its_map_is_claimed_with_kuberays_num_gpus(ray_chart: Path) -> None:
    """rayserve: the worker group's map holds the GPU, the head's a CPU count; the worker group gets num-gpus, which
    KubeRay read from the limits the claim replaces, and the pod tolerates the GPU though the values list is empty
    (its `if .Values.tolerations` renders the list for it)."""
    head, worker, templates = _ray_render(ray_chart, "dra: {enabled: true}\n" + WORKER_GPU)
    assert worker["rayStartParams"] == {"num-gpus": "8"}
    pod = worker["template"]["spec"]
    assert {k: v for k, v in pod["containers"][0]["resources"].items() if v} == {"claims": [{"name": "gpu"}]}
    (claim,) = pod["resourceClaims"]
    assert _asked(templates[claim["resourceClaimTemplateName"]]) == [("gpu", "gpu.nvidia.com", 8)]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert head["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert "resourceClaims" not in head["template"]["spec"]
    head, worker, templates = _ray_render(ray_chart, "dra: {enabled: false}\n" + WORKER_GPU)
    assert worker["rayStartParams"] == {} and not templates
    assert worker["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}


def test_a_ray_head_with_a_gpu_of_its_own_map_gets_its_own_claim_and_num_gpus(ray_chart: Path) -> None:
    both = WORKER_GPU + "ray:\n  resources:\n    limits: {cpu: 2, nvidia.com/gpu: 1}\n"
    head, worker, templates = _ray_render(ray_chart, "dra: {enabled: true}\n" + both)
    assert head["rayStartParams"] == {"dashboard-host": "0.0.0.0", "num-gpus": "1"}
    assert worker["rayStartParams"] == {"num-gpus": "8"}
    asked = {
        group: _asked(templates[spec["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]])
        for group, spec in (("head", head), ("worker", worker))
    }
    assert asked == {"head": [("gpu", "gpu.nvidia.com", 1)], "worker": [("gpu", "gpu.nvidia.com", 8)]}
    assert head["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": 2}


def test_a_ray_group_it_does_not_take_is_refused_at_the_line_of_the_map_with_num_gpus(tmp_path: Path) -> None:
    """The worker's tolerations written with toYaml (no `range` over a values list): refused, at the worker map's
    key line (was: the head's, saying that these values put the GPU in the head's map), with num-gpus in the steps."""
    written = RAY.replace(
        "          {{- if .Values.tolerations }}\n          tolerations:\n"
        "          {{- range $v := .Values.tolerations }}\n"
        "            - key: {{ $v.key }}\n              operator: {{ $v.operator }}\n          {{- end }}\n"
        "          {{- end }}\n",
        "          tolerations: {{- toYaml .Values.tolerations | nindent 12 }}\n",
    )
    assert written != RAY
    chart = chart_with(tmp_path, "rayserve", {"templates/ray.yaml": written, "values.yaml": RAY_VALUES})
    manual = _manual(chart, WORKER_GPU, Settings(kube_version="1.34"))
    lines = written.splitlines()
    key = lines.index("                  {{ $k }}: {{ $v }}") + 1
    params = lines.index("      rayStartParams: {}") + 1
    assert f"templates/ray.yaml:{key}: pattern E" in manual, manual
    assert "the map `.Values.resources.limits`" in manual, manual
    assert f"rayStartParams (line {params}) gets num-gpus" in manual, manual
