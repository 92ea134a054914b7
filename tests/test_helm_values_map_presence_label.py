"""A pod whose `nodeSelector:` renders a values map whole (`{{- toYaml .Values.gpu.nvidia.nodeSelector | nindent 8 }}`)
holding GPU Feature Discovery's `nvidia.com/gpu.present: "true"`, inside a vendor choice (`if eq .Values.gpu.vendor
"nvidia"` / `else if ... "amd"`, literal `nvidia.com/gpu: 1` / `amd.com/gpu: 1` keys). The device class implies that
label, so the manifest migration drops it and adds no selector; the DRA branch renders the map without it (`omit`),
and nothing at all when it was the map's only label, as the migration drops the emptied nodeSelector. Proven from a
run with the nvidia values and from one with the amd values (was: the amd run refused, "the node label
nvidia.com/gpu.present the migration moves into the claim is not a nodeSelector line", because the label's values
leaf was probed in the amd render, which does not show it; the nvidia run kept the label with a warning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SIM = deployment(
    "{{ .Release.Name }}-sim",
    """\
      {{- if eq .Values.gpu.vendor "nvidia" }}
      nodeSelector:
        {{- toYaml .Values.gpu.nvidia.nodeSelector | nindent 8 }}
      {{- else if eq .Values.gpu.vendor "amd" }}
      nodeSelector:
        {{- toYaml .Values.gpu.amd.nodeSelector | nindent 8 }}
      {{- end }}
      containers:
        - name: sim
          image: sim:1
          resources:
            limits:
              {{- if eq .Values.gpu.vendor "amd" }}
              amd.com/gpu: 1
              {{- else }}
              nvidia.com/gpu: 1
              {{- end }}
""",
)
VALUES = """\
gpu:
  vendor: nvidia
  nvidia:
    nodeSelector:
      nvidia.com/gpu.present: "true"
  amd:
    nodeSelector:
      amd.com/gpu: "true"
"""


def _render(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> str:
    options = RenderOptions(values_files=values, set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pod(stream: str) -> dict[str, Any]:
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return {k: v for k, v in pod.items() if k != "resourceClaims"}  # the template names differ: the claim is the same


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_a_presence_label_from_a_values_map_is_left_out_of_the_dra_branch(tmp_path: Path, vendor: str) -> None:
    files = {"values.yaml": VALUES, "templates/sim.yaml": SIM}
    chart, original = chart_with(tmp_path / "fixed", "sim", files), chart_with(tmp_path / "original", "sim", files)
    given = tmp_path / "vendor.yaml"
    given.write_text(f"gpu:\n  vendor: {vendor}\n")
    outcome = fix_chart(chart, values=(given,))
    assert not [f for f in outcome.findings if f.rule == "chart-label-from-values"]

    beside = "gpu.nvidia.nodeSelector.zone=a"  # another label of the map stays on the pod
    for sets in (("gpu.vendor=nvidia",), ("gpu.vendor=amd",), ("gpu.vendor=nvidia", beside)):
        assert _render(chart, (given,), ("dra.enabled=false", *sets)) == _render(original, (given,), sets), sets
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, (given,), sets))
        assert code == 0, err
        assert _pod(_render(chart, (given,), sets)) == _pod(migrated), sets
    assert "nodeSelector" not in _pod(_render(chart, (given,), ("gpu.vendor=nvidia",)))
    assert _pod(_render(chart, (given,), ("gpu.vendor=nvidia", beside)))["nodeSelector"] == {"zone": "a"}
    assert _pod(_render(chart, (given,), ("gpu.vendor=amd",)))["nodeSelector"] == {"amd.com/gpu": "true"}


def test_a_passed_through_resources_map_keeps_the_label_from_values_with_a_warning(tmp_path: Path) -> None:
    """The pass-through of a values resources map (pattern B) leaves the pod's node selection as it is: the label
    stays on the pod, compared with the migration that keeps it, and the warning says to translate it by hand."""
    passed = deployment(
        "{{ .Release.Name }}-p",
        """\
      nodeSelector:
        {{- toYaml .Values.nodeSelector | nindent 8 }}
      containers:
        - name: p
          image: p:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
    )
    values = 'nodeSelector:\n  nvidia.com/gpu.present: "true"\nresources:\n  limits:\n    nvidia.com/gpu: 1\n'
    chart = chart_with(tmp_path, "p", {"values.yaml": values, "templates/p.yaml": passed})
    outcome = fix_chart(chart)
    assert [f for f in outcome.findings if f.rule == "chart-label-from-values"]
