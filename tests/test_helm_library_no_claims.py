"""A device request written by a packed library chart that has no values place for a pod's resourceClaims
(k8s-at-home common under plex, games-on-whales and johanneskastl's jellyfin: the container's `resources` map passed
through whole with `toYaml`, the pod spec from a fixed set of values; TrueNAS common: the device keys from
`scaleGPU`). The chart's maintainer cannot change the library. For k8s-at-home common (recorded per version in
rules/library-values.json) fix wraps the chart's own `{{ include "common.all" . }}` so that the values'
`resourceClaims`, when set, reach each pod it renders; other libraries leave the chart manual work, the message
naming the chart's template line, the library, its version and what it lacks. Tiny libraries of the test's own,
packed in the test; renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import assert_second_fix_quiet, chart_with, dra_render, fix_chart, packed_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def _library(prefix: str) -> dict[str, str]:
    """A library whose pod define takes a fixed set of values and whose container define writes `resources` whole."""
    return {
        "templates/_main.tpl": f"""\
{{{{- define "{prefix}all" -}}}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{{{ .Release.Name }}}}
spec:
  ports:
    - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}
spec:
  selector:
    matchLabels: {{app: x}}
  template:
    metadata:
      labels: {{app: x}}
    spec:
      {{{{- include "{prefix}controller.pod" . | nindent 6 }}}}
{{{{- end -}}}}
""",
        "templates/_pod.tpl": f"""\
{{{{- define "{prefix}controller.pod" -}}}}
{{{{- with .Values.nodeSelector }}}}
nodeSelector:
  {{{{- toYaml . | nindent 2 }}}}
{{{{- end }}}}
{{{{- with .Values.tolerations }}}}
tolerations:
  {{{{- toYaml . | nindent 2 }}}}
{{{{- end }}}}
containers:
  {{{{- include "{prefix}controller.mainContainer" . | nindent 2 }}}}
{{{{- end -}}}}
""",
        "templates/_container.tpl": f"""\
{{{{- define "{prefix}controller.mainContainer" -}}}}
- name: main
  image: busybox
  {{{{- with .Values.resources }}}}
  resources:
    {{{{- toYaml . | nindent 4 }}}}
  {{{{- end }}}}
{{{{- end -}}}}
""",
    }


def _app(root: Path, name: str, version: str, prefix: str, unpacked: bool = False) -> Path:
    chart = chart_with(
        root,
        "app",
        {
            "templates/common.yaml": f'{{{{ include "{prefix}all" . }}}}\n',
            "values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n",
        },
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\n"
        f"dependencies:\n  - name: {name}\n    version: {version}\n    repository: https://example.com/charts\n"
    )
    library = {"Chart.yaml": f"apiVersion: v2\nname: {name}\ntype: library\nversion: {version}\n", **_library(prefix)}
    (chart / "charts").mkdir()
    if unpacked:  # vendored as `helm dependency build` and an untar leave it (k8s-at-home plex's charts/common)
        for rel, text in library.items():
            (chart / "charts" / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (chart / "charts" / name / rel).write_text(text)
        return chart
    (chart / f"charts/{name}-{version}.tgz").write_bytes(packed_chart(name, library))
    return chart


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


@pytest.mark.parametrize(("version", "unpacked"), [("4.5.2", False), ("5.0.5", False), ("4.5.2", True)])
def test_a_k8s_at_home_library_gets_its_include_wrapped_to_name_the_pods_claims(
    tmp_path: Path, version: str, unpacked: bool
) -> None:
    """Was manual work: 'common 4.5.2 renders no resourceClaims of a pod from values ... so no values can move the
    request to a claim'. The library passes the container's resources through whole and renders the pod's
    tolerations from values; only the pod's resourceClaims have no place, so the chart's own include of common.all
    adds them from values, and only when they are set (plex and games-on-whales vendor 4.5.2 unpacked in
    charts/common; johanneskastl's jellyfin packs his fork's 5.0.5)."""
    chart = _app(tmp_path, "common", version, "common.", unpacked)
    library = {p: p.read_bytes() for p in (chart / "charts").rglob("*") if p.is_file()}
    before = _render(chart)
    outcome = fix_chart(chart)
    assert {p: p.read_bytes() for p in (chart / "charts").rglob("*") if p.is_file()} == library  # left as it is
    wrapped = (chart / "templates/common.yaml").read_text()
    assert '{{ include "common.all" . }}' in wrapped and ".Values.resourceClaims" in wrapped
    assert _render(chart) == before  # the defaults name no claim: the wrapped include renders as before
    assert "default values (DRA values: values-dra.yaml)" in outcome.checked, outcome.checked
    docs, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1]
    pod = pods["release-name"]
    claim = pod["resourceClaims"][0]
    assert claim["resourceClaimTemplateName"] in counts
    assert pod["containers"][0]["resources"] == {"claims": [{"name": claim["name"]}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert [d for d in docs if d["kind"] == "Service"] == [d for d in before if d["kind"] == "Service"]
    assert_second_fix_quiet(chart)  # was exit 1: 'no template of the chart renders {{ include "common.all" . }}'


def test_a_k8s_at_home_chart_without_resources_in_its_values_documents_the_pods_claims_at_the_end(
    tmp_path: Path,
) -> None:
    """jellyfin's values.yaml has `resources` only in a comment; the GPU comes from a values file of the user."""
    chart = _app(tmp_path, "common", "5.0.5", "common.")
    (chart / "values.yaml").write_text("# -- Node selector\nnodeSelector: {}\n# resources:\n#   limits: {}\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    fix_chart(chart, values=(gpu,))
    values = (chart / "values.yaml").read_text()
    assert values.startswith("# -- Node selector\nnodeSelector: {}\n# resources:\n#   limits: {}\n")
    added = yaml.safe_load(values)
    assert added["resourceClaims"] == [] and added["resourceClaimTemplates"] == {}  # the switch, off
    assert "# -- DRA ResourceClaims of the pod" in values
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert list(counts.values()) == [2]
    assert pods["release-name"]["resourceClaims"][0]["resourceClaimTemplateName"] in counts


def test_a_k8s_at_home_chart_that_includes_common_all_inside_a_line_is_manual_work_saying_so(tmp_path: Path) -> None:
    chart = _app(tmp_path, "common", "4.5.2", "common.")
    (chart / "templates/common.yaml").write_text('{{ include "common.all" . | nindent 0 }}\n')
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    assert 'no template of the chart renders {{ include "common.all" . }} on a line of its own' in outcome.manual


def _render(chart: Path) -> list:
    from dramigrate.helm.render import RenderOptions, render_chart

    return [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]


def test_a_library_of_no_record_that_passes_the_resources_map_through_is_named_too(tmp_path: Path) -> None:
    chart = _app(tmp_path, "mini", "0.3.0", "mini.")
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    # was: 'no line of a helper in this chart writes the device key ...'
    assert outcome.manual.startswith(
        "templates/common.yaml:1: pattern D (library chart mini 0.3.0, packed in charts/mini-0.3.0.tgz): its define "
        "mini.controller.mainContainer (templates/_container.tpl:6)"
    ), outcome.manual
    assert "no values place for the resourceClaims of a pod" in outcome.manual


def test_a_recorded_library_version_outside_the_checked_range_gets_the_message_read_from_the_library(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path, "common", "5.0.6", "common.")  # not checked: nothing claimed of it
    outcome = _fix(chart)
    assert "pattern D (library chart common 5.0.6, packed in charts/common-5.0.6.tgz)" in outcome.manual
    assert "rules/library-values.json" not in outcome.manual
    assert "no values place for the resourceClaims of a pod" in outcome.manual


HARDCODED = """\
{{- define "app.hardcodedValues" -}}
{{- if .Values.graphic_resources }}
resources:
  requests:
    {{- .Values.graphic_resources | toYaml | nindent 4 }}
  limits:
    {{- .Values.graphic_resources | toYaml | nindent 4 }}
{{- end }}
{{- end -}}
{{- $_ := mergeOverwrite .Values (include "app.hardcodedValues" . | fromYaml) -}}
{{ include "common.all" . }}
"""


def test_a_k8s_at_home_chart_whose_own_values_define_copies_the_device_keys_says_where_the_change_goes(
    tmp_path: Path,
) -> None:
    """games-on-whales: its `hardcodedValues` define, merged into the chart's values, copies `graphic_resources` into
    the requests and limits of its containers, where no values file reaches them. Was: the message ended at "does
    not take its resources whole from one values map", naming nothing a maintainer could change."""
    chart = _app(tmp_path, "common", "4.5.2", "common.", unpacked=True)
    (chart / "templates/common.yaml").write_text(HARDCODED)
    (chart / "values.yaml").write_text("graphic_resources:\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("graphic_resources:\n  nvidia.com/gpu: 1\n")
    settings = Settings(kube_version="1.34")
    options = ChartOptions(values_files=(gpu,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.proven and not outcome.changes
    assert (
        "the chart's define app.hardcodedValues is merged into its values and copies the device keys into the "
        "resources it returns (templates/common.yaml, lines 5, 7)"
    ) in outcome.manual, outcome.manual
    assert "that define writes each container's resources.claims in place of the device keys" in outcome.manual
