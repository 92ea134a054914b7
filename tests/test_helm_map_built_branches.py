"""A container's resources map copied from values and given its device key by the template itself (pattern F):
`$res := deepCopy <values map>`, then `set ($res.limits | default dict) "nvidia.com/gpu" <count>` when the GPU is on
(the key reaches the render only where the values map has `limits`), written with `toYaml $res`; and the same map built
again in the other branch of the template's mode switch (one Deployment, or one per worker in a `range`). Each map of
the template is rewritten behind dra.enabled and the chart is proven (L and D): was manual work, the template adding a
key no values map holds, and the second `$res :=` hid both maps from the map-built rewrite."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, dramigrate_in_process, fix_chart

from dramigrate.helm.mapvars import sites
from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.render import RenderOptions, render_chart

TEMPLATE = """\
{{- if eq .Values.mode "single" }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-serve
spec:
  selector:
    matchLabels: {app: serve}
  template:
    metadata:
      labels: {app: serve}
    spec:
      {{- with .Values.single.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: serve
          image: serve:1
          resources:
            {{- $res := deepCopy .Values.single.resources }}
            {{- if .Values.single.gpu.enabled }}
            {{- $_ := set ($res.limits | default dict) "nvidia.com/gpu" (.Values.single.gpu.count | int) -}}
            {{- end }}
            {{- toYaml $res | nindent 12 }}
{{- else }}
{{- range $name := list "ingest" "embed" }}
{{- $cfg := index $.Values.workers $name }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: {{ $name }}
          image: worker:1
          resources:
            {{- $res := deepCopy $cfg.resources }}
            {{- if $cfg.gpu.enabled }}
            {{- $count := $cfg.gpu.count | int }}
            {{- if eq $count 0 }}{{- $count = 1 }}{{- end }}
            {{- $_ := set ($res.limits | default dict) "nvidia.com/gpu" $count -}}
            {{- end }}
            {{- toYaml $res | nindent 12 }}
{{- end }}
{{- end }}
"""
VALUES = """\
mode: single
single:
  gpu:
    enabled: true
    count: 1
  resources:
    limits:
      memory: 1Gi
  tolerations: []
workers:
  ingest:
    gpu:
      enabled: false
      count: 0
    resources:
      limits:
        cpu: 1
  embed:
    gpu:
      enabled: true
      count: 2
    resources:
      limits:
        memory: 2Gi
"""


def _render(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...], dra: bool | None = None) -> str:
    switch = () if dra is None else (f"dra.enabled={str(dra).lower()}",)
    options = RenderOptions(values_files=values, set_values=(*sets, *switch), kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pods(stream: str) -> dict[str, tuple[Any, ...]]:
    """Each Deployment's claims (by name: the template names differ), tolerations and container resources."""
    out = {}
    for d in yaml.safe_load_all(stream):
        if d and d["kind"] == "Deployment":
            pod = d["spec"]["template"]["spec"]
            claims = [c["name"] for c in pod.get("resourceClaims", [])]
            out[d["metadata"]["name"]] = claims, pod.get("tolerations"), pod["containers"][0]["resources"]
    return out


def _requests(stream: str) -> list[Any]:
    """The claim templates' specs, the API's defaults left out (the migration writes `allocationMode: ExactCount`)."""
    docs = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "ResourceClaimTemplate"]
    return sorted((without_api_defaults(d["spec"]["spec"]) for d in docs), key=str)


def test_each_map_a_template_builds_is_found(tmp_path: Path) -> None:
    found = sites(TEMPLATE)
    assert [s.var for s in found] == ["$res", "$res"]
    assert all(s.literal == ("nvidia.com/gpu",) for s in found)


def test_a_template_adding_the_device_key_in_both_modes_is_rewritten_and_proven(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/serve.yaml": TEMPLATE}
    original = chart_with(tmp_path / "original", "serve", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "serve")
    split = tmp_path / "split.yaml"
    split.write_text("mode: split\n")
    fix_chart(chart, values=(split,))

    runs = [
        ((), ()),
        ((split,), ()),
        ((split,), ("workers.ingest.gpu.enabled=true",)),
        ((split,), ("workers.embed.gpu.count=4",)),
        ((), ("single.gpu.count=3",)),
        ((), ("single.gpu.enabled=false",)),
    ]
    for values, sets in runs:
        before = _render(original, values, sets)
        # switch off: the chart renders as it did
        assert _render(chart, values, sets, dra=False) == before, sets
        # switch on: each Deployment as the manifest migration leaves it, the claim specs alike
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=before)
        assert code == 0, err
        after = _render(chart, values, sets, dra=True)
        assert _pods(after) == _pods(migrated), (values, sets)
        assert _requests(after) == _requests(migrated), (values, sets)

    pods = _pods(_render(chart, (split,), ("workers.ingest.gpu.enabled=true",), dra=True))
    assert [claims for claims, _, _ in pods.values()] == [["gpu"], ["gpu"]]  # both workers, not the first map alone
    assert not any("nvidia.com/gpu" in str(resources) for _, _, resources in pods.values())


def test_a_map_without_limits_gets_no_claim_as_the_key_never_reaches_it(tmp_path: Path) -> None:
    """`set ($res.limits | default dict)` on a map without `limits` sets the key into a dict the template drops: no
    GPU in the render, so the DRA branch claims none either."""
    files = {"values.yaml": VALUES, "templates/serve.yaml": TEMPLATE}
    original = chart_with(tmp_path / "original", "serve", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "serve")
    fix_chart(chart)
    no_limits = tmp_path / "requests-only.yaml"
    no_limits.write_text("single:\n  resources:\n    limits: null\n    requests:\n      memory: 1Gi\n")

    before = _render(original, (no_limits,), ())
    assert "nvidia.com/gpu" not in before
    assert _render(chart, (no_limits,), (), dra=False) == before
    after = _render(chart, (no_limits,), (), dra=True)
    assert "ResourceClaimTemplate" not in after
    assert _pods(after) == _pods(before)
