"""A resources map built in template variables that may hold several extended resources (pattern F, codehub's
shape: `deepCopy .Values.resources`, then `set $resources.limits "nvidia.com/gpu" (.Values.gpu.count | int)` and a
HAMi `nvidia.com/gpumem` under `gpu.memoryMiB`), with the GPU count switched off with 0: the manifest migration drops
`nvidia.com/gpu: 0` and claims nothing, but keeps the toleration the ExtendedResourceToleration admission plugin
added for the key (it reads the names the pod requests, whatever their quantity). The rewritten chart renders that
toleration too (was: refused, "with gpu.count switched off with 0 ... tolerations: expected [...] the rewritten
chart has none")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

BUILT = deployment(
    "{{ .Release.Name }}-hub",
    """\
      containers:
        - name: hub
          image: hub:1
          {{- $resources := deepCopy .Values.resources }}
          {{- if .Values.gpu.enabled }}
          {{- $_ := set $resources.limits "nvidia.com/gpu" (.Values.gpu.count | int) }}
          {{- $_ := set $resources.requests "nvidia.com/gpu" (.Values.gpu.count | int) }}
          {{- if gt (int .Values.gpu.memoryMiB) 0 }}
          {{- $_ := set $resources.limits "nvidia.com/gpumem" (.Values.gpu.memoryMiB | int) }}
          {{- end }}
          {{- end }}
          resources:
            {{- toYaml $resources | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = """\
gpu:
  enabled: false
  count: 1
  memoryMiB: 0
resources:
  limits:
    cpu: 1
  requests:
    cpu: 1
tolerations: []
"""


def _render(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> str:
    options = RenderOptions(values_files=values, set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pod(stream: str) -> tuple[Any, ...]:
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    claims = [c["name"] for c in pod.get("resourceClaims", [])]  # the template names differ: the claim is the same
    return claims, pod.get("tolerations"), pod["containers"][0]["resources"]


def test_a_built_map_with_the_gpu_count_at_zero_keeps_the_migrations_toleration(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/hub.yaml": BUILT}
    chart, original = chart_with(tmp_path / "fixed", "hub", files), chart_with(tmp_path / "original", "hub", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("gpu:\n  enabled: true\n  count: 1\n")
    fix_chart(chart, values=(gpu,))

    for sets in (("gpu.count=0",), (), ("gpu.count=2",)):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, (gpu,), sets))
        assert code == 0, err
        assert _pod(_render(chart, (gpu,), sets)) == _pod(migrated), sets
    claims, tolerations, resources = _pod(_render(chart, (gpu,), ("gpu.count=0",)))
    assert claims == [] and "claims" not in resources
    assert tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
