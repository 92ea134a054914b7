"""Two containers of one pod with counts of their own, the second under `if` a values switch the chart leaves off (a
judge beside the model): the value sets give the migration's claim one request, and the rewrite is manual work. The
message says what to set, the count and the container's own condition, not the count alone."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = deployment(
    "eval",
    """\
      containers:
        - name: model
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.model.gpus }}
        {{- if .Values.judge.enabled }}
        - name: judge
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.judge.gpus }}
        {{- end }}
""",
)


def test_a_container_the_values_leave_off_is_named_by_its_condition(tmp_path: Path) -> None:
    values = "model:\n  gpus: 1\njudge:\n  enabled: false\n  gpus: 1\n"
    chart = chart_with(tmp_path, "eval", {"templates/d.yaml": DEPLOYMENT, "values.yaml": values})
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.proven
    # was "(set each container's count above 0)": the judge's count is 1, its switch is what is off
    assert "its own condition true (.Values.judge.enabled)" in outcome.report()
