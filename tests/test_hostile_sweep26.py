"""Hostile inputs of the twenty-sixth sweep (issue 11's checker, run from outside the repo): each beside a good
file; the bad one is named and left as it was, and the good one is still migrated."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

from dramigrate import engine, migrate
from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.report.diff import diff_of
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


@pytest.mark.parametrize("fix", [False, True], ids=["lint", "fix"])
@pytest.mark.parametrize(
    "value",
    ["!!timestamp 2", "!!bool maybe", "!!set 2", "!!omap 2"],
    ids=["timestamp", "bool", "set-of-a-scalar", "omap-of-a-scalar"],
)
def test_a_count_whose_explicit_tag_it_does_not_fit_is_bad_input_not_an_internal_error(value: str, fix: bool) -> None:
    """`nvidia.com/gpu: !!timestamp 2` (or `!!bool maybe`, `!!set 2`) ended in an internal error asking for a bug
    report: the YAML readers' constructors raise AttributeError or KeyError for such a value, not the ValueError
    that was caught. The API server refuses these documents, so they are the file's bad input, left as they are."""
    text = ONE_GPU_POD.format(name="pod").replace("nvidia.com/gpu: 1", f"nvidia.com/gpu: {value}")
    settings = Settings()

    result = run_file(Job("pod.yaml", text.encode(), fix), load_rules(settings.rules), settings, Target.parse("1.36"))

    assert [f.message for f in result.findings if f.rule == "internal-error"] == []
    assert result.error is not None and "invalid YAML" in result.error.message
    assert result.rewritten is None


@pytest.mark.parametrize("value", ["!!bool maybe", "!!int abc", "!!timestamp 2"])
@pytest.mark.parametrize("where", [".dramigrate.yaml", "overlay/kustomization.yaml", "pack.yaml"])
def test_a_setting_whose_explicit_tag_it_does_not_fit_is_named_at_its_line(
    tmp_path: Path, where: str, value: str
) -> None:
    """The same values in a config, a kustomization or a rule pack ended the run (or the kustomize graph) in an
    internal error without a line: PyYAML's constructors raise ValueError, KeyError or AttributeError for them.
    Now each is invalid YAML at its file:line, and the manifests beside it are still checked where the run goes on."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    text = {
        ".dramigrate.yaml": f"exclude: {value}\n",
        "overlay/kustomization.yaml": f"resources:\n- pod.yaml\nnamePrefix: {value}\n",
        "pack.yaml": f"rules: []\nx: {value}\n",
    }[where]
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "pod.yaml").write_text(ONE_GPU_POD.format(name="kpod"))
    (tmp_path / where).write_text(text)

    code, out, err = run_dramigrate(
        ["lint", ".", *(["--rules", "pack.yaml"] if where == "pack.yaml" else [])], cwd=tmp_path
    )

    assert code == 2
    assert "internal" not in out + err
    line = 1 if where == ".dramigrate.yaml" else 3 if "kustomization" in where else 2
    assert f"{where}:{line}:" in out + err and "does not fit its tag" in out + err
    if where == "overlay/kustomization.yaml":
        assert "good.yaml:11:" in out  # the run goes on past the broken graph


@pytest.mark.skipif(shutil.which("patch") is None, reason="checks the diff with GNU patch")
def test_the_diff_of_a_file_of_thousands_of_similar_workloads_is_shown_in_seconds_and_applies(tmp_path: Path) -> None:
    """A file of a few thousand similar GPU workloads (1.5 MB, well inside every limit) kept `diff` a minute in
    difflib's matcher, which slows down on long texts of repeated lines (3,000 of them took 11 s here). Past a few
    thousand lines the texts are now first cut at the lines each holds once, in order (each workload's name), and
    difflib matches the short pieces between them; the diff still applies."""
    pods = [ONE_GPU_POD.format(name=f"pod-{i}") for i in range(5_000)]
    before = "---\n".join(pods)
    after = "---\n".join(p.replace("    resources:\n", "    resources:  # moved\n    env: []\n") for p in pods)

    started = time.monotonic()
    shown = diff_of("pods.yaml", before, after).text
    took = time.monotonic() - started

    assert took < 10
    (tmp_path / "pods.yaml").write_text(before)
    subprocess.run(["patch", "-s", "-p1"], input=shown, text=True, cwd=tmp_path, check=True)
    assert (tmp_path / "pods.yaml").read_text() == after
