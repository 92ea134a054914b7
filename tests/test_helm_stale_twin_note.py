"""An umbrella chart whose `charts/` holds a file:// subchart both as its folder and as the archive
`helm dependency build` packed from an older state of it (`charts/nfs/` with a comment line the archive has not). Helm
loads both and renders one or the other at random on each render, so two renders of the original chart with the same
values differ and proof L, byte-identical renders, cannot hold whatever the rewrite does. fix must not delete either
copy, so the chart stays manual work; the message now says why and what the maintainer does, instead of naming a
line count that changes from run to run."""

from __future__ import annotations

import tarfile
from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.helm.twins import random_twin_note

NFS = deployment("nfs", "      containers:\n        - name: nfs\n          image: nfs\n")
REASON = (
    "with default values, the render is not byte-identical: top/charts/nfs/templates/d.yaml: 12 lines before, 13 after"
)


def _umbrella(root: Path, packed_text: str) -> Path:
    chart = chart_with(root, "top", {"values.yaml": "resources: {}\n"})
    sub = chart_with(chart / "charts", "nfs", {"templates/d.yaml": NFS})
    packed = chart_with(root / "packed", "nfs", {"templates/d.yaml": packed_text})
    with tarfile.open(chart / "charts" / "nfs-0.1.0.tgz", "w:gz") as tar:
        tar.add(packed, arcname="nfs")
    assert sub.is_dir()
    return chart


def test_a_stale_archive_beside_its_folder_is_named_with_what_to_do(tmp_path: Path) -> None:
    chart = _umbrella(
        tmp_path, NFS.replace("      containers:", "      # a comment the folder has since lost\n      containers:")
    )

    note = random_twin_note(chart, REASON)

    assert "charts/nfs and charts/nfs-0.1.0.tgz" in note
    assert "charts/nfs/templates/d.yaml differs" in note
    assert "at random" in note and "delete the stale copy" in note and "helm dependency build" in note


def test_no_note_when_the_archive_is_the_folder_packed_or_the_failure_is_elsewhere(tmp_path: Path) -> None:
    same = _umbrella(tmp_path / "same", NFS)
    stale = _umbrella(tmp_path / "stale", NFS + "# stale\n")

    assert random_twin_note(same, REASON) == ""
    assert random_twin_note(stale, REASON.replace("top/charts/nfs/", "top/")) == ""
