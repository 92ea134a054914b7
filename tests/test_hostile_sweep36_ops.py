"""Session 36's operator and hostile-environment probes of lint, diff and fix (issue 11, items 1, 2, 5, 6): stops
at any moment, faults of the disk and the tree between walk, read and write, a repository's own settings. Each
case is the smallest input that showed its break, run in the test's process where the process boundary is not
what is tested."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# The installed command's entry point, stopped the moment its imports reach typer (the bulk of the first 0.2 s).
STOP_WHILE_IMPORTING = """
import os, signal, sys
from importlib.metadata import entry_points

stop = getattr(signal, sys.argv[1])

class StopAtTyper:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "typer":
            os.kill(os.getpid(), stop)
        return None

sys.argv[1:] = ["lint", "."]
sys.meta_path.insert(0, StopAtTyper)
entry_points(group="console_scripts")["dramigrate"].load()()
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_stop_while_dramigrate_imports_is_said(tmp_path: Path, name: str) -> None:
    """A stop in the first 0.2 s (Python importing dramigrate's code) was silent: SIGTERM ended the process with a
    shell's 143 and no word in a cancelled CI job's log, Ctrl-C printed a traceback of the module being imported.
    It now says what stopped the run and that nothing was written, with 128 + the signal, as a later stop does."""
    done = subprocess.run(
        [sys.executable, "-c", STOP_WHILE_IMPORTING, name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    shown = "Ctrl-C" if name == "SIGINT" else name
    assert done.returncode == 128 + getattr(signal, name), (done.returncode, done.stderr)
    assert f"dramigrate: stopped ({shown}) before lint wrote anything" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_stop_given_to_a_working_thread_is_taken_while_the_main_thread_waits() -> None:
    """The kernel gives a stop sent to the process to any of its threads. When it went to a thread doing the run's
    work (a Helm render, the grep pre-filter, a write of fix) while the main thread waited for that work's result
    without a time limit, Python ran the stop's handler only once the work was done: a render to its time limit,
    every write of fix (they stop starting new ones only once the stop is seen). lifetime.result, which those waits
    use, takes the stop within its 50 ms step. The stop is given here by the working thread to itself."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from dramigrate.lifetime import Stopped, result, sigterm_raises

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run in the main thread only")
    release = threading.Event()

    def work() -> str:
        time.sleep(0.2)  # the main thread waits by now
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        release.wait(3)  # the work going on
        return "done"

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    pool = ThreadPoolExecutor(max_workers=1)
    started = time.monotonic()
    try:
        with pytest.raises(Stopped), sigterm_raises():
            result(pool.submit(work))
        took = time.monotonic() - started
    finally:
        release.set()
        pool.shutdown()
        for signum, handler in handlers.items():  # a stop leaves them ignored, for the rest of the run
            signal.signal(signum, handler)
    assert took < 2, f"the stop was taken {took:.1f} s after it came"


def test_a_standard_error_gone_with_its_terminal_leaves_the_exit_code_as_it_was(tmp_path: Path) -> None:
    """Once the terminal or ssh session closes, writes to standard error fail with EIO. The first line written
    there raised: diff's list of files with bad input turned exit 2 into 1 (a traceback nobody saw), and after a
    hangup during a run the progress bar's last line turned the stop (129) into an internal error and exit 1, as if
    the run had findings. Standard error now drops what it no longer takes."""
    from conftest import dramigrate_executable

    (tmp_path / "bad.yaml").write_text("kind: Pod\nspec: {containers: [{resources: {limits: {nvidia.com/gpu: 1}}}]\n")
    master, slave = os.openpty()
    os.close(master)  # the terminal is gone: writing to its other end fails with EIO
    try:
        done = subprocess.run(
            [dramigrate_executable(), "diff", "bad.yaml"],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=60,
        )
    finally:
        os.close(slave)
    assert done.returncode == 2, done.returncode
