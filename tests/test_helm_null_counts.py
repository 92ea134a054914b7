"""A device count set to null (`--set gpus=null`, `gpus: ~` in a values file): the original chart renders the key with
no count (`nvidia.com/gpu:`), which asks for no device. With the DRA switch on, the rewritten chart rendered the
toleration with no claim (patterns A and D): every guard of the DRA branch now agrees that an unset count asks for
nothing (no claim, no pod `resourceClaims`, no ResourceClaimTemplate, no toleration), while a count of 0 keeps the
toleration the migration adds for `nvidia.com/gpu: 0`. The proof renders each count set to null. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

POD = """\
      containers:
        - name: server
          image: server:1
          resources:
            limits:
{keys}
"""
GPU = "              nvidia.com/gpu: {{ .Values.gpus }}"
NIC = "              vpc.amazonaws.com/efa: {{ .Values.nics }}"
HELPERS = """\
{{- define "server.resources" -}}
limits:
  memory: 1Gi
  nvidia.com/gpu: {{ .Values.gpus }}
{{- end }}
"""
HELPER_POD = """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- include "server.resources" . | nindent 12 }}
"""


def _on(tmp_path: Path, values: str) -> Path:
    path = tmp_path / "on.yaml"
    path.write_text(values + "dra: {enabled: true}\n")
    return path


def _tolerated(pod: dict) -> list[str]:
    return [t["key"] for t in pod.get("tolerations") or []]


def test_a_null_count_renders_no_toleration_and_no_claim(tmp_path: Path) -> None:
    files = {"templates/deployment.yaml": deployment("server", POD.format(keys=GPU)), "values.yaml": "gpus: 1\n"}
    chart = chart_with(tmp_path, "server", files)
    outcome = fix_chart(chart)
    assert "gpus set to null" in outcome.checked  # the proof renders the count unset
    for unset in ("gpus: null\n", "gpus: ~\n", 'gpus: ""\n'):
        out, counts, pods = dra_render(chart, _on(tmp_path, unset))
        assert not counts and "resourceClaims" not in pods["server"], unset
        assert _tolerated(pods["server"]) == [], unset  # was: the GPU toleration with no claim
        assert "nvidia.com/gpu" not in str(pods["server"]["containers"])
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: 0\n"))
    assert not counts and _tolerated(pods["server"]) == ["nvidia.com/gpu"]  # `nvidia.com/gpu: 0`: the migration's
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: 2\n"))
    assert list(counts.values()) == [2] and _tolerated(pods["server"]) == ["nvidia.com/gpu"]


def test_a_null_count_beside_another_device_drops_only_its_own_toleration(tmp_path: Path) -> None:
    """A GPU and an EFA NIC in one container, each its own count: the GPU unset leaves the NIC's claim and
    toleration, and no GPU toleration (the two tolerations used to share one guard)."""
    pod = deployment("server", POD.format(keys=f"{GPU}\n{NIC}"))
    chart = chart_with(tmp_path, "server", {"templates/deployment.yaml": pod, "values.yaml": "gpus: 1\nnics: 1\n"})
    outcome = fix_chart(chart)
    assert {"gpus set to null", "nics set to null"} <= set(outcome.checked)
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: null\nnics: 1\n"))
    assert list(counts.values()) == [1] and _tolerated(pods["server"]) == ["vpc.amazonaws.com/efa"]
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: 0\nnics: 1\n"))
    assert _tolerated(pods["server"]) == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]


def test_d_helper_null_count_renders_no_toleration(tmp_path: Path) -> None:
    """Pattern D: an `include` prints a null count `<no value>` (Helm removes it from the final output only), which
    the helper's state read as a count of 0: the toleration without a claim."""
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/deployment.yaml": deployment("server", HELPER_POD),
        "values.yaml": "gpus: 1\n",
    }
    chart = chart_with(tmp_path, "server", files)
    outcome = fix_chart(chart)
    assert "gpus set to null" in outcome.checked
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: ~\n"))
    assert not counts and "resourceClaims" not in pods["server"] and _tolerated(pods["server"]) == []
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: 0\n"))
    assert not counts and _tolerated(pods["server"]) == ["nvidia.com/gpu"]


INCLUDED = '              nvidia.com/gpu: {{ include "server.gpus" . }}'
SET_ENTRY = """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- $own := deepCopy .Values.own }}
            {{- $_ := set $own.limits .Values.gpu.resourceName .Values.gpu.count }}
            {{- toYaml $own | nindent 12 }}
      tolerations:
        - key: dedicated
          operator: Exists
"""


def test_a_count_from_a_helper_unset_renders_no_toleration(tmp_path: Path) -> None:
    """`nvidia.com/gpu: {{ include "server.gpus" . }}`: the helper prints `<no value>` for an unset count."""
    files = {
        "templates/_helpers.tpl": '{{- define "server.gpus" -}}{{ .Values.gpus }}{{- end }}\n',
        "templates/deployment.yaml": deployment("server", POD.format(keys=INCLUDED)),
        "values.yaml": "gpus: 1\n",
    }
    chart = chart_with(tmp_path, "server", files)
    assert "gpus set to null" in fix_chart(chart).checked
    _, counts, pods = dra_render(chart, _on(tmp_path, "gpus: null\n"))
    assert not counts and _tolerated(pods["server"]) == []


def test_a_count_set_into_a_built_map_unset_renders_no_toleration(tmp_path: Path) -> None:
    """The map-built rewrite (a device entry `set` into a copied values map, the pod's own tolerations beside)."""
    values = "gpu: {resourceName: nvidia.com/gpu, count: 1}\nown: {limits: {memory: 1Gi}}\n"
    files = {"templates/deployment.yaml": deployment("server", SET_ENTRY), "values.yaml": values}
    chart = chart_with(tmp_path, "server", files)
    assert "gpu.count set to null" in fix_chart(chart).checked
    _, counts, pods = dra_render(chart, _on(tmp_path, values.replace("count: 1", "count: null")))
    assert not counts and _tolerated(pods["server"]) == ["dedicated"]  # was: the GPU toleration with no claim
    _, counts, pods = dra_render(chart, _on(tmp_path, values.replace("count: 1", "count: 0")))
    assert not counts and _tolerated(pods["server"]) == ["dedicated", "nvidia.com/gpu"]
