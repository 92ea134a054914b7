"""A helper that writes its device key in several branches of one `if`/`else if` chain, each with its own literal
count, included with a `dict` built at the call site and with a values object (the shape of coreweave's
cosmos3.resources): one count per branch in `<helper>.draCount`, the chart's own `dra` passed into the built
`dict` so that `dra.enabled` in values.yaml switches that call site, and a call site whose literal argument never
asks for a device left alone. Real renders; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

HELPERS = """\
{{- define "app.resources" -}}
{{- $gpu := int .gpu -}}
{{- if eq $gpu 0 }}
requests:
  cpu: "1"
{{- else if eq $gpu 1 }}
requests:
  cpu: "4"
  nvidia.com/gpu: "1"
limits:
  nvidia.com/gpu: "1"
{{- else if eq $gpu 4 }}
requests:
  cpu: "16"
  nvidia.com/gpu: "4"
limits:
  nvidia.com/gpu: "4"
{{- end }}
{{- end -}}
"""
SERVE = deployment(
    "serve",
    """\
      containers:
        - name: serve
          image: serve
          resources:
            {{- include "app.resources" (dict "gpu" 4) | nindent 12 }}
""",
)
JOBS = """\
{{- range $name, $step := .Values.steps }}
{{- if $step.enabled }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: step-{{ $name }}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: {{ $name }}
          image: step
          resources:
            {{- include "app.resources" $step | nindent 12 }}
{{- end }}
{{- end }}
"""
WORKBENCH = """\
apiVersion: v1
kind: Pod
metadata:
  name: workbench
spec:
  containers:
    - name: workbench
      image: workbench
      resources:
        {{- include "app.resources" (dict "gpu" 0) | nindent 8 }}
"""
VALUES = "steps:\n  train:\n    enabled: true\n    gpu: 1\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/serve.yaml": SERVE,
        "templates/jobs.yaml": JOBS,
        "templates/workbench.yaml": WORKBENCH,
        "values.yaml": VALUES,
    }
    chart = chart_with(tmp_path_factory.mktemp("branches"), "app", files)
    return chart, fix_chart(chart)  # was: manual, 'the helper writes different device keys or counts'


def _render(chart: Path, extra: str) -> dict[str, Any]:
    from dramigrate.helm.render import RenderOptions, render_chart

    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    docs = [d for m in render_chart(chart, RenderOptions(values_files=(values,))) for d in yaml.safe_load_all(m.text)]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


def _claim_counts(objects: dict[str, Any]) -> list[int]:
    return sorted(
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for key, d in objects.items()
        if key.startswith("ResourceClaimTemplate/")
    )


def test_each_branch_count_becomes_its_call_sites_claim(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    objects = _render(chart, "{}\n")
    assert _claim_counts(objects) == [1, 4]
    serve = objects["Deployment/serve"]["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in str(serve["containers"][0]["resources"])
    assert serve["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]


def test_the_charts_own_dra_switch_reaches_a_call_site_that_builds_its_argument(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    objects = _render(chart, "dra:\n  enabled: false\n")
    serve = objects["Deployment/serve"]["spec"]["template"]["spec"]
    assert serve["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert "resourceClaims" not in serve
    assert _claim_counts(objects) == [1]  # the step keeps its own switch (steps.train.dra.enabled)


def test_a_call_site_whose_literal_argument_asks_for_no_device_is_left_alone(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert (chart / "templates/workbench.yaml").read_text() == WORKBENCH
    assert "templates/workbench.yaml" not in {c.rel for c in outcome.changes}


def test_the_argument_built_at_the_call_site_is_written_once(fixed: tuple[Path, Any]) -> None:
    """What a maintainer reviews in serve.yaml: the argument the rewrite builds (the call site's `dict "gpu" 4` and
    the chart's `dra`) is one variable, defined once and passed by the call site, the pod's claim, its toleration
    and the claim template. Was: the whole `(dict "gpu" 4 "dra" (dig "dra" (dict) $.Values.AsMap))` written six
    times (coreweave-cosmos3's serving.yaml)."""
    chart, outcome = fixed
    template = (chart / "templates/serve.yaml").read_text()
    assert template.count('dict "gpu" 4') == 1
    assert '{{- $resourcesArgs := dict "gpu" 4 "dra" (dig "dra" (dict) .Values.AsMap) }}' in template
    assert '{{- include "app.resources" $resourcesArgs | nindent 12 }}' in template
    assert template.count("$resourcesArgs") >= 4
    assert outcome.proven


def test_a_branch_only_a_switched_off_pod_renders_is_rewritten_too(tmp_path: Path) -> None:
    """cosmos3's serving Deployment, which asks for the 8-GPU branch, renders only with `rayServe.enabled` (off by
    default) and the user's values ask for the 1-GPU branch alone. Was: manual, "with serve.enabled flipped to true
    ... the rewritten chart renders differently from the migrated original rendering" (the rewrite took only the
    branch the user's values render, the proof's flip rendered the other). Now the keys of every branch the proof's
    value sets render are rewritten: with the serving pod on, it takes a claim of 4, no device-plugin key left."""
    serve = "{{- if .Values.serve.enabled }}\n" + SERVE + "{{- end }}\n"
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/serve.yaml": serve,
        "templates/jobs.yaml": JOBS,
        "values.yaml": "serve:\n  enabled: false\n" + VALUES,
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    objects = _render(chart, "serve:\n  enabled: true\n")
    assert _claim_counts(objects) == [1, 4]
    pod = objects["Deployment/serve"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
