"""Device keys a `range` over a values map writes beside the chart's own device key (kubeflow/arena's pytorchjob and
distributed-serving: `nvidia.com/gpu: {{ .Values.gpus }}` under `if`, then `range $key, $value := .Values.devices`
writing `{{ $key }}: {{ $value }}`, for `arena submit --device amd.com/gpu=1`). Was: manual work, pattern E, 'the
resource name `$key` is each key of the map `.Values.devices`'. Now the pattern-A rewrite takes the map's devices at
render time, proven: with the switch on, the pod's one claim asks for the chart's own device and each migrated
device of the map, named as the migration names them, the map's key leaves the container and the pod tolerates its
taint; with the switch off the chart renders as before. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: busybox
          resources:
            limits:
              {{{{- if gt (int .Values.{name}Gpus) 0 }}}}
              nvidia.com/gpu: {{{{ .Values.{name}Gpus }}}}
              {{{{- end }}}}
              {{{{- range $key, $value := .Values.devices }}}}
              {{{{ $key }}}}: {{{{ $value | quote }}}}
              {{{{- end }}}}
              memory: 1Gi
"""
FILES = {
    "templates/pods.yaml": POD.format(name="leader") + "---\n" + POD.format(name="worker"),
    "values.yaml": "leaderGpus: 1\nworkerGpus: 1\ndevices: {}\n",
}
AMD = "leaderGpus: 0\nworkerGpus: 0\ndevices:\n  amd.com/gpu: 1\n"


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("keyed")
    made = chart_with(root, "serving", FILES)
    amd = root / "amd.yaml"
    amd.write_text(AMD)
    outcome = fix_chart(made, values=(amd,))  # was: manual, 'the resource name `$key` is each key of the map'
    assert any("leaderGpus changed to" in c for c in outcome.checked), outcome.checked
    return made


def _render(chart: Path, values: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Each Deployment's pod spec by name, and the ResourceClaimTemplates' claim specs."""
    given = chart.parent / "given.yaml"
    given.write_text(values)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    return pods, [d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"]


def test_a_device_of_the_map_is_claimed_with_the_switch_on(chart: Path) -> None:
    pods, claims = _render(chart, "dra: {enabled: true}\n" + AMD)
    for pod in pods.values():
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "limits": {"memory": "1Gi"}}, pod
        assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
        assert [t["key"] for t in pod["tolerations"]] == ["amd.com/gpu"]
    assert len(claims) == 2
    request = claims[0]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in request] == [
        ("gpu", "gpu.amd.com", 1)
    ], request
    assert request[0]["exactly"]["selectors"], request  # the migration's selectors for AMD GPUs


def test_the_charts_own_device_and_one_of_the_map_share_the_pods_claim(chart: Path) -> None:
    """Both device kinds in one claim, as the migration gives a pod asking for both: the chart's own request first,
    then the map's, named `gpu-2` beside it; each device's toleration."""
    pods, claims = _render(chart, "dra: {enabled: true}\n" + AMD.replace("leaderGpus: 0", "leaderGpus: 2"))
    leader = pods["leader"]
    assert leader["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert [t["key"] for t in leader["tolerations"]] == ["nvidia.com/gpu", "amd.com/gpu"]
    requests = [r for c in claims for r in c["devices"]["requests"]]
    named = [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]
    assert named == [("gpu", "gpu.nvidia.com", 2), ("gpu-2", "gpu.amd.com", 1), ("gpu", "gpu.amd.com", 1)], named


def test_the_map_renders_as_before_with_the_switch_off_and_keeps_other_resources(chart: Path) -> None:
    pods, claims = _render(chart, "dra: {enabled: false}\n" + AMD)
    assert not claims
    assert pods["leader"]["containers"][0]["resources"] == {"limits": {"amd.com/gpu": "1", "memory": "1Gi"}}
    pods, claims = _render(chart, "dra: {enabled: true}\nleaderGpus: 0\nworkerGpus: 0\ndevices: {rdma/hca: 1}\n")
    assert not claims and "resourceClaims" not in pods["leader"], pods  # a resource the migration leaves alone
    assert pods["leader"]["containers"][0]["resources"] == {"limits": {"rdma/hca": "1", "memory": "1Gi"}}


def test_a_device_of_the_map_the_claim_does_not_know_fails_with_the_way_back(chart: Path) -> None:
    with pytest.raises(HelmError, match=r"devices holds a device the chart's DRA claim does not know"):
        _render(chart, "dra: {enabled: true}\nleaderGpus: 0\nworkerGpus: 0\ndevices: {google.com/tpu: 4}\n")


RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.9.0
          resources:
            limits:
              {{- if gt (int .Values.gpus) 0 }}
              nvidia.com/gpu: {{ .Values.gpus }}
              {{- end }}
              {{- range $key, $value := .Values.devices }}
              {{ $key }}: {{ $value }}
              {{- end }}
"""


def test_a_ray_group_with_a_device_of_the_map_keeps_the_by_hand_message(tmp_path: Path) -> None:
    """KubeRay's num-gpus, which the migration sets from the Ray container's devices, is not written for the map's:
    fix says what to change by hand, as before (was, with the map taken: a proof failure on num-gpus)."""
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    made = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY, "values.yaml": "gpus: 1\ndevices: {}\n"})
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpus: 0\ndevices:\n  amd.com/gpu: 1\n")
    options = ChartOptions(values_files=(amd,), kube_version="1.34")
    outcome = run_chart(made, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "By hand: take amd.com/gpu out of `.Values.devices`" in outcome.manual, outcome.report()
