"""A chart whose rewrite fix leaves to the user: its device requests are neither marked "(fixable)" nor counted
"fixable with `dramigrate fix`", in fix's and diff's report (once the rewrite is manual work) and in lint's for a
chart whose objects a library chart writes, which fix often leaves to the user and for which lint tries the rewrite
as diff does. Was: lint and the report of the very fix that wrote nothing said "1 fixable with `dramigrate fix`".
A chart fix does rewrite, a library-written one too (a literal key in a library unpacked in charts/, a values map the
library passes through), still says fixable."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from conftest import chart_with, deployment, dramigrate_in_process

LIBRARY_DEPLOYMENT = """\
{{- define "common.deployment" -}}
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
      containers:
        - name: main
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
{{- end -}}
"""
LITERAL = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: main
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
)
# the device key's name from a define of the chart's own: no idiomatic rewrite takes that line
NAMED_BY_DEFINE = LITERAL.replace("nvidia.com/gpu:", '{{ include "app.gpuKey" . }}:')


def _library_chart(tmp_path: Path, from_map: bool = False, packed: bool = False) -> Path:
    dependency = "dependencies:\n  - name: common\n    version: 0.1.0\n    repository: file://charts/common\n"
    chart = chart_with(tmp_path, "app", {"templates/deploy.yaml": '{{ include "common.deployment" . }}\n'})
    (chart / "Chart.yaml").write_text((chart / "Chart.yaml").read_text() + dependency)
    (chart / "values.yaml").write_text("gpus: 1\n")
    library = chart / "charts" / "common"
    (library / "templates").mkdir(parents=True)
    (library / "Chart.yaml").write_text("apiVersion: v2\nname: common\nversion: 0.1.0\ntype: library\n")
    define = LIBRARY_DEPLOYMENT
    if from_map:  # the library passes a values map through: fix takes that (the pass-through)
        define = define.replace("limits:\n              nvidia.com/gpu: {{ .Values.gpus }}", MAP)
        (chart / "values.yaml").write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    (library / "templates" / "_deployment.tpl").write_text(define)
    if packed:  # as `helm dependency build` leaves it: fix does not rewrite inside an archive
        with tarfile.open(chart / "charts" / "common-0.1.0.tgz", "w:gz") as archive:
            archive.add(library, arcname="common")
        shutil.rmtree(library)
    return chart


MAP = "{{- toYaml .Values.resources | nindent 12 }}"


def _fixable_said(err: str) -> bool:
    return "(fixable)" in err or "fixable with `dramigrate fix`" in err


def test_lint_and_fix_do_not_call_a_library_written_request_fixable(tmp_path: Path) -> None:
    chart = _library_chart(tmp_path, packed=True)
    code, out, err = dramigrate_in_process(["lint", chart])
    assert code == 1 and "legacy-device-request" in out + err
    assert not _fixable_said(out + err), out + err
    assert "fix tries the rewrite of pattern D and may leave this chart to you" in out + err

    code, out, err = dramigrate_in_process(["fix", chart])
    assert code == 1 and "needs manual work" in err
    assert not _fixable_said(out + err), err


def test_fix_that_writes_nothing_does_not_count_its_requests_fixable(tmp_path: Path) -> None:
    helpers = '{{- define "app.gpuKey" -}}\nnvidia.com/gpu\n{{- end -}}\n'
    files = {"templates/_helpers.tpl": helpers, "templates/deploy.yaml": NAMED_BY_DEFINE, "values.yaml": "gpus: 1\n"}
    chart = chart_with(tmp_path, "app", files)
    for command in ("diff", "fix"):
        code, out, err = dramigrate_in_process([command, chart])
        assert "needs manual work" in err, err
        assert not _fixable_said(out + err), err
        assert "its rewrite is manual work (chart-rewrite-unproven)" in err


def test_a_chart_fix_rewrites_is_still_fixable_in_lint(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"templates/deploy.yaml": LITERAL, "values.yaml": "gpus: 1\n"})
    code, out, err = dramigrate_in_process(["lint", chart])
    assert code == 1 and "1 fixable with `dramigrate fix`" in out + err, out + err


def test_a_literal_key_in_an_unpacked_library_is_fixable(tmp_path: Path) -> None:
    """fix rewrites a literal device key in a define of a library unpacked in charts/ (its switch read nil-safe), so
    lint calls it fixable, and fix proves and writes it."""
    chart = _library_chart(tmp_path)
    code, out, err = dramigrate_in_process(["lint", chart])
    assert code == 1 and "1 fixable with `dramigrate fix`" in out + err, out + err
    code, out, err = dramigrate_in_process(["fix", chart])
    assert code == 0 and "rewrite proven" in err, err
    assert (
        "and .Values.dra .Values.dra.enabled"
        in (chart / "charts" / "common" / "templates" / "_deployment.tpl").read_text()
    )


def test_a_library_written_request_fix_takes_is_still_fixable_in_lint(tmp_path: Path) -> None:
    """The library passes a values resources map through: fix rewrites the chart (the pass-through), so lint, which
    tries the rewrite for library-written charts, keeps calling it fixable."""
    chart = _library_chart(tmp_path, from_map=True)
    code, out, err = dramigrate_in_process(["lint", chart])
    assert code == 1 and "1 fixable with `dramigrate fix`" in out + err, out + err
    code, out, err = dramigrate_in_process(["diff", chart])
    assert "rewrite proven" in err, err
