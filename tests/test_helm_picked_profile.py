"""Pattern C over a profile a value picks: `{{- with (index .Values.configs .Values.device).resources }}` then
`resources:` and `toYaml .` (rhq's confidential-ai chart). The pass-through reads the chosen profile's siblings the same
way (`(index .Values.configs .Values.device).resourceClaims`), so the claims go into the profile the value picks, and
a pod whose own toleration is written only inside a `with` of its own gets the DRA toleration joined there (read from
the root inside it) and alone where that `with` writes nothing. Was: manual, "pattern F (another template shape)".
Renders are real; the proofs (L) and (D) are fix's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.patterns import classify
from dramigrate.helm.render import RenderOptions, render_chart

VALUES = """\
device: gpu
configs:
  gpu:
    node:
      taint: example.com/confidential
    resources:
      limits:
        cpu: "2"
        nvidia.com/gpu: 1
  cpu:
    node:
      taint: ""
    resources:
      limits:
        cpu: "8"
"""
TEMPLATE = deployment(
    "server",
    """\
      containers:
        - name: server
          image: example/vllm
          {{- with (index .Values.configs .Values.device).resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
      {{- with (index .Values.configs .Values.device).node.taint }}
      tolerations:
        - key: {{ . }}
          effect: NoSchedule
      {{- end }}
""",
)


def _pod(chart: Path, values: str, *files: str) -> Any:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    paths = (*(chart / f for f in files), given)
    (text,) = [m.text for m in render_chart(chart, RenderOptions(values_files=paths)) if "Deployment" in m.text]
    return yaml.safe_load(text)["spec"]["template"]["spec"]


def test_the_profile_a_value_picks_gets_its_claims_beside_its_resources(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "picked", {"values.yaml": VALUES, "templates/deployment.yaml": TEMPLATE})
    before = _pod(chart, "{}")
    at = TEMPLATE.splitlines().index("          {{- with (index .Values.configs .Values.device).resources }}") + 1
    assert classify(TEMPLATE, at, "nvidia.com/gpu").letter == "C"
    fix_chart(chart)
    assert _pod(chart, "{}") == before  # without the DRA values, as it was
    pod = _pod(chart, "{}", "values-dra.yaml")
    (claim,) = pod["resourceClaims"]
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": "2"}, "claims": [{"name": claim["name"]}]}
    assert [t["key"] for t in pod["tolerations"]] == ["example.com/confidential", "nvidia.com/gpu"]
    alone = _pod(chart, "configs: {gpu: {node: {taint: ''}}}", "values-dra.yaml")
    assert [t["key"] for t in alone["tolerations"]] == ["nvidia.com/gpu"]
    cpu = _pod(chart, "device: cpu", "values-dra.yaml")  # the other profile asks for no device: no claim
    assert "resourceClaims" not in cpu and cpu["containers"][0]["resources"] == {"limits": {"cpu": "8"}}
