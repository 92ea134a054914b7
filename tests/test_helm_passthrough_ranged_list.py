"""A pod whose containers are a `range` over a values list, without variables (`{{- range .Values.containers }}`,
each item's map written under `{{- with .resources }}`): the pass-through wrote the pod's `resourceClaims` from
`.resourceClaims` above the range, where `.` is the chart's root, so the claims never rendered and fix refused after
a failed proof ("the rewritten chart renders differently"). The items' lists are now gathered over the same range, as
for a range with variables; proven by (L) and (D). Renders are real."""

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

VALUES = """\
containers:
  - name: main
    image: main:1
    resources:
      limits:
        nvidia.com/gpu: 2
  - name: proxy
    image: proxy:1
"""
TEMPLATE = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        {{- range .Values.containers }}
        - name: {{ .name }}
          image: {{ .image }}
          {{- with .resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
        {{- end }}
""",
)


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    return {(d["kind"], d["metadata"]["name"]): d for t in texts for d in yaml.safe_load_all(t) if d}


def test_the_claims_of_a_ranged_container_list_reach_the_pod(tmp_path: Path) -> None:
    original = chart_with(tmp_path / "original", "app", {"values.yaml": VALUES, "templates/app.yaml": TEMPLATE})
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(chart) == _docs(original)
    docs = _docs(chart, (chart / "values-dra.yaml",))
    pod = docs["Deployment", "release-name-app"]["spec"]["template"]["spec"]
    main, proxy = pod["containers"]
    assert main["resources"] == {"claims": [{"name": "gpu"}]}
    assert "resources" not in proxy
    (claim,) = pod["resourceClaims"]
    spec = docs["ResourceClaimTemplate", claim["resourceClaimTemplateName"]]["spec"]["spec"]
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2
