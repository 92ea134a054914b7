"""A container that writes its device count literally (`nvidia.com/gpu: {{ .Values.gpus }}`) and also one resource
key per entry of a values map (`range $key, $value := .Values.devices`, `{{ $key }}: {{ $value }}`), in a leader and a
worker pod. With values that ask for a device through that map, the idiomatic rewrite cannot take it: fix writes
nothing and names the map's line, before any rewrite is proven (it was a proof failure that blamed 'a values map in
another branch of an `if`'). Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: busybox
          resources:
            limits:
              {{{{- if gt (int .Values.{name}Gpus) 0 }}}}
              nvidia.com/gpu: {{{{ .Values.{name}Gpus }}}}
              {{{{- end }}}}
              {{{{- range $key, $value := .Values.devices }}}}
              {{{{ $key }}}}: {{{{ $value }}}}
              {{{{- end }}}}
"""
FILES = {
    "templates/pods.yaml": POD.format(name="leader") + "---\n" + POD.format(name="worker"),
    "values.yaml": "leaderGpus: 1\nworkerGpus: 1\ndevices: {}\n",
}


def test_a_device_from_the_map_is_refused_with_the_line_of_the_map(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "serving", FILES)
    amd = tmp_path / "amd.yaml"
    amd.write_text('leaderGpus: 0\nworkerGpus: 0\ndevices:\n  amd.com/gpu: "1"\n')
    options = ChartOptions(values_files=(amd,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "templates/pods.yaml:21: pattern E" in outcome.manual, outcome.report()
    assert "`.Values.devices`" in outcome.manual and "amd.com/gpu" in outcome.manual, outcome.report()
    assert "another branch" not in outcome.manual, outcome.report()
    fix_chart(chart)  # with the map empty, as the chart ships it, the chart's own counts are rewritten and proven
    assert "{{- range $key, $value := .Values.devices }}" in (chart / "templates" / "pods.yaml").read_text()


KEY_BY_KEY = deployment(
    "flow",
    """\
      containers:
        - name: flow
          image: busybox
          {{- if .Values.flow.resources }}
          resources:
          {{- range $key, $val := .Values.flow.resources }}
            {{ $key }}:
{{ toYaml $val | indent 14 }}
          {{- end }}
          {{- end }}
""",
)


def test_a_resources_map_written_key_by_key_names_the_range_and_the_map(tmp_path: Path) -> None:
    """Was: 'this line is none of them', with the line of `{{ $key }}:` and no word of the `range` that writes it."""
    values = "flow:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "flow", {"templates/flow.yaml": KEY_BY_KEY, "values.yaml": values})
    outcome = run_chart(
        chart,
        ChartOptions(kube_version="1.34"),
        load_rules(),
        Settings(kube_version="1.34"),
        Target.parse("1.34"),
        "fix",
    )
    assert not outcome.proven
    assert "templates/flow.yaml:18: pattern E" in outcome.manual, outcome.report()
    assert "the map `.Values.flow.resources`, written key by key by the `range` at line 17" in outcome.manual
