"""A container whose resources are a map built in variables in one branch and a device key of its own in the other
(smg-gateway's worker Deployments: one per item of a values list, `if $worker.resources` copies the item's map and
`set`s the device key into it, the `else` writes `{{ $gpuType }}: {{ $gpuCount }}` under `limits:`), with the pod's
tolerations in an `if`/`else if` chain (the values list, else the chart's own GPU toleration) inside an `if or` of
the pod's scheduling keys. Both branches get the DRA claim behind dra.enabled, the DRA toleration goes into each list,
and a plain `else` writes it where no list renders; proven by (L) and (D)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

WORKERS = """\
{{- range $i, $worker := .Values.workers }}
{{- $gpuCount := 1 }}
{{- $gpuType := "nvidia.com/gpu" }}
{{- if $worker.gpu }}
{{- $gpuCount = $worker.gpu.count }}
{{- $gpuType = $worker.gpu.type | default "nvidia.com/gpu" }}
{{- end }}
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
          {{- if $worker.resources }}
          resources:
            {{- $res := deepCopy $worker.resources }}
            {{- if $res.limits }}
            {{- $_ := set $res.limits $gpuType ($gpuCount | int) }}
            {{- else }}
            {{- $_ := set $res "limits" (dict $gpuType ($gpuCount | int)) }}
            {{- end }}
            {{- toYaml $res | nindent 12 }}
          {{- else }}
          resources:
            limits:
              {{ $gpuType }}: {{ $gpuCount }}
          {{- end }}
      {{- if or $worker.nodeSelector $worker.tolerations (gt (int $gpuCount) 0) }}
      {{- with $worker.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $worker.tolerations }}
      tolerations:
        {{- toYaml $worker.tolerations | nindent 8 }}
      {{- else if gt (int $gpuCount) 0 }}
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
      {{- end }}
      {{- end }}
{{- end }}
"""
VALUES = """\
workers:
  - name: mapped
    gpu: {count: 2}
    resources: {limits: {memory: 8Gi}}
  - name: plain
    gpu: {count: 1}
    tolerations: [{key: spot, operator: Exists}]
  - name: idle
    gpu: {count: 0}
"""


def _render(chart: Path, sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


def _pods(chart: Path, sets: tuple[str, ...] = ()) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The pod spec of each Deployment by name, and the claim templates by name."""
    docs = [d for _, text in _render(chart, sets) for d in yaml.safe_load_all(text) if d]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    return pods, {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}


def _fixed(tmp_path: Path, template: str) -> tuple[Path, Path]:
    original = chart_with(tmp_path / "original", "workers", {"values.yaml": VALUES, "templates/workers.yaml": template})
    chart = shutil.copytree(original, tmp_path / "fixed" / "workers")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart


def _count(templates: dict[str, Any], pod: dict[str, Any]) -> int:
    (claim,) = pod["resourceClaims"]
    return templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]


KEY = "            limits:\n              {{ $gpuType }}: {{ $gpuCount }}\n"
# the other spellings of the key line: a literal name (pattern A), the key in both sections
LITERAL = WORKERS.replace(KEY, "            limits:\n              nvidia.com/gpu: {{ $gpuCount }}\n")
BOTH = WORKERS.replace(KEY, "            requests:\n              {{ $gpuType }}: {{ $gpuCount }}\n" + KEY)


