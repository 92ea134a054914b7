"""The DRA values of a values file the chart ships (`values-gpu.yaml` -> `values-gpu-dra.yaml`): an overlay given
after the file it stands for, holding only what DRA changes, read as a maintainer reviews it and rendered as a user
installs it.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
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
# the chart's defaults set no device key (nor `limits`): Helm keeps the overlay's null for them, the template drops it
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


def _pod(chart: Path, files: tuple[Path, ...]) -> dict:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_a_shipped_gpu_file_gets_an_overlay_that_after_it_renders_the_dra_pod(tmp_path: Path) -> None:
    """Was: values-gpu-dra.yaml a copy of the whole file with the device key replaced (cache, other and the comments
    again), given in place of it. Now it holds only what DRA changes, says how to use it, and `-f values-gpu.yaml
    -f values-gpu-dra.yaml` renders the claims with no device key left, though values.yaml sets none (Helm keeps a
    null for a key the chart's values.yaml lacks: the template drops it)."""
    chart = chart_with(tmp_path, "ml", {"values.yaml": VALUES, "templates/ml.yaml": SERVER, "values-gpu.yaml": GPU})
    gpu = chart / "values-gpu.yaml"
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    # the report says which files to give, in which order (was: nothing; the variant went in place of the file)
    assert "give each -dra.yaml after its values file: -f values-gpu.yaml -f values-gpu-dra.yaml" in outcome.report()
    write_changes(outcome)
    text = (chart / "values-gpu-dra.yaml").read_text()
    assert "`-f values-gpu.yaml -f values-gpu-dra.yaml`" in "".join(text.splitlines(True)[:2]), text
    overlay = yaml.safe_load(text)
    assert set(overlay) == {"ml", "resourceClaimTemplates"}, text  # not `other`
    assert "cache" not in overlay["ml"] and "requests" not in overlay["ml"]["resources"], text
    pod = _pod(chart, (gpu, chart / "values-gpu-dra.yaml"))
    assert pod["containers"][0]["resources"] == {"requests": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}, pod
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"].startswith("release-name-"), pod
    # the file alone renders the device-plugin request as before
    assert _pod(chart, (gpu,))["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
