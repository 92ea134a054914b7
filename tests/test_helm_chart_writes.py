"""fix writes a chart's proven rewrite as a whole or not at all, with the write options manifests get (--force,
--backup). The proof holds for every changed file together: a chart with its templates rewritten and its values.yaml
refused renders neither the original's nor the proven migration's files. Real renders, through the installed CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, RunCli, chart_with, deployment, dramigrate_in_process


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"


def _chart(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": TOYAML_SERVER, "values.yaml": VALUES})
    os.chmod(chart / "values.yaml", 0o444)
    return chart, {p.relative_to(chart).as_posix(): p.read_bytes() for p in chart.rglob("*") if p.is_file()}


def test_a_refused_values_file_leaves_the_whole_chart_as_it_was(tmp_path: Path, run_cli: RunCli) -> None:
    """Was: Chart.yaml bumped, the template rewritten and resourceclaimtemplates.yaml added, values.yaml refused as
    read-only, and the summary said `written: 0 file(s)`."""
    chart, before = _chart(tmp_path)
    code, _, err = run_cli(["fix", chart], timeout=120)
    assert code == 2, err
    assert "values.yaml: read-only file; not written" in err
    after = {p.relative_to(chart).as_posix(): p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    assert after == before


def test_force_and_backup_apply_to_chart_files(tmp_path: Path, run_cli: RunCli) -> None:
    """Was: the chart's files were written without the options (no backup; read-only refused even with --force).
    The chart's .helmignore leaves the backups out (Helm would render templates/server.yaml.bak otherwise)."""
    chart, before = _chart(tmp_path)
    (chart / ".helmignore").write_text("*.bak\n")
    code, _, err = run_cli(["fix", "--force", "--backup=.bak", chart], timeout=120)
    assert code == 0, err
    assert "resourceClaims" in (chart / "values.yaml").read_text()
    assert oct((chart / "values.yaml").stat().st_mode & 0o777) == oct(0o444)
    for rel in ("values.yaml", "templates/server.yaml", "Chart.yaml"):
        assert (chart / f"{rel}.bak").read_bytes() == before[rel]


LITERAL_GPU = deployment(
    "{{ .Release.Name }}-chat",
    """\
      containers:
        - name: chat
          image: chat:1
          resources:
            limits:
              nvidia.com/gpu: 1
""",
)


def test_an_empty_values_file_gets_the_switch(tmp_path: Path, run_cli: RunCli) -> None:
    """A chart whose values.yaml is an empty file (as committed) is rewritten like any other: the dra block goes
    into it. Was: the empty file was taken for a missing one, and fix failed with `values.yaml: appeared since it
    was read; not overwritten (run again)`."""
    chart = chart_with(tmp_path, "chat", {"templates/chat.yaml": LITERAL_GPU, "values.yaml": ""})
    code, _, err = run_cli(["fix", chart], timeout=120)
    assert code == 0, err
    assert "appeared since it was read" not in err
    values = (chart / "values.yaml").read_text()
    assert values.startswith(("dra:", "#")), values  # no blank line before the block
    assert "enabled: true" in values
    assert "claims:" in (chart / "templates" / "chat.yaml").read_text()


def test_a_chart_rendering_a_tag_yaml_does_not_know_is_proven(tmp_path: Path, run_cli: RunCli) -> None:
    """A template that writes `value: !!string {{ ... }}` (mlbench does) renders, and Kubernetes reads the value as
    a string; the proof reads it the same way. Was: fix stopped with `internal error ... could not determine a
    constructor for the tag 'tag:yaml.org,2002:string'` and left the chart alone."""
    env = "          env:\n            - name: WORKERS\n              value: !!string {{ .Values.workers }}\n"
    template = LITERAL_GPU + env
    chart = chart_with(tmp_path, "chat", {"templates/chat.yaml": template, "values.yaml": "workers: 4\n"})
    code, _, err = run_cli(["fix", chart], timeout=120)
    assert code == 0, err
    assert "internal error" not in err
    assert "proven" in err
    assert "claims:" in (chart / "templates" / "chat.yaml").read_text()
