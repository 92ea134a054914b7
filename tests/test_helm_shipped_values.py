"""Every rewrite's proof renders the values files the chart ships (`values-nvidia.yaml`, `ci/*.yaml`), not only the
pass-through's: a pattern-E chart (exalsius' jupyter shape: the resource name and count from values, an AMD file and
an NVIDIA file shipped, each with a node label, the NVIDIA one keyed twice) fixed with the AMD file knew only
amd.com/gpu in its claim, was reported proven, and with the shipped NVIDIA file and the switch on failed to render.
Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, dra_render, fix_chart

NOTEBOOK = """\
{{- $per := .Values.gpu | default dict }}
{{- $name := $per.resourceName | default "" }}
{{- $count := $per.count | default 0 }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: notebook}
  template:
    metadata:
      labels: {app: notebook}
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: notebook
          image: notebook:1
          resources:
            limits:
              cpu: "2"
              {{- if and $name (gt (int $count) 0) }}
              {{ $name }}: {{ $count }}
              {{- end }}
"""
# the same label a second time, in a node affinity expression (jellyfin's values-example.yaml)
AFFINITY = """\
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-L40]}
"""
SHIPPED = {
    "values-amd.yaml": "gpu:\n  resourceName: amd.com/gpu\n  count: 1\n",
    "values-nvidia.yaml": (
        "gpu:\n  resourceName: nvidia.com/gpu\n  count: 1\nnodeSelector:\n  nvidia.com/gpu.product: NVIDIA-L40\n"
        + AFFINITY
    ),
}


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("shipped")
    chart = chart_with(root, "notebook", {"templates/notebook.yaml": NOTEBOOK, "values.yaml": "gpu: {}\n", **SHIPPED})
    return chart, fix_chart(chart, values=(chart / "values-amd.yaml",))


def test_the_proof_renders_the_shipped_values_file_the_user_did_not_name(notebook: tuple[Path, Any]) -> None:
    chart, outcome = notebook
    assert f"-f {chart / 'values-nvidia.yaml'}" in outcome.checked  # was: only the AMD file, defaults and counts


def test_the_shipped_nvidia_file_renders_its_claim_with_the_switch_on(notebook: tuple[Path, Any]) -> None:
    chart, _ = notebook
    docs, counts, pods = dra_render(chart, chart / "values-nvidia.yaml")  # was: fail, the claim knew only amd.com/gpu
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    assert list(counts.values()) == [1]
    pod = pods["release-name"]
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "2"}
    assert pod["resourceClaims"]
    # the node label comes from the shipped file: it stays on the pod, and the fix says so
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40"}
    assert pod["affinity"]["nodeAffinity"]  # was (set twice): taken for a label the template writes, manual


def test_a_node_label_from_a_shipped_file_is_reported_there(notebook: tuple[Path, Any]) -> None:
    chart, outcome = notebook
    notes = [f for f in outcome.findings if f.rule == "chart-label-from-values"]
    assert notes and "nvidia.com/gpu.product" in notes[0].message
    assert notes[0].file == f"{chart}/values-nvidia.yaml" and notes[0].line > 0  # was: values.yaml, line 0


WORKLOAD = """\
{{- $sts := (.Values.statefulSet | default dict).enabled }}
{{- if {test} $sts }}
apiVersion: apps/v1
kind: {kind}
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
{{- end }}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("shipped-sts")
    files = {
        "templates/deployment.yaml": WORKLOAD.replace("{test}", "not").replace("{kind}", "Deployment"),
        "templates/statefulset.yaml": WORKLOAD.replace("{test}", "").replace("{kind}", "StatefulSet"),
        "values.yaml": "gpus: 1\n",
        "ci/statefulset-values.yaml": "statefulSet:\n  enabled: true\ngpus: 2  # nvidia.com/gpu per pod\n",
    }
    chart = chart_with(root, "server", files)
    return chart, fix_chart(chart)


def test_a_workload_only_a_shipped_file_renders_is_rewritten_too(server: tuple[Path, Any]) -> None:
    chart, outcome = server
    assert f"-f {chart / 'ci' / 'statefulset-values.yaml'}" in outcome.checked
    docs, counts, _ = dra_render(chart, chart / "ci" / "statefulset-values.yaml")
    sts = next(d for d in docs if d["kind"] == "StatefulSet")["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in sts["containers"][0]["resources"].get("limits", {})  # was: left on the plugin
    assert sts["resourceClaims"] and list(counts.values()) == [2]
