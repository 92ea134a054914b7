"""A container's resources map taken from the first of two values maps that is not empty: each worker of a `range`
over the values has its own `resources`, else the `workerDefaults` ones (`$resources := $worker.resources | default
$defaults.resources`, then `toYaml $resources`; nt-platform's firewall workers, whose GPU values set only the
defaults). The pass-through read `$resources` as a field of the root (`$.resourceClaims`), so the pods got no claims
and the rewrite was manual; the pod's claims now follow the map the variable took.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

WORKERS = (
    "{{- $defaults := .Values.workerDefaults }}\n{{- range $name, $worker := .Values.workers }}\n---\n"
    + deployment(
        "{{ $name }}-worker",
        """\
      containers:
        - name: worker
          image: worker:1
          {{- $resources := CHAIN }}
          {{- if $resources }}
          resources:
            {{- toYaml $resources | nindent 12 }}
          {{- end }}
{{- end }}
""",
        app="{{ $name }}",
    )
)
# the moderation worker keeps its own CPU-only resources: only the other two take the defaults' GPU
VALUES = """\
workerDefaults:
  resources:
    limits:
      cpu: 1
workers:
  toxicity:
    enabled: true
  jailbreak:
    enabled: true
  moderation:
    resources:
      limits:
        cpu: 2
"""
GPU = "workerDefaults:\n  resources:\n    limits:\n      cpu: 1\n      nvidia.com/gpu: 1\n"


@pytest.mark.parametrize(
    "chain", ["$worker.resources | default $defaults.resources", "default $defaults.resources $worker.resources"]
)
def test_pods_claim_the_devices_of_the_map_the_default_chain_takes(tmp_path: Path, chain: str) -> None:
    chart = chart_with(
        tmp_path, "firewall", {"templates/workers.yaml": WORKERS.replace("CHAIN", chain), "values.yaml": VALUES}
    )
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    for name in ("toxicity-worker", "jailbreak-worker"):
        (claim,) = pods[name]["resourceClaims"]
        assert claim["resourceClaimTemplateName"] in counts, pods[name]
        (container,) = pods[name]["containers"]
        assert container["resources"] == {"limits": {"cpu": 1}, "claims": [{"name": claim["name"]}]}
    moderation = pods["moderation-worker"]
    assert "resourceClaims" not in moderation and moderation["containers"][0]["resources"] == {"limits": {"cpu": 2}}
    assert list(counts.values()) == [1]
