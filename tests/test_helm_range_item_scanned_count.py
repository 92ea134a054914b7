"""Pattern A inside `range` with a count the range body reads out of each item's list with a `range` of its own: a
Slurm workers chart (sowiee's Slurm-on-K8s does this) ranges over node pools, scans each pool's `gres` strings
(`gpu:rtx4070:2`) once to tell a GPU pool from a CPU pool and once more, inside `if` on that, to set `$gpuCount`, then
writes one StatefulSet per pool with `nvidia.com/gpu: {{ $gpuCount | quote }}` under that `if`. The claim template
file runs the same `range` and the same scans, so each pool's claim template asks for that pool's count, read by
the chart's own logic. Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, claimed_counts

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T134 = Target.parse("1.34")

WORKERS = """\
{{- range .Values.pools }}
{{- $pool := . }}
{{- $isGpuPool := false }}
{{- range $pool.gres -}}
  {{- if ne (index (splitList ":" .) 0) "mps" -}}{{- $isGpuPool = true -}}{{- end -}}
{{- end -}}
{{- $useGpu := and $isGpuPool $.Values.gpuRuntime }}
{{- $gpuCount := "1" }}
{{- if $useGpu -}}
  {{- range $pool.gres -}}
    {{- $parts := splitList ":" . -}}
    {{- if and (ne (index $parts 0) "mps") (eq (len $parts) 3) -}}
      {{- $gpuCount = index $parts 2 -}}
    {{- end -}}
  {{- end -}}
{{- end }}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $pool.name }}
spec:
  serviceName: {{ $pool.name }}
  selector:
    matchLabels:
      app: {{ $pool.name }}
  template:
    metadata:
      labels:
        app: {{ $pool.name }}
    spec:
      containers:
        - name: slurmd
          image: slurm:1
          resources:
            limits:
              cpu: "2"
              {{- if $useGpu }}
              nvidia.com/gpu: {{ $gpuCount | quote }}
              {{- end }}
{{- end }}
"""
VALUES = """\
gpuRuntime: true
pools:
  - name: cpu
    gres: []
  - name: small
    gres: ["gpu:rtx4070:1"]
  - name: big
    gres: ["mps:100", "gpu:a100:4"]
"""


def fixed(tmp_path: Path) -> tuple[Path, Path]:
    """The chart before and after `fix` with its defaults (which must be proven)."""
    files = {"templates/workers.yaml": WORKERS, "values.yaml": VALUES}
    original = chart_with(tmp_path / "original", "slurm", files)
    chart = chart_with(tmp_path / "fixed", "slurm", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(opt_in=True), T134, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart


def docs(chart: Path, *sets: str, files: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    rendered = render_chart(chart, RenderOptions(values_files=files, set_values=sets))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def texts(chart: Path, *sets: str, files: tuple[Path, ...] = ()) -> dict[str, str]:
    rendered = render_chart(chart, RenderOptions(values_files=files, set_values=sets))
    return {m.source: m.text for m in rendered if m.text.strip()}


def three_gpus(tmp_path: Path) -> tuple[Path, ...]:
    """A values file whose small pool has gpu:rtx4070:3 (`--set` on a list index would replace the whole list)."""
    changed = tmp_path / "three.yaml"
    changed.write_text(VALUES.replace("gpu:rtx4070:1", "gpu:rtx4070:3"))
    return (changed,)


def test_each_pool_claims_the_count_its_gres_strings_give(tmp_path: Path) -> None:
    """Was: manual, 'the count `$gpuCount` reads `$gpuCount`, which the `range` sets per item'. Now each GPU pool's
    pods claim the count the pool's own gres string gives (small 1, big 4, past its MPS entry), from a claim template
    of their own; the CPU pool gets no claim."""
    _, chart = fixed(tmp_path)
    on = "dra.enabled=true"
    assert claimed_counts(docs(chart, on), "StatefulSet") == {"cpu": None, "small": 1, "big": 4}
    assert claimed_counts(docs(chart, on, files=three_gpus(tmp_path)), "StatefulSet")["small"] == 3
    assert set(claimed_counts(docs(chart, on, "gpuRuntime=false"), "StatefulSet").values()) == {None}


def test_the_switch_off_renders_as_before(tmp_path: Path) -> None:
    """With `dra.enabled=false` (the default) every render is byte-identical to the chart before the fix."""
    original, chart = fixed(tmp_path)
    for sets, files in (((), ()), (("gpuRuntime=false",), ()), ((), three_gpus(tmp_path))):
        assert texts(chart, *sets, files=files) == texts(original, *sets, files=files)
