"""A pass-through chart whose helper renders the workload and, under a switch, the same manifest as text in a
ConfigMap (jump-cannon: `graphCompute.session.enabled` renders the RayCluster into its gpu-session-template ConfigMap,
for a controller to create on demand). With the switch on and the DRA values, the rewritten helper writes its claims
into the text too, while the manifest migration leaves a string as it is: that value set cannot prove, and the
refusal used to say only which field differed. It now names the object and key that hold the device request as text
and what to do instead.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "held.job" -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: train:1
          resources:
            {{- toYaml .Values.train.resources | nindent 12 }}
{{- end -}}
"""

JOB = """\
{{- if not .Values.onDemand }}
{{ include "held.job" . }}
{{- end }}
"""

CONFIGMAP = """\
{{- if .Values.onDemand }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-job-template
data:
  job.yaml: |
    {{- include "held.job" . | nindent 4 }}
{{- end }}
"""

# a server that asks for a GPU whatever onDemand is (jump-cannon's nightly CronJob beside its RayCluster)
SERVE = deployment(
    "{{ .Release.Name }}-serve",
    """\
      containers:
        - name: serve
          image: serve:1
          resources:
            {{- toYaml .Values.serve.resources | nindent 12 }}
""",
)

VALUES = "onDemand: false\n" + "".join(
    f"{k}:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n" for k in ("train", "serve")
)


def test_a_manifest_the_helper_also_renders_as_text_is_named_with_what_to_do(tmp_path: Path) -> None:
    files = {
        "values.yaml": VALUES,
        "templates/_helpers.tpl": HELPERS,
        "templates/job.yaml": JOB,
        "templates/configmap.yaml": CONFIGMAP,
        "templates/serve.yaml": SERVE,
    }
    chart = chart_with(tmp_path, "held", files)
    original = {p: p.read_text() for p in chart.rglob("*") if p.is_file()}

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.proven
    assert "onDemand flipped to true" in outcome.manual, outcome.manual
    assert (
        "with these values ConfigMap/release-name-job-template job.yaml holds a device request as text"
        in outcome.manual
    ), outcome.manual
    assert "--strategy extended-resource" in outcome.manual
    assert {p: p.read_text() for p in chart.rglob("*") if p.is_file()} == original


def test_an_object_rendered_twice_is_named_once_and_the_verb_agrees() -> None:
    from ruamel.yaml import YAML

    from dramigrate.embedded import held_as_text

    pod = "kind: Pod\nspec:\n  containers:\n  - name: a\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    configmap = YAML().load(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\ndata:\n  pod.yaml: |\n"
        + "".join(f"    {line}\n" for line in pod.splitlines())
    )

    clause = held_as_text([configmap, configmap], load_rules(), {("ConfigMap", "held")})

    assert "ConfigMap/held pod.yaml holds a device request as text" in clause, clause
    assert clause.count("ConfigMap/held") == 1
