"""A container that writes its resources only from the variables of a `range` over values maps (awssamples'
eksml triton chart: `range $k, $v := .Values.resources.requests`, then `.limits`, each `{{ $k }}: {{ $v }}`), with
no device key of the chart's own, and a `.Values.resources` that holds `node_type` too (the pod's nodeSelector).
Was: manual work, 'the values map resources is not passed through as is' (the pass-through's words, which name
no line and no step). Now: the pattern-E reason at the key line, with what to change by hand. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: {{ .Values.resources.node_type }}
      containers:
        - name: server
          image: busybox
          resources:
            requests:
            {{- range $k, $v := .Values.resources.requests }}
              {{ $k }}: {{ $v }}
            {{- end }}
            limits:
            {{- range $k, $v := .Values.resources.limits }}
              {{ $k }}: {{ $v }}
            {{- end }}
"""
VALUES = "resources:\n  node_type: g6.48xlarge\n  requests: {}\n  limits: {}\n"
GPU = 'resources:\n  node_type: g6.48xlarge\n  requests:\n    "nvidia.com/gpu": 8\n  limits:\n    "nvidia.com/gpu": 8\n'


def test_a_map_only_container_is_refused_at_its_key_line_with_the_steps_by_hand(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "triton", {"templates/server.yaml": SERVER, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    options = ChartOptions(values_files=(gpu,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven and not outcome.changes
    key = SERVER.splitlines().index("              {{ $k }}: {{ $v }}") + 1
    assert f"templates/server.yaml:{key}: pattern E" in outcome.manual, outcome.manual
    assert "By hand: take nvidia.com/gpu out of `.Values.resources.requests`" in outcome.manual, outcome.manual
    assert "not passed through" not in outcome.manual, outcome.manual
    assert [f.message for f in outcome.findings if f.rule == "chart-rewrite-unproven"] == [
        f"fix writes nothing for this chart: {outcome.manual}"
    ]
