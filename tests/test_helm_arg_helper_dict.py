"""A helper that writes `resources:` from the `resources` of a dict it is called with (`include "app.resources" (dict
"resources" .Values.worker.resources "context" $)`, the define writing the map under `with .resources`): fix refused
it ("no line of a helper in this chart writes the device key ..."). The call is now read as the `toYaml` of the
values map the dict hands on, and the pass-through takes it: the map's `claims` pass through the helper, the pod gets
`worker.resourceClaims`; proven by (L) and (D). Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = """\
worker:
  resources:
    limits:
      nvidia.com/gpu: 2
proxy:
  resources:
    limits:
      cpu: 1
"""
HELPER = """\
{{- define "app.resources" -}}
{{- with .resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
"""
TEMPLATE = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
        - name: worker
          image: worker:1
          ports:
            - containerPort: 8000
          {{- include "app.resources" (dict "resources" .Values.worker.resources "context" $) | nindent 10 }}
        - name: proxy
          image: proxy:1
          {{- include "app.resources" (dict "resources" .Values.proxy.resources "context" $) | nindent 10 }}
""",
)


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


def test_a_helper_given_a_dict_with_the_values_map_takes_the_pass_through(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_resources.tpl": HELPER, "templates/worker.yaml": TEMPLATE}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)  # the values as they were: the same objects
    docs = _docs(chart, (chart / "values-dra.yaml",))
    pod = docs["Deployment", "release-name-worker"]["spec"]["template"]["spec"]
    worker, proxy = pod["containers"]
    assert worker["resources"] == {"claims": [{"name": "gpu"}]}
    assert proxy["resources"] == {"limits": {"cpu": 1}}  # the other map the helper is called with: as it was
    (claim,) = pod["resourceClaims"]
    spec = docs["ResourceClaimTemplate", claim["resourceClaimTemplateName"]]["spec"]["spec"]
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2


MODELS = """\
models:
  llama:
    resources:
      limits:
        nvidia.com/gpu: 1
  phi:
    resources:
      limits:
        cpu: 2
"""
RANGED = """\
{{- range $name, $m := .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  selector:
    matchLabels:
      app: {{ $name }}
  template:
    metadata:
      labels:
        app: {{ $name }}
    spec:
      containers:
        - name: {{ $name }}
          image: server:1
          {{- include "app.resources" (dict "resources" $m.resources) | nindent 10 }}
{{- end }}
"""


def test_a_dict_with_the_map_of_a_range_item_takes_the_pass_through(tmp_path: Path) -> None:
    """`range $name, $m := .Values.models` with `include "app.resources" (dict "resources" $m.resources)`: each
    item's map passes its claims, the item's pod gets its `resourceClaims`."""
    files = {"values.yaml": MODELS, "templates/_resources.tpl": HELPER, "templates/models.yaml": RANGED}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)
    docs = _docs(chart, (chart / "values-dra.yaml",))
    llama = docs["Deployment", "release-name-llama"]["spec"]["template"]["spec"]
    assert llama["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert len(llama["resourceClaims"]) == 1
    assert docs["Deployment", "release-name-phi"] == _docs(original)["Deployment", "release-name-phi"]
