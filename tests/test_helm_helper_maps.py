"""Pattern D where the helper builds the resources map in variables and writes it with toYaml (frigate's
`frigate.resources`: `dict "nvidia.com/gpu" 1`, `mergeOverwrite` into `.Values.resources`, `{{ $resources | toYaml }}`).

No line of the helper names the device key, so the helper line is found by marking every line its toYaml writes;
the DRA branch edits the map before that line (the device key out, the container's claim in) and the count is the
map's own, replayed. A small chart modelled on frigate's; one fix per module, shared by the tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.outcome import ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart

HELPERS = """\
{{- define "cam.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end }}

{{- define "cam.resources" -}}
{{- $resources := .Values.resources | default dict -}}
{{- $nvidiaresources := dict "nvidia.com/gpu" 1 -}}
{{- $nvidiaLimits := dict "limits" $nvidiaresources -}}
{{- if .Values.gpu.nvidia.enabled -}}
{{- $resources := mergeOverwrite $resources $nvidiaLimits -}}
{{- end -}}
{{ $resources | toYaml }}
{{- end -}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "cam.fullname" . }}
spec:
  selector:
    matchLabels: {app: cam}
  template:
    metadata:
      labels: {app: cam}
    spec:
      containers:
        - name: cam
          image: cam:1
          resources:
            {{- include "cam.resources" . | nindent 12 }}
    {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
    {{- end }}
"""
VALUES = """\
gpu:
  nvidia:
    # -- Enables NVIDIA GPU compatibility
    enabled: true
# -- Set resource limits/requests for the Pod(s)
resources:
  limits:
    memory: 1Gi
tolerations: []
"""


def _chart(root: Path) -> Path:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT}
    return chart_with(root, "cam", files, version="1.0.0")


def _render(chart: Path, *sets: str) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets, kube_version="1.34"))]


def _docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    return [d for _, text in _render(chart, *sets) for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("helper-maps")
    original = _chart(root / "original")
    chart = shutil.copytree(original, root / "fixed" / "cam")
    outcome = fix_chart(chart)
    return original, chart, outcome


def test_the_dra_branch_goes_inside_the_helper_that_writes_the_map(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, outcome = fixed
    assert {c.rel for c in outcome.changes} >= {"templates/_helpers.tpl", "templates/deployment.yaml"}
    assert not (chart / "templates" / "_dramigrate.tpl").exists()
    helpers = (chart / "templates" / "_helpers.tpl").read_text()
    assert '{{- define "cam.resources.draCount" -}}' in helpers
    # the map is edited before the helper's own toYaml line, which stays as it was
    assert helpers.index('omit (get $resources "limits"') < helpers.index("{{ $resources | toYaml }}")


def test_switch_off_renders_byte_identical(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, chart, _ = fixed
    for sets in ((), ("gpu.nvidia.enabled=false",), ("resources.limits.cpu=2",)):
        assert _render(chart, "dra.enabled=false", *sets) == _render(original, *sets)


def test_switch_on_claims_the_gpu_and_keeps_the_other_limits(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, _ = fixed
    docs = _docs(chart)
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"memory": "1Gi"}
    claim = container["resources"]["claims"][0]["name"]
    assert [c["name"] for c in pod["resourceClaims"]] == [claim]
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert template["metadata"]["name"] == pod["resourceClaims"][0]["resourceClaimTemplateName"]
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 1)
    # the chart's own GPU switch off: no device, no claim, nothing left behind
    off = _docs(chart, "gpu.nvidia.enabled=false")
    assert [d["kind"] for d in off] == ["Deployment"]
    assert "claims" not in off[0]["spec"]["template"]["spec"]["containers"][0]["resources"]


# llm-d-modelservice's `llm-d-modelservice.resources`: the helper writes `resources:`, `limits:` and `requests:` itself,
# each map a deep copy of the object's own with the GPU merged in; the object it gets carries the switch
LIMITS_HELPER = """\
{{- define "w.resources" -}}
{{- $limits := dict }}
{{- if and .resources .resources.limits }}
  {{- $limits = deepCopy .resources.limits }}
{{- end }}
{{- $requests := dict }}
{{- if and .resources .resources.requests }}
  {{- $requests = deepCopy .resources.requests }}
{{- end }}
resources:
{{- if gt (int .gpus) 0 }}
  {{- $limits = mergeOverwrite $limits (dict "nvidia.com/gpu" (toString .gpus)) }}
  {{- $requests = mergeOverwrite $requests (dict "nvidia.com/gpu" (toString .gpus)) }}
{{- end }}
  limits:
    {{- toYaml $limits | nindent 4 }}
  requests:
    {{- toYaml $requests | nindent 4 }}
{{- end }}
"""
LIMITS_DEPLOYMENT = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
        - name: worker
          image: w:1
          {{- include "w.resources" .Values.worker | nindent 10 }}
""",
    app="w",
)


def test_a_helper_that_writes_limits_and_requests_maps_gets_the_claim_beside_them(tmp_path: Path) -> None:
    files = {
        "values.yaml": "worker:\n  gpus: 2\n  resources:\n    limits:\n      memory: 1Gi\n",
        "templates/_helpers.tpl": LIMITS_HELPER,
        "templates/deployment.yaml": LIMITS_DEPLOYMENT,
    }
    original = chart_with(tmp_path / "original", "w", files, version="1.0.0")
    chart = shutil.copytree(original, tmp_path / "fixed" / "w")
    fix_chart(chart)
    assert _render(chart, "worker.dra.enabled=false") == _render(original)
    docs = _docs(chart)
    resources = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert resources["resources"]["limits"] == {"memory": "1Gi"}
    assert "requests" not in resources["resources"]  # only the GPU was there: the section goes, as fix - drops it
    assert len(resources["resources"]["claims"]) == 1
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_the_count_define_leaves_out_what_the_count_does_not_read(tmp_path: Path) -> None:
    """The helper names its container before it builds the map (infaas' `$shortModelName`): `draCount` replayed that
    line too, which wrote nothing and fed nothing it reads; it is left out. A line that changes the map (`set`,
    though into `$_`, which nothing reads) stays, and the count is the map's, as before."""
    helpers = HELPERS.replace(
        "{{- $nvidiaLimits := dict",
        '{{- $label := printf "%s-gpu" .Chart.Name -}}\n{{- $_ := set $nvidiaresources "nvidia.com/gpu" 2 -}}\n'
        "{{- $nvidiaLimits := dict",
    )
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": helpers, "templates/deployment.yaml": DEPLOYMENT}
    chart = chart_with(tmp_path, "cam", files, version="1.0.0")
    fix_chart(chart)
    written = (chart / "templates" / "_helpers.tpl").read_text()
    start = written.index('{{- define "cam.resources.draCount" -}}')
    stop = written.find("{{- define", start + 1)
    count = written[start : stop if stop > 0 else len(written)]
    assert "$label" not in count and '$_ := set $nvidiaresources "nvidia.com/gpu" 2' in count, count
    template = next(d for d in _docs(chart) if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
