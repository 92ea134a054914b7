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


@pytest.mark.parametrize("existing", [False, True])
def test_a_folder_swapped_for_a_link_while_fix_writes_loses_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    """A folder of the tree replaced by a symlink to a folder outside it, holding files of the same names, once fix
    made its temp file there (a concurrent job, or a contribution's script, between walk and write). The write is
    refused, but its temp file then seemed gone (its path now led outside), so fix took it as renamed and put the
    file "back": a new file (the classes file fix creates) by removing the file of that name outside the tree, a
    rewritten one by an internal error (KeyError) that hid why it was not written. The outside folder is now left
    as it was, and the refusal says why."""
    from conftest import ONE_GPU_POD

    from dramigrate import writer
    from dramigrate.findings import InputError
    from dramigrate.writer import WriteOptions, write_atomic

    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "k8s").mkdir(parents=True)
    outside.mkdir()
    text = ONE_GPU_POD.format(name="a")
    (tree / "k8s" / "pod.yaml").write_text(text)
    (outside / "pod.yaml").write_text(text)  # the same bytes: only its identity tells it apart
    real = writer._create_temp

    def swapped_after(folder: str, name: str, shown: str) -> tuple[int, str]:
        made = real(folder, name, shown)
        (tree / "k8s").rename(tree / "k8s.moved")
        (tree / "k8s").symlink_to(outside, target_is_directory=True)
        return made

    monkeypatch.setattr(writer, "_create_temp", swapped_after)
    if not existing:  # a new file: the folder held none of that name when fix looked
        (tree / "k8s" / "pod.yaml").unlink()

    with pytest.raises(InputError):
        write_atomic(
            tree / "k8s" / "pod.yaml",
            "kind: ConfigMap\n",
            expected=text.encode() if existing else None,
            options=WriteOptions(roots=(tree,)),
        )

    assert (outside / "pod.yaml").read_text() == text
    assert [p.name for p in outside.iterdir()] == ["pod.yaml"]


def test_a_report_that_fails_after_a_hangup_ends_with_the_hangups_code() -> None:
    """A terminal or ssh session that closes sends SIGHUP, then every write to it fails (EIO). When that came while
    lint or diff wrote their report to standard output, the report's failure (bad input: exit 2, `cannot write to
    standard output`) replaced the stop: a wrapper that restarts a run cut by a hangup (exit 129) took it for bad
    input. The stop's code stands, and the failure is said with it."""
    import threading

    from dramigrate.commands import said_stops
    from dramigrate.findings import InputError

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run in the main thread only")

    def report(_: object) -> int:
        os.kill(os.getpid(), signal.SIGHUP)  # the terminal closed while the report was being written
        raise InputError("cannot write to standard output: Input/output error")

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        code = said_stops("lint", lambda: None, report)
    finally:
        for signum, handler in handlers.items():  # a stop leaves them ignored, for the rest of the run
            signal.signal(signum, handler)
    assert code == 128 + signal.SIGHUP
