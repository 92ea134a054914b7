"""A chart whose dependencies are packed in charts/ (`helm dependency build` leaves .tgz archives: milvus ships
etcd, minio and pulsar so): the device request in the chart's own template gets its rewrite even though a packed
subchart also passes a values resources map through (the proof's added-device probe puts a device there, in a
template fix cannot rewrite). Renders are real; one fix for the module."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-%(name)s
spec:
  selector:
    matchLabels: {app: %(name)s}
  template:
    metadata:
      labels: {app: %(name)s}
    spec:
      containers:
        - name: %(name)s
          image: busybox
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""


def _chart(root: Path) -> Path:
    store = chart_with(
        root / "src",
        "store",
        {"templates/deployment.yaml": DEPLOYMENT % {"name": "store"}, "values.yaml": "resources: {}\n"},
    )
    chart = chart_with(
        root,
        "vectordb",
        {
            "templates/deployment.yaml": DEPLOYMENT % {"name": "db"},
            "values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\nstore:\n  resources:\n    requests:\n"
            "      memory: 1Gi\n",
        },
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: vectordb\nversion: 0.1.0\ndependencies:\n- name: store\n  version: 0.1.0\n"
    )
    (chart / "charts").mkdir()
    with tarfile.open(chart / "charts" / "store-0.1.0.tgz", "w:gz") as tar:
        tar.add(store, arcname="store")
    return chart


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ChartOutcome]:
    chart = _chart(tmp_path_factory.mktemp("packaged-subchart"))
    settings = Settings(kube_version="1.34")
    return chart, run_chart(
        chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix"
    )


def test_the_own_template_is_rewritten_beside_a_packed_subchart(fixed: tuple[Path, ChartOutcome]) -> None:
    """Was: manual, 'charts/store/templates/deployment.yaml comes from the packaged subchart store in charts/'."""
    _, outcome = fixed
    assert not outcome.manual, outcome.manual
    assert "templates/deployment.yaml" in {c.rel for c in outcome.changes}
    assert not any(c.rel.startswith("charts/") for c in outcome.changes)
    assert any("added to every resources map" in c for c in outcome.checked)
