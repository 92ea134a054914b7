"""Pattern A whose count reads each `range` item inside one workload (a RayCluster ranging over `workerGroups`, each
group with its own `gpus`): the workload's name is written above the range, so it cannot name each item's claim
template. The rewrite is manual work with that reason, not a rewritten chart that fails to render with the switch
on (the name read as the item's: `.item.Release.Name`, a nil pointer)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: head
            image: ray:1
  workerGroupSpecs:
  {{- range .Values.workerGroups }}
    - groupName: {{ .name }}
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: worker
              image: ray:1
              resources:
                limits:
                  nvidia.com/gpu: {{ .gpus }}
  {{- end }}
"""


def test_a_count_per_item_under_a_name_above_the_range_is_refused_with_the_reason(tmp_path: Path) -> None:
    values = "workerGroups:\n  - {name: small, gpus: 1}\n  - {name: big, gpus: 4}\n"
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY, "values.yaml": values})
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.proven
    report = outcome.report()
    assert "templates/ray.yaml:3: the device count reads each `range` item" in report, report
    assert "does not render" not in report
