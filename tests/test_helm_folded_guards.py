"""The `if not .Values.dra.enabled` guards the rewrite puts around device keys, folded where the chart holds the key
under an `if` of its own or one branch per vendor (transcript-create's worker: `if .Values.worker.gpu.enabled`, then
`if eq .Values.worker.gpu.type "nvidia"` / `else if ... "amd"`, in requests and in limits): the chart's own `if`
takes the switch, `and .Values.gpu.enabled (not .Values.dra.enabled)`, instead of a guard in each branch (was:
eight more lines in the template). Renders are real; the proof holds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

WORKER = deployment(
    "worker",
    """\
      containers:
        - name: worker
          image: example/worker
          resources:
            requests:
              cpu: 1
              {{- if .Values.gpu.enabled }}
              {{- if eq .Values.gpu.type "nvidia" }}
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- else if eq .Values.gpu.type "amd" }}
              amd.com/gpu: {{ .Values.gpu.count }}
              {{- end }}
              {{- end }}
            limits:
              cpu: 2
              {{- if .Values.gpu.enabled }}
              {{- if eq .Values.gpu.type "nvidia" }}
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- else if eq .Values.gpu.type "amd" }}
              amd.com/gpu: {{ .Values.gpu.count }}
              {{- end }}
              {{- end }}
""",
)
VALUES = "gpu:\n  enabled: true\n  type: nvidia\n  count: 1\n"


def _texts(chart: Path, sets: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


def test_the_chart_own_if_takes_the_switch_instead_of_a_guard_per_branch(tmp_path: Path) -> None:
    original = chart_with(tmp_path / "original", "worker", {"templates/worker.yaml": WORKER, "values.yaml": VALUES})
    chart = shutil.copytree(original, tmp_path / "fixed" / "worker")
    fix_chart(chart)
    written = (chart / "templates/worker.yaml").read_text()
    assert not re.search(r"\{\{- if not \.Values\.dra\.enabled \}\}", written)
    assert written.count("{{- if and .Values.gpu.enabled (not .Values.dra.enabled) }}") == 2
    for sets in ((), ("gpu.type=amd",), ("gpu.enabled=false",)):
        assert _texts(chart, ("dra.enabled=false", *sets)) == _texts(original, sets)
        on = "".join(text for _, text in _texts(chart, sets))
        assert "nvidia.com/gpu:" not in on and "amd.com/gpu:" not in on
