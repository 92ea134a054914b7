"""Pattern A in a template of several pods, each asking for the device under `if` its own count (a RayService's head
and worker groups, each with its own `gpuCount`), where the value sets give one of them a claim: each pod gets its own
guarded DRA branch and claim template, KubeRay's `num-gpus` in its group, and the proof renders the other pod's count
set too. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams:
      dashboard-host: "0.0.0.0"
    template:
      spec:
        containers:
          - name: head
            image: ray:1
            resources:
              limits:
                cpu: "1"
                {{- if .Values.head.gpuCount }}
                nvidia.com/gpu: "{{ .Values.head.gpuCount }}"
                {{- end }}
  workerGroupSpecs:
    - groupName: workers
      replicas: 1
      rayStartParams:
        dashboard-host: "0.0.0.0"
      template:
        spec:
          containers:
            - name: worker
              image: ray:1
              resources:
                limits:
                  cpu: "1"
                  {{- if .Values.worker.gpuCount }}
                  nvidia.com/gpu: "{{ .Values.worker.gpuCount }}"
                  {{- end }}
"""


def _render(chart: Path, values: str) -> tuple[dict[str, Any], list[int]]:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(file,)))
    docs = [d for m in rendered for d in yaml.safe_load_all(m.text) if d]
    (ray,) = [d for d in docs if d["kind"] == "RayCluster"]
    counts = [
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    ]
    return ray["spec"], counts


def test_head_and_worker_under_their_own_counts_each_get_a_claim(tmp_path: Path) -> None:
    """Was manual work: "the device keys sit under different conditions" (the head's `gpuCount` and the worker's)."""
    values = 'head:\n  gpuCount: ""\nworker:\n  gpuCount: "2"\n'
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY, "values.yaml": values})
    outcome = fix_chart(chart)
    assert any(c.startswith('head.gpuCount changed to "1"') for c in outcome.checked)  # the head's branch, proven
    spec, counts = _render(chart, 'dra: {enabled: true}\nhead: {gpuCount: "4"}\nworker: {gpuCount: "2"}\n')
    head, worker = spec["headGroupSpec"], spec["workerGroupSpecs"][0]
    assert sorted(counts) == [2, 4]
    assert head["rayStartParams"]["num-gpus"] == "4" and worker["rayStartParams"]["num-gpus"] == "2"
    for group in (head, worker):
        pod = group["template"]["spec"]
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "limits": {"cpu": "1"}}
        assert len(pod["resourceClaims"]) == 1
    spec, counts = _render(chart, 'dra: {enabled: true}\nhead: {gpuCount: "3"}\nworker: {gpuCount: ""}\n')
    assert counts == [3] and "resourceClaims" not in spec["workerGroupSpecs"][0]["template"]["spec"]
    assert "num-gpus" not in spec["workerGroupSpecs"][0]["rayStartParams"]


RAY_EMPTY_PARAMS = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: head
            image: ray:1
            resources:
              limits:
                nvidia.com/gpu: {{ .Values.head.gpus }}
  workerGroupSpecs:
    - groupName: workers
      replicas: 1
      rayStartParams:
        block: "true"
      template:
        spec:
          containers:
            - name: worker
              image: ray:1
              resources:
                limits:
                  nvidia.com/gpu: {{ .Values.worker.gpus }}
"""


def test_ray_groups_get_num_gpus_in_the_dra_branch(tmp_path: Path) -> None:
    """KubeRay reads a group's GPUs from the Ray container's limits, which no longer name the GPU: the migration sets
    `rayStartParams.num-gpus`, and so does the DRA branch (into `rayStartParams: {}` as a map). Was manual work:
    "rayStartParams.num-gpus: expected "1", the rewritten chart has none"."""
    values = "head:\n  gpus: 1\nworker:\n  gpus: 2\n"
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY_EMPTY_PARAMS, "values.yaml": values})
    fix_chart(chart)
    spec, counts = _render(chart, "dra: {enabled: true}\nhead: {gpus: 4}\n")
    assert sorted(counts) == [2, 4]
    assert spec["headGroupSpec"]["rayStartParams"] == {"num-gpus": "4"}
    assert spec["workerGroupSpecs"][0]["rayStartParams"] == {"block": "true", "num-gpus": "2"}
    spec, _ = _render(chart, "dra: {enabled: false}\n")
    assert spec["headGroupSpec"]["rayStartParams"] == {}


def test_a_pod_whose_count_is_zero_gets_its_own_claim_once_it_is_set(tmp_path: Path) -> None:
    """The head's count 0 in the values: the migration gives only the worker a claim. Was manual work ("2 containers
    of one pod ask for nvidia.com/gpu, the migration's claim has 1 request(s)", of two pods); now the head gets the
    worker's claim with its own count, proven with that count changed to 1."""
    values = "head:\n  gpus: 0\nworker:\n  gpus: 2\n"
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY_EMPTY_PARAMS, "values.yaml": values})
    outcome = fix_chart(chart)
    assert "head.gpus changed to 1" in outcome.checked
    spec, counts = _render(chart, "dra: {enabled: true}\nhead: {gpus: 3}\n")
    assert sorted(counts) == [2, 3] and spec["headGroupSpec"]["rayStartParams"] == {"num-gpus": "3"}
    spec, counts = _render(chart, "dra: {enabled: true}\n")
    assert counts == [2] and "resourceClaims" not in spec["headGroupSpec"]["template"]["spec"]
