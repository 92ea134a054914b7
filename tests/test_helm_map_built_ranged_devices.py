"""A map built in a variable inside a `range` over models (pattern F), each model picking its device by a values
key (`device: hpu` or `device: gpu-amd`, the resource name read from `deviceConfigs`), so one render holds a pod per
model, each asking for a different device resource. Each pod's container asks for one resource, so the DRA branch
takes each pod's claim spec by the resource its map holds, as it does for one pod whose resource comes from values;
it used to refuse ("2 pods of the template ask for devices, not with one claim shape"). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

TEMPLATE = """\
{{- range $name, $model := .Values.models }}
{{- $config := index $.Values.deviceConfigs ($model.device | default $.Values.device) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            {{- $type := $config.acceleratorType }}
            {{- $res := $model.resources | deepCopy }}
            {{- if and $type (not (hasKey $res.limits $type)) }}
              {{- $_ := set $res.limits $type ($model.accelerators | default 1) }}
            {{- end }}
            {{- toYaml $res | nindent 12 }}
{{- end }}
"""
VALUES = """\
device: hpu
deviceConfigs:
  hpu:
    acceleratorType: habana.ai/gaudi
  gpu-amd:
    acceleratorType: amd.com/gpu
  cpu: {}
models:
  small:
    resources:
      limits: {cpu: "2"}
"""
MODELS = """\
models:
  small:
    accelerators: 2
    resources:
      limits: {cpu: "2"}
  large:
    device: gpu-amd
    resources:
      limits: {cpu: "4"}
"""


def _pods(chart: Path, *files: Path) -> dict[str, Any]:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


def _classes(chart: Path, *files: Path) -> list[str]:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    return sorted(
        r["exactly"]["deviceClassName"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
        for r in d["spec"]["spec"]["devices"]["requests"]
    )


def test_pods_of_a_range_asking_for_different_devices_get_the_rewrite(tmp_path: Path) -> None:
    """With the switch on (the default) each model's pod claims its own device through a claim template of its
    device's class, the counts kept; with it off the chart renders its device-plugin requests as before."""
    chart = chart_with(tmp_path, "models", {"values.yaml": VALUES, "templates/models.yaml": TEMPLATE})
    models = tmp_path / "models.yaml"
    models.write_text(MODELS)
    fix_chart(chart, values=(models,))  # was: manual, "2 pods of the template ask for devices"
    off_file = tmp_path / "off.yaml"
    off_file.write_text("dra: {enabled: false}\n")
    off = _pods(chart, models, off_file)
    assert off["small"]["containers"][0]["resources"]["limits"]["habana.ai/gaudi"] == 2
    assert off["large"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] == 1
    pods = _pods(chart, models)  # the switch is on unless fix was given --opt-in
    for pod in pods.values():
        limits = pod["containers"][0]["resources"]["limits"]
        assert not {"habana.ai/gaudi", "amd.com/gpu"} & set(limits) and pod["resourceClaims"]
    assert len(set(_classes(chart, models))) == 2
