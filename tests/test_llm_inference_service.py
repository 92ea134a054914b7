"""KServe's LLMInferenceService (serving.kserve.io, the llm-d based CRD): its pod templates are core PodSpecs
(`spec.template`, `spec.worker`, `spec.prefill.template`, `spec.prefill.worker`, `spec.router.scheduler.template`),
which its CRD keeps the claim fields in from its first release, KServe 0.16.0. The kind is data in
rules/workloads.yaml, so lint, the manifest migration and the chart rewrite all know it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LLMISVC = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: coder
spec:
  model:
    uri: hf://example/coder
    name: coder
  template:
    containers:
      - name: main
        resources:
          limits:
            nvidia.com/gpu: "{count}"
  prefill:
    template:
      containers:
        - name: main
          resources:
            limits:
              nvidia.com/gpu: "1"
"""


def _run(text: str) -> FileResult:
    result = run_file(Job("in.yaml", text.encode(), True), load_rules(), Settings(), Target.parse("1.36"))
    assert result.error is None, str(result.error)
    return result


def test_the_decode_and_prefill_templates_get_claims() -> None:
    result = _run(LLMISVC.format(count=2))
    assert result.rewritten is not None
    out = [d for d in yaml.safe_load_all(result.rewritten) if d]
    spec = out[0]["spec"]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in out
        if d["kind"] == "ResourceClaimTemplate"
    }
    for pod, count in ((spec["template"], 2), (spec["prefill"]["template"], 1)):
        claim = pod["resourceClaims"][0]
        assert pod["containers"][0]["resources"] == {"claims": [{"name": claim["name"]}]}
        assert counts[claim["resourceClaimTemplateName"]] == count
    assert spec["model"] == {"uri": "hf://example/coder", "name": "coder"}
    warnings = [f for f in result.findings if f.rule == "operator-version"]
    assert [("KServe 0.16.0" in f.message) for f in warnings] == [True]
    assert "unknown-kind" not in {f.rule for f in result.findings}


TEMPLATE = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: {{ .Release.Name }}
spec:
  model:
    uri: {{ .Values.model }}
  template:
    containers:
      - name: main
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpus | quote }}
"""


def test_a_chart_of_one_is_rewritten_and_proven(tmp_path: Path) -> None:
    values = "model: hf://example/coder\ngpus: 4\n"
    chart = chart_with(tmp_path, "coder", {"templates/llm.yaml": TEMPLATE, "values.yaml": values})
    fix_chart(chart)  # was: "the migration adds no claim to this template's pods" (the kind was unknown)
    given = tmp_path / "on.yaml"
    given.write_text("dra: {enabled: true}\n")
    docs: list[Any] = [
        d for m in render_chart(chart, RenderOptions(values_files=(given,))) for d in yaml.safe_load_all(m.text) if d
    ]
    pod = next(d for d in docs if d["kind"] == "LLMInferenceService")["spec"]["template"]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"].get("limits", {})
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
