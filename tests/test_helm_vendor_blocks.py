"""Pattern A where each branch of the vendor choice writes the container's whole `resources:` block (jellyfin and
immich charts: `if eq .Values.hwAccel.type "nvidia"` a block asking for `nvidia.com/gpu`, `else if ... "intel"` one
asking for `gpu.intel.com/i915`, and immich's `{{- end }}` with trailing spaces above `containers:`, which the
chart renders): one container, not several, so each block gets the container's `claims`, and the
DRA branch asks in each branch for what the migration asks for. Proven by (L) and (D); renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

DEPLOYMENT = deployment(
    "media",
    """\
      {{- if eq .Values.accel.type "nvidia" }}
      runtimeClassName: nvidia
      {{- end }}   
      containers:
      - name: media
        image: "media:1"
        {{- if .Values.accel.enabled }}
          {{- if eq .Values.accel.type "nvidia" }}
        resources:
          limits:
            nvidia.com/gpu: "1"
          {{- else if eq .Values.accel.type "intel" }}
        resources:
          limits:
            gpu.intel.com/i915: "1"
          {{- end }}
        {{- end }}
        ports:
        - containerPort: 8096
""",
)


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("vendor-blocks")
    values = "accel:\n  enabled: true\n  type: nvidia\n"
    chart = chart_with(root, "media", {"templates/media.yaml": DEPLOYMENT, "values.yaml": values})
    return chart, fix_chart(chart)  # was: manual, 'the device keys are in several containers'


def _pod(chart: Path, values: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    docs, _, pods = dra_render(chart, file)
    return [d for d in docs if d["kind"] == "ResourceClaimTemplate"], pods["media"]


def test_each_block_names_the_claim_of_its_vendor(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert any('accel.type changed to "intel"' in c for c in outcome.checked)
    (template,), pod = _pod(chart, "dra: {enabled: true}\n")
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    container = pod["containers"][0]
    assert "limits" not in container["resources"]
    assert container["resources"]["claims"][0]["name"] == pod["resourceClaims"][0]["name"]
    (template,), pod = _pod(chart, "dra: {enabled: true}\naccel: {enabled: true, type: intel}\n")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.intel.com"
    assert pod["containers"][0]["resources"]["claims"][0]["name"] == pod["resourceClaims"][0]["name"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"]
    for off in ("{enabled: false}", "{enabled: true, type: amd}"):  # no device: no claim, no claim template
        templates, pod = _pod(chart, f"dra: {{enabled: true}}\naccel: {off}\n")
        assert templates == [] and "resourceClaims" not in pod
