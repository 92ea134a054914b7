"""A subchart the chart takes packed from a chart repository (open-webui's ollama dependency) whose maintainers added
a DRA switch: fix turns the switch on in the chart's values, the archive left as it is; a release older than the
switch is named with the version to update to."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import assert_second_fix_quiet, chart_with, fix_chart, packed_chart, run_dramigrate

from dramigrate.helm.render import RenderOptions, render_chart

UMBRELLA = """apiVersion: v2
name: webui
version: 0.1.0
dependencies:
  - name: ollama
    version: {version}
    repository: https://otwld.github.io/ollama-helm/
"""
GPU_VALUES = "ollama:\n  ollama:\n    gpu:\n      enabled: true\n      number: 2\n"


def _umbrella(tmp_path: Path, archive: bytes, version: str) -> Path:
    chart = chart_with(tmp_path, "webui", {"values.yaml": GPU_VALUES})
    (chart / "Chart.yaml").write_text(UMBRELLA.format(version=version))
    (chart / "charts").mkdir()
    (chart / f"charts/ollama-{version}.tgz").write_bytes(archive)
    return chart


def test_the_switch_of_a_packed_subchart_goes_on_in_the_chart_s_values(tmp_path: Path, corpus: Path) -> None:
    """Was manual: 'comes from the packaged subchart ollama ... a dependency from https://otwld.github.io/...'."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        tar.add(corpus / "ollama-helm", "ollama", filter=lambda m: None if "/.git" in m.name else m)
    chart = _umbrella(tmp_path, out.getvalue(), "1.77.0")
    archive = (chart / "charts/ollama-1.77.0.tgz").read_bytes()
    outcome = fix_chart(chart)
    assert "the chart's own switch ollama.ollama.gpu.draEnabled=true" in outcome.checked
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["ollama"]["ollama"]["gpu"] == {"enabled": True, "number": 2, "draEnabled": True}
    assert (chart / "charts/ollama-1.77.0.tgz").read_bytes() == archive  # the dependency is left as it is
    docs = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in yaml.safe_dump(pod["containers"])
    assert_second_fix_quiet(chart)


OLD_OLLAMA = {
    "Chart.yaml": "apiVersion: v2\nname: ollama\nversion: 1.9.0\n",
    "values.yaml": "ollama:\n  gpu:\n    enabled: false\n    number: 1\n",
    "templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-ollama
spec:
  selector:
    matchLabels: {app: ollama}
  template:
    metadata:
      labels: {app: ollama}
    spec:
      containers:
        - name: ollama
          image: ollama/ollama
          {{- if .Values.ollama.gpu.enabled }}
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.ollama.gpu.number }}
          {{- end }}
""",
}


@pytest.mark.parametrize("repository", ["https://otwld.github.io/ollama-helm/", "https://charts.example.com/"])
def test_a_release_before_the_switch_is_named_with_the_version_that_has_it(tmp_path: Path, repository: str) -> None:
    chart = _umbrella(tmp_path, packed_chart("ollama", OLD_OLLAMA), "1.9.0")
    (chart / "Chart.yaml").write_text(UMBRELLA.format(version="1.9.0").replace(UMBRELLA.split()[-1], repository))
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    code, out, err = run_dramigrate(["fix", str(chart)], cwd=tmp_path)
    said = " ".join((out + err).split())
    assert code == 1 and "comes from the packaged subchart ollama, charts/ollama-1.9.0.tgz" in said, said
    newer = "set version 1.55.0 or later for ollama in Chart.yaml and run `helm dependency update`"
    assert (newer in said) == ("otwld" in repository), said
    assert ("migrate the ollama chart where it is kept" in said) == ("otwld" not in repository), said
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    shutil.rmtree(chart)
