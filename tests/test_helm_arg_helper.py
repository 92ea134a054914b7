"""Pattern B through a helper's argument: `{{- include "app.resources" .Values.server | nindent 10 }}`, the helper
writing `resources:` with `toYaml .resources.limits` and `toYaml .resources.requests` (a company's chart serves its
seven workloads so). The call reads as the values map `server.resources` passed through: the pass-through rewrite,
the map's claims rendered by the helper, the pod's resourceClaims beside the call site's containers only.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

HELPER = """\
{{- define "app.resources" -}}
{{- if .resources }}
resources:
  {{- if .resources.limits }}
  limits:
    {{- toYaml .resources.limits | nindent 4 }}
  {{- end }}
  {{- if .resources.requests }}
  requests:
    {{- toYaml .resources.requests | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}
{{- define "app.tolerations" -}}
{{- if .tolerations }}
tolerations:
  {{- toYaml .tolerations | nindent 2 }}
{{- end }}
{{- end }}
"""

WORKLOAD = """\
{{- if .Values.NAME.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-NAME
spec:
  selector:
    matchLabels: {app: NAME}
  template:
    metadata:
      labels: {app: NAME}
    spec:
      {{- include "app.tolerations" .Values.NAME | nindent 6 }}
      containers:
        - name: NAME
          image: NAME:1
          env:
            {{- range .Values.NAME.env }}
            - name: {{ .name }}
              value: {{ required "each env item needs a value" .value | quote }}
            {{- end }}
          {{- include "app.resources" .Values.NAME | nindent 10 }}
{{- end }}
"""

VALUES = """\
web:
  enabled: true
  resources:
    limits:
      memory: 1Gi
  env: []
server:
  enabled: ENABLED
  env: []
  tolerations:
    - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}
  resources:
    limits:
      memory: 8Gi
      nvidia.com/gpu: 1
    requests:
      cpu: 1
"""


def _chart(tmp_path: Path, enabled: str) -> Path:
    files = {
        "templates/_helpers.tpl": HELPER,
        "templates/web.yaml": WORKLOAD.replace("NAME", "web"),
        "templates/server.yaml": WORKLOAD.replace("NAME", "server"),
        "values.yaml": VALUES.replace("ENABLED", enabled),
    }
    return chart_with(tmp_path, "app", files)


def _pods(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    options = RenderOptions(values_files=files, set_values=sets)
    docs = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


def test_a_helper_given_a_values_map_passes_its_resources_through(tmp_path: Path) -> None:
    """Was: manual, 'no line of a helper in this chart writes the device key, nor a toYaml of a map it builds'. The
    pod's tolerations come from a helper given the same map (`include "app.tolerations" .Values.server`): the
    migration's toleration joins that list in the DRA values (found with a marker in the lists named `tolerations`
    when a marker in every list fails the render: `required` on each env item's value)."""
    chart = _chart(tmp_path, "true")
    before = _pods(chart, ())
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _pods(chart, ()) == before  # without the DRA values, as before
    pods = _pods(chart, (chart / "values-dra.yaml",))
    server = pods["release-name-server"]
    assert server["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in json.dumps(server["containers"][0]["resources"])
    assert server["containers"][0]["resources"]["limits"] == {"memory": "8Gi"}
    assert [c["name"] for c in server["resourceClaims"]] == ["gpu"]
    assert [t["key"] for t in server["tolerations"]] == ["sku", "nvidia.com/gpu"]
    assert pods["release-name-web"] == before["release-name-web"]  # the helper's other caller: untouched


def test_a_values_file_whose_device_keys_a_set_switch_turns_on_gets_its_own_dra_variant(tmp_path: Path) -> None:
    """The user's -f file repeats the chart's device keys under a switch the user turns on with --set: the file gets
    its DRA variant, which works wherever it stands among the -f files (was: values-dra.yaml for the chart's
    defaults, which the user's file, given after it, turned back to the device-plugin request)."""
    chart = _chart(tmp_path, "false")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("server:\n  resources:\n    limits:\n      memory: 8Gi\n      nvidia.com/gpu: 1\n")
    options = ChartOptions(values_files=(gpu,), set_values=("server.enabled=true",))
    outcome = run_chart(chart, options, RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert not (chart / "values-dra.yaml").exists()
    server = _pods(chart, (tmp_path / "gpu-dra.yaml",), ("server.enabled=true",))["release-name-server"]
    assert "nvidia.com/gpu" not in json.dumps(server["containers"][0]["resources"])
    assert [c["name"] for c in server["resourceClaims"]] == ["gpu"]
