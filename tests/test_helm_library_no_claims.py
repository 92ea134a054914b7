"""A device request written by a packed library chart that has no values place for a pod's resourceClaims
(k8s-at-home common under johanneskastl's jellyfin: the container's `resources` map passed through whole with
`toYaml`, the pod spec from a fixed set of values; TrueNAS common: the device keys from `scaleGPU`). The chart's
maintainer cannot change the library, so the chart is manual work; the message names the chart's template line, the
library, its version and what it lacks (recorded per version in rules/library-values.json, else read from the
library). Tiny libraries of the test's own, packed in the test; renders are real."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def _library(prefix: str) -> dict[str, str]:
    """A library whose pod define takes a fixed set of values and whose container define writes `resources` whole."""
    return {
        "templates/_main.tpl": f"""\
{{{{- define "{prefix}all" -}}}}
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


def _packed(top: str, files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


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
    (chart / f"charts/{name}-{version}.tgz").write_bytes(_packed(name, library))
    return chart


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


@pytest.mark.parametrize("version", ["4.5.2", "5.0.5"])  # the first and last of the versions recorded
def test_a_library_recorded_without_pod_claims_is_named_with_its_version_and_what_it_lacks(
    tmp_path: Path, version: str
) -> None:
    chart = _app(tmp_path, "common", version, "common.")  # the shape and a version rules/library-values.json records
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    # was: 'templates/common.yaml:1: pattern D (a named helper or library include): no line of a helper in this
    # chart writes the device key, ...': no word of the library, its version or what it lacks
    assert outcome.manual.startswith(
        f"templates/common.yaml:1: pattern D (library chart common {version}, packed in charts/common-{version}.tgz): "
        "its define common.controller.mainContainer (templates/_container.tpl:6) writes the device key from "
        ".Values.resources"
    ), outcome.manual
    assert f"common {version} renders no resourceClaims of a pod from values: its define common.controller.pod" in (
        outcome.manual
    )
    assert "it passes the container's resources through whole (resources" in outcome.manual
    assert "--strategy extended-resource" in outcome.manual
    # only the pod's define would need overriding: the container takes its resources map whole already
    lines = len(_library("common.")["templates/_pod.tpl"].splitlines())  # the define is the whole file
    assert f"for common.controller.pod (templates/_pod.tpl:1, {lines} lines)" in outcome.manual, outcome.manual
    assert "common.controller.mainContainer (templates/_container.tpl:1" not in outcome.manual
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before


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


def test_a_recorded_library_unpacked_in_charts_is_named_as_the_packed_one_is(tmp_path: Path) -> None:
    """k8s-at-home's plex and games-on-whales vendor common 4.5.2 unpacked in charts/common. Was: 'the objects are
    written by the library chart charts/common (`include "common.all"`) ... the library templates have no place for
    the DRA claim': neither the library's version, nor its define and line, nor what it lacks."""
    chart = _app(tmp_path, "common", "4.5.2", "common.", unpacked=True)
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    assert outcome.manual.startswith(
        "templates/common.yaml:1: pattern D (library chart common 4.5.2, unpacked in charts/common): its define "
        "common.controller.mainContainer (templates/_container.tpl:6) writes the device key from .Values.resources"
    ), outcome.manual
    assert "a change in the library would be undone by `helm dependency update`" in outcome.manual
    assert "common 4.5.2 renders no resourceClaims of a pod from values: its define common.controller.pod" in (
        outcome.manual
    )
    assert "for common.controller.pod (templates/_pod.tpl:1" in outcome.manual, outcome.manual
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
