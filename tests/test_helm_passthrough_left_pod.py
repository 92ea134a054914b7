"""The pass-through (pattern B) where one values map goes into a container the migration moves to a claim and into
another it leaves as it is (rh-ai-quickstart's model-serving: each model's `resources` into the InferenceService's
predictor and, multi-node, into its `workerSpec`, which is not a pod spec the workloads rules name). The DRA values
would take the device from both, and only the predictor gets a claim. fix refused it with a render difference a
user could not act on ("spec.predictor.workerSpec.containers[0].resources.claims: not expected"); now the refusal
names the template line of that container and what to do. With a workloads file that names the worker's pod spec,
the chart is proven. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

ISVC = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {{ .Release.Name }}-llm
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    model:
      modelFormat:
        name: vLLM
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
    {{- if .Values.multiNode }}
    workerSpec:
      pipelineParallelSize: 2
      containers:
        - name: worker
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
    {{- end }}
"""
VALUES = "multiNode: false\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"
WORKER = """\
schemaVersion: 1
kind: Workloads
kinds:
  - group: serving.kserve.io
    kind: InferenceService
    podSpecs:
      - {at: spec.predictor, name: predictor}
      - {at: spec.predictor.workerSpec, name: worker}
    singleContainers: [model]
    acceptsClaims: {annotation: serving.kserve.io/deploymentMode, values: [RawDeployment, Standard]}
    reason: serverless mode runs on Knative
"""


def _fix(chart: Path, rules: tuple[Path, ...] = ()) -> str:
    outcome = run_chart(
        chart,
        ChartOptions(set_values=("multiNode=true",)),
        load_rules(rules),
        Settings(kube_version="1.34"),
        Target.parse("1.34"),
        "fix",
    )
    return "" if outcome.proven else str(outcome.manual)


def test_a_map_that_also_goes_into_a_pod_spec_the_migration_leaves_is_refused_at_its_line(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "llm", {"templates/isvc.yaml": ISVC, "values.yaml": VALUES})
    why = _fix(chart)
    line = ISVC.splitlines().index("          resources:") + 1  # the worker's `resources:`
    assert why.startswith(
        f"templates/isvc.yaml:{line}: InferenceService/release-name-llm: the values map resources "
    ), why
    assert "spec.predictor.workerSpec.containers[0] (worker)" in why
    assert "give this container a resources map of its own" in why and "workloads file" in why

    rules = tmp_path / "worker.yaml"
    rules.write_text(WORKER)
    assert _fix(chart, (rules,)) == ""  # the worker named: the migration and the DRA values take both containers
