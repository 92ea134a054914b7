"""A container helper that builds its resources map in variables, its device key a vendor choice made in another
helper (the shape of ericzadara's llama-cpp chart: `$gpuKey := include "x.gpuResourceKey" .`, which maps
`gpu.type` to `gpu.nvidiaResource`, `gpu.amdResource` or `gpu.intelResource`, then `set $limits $gpuKey count` and
`toYaml $resources`). Fixed with the AMD values, the chart must still migrate when the user later switches vendor:
each vendor's key the values name gets its own claim, and any other device resource fails the render with the
switch on instead of staying a device-plugin request. Real renders; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import HelmError

HELPERS = """\
{{- define "app.gpuKey" -}}
{{- if eq .Values.gpu.type "nvidia" }}
{{- .Values.gpu.nvidiaResource }}
{{- else if eq .Values.gpu.type "amd" }}
{{- .Values.gpu.amdResource }}
{{- else if eq .Values.gpu.type "intel" }}
{{- .Values.gpu.intelResource }}
{{- else if eq .Values.gpu.type "custom" }}
{{- .Values.gpu.customResource }}
{{- end }}
{{- end }}

{{- define "app.container" -}}
- name: server
  image: server
  {{- $resources := deepCopy (.Values.resources | default dict) }}
  {{- if .Values.gpu.enabled }}
  {{- $gpuKey := include "app.gpuKey" . }}
  {{- if $gpuKey }}
  {{- $limits := $resources.limits | default dict }}
  {{- $_ := set $limits $gpuKey (.Values.gpu.count | toString) }}
  {{- $_ := set $resources "limits" $limits }}
  {{- end }}
  {{- end }}
  {{- if $resources }}
  resources:
    {{- toYaml $resources | nindent 4 }}
  {{- end }}
{{- end }}
"""
SERVER = deployment(
    "server",
    """\
      containers:
        {{- include "app.container" . | nindent 8 }}
""",
)
VALUES = """\
gpu:
  enabled: false
  type: nvidia
  count: 1
  nvidiaResource: nvidia.com/gpu
  amdResource: amd.com/gpu
  intelResource: gpu.intel.com/i915
  customResource: ""
resources:
  requests:
    cpu: "1"
"""
AMD = "gpu:\n  enabled: true\n  type: amd\n  count: 2\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = chart_with(tmp_path_factory.mktemp("map-vendor"), "app", files)
    (chart / "ci").mkdir()
    (chart / "ci" / "amd.yaml").write_text(AMD)
    return chart, fix_chart(chart, values=(chart / "ci" / "amd.yaml",))


def _objects(chart: Path, *sets: str) -> dict[str, Any]:
    """The objects `helm template -f ci/amd.yaml --set ...` renders from the fixed chart (the real Helm engine)."""
    from dramigrate.helm.render import RenderOptions, render_chart

    options = RenderOptions(values_files=(chart / "ci" / "amd.yaml",), set_values=sets, kube_version="1.34")
    docs = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text)]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


@pytest.mark.parametrize(
    ("vendor", "resource", "device_class"),
    [("nvidia", "nvidia.com/gpu", "gpu.nvidia.com"), ("intel", "gpu.intel.com/i915", "gpu.intel.com")],
)
def test_another_vendor_with_the_switch_on_gets_its_claim(
    fixed: tuple[Path, Any], vendor: str, resource: str, device_class: str
) -> None:
    """Was: the DRA branch took only amd.com/gpu, so with gpu.type=nvidia the pod kept nvidia.com/gpu and no claim."""
    chart, outcome = fixed
    objects = _objects(chart, "dra.enabled=true", f"gpu.type={vendor}")
    pod = objects["Deployment/server"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}
    assert [t["key"] for t in pod["tolerations"]] == [resource]
    (claim,) = [d for key, d in objects.items() if key.startswith("ResourceClaimTemplate/")]
    (request,) = claim["spec"]["spec"]["devices"]["requests"]
    assert (request["exactly"]["deviceClassName"], request["exactly"]["count"]) == (device_class, 2)
    off = _objects(chart, "dra.enabled=false", f"gpu.type={vendor}")
    assert off["Deployment/server"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        resource: "2"
    }
    assert f'gpu.type changed to "{vendor}" (a vendor of the device choice)' in outcome.checked  # the proof rendered it


def test_the_rewrite_writes_no_line_a_maintainer_must_scroll_but_a_message(fixed: tuple[Path, Any]) -> None:
    """Was: the guard (switch, range over the map, the rule packs' regular expression, the message) on one line of
    900 characters, and each vendor's count in one `if`/`else if` line of 650: now each action on a line of its own,
    the regular expression cut at its alternatives. A `fail` line keeps its message whole (grep finds it)."""
    chart, _ = fixed
    lines = [line.strip() for p in (chart / "templates").iterdir() for line in p.read_text().splitlines()]
    assert [line for line in lines if len(line) > 240 and not line.startswith('{{- fail "')] == []


def test_a_device_resource_no_branch_takes_fails_the_render_with_the_switch_on(fixed: tuple[Path, Any]) -> None:
    """A vendor whose resource the values do not name (a MIG profile) is refused, not left to the device plugin."""
    chart, _ = fixed
    custom = ("gpu.type=custom", "gpu.customResource=nvidia.com/mig-1g.5gb")
    with pytest.raises(HelmError, match="ask for a device resource the DRA claim of the chart does not take"):
        _objects(chart, "dra.enabled=true", *custom)
    off = _objects(chart, "dra.enabled=false", *custom)["Deployment/server"]["spec"]["template"]["spec"]
    assert off["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.5gb": "2"}


SECTION_HELPERS = """\
{{- define "app.gpuKey" -}}
{{- if eq .Values.gpu.type "nvidia" }}
{{- .Values.gpu.nvidiaResource }}
{{- else if eq .Values.gpu.type "amd" }}
{{- .Values.gpu.amdResource }}
{{- end }}
{{- end }}

{{- define "app.resources" -}}
{{- $limits := dict "cpu" "1" }}
{{- if .Values.gpu.enabled }}
{{- $_ := set $limits (include "app.gpuKey" .) (.Values.gpu.count | toString) }}
{{- end }}
limits:
  {{- toYaml $limits | nindent 2 }}
{{- end }}
"""
CONTAINER = """\
- name: server
          image: server
          resources:
            {{- include "app.resources" . | nindent 12 }}"""
SECTION_SERVER = SERVER.replace('{{- include "app.container" . | nindent 8 }}', CONTAINER)


def test_the_proof_refuses_a_rewrite_that_leaves_another_vendor_on_its_device_plugin(tmp_path: Path) -> None:
    """A `limits:` section written with toYaml takes one device resource only; the values pick amd, so no render but
    the vendor flip's shows that gpu.type=nvidia would keep nvidia.com/gpu with the switch on (was: proven, written)."""
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    values = VALUES.replace("enabled: false", "enabled: true").replace("type: nvidia", "type: amd")
    files = {"templates/_helpers.tpl": SECTION_HELPERS, "templates/server.yaml": SECTION_SERVER, "values.yaml": values}
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert 'with gpu.type changed to "nvidia" (a vendor of the device choice) and the DRA switch on' in outcome.manual
    assert "still asks the device plugin for nvidia.com/gpu" in outcome.manual
