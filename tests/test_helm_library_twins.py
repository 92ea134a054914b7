"""A library chart held twice in charts/: unpacked in a folder and packed in a .tgz of the same name and version
(NVIDIA's cosmos-embed: `charts/library_chart/` and `charts/nim-library-0.1.2.tgz`, which `helm dependency update`
packs from the folder). Helm loads both and renders either one, at random on each render (its loader walks charts/
from a Go map, and the dependency step keeps the first of a name). When the .tgz holds the folder's files, fix
changes both the same way: the folder's define as text, the archive re-packed with the same files changed; when it
does not, the chart is manual work and the message names the file that differs. A small chart modelled on the NIM
ones (the library of the test's own); renders are real."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LIBRARY = """\
{{- define "lib.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
spec:
  selector:
    matchLabels: {app: nim}
  template:
    metadata:
      labels: {app: nim}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: nim:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
{{- end -}}
"""
DEFINE = "templates/_deployment.tpl"


def _chart(root: Path) -> Path:
    files = {
        "values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n",
        "templates/base.yaml": '{{ include "lib.deployment" . }}\n',
    }
    chart = chart_with(root, "nim", files, version="1.0.0")
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: nim\nversion: 1.0.0\n"
        "dependencies:\n  - name: lib\n    version: '>0.0.1'\n    repository: file://charts/library_chart/\n"
    )
    library = {"Chart.yaml": "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n", DEFINE: LIBRARY}
    chart_with(chart / "charts", "library_chart", library)
    with tarfile.open(chart / "charts" / "lib-0.1.0.tgz", "w:gz") as tar:  # as `helm dependency update` packs it
        tar.add(chart / "charts" / "library_chart", arcname="lib")
    return chart


def _packed(chart: Path, rel: str) -> str:
    with tarfile.open(chart / "charts" / "lib-0.1.0.tgz") as tar:
        member = tar.extractfile(f"lib/{rel}")
        assert member is not None
        return member.read().decode()


def _pod(chart: Path, *files: Path) -> dict[str, Any]:
    manifests = render_chart(chart, RenderOptions(values_files=files, kube_version="1.34"))
    docs = [d for m in manifests for d in yaml.safe_load_all(m.text) if d]
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_a_library_also_packed_gets_the_same_change_in_the_folder_and_the_archive(tmp_path: Path) -> None:
    chart = _chart(tmp_path)
    original = _pod(chart)
    outcome = fix_chart(chart)  # was: not proven, 'Helm renders either one at random ... move the .tgz away'
    folder = (chart / "charts" / "library_chart" / DEFINE).read_text()
    assert folder != LIBRARY and "resourceClaims" in folder
    assert _packed(chart, DEFINE) == folder  # the archive holds the folder's define as fix wrote it
    assert f"Binary files a/{outcome.display}/charts/lib-0.1.0.tgz" in outcome.diff()
    for _ in range(6):  # Helm takes the folder or the .tgz at random on each render: every render is the rewrite's
        assert _pod(chart) == original  # the values as they were: the device-plugin request
        pod = _pod(chart, chart / "values-dra.yaml")
        claim = pod["containers"][0]["resources"]["claims"][0]["name"]
        assert [c["name"] for c in pod["resourceClaims"]] == [claim]
        assert "limits" not in pod["containers"][0]["resources"]


def test_a_packed_copy_that_is_not_the_folder_packed_is_refused_naming_the_file(tmp_path: Path) -> None:
    chart = _chart(tmp_path)
    define = chart / "charts" / "library_chart" / DEFINE
    define.write_text(define.read_text().replace("image: nim:1", "image: nim:2"))  # changed after the last packing
    archive = (chart / "charts" / "lib-0.1.0.tgz").read_bytes()
    settings = Settings(kube_version="1.34")
    outcome: ChartOutcome = run_chart(
        chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix"
    )
    assert not outcome.changes
    # was: '... Helm renders either one at random, so a rewrite of the folder cannot be proven: move the .tgz away'
    assert (
        f"charts/library_chart/{DEFINE} differs from {DEFINE} in charts/lib-0.1.0.tgz: delete the stale copy, or run "
        "`helm dependency update`" in outcome.manual
    ), outcome.manual
    assert (chart / "charts" / "lib-0.1.0.tgz").read_bytes() == archive
