"""The helper rewrite (pattern D) of a map built in variables, for value sets the proof tries that ask for more than
the user's values do: a switch of the chart that merges another device into the map (frigate's `gpu.nvidia.enabled`
beside an Intel GPU the user gives in `resources`), and a device count whose request is unset where the chart's
defaults do not set it (Helm keeps the null: Kubernetes would not install the original render).

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

NVIDIA = """\
{{- if .Values.gpu.nvidia.enabled -}}
{{- $resources = mergeOverwrite $resources (dict "limits" (dict "nvidia.com/gpu" 1)) -}}
{{- end -}}
"""
HELPER = """\
{{- define "nvr.resources" -}}
{{- $resources := .Values.resources | default dict -}}
NVIDIA{{ $resources | toYaml }}
{{- end -}}
"""
NVR = deployment(
    "{{ .Release.Name }}-nvr",
    """\
      containers:
        - name: nvr
          image: nvr:1
          resources:
            {{- include "nvr.resources" . | nindent 12 }}
""",
)
I915 = "resources:\n  limits:\n    gpu.intel.com/i915: 1\n  requests:\n    gpu.intel.com/i915: 1\n"


def _chart(tmp_path: Path, switch: bool) -> Path:
    return chart_with(
        tmp_path,
        "nvr",
        {
            "values.yaml": "gpu:\n  nvidia:\n    enabled: false\nresources: {}\n",
            "templates/_helpers.tpl": HELPER.replace("NVIDIA", NVIDIA if switch else ""),
            "templates/deployment.yaml": NVR,
        },
    )


def _render(chart: Path, values: Path, *sets: str) -> str:
    return "---\n".join(m.text for m in render_chart(chart, RenderOptions(values_files=(values,), set_values=sets)))


@pytest.mark.parametrize("switch", [True, False], ids=["nvidia-switch", "no-switch"])
def test_an_intel_gpu_in_a_helper_map_is_proven(tmp_path: Path, switch: bool) -> None:
    """Fix proves the rewrite of the Intel GPU the user's values give (was: manual, with the switch because the DRA
    branch's guard refused the NVIDIA GPU the switch adds; without it because the claim template the rewrite renders
    for the limit beside a null request was compared to a migration that leaves that uninstallable pod as it is)."""
    chart = _chart(tmp_path, switch)
    values = tmp_path / "i915.yaml"
    values.write_text(I915)
    original = _render(chart, values, *(["gpu.nvidia.enabled=true"] if switch else []))
    outcome = fix_chart(chart, values=(values,))
    docs = [d for d in yaml.safe_load_all(_render(chart, values)) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"], pod
    if not switch:
        return
    assert any("gpu.nvidia.enabled flipped to true (switch off; on, the DRA branch fails" in c for c in outcome.checked)
    # both devices: the DRA branch refuses the render, never a silent device-plugin request; off, the chart as before
    with pytest.raises(HelmError, match="set dra.enabled=false to request it from its device plugin"):
        _render(chart, values, "gpu.nvidia.enabled=true")
    assert _render(chart, values, "gpu.nvidia.enabled=true", "dra.enabled=false") == original.replace(
        "nvr-1.0.0", "nvr-1.0.1"
    )
