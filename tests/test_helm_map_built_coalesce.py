"""A container's resources map picked by the template from a GPU literal and a CPU literal, each `coalesce`d with
the values map (an on-prem ML chart: `$resources = coalesce .Values.ml.resources (dict "limits" (dict "memory" "8Gi"
"nvidia.com/gpu" "1") ...)` when `ml.useGpu`, the same without the GPU otherwise, then `toYaml $resources`), and the
pod's tolerations written by a helper that joins the chart's and the workload's lists. The device key is a `dict`
entry that is not the dict's first: was manual, 'does not take its resources whole from one values map'; now the map
rewrite (pattern F) behind dra.enabled, proven. The chart ignores its own values.yaml (.helmignore), as that chart
does, so every render names it with -f. Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = """\
{{- $tolerations := .Values.ml.tolerations }}
{{- $resources := dict -}}
{{- if .Values.ml.useGpu -}}
  {{- $resources = coalesce .Values.ml.resources (dict "limits" (dict "memory" "8Gi" "nvidia.com/gpu" "1") \
"requests" (dict "memory" "2Gi" "cpu" "2")) -}}
{{- else -}}
  {{- $resources = coalesce .Values.ml.resources (dict "limits" (dict "memory" "8Gi") "requests" (dict "memory" "2Gi" \
"cpu" "2")) -}}
{{- end -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ml
spec:
  selector:
    matchLabels: {app: ml}
  template:
    metadata:
      labels: {app: ml}
    spec:
      nodeSelector:
        {{ .Values.ml.nodeSelector | toYaml | nindent 8 }}
      tolerations:
        {{- include "ml.tolerations" (list $ $tolerations) | nindent 8 }}
      containers:
      - name: ml
        image: ml:1
        resources:
            {{- toYaml $resources | nindent 10 }}
      volumes:
        - name: tmp
          emptyDir: {}
"""
HELPERS = """\
{{- define "ml.tolerations" -}}
{{- $top := first . }}
{{- $tolerations := list }}
{{- if $top.Values.tolerations }}{{ $tolerations = concat $tolerations $top.Values.tolerations }}{{ end }}
{{- with index . 1 }}{{ $tolerations = concat $tolerations . }}{{ end }}
{{- if $tolerations }}
{{- toYaml $tolerations }}
{{- end }}
{{- end }}
"""
VALUES = """\
ml:
  # useGpu picks the GPU image and resources
  useGpu: false
  nodeSelector: {}
  tolerations: []
"""
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _texts(chart: Path, sets: tuple[str, ...] = (), more: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    options = RenderOptions(values_files=(chart / "values.yaml", *more), set_values=sets)
    return [(m.source, m.text) for m in render_chart(chart, options)]


def _pod_and_claim(chart: Path, sets: tuple[str, ...], more: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Any]:
    docs = [d for _, text in _texts(chart, sets, more) for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    if not templates:
        return pod, None
    (template,) = templates
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    return pod, template["spec"]["spec"]["devices"]["requests"][0]["exactly"]


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("coalesce")
    files = {
        "templates/ml.yaml": DEPLOYMENT,
        "templates/_helpers.tpl": HELPERS,
        "values.yaml": VALUES,
        ".helmignore": "values.yaml\n",
    }
    original = chart_with(root / "original", "ml", files)
    chart = shutil.copytree(original, root / "fixed" / "ml")
    options = ChartOptions(values_files=(chart / "values.yaml",), set_values=("ml.useGpu=true",))
    outcome = run_chart(chart, options, load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()  # was: manual, 'does not take its resources whole from one values map'
    assert any("ml.useGpu flipped to false" in c for c in outcome.checked)
    write_changes(outcome)
    assert yaml.safe_load((chart / "values.yaml").read_text())["dra"]["enabled"] is True  # the switch
    return original, chart


@pytest.mark.parametrize("gpu", ["true", "false"])
def test_switch_off_renders_as_before(charts: tuple[Path, Path], gpu: str) -> None:
    original, chart = charts
    sets = (f"ml.useGpu={gpu}",)
    assert _texts(chart, (*sets, "dra.enabled=false")) == _texts(original, sets)


def test_switch_on_claims_the_gpu_of_the_literal(charts: tuple[Path, Path]) -> None:
    _, chart = charts
    pod, request = _pod_and_claim(chart, ("ml.useGpu=true",))
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 1)
    resources = pod["containers"][0]["resources"]
    assert resources["limits"] == {"memory": "8Gi"} and resources["claims"] == [{"name": "gpu"}]
    assert pod["tolerations"] == [TOLERATION]
    pod, request = _pod_and_claim(chart, ("ml.useGpu=false",))
    assert request is None and "claims" not in pod["containers"][0]["resources"] and not pod.get("tolerations")


def test_a_values_map_and_a_toleration_the_values_give(charts: tuple[Path, Path], tmp_path: Path) -> None:
    """The user's own map wins the coalesce: its count is the claim's; a toleration the values give already is not
    written twice (the migration adds none then)."""
    _, chart = charts
    user = tmp_path / "user.yaml"
    user.write_text(
        yaml.safe_dump(
            {
                "ml": {"useGpu": True, "resources": {"limits": {"nvidia.com/gpu": 2, "memory": "4Gi"}}},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            }
        )
    )
    pod, request = _pod_and_claim(chart, (), (user,))
    assert request["count"] == 2
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "4Gi"}, "claims": [{"name": "gpu"}]}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
