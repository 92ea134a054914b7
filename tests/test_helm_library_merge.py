"""A chart whose pod a library chart writes by merging a define of the chart's own into its pod spec (corvid, under
DreamingRaven's ollama chart: `include "corvid.podSpec" (list . "ollama-podSpec")`), with the container's
`resources` (else `resourcesDefault`) passed through whole. The library renders no pod `resourceClaims`, but its
merge takes any key of the chart's define into the pod: `fix` adds the `resourceClaims` pass-through to that define
of the chart (the library, vendored or packed, is left as it is: `helm dependency update` would undo a change
there), the claim-template file, and the DRA variants of the values files; proven (L) and (D).

A tiny library chart of the same shape is written in the test (no file of the real library); renders are real."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import yaml
from conftest import chart_with, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LIBRARY = {
    "corvid/Chart.yaml": "apiVersion: v2\nname: corvid\ntype: library\nversion: 0.13.1\n",
    "corvid/templates/_util.yaml": """\
{{- define "corvid.util.merge" -}}
{{- $top := first . -}}
{{- $overrides := fromYaml (include (index . 1) $top) | default (dict ) -}}
{{- $tpl := fromYaml (include (index . 2) $top) | default (dict ) -}}
{{- toYaml (merge $overrides $tpl) -}}
{{- end -}}
""",
    "corvid/templates/_podSpec.yaml": """\
{{- define "corvid.podSpec.tpl" -}}
containers:
- {{ include "corvid.container.tpl" . | indent 2 | trim }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- define "corvid.podSpec" -}}
{{- include "corvid.util.merge" (append . "corvid.podSpec.tpl") -}}
{{- end -}}
""",
    "corvid/templates/_container.yaml": """\
{{- define "corvid.container.tpl" -}}
name: {{ .Chart.Name }}
image: busybox
{{- with .Values.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if not .Values.resources }}
{{- with .Values.resourcesDefault }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}
{{- define "corvid.container" -}}
{{- include "corvid.util.merge" (append . "corvid.container.tpl") -}}
{{- end -}}
""",
}
POD = """\
{{- define "app-container" -}}
{{- end -}}
{{- define "app-podSpec" -}}
containers:
- {{ include "corvid.container" (list . "app-container") | indent 2 | trim }}
{{- end -}}
"""
DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      {{- include "corvid.podSpec" (list . "app-podSpec") | nindent 6 }}
"""
VALUES = """\
tolerations: []
# -- default resources if not specified by user
resourcesDefault:
  limits:
    nvidia.com/gpu: 1
# -- raw resources block overrides for user
resources:
"""


def _app(root: Path, packed: bool) -> Path:
    files = {"templates/_pod.yaml": POD, "templates/deploy.yaml": DEPLOY, "values.yaml": VALUES}
    chart = chart_with(root, "app", files)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: corvid\n    version: 0.13.1\n"
        "    repository: oci://registry.example.com/charts\n"
    )
    if packed:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            for name, text in LIBRARY.items():
                info = tarfile.TarInfo(name)
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))
        (chart / "charts").mkdir()
        (chart / "charts/corvid-0.13.1.tgz").write_bytes(out.getvalue())
    else:
        for name, text in LIBRARY.items():
            (chart / "charts" / name).parent.mkdir(parents=True, exist_ok=True)
            (chart / "charts" / name).write_text(text)
    return chart


def _library(chart: Path) -> dict[str, bytes]:
    files = sorted(p for p in (chart / "charts").rglob("*") if p.is_file())
    return {p.relative_to(chart).as_posix(): p.read_bytes() for p in files}


def test_a_gpu_in_the_defaults_of_a_vendored_corvid_library_goes_to_a_claim_through_the_charts_own_define(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path, packed=False)
    library = _library(chart)
    fix_chart(chart)  # was: manual, 'the objects are written by the library chart charts/corvid'
    assert _library(chart) == library  # the library is left as it is
    assert (chart / "templates/deploy.yaml").read_text() == DEPLOY
    pod = (chart / "templates/_pod.yaml").read_text()
    assert "{{- with .Values.resourceClaims }}\nresourceClaims:\n" in pod
    assert pod.index('define "app-podSpec"') < pod.index("resourceClaims") and pod.endswith("{{- end -}}\n")
    assert "resourceClaims: []" in (chart / "values.yaml").read_text()
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    spec = pods["release-name-app"]
    claim = spec["resourceClaims"][0]
    assert counts == {claim["resourceClaimTemplateName"]: 1}
    assert spec["containers"][0]["resources"] == {"claims": [{"name": claim["name"]}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    _, _, before = dra_render(chart, chart / "values.yaml")  # without the DRA values: the device-plugin request
    assert before["release-name-app"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert "resourceClaims" not in before["release-name-app"]


def test_a_users_values_file_over_a_packed_corvid_library_gets_its_dra_variant(tmp_path: Path) -> None:
    chart = _app(tmp_path, packed=True)
    library = _library(chart)
    mine = tmp_path / "mig.yaml"
    mine.write_text("resources:\n  limits:\n    nvidia.com/mig-1g.10gb: 2\n    memory: 8Gi\n")
    fix_chart(chart, values=(mine,))  # was: manual, as for the vendored library
    assert _library(chart) == library
    variant = tmp_path / "mig-dra.yaml"
    values = yaml.safe_load(variant.read_text())
    assert values["resources"]["limits"] == {"memory": "8Gi"}  # the device key replaced in the file by the claim
    _, counts, pods = dra_render(chart, variant)
    spec = pods["release-name-app"]
    claim = spec["resourceClaims"][0]
    assert counts == {claim["resourceClaimTemplateName"]: 2}
    assert spec["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": claim["name"]}]}


def test_a_define_that_ends_on_its_own_first_line_is_manual_work_naming_the_define_corvid_merges(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path, packed=False)
    one_line = '{{- define "app-podSpec" -}}{{ dict "containers" (list (include "corvid.container" (list . "app-container") | fromYaml)) | toYaml }}{{- end -}}\n'  # noqa: E501
    (chart / "templates/_pod.yaml").write_text(POD.split('{{- define "app-podSpec"')[0] + one_line)
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.changes
    # was: 'the objects are written by the library chart charts/corvid', with no word of the chart's own define
    assert "corvid 0.13.1 passes the container's resources through whole" in outcome.manual, outcome.manual
    assert "the define app-podSpec does not end on a line of its own" in outcome.manual
