"""Two workloads that pass their values resources maps through (pattern B), each in a namespace of its own values
key (`namespace: {{ default .Release.Namespace .Values.a.namespace }}`): the pass-through's one claim-template file
renders its templates in one namespace, and a pod's claim template must be in the pod's, so fix refuses. The refusal
said only the two expressions; it now starts at the first template line that names a namespace, names the pattern,
and gives each workload's line, so a user knows where to look, and says what to write by hand instead.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def _workload(key: str) -> str:
    text = deployment(
        f"{{{{ .Release.Name }}}}-{key}",
        f"""\
      containers:
        - name: {key}
          image: {key}:1
          resources:
            {{{{- toYaml .Values.{key}.resources | nindent 12 }}}}
""",
    )
    return text.replace(
        "metadata:\n", f"metadata:\n  namespace: {{{{ default .Release.Namespace .Values.{key}.namespace }}}}\n", 1
    )


VALUES = "".join(f'{k}:\n  namespace: ""\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n' for k in ("a", "b"))


def test_workloads_in_namespaces_of_their_own_are_refused_at_their_lines(tmp_path: Path) -> None:
    a, b = _workload("a"), _workload("b")
    chart = chart_with(tmp_path, "two", {"values.yaml": VALUES, "templates/a.yaml": a, "templates/b.yaml": b})
    original = {p: p.read_text() for p in chart.rglob("*") if p.is_file()}

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")

    line_a = a.splitlines().index("  namespace: {{ default .Release.Namespace .Values.a.namespace }}") + 1
    line_b = b.splitlines().index("  namespace: {{ default .Release.Namespace .Values.b.namespace }}") + 1
    assert not outcome.proven
    assert outcome.manual.startswith(f"templates/a.yaml:{line_a}: pattern B"), outcome.manual
    assert f"templates/b.yaml:{line_b}" in outcome.manual and "different namespaces" in outcome.manual
    assert "By hand: beside each resources map, a resourceClaims list" in outcome.manual
    assert "a ResourceClaimTemplate for each namespace that uses it" in outcome.manual
    assert "--strategy extended-resource" in outcome.manual
    assert {p: p.read_text() for p in chart.rglob("*") if p.is_file()} == original
