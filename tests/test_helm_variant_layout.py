"""The layout of a values file's DRA variant (`gpu.yaml` -> `gpu-dra.yaml`), read as a maintainer reviews it: what
the variant adds to a map goes with that map, above the blank line that parts it from the next key.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SERVER = deployment(
    "{{ .Release.Name }}-ml",
    """\
      containers:
        - name: ml
          image: ml:1
          resources:
            {{- toYaml .Values.ml.resources | nindent 12 }}
""",
)
VALUES = "ml:\n  resources: {}\n  cache:\n    size: 1Gi\n"
GPU = """\
ml:
  resources:
    limits:
      nvidia.com/gpu: 1
    requests:
      memory: 8Gi

  cache:
    size: 20Gi

other: true
"""


def test_the_claims_and_the_pod_keys_go_above_the_blank_line_that_ends_their_map(tmp_path: Path) -> None:
    """Was: `claims:` written below the blank line after the resources map, and the pod's `resourceClaims:` below
    the one after the `ml:` group, each glued to the next key."""
    chart = chart_with(tmp_path, "ml", {"values.yaml": VALUES, "templates/ml.yaml": SERVER, "values-gpu.yaml": GPU})
    outcome = run_chart(
        chart,
        ChartOptions(values_files=(chart / "values-gpu.yaml",)),
        load_rules(),
        Settings(),
        Target.parse("1.36"),
        "fix",
    )
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    variant = (chart / "values-gpu-dra.yaml").read_text()
    assert "      memory: 8Gi\n    claims:\n    - name: gpu\n\n  cache:\n" in variant, variant
    assert "effect: NoSchedule\n\nother: true\n" in variant, variant
    assert "size: 20Gi\n  resourceClaims:\n" in variant, variant
