"""The process pool of large runs: the same output as one process, and no worker outlives a kill -9 of dramigrate."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_executable, processes_left, processes_with

from dramigrate import engine
from dramigrate.config import Settings
from dramigrate.rules import load_rules
from dramigrate.sources import expand
from dramigrate.versions import Target

FILES = engine.PARALLEL_MIN_FILES + 40  # enough for the pool, too few for the grep pre-filter


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pool") / "tree"
    for i in range(FILES):
        folder = root / f"team-{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        text = ONE_GPU_POD.format(name=f"pod-{i}").replace("gpu: 1", f"gpu: {i % 3 + 1}")
        (folder / f"pod-{i}.yaml").write_text(text if i % 5 else text.replace("nvidia.com/gpu: ", "nvidia.com/gpu: 0"))
    return root


def _run(tree: Path, fix: bool) -> engine.RunResult:
    settings = Settings()
    rules = load_rules(settings.rules)
    return engine.run(expand([str(tree)]), rules, settings, Target.parse("1.36"), fix)


def test_the_pool_gives_what_one_process_gives_in_input_order(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pooled = _run(tree, False)
    monkeypatch.setattr(engine, "PARALLEL_MIN_FILES", 10**9)
    alone = _run(tree, False)
    assert [r.path for r in pooled.files] == [r.path for r in alone.files]
    assert [r.path for r in pooled.files] == sorted(r.path for r in pooled.files)
    assert [dataclasses.asdict(f) for f in pooled.findings] == [dataclasses.asdict(f) for f in alone.findings]
    assert len(pooled.findings) >= FILES


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc to find the workers")
def test_kill_9_of_dramigrate_leaves_no_pool_worker(tree: Path, tmp_path: Path) -> None:
    marker = f"DRAMIGRATE_POOL_TEST={tmp_path}"
    env = {**os.environ, "DRAMIGRATE_POOL_TEST": str(tmp_path)}
    parent = subprocess.Popen(
        [dramigrate_executable(), "lint", str(tree), "--format", "json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(6000):  # the pool's workers have started
            if len(processes_with(marker)) > 1:
                break
            if parent.poll() is not None:
                pytest.fail("the lint ended before its workers were seen")
            time.sleep(0.01)
        else:
            pytest.fail("no worker was started")
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert processes_left(marker) == []


# A Ctrl-C right after a worker forks, in a process of its own (the pool forks from the main thread, and pytest-xdist
# runs tests in another): the run stops, and the workers started with it held take Ctrl-C again
_FORK_INTERRUPTED = """
import os, signal
from dramigrate import engine
from dramigrate.config import Settings
from dramigrate.rules import load_rules
from dramigrate.versions import Target

armed = [os.getpid()]
os.register_at_fork(after_in_parent=lambda: armed and os.getpid() == armed[0] and os.kill(armed[0], signal.SIGINT))
settings = Settings()
try:
    engine.worker_pool(load_rules(settings.rules), settings, Target.parse("1.36"))
    print("went on")
except KeyboardInterrupt:
    print("stopped")
armed.clear()
pool, _ = engine.worker_pool(load_rules(settings.rules), settings, Target.parse("1.36"))
with pool:
    print("worker holds", sorted(pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()))
"""


def test_ctrl_c_while_the_pool_forks_stops_the_run() -> None:
    """Raised inside the fork's handlers (logging's lock release), Python printed "Exception ignored" and dropped it,
    and the run went on and wrote every file (about one Ctrl-C in 15 at the start of a large run)."""
    done = subprocess.run([sys.executable, "-c", _FORK_INTERRUPTED], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["stopped", "worker holds []"], done.stdout + done.stderr
