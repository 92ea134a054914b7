"""An umbrella chart whose `charts/` holds a file:// subchart both as its folder and as the archive
`helm dependency build` packed from an older state of it (`charts/nfs/` with a comment line the archive has not). Helm
loads both and renders one or the other at random on each render, so two renders of the chart with the same values
differ and no proof can hold, whatever the rewrite does: fix proved nb-generative-virtual-screening in one run of three,
on renders that happened to agree (and the chart bench's own check then failed). fix must not delete either copy, so
the chart is manual work before any rewrite, for fix and lint alike, and the message says why and what to do."""

from __future__ import annotations

import tarfile
from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

NFS = deployment("nfs", "      containers:\n        - name: nfs\n          image: nfs\n")
GPU = deployment(
    "server",
    "      containers:\n        - name: server\n          image: server\n"
    "          resources:\n            {{- toYaml .Values.resources | nindent 12 }}\n",
)


def _umbrella(root: Path, packed_text: str) -> Path:
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
    chart = chart_with(root, "top", {"values.yaml": values, "templates/server.yaml": GPU})
    chart_with(chart / "charts", "nfs", {"templates/d.yaml": NFS})
    packed = chart_with(root / "packed", "nfs", {"templates/d.yaml": packed_text})
    with tarfile.open(chart / "charts" / "nfs-0.1.0.tgz", "w:gz") as tar:
        tar.add(packed, arcname="nfs")
    return chart


def _run(chart: Path, mode: str):  # type: ignore[no-untyped-def]
    return run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), mode)


def test_a_stale_archive_beside_its_folder_is_manual_work_named_with_what_to_do(tmp_path: Path) -> None:
    stale = NFS.replace("      containers:", "      # a comment the folder has lost\n      containers:")
    chart = _umbrella(tmp_path, stale)
    outcome = _run(chart, "fix")
    assert not outcome.changes
    assert outcome.manual.startswith("charts/ holds the chart of charts/nfs twice, unpacked and packed"), outcome.manual
    assert "charts/nfs/templates/d.yaml differs" in outcome.manual
    assert "at random" in outcome.manual and "delete the stale copy" in outcome.manual
    linted = _run(chart, "lint")
    request = next(f for f in linted.findings if f.rule == "legacy-device-request")
    assert not request.fixable and "delete the stale copy" in request.message  # lint promises no fix either


def test_an_archive_that_is_the_folder_packed_is_no_reason(tmp_path: Path) -> None:
    outcome = _run(_umbrella(tmp_path, NFS), "fix")
    assert outcome.proven, outcome.report()


def test_an_archive_that_differs_only_in_what_renders_nothing_is_no_reason(tmp_path: Path) -> None:
    """adorsys' inference-server chart: the packed bjw-s common holds a values.schema.json its folder has not; the
    schema only accepts or refuses values, so both copies render the same and the chart is proven as before."""
    chart = _umbrella(tmp_path, NFS)
    (chart / "charts" / "nfs" / "README.md").write_text("# nfs, a newer readme\n")
    outcome = _run(chart, "fix")
    assert outcome.proven, outcome.report()
