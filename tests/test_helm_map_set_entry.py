"""A container's resources map the template copies from values and `set`s the device key into, its name and count
from values (navillasa's llm-server: `set $gpuResources.limits .Values.gpu.resourceName .Values.gpu.count` on a
`deepCopy .Values.gpuResources`, under `if .Values.gpu.enabled`, the GPU tolerations under the same `if`). The
map-built rewrite (mapvars.py) takes it behind the dra.enabled switch and is proven."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- if .Values.gpu.enabled }}
            {{- $gpuResources := deepCopy .Values.gpuResources }}
            {{- $_ := set $gpuResources.limits .Values.gpu.resourceName .Values.gpu.count }}
            {{- toYaml $gpuResources | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.resources | nindent 12 }}
            {{- end }}
      {{- if .Values.gpu.enabled }}
      {{- with .Values.gpu.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- else }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- end }}
""",
)
VALUES = """\
gpu:
  enabled: true
  # nvidia.com/gpu or amd.com/gpu
  resourceName: nvidia.com/gpu
  count: 1
  tolerations:
    - key: dedicated
      operator: Exists
gpuResources:
  limits:
    memory: 8Gi
resources:
  limits:
    memory: 1Gi
tolerations: []
"""


def _render(chart: Path, sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


def _docs(chart: Path, sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [d for _, text in _render(chart, sets) for d in yaml.safe_load_all(text) if d]


def test_a_device_key_set_into_a_copied_map_gets_the_switch(tmp_path: Path) -> None:
    """Was: pattern F, "the idiomatic rewrite takes pattern A only", nothing written."""
    files = {"values.yaml": VALUES, "templates/deployment.yaml": DEPLOYMENT}
    original = chart_with(tmp_path / "original", "server", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "server")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for sets in ((), ("gpu.enabled=false",)):  # with the switch off: byte-identical
        assert _render(chart, ("dra.enabled=false", *sets)) == _render(original, sets)
    docs = _docs(chart, ("gpu.count=2",))
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}, pod
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"], pod
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert not [d for d in _docs(chart, ("gpu.enabled=false",)) if d["kind"] == "ResourceClaimTemplate"]


# the values map itself (no copy) given the device entry, written with `indent` at column 0 below `resources:`, the
# GPU tolerations written before the container
ALIASED = deployment(
    "{{ .Release.Name }}-server",
    """\
      {{- if .Values.gpu.enabled }}
      {{- if .Values.gpu.tolerations }}
      tolerations:
{{ toYaml .Values.gpu.tolerations | indent 8 }}
      {{- end }}
      {{- end }}
      containers:
        - name: server
          image: server:1
          {{- $res := .Values.resources | default dict }}
          {{- $limits := $res.limits | default dict }}
          {{- if .Values.gpu.enabled }}
          {{- $_ := set $limits .Values.gpu.resourceName .Values.gpu.count }}
          {{- end }}
          {{- $_ := set $res "limits" $limits }}
          resources:
{{ toYaml $res | indent 12 }}
""",
)


def test_a_device_key_set_into_the_values_map_with_tolerations_before_it(tmp_path: Path) -> None:
    """Was: pattern B, "the values map resources is not passed through as is", nothing written. The pod's GPU
    tolerations come before the map is built: the DRA toleration names the values key the entry is set with."""
    files = {"values.yaml": VALUES, "templates/deployment.yaml": ALIASED}
    original = chart_with(tmp_path / "original", "server", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "server")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for sets in ((), ("gpu.enabled=false",)):  # with the switch off: byte-identical
        assert _render(chart, ("dra.enabled=false", *sets)) == _render(original, sets)
    for sets, keys in (((), ["dedicated", "nvidia.com/gpu"]), (("gpu.tolerations=null",), ["nvidia.com/gpu"])):
        docs = _docs(chart, sets)
        pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}, pod
        assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
        assert [t["key"] for t in pod["tolerations"]] == keys, pod


# one Deployment per worker of a values list, each copying the worker's resources map and `set`ting the device key
# into it (smg-gateway's deployment-worker.yaml): inside the `range`, `.` is the worker, the chart's values are `$.`
WORKERS = """\
{{- range $i, $worker := .Values.workers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $worker.name }}
spec:
  selector:
    matchLabels: {app: {{ $worker.name }}}
  template:
    metadata:
      labels: {app: {{ $worker.name }}}
    spec:
      containers:
        - name: worker
          image: worker:1
          resources:
            {{- $res := deepCopy $worker.resources }}
            {{- $_ := set $res.limits $.Values.gpu.resourceName ($worker.gpus | int) }}
            {{- toYaml $res | nindent 12 }}
{{- end }}
"""
WORKER_VALUES = """\
gpu:
  resourceName: nvidia.com/gpu
workers:
  - name: small
    gpus: 1
    resources: {limits: {memory: 8Gi}}
  - name: large
    gpus: 4
    resources: {limits: {memory: 64Gi}}
"""


