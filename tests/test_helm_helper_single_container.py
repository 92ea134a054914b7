"""A helper that writes the resources of a KServe InferenceService's `predictor.model` (a single container, no
`containers:` list) under a values guard. Was: the helper rewrite refused every such call site with "no `containers:`
above the helper's call site"; now the pod's `resourceClaims` go under `predictor:`, the claim in the helper, proven.

And a template that reaches the same helper a second way, through another helper that adjusts the map first and then
includes it with a `dict` (seen in thom-caisat's swinir-inferenceservice.yaml): was refused with "a device request
there does not come from <helper>", which names no line and is false. Now the chart's `dra` goes into that dict and
the template's pod is wired with the other helper's lines replayed; where they cannot be (a line of its own writes
text), the refusal names the template line, each helper of the way, why, and what a maintainer can do.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "serve.modelResources" -}}
{{- $root := index . "root" -}}
{{- $resources := index . "resources" -}}
limits:
  memory: {{ $resources.limits.memory | quote }}
  {{- if and (index . "gpu") $root.Values.gpuAvailable }}
  nvidia.com/gpu: "1"
  {{- end }}
{{- end }}
"""
# a second way to the helper: the map adjusted first, then passed on
ADJUSTED = """\
{{- define "serve.bigModelResources" -}}
{{- $resources := deepCopy .Values.big.resources -}}
{{- $_ := set $resources.limits "memory" ($resources.limits.memory | default "16Gi") -}}
{{- include "serve.modelResources" (dict "root" . "resources" $resources "gpu" true) -}}
{{- end }}
"""


def isvc(name: str, include: str) -> str:
    return f"""\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {name}
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    minReplicas: 1
    model:
      modelFormat:
        name: onnx
      resources:
        {{{{- {include} | nindent 8 }}}}
      storageUri: oci://example.com/{name}:1
"""


DETECT = isvc("detect", 'include "serve.modelResources" (dict "root" . "resources" .Values.detect.resources "gpu" 1)')
VALUES = "gpuAvailable: true\ndetect:\n  resources:\n    limits:\n      memory: 4Gi\n"


def model(chart: Path, *sets: str) -> list[dict[str, Any]]:
    out = render_chart(chart, RenderOptions(set_values=sets))
    docs = [d for m in out for d in yaml.safe_load_all(m.text) if d]
    return [d["spec"]["predictor"] for d in docs if d["kind"] == "InferenceService"]


def test_a_helper_writing_a_single_containers_resources_is_rewritten(tmp_path: Path) -> None:
    files = {"templates/_helpers.tpl": HELPERS, "templates/detect.yaml": DETECT, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "serve", files)
    fix_chart(chart)
    (on,) = model(chart)
    assert "nvidia.com/gpu" not in on["model"]["resources"]["limits"], on
    assert on["model"]["resources"]["claims"] == [{"name": "gpu"}]
    (claim,) = on["resourceClaims"]  # the pod's, beside `model:`, not in the container
    kinds = [d["kind"] for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    assert kinds == ["InferenceService", "ResourceClaimTemplate"], kinds
    (off,) = model(chart, "dra.enabled=false")
    assert off["model"]["resources"]["limits"]["nvidia.com/gpu"] == "1" and "resourceClaims" not in off, off


def second_way_chart(root: Path, adjusted: str) -> tuple[Path, str]:
    big = isvc("big", 'include "serve.bigModelResources" .')
    files = {
        "templates/_helpers.tpl": HELPERS + adjusted,
        "templates/detect.yaml": DETECT,
        "templates/big.yaml": big,
        "values.yaml": VALUES + "big:\n  resources:\n    limits: {}\n",
    }
    return chart_with(root, "serve", files), big


def test_a_second_way_to_the_helper_is_wired_through_the_helper_that_builds_the_map(tmp_path: Path) -> None:
    chart, _ = second_way_chart(tmp_path, ADJUSTED)
    fix_chart(chart)
    big, detect = model(chart)
    assert big["model"]["resources"]["limits"] == {"memory": "16Gi"}  # the map the helper adjusts, its key gone
    assert big["model"]["resources"]["claims"] == [{"name": "gpu"}] and big["resourceClaims"], big
    assert detect["resourceClaims"] and big["resourceClaims"][0]["resourceClaimTemplateName"].startswith("big-")
    off = model(chart, "dra.enabled=false")
    assert [p["model"]["resources"]["limits"]["nvidia.com/gpu"] for p in off] == ["1", "1"], off
    assert not any("resourceClaims" in p for p in off)


def test_a_second_way_that_writes_text_of_its_own_is_refused_at_its_line(tmp_path: Path) -> None:
    adjusted = ADJUSTED.replace('"gpu" true) -}}', '"gpu" true) | nindent 0 }}')
    chart, big = second_way_chart(tmp_path, adjusted)
    before = {p.name: p.read_text() for p in (chart / "templates").iterdir()}

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.proven
    at = big.splitlines().index(next(x for x in big.splitlines() if "bigModelResources" in x)) + 1
    hop = (HELPERS + adjusted).splitlines().index(next(x for x in adjusted.splitlines() if "include" in x)) + 1
    detect = DETECT.splitlines().index(next(x for x in DETECT.splitlines() if "include" in x)) + 1
    assert (
        f"templates/big.yaml:{at} includes serve.bigModelResources, which includes serve.modelResources at "
        f"templates/_helpers.tpl:{hop}, while templates/detect.yaml:{detect} include serve.modelResources directly"
    ) in outcome.manual, outcome.manual
    assert "(serve.bigModelResources does not include serve.modelResources once, alone on its line" in outcome.manual
    assert "have templates/big.yaml include serve.modelResources itself" in outcome.manual
    assert before == {p.name: p.read_text() for p in (chart / "templates").iterdir()}
