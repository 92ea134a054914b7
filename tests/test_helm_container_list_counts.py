"""Containers written by a `range` over a values list, each with its own device count (loft's component chart:
`with $container.resources.limits`, then `nvidia.com/gpu: {{ .gpu | quote }}`). The idiomatic rewrite does not build
the claim such a pod needs; the manual message names the line and says what the migration gives the pod, so the
change by hand can follow it."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TEMPLATE = deployment(
    "{{ .Release.Name }}",
    """\
      containers:
        {{- range $i, $container := .Values.containers }}
        - name: {{ $container.name | default (printf "c-%d" $i) }}
          image: {{ $container.image }}
          {{- if $container.resources }}
          resources:
            {{- with $container.resources.limits }}
            limits:
              {{- if .gpu }}
              nvidia.com/gpu: {{ .gpu | quote }}
              {{- end }}
            {{- end }}
          {{- end }}
        {{- end }}
""",
    app="c",
)
VALUES = """\
containers:
  - image: app:1
    resources: {limits: {gpu: 1}}
  - image: side:1
"""


def test_containers_of_a_values_list_with_their_own_counts_say_what_to_write(tmp_path: Path) -> None:
    """Was: the reason ended at "the rewrite takes the containers of a `range` only over `until N` ...", with no word
    of the claim the pod needs."""
    chart = chart_with(tmp_path, "c", {"values.yaml": VALUES, "templates/c.yaml": TEMPLATE})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    line = TEMPLATE.splitlines().index("              nvidia.com/gpu: {{ .gpu | quote }}") + 1
    assert outcome.manual.startswith(f"templates/c.yaml:{line}: "), outcome.manual
    assert "each item a container with its own count" in outcome.manual
    assert "(`claims: [{name: gpu}]`)" in outcome.manual and "request: <container>-gpu" in outcome.manual
