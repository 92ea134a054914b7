"""A pod whose literal tolerations list is followed by a blank line, then `containers:` (davidtestdocker's
pytorch-runtime): the rewrite put the DRA toleration entry after that blank line, where its `{{- if }}` trimmed it, so
with the switch off the render lost a line and the chart was refused (not byte-identical); and the pod's
`resourceClaims` went in above it, which put the DRA toleration into the claims list. The DRA entry now goes right
after the list's last item: the blank line stays, the switch-off render is byte-identical and the switch-on one
has the claim and both tolerations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SERVER = deployment(
    "server",
    """\
      tolerations:
        - key: nvidia.com/gpu
          operator: Equal
          value: present
          effect: NoSchedule

      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
""",
)


def _render(chart: Path, sets: tuple[str, ...] = ()) -> str:
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(set_values=sets)))


def _pod(stream: str) -> dict[str, Any]:
    (server,) = [d for d in yaml.safe_load_all(stream) if d and d.get("kind") == "Deployment"]
    return server["spec"]["template"]["spec"]


def test_a_blank_line_after_the_tolerations_list_stays(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "blank", {"templates/d.yaml": SERVER, "values.yaml": "gpu:\n  count: 1\n"})
    before = _render(chart)

    fix_chart(chart)  # was: refused ("the render is not byte-identical: ... 30 lines before, 29 after")

    assert _render(chart, ("dra.enabled=false",)) == before
    pod = _pod(_render(chart, ("dra.enabled=true",)))
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["tolerations"][0]["value"] == "present"
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
