"""A device count in a second values file given with a values file that gets a DRA variant (pattern B): each file
gets its own variant. (A --set of that count: test_helm_set_device_count.py.)

Renders are real (the Helm engine embedded in helm-python-sdk).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, RunCli, chart_with, dramigrate_in_process


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


def write(tmp_path: Path) -> tuple[Path, Path]:
    chart = chart_with(
        tmp_path,
        "server",
        {
            "templates/server.yaml": TOYAML_SERVER,
            "values.yaml": "resources:\n  requests:\n    cpu: 500m\n  limits:\n    nvidia.com/gpu: 1\n",
        },
    )
    example = tmp_path / "l4.yaml"
    example.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    return chart, example


def test_the_advice_works_the_count_in_a_file_gets_its_variant(run_cli: RunCli, tmp_path: Path) -> None:
    chart, example = write(tmp_path)
    two = tmp_path / "two.yaml"
    two.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    code, _, err = run_cli(["fix", str(chart), "-f", str(example), "-f", str(two)])
    assert code == 0, err
    assert "count: 2" in (tmp_path / "two-dra.yaml").read_text()
