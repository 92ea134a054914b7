"""A values file the chart ships that only switches to another workload template (`mode: job`), with no device key of
its own, is a value set of the proof: with the DRA values given after it, that template must ask for the devices
through claims too. Before, the proof never rendered such a file (it took only the shipped files that name a device),
so a pass-through chart whose Deployment got the claims was reported proven while `-f ci/job-values.yaml -f
values-dra.yaml` rendered a Job whose container names a claim its pod does not have (Kubernetes refuses it) and asks
for no GPU. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TOYAML_SERVER, chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

# a choice the proof's derived value sets do not flip (no literal compared with `eq`, no boolean guard)
BATCH = '(has .Values.mode (list "job" "batch"))'
DEPLOYMENT = "{{- if not " + BATCH + " }}\n" + TOYAML_SERVER + "{{- end }}\n"
JOB = (
    "{{- if " + BATCH + " }}\n"
    """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-batch
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: batch
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
{{- end }}
"""
)
FILES = {
    "values.yaml": "mode: server\nresources:\n  limits:\n    nvidia.com/gpu: 1\n",
    "templates/deployment.yaml": DEPLOYMENT,
    "templates/job.yaml": JOB,
    "ci/job-values.yaml": "mode: job\n",  # no device key: the defaults' GPU, in the Job
}


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    chart = chart_with(tmp_path_factory.mktemp("switch-only"), "server", FILES)
    return chart, fix_chart(chart)


def _render(chart: Path, *files: str) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=tuple(chart / f for f in files))
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def test_the_proof_renders_the_file_that_only_switches_the_template(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    job_file = chart / "ci" / "job-values.yaml"
    assert any(c.startswith(f"-f {job_file} (DRA values") for c in outcome.checked), outcome.checked


def test_the_job_asks_for_its_gpu_through_a_claim_with_the_dra_values(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    docs = _render(chart, "ci/job-values.yaml", "values-dra.yaml")
    (job,) = [d for d in docs if d["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    claims = pod["containers"][0]["resources"]["claims"]
    assert "nvidia.com/gpu" not in (pod["containers"][0]["resources"].get("limits") or {})
    # was: the container named claim `gpu` and the pod had no resourceClaims (the Job template was not rewritten)
    assert {c["name"] for c in claims} <= {c["name"] for c in pod.get("resourceClaims", [])}, pod
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_without_the_dra_values_the_job_renders_as_before(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    (job,) = [d for d in _render(chart, "ci/job-values.yaml") if d["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}


# a literal device key (pattern A) in both templates, the StatefulSet picked the same way by a shipped file
STS = '(has .Values.deploymentType (list "statefulset" "sts"))'
WORKLOAD = deployment(
    "{{ .Release.Name }}",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
    app="server",
)


def test_a_literal_key_template_a_shipped_file_switches_to_takes_the_switch(tmp_path: Path) -> None:
    files = {
        "templates/deployment.yaml": f"{{{{- if not {STS} }}}}\n{WORKLOAD}{{{{- end }}}}\n",
        "templates/statefulset.yaml": f"{{{{- if {STS} }}}}\n"
        + WORKLOAD.replace("kind: Deployment", "kind: StatefulSet")
        + "{{- end }}\n",
        "values.yaml": "deploymentType: deployment\ngpus: 1\n",
        "ci/statefulset-values.yaml": "deploymentType: statefulset\n",
        "ci/replicas-values.yaml": "replicas: 2\n",  # the same template asks: nothing new, not rendered again
    }
    chart = chart_with(tmp_path, "server", files)
    outcome = fix_chart(chart)
    assert f"-f {chart / 'ci' / 'statefulset-values.yaml'}" in outcome.checked, outcome.checked
    assert not any("replicas-values" in c for c in outcome.checked), outcome.checked
    (chart / "dra.yaml").write_text("dra:\n  enabled: true\n")
    docs = _render(chart, "ci/statefulset-values.yaml", "dra.yaml")
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet"]
    pod = sts["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in (pod["containers"][0]["resources"].get("limits") or {})  # was: left on the plugin
    assert pod["resourceClaims"], pod


def test_a_switched_template_of_another_shape_is_caught_not_proven(tmp_path: Path) -> None:
    """The Job asks with a literal device key (pattern A) beside the Deployment's pass-through (B): the rewrite does
    not take it, and the chart is refused, naming the Job (was: proven, the Job never rendered)."""
    literal = JOB.replace("{{- toYaml .Values.resources | nindent 12 }}", "limits:\n              nvidia.com/gpu: 1")
    chart = chart_with(tmp_path, "server", {**FILES, "templates/job.yaml": literal})
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "Job/release-name-batch" in outcome.manual, outcome.manual
