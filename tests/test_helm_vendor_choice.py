"""Pattern A where an `if`/`else` picks the vendor's device key (azimuth-llm: `gpu.intel.com/i915` when
`api.intelXPUsEnabled`, else `nvidia.com/gpu`; huggingface's dell chart: NVIDIA or AMD by instance name): the DRA
branch asks, in each branch, for what the migration asks for when the pod requests that branch's device. Proven by
(L) and (D) on every value set, the flipped vendor switch included. Renders are real; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, dra_render, fix_chart

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-api
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
        - name: api
          image: vllm
          resources:
            limits:
              {{- if .Values.intel }}
              gpu.intel.com/i915: {{ .Values.gpus | int }}
              {{- else }}
              nvidia.com/gpu: {{ .Values.gpus | int }}
              {{- end }}
"""


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("vendor-choice")
    chart = chart_with(root, "llm", {"templates/api.yaml": DEPLOYMENT, "values.yaml": "gpus: 2\nintel: false\n"})
    return chart, fix_chart(chart)  # was: manual, 'the device key is inside `if .Values.intel ... else`'


def _claim(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any]]:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    docs, _, pods = dra_render(chart, file)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"], pods["release-name-api"]


def test_each_branch_asks_for_its_vendor(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert any("intel flipped to true" in c for c in outcome.checked)
    nvidia, pod = _claim(chart, "dra: {enabled: true}\n")
    assert (nvidia["deviceClassName"], nvidia["count"]) == ("gpu.nvidia.com", 2)
    assert "limits" not in pod["containers"][0]["resources"]
    intel, pod = _claim(chart, "dra: {enabled: true}\nintel: true\n")
    assert (intel["deviceClassName"], intel["count"]) == ("gpu.intel.com", 2)
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"]
