"""A values map that is a container's limits and requests both (`limits:` then `toYaml .Values.resources`, `requests:`
then the same map: `resources: {nvidia.com/gpu: "1"}` in values.yaml), seen in a real chart for a vLLM Deployment and
a LeaderWorkerSet: the pass-through rewrite with the container's claims named after the pod's `resourceClaims`.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import assert_second_fix_quiet, chart_with, fix_chart, with_original

from dramigrate.helm.render import RenderOptions, render_chart

# the map is each section of the container's resources, under `if` of the map (a Deployment)
SINGLE = """\
{{ if .Values.single.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: vllm}
  template:
    metadata:
      labels: {app: vllm}
    spec:
      containers:
      - name: vllm
        image: vllm:1
        {{- if .Values.resources }}
        resources:
          limits:
            {{- toYaml .Values.resources | nindent 12 }}
          requests:
            {{- toYaml .Values.resources | nindent 12 }}
        {{- end }}
      - name: ui
        image: ui:1
{{- end }}
"""
# and without the `if`, in both pods of a LeaderWorkerSet
POD = """\
      spec:
        containers:
        - name: vllm
          image: vllm:1
          resources:
            limits:
              {{- toYaml .Values.resources | nindent 14 }}
            requests:
              {{- toYaml .Values.resources | nindent 14 }}
"""
DISTRIBUTED = f"""\
{{{{ if .Values.distributed.enabled }}}}
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: {{{{ .Release.Name }}}}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
{POD}    workerTemplate:
{POD}{{{{- end }}}}
"""
VALUES = 'single:\n  enabled: false\ndistributed:\n  enabled: false\n\nresources:\n  nvidia.com/gpu: "1"\n\ncli: ""\n'


def _render(chart: Path, *files: Path) -> list[dict]:
    given = tuple(x for f in files for x in with_original(f))  # a DRA overlay after its file
    options = RenderOptions(values_files=given, kube_version="1.34")
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def _pods(docs: list[dict]) -> list[dict]:
    out = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    lws = [d["spec"]["leaderWorkerTemplate"] for d in docs if d["kind"] == "LeaderWorkerSet"]
    return out + [t[k]["spec"] for t in lws for k in ("leaderTemplate", "workerTemplate")]


def test_a_map_passed_as_limits_and_requests_gets_the_pass_through(tmp_path: Path) -> None:
    """The Deployment's container takes the map as its limits and its requests (was: manual, "does not take its
    resources whole from one values map"): the DRA values file drops the device key from the map and sets the pod's
    `resourceClaims`, whose names the container claims; the only key gone, the `if` on the map still renders them."""
    chart = chart_with(tmp_path, "llm", {"values.yaml": VALUES, "templates/deployment.yaml": SINGLE})
    gpu = tmp_path / "qwen.yaml"
    gpu.write_text('single:\n  enabled: true\nresources:\n  # one card\n  nvidia.com/gpu: "1"\n')
    fix_chart(chart, values=(gpu,))
    assert _render(chart, gpu) == _render(
        chart_with(tmp_path / "old", "llm", {"values.yaml": VALUES, "templates/deployment.yaml": SINGLE}), gpu
    )
    (pod,) = _pods(_render(chart, tmp_path / "qwen-dra.yaml"))
    vllm, ui = pod["containers"]
    assert vllm["resources"]["claims"] == [{"name": "gpu"}], vllm
    assert not vllm["resources"].get("limits") and "resources" not in ui, pod
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"], pod
    # was: a second fix passed the claims by name in again under `resources:`, "`claims:` is written twice", exit 1
    assert_second_fix_quiet(chart, "-f", str(gpu))


def test_both_pods_of_a_leader_worker_set_claim_the_devices_the_map_asked_for(tmp_path: Path) -> None:
    """The map with a device and another resource, in a LeaderWorkerSet's leader and worker: each pod gets its claim
    and keeps the other resource as limit and request."""
    files = {"values.yaml": VALUES, "templates/deployment.yaml": SINGLE, "templates/lws.yaml": DISTRIBUTED}
    chart = chart_with(tmp_path, "llm", files)
    gpu = tmp_path / "deepseek.yaml"
    gpu.write_text('distributed:\n  enabled: true\nresources:\n  nvidia.com/gpu: "8"\n  memory: 64Gi\n')
    fix_chart(chart, values=(gpu,))
    docs = _render(chart, tmp_path / "deepseek-dra.yaml")
    pods = _pods(docs)
    assert len(pods) == 2
    for pod in pods:
        (vllm,) = pod["containers"]
        assert vllm["resources"] == {
            "claims": [{"name": "gpu"}],
            "limits": {"memory": "64Gi"},
            "requests": {"memory": "64Gi"},
        }
        assert pod["resourceClaims"][0]["name"] == "gpu", pod
    counts = [
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    ]
    assert counts == [8], counts
