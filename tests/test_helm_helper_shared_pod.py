"""One resources helper included by two containers of one pod: an init container that pulls the model on the GPU
and the server (the shape of an ollama StatefulSet whose `model-pull` init container and `ollama` container each
`include "app.gpuResources" .`). The migration gives the pod one claim with one request that both containers
name (`request: gpu`); the rewrite wires the pod once and the helper names that request. Containers of one pod
that would need different claim entries are reported with what the helper cannot write. Real renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

HELPERS = """\
{{- define "app.gpuResources" -}}
{{- if eq .Values.tier "full" }}
requests:
  cpu: "2"
  nvidia.com/gpu: {{ .Values.gpu.count | quote }}
limits:
  nvidia.com/gpu: {{ .Values.gpu.count | quote }}
{{- else }}
requests:
  cpu: "1"
{{- end }}
{{- end }}
"""
MODEL = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: model
spec:
  serviceName: model
  selector:
    matchLabels: {app: model}
  template:
    metadata:
      labels: {app: model}
    spec:
      containers:
        - name: serve
          image: ollama
          resources:
            {{- include "app.gpuResources" . | nindent 12 }}
      initContainers:
        - name: pull
          image: ollama
          resources:
            {{- include "app.gpuResources" . | nindent 12 }}
"""
VALUES = "tier: full\ngpu:\n  count: 2\n"


def _render(chart: Path, extra: str) -> dict[str, Any]:
    from dramigrate.helm.render import RenderOptions, render_chart

    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    docs = [d for m in render_chart(chart, RenderOptions(values_files=(values,))) for d in yaml.safe_load_all(m.text)]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


def _manual(chart: Path) -> str:
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.proven
    return outcome.report()


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/model.yaml": MODEL, "values.yaml": VALUES}
    chart = chart_with(tmp_path_factory.mktemp("shared-pod"), "app", files)
    return chart, fix_chart(chart)  # was: manual, '2 include(s) of app.gpuResources, the migration adds claims to 1'


def test_the_init_container_and_the_server_share_the_pods_one_claim(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    objects = _render(chart, "gpu:\n  count: 3\n")
    pod = objects["StatefulSet/model"]["spec"]["template"]["spec"]
    assert len(pod["resourceClaims"]) == 1
    claim = pod["resourceClaims"][0]["name"]
    for container in (*pod["containers"], *pod["initContainers"]):
        assert container["resources"]["claims"] == [{"name": claim, "request": "gpu"}]
        assert "nvidia.com/gpu" not in str(container["resources"])
    templates = [d for key, d in objects.items() if key.startswith("ResourceClaimTemplate/")]
    assert len(templates) == 1
    assert templates[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3


def test_with_the_switch_off_both_containers_ask_the_device_plugin(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    pod = _render(chart, "dra:\n  enabled: false\n")["StatefulSet/model"]["spec"]["template"]["spec"]
    assert "resourceClaims" not in pod
    for container in (*pod["containers"], *pod["initContainers"]):
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}


def test_two_app_containers_of_one_pod_are_manual_with_each_request_named(tmp_path: Path) -> None:
    """Two app containers each get their own request (`serve-gpu`, `pull-gpu`), which one helper cannot name."""
    both = MODEL.replace("      initContainers:\n", "")
    files = {"templates/_helpers.tpl": HELPERS, "templates/model.yaml": both, "values.yaml": VALUES}
    report = _manual(chart_with(tmp_path, "app", files))
    assert "name different requests of the pod's claim" in report
    assert "serve names serve-gpu" in report and "pull names pull-gpu" in report


def test_containers_of_one_pod_given_different_arguments_are_manual(tmp_path: Path) -> None:
    helpers = HELPERS.replace(".Values.", ".root.Values.")
    model = MODEL.replace('"app.gpuResources" .', '"app.gpuResources" (dict "root" $ "part" "serve")', 1).replace(
        '"app.gpuResources" .', '"app.gpuResources" (dict "root" $ "part" "pull")'
    )
    files = {"templates/_helpers.tpl": helpers, "templates/model.yaml": model, "values.yaml": VALUES}
    report = _manual(chart_with(tmp_path, "app", files))
    assert "containers of one pod include the helper with different arguments" in report
