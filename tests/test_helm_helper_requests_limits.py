"""A helper that writes the device key under `requests:` and `limits:`, each from its own values key (vllm's
chart-helm `chart.resources`, seen in quickbeard/llm-serving-helm): the limits one counts, and the proof changes
both counts together (alone, one gives a pod the API server rejects and the migration leaves as it is). Real
renders; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

HELPERS = """\
{{- define "chart.resources" -}}
requests:
  cpu: 1
  {{- if gt (int (index .Values.resources.requests "nvidia.com/gpu")) 0 }}
  nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
  {{- end }}
limits:
  cpu: 1
  {{- if gt (int (index .Values.resources.limits "nvidia.com/gpu")) 0 }}
  nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" | quote }}
  {{- end }}
{{- end }}
"""
DEPLOYMENT = deployment(
    "vllm",
    """\
      containers:
        - name: vllm
          image: vllm
          resources:
            {{- include "chart.resources" . | nindent 12 }}
""",
)
VALUES = "resources:\n  requests:\n    nvidia.com/gpu: 2\n  limits:\n    nvidia.com/gpu: 2\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES}
    chart = chart_with(tmp_path_factory.mktemp("requests-limits"), "vllm", files)
    return chart, fix_chart(chart)  # was: manual, 'the helper writes different device keys or counts'


def test_the_limits_count_is_claimed_and_both_counts_change_together(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert any(
        c.startswith('resources.limits["nvidia.com/gpu"] changed to') and "and resources.requests" in c
        for c in outcome.checked
    )
    on = chart.parent / "on.yaml"
    on.write_text(
        "dra: {enabled: true}\nresources:\n  requests:\n    nvidia.com/gpu: 3\n  limits:\n    nvidia.com/gpu: 3\n"
    )
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [3]
    assert "nvidia.com/gpu" not in pods["vllm"]["containers"][0]["resources"]["limits"]
