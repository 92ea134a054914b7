"""Hostile inputs of the twenty-sixth sweep (issue 11's checker, run from outside the repo): each beside a good
file; the bad one is named and left as it was, and the good one is still migrated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD

from dramigrate import engine, migrate
from dramigrate.config import Settings
from dramigrate.rules import load_rules
from dramigrate.sources import expand
from dramigrate.versions import Target

SECRET = "token-from-outside-the-tree"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="the kernel names what was read through /proc")
def test_a_file_swapped_for_a_link_out_of_the_tree_after_the_walk_is_not_read_into_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the walk found as a regular file, replaced by a symlink out of the tree before it was read (a
    concurrent writer, or a checkout still being made), was read through the link: the finding named the outside
    workload (`Deployment/<its name>`), so whatever the outside file holds reached the report. Now the file read is
    compared with the one the walk resolved, and the swapped one is refused by name."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "secret.yaml").write_text(ONE_GPU_POD.format(name=SECRET))
    swapped, good = tree / "swapped.yaml", tree / "good.yaml"
    swapped.write_text(ONE_GPU_POD.format(name="swapped"))
    good.write_text(ONE_GPU_POD.format(name="good"))
    inputs = expand([str(tree)])
    read = migrate.read_regular_at

    def swap_then_read(path: str, *args: object) -> tuple[bytes, str]:
        if Path(path) == swapped and not swapped.is_symlink():
            swapped.unlink()
            os.symlink(outside / "secret.yaml", swapped)
        return read(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(migrate, "read_regular_at", swap_then_read)
    monkeypatch.setattr(engine, "PARALLEL_MIN_FILES", 10**9)  # read here, where the swap is made

    result = engine.run(inputs, load_rules(()), Settings(), Target.parse("1.36"), fix=True)

    said = [f.message + f.name for f in result.findings] + [str(r.error) for r in result.files]
    assert not any(SECRET in s for s in said)
    by_path = {Path(r.path).name: r for r in result.files}
    assert by_path["swapped.yaml"].error is not None and "replaced by a symlink" in str(by_path["swapped.yaml"].error)
    assert by_path["swapped.yaml"].rewritten is None
    assert by_path["good.yaml"].rewritten is not None and "resourceClaims" in by_path["good.yaml"].rewritten
