"""Pattern A inside `range` over a values list read through a variable the template sets at its top (NVIDIA
DeepStream's `{{- $values := .Values -}}`, then `range $node := $values.nvidia.nodes`): one workload per item, its count
read from the item. Each item's pod gets its own claim from a claim template per item (the claim template sets the
variable the same way). Containers that such a range writes, one per item, stay manual work with a message that says
why. Real renders."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

WORKERS = """\
{{- $values := .Values -}}
{{- range $worker := $values.workers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $worker.name }}
spec:
  selector:
    matchLabels: {app: {{ $worker.name }}}
  template:
    metadata:
      labels: {app: {{ $worker.name }}}
    spec:
      containers:
      - name: work
        image: {{ $values.image }}
        resources:
          limits:
            nvidia.com/gpu: {{ $worker.gpus }}
{{- end }}
"""
VALUES = "image: cuda\nworkers:\n- name: small\n  gpus: 1\n- name: large\n  gpus: 4\n"


def _run(chart: Path) -> ChartOutcome:
    return run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")


def _render(chart: Path, extra: str = "") -> tuple[str, dict[str, Any]]:
    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    text = "\n---\n".join(m.text for m in render_chart(chart, RenderOptions(values_files=(values,))))
    return text, {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(text) if d}


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("values-variable")
    original = chart_with(root, "app", {"templates/workers.yaml": WORKERS, "values.yaml": VALUES})
    chart = root / "fixed"
    shutil.copytree(original, chart)
    outcome = _run(chart)  # was: manual, "the device key is inside `range $worker := $values.workers`"
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart, outcome


def test_the_switch_is_added_and_off_renders_as_before(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, chart, _ = fixed
    assert "dra:\n" in (chart / "values.yaml").read_text()
    before, _ = _render(original)
    after, objects = _render(chart, "dra:\n  enabled: false\n")
    assert after == before
    assert not [k for k in objects if k.startswith("ResourceClaimTemplate/")]


def test_each_item_gets_its_claim_with_its_own_count(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, _ = fixed
    _, objects = _render(chart)
    for name, count in (("small", 1), ("large", 4)):
        pod = objects[f"Deployment/{name}"]["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
        template = objects[f"ResourceClaimTemplate/{pod['resourceClaims'][0]['resourceClaimTemplateName']}"]
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["count"] == count


def test_an_item_with_no_device_gets_no_claim(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, _ = fixed
    _, objects = _render(chart, "workers:\n- name: small\n  gpus: 0\n- name: large\n  gpus: 2\n")
    assert "resourceClaims" not in objects["Deployment/small"]["spec"]["template"]["spec"]
    (claim,) = objects["Deployment/large"]["spec"]["template"]["spec"]["resourceClaims"]
    templates = [k for k in objects if k.startswith("ResourceClaimTemplate/")]
    assert templates == [f"ResourceClaimTemplate/{claim['resourceClaimTemplateName']}"]


# one Deployment per node and pod item, its containers one per container item of the pod and, for a container that
# takes one GPU each, one per GPU of the node: the migration's claim has a request per container, named after it
PER_GPU_CONTAINERS = """\
{{- $values := .Values -}}
{{- range $node := $values.nodes }}
{{- range $pod := $values.pods }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $pod.name }}-{{ $node.name }}
spec:
  selector:
    matchLabels: {app: stream}
  template:
    metadata:
      labels: {app: stream}
    spec:
      containers:
{{- range $container := $pod.containers }}
{{- if $container.perGpu }}
{{- range $index, $gpu := $node.gpus }}

      - name: "{{ $container.name }}-{{ $index }}"
        image: {{ $container.image }}
        resources:
          limits:
            nvidia.com/gpu: 1
{{- end }}
{{- else }}
      - name: {{ $container.name }}
        image: {{ $container.image }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
"""
NODES = """\
nodes:
- name: a
  gpus: [{id: 0}, {id: 1}]
pods:
- name: stream
  containers:
  - name: decode
    image: ds
    perGpu: true
"""


def test_containers_written_per_item_say_why_and_what_to_write(tmp_path: Path) -> None:
    """Was: "the device key is inside `range $node := $values.nodes`", which a range over a values list no longer is."""
    chart = chart_with(tmp_path, "ds", {"templates/ds.yaml": PER_GPU_CONTAINERS, "values.yaml": NODES})
    outcome = _run(chart)
    assert not outcome.proven and not outcome.changes
    line = PER_GPU_CONTAINERS.splitlines().index("            nvidia.com/gpu: 1") + 1
    assert outcome.manual.startswith(f"templates/ds.yaml:{line}: "), outcome.manual
    assert "inside `range $container := $pod.containers`, which writes one container per item" in outcome.manual
    assert "(with `range $index, $gpu := $node.gpus` inside it)" in outcome.manual
    assert "request: <container>-gpu" in outcome.manual
