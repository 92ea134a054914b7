"""A pass-through chart (pattern B) with one Deployment per runtime, chosen by
`if eq "<runtime>" .Values.runtime.type`, both passing the same `runtime.inferenceApi.resources` map through (charts78
awss-sd-on-eks: sdwebui by default, comfyui as the other): fixed with its defaults, the rewrite passes the claims
through in both templates, so the one rewrite and its values-dra.yaml serve either runtime (was: manual, "with
runtime.type changed to "comfyui" and the DRA values files, the rewritten chart renders differently ...:
spec.template.spec.resourceClaims: expected [...], the rewritten chart has none": only the template the defaults
render was rewritten)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")


def _runtime(name: str, read: str) -> str:
    return f"""\
{{{{- if eq "{name}" .Values.runtime.type }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}-inference
  labels:
    runtime: {name}
spec:
  selector:
    matchLabels: {{app: inference}}
  template:
    metadata:
      labels: {{app: inference}}
    spec:
      containers:
      - name: {name}
        image: {name}:1
        resources:
          {{{{- toYaml .Values.{read} | nindent 10 }}}}
{{{{- end }}}}
"""


VALUES = """\
runtime:
  type: "sdwebui"
  inferenceApi:
    resources:
      limits:
        nvidia.com/gpu: "1"
      requests:
        nvidia.com/gpu: "1"
        cpu: 2500m
"""
FILES = {
    "values.yaml": VALUES,
    "templates/deployment-sdwebui.yaml": _runtime("sdwebui", "runtime.inferenceApi.resources"),
    "templates/deployment-comfyui.yaml": _runtime("comfyui", "runtime.inferenceApi.resources"),
}
# the map right beside the string that chooses the template: values-dra.yaml sets `runtime.resourceClaims`, a key of
# the map whose `type` the proof changes
BESIDE = {
    "values.yaml": 'runtime:\n  type: "sdwebui"\n  resources:\n    limits:\n      nvidia.com/gpu: "1"\n'
    '    requests:\n      nvidia.com/gpu: "1"\n      cpu: 2500m\n',
    "templates/deployment-sdwebui.yaml": _runtime("sdwebui", "runtime.resources"),
    "templates/deployment-comfyui.yaml": _runtime("comfyui", "runtime.resources"),
}


def _pods(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...]) -> dict[str, dict]:
    options = RenderOptions(values_files=files, set_values=sets)
    docs = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    return {d["metadata"]["labels"]["runtime"]: d["spec"]["template"]["spec"] for d in deployments}


@pytest.mark.parametrize("files", [FILES, BESIDE], ids=["nested map", "map beside the choice"])
def test_both_runtimes_take_the_claims_when_fixed_with_the_defaults(tmp_path: Path, files: dict[str, str]) -> None:
    """Fixed with the defaults (which render sdwebui alone), the proof's value set that chooses comfyui is proven with
    values-dra.yaml too (the map beside `runtime.type` as well: was proven with the device-plugin values alone, and
    rendered a comfyui pod whose container names a claim the pod does not have): with it either runtime's pod claims
    the GPU and asks the device plugin for none; without it, either runtime's pod renders as the original chart's."""
    chart = chart_with(tmp_path, "sd", files)
    original = {runtime: _pods(chart, (), (f"runtime.type={runtime}",)) for runtime in ("sdwebui", "comfyui")}
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert 'runtime.type changed to "comfyui" (DRA values: values-dra.yaml)' in outcome.report(), outcome.report()
    write_changes(outcome)
    dra = (chart / "values-dra.yaml",)
    for runtime in ("sdwebui", "comfyui"):
        sets = (f"runtime.type={runtime}",)
        assert _pods(chart, (), sets) == original[runtime]
        (pod,) = _pods(chart, dra, sets).values()
        assert pod["containers"][0]["resources"] == {"requests": {"cpu": "2500m"}, "claims": [{"name": "gpu"}]}, pod
        assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"], pod


def test_the_defaults_and_the_other_runtime_write_the_same_templates(tmp_path: Path) -> None:
    """The chart fixed with its defaults and a copy fixed with `-f comfyui.yaml` get the same template changes: the
    rewrite does not depend on which runtime the values fixed with choose."""
    written = []
    for given in ((), ("comfyui.yaml",)):
        chart = chart_with(tmp_path / str(len(given)), "sd", FILES)
        (tmp_path / "comfyui.yaml").write_text('runtime:\n  type: "comfyui"\n')
        files = tuple(tmp_path / f for f in given)
        outcome = run_chart(chart, ChartOptions(values_files=files), RULES, Settings(), T136, "fix")
        assert outcome.proven, outcome.report()
        written.append({c.rel: c.after for c in outcome.changes if c.rel.startswith("templates/")})
    assert sorted(written[0]) == [
        "templates/deployment-comfyui.yaml",
        "templates/deployment-sdwebui.yaml",
        "templates/resourceclaimtemplates.yaml",
    ]
    assert written[0] == written[1]
