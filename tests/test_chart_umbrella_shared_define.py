"""An umbrella whose subcharts each render their Deployment with `{{ include "suite.deployment" . }}`, a define the
umbrella's own templates/_workload.tpl holds (Helm shares defines across the chart tree), which passes the subchart's
`resources` map through with toYaml (pattern B). Was: lint named the subchart's include line pattern D and fix
refused it ("no line of a helper in this chart writes the device key"), as both looked for the define in the
subchart alone; now lint points at the umbrella's line and fix writes the pass-through into that define, proven.

Renders are real (the Helm engine embedded in helm-python-sdk). One fix per module, shared by the tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
UMBRELLA = """\
apiVersion: v2
name: suite
version: 1.0.0
dependencies:
  - name: api
    version: 0.1.0
    condition: api.enabled
  - name: infer
    version: 0.1.0
    condition: infer.enabled
"""
WORKLOAD = '{{- define "suite.deployment" -}}\n' + deployment(
    "{{ .Release.Name }}-{{ .Chart.Name }}",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .Chart.Name }}
          image: "example.com/{{ .Chart.Name }}:1"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
{{- end }}
""",
    app="{{ .Chart.Name }}",
)
GPU = """\
infer:
  resources:
    limits:
      cpu: 500m
      nvidia.com/gpu: 1
"""


def write_umbrella(root: Path) -> Path:
    """root/suite with subcharts api and infer in charts/, each a Deployment through the umbrella's define."""
    umbrella = root / "suite"
    (umbrella / "templates").mkdir(parents=True)
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text("api:\n  enabled: true\ninfer:\n  enabled: true\n")
    (umbrella / "templates" / "_workload.tpl").write_text(WORKLOAD)
    for sub in ("api", "infer"):
        leaf = umbrella / "charts" / sub
        (leaf / "templates").mkdir(parents=True)
        (leaf / "Chart.yaml").write_text(f"apiVersion: v2\nname: {sub}\nversion: 0.1.0\n")
        (leaf / "values.yaml").write_text("# resources of the container\nresources: {}\n\ntolerations: []\n")
        (leaf / "templates" / "deployment.yaml").write_text('{{ include "suite.deployment" . }}\n')
    (root / "gpu.yaml").write_text(GPU)
    return umbrella


def docs(chart: Path, *files: Path, sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=files, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("shared")
    original = write_umbrella(root / "original")
    shutil.copytree(root / "original", root / "fixed")
    umbrella, gpu = root / "fixed" / "suite", root / "fixed" / "gpu.yaml"
    outcome = run_chart(umbrella, ChartOptions(values_files=(gpu,)), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, umbrella, outcome


def test_lint_points_at_the_umbrellas_define(tmp_path: Path) -> None:
    umbrella = write_umbrella(tmp_path)
    options = ChartOptions(values_files=(tmp_path / "gpu.yaml",))
    outcome = run_chart(umbrella, options, RULES, Settings(), Target.parse("1.36"), "lint")
    (f,) = [f for f in outcome.findings if f.resource == "nvidia.com/gpu"]
    line = WORKLOAD.splitlines().index("          resources:") + 1  # the key whose map toYaml writes
    assert (f.file, f.line) == (f"{umbrella}/templates/_workload.tpl", line), f
    assert "pattern B" in f.message, f.message
    (via,) = [r for r in f.related if r.note.startswith("this line includes")]
    assert via.file == f"{umbrella}/charts/infer/templates/deployment.yaml", via


def test_the_pass_through_goes_into_the_umbrellas_define(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, umbrella, outcome = fixed
    changed = {c.rel for c in outcome.changes if not Path(c.rel).is_absolute()}
    assert "templates/_workload.tpl" in changed, changed  # the umbrella's define, not a copy in each subchart
    assert not {r for r in changed if r.endswith("deployment.yaml")}, changed
    assert "charts/infer/templates/resourceclaimtemplates.yaml" in changed, changed
    workload = (umbrella / "templates" / "_workload.tpl").read_text()
    assert "{{- with .Values.resourceClaims }}" in workload
    # the defines its new lines include sit beside it, so a subchart switched off takes none away
    assert 'define "suite.draDevices"' in workload, workload


def test_dra_values_give_the_claim_and_the_other_subchart_stays(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, umbrella, _ = fixed
    gpu = umbrella.parent / "gpu.yaml"
    out = docs(umbrella, gpu, umbrella.parent / "gpu-dra.yaml")
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"}
    infer, api = pods["release-name-infer"], pods["release-name-api"]
    assert "nvidia.com/gpu" not in infer["containers"][0]["resources"]["limits"], infer
    assert infer["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    (claim,) = infer["resourceClaims"]
    assert [d["metadata"]["name"] for d in out if d["kind"] == "ResourceClaimTemplate"] == [
        claim["resourceClaimTemplateName"]
    ]
    assert "resourceClaims" not in api and api == next(
        d["spec"]["template"]["spec"] for d in docs(original, gpu) if d["metadata"]["name"] == "release-name-api"
    )


def test_device_plugin_values_render_as_before_with_a_subchart_off(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, umbrella, _ = fixed
    gpu = umbrella.parent / "gpu.yaml"
    for sets in ((), ("infer.enabled=false",), ("api.enabled=false",)):
        assert docs(umbrella, gpu, sets=sets) == docs(original, original.parent / "gpu.yaml", sets=sets), sets
