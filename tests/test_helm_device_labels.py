"""A device node label the template writes itself (a GPU-present nodeSelector, an NFD GPU affinity): the manifest
migration drops it (the claim asks for the device), so the rewrite puts it under the DRA switch's negation: kept
with the switch off, gone with it on. Pattern B (pass-through) and A (`dra.enabled`); real renders."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

PRESENT = '      nodeSelector:\n        nvidia.com/gpu.present: "true"\n'
NFD = """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: intel.feature.node.kubernetes.io/gpu
                operator: In
                values:
                - "true"
      nodeSelector:
        kubernetes.io/hostname: server
"""
LITERAL_KEY = TOYAML_SERVER.replace(
    "            {{- toYaml .Values.resources | nindent 12 }}\n",
    "            limits:\n              nvidia.com/gpu: {{ .Values.gpus }}\n",
)
CASES = {  # name: (template, its pod-level lines, values, the values file of the DRA render)
    "present-b": (TOYAML_SERVER, PRESENT, "resources:\n  limits:\n    nvidia.com/gpu: 1\n", "values-dra.yaml"),
    "nfd-b": (TOYAML_SERVER, NFD, 'resources:\n  limits:\n    gpu.intel.com/i915: "1"\n', "values-dra.yaml"),
    "nfd-a": (
        LITERAL_KEY,
        NFD.replace("intel.feature.node.kubernetes.io/gpu", "nvidia.com/gpu.present"),
        "gpus: 1\n",
        "on.yaml",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_literal_device_label_goes_with_the_switch_on(tmp_path: Path, case: str) -> None:
    template, labels, values, dra = CASES[case]
    files = {"templates/deployment.yaml": template.replace("      containers:\n", labels + "      containers:\n")}
    chart = chart_with(tmp_path, case, {**files, "values.yaml": values})
    fix_chart(chart)  # was manual: "the pods select nodes by a device label that a template writes itself"
    (chart / "on.yaml").write_text("dra: {enabled: true}\n")
    (chart / "off.yaml").write_text("dra: {enabled: false}\n" if dra == "on.yaml" else "{}\n")
    on = dra_render(chart, chart / dra)[2]["release-name-server"]
    off = dra_render(chart, chart / "off.yaml")[2]["release-name-server"]
    kept = {"kubernetes.io/hostname": "server"} if "hostname" in labels else None  # not a device label: stays
    assert on["resourceClaims"] and on.get("nodeSelector") == kept and "affinity" not in on
    assert "resourceClaims" not in off and ("affinity" in off) == ("affinity:" in labels) and off["nodeSelector"]
