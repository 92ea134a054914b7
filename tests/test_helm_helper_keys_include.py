"""A container whose `resources:` key and map a named helper writes, included alone onto the container's keys
(`{{- include "app.resources" . | nindent 10 }}` under `image:`): the finding maps to the container's first line,
which writes no resources itself, so the shape read as "another template shape" (F) and fix refused. The include is
now the container's resources line (pattern D): the pass-through follows the helper to its values map, proven by
(L) and (D). Renders are real."""

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
HELPER = """\
{{- define "app.resources" -}}
{{- if .Values.resources }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
{{- end }}
{{- end -}}
"""
TEMPLATE = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: {{ .Chart.Name }}
          image: server:1
          ports:
            - containerPort: 8000
          {{- include "app.resources" . | nindent 10 }}
""",
)


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


def test_a_helper_writing_the_resources_key_onto_the_container_is_rewritten(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_resources.tpl": HELPER, "templates/server.yaml": TEMPLATE}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    assert "pattern F" not in outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)  # the values as they were: the same objects
    pod = _docs(chart, (chart / "values-dra.yaml",))["Deployment", "release-name-server"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "4Gi"}, "claims": [{"name": "gpu"}]}
    (claim,) = pod["resourceClaims"]
    assert claim["resourceClaimTemplateName"].startswith("release-name-")
