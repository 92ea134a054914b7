"""A user's own tolerations with the DRA switch on. The device plugin's admission gave every pod asking for a GPU the
`nvidia.com/gpu:NoSchedule` toleration, whatever else the pod tolerated; a DRA pod must carry it itself. Charts default
to `tolerations: []`, or ship a list that tolerates the GPU taint already, so a rewrite that loses the toleration once
the user sets their own list (a dedicated node pool) passed every value set the proof tried, and the pods stayed
Pending on tainted GPU nodes. The proof now sets every values tolerations list to one of another taint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-worker
spec:
  selector:
    matchLabels:
      app: worker
  template:
    metadata:
      labels:
        app: worker
    spec:
%s
      containers:
        - name: worker
          image: "worker:1.0"
          resources:
%s
"""
GPU_TOLERATED = """\
tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
"""
SPOT = "tolerations:\n  - key: spot\n    operator: Exists\n"
WITH_LIST = (
    "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}"
)


def _under(key: str, text: str) -> str:
    """The values text nested under `key`."""
    return f"{key}:\n" + "".join(f"  {line}\n" for line in text.splitlines())


def _pod(chart: Path, values: str, *files: Path) -> dict[str, Any]:
    """The Deployment's pod spec rendered with the DRA switch on, `files` and then the values text."""
    mine = chart.parent / "mine.yaml"
    mine.write_text(values)
    options = RenderOptions(values_files=(*files, mine), set_values=("dra.enabled=true",))
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, options)]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    return pod


def test_a_values_list_written_with_indent_gets_the_gpu_toleration_beside_the_users_own(tmp_path: Path) -> None:
    """civiceye's worker: `tolerations:` then `{{ toYaml .Values.gpu.tolerations | indent 8 }}`, the defaults
    tolerating the GPU taint: the rewrite wrote no toleration, and a user's list of their own lost it."""
    spec = "      tolerations:\n{{ toYaml .Values.gpu.tolerations | indent 8 }}"
    limits = "            limits:\n              nvidia.com/gpu: {{ .Values.gpu.limit }}"
    values = _under("gpu", "limit: 1\n" + GPU_TOLERATED)
    chart = chart_with(tmp_path, "worker", {"values.yaml": values, "templates/worker.yaml": POD % (spec, limits)})

    fix_chart(chart)

    pod = _pod(chart, _under("gpu", SPOT))
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
    assert [t["key"] for t in pod["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "{}")["tolerations"]] == ["nvidia.com/gpu"]


HELPERS = """\
{{- define "worker.resources" -}}
{{- if .Values.gpu.enabled }}
limits:
  nvidia.com/gpu: 1
{{- end }}
{{- end }}
"""


def test_a_helper_rewrite_read_from_values_that_tolerate_the_taint_keeps_it_for_other_values(tmp_path: Path) -> None:
    """jellyfin's values-example.yaml turns the GPU on and tolerates its taint: the helper rewrite, read from it, wrote
    no toleration, so a user's own tolerations list (with the switch on) gave a pod without it."""
    spec = WITH_LIST
    resources = '            {{- include "worker.resources" . | nindent 12 }}'
    files = {
        "values.yaml": "gpu:\n  enabled: false\ntolerations: []\n",
        "templates/_helpers.tpl": HELPERS,
        "templates/worker.yaml": POD % (spec, resources),
    }
    chart = chart_with(tmp_path, "worker", files)
    gpu_nodes = tmp_path / "gpu-nodes.yaml"
    gpu_nodes.write_text("gpu:\n  enabled: true\n" + GPU_TOLERATED)

    fix_chart(chart, values=(gpu_nodes,))

    pod = _pod(chart, "gpu:\n  enabled: true\n" + SPOT)
    assert pod["resourceClaims"] and "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    assert [t["key"] for t in pod["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, gpu_nodes.read_text())["tolerations"]] == ["nvidia.com/gpu"]


