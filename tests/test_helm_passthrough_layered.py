"""Pattern B where a values file asks for another device count than the chart's defaults (huggingface/optimum-habana's
examples/kubernetes: 1 Gaudi card by default, 8 in `ci/multi-card-lora-clm-values.yaml`): given with the defaults'
`values-dra.yaml`, the file's DRA variant must not leave the defaults' claim template rendered beside its own.
Renders are real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-gaudijob
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: optimum-habana
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
DEFAULTS = (
    "resources:\n  limits:\n    habana.ai/gaudi: &hpus 1\n    memory: 1Gi\n  requests:\n    habana.ai/gaudi: *hpus\n"
)
MULTI = (
    'resources:\n  limits:\n    habana.ai/gaudi: &hpus "8"\n    memory: 1Gi\n  requests:\n    habana.ai/gaudi: *hpus\n'
)


def test_a_values_file_with_its_own_count_drops_the_default_claim_template(tmp_path: Path) -> None:
    """Was: manual, 'with your values and the DRA values files, the rewritten chart renders differently from the
    migrated original rendering: ResourceClaimTemplate ...: the rewritten chart renders it' (the 1-card template of
    values-dra.yaml beside the 8-card one)."""
    chart = chart_with(
        tmp_path, "habana", {"templates/job.yaml": JOB, "values.yaml": DEFAULTS, "ci/multi-values.yaml": MULTI}
    )
    multi = chart / "ci" / "multi-values.yaml"
    options = ChartOptions(kube_version="1.34", values_files=(multi,))
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    layered = (chart / "values-dra.yaml", chart / "ci" / "multi-values-dra.yaml")
    for files, want in ((layered, [8]), (layered[1:], [8]), (layered[:1], [1])):
        docs = [
            d
            for m in render_chart(chart, RenderOptions(values_files=files, kube_version="1.34"))
            for d in yaml.safe_load_all(m.text)
            if d
        ]
        claims = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
        assert [c["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for c in claims] == want, files
        (pod,) = (d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job")
        assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == claims[0]["metadata"]["name"]
