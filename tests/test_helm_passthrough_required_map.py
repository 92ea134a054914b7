"""A values resources map written through `required` (`toYaml (required "resources are required" .Values.resources)`):
the map reaches the container whole (or the render fails), but the line read as "another template shape" (F) and fix
refused. It now takes the pass-through, proven by (L) and (D). Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "resources:\n  limits:\n    memory: 4Gi\n    nvidia.com/gpu: 2\n"


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


def test_a_required_map_takes_the_pass_through(tmp_path: Path) -> None:
    read = 'toYaml (required "resources are required" .Values.resources)'
    template = deployment(
        "{{ .Release.Name }}-server",
        f"""\
      containers:
        - name: server
          image: server:1
          resources:
            {{{{- {read} | nindent 12 }}}}
""",
    )
    original = chart_with(tmp_path / "original", "app", {"values.yaml": VALUES, "templates/server.yaml": template})
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)
    pod = _docs(chart, (chart / "values-dra.yaml",))["Deployment", "release-name-server"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "4Gi"}, "claims": [{"name": "gpu"}]}
    assert len(pod["resourceClaims"]) == 1
