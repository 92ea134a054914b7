"""Outside a terminal (a CI log) a run showed no progress at all: a chart whose renders take seconds each, or a long
run over many files, printed nothing until its report, and a CI user could not tell a slow run from a hang. A
line now and then on standard error says what the run is at: a chart (or the kustomize builds) still at work past
a few seconds is named once, and a long file phase says how many files are checked. The terminal's progress bar is
unchanged; stdout, the machine formats and --quiet are as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, dramigrate_executable
from test_helm_chart_time import SLOW  # a chart whose every render spins

QUICK = {"DRAMIGRATE_PROGRESS_SLOW": "0.5"}  # the seconds before a line, short here to keep the test fast


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes, list[tuple[float, str]]]:
    """Run dramigrate piped (not a terminal): exit code, stdout, and each line of stderr with when it came, then an
    empty line with when the run ended."""
    import threading

    started = time.monotonic()
    process = subprocess.Popen(
        [dramigrate_executable(), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1", **env},
    )
    assert process.stderr is not None and process.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    lines = [(time.monotonic() - started, line.decode().rstrip("\n")) for line in process.stderr]
    reader.join(timeout=300)
    code = process.wait(timeout=300)
    return code, b"".join(out), [*lines, (time.monotonic() - started, "")]  # the last: when the run ended


def _slow_chart(tmp_path: Path, spin: int = 9000) -> Path:
    """A chart whose render spins for spin * 2000 steps (9000: lint's one render about a second), and a GPU pod."""
    chart_with(tmp_path, "slow", {"templates/pod.yaml": SLOW, "values.yaml": f"gpus: 1\nspin: {spin}\n"})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    return tmp_path


# diff renders the chart many times over (its rewrite and the proof): a lighter spin keeps its chart seconds at work
# (about 5 s of CPU in all where the spin lint takes made it 14 s)
@pytest.mark.parametrize(("command", "spin"), [("lint", 9000), ("diff", 2000)], ids=["lint", "diff"])
def test_a_slow_chart_is_named_once_while_it_runs(tmp_path: Path, command: str, spin: int) -> None:
    _slow_chart(tmp_path, spin)

    code, _, lines = _timed([command, "."], tmp_path, QUICK)

    assert code in (0, 1), lines
    said = [(when, line) for when, line in lines if line.startswith("dramigrate: slow: still")]
    assert len(said) == 1, lines
    when, line = said[0]
    assert "chart 1 of 1" in line, line
    assert when < lines[-1][0] - 0.5, "said while the chart ran, not once the run ended"


def test_machine_formats_and_quiet_are_unchanged(tmp_path: Path) -> None:
    """stdout holds the report alone, as without the progress lines; --quiet says nothing of progress."""
    _slow_chart(tmp_path)

    _, out, lines = _timed(["lint", ".", "--format", "json"], tmp_path, QUICK)
    _, quiet_out, quiet_lines = _timed(["lint", ".", "--format", "json", "-q"], tmp_path, QUICK)

    assert any(line.startswith("dramigrate: slow: still") for _, line in lines), lines
    assert json.loads(out)["summary"] == json.loads(quiet_out)["summary"]
    assert not [line for _, line in quiet_lines if "still" in line or "checked" in line], quiet_lines


def test_a_long_file_phase_says_how_far_it_is(tmp_path: Path) -> None:
    """Many files: the count of files checked, once the run is past the delay, then at most once per interval (six
    delays): sparse, not a line a file."""
    from dramigrate.progress import EVERY

    for i in range(400):
        (tmp_path / f"p{i}.yaml").write_text(ONE_GPU_POD.format(name=f"p{i}"))
    slow = 0.02

    _, _, lines = _timed(["lint", "."], tmp_path, {"DRAMIGRATE_PROGRESS_SLOW": str(slow)})

    counts = [line for _, line in lines if line.startswith("dramigrate: ") and " of 400 files checked (" in line]
    took = lines[-1][0]
    assert 1 <= len(counts) <= 1 + took / (EVERY * slow), lines


def test_a_quick_run_says_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    _, _, lines = _timed(["lint", "."], tmp_path, {"DRAMIGRATE_PROGRESS_SLOW": "5"})  # as by default

    assert not [line for _, line in lines if line.startswith("dramigrate:")], lines  # not past the delay


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_slow_kustomize_builds_are_named_once(tmp_path: Path) -> None:
    from test_fix_refusal_everywhere import kustomize_tree

    tree = kustomize_tree(tmp_path / "tree")

    code, _, lines = _timed(["diff", "."], tree, {"DRAMIGRATE_PROGRESS_SLOW": "0.01"})

    said = [line for _, line in lines if line.startswith("dramigrate: kustomize: still building and proving after")]
    assert code == 0 and len(said) == 1 and "(1 graph(s))" in said[0], lines
