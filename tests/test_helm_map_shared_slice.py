"""A resources map built in a template variable that adds a HAMi slice beside the GPU when the values pick HAMi
(axeprpr's vllm-inference: `deepCopy .Values.resources`, then `set $limits "nvidia.com/gpumem-percentage"` under
`scheduler.type: hami`). A whole GPU beside a slice of it is a share of one GPU: the manifest migration leaves that
container as it is (shared-device). The DRA branch failed the render instead ("the container resources ask for a
device resource the DRA claim of the chart does not take"), so fix refused the chart for the user's HAMi values; now
the DRA branch leaves such a map as the migration does, and migrates the GPU without the slice. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SHARED = deployment(
    "{{ .Release.Name }}-llm",
    """\
      containers:
        - name: llm
          image: llm:1
          resources:
            {{- $resources := deepCopy .Values.resources }}
            {{- if and (eq .Values.scheduler "hami") .Values.sharePercent }}
            {{- $limits := get $resources "limits" | default dict }}
            {{- $_ := set $limits "nvidia.com/gpumem-percentage" (toString .Values.sharePercent) }}
            {{- $_ := set $resources "limits" $limits }}
            {{- end }}
            {{- toYaml $resources | nindent 12 }}
""",
)
VALUES = """\
scheduler: default
sharePercent: ""
resources:
  limits:
    nvidia.com/gpu: "1"
    memory: 8Gi
"""


def _render(chart: Path, values: tuple[Path, ...]) -> str:
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=values)))


def _pod(stream: str) -> dict[str, Any]:
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return pod


def test_a_gpu_shared_with_a_hami_slice_stays_as_the_migration_leaves_it(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/llm.yaml": SHARED}
    chart, original = chart_with(tmp_path / "fixed", "llm", files), chart_with(tmp_path / "original", "llm", files)
    hami = tmp_path / "hami.yaml"
    hami.write_text("scheduler: hami\nsharePercent: 90\n")
    fix_chart(chart, values=(hami,))  # was: not proven, the DRA branch failed the render with these values

    code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, (hami,)))
    assert code == 0 and "shared-device" in err, err
    shared = _pod(_render(chart, (hami,)))  # the switch is on by default
    assert shared == _pod(migrated)
    assert shared["containers"][0]["resources"]["limits"]["nvidia.com/gpumem-percentage"] == "90"
    assert "resourceClaims" not in shared

    whole = _pod(_render(chart, ()))  # no slice: the GPU is migrated
    assert whole["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}
    assert [t["key"] for t in whole["tolerations"]] == ["nvidia.com/gpu"]