def test_a_pod_writing_its_tolerations_twice_gets_the_toleration_in_the_later_one(tmp_path: Path) -> None:
    """comfyui writes the `with .Values.tolerations` block twice in one pod; Helm keeps the second. The DRA toleration
    went into the first, so with a user's list the pod lost it: fix was proven and wrote that chart; then the proof
    refused it. The DRA toleration now goes into the later block (tests/test_helm_tolerations_written_twice.py)."""
    block = WITH_LIST
    limits = "            limits:\n              nvidia.com/gpu: {{ .Values.gpus }}"
    twice = (POD % (block, limits)) + block + "\n"
    chart = chart_with(tmp_path, "twice", {"values.yaml": "gpus: 1\ntolerations: []\n", "templates/app.yaml": twice})

    fix_chart(chart)

    assert [t["key"] for t in _pod(chart, SPOT)["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "{}")["tolerations"]] == ["nvidia.com/gpu"]


def test_a_tolerations_list_no_template_reads_stays_unread_with_the_dra_values_off(tmp_path: Path) -> None:
    """hpe's vulnerability-analysis declares `tolerations: []` in values.yaml and no template reads it; the
    pass-through rendered that list for the DRA toleration, so a user's list, ignored before, renders with the DRA
    values off too (not byte-identical). The toleration goes under a key of its own."""
    spec = "      {{- /* no tolerations */}}"
    resources = "            {{- toYaml .Values.resources | nindent 12 }}"
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\ntolerations: []\n"
    files = {"values.yaml": values, "templates/worker.yaml": POD % (spec, resources)}
    original = chart_with(tmp_path / "original", "worker", files, version="0.1.1")
    chart = chart_with(tmp_path, "worker", files)
    mine = tmp_path / "spot.yaml"
    mine.write_text(SPOT)

    fix_chart(chart)

    def render(root: Path) -> str:
        return "".join(m.text for m in render_chart(root, RenderOptions(values_files=(mine,))))

    assert render(chart) == render(original)
    pod = _pod(chart, SPOT, chart / "values-dra.yaml")
    assert pod["resourceClaims"] and [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu"]


POD_HELPER = """\
{{- define "worker.podTemplate" -}}
metadata:
  labels:
    app: worker
spec:
  {{- if .Values.gpu.enabled }}
  tolerations:
    {{- toYaml .Values.gpu.tolerations | nindent 4 }}
  {{- end }}
  containers:
    - name: worker
      image: "worker:1.0"
      {{- if .Values.gpu.enabled }}
      resources:
        limits:
          nvidia.com/gpu: {{ .Values.gpu.count }}
      {{- end }}
{{- end }}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-worker
spec:
  selector:
    matchLabels:
      app: worker
  template:
    {{- include "worker.podTemplate" . | nindent 4 }}
"""


def test_a_pod_helper_writing_a_bare_values_list_keeps_the_gpu_toleration_for_other_lists(tmp_path: Path) -> None:
    """rykelley's pod-template helper writes `tolerations:` then `toYaml .Values.gpu.tolerations`, the defaults
    tolerating the GPU taint: the helper rewrite wrote no toleration, so a user's own list lost it; an empty list
    (`[]`) cannot stand beside the added entry."""
    values = _under("gpu", "enabled: true\ncount: 1\n" + GPU_TOLERATED)
    files = {"values.yaml": values, "templates/_pod.tpl": POD_HELPER, "templates/worker.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "worker", files)

    fix_chart(chart)

    pod = _pod(chart, _under("gpu", SPOT))
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
    assert [t["key"] for t in pod["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "gpu:\n  tolerations: []\n")["tolerations"]] == ["nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "{}")["tolerations"]] == ["nvidia.com/gpu"]


def test_a_literal_list_with_the_values_list_appended_gets_the_gpu_toleration_for_other_lists(tmp_path: Path) -> None:
    """porter's hf-llm-models writes its own `removable` toleration, then appends `.Values.tolerations` (which its
    defaults set to the GPU taint's): the rewrite took the taint for the chart's own and wrote no toleration."""
    spec = (
        '      tolerations:\n        - key: "removable"\n          operator: "Exists"\n'
        "      {{- if .Values.tolerations }}\n        {{- toYaml .Values.tolerations | nindent 8 }}\n      {{- end }}"
    )
    limits = "            limits:\n              nvidia.com/gpu: {{ .Values.gpus }}"
    values = "gpus: 1\n" + GPU_TOLERATED
    chart = chart_with(tmp_path, "worker", {"values.yaml": values, "templates/worker.yaml": POD % (spec, limits)})

    fix_chart(chart)

    assert [t["key"] for t in _pod(chart, SPOT)["tolerations"]] == ["removable", "spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "{}")["tolerations"]] == ["removable", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "tolerations: []\n")["tolerations"]] == ["removable", "nvidia.com/gpu"]


def test_a_looked_up_name_tolerated_by_the_values_gets_its_toleration_beside_a_users_list(tmp_path: Path) -> None:
    """Pattern E (`{{ .Values.accelerator.resourceName }}: N`) whose values tolerate the named taint themselves: the
    rewrite wrote no toleration, so a user's own list lost it."""
    spec = (
        "      {{- with .Values.accelerator.tolerations }}\n      tolerations:\n"
        "        {{- toYaml . | nindent 8 }}\n      {{- end }}"
    )
    limits = "            limits:\n              {{ .Values.accelerator.resourceName }}: 1"
    values = _under("accelerator", "resourceName: nvidia.com/gpu\n" + GPU_TOLERATED)
    chart = chart_with(tmp_path, "worker", {"values.yaml": values, "templates/worker.yaml": POD % (spec, limits)})

    fix_chart(chart)

    assert [t["key"] for t in _pod(chart, _under("accelerator", SPOT))["tolerations"]] == ["spot", "nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, "{}")["tolerations"]] == ["nvidia.com/gpu"]
