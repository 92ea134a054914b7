"""An umbrella whose charts/ folder holds an unpacked copy of a chart from a chart repository (its dependency names
`https://`, not `file://`): fix rewrites the copy, and the next `helm dependency build` would put the published
chart back. Was: nothing said so; now every report format carries a chart-vendored-subchart warning naming the
subchart, its repository and what to do.

Renders are real (the Helm engine embedded in helm-python-sdk).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import RunCli, dramigrate_in_process
from test_helm_idiomatic import write_chart


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


REPO = "https://charts.example.org/stable"
UMBRELLA = f"""\
apiVersion: v2
name: suite
version: 1.0.0
dependencies:
  - name: app
    version: 0.1.0
    repository: {REPO}
"""


def write_umbrella(root: Path) -> Path:
    """root/suite, whose charts/app (a GPU request, pattern A) came from REPO."""
    leaf = write_chart(root)
    umbrella = root / "suite"
    umbrella.mkdir()
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text("app:\n  numGpus: 1\n")
    shutil.move(leaf, umbrella / "charts" / "app")  # as `helm dependency build` leaves it, unpacked
    return umbrella


def test_a_rewritten_copy_from_a_chart_repository_is_reported_in_every_format(run_cli: RunCli, tmp_path: Path) -> None:
    umbrella = write_umbrella(tmp_path)
    sarif = tmp_path / "out.sarif"
    _, out, err = run_cli(["diff", str(umbrella), "--format", "json", "--format", f"sarif={sarif}"])
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "chart-vendored-subchart"]
    repository_line = UMBRELLA.splitlines().index(f"    repository: {REPO}") + 1
    assert (f["file"], f["line"]) == (f"{umbrella}/Chart.yaml", repository_line)
    assert "charts/app" in f["message"] and REPO in f["message"] and "file://" in f["message"], f
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert [r for r in results if r["ruleId"] == "chart-vendored-subchart"], results
    before = (umbrella / "charts" / "app" / "templates" / "deployment.yaml").read_text()
    _, _, err = run_cli(["fix", str(umbrella)])
    assert f"[chart-vendored-subchart] charts/app (chart app 0.1.0) is a copy of a dependency from {REPO}" in err, err
    after = (umbrella / "charts" / "app" / "templates" / "deployment.yaml").read_text()
    assert before != after and "dra.enabled" in after  # the rewrite is still written, as before


def test_a_file_dependency_has_no_such_warning(run_cli: RunCli, tmp_path: Path) -> None:
    umbrella = write_umbrella(tmp_path)
    (umbrella / "Chart.yaml").write_text(UMBRELLA.replace(REPO, "file://charts/app"))
    _, out, err = run_cli(["diff", str(umbrella), "--format", "json"])
    assert any(f["rule"] == "legacy-device-request" for f in json.loads(out)["findings"]), err
    assert "chart-vendored-subchart" not in out + err
