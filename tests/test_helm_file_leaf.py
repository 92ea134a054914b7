"""An umbrella chart whose leaf is kept in the chart's own repository and packed into charts/ (`repository:
file://leaves/store` in Chart.yaml, `charts/store-0.1.0.tgz` that `helm dependency build` packed from that folder):
Helm renders the archive, the maintainers edit the folder. fix rewrites the folder and re-packs the archive the same
way (was: manual, "unpack it into charts/store/ in place of the archive"). Renders are real."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

UMBRELLA = (
    "apiVersion: v2\nname: hosted\nversion: 0.1.0\ndependencies:\n"
    "- name: store\n  version: 0.1.0\n  repository: file://leaves/store\n"
)


SERVER = (  # the leaf's pod: its resources map and its tolerations list from values
    TOYAML_SERVER
    + """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
)


def _pack(folder: Path, archive: Path) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)


def _umbrella(root: Path) -> tuple[Path, Path]:
    """The umbrella chart and a values file that gives its leaf two GPUs."""
    chart = chart_with(root, "hosted", {"values.yaml": "store:\n  resources: {}\n"})
    (chart / "Chart.yaml").write_text(UMBRELLA)
    leaf = chart_with(
        chart / "leaves", "store", {"templates/server.yaml": SERVER, "values.yaml": "resources: {}\ntolerations: []\n"}
    )
    _pack(leaf, chart / "charts" / "store-0.1.0.tgz")
    gpu = root / "gpu.yaml"
    gpu.write_text("store:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    return chart, gpu


def _run(chart: Path, values: Path, mode: str = "fix") -> ChartOutcome:
    options = ChartOptions(values_files=(values,), kube_version="1.34")
    return run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), mode)


def _archive_text(archive: Path, name: str) -> str:
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile(name)
        assert member is not None
        return io.TextIOWrapper(member, encoding="utf-8").read()


def test_the_leaf_folder_is_rewritten_and_its_archive_packed_again(tmp_path: Path) -> None:
    chart, gpu = _umbrella(tmp_path)
    outcome = fix_chart(chart, values=(gpu,))
    changed = {c.rel for c in outcome.changes}
    assert "leaves/store/templates/server.yaml" in changed
    assert not any(rel.startswith("charts/") for rel in changed)  # no unpacked copy beside the archive
    assert [p.name for p in (chart / "charts").iterdir()] == ["store-0.1.0.tgz"]
    folder = (chart / "leaves/store/templates/server.yaml").read_text()
    assert "resourceClaims" in folder
    assert _archive_text(chart / "charts/store-0.1.0.tgz", "store/templates/server.yaml") == folder
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")  # the chart as written, the archive rendered
    assert list(counts.values()) == [2]
    (pod,) = pods.values()
    assert pod["resourceClaims"]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])


def test_lint_points_into_the_leaf_folder(tmp_path: Path) -> None:
    chart, gpu = _umbrella(tmp_path)
    outcome = _run(chart, gpu, "lint")
    (request,) = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    assert request.file == f"{chart}/leaves/store/templates/server.yaml"
    assert request.line > 0


def test_an_archive_not_packed_from_the_folder_now_says_to_build_it(tmp_path: Path) -> None:
    """The folder changed since the archive was packed: a rewrite of the folder would not be what Helm renders."""
    chart, gpu = _umbrella(tmp_path)
    (chart / "leaves/store/values.yaml").write_text("resources: {}\nreplicas: 2\n")
    outcome = _run(chart, gpu)
    assert not outcome.changes
    assert "packed from its file:// folder leaves/store" in outcome.manual, outcome.report()
    assert "run `helm dependency build` to pack the folder again, and fix again" in outcome.manual


def test_a_packed_dependency_of_an_apiversion_v1_chart_is_read_from_requirements_yaml(tmp_path: Path) -> None:
    """Helm 2's layout (apiVersion v1, dependencies in requirements.yaml): the message names the chart repository
    and the file to bump (was: 'unpack it into charts/store/', requirements.yaml unread)."""
    chart, gpu = _umbrella(tmp_path)
    (chart / "Chart.yaml").write_text("apiVersion: v1\nname: hosted\nversion: 0.1.0\n")
    (chart / "requirements.yaml").write_text(
        "dependencies:\n- name: store\n  version: 0.1.0\n  repository: https://charts.example.com\n"
    )
    outcome = _run(chart, gpu)
    assert "a dependency from https://charts.example.com" in outcome.manual, outcome.report()
    assert "set that version for store in requirements.yaml and run `helm dependency update`" in outcome.manual


def test_fix_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    """Was: the second fix bumped the umbrella's version again, for a leaf it left as it was."""
    chart, gpu = _umbrella(tmp_path)
    fix_chart(chart, values=(gpu,))
    again = _run(chart, gpu)
    assert not again.manual, again.report()
    assert again.changes == []
