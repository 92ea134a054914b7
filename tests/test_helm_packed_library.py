"""A device request written by a packed library chart (`charts/<lib>.tgz`, TrueNAS' common under photoprism and
tdarr): the chart's own helper turns a values map into the values the library reads, and the library writes the
device key. The rewrite cannot change the packed library and the library has no values place for claims, so the
chart is manual work, and the message names the library, its define and line, the values it reads, and the chart's
helper and template line that fill them. A tiny library chart packed in the test; renders are real."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LIBRARY = {
    "mylib/Chart.yaml": "apiVersion: v2\nname: mylib\ntype: library\nversion: 1.2.3\n",
    "mylib/templates/_deployment.tpl": """\
{{- define "mylib.deployment" -}}
{{- $gpus := list -}}
{{- range $entry := .Values.scaleGPU -}}
  {{- $gpus = append $gpus $entry.gpu -}}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: main
          image: busybox
          resources:
            limits:
              cpu: 1
              {{- range $gpu := $gpus }}
              {{- range $k, $v := $gpu }}
              {{ $k }}: {{ $v | quote }}
              {{- end }}
              {{- end }}
{{- end -}}
""",
}
HELPERS = """\
{{- define "app.workload" -}}
{{- with .Values.appGPU }}
scaleGPU:
  {{- range $key, $value := . }}
  - gpu:
      {{ $key }}: {{ $value }}
  {{- end }}
{{- end }}
{{- end -}}
"""
APP = """\
{{- $_ := mustMergeOverwrite .Values (include "app.workload" $ | fromYaml) -}}
{{- include "mylib.deployment" . -}}
"""
CHART = (
    "apiVersion: v2\nname: app\nversion: 0.1.0\n"
    "dependencies:\n  - name: mylib\n    version: 1.2.3\n    repository: file://../mylib\n"
)


def _packed(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _app(root: Path, swaps: tuple[tuple[str, str], ...] = ()) -> Path:
    """The chart on the packed library, with each (text, replacement) of `swaps` made in order in every file, name and
    the archive's name."""

    def swapped(text: str) -> str:
        for was, now in swaps:
            text = text.replace(was, now)
        return text

    files = {
        "Chart.yaml": CHART,
        "templates/_helpers.tpl": HELPERS,
        "templates/app.yaml": APP,
        "values.yaml": "appGPU:\n  nvidia.com/gpu: 1\n",
    }
    chart = chart_with(root, "app", {rel: swapped(text) for rel, text in files.items()})
    (chart / "charts").mkdir()
    library = {swapped(rel): swapped(text) for rel, text in LIBRARY.items()}
    (chart / swapped("charts/mylib-1.2.3.tgz")).write_bytes(_packed(library))
    return chart


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def test_a_request_written_by_a_packed_library_names_the_library_define_and_the_values_feeding_it(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path)
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    # was: 'pattern F (another template shape): the idiomatic rewrite takes pattern A only'
    assert outcome.manual.startswith("templates/_helpers.tpl:2: pattern D (library chart mylib 1.2.3, packed in "), (
        outcome.manual
    )
    assert "charts/mylib-1.2.3.tgz" in outcome.manual
    assert "its define mylib.deployment (templates/_deployment.tpl:25) writes the device key" in outcome.manual
    assert "from .Values.scaleGPU, which the chart helper app.workload fills from appGPU" in outcome.manual
    assert "no values place for the resourceClaims of a pod" in outcome.manual
    assert (chart / "charts/mylib-1.2.3.tgz").is_file() and not (chart / "charts/mylib").exists()


# TrueCharts common 29's `_strategyType.tpl`: an action carried over lines, with a quoted argument shaped like a key
WARNING = """\
{{- define "mylib.warn" -}}
  {{- if gt (len .vols) 1 -}}
    {{- include "mylib.add" (dict "warn" (printf
        "WARNING: The volume(s) [%s] are shared" (join "," .vols)
      )) -}}
  {{- end -}}
{{- end -}}
"""


def test_a_library_define_with_an_action_over_several_lines_is_still_read(tmp_path: Path) -> None:
    """A marker added at the end of the quoted argument's line broke the library's parse (`unexpected "#" in operand`),
    so no define was found to write the key, and the message said only that no helper line of the chart writes it."""
    chart = _app(tmp_path)
    library = {**LIBRARY, "mylib/templates/_warn.tpl": WARNING}
    (chart / "charts/mylib-1.2.3.tgz").write_bytes(_packed(library))
    outcome = _fix(chart)
    assert "its define mylib.deployment (templates/_deployment.tpl:25) writes the device key" in outcome.manual, (
        outcome.manual
    )


def test_a_folder_of_the_chart_named_like_a_scratch_folder_does_not_break_the_packed_library_path(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path)
    (chart / "charts/.unpack-mylib-1.2.3").mkdir()
    before = sorted(p.relative_to(chart).as_posix() for p in chart.rglob("*"))
    outcome = _fix(chart)
    # was: 'checking the chart: File exists' for the whole chart
    assert "pattern D (library chart mylib 1.2.3, packed in charts/mylib-1.2.3.tgz)" in outcome.manual, outcome.manual
    assert sorted(p.relative_to(chart).as_posix() for p in chart.rglob("*")) == before


