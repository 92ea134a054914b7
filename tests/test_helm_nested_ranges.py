"""Containers that nested `range` blocks write, each asking for its own devices (the shape of NVIDIA's DeepStream
chart: a Deployment per node and pod, `range $container := $pod.containers`, and inside it `range $index, $gpu :=
$node.gpus` for one container per GPU of the node, else one container with all of them). The migration of a render
gives each pod one claim, from a claim template in the pod's namespace, with a request per container named after it
(or the request `gpu`, taken whole, when one container asks); the idiomatic rewrite (nested.py) renders the same.
Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TEMPLATE = """\
{{- range $node := .Values.nodes }}
{{- range $pod := $.Values.pods }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $pod.name }}
  namespace: {{ $.Release.Name }}-{{ $node.name }}
spec:
  selector:
    matchLabels: {app: {{ $pod.name }}}
  template:
    metadata:
      labels: {app: {{ $pod.name }}}
    spec:
      containers:
{{- range $container := $pod.containers }}
{{- if $container.perGpu }}
{{- range $index, $gpu := $node.gpus }}
      - name: "{{ $container.name }}-{{ $index }}"
        image: {{ $container.image | quote }}
        env:
        - name: CUDA_VISIBLE_DEVICES
          value: "{{ $gpu.id }}"
        resources:
          limits:
            cpu: 1
{{- if $container.gpu }}
            nvidia.com/gpu: 1
{{- end }}
{{- end }}
{{- else }}
      - name: {{ $container.name | quote }}
        image: {{ $container.image | quote }}
        resources:
          limits:
            cpu: 1
{{- if $container.gpu }}
            nvidia.com/gpu: {{ len $node.gpus }}
{{- end }}
{{- end }}
{{- end }}
---
{{- end }}
{{- end }}
"""

VALUES = """\
nodes:
  - name: big
    gpus: [{id: 0}, {id: 1}]
  - name: small
    gpus: [{id: 0}]
pods:
  - name: streams
    containers:
      - name: decode
        image: decode:1
        perGpu: true
        gpu: true
      - name: web
        image: web:1
"""


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def _render(chart: Path, values: Path | None = None, *sets: str) -> tuple[str, dict[tuple[str, str], Any]]:
    """The render's text, and its objects by (kind, namespace)."""
    files = (values,) if values else ()
    manifests = render_chart(chart, RenderOptions(release_name="rel", values_files=files, set_values=sets))
    text = "".join(f"---\n{m.text}\n" for m in manifests)
    objects = {(d["kind"], d["metadata"]["namespace"]): d for d in yaml.safe_load_all(text) if d}
    return text, objects


def _requests(objects: dict[tuple[str, str], Any], namespace: str) -> list[tuple[str, int]]:
    template = objects["ResourceClaimTemplate", namespace]
    pod = objects["Deployment", namespace]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    return [(r["name"], r["exactly"]["count"]) for r in template["spec"]["spec"]["devices"]["requests"]]


def _claims(objects: dict[tuple[str, str], Any], namespace: str) -> dict[str, Any]:
    pod = objects["Deployment", namespace]["spec"]["template"]["spec"]
    for c in pod["containers"]:
        assert "nvidia.com/gpu" not in c["resources"]["limits"]
    return {c["name"]: c["resources"].get("claims") for c in pod["containers"]}


def test_containers_of_nested_ranges_each_take_a_request_of_their_pods_claim(tmp_path: Path) -> None:
    """Was: manual, 'the device key is inside `range $container := $pod.containers`, which writes one container per
    item (with `range $index, $gpu := $node.gpus` inside it)'. Now the rewrite is proven, and with the switch on each
    node's Deployment gets, in its namespace, a claim template with one request per GPU container (named after it), or
    the request `gpu` taken whole where one container asks; a container per pod with all the node's GPUs when
    `perGpu` is off. With the switch off every render is byte-identical to the chart's before."""
    files = {"templates/streams.yaml": TEMPLATE, "values.yaml": VALUES}
    original = chart_with(tmp_path / "original", "streams", files)
    chart = chart_with(tmp_path, "streams", files)
    outcome = _fix(chart)
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    _, on = _render(chart)
    assert _requests(on, "rel-big") == [("decode-0-gpu", 1), ("decode-1-gpu", 1)]
    assert _claims(on, "rel-big") == {
        "decode-0": [{"name": "gpu", "request": "decode-0-gpu"}],
        "decode-1": [{"name": "gpu", "request": "decode-1-gpu"}],
        "web": None,
    }
    assert _requests(on, "rel-small") == [("gpu", 1)]
    assert _claims(on, "rel-small") == {"decode-0": [{"name": "gpu"}], "web": None}

    whole, without = tmp_path / "whole.yaml", tmp_path / "without.yaml"
    whole.write_text(VALUES.replace("perGpu: true", "perGpu: false"))
    without.write_text(VALUES.replace("gpu: true", "gpu: false"))
    _, on = _render(chart, whole)
    assert _requests(on, "rel-big") == [("gpu", 2)] and _requests(on, "rel-small") == [("gpu", 1)]
    assert _claims(on, "rel-big") == {"decode": [{"name": "gpu"}], "web": None}
    _, none = _render(chart, without)
    assert not any(kind == "ResourceClaimTemplate" for kind, _ in none)

    for values in (None, whole, without):
        assert _render(chart, values, "dra.enabled=false")[0] == _render(original, values)[0]
