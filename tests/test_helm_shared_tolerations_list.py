"""The pass-through rewrite (patterns B and C) of a chart whose pods all render one root `.Values.tolerations`
list that the chart's values.yaml does not declare, while only one pod takes the GPU `resources` map (Dell's
agentic-smart-router: its router controller and GPU router server both read `.Values.tolerations`). The DRA values
put the GPU toleration into that shared list, so the pod without a device tolerated the GPU nodes' taint too and
the proof refused the chart. The toleration now goes under a key of its own that only the GPU pod's template joins.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart


def _pod_template(name: str, resources: str) -> str:
    return deployment(
        f"{{{{ .Release.Name }}}}-{name}",
        f"""\
      {{{{- with .Values.tolerations }}}}
      tolerations:
        {{{{- toYaml . | nindent 8 }}}}
      {{{{- end }}}}
      containers:
        - name: {name}
          image: {name}:1
          resources:
            {{{{- toYaml {resources} | nindent 12 }}}}
""",
    )


VALUES = """\
resources:
  limits:
    nvidia.com/gpu: 1
web:
  resources:
    limits:
      cpu: "1"
"""


def _pods(chart: Path, *files: Path) -> dict[str, dict[str, Any]]:
    """The pod specs of the chart's Deployments by container name, rendered with `files` in order."""
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, RenderOptions(values_files=files))]
    pods = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    return {p["containers"][0]["name"]: p for p in pods}


def _keys(pod: dict[str, Any]) -> list[str]:
    return [t.get("key", "") for t in pod.get("tolerations") or []]


def test_an_undeclared_tolerations_list_shared_with_a_pod_without_a_device_gets_no_gpu_toleration(
    tmp_path: Path,
) -> None:
    """Only the GPU pod tolerates the GPU taint with the DRA values (was: the chart refused, the DRA values put the
    toleration into the list the web pod renders too); a list of the user's still reaches both pods."""
    chart = chart_with(
        tmp_path,
        "router",
        {
            "values.yaml": VALUES,
            "templates/server.yaml": _pod_template("server", ".Values.resources"),
            "templates/web.yaml": _pod_template("web", ".Values.web.resources"),
        },
    )
    fix_chart(chart)

    pods = _pods(chart, chart / "values-dra.yaml")
    assert pods["server"].get("resourceClaims")
    assert "nvidia.com/gpu" in _keys(pods["server"])
    assert "nvidia.com/gpu" not in _keys(pods["web"])
    assert not pods["web"].get("resourceClaims")

    pool = tmp_path / "pool.yaml"
    pool.write_text("tolerations:\n  - key: pool\n    operator: Exists\n")
    pods = _pods(chart, chart / "values-dra.yaml", pool)
    assert _keys(pods["web"]) == ["pool"]
    assert set(_keys(pods["server"])) == {"pool", "nvidia.com/gpu"}