def test_the_message_says_which_library_defines_a_chart_would_have_to_override_and_how_many_lines(
    tmp_path: Path,
) -> None:
    chart = _app(tmp_path)
    outcome = _fix(chart)
    # was: only 'the change belongs in the library': no word of overriding the library's define from the chart
    body = LIBRARY["mylib/templates/_deployment.tpl"].splitlines()
    lines = len(body)  # the define is the whole file here: it writes the pod's containers and the device key
    assert f"for mylib.deployment (templates/_deployment.tpl:1, {lines} lines): {lines} lines copied" in outcome.manual
    assert "a define of the same name in the chart's templates/" in outcome.manual
    assert "a container's resources.claims from values" in outcome.manual


RESOURCES_LIBRARY = {
    "reslib/Chart.yaml": "apiVersion: v2\nname: reslib\ntype: library\nversion: 2.0.0\n",
    "reslib/templates/_resources.tpl": """\
{{- define "reslib.resources" -}}
resources:
  limits:
    {{- range $k, $v := .limits }}
    {{ $k }}: {{ $v }}
    {{- end }}
{{- end -}}
""",
}
# the first template (by name) reads the same top-level values key for something else
CONFIG = """\
{{- with .Values.app.config }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data: {{ toJson . }}
{{- end }}
"""
POD = """\
{{- with .Values.app.resources }}
apiVersion: v1
kind: Pod
metadata:
  name: worker
spec:
  containers:
    - name: worker
      image: busybox
{{ include "reslib.resources" . | indent 6 }}
{{- end }}
"""


def test_a_library_define_the_chart_includes_itself_is_named_at_that_include(tmp_path: Path) -> None:
    """No chart helper fills the library's values: the refusal names the chart line that includes the library's
    define (templates/pod.yaml:10), not the first template that happens to read the same top-level key (it named
    templates/a-config.yaml:1, a ConfigMap)."""
    files = {
        "Chart.yaml": CHART.replace("mylib", "reslib").replace("1.2.3", "2.0.0"),
        "templates/a-config.yaml": CONFIG,
        "templates/pod.yaml": POD,
        "values.yaml": "app:\n  config: {a: b}\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    (chart / "charts").mkdir()
    (chart / "charts/reslib-2.0.0.tgz").write_bytes(_packed(RESOURCES_LIBRARY))
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    assert outcome.manual.startswith("templates/pod.yaml:10: pattern D (library chart reslib 2.0.0"), outcome.manual
    assert "its define reslib.resources (templates/_resources.tpl:5) writes the device key" in outcome.manual


def _recorded(root: Path, repository: str) -> Path:
    """The chart above on a library named and versioned as one rules/library-values.json records without a values
    place for claims (TrueNAS common 1.2.9: defines `ix.v1.common.*`), taken from `repository`."""
    swaps = (
        ("mylib.deployment", "ix.v1.common.lib.workload.deployment"),
        ("mylib", "common"),
        ("1.2.3", "1.2.9"),
        ("file://../common", repository),
    )
    return _app(root, swaps)


def test_a_recorded_library_of_the_maintainers_own_folder_says_where_to_change_it(tmp_path: Path) -> None:
    """The TrueNAS catalog's charts take common from `file://../../../common`, a folder of the same repository: the
    library is the maintainer's to change, so the message says which defines must gain what and where. Was: 'the
    change belongs in the library (a pod's resourceClaims from values)', naming neither the container's claims nor
    where the library's source is."""
    outcome = _fix(_recorded(tmp_path, "file://../../../common"))
    assert not outcome.proven and not outcome.changes
    assert (
        "the change belongs in the library: its define ix.v1.common.lib.workload.pod must render a pod's "
        "resourceClaims from values and its define ix.v1.common.lib.container.resources a container's "
        "resources.claims (the library's source is the chart's dependency file://../../../common (Chart.yaml): change "
        "it there, bump its version and run `helm dependency update`), and the chart's values set them in place of "
        "the device keys"
    ) in outcome.manual, outcome.manual


def test_a_recorded_library_from_a_chart_repository_names_a_new_version_of_it(tmp_path: Path) -> None:
    outcome = _fix(_recorded(tmp_path, "https://charts.example.com"))
    assert "(a new version of common from its maintainers, then `helm dependency update`)" in outcome.manual
    assert "file://" not in outcome.manual


def test_the_values_named_are_those_read_nearest_the_device_key_not_the_defines_first_read(tmp_path: Path) -> None:
    """DND-IT's common library: its container define reads `image.pullPolicy` first and writes the device key from
    `toYaml` of a variable set from `.Values.resources` just above it; the message named `image.pullPolicy`."""
    swaps = (
        (
            "{{- $gpus := list -}}",
            "{{- $pull := .Values.image.pullPolicy -}}\n{{- $gpus := list -}}",
        ),
        (
            "          resources:\n            limits:\n              cpu: 1\n"
            "              {{- range $gpu := $gpus }}\n              {{- range $k, $v := $gpu }}\n"
            "              {{ $k }}: {{ $v | quote }}\n              {{- end }}\n              {{- end }}",
            "          imagePullPolicy: {{ $pull }}\n"
            "          {{- $res := .resources | default .Values.resources }}\n"
            "          resources:\n            {{- toYaml $res | nindent 12 }}",
        ),
        (
            "appGPU:\n  nvidia.com/gpu: 1\n",
            "image:\n  pullPolicy: Always\nresources:\n  limits:\n    nvidia.com/gpu: 1\n",
        ),
        ('{{- $_ := mustMergeOverwrite .Values (include "app.workload" $ | fromYaml) -}}\n', ""),
    )
    outcome = _fix(_app(tmp_path, swaps))
    assert not outcome.proven and not outcome.changes
    assert "writes the device key from .Values.resources" in outcome.manual, outcome.manual
    assert "pullPolicy" not in outcome.manual