def test_a_device_key_set_into_each_workers_copied_map_in_a_range(tmp_path: Path) -> None:
    """Was: "the rewritten chart does not render: ... nil pointer evaluating interface {}.dra" (the DRA branch read
    `.Values.dra.enabled` inside the `range`, where `.` is the worker), nothing written. Each worker's Deployment gets
    its own claim template with the worker's count."""
    files = {"values.yaml": WORKER_VALUES, "templates/workers.yaml": WORKERS}
    original = chart_with(tmp_path / "original", "workers", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "workers")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _render(chart, ("dra.enabled=false",)) == _render(original)  # with the switch off: byte-identical
    docs = _docs(chart)
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    counts = {}
    for workload in (d for d in docs if d["kind"] == "Deployment"):
        pod = workload["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], pod
        assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]
        (claim,) = pod["resourceClaims"]
        spec = templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]
        counts[workload["metadata"]["name"]] = spec["devices"]["requests"][0]["exactly"]["count"]
    assert counts == {"release-name-small": 1, "release-name-large": 4}


# the map built and written only when the values give a resources map; the `else` writes the device key itself
# (smg-gateway's worker without `resources`)
TWO_ARMS = DEPLOYMENT.replace(
    """          resources:
            {{- if .Values.gpu.enabled }}
            {{- $gpuResources := deepCopy .Values.gpuResources }}
            {{- $_ := set $gpuResources.limits .Values.gpu.resourceName .Values.gpu.count }}
            {{- toYaml $gpuResources | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.resources | nindent 12 }}
            {{- end }}
""",
    """          resources:
            {{- if .Values.gpuResources }}
            {{- $gpuResources := deepCopy .Values.gpuResources }}
            {{- $_ := set $gpuResources.limits .Values.gpu.resourceName .Values.gpu.count }}
            {{- toYaml $gpuResources | nindent 12 }}
            {{- else }}
            limits:
              {{ .Values.gpu.resourceName }}: {{ .Values.gpu.count }}
            {{- end }}
""",
)


def test_a_device_key_written_beside_the_built_map_gets_the_claim_too(tmp_path: Path) -> None:
    """The branch without the map writes the device key on a line of its own: with dra.enabled it asks for the
    claim too (was: "the pod also writes a device key outside the map the template builds", nothing written)."""
    assert TWO_ARMS != DEPLOYMENT
    files = {"values.yaml": VALUES, "templates/deployment.yaml": TWO_ARMS}
    original = chart_with(tmp_path / "original", "server", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "server")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for sets in ((), ("gpuResources=null",)):
        assert _render(chart, ("dra.enabled=false", *sets)) == _render(original, sets)
        docs = _docs(chart, ("gpu.count=3", *sets))
        (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
        pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], pod
        assert "nvidia.com/gpu" not in (pod["containers"][0]["resources"].get("limits") or {})
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3


def test_a_name_the_migration_leaves_alone_keeps_its_request_in_the_built_map(tmp_path: Path) -> None:
    """A resource no rule pack knows set as the name: with dra.enabled the map keeps its request, as `fix -` does
    (was: the render failed, 'a device resource the DRA claim of the chart does not take'); a name the packs migrate
    that the claim does not take still fails."""
    files = {"values.yaml": VALUES, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "server", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    (pod,) = [d["spec"]["template"]["spec"] for d in _docs(chart, ("gpu.resourceName=example.org/npu",))]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "8Gi", "example.org/npu": 1}}
    assert "resourceClaims" not in pod
    with pytest.raises(HelmError, match="does not take"):
        _docs(chart, ("gpu.resourceName=gpu.intel.com/i915",))


# the map copied from values, its device entry set by a vendor's branch, written under `with $resources` as `toYaml .`
# (unmanic's deployment.yaml: `gpu.mode` picks nvidia.com/gpu or gpu.intel.com/i915)
WITH_VARIABLE = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          {{- $resources := deepCopy .Values.resources }}
          {{- $gpuResource := "" }}
          {{- if eq .Values.gpu.mode "nvidia" }}
          {{- $gpuResource = "nvidia.com/gpu" }}
          {{- else if eq .Values.gpu.mode "intel" }}
          {{- $gpuResource = "gpu.intel.com/i915" }}
          {{- end }}
          {{- if $gpuResource }}
          {{- $limits := default dict (get $resources "limits") }}
          {{- $_ := set $limits $gpuResource (int .Values.gpu.count) }}
          {{- $_ := set $resources "limits" $limits }}
          {{- end }}
          {{- with $resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
""",
)


@pytest.mark.parametrize(("mode", "device_class"), [("nvidia", "gpu.nvidia.com"), ("intel", "gpu.intel.com")])
def test_a_built_map_written_as_the_dot_of_a_with_gets_the_switch(tmp_path: Path, mode: str, device_class: str) -> None:
    """Was: pattern C, "the values map resources is not passed through as is", nothing written: `toYaml .` inside
    `with $resources` was not read as the map the template builds."""
    values = "gpu:\n  mode: none\n  count: 1\nresources:\n  limits:\n    memory: 1Gi\n"
    files = {"values.yaml": values, "templates/deployment.yaml": WITH_VARIABLE}
    original = chart_with(tmp_path / "original", "server", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "server")
    options = ChartOptions(set_values=(f"gpu.mode={mode}",))
    outcome = run_chart(chart, options, load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for sets in ((), (f"gpu.mode={mode}",)):  # with the switch off: byte-identical
        assert _render(chart, ("dra.enabled=false", *sets)) == _render(original, sets)
    docs = _docs(chart, (f"gpu.mode={mode}", "gpu.count=2"))
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}, pod
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == (device_class, 2)
    assert not [d for d in _docs(chart) if d["kind"] == "ResourceClaimTemplate"]  # mode none: no device, no claim
