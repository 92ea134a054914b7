"""The folder listing started first (prelist.py) changes nothing a run says: the same reports, notes and exit codes
as the walk listing every folder itself, over a tree of every kind of entry the walk has a rule for (excluded and
vendor folders, charts, kustomizations, symlinks in and out of the tree, a FIFO, an unreadable folder)."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli

from dramigrate import prelist

# The same command line as the installed entry point, with the listing child never started.
WITHOUT_LISTING = (
    "import sys; from dramigrate import prelist; prelist.start = lambda argv: None; "
    "from dramigrate.cli import main; sys.argv[0] = 'dramigrate'; main()"
)


def _tree(root: Path) -> Path:
    top = root / "repo"
    for i, folder in enumerate(["a", "a/b", "a/b/c", "d", "node_modules/x", "vendor/y", "e/f/g"]):
        (top / folder).mkdir(parents=True, exist_ok=True)
        (top / folder / f"gpu{i}.yaml").write_text(ONE_GPU_POD.format(name=f"gpu{i}"))
        (top / folder / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")
        (top / folder / "notes.md").write_text("# not a manifest\n")
    (top / "d" / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nresources: {nvidia.com/gpu: [\n")
    (top / "d" / "kustomization.yaml").write_text("resources:\n- gpu3.yaml\n")
    chart = top / "charts" / "c"
    (chart / "templates" / "sub").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "sub" / "x.yaml").write_text("kind: ConfigMap\n")
    outside = root / "outside.yaml"
    outside.write_text(ONE_GPU_POD.format(name="outside"))
    (top / "a" / "out.yaml").symlink_to(outside)
    (top / "a" / "in.yaml").symlink_to(top / "d" / "gpu3.yaml")
    (top / "a" / "loop").symlink_to(top / "a")
    os.mkfifo(top / "e" / "pipe.yaml")
    locked = top / "e" / "locked"
    locked.mkdir()
    (locked / "gpu.yaml").write_text(ONE_GPU_POD.format(name="locked"))
    locked.chmod(0)
    return top


def _without_listing(args: list[str], cwd: Path) -> tuple[int, str, str]:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_LISTING, *args], cwd=cwd, capture_output=True, env=env, timeout=120
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit", "markdown"])
def test_reports_are_the_same_with_the_listing(tmp_path: Path, run_cli: RunCli, fmt: str) -> None:
    top = _tree(tmp_path)
    try:
        args = ["lint", "repo", "./repo/d/", "--format", fmt, "--exclude", "vendor", "--verbose"]
        with_listing = run_cli(args, cwd=tmp_path)
        assert with_listing == _without_listing(args, tmp_path)
    finally:
        (top / "e" / "locked").chmod(0o755)
    code, out, err = with_listing
    assert code == 2, err  # the bad file (and the FIFO, the link out of the tree) are bad input, as without it
    assert "bad.yaml" in out and "pipe.yaml" in out and "out.yaml" in out
    assert "gpu4" not in out and "gpu5" not in out  # node_modules and the excluded folder stay out


def test_the_walk_takes_the_listing(tmp_path: Path) -> None:
    """The child lists the folder named, and the walk takes what it listed (the test above would pass without it)."""
    top = _tree(tmp_path)
    script = (
        "import json, sys; from dramigrate import prelist, sources\n"
        "prelist.start(['lint', 'repo'])\n"
        "listing = prelist.taken('repo')\n"
        "hits = []\n"
        "take = listing.take\n"
        "def counted(folder):\n"
        "    record = take(folder)\n"
        "    if record is not None and record[0] is not None:\n"
        "        hits.append(folder)\n"
        "    return record\n"
        "listing.take = counted\n"
        "walked = list(sources.walk_entries('repo'))\n"
        "prelist._listing = None\n"
        "alone = list(sources.walk_entries('repo'))\n"
        "print(json.dumps([walked == alone, hits, [w[0] for w in walked], listing._done]))\n"
    )
    try:
        proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, timeout=60)
    finally:
        (top / "e" / "locked").chmod(0o755)
    same, hits, walked, done = json.loads(proc.stdout)
    assert same  # the same folders, names and kinds, in the same order
    # every folder came from the child's listing but those below node_modules and a chart (the walk never enters
    # them: the child does not list them)
    assert [w for w in walked if "node_modules" not in w and "charts/c/" not in w] == [h for h in hits if h in walked]
    assert done  # the child was stopped and reaped once the walk was over


def test_the_walk_does_not_wait_for_the_listing_of_a_folder_it_left_out() -> None:
    """A walk that excludes a folder (a vendor tree of a million files) goes on by itself when the child is still
    listing that folder, instead of waiting for the child to list all of it."""
    read, write = os.pipe()
    sleeper = subprocess.Popen(["sleep", "60"])  # stands for the child: stopped and reaped when given up
    listing = prelist.Listing(sleeper.pid, read, ["repo"])
    records = [("repo", "aaa\0src", "", ""), ("repo/aaa", "x", "", ""), ("repo/aaa/x", "", "a.yaml", "f")]
    data = marshal.dumps(records)
    os.write(write, len(data).to_bytes(8, "little") + data)  # and no more yet: the child is still in repo/aaa
    taken: list[object] = []
    waiting = threading.Thread(target=lambda: taken.extend([listing.take("repo"), listing.take("repo/src")]))
    try:
        listing.prune("repo/aaa")
        waiting.start()
        waiting.join(30)
        assert not waiting.is_alive()  # it did not wait for the rest of repo/aaa
    finally:
        os.close(write)  # ends the wait of a walk that would wait (the test then fails above, not hangs)
        waiting.join()
    assert taken == [(["aaa", "src"], []), None]  # repo/src: listed by the walk itself
    assert sleeper.poll() is not None  # the child was stopped and reaped
