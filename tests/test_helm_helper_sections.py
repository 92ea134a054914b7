"""A helper that writes the device key alone, included under a container's `limits:` and again under `requests:` (the
shape of Docker Model Runner's `gpuResources`: `if eq .Values.gpu.vendor "nvidia"` writes `nvidia.com/gpu`, `else if
... "amd"` writes `amd.com/gpu`, and the Deployment writes `limits:` then `{{- include ... | nindent 12 }}`, a blank
line above its `containers:`). The claims go beside the sections at the call site, and the sections, empty with the
switch on, go with the keys. Real renders; one fix for the module."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

HELPERS = """\
{{- define "app.accel" -}}
{{- if .Values.accel.enabled }}
{{- if eq .Values.accel.maker "nvidia" }}
nvidia.com/gpu: {{ .Values.accel.count }}
{{- else if eq .Values.accel.maker "amd" }}
amd.com/gpu: {{ .Values.accel.count }}
{{- end }}
{{- end }}
{{- end }}
"""
SERVER = deployment(
    "runner",
    """\
      initContainers:
      - name: prepare
        image: busybox

      containers:
      - name: runner
        image: runner
        {{- if .Values.accel.enabled }}
        resources:
          limits:
            {{- include "app.accel" . | nindent 12 }}
          requests:
            {{- include "app.accel" . | nindent 12 }}
        {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = "accel:\n  enabled: false\n  maker: nvidia\n  count: 1\ntolerations: []\n"
ON = "accel:\n  enabled: true\n"


def _render(chart: Path, extra: str) -> tuple[str, dict[str, Any]]:
    from dramigrate.helm.render import RenderOptions, render_chart

    values = chart.parent / "extra.yaml"
    values.write_text(extra)
    text = "\n---\n".join(m.text for m in render_chart(chart, RenderOptions(values_files=(values,))))
    docs = [d for d in yaml.safe_load_all(text) if d]
    return text, {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    root = tmp_path_factory.mktemp("sections")
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    original = chart_with(root, "app", files)
    chart = root / "fixed"
    shutil.copytree(original, chart)
    (root / "on.yaml").write_text(ON)
    # was: manual, "templates/server.yaml:20: the helper is not included as a container's `resources:`"
    return original, chart, fix_chart(chart, values=(root / "on.yaml",))


def test_the_fix_is_proven_and_documents_the_switch(fixed: tuple[Path, Path, Any]) -> None:
    _, chart, outcome = fixed
    assert outcome.proven
    assert any(c.startswith("accel.maker changed to") for c in outcome.checked)
    assert "# dra:\n#   enabled: true\n" in (chart / "values.yaml").read_text()


def test_switched_off_every_vendor_renders_as_before(fixed: tuple[Path, Path, Any]) -> None:
    original, chart, _ = fixed
    for maker in ("nvidia", "amd"):
        given = f"accel:\n  enabled: true\n  maker: {maker}\n  count: 2\n"
        before, _ = _render(original, given)
        after, objects = _render(chart, given + "dra:\n  enabled: false\n")
        assert after == before
        limits = objects["Deployment/runner"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert limits == {f"{maker}.com/gpu": 2}


@pytest.mark.parametrize(("maker", "device_class"), [("nvidia", "gpu.nvidia.com"), ("amd", "gpu.amd.com")])
def test_switched_on_the_container_names_its_claim_and_keeps_no_device_key(
    fixed: tuple[Path, Path, Any], maker: str, device_class: str
) -> None:
    _, chart, _ = fixed
    _, objects = _render(chart, f"accel:\n  enabled: true\n  maker: {maker}\n  count: 2\n")
    pod = objects["Deployment/runner"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert pod["tolerations"] == [{"key": f"{maker}.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    (template,) = [d for k, d in objects.items() if k.startswith("ResourceClaimTemplate/")]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert (request["exactly"]["deviceClassName"], request["exactly"]["count"]) == (device_class, 2)


def test_with_the_accelerator_off_nothing_asks_for_a_device(fixed: tuple[Path, Path, Any]) -> None:
    original, chart, _ = fixed
    before, _ = _render(original, "")
    after, objects = _render(chart, "")
    assert after == before
    assert not [k for k in objects if k.startswith("ResourceClaimTemplate/")]
