"""The programs dramigrate runs (`kubectl kustomize`, a `--helm-binary`) on hostile input: bounded in memory, and
never left running by a kill -9 of dramigrate, even one that lands right after the program starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import overlay_with_alias_bomb, processes_left, run_dramigrate


def test_a_kill_9_right_after_a_program_starts_leaves_nothing_running(tmp_path: Path) -> None:
    """A kill -9 between starting a program and registering its process group with the janitor left the program
    (and what it starts) running for good: nothing knew of it."""
    script = textwrap.dedent(
        """
        import os, signal, subprocess
        from dramigrate import lifetime

        lifetime.make_folder("dramigrate-test-")  # the janitor runs
        started = subprocess.Popen

        def start_then_die(command, *args, **kwargs):
            process = started(command, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)  # killed before spawn could register the program
            return process

        subprocess.Popen = start_then_die
        lifetime.spawn(["sleep", "300"])
        """
    )
    marker = f"DRAMIGRATE_TEST_MARK={tmp_path}"
    env = {**os.environ, "DRAMIGRATE_TEST_MARK": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    left = processes_left(marker, seconds=3)
    for pid in left:
        os.kill(pid, signal.SIGKILL)

    assert done.returncode == -signal.SIGKILL
    assert left == []


def test_a_kustomize_build_is_stopped_at_its_memory_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kustomize grew to 15 GB building an overlay whose patch holds an alias bomb, until its time limit: one
    pull request could take a CI runner's memory. Its address space is now bounded (here 1 GiB)."""
    tree = overlay_with_alias_bomb(tmp_path / "tree")
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_MEMORY_MB", "1024")
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_TIMEOUT", "15")
    started = time.monotonic()

    code, out, err = run_dramigrate(["fix", tree], timeout=60)

    assert time.monotonic() - started < 14
    assert "overlay does not build with kustomize: kustomize build ran out of memory (the limit is 1024 MiB" in err
    assert "resourceClaims" in (tree / "good.yaml").read_text()
    assert "resourceClaims" not in (tree / "base" / "pod.yaml").read_text()
