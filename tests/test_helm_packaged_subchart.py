"""A chart whose dependencies are packed in charts/ (`helm dependency build` leaves .tgz archives: milvus ships
etcd, minio and pulsar so): the device request in the chart's own template gets its rewrite even though a packed
subchart also passes a values resources map through (the proof's added-device probe puts a device there, in a
template fix cannot rewrite). Renders are real; one fix for the module."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = deployment(
    "{{ .Release.Name }}-%(name)s",
    """\
      containers:
        - name: %(name)s
          image: busybox
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)


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


@pytest.mark.parametrize(
    ("repository", "said"),
    [
        ("https://charts.example.com", "a dependency from https://charts.example.com: fix rewrites the chart's own"),
        ("", "unpack it into charts/store/ in place of the archive so fix can rewrite it"),
    ],
)
def test_a_device_request_in_a_packed_subchart_says_where_to_migrate_it(
    tmp_path: Path, repository: str, said: str
) -> None:
    """The umbrella gives a packed subchart, included under an alias, a GPU: fix names the alias, the chart and its
    archive; a dependency from a chart repository is migrated where it is kept (the next `helm dependency build`
    brings the archive back), a vendored archive is unpacked under the chart's name in its place (was, for both:
    'unpack it into charts/<alias>/', a folder Helm would load beside the archive)."""
    chart = _chart(tmp_path)
    (chart / "values.yaml").write_text("resources: {}\ncache:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n")
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: vectordb\nversion: 0.1.0\ndependencies:\n- name: store\n  version: 0.1.0\n"
        f"  alias: cache\n  repository: {repository!r}\n"
    )
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert "comes from the packaged subchart cache (chart store), charts/store-0.1.0.tgz" in outcome.manual, (
        outcome.report()
    )
    assert said in outcome.manual
    if repository:  # the ways that leave the published chart as it is
        assert "--strategy extended-resource" in outcome.manual and "dramigrate fix -" in outcome.manual
