"""A container whose resources are one values map, else another when the first is empty, written in the line
(`toYaml (.Values.server.resources | default .Values.defaults.resources)`), with `or`/`coalesce` (inline or through
a variable), or as an if/else (with/else) whose branches write one map or the other. The pass-through gave the pod
no claims (the inline chain: D failed), called it pattern F (`or`, `coalesce`), or gave the pod the fallback map's
claims whichever branch rendered (if/else); the pod's claims and toleration now follow the map that renders: the
sibling of the first map when it is set, else the other's (`ternary`, as for a chain in a variable).

The chart's defaults ask for a GPU in the fallback map and the user's file sets the first map with two: one fix
proves (D) both, the defaults with values-dra.yaml (the first map empty) and the user's values with its variant
(the first map set). Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

VALUES = """\
defaults:
  resources:
    limits:
      cpu: 1
      nvidia.com/gpu: 1
server:
  resources: {}
"""
OWN = "server:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n"
CPU_ONLY = "server:\n  resources:\n    limits:\n      cpu: 2\n"


def _toyaml(expr: str) -> str:
    return f"            {{{{- toYaml {expr} | nindent 12 }}}}\n"


SERVER, DEFAULTS = ".Values.server.resources", ".Values.defaults.resources"
# how the container takes one map or the other: (a line above the Deployment, the lines under `resources:`)
SHAPES = {
    "inline default": ("", _toyaml(f"({SERVER} | default {DEFAULTS})")),
    "inline or": ("", _toyaml(f"(or {SERVER} {DEFAULTS})")),
    "inline coalesce": ("", _toyaml(f"(coalesce {SERVER} {DEFAULTS})")),
    "variable or": (f"{{{{- $resources := or {SERVER} {DEFAULTS} }}}}\n", _toyaml("$resources")),
    "variable coalesce": (f"{{{{- $resources := coalesce {SERVER} {DEFAULTS} }}}}\n", _toyaml("$resources")),
    "if/else": (
        "",
        f"            {{{{- if {SERVER} }}}}\n{_toyaml(SERVER)}            {{{{- else }}}}\n{_toyaml(DEFAULTS)}"
        "            {{- end }}\n",
    ),
    "with/else": (
        "",
        f"            {{{{- with {SERVER} }}}}\n{_toyaml('.')}            {{{{- else }}}}\n{_toyaml(DEFAULTS)}"
        "            {{- end }}\n",
    ),
}


def _pod(chart: Path, *files: Path) -> tuple[dict, dict[str, int]]:
    import yaml

    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    return pod, counts


def _claimed(pod: dict, counts: dict[str, int]) -> int:
    """The devices the pod's one container asks for through claims, asserting none by device plugin."""
    (container,) = pod["containers"]
    resources = container.get("resources") or {}
    assert not any("nvidia.com/gpu" in (resources.get(s) or {}) for s in ("limits", "requests")), resources
    names = {c["name"] for c in resources.get("claims", [])}
    assert names == {c["name"] for c in pod.get("resourceClaims", [])}, pod
    assert all(t["key"] == "nvidia.com/gpu" for t in pod.get("tolerations", [])) and (
        bool(pod.get("tolerations")) == bool(names)
    ), pod
    return sum(counts[c["resourceClaimTemplateName"]] for c in pod.get("resourceClaims", []))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_claims_follow_the_map_that_renders(tmp_path: Path, shape: str) -> None:
    before, resources = SHAPES[shape]
    containers = "      containers:\n        - name: server\n          image: server:1\n          resources:\n"
    template = before + deployment("{{ .Release.Name }}-server", containers + resources, app="server")
    chart = chart_with(tmp_path, "srv", {"templates/deployment.yaml": template, "values.yaml": VALUES})
    own = tmp_path / "gpu.yaml"
    own.write_text(OWN)
    cpu = tmp_path / "cpu.yaml"
    cpu.write_text(CPU_ONLY)

    outcome = fix_chart(chart, values=(own,))
    # both value sets were proven with DRA values: the first map empty (defaults) and set (the user's file)
    assert any(c.startswith("default values (DRA values: values-dra.yaml") for c in outcome.checked), outcome.checked
    assert any(c.startswith("your values (DRA values:") for c in outcome.checked), outcome.checked

    # the first map empty: the fallback map's one GPU, claimed
    pod, counts = _pod(chart, chart / "values-dra.yaml")
    assert _claimed(pod, counts) == 1
    # the first map set with two GPUs: its own claim, not the fallback's
    pod, counts = _pod(chart, chart / "values-dra.yaml", own, tmp_path / "gpu-dra.yaml")
    assert _claimed(pod, counts) == 2
    # the first map set without a device: the pod claims nothing, though the fallback map's DRA values are given
    pod, counts = _pod(chart, chart / "values-dra.yaml", cpu)
    assert _claimed(pod, counts) == 0 and pod["containers"][0]["resources"] == {"limits": {"cpu": 2}}
    # the switch off: the chart renders the device-plugin request of the map that renders
    pod, _ = _pod(chart, own)
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}} and "resourceClaims" not in pod


@pytest.mark.parametrize("shape", list(SHAPES))
def test_no_claims_when_the_first_map_without_devices_renders(tmp_path: Path, shape: str) -> None:
    """Only the fallback map asks for a device: set, the first map (CPU only) renders, and the pod claims nothing,
    though the fallback map's DRA values are given (an if/else wrote the fallback's claims into every pod)."""
    before, resources = SHAPES[shape]
    containers = "      containers:\n        - name: server\n          image: server:1\n          resources:\n"
    template = before + deployment("{{ .Release.Name }}-server", containers + resources, app="server")
    values = VALUES.replace("      nvidia.com/gpu: 1\n", "")
    chart = chart_with(tmp_path, "srv", {"templates/deployment.yaml": template, "values.yaml": values})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("defaults:\n  resources:\n    limits:\n      cpu: 1\n      nvidia.com/gpu: 1\n")
    cpu = tmp_path / "cpu.yaml"
    cpu.write_text(CPU_ONLY)

    fix_chart(chart, values=(gpu,))

    pod, counts = _pod(chart, gpu, tmp_path / "gpu-dra.yaml")
    assert _claimed(pod, counts) == 1
    pod, counts = _pod(chart, gpu, tmp_path / "gpu-dra.yaml", cpu)
    assert _claimed(pod, counts) == 0 and pod["containers"][0]["resources"] == {"limits": {"cpu": 2}}
