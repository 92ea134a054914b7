"""A resources helper whose device key is a vendor choice, its count from another helper given a values key (the
shape of kse's deepseek.resources: `if .Values.enableAMD` writes `amd.com/gpu`, `else if .Values.enableNvidia`
writes `nvidia.com/gpu`, each `{{ include "x.gpus" .Values.model.tag }}`, under `requests:` and again under
`limits:`). A render takes one branch; the rewrite moves every branch's key behind the switch and picks the claim
spec and toleration of the device whose branch renders. Real renders; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

HELPERS = """\
{{- define "app.resources" -}}
{{- if .Values.resources }}
{{ toYaml .Values.resources }}
{{- else }}
requests:
  cpu: {{ include "app.cpus" .Values.model.size }}
  {{- if eq .Values.accelerator "amd" }}
  amd.com/gpu: {{ include "app.gpus" .Values.model.size }}
  {{- else if eq .Values.accelerator "nvidia" }}
  nvidia.com/gpu: {{ include "app.gpus" .Values.model.size }}
  {{- end }}
limits:
  {{- if eq .Values.accelerator "amd" }}
  amd.com/gpu: {{ include "app.gpus" .Values.model.size }}
  {{- else if eq .Values.accelerator "nvidia" }}
  nvidia.com/gpu: {{ include "app.gpus" .Values.model.size }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "app.gpus" -}}
{{- if eq . "small" }}1
{{- else if eq . "large" }}4
{{- end }}
{{- end }}

{{- define "app.cpus" -}}
{{- if eq . "small" }}2
{{- else }}8
{{- end }}
{{- end }}
"""
SERVER = deployment(
    "server",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: server
          image: server
          resources:
            {{- include "app.resources" . | nindent 12 }}
""",
)
VALUES = "accelerator: nvidia\nmodel:\n  size: small\nresources: {}\ntolerations: []\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = chart_with(tmp_path_factory.mktemp("vendor-choice"), "app", files)
    return chart, fix_chart(chart)  # was: manual, "the helper's device count is not one expression"


def _render(chart: Path, extra: str) -> dict[str, Any]:
    from dramigrate.helm.render import RenderOptions, render_chart

    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    docs = [d for m in render_chart(chart, RenderOptions(values_files=(values,))) for d in yaml.safe_load_all(m.text)]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


def _claim(objects: dict[str, Any]) -> dict[str, Any]:
    (template,) = [d for key, d in objects.items() if key.startswith("ResourceClaimTemplate/")]
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_the_count_a_helper_maps_a_values_key_to_is_the_claims(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert any(c.startswith("accelerator changed to") for c in outcome.checked)
    objects = _render(chart, "model:\n  size: large\n")
    assert _claim(objects) == {"deviceClassName": "gpu.nvidia.com", "count": 4}  # ExactCount: the API's default
    pod = objects["Deployment/server"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": 8}, "claims": [{"name": "gpu"}]}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_the_other_vendors_branch_gets_its_own_class_and_toleration(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    given = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    objects = _render(chart, f"accelerator: amd\ntolerations: [{yaml.safe_dump(given, default_flow_style=True)}]\n")
    assert _claim(objects)["deviceClassName"] == "gpu.amd.com"
    assert _claim(objects)["count"] == 1
    pod = objects["Deployment/server"]["spec"]["template"]["spec"]
    assert "amd.com/gpu" not in str(pod["containers"][0]["resources"])
    assert pod["tolerations"] == [given, {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_the_vendors_share_one_toleration_and_the_claim_spec_lines_they_have_alike(fixed: tuple[Path, Any]) -> None:
    """What a maintainer reads: the toleration written once with the device looked up, not a branch per vendor
    that differs only in its key, and the claim spec's common lines (`devices:` to `exactly:`, the count) once,
    around the per-vendor class (the renders above show each vendor still gets its own)."""
    chart, _ = fixed
    text = "".join(p.read_text() for p in sorted((chart / "templates").iterdir()))
    assert text.count("operator: Exists") == 1
    assert text.count("exactly:") == 1 and "allocationMode" not in text  # ExactCount: the API's default
    assert text.count("deviceClassName: gpu.amd.com") == text.count("deviceClassName: gpu.nvidia.com") == 1


def test_with_the_switch_off_each_vendor_keeps_its_device_plugin_request(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    for vendor in ("amd", "nvidia"):
        objects = _render(chart, f"dra:\n  enabled: false\naccelerator: {vendor}\n")
        assert not [k for k in objects if k.startswith("ResourceClaimTemplate/")]
        limits = objects["Deployment/server"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert limits == {f"{vendor}.com/gpu": 1}


def test_a_count_from_a_helper_with_a_pipeline_after_it(tmp_path: Path) -> None:
    """`{{ include "app.gpus" .Values.model.size | default 1 }}`: the count defines take the pipeline as written."""
    helpers = HELPERS.replace(
        '  nvidia.com/gpu: {{ include "app.gpus" .Values.model.size }}\n',
        '  nvidia.com/gpu: {{ include "app.gpus" .Values.model.size | default 1 }}\n',
    )
    files = {"templates/_helpers.tpl": helpers, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)  # was: manual, "the helper's device count is not one expression"
    objects = _render(chart, "model:\n  size: medium\n")
    assert _claim(objects)["count"] == 1
    assert _claim(_render(chart, "model:\n  size: large\n"))["count"] == 4


GUARDED = """\
{{- define "app.resources" -}}
limits:
  cpu: "2"
  {{- if .Values.gpu.amd }}
  {{- if gt (int .Values.gpu.count) 0 }}
  amd.com/gpu: {{ .Values.gpu.count }}
  {{- end }}
  {{- else }}
  {{- if gt (int .Values.gpu.count) 0 }}
  nvidia.com/gpu: {{ .Values.gpu.count }}
  {{- end }}
  {{- end }}
{{- end }}
"""


def test_each_vendors_key_under_a_count_guard_of_its_own(tmp_path: Path) -> None:
    """`if .Values.gpu.amd` / `else`, each branch's key under `if gt (int .Values.gpu.count) 0`."""
    files = {"templates/_helpers.tpl": GUARDED, "templates/server.yaml": SERVER, "values.yaml": "gpu:\n  count: 2\n"}
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)  # was: manual, 'with gpu.amd flipped to true ... renders differently'
    objects = _render(chart, "gpu:\n  amd: true\n")
    assert (_claim(objects)["deviceClassName"], _claim(objects)["count"]) == ("gpu.amd.com", 2)
    assert objects["Deployment/server"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "2"
    }
    assert not [k for k in _render(chart, "gpu:\n  count: 0\n") if k.startswith("ResourceClaimTemplate/")]
