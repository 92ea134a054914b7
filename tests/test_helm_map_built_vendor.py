"""A vendor chosen by a values key, its device entry merged into the values' limits (pattern F, tvarr's shape):
`$limits := .Values.resources.limits | default dict`, then `merge $limits (dict "nvidia.com/gpu" 1)` under
`if eq .Values.gpu.type "nvidia"` and another vendor's entry under `else if` (or `set $limits "amd.com/gpu" N`).
The values may name a device in those limits already (the chart's README example sets `nvidia.com/gpu: 1` beside
`gpu.type: nvidia`): with another vendor chosen the container asks for both at once, and the DRA branch keeps each
one's count (one request each, as the manifest migration writes them). A second workload of the same shape that the
user's values leave off (a worker whose GPU the proof turns on) is rewritten with the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

WORKLOAD = """\
{{- if .Values.@ENABLED@ }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-@NAME@
spec:
  selector:
    matchLabels: {app: @NAME@}
  template:
    metadata:
      labels: {app: @NAME@}
    spec:
      containers:
        - name: @NAME@
          image: app:1
          resources:
            {{- $resources := .Values.@V@.resources | default dict }}
            {{- $limits := $resources.limits | default dict }}
            {{- if and .Values.@V@.gpu.enabled (eq .Values.@V@.gpu.type "nvidia") }}
            {{- $limits = merge $limits (dict "nvidia.com/gpu" 1) }}
            {{- else if and .Values.@V@.gpu.enabled (eq .Values.@V@.gpu.type "amd") }}
            {{- $_ := set $limits "amd.com/gpu" (.Values.@V@.gpu.amd.count | default 1) }}
            {{- end }}
            {{- if $limits }}
            limits:
              {{- toYaml $limits | nindent 14 }}
            {{- end }}
            {{- with $resources.requests }}
            requests:
              {{- toYaml . | nindent 14 }}
            {{- end }}
      {{- with .Values.@V@.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
"""
VALUES = """\
app:
  enabled: true
  # -- GPU support: type nvidia or amd
  gpu:
    enabled: false
    type: ""
    amd:
      count: 1
  resources: {}
  tolerations: []
worker:
  enabled: false
  gpu:
    enabled: false
    type: ""
    amd:
      count: 1
  resources: {}
  tolerations: []
"""
# the README example: the vendor, and the device in the values limits as well
NVIDIA = "app:\n  gpu:\n    enabled: true\n    type: nvidia\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
WORKER = "worker:\n  enabled: true\n  gpu:\n    enabled: true\n    type: amd\n    amd:\n      count: 2\n"


def _workload(name: str, enabled: str, values: str) -> str:
    return WORKLOAD.replace("@ENABLED@", enabled).replace("@NAME@", name).replace("@V@", values)


def _chart(tmp_path: Path) -> Path:
    files = {
        "values.yaml": VALUES,
        "templates/app.yaml": _workload("app", "app.enabled", "app"),
        "templates/worker.yaml": _workload("worker", "worker.enabled", "worker"),
    }
    return chart_with(tmp_path, "media", files)


def _render(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> str:
    options = RenderOptions(values_files=values, set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _claimed(stream: str) -> list[tuple[Any, ...]]:
    """Per workload: the pod's claims and tolerations, the container's resources and its claim template's spec (the
    API's defaults left out: the migration writes `allocationMode: ExactCount`, the chart leaves it to the API)."""
    from dramigrate.helm.prove import without_api_defaults

    docs = [d for d in yaml.safe_load_all(stream) if d]
    templates = {
        d["metadata"]["name"]: without_api_defaults(d["spec"]) for d in docs if d["kind"] == "ResourceClaimTemplate"
    }
    out = []
    for d in docs:
        if d["kind"] == "Deployment":
            pod = d["spec"]["template"]["spec"]
            claims = pod.get("resourceClaims", [])
            specs = [templates[c["resourceClaimTemplateName"]] for c in claims]
            out.append(([c["name"] for c in claims], pod.get("tolerations"), pod["containers"][0]["resources"], specs))
    return out


def _migrated(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> str:
    code, out, err = dramigrate_in_process(["fix", "-"], stdin=_render(chart, values, sets))
    assert code == 0, err
    return out


def test_a_vendor_entry_merged_into_values_limits_that_name_another_device(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "fixed")
    original = _chart(tmp_path / "original")
    nvidia = tmp_path / "nvidia.yaml"
    nvidia.write_text(NVIDIA)
    fix_chart(chart, values=(nvidia,))

    both = ("app.gpu.type=amd", "app.gpu.amd.count=3")  # the values' nvidia.com/gpu and the amd branch's entry
    for sets in ((), both, ("app.gpu.enabled=false",)):
        assert _claimed(_render(chart, (nvidia,), sets)) == _claimed(_migrated(original, (nvidia,), sets))
        off = (*sets, "dra.enabled=false")
        assert _render(chart, (nvidia,), off) == _render(original, (nvidia,), sets)
    (claimed,) = _claimed(_render(chart, (nvidia,), both))
    requests = claimed[3][0]["spec"]["devices"]["requests"]
    assert [(r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests] == [
        ("gpu.amd.com", 3),
        ("gpu.nvidia.com", 1),
    ]


def test_a_second_workload_of_that_shape_the_values_leave_off_is_rewritten_too(tmp_path: Path) -> None:
    chart = _chart(tmp_path / "fixed")
    original = _chart(tmp_path / "original")
    worker = tmp_path / "worker.yaml"
    worker.write_text(WORKER)  # the app's GPU stays off: only the proof turns it on
    fix_chart(chart, values=(worker,))

    on = ("app.gpu.enabled=true", "app.gpu.type=nvidia")
    claimed = _claimed(_render(chart, (worker,), on))
    assert claimed == _claimed(_migrated(original, (worker,), on))
    assert [c[0] for c in claimed] == [["gpu"], ["gpu"]]
    assert _render(chart, (worker,), (*on, "dra.enabled=false")) == _render(original, (worker,), on)


WHOLE_MAP = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: app
          image: app:1
          {{- $res := deepCopy .Values.resources }}
          {{- if eq .Values.gpu.type "nvidia" }}
          {{- $res = merge $res (dict "limits" (dict "nvidia.com/gpu" .Values.gpu.count)) }}
          {{- else if eq .Values.gpu.type "amd" }}
          {{- $res = merge $res (dict "limits" (dict "amd.com/gpu" .Values.gpu.count)) }}
          {{- end }}
          resources:
            {{- toYaml $res | nindent 12 }}
""",
)


def test_a_vendor_entry_merged_into_the_whole_values_map(tmp_path: Path) -> None:
    values = 'gpu:\n  type: ""\n  count: 1\nresources:\n  limits:\n    memory: 1Gi\n'
    files = {"values.yaml": values, "templates/app.yaml": WHOLE_MAP}
    chart, original = chart_with(tmp_path / "fixed", "app", files), chart_with(tmp_path / "original", "app", files)
    nvidia = tmp_path / "nvidia.yaml"
    nvidia.write_text("gpu:\n  type: nvidia\n  count: 2\n")
    fix_chart(chart, values=(nvidia,))

    for sets in ((), ("gpu.type=amd",), ("gpu.type=none",)):
        assert _claimed(_render(chart, (nvidia,), sets)) == _claimed(_migrated(original, (nvidia,), sets))
        assert _render(chart, (nvidia,), (*sets, "dra.enabled=false")) == _render(original, (nvidia,), sets)
    ((claims, _, resources, _),) = _claimed(_render(chart, (nvidia,)))
    assert (claims, resources) == (["gpu"], {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]})