@pytest.mark.parametrize("template", [WORKERS, LITERAL, BOTH], ids=["variable", "literal", "both sections"])
def test_a_device_key_beside_the_built_map_in_each_item_of_a_range(tmp_path: Path, template: str) -> None:
    """Was: "the pod also writes a device key outside the map the template builds" (the literal key: "the count
    `$gpuCount` reads `$gpuCount`, which the `range` sets per item"), nothing written."""
    assert LITERAL != WORKERS and BOTH != WORKERS
    original, chart = _fixed(tmp_path, template)
    assert _render(chart, ("dra.enabled=false",)) == _render(original)  # with the switch off: byte-identical
    pods, templates = _pods(chart)
    mapped, plain, idle = pods["release-name-mapped"], pods["release-name-plain"], pods["release-name-idle"]
    assert mapped["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}
    assert plain["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert (_count(templates, mapped), _count(templates, plain)) == (2, 1)
    # the chart tolerates nvidia.com/gpu itself (no second entry); the values list gets it after its own entries
    assert [t["key"] for t in mapped["tolerations"]] == ["nvidia.com/gpu"]
    assert [t["key"] for t in plain["tolerations"]] == ["spot", "nvidia.com/gpu"]
    # a count of 0: no claim, and (as the migration does) the toleration, though no list of the chart renders
    assert not idle["containers"][0].get("resources") and "resourceClaims" not in idle
    assert [t["key"] for t in idle["tolerations"]] == ["nvidia.com/gpu"]


def test_a_device_resource_the_claim_does_not_take_fails_the_render_in_the_key_branch(tmp_path: Path) -> None:
    """With dra.enabled, a device key the claim does not take, written by the branch without the map, would stay a
    device-plugin request: the render fails with the switch named, as it does for the map. A resource no rule pack
    knows stays a device-plugin request, as the migration leaves it (it failed the render too)."""
    _, chart = _fixed(tmp_path, WORKERS)
    amd = tmp_path / "amd.yaml"
    amd.write_text(VALUES.replace("gpu: {count: 1}", "gpu: {count: 1, type: amd.com/gpu}"))
    with pytest.raises(HelmError, match="set dra.enabled=false to request it from its device plugin"):
        list(render_chart(chart, RenderOptions(values_files=(amd,))))
    off = render_chart(chart, RenderOptions(values_files=(amd,), set_values=("dra.enabled=false",)))
    assert "amd.com/gpu: 1" in "".join(m.text for m in off)
    fpga = tmp_path / "fpga.yaml"
    fpga.write_text(VALUES.replace("gpu: {count: 1}", "gpu: {count: 1, type: example.com/fpga}"))
    assert "example.com/fpga: 1" in "".join(m.text for m in render_chart(chart, RenderOptions(values_files=(fpga,))))


# the key written beside other keys of its section: only the key line goes, the claim follows the section
BESIDE_MEMORY = WORKERS.replace(
    "            limits:\n              {{ $gpuType }}: {{ $gpuCount }}\n",
    "            limits:\n              memory: 1Gi\n              {{ $gpuType }}: {{ $gpuCount }}\n",
)


def test_a_device_key_beside_other_limits_keeps_them(tmp_path: Path) -> None:
    assert BESIDE_MEMORY != WORKERS
    original, chart = _fixed(tmp_path, BESIDE_MEMORY)
    assert _render(chart, ("dra.enabled=false",)) == _render(original)
    pods, _ = _pods(chart)
    assert pods["release-name-plain"]["containers"][0]["resources"] == {
        "limits": {"memory": "1Gi"},
        "claims": [{"name": "gpu"}],
    }
    assert pods["release-name-idle"]["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}}


@pytest.mark.parametrize(
    ("worker", "line", "pattern"),
    [
        ("resources: {requests: {memory: 1Gi}}", "          resources:", "F"),
        ("resources: {limits: {memory: 1Gi}}", "          resources:", "F"),
        ("tolerations: []", "              {{ $gpuType }}: {{ $gpuCount }}", "E"),
    ],
    ids=["map with requests", "map with limits", "no map"],
)
def test_a_request_is_located_in_the_branch_that_wrote_it(tmp_path: Path, worker: str, line: str, pattern: str) -> None:
    """A worker whose map holds only the device key under `limits:` renders `limits:` and the key as the `else`
    branch would: the finding named the `else` branch's `{{ $gpuType }}: {{ $gpuCount }}` (pattern E) though the
    map's `toYaml` wrote it; it names the `resources:` line of the branch that builds the map (pattern F), and a
    worker without a map still the `else` branch's key."""
    values = f"workers:\n  - name: w\n    gpu: {{count: 1}}\n    {worker}\n"
    chart = chart_with(tmp_path, "workers", {"values.yaml": values, "templates/workers.yaml": WORKERS})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "lint")
    (finding,) = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    assert finding.line == WORKERS.splitlines().index(line) + 1, finding
    assert f"[chart pattern {pattern}" in finding.message, finding.message
