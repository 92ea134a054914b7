"""Nothing of dramigrate outlives it, even a `kill -9` (no atexit, no finally): its child processes, its
temporary folders, and the temp files its atomic writes rename into place.

Child processes (the Helm render worker, the worker pool of large runs) call die_with_parent first thing: the
kernel kills them when dramigrate dies (PR_SET_PDEATHSIG on Linux). Programs dramigrate runs but does not write
(`kubectl kustomize`, a `--helm-binary`) start through spawn, in a process group of their own that the janitor
kills when dramigrate dies, with whatever they started in turn. Such a program waits at a gate (a shell reading a
pipe) until its group is registered and its memory limit set: were dramigrate killed in between, the pipe closes
and the gate ends without ever running the program.

The first temporary folder or temp file of a process starts a janitor: a small child in its own session (a
`kill -9` of dramigrate's process group does not reach it) that reads their paths from a pipe and, when the
pipe closes, removes any of them that is still there (a temp file renamed into place is not). The pipe closes
when dramigrate exits, however it exits, and with it any child that inherited it (a forked worker), so a path
is removed once nobody can use it.
A normal exit removes its folders itself and then waits for the janitor, which finds nothing left to do.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from concurrent.futures import Future

T = TypeVar("T")

_JANITOR = (
    "import os,shutil,signal,sys\n"
    "paths,groups=[],set()\n"
    "for p in sys.stdin.buffer.read().split(b'\\0'):\n"
    "    p=os.fsdecode(p)\n"
    "    if p.startswith('+group '): groups.add(int(p[7:]))\n"
    "    elif p.startswith('-group '): groups.discard(int(p[7:]))\n"
    "    elif p: paths.append(p)\n"
    "for g in groups:\n"
    "    try: os.killpg(g,signal.SIGKILL)\n"
    "    except OSError: pass\n"
    "for p in paths:\n"
    "    if os.path.islink(p): continue\n"
    "    if os.path.isdir(p): shutil.rmtree(p,ignore_errors=True)\n"
    "    elif os.path.isfile(p):\n"
    "        try: os.unlink(p)\n"
    "        except OSError: pass\n"
)
_lock = threading.Lock()
_janitor: tuple[int, subprocess.Popen[bytes]] | None = None  # (the pid that started it, the janitor)
_running: set[subprocess.Popen[Any]] = set()  # what spawn started and reap has not ended yet
_ended = False  # end_programs ran: spawn starts nothing more
_workers: weakref.WeakSet[Any] = weakref.WeakSet()  # the worker pools' processes (multiprocessing.Process)


def _watch(path: str) -> None:
    """Have the janitor remove path if this process dies before removing it (or, for "+group N" and "-group N",
    start and stop killing process group N then)."""
    global _janitor
    with _lock:
        if _janitor is None or _janitor[0] != os.getpid():  # a forked child gets its own janitor
            try:
                process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _JANITOR],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError:
                return  # no janitor (process limit): the folder is still removed on a normal exit
            _janitor = (os.getpid(), process)
        stdin = _janitor[1].stdin
        assert stdin is not None
        with contextlib.suppress(OSError):
            stdin.write(os.fsencode(path) + b"\0")
            stdin.flush()


def watch(path: str) -> None:
    """Have the janitor remove the file or folder at path if this process dies first (a writer's temp file:
    once it is renamed into place there is nothing left at path to remove)."""
    _watch(os.path.abspath(path))


def make_folder(prefix: str) -> Path:
    """A new private temporary folder (mode 0700) the janitor removes should the process die without doing so."""
    path = tempfile.mkdtemp(prefix=prefix)
    _watch(path)
    return Path(path)


@contextlib.contextmanager
def temporary_folder(prefix: str) -> Iterator[Path]:
    """make_folder, removed when the block ends."""
    path = make_folder(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_behind(path: Path) -> None:
    """Remove a temporary folder that nothing reads any more on a thread of its own while the run goes on: unlinking
    a copied chart's hundreds of files is waiting on the disk (0.2 s for each copy of sm-realtime's), which the
    writes and the report now overlap. Python's exit waits for the thread (not a daemon), and the janitor removes
    the folder should dramigrate die first."""
    threading.Thread(target=shutil.rmtree, args=(path, True), name="dramigrate-remove").start()


@atexit.register
def _stop() -> None:
    """Close the pipe and let the janitor finish, so no process of dramigrate's is left once it exits."""
    global _janitor
    with _lock:
        if _janitor is None or _janitor[0] != os.getpid():
            return
        process = _janitor[1]
        _janitor = None
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=5)


# The gate: a shell that runs its arguments, their standard input empty, once a line arrives on its own standard
# input, and exits without running them if that pipe closes first (dramigrate died before registering the program).
_GATE = 'read -r _ || exit 125; exec "$@" </dev/null'


def spawn(command: list[str], memory_mb: int = 0, **popen: Any) -> subprocess.Popen[Any]:
    """Start a program in a process group of its own that the janitor kills should dramigrate die first (a
    `kill -9` runs no cleanup in dramigrate, and PR_SET_PDEATHSIG would not reach the program's own children),
    with at most memory_mb of address space (0: no limit), inherited by what it starts. The program runs only once
    both are in place, its standard input empty. Raises OSError when the program cannot be run. Pair with reap()
    once the program is done."""
    popen.pop("stdin", None)
    if _ended:
        raise OSError(errno.ECANCELED, "the run was stopped", command[0])
    shell = "/bin/sh"
    if not os.path.exists(shell):  # no POSIX shell for the gate: start the program directly
        process = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL, **popen)
        _running.add(process)
        if _ended:  # a stop came while it started, after end_programs had looked: it is ended now
            os.killpg(process.pid, signal.SIGKILL)
            raise OSError(errno.ECANCELED, "the run was stopped", command[0])
        _watch(f"+group {process.pid}")
        _limit_memory(process.pid, memory_mb)
        return process
    program = shutil.which(command[0])
    if program is None:
        code = errno.EACCES if os.path.isfile(command[0]) else errno.ENOENT  # which() skips a file not executable
        raise OSError(code, os.strerror(code), command[0])
    gate, opened = os.pipe()
    try:
        process = subprocess.Popen(
            [shell, "-c", _GATE, "dramigrate-gate", program, *command[1:]],
            start_new_session=True,
            stdin=gate,
            **popen,
        )
    finally:
        os.close(gate)
    _running.add(process)
    try:
        if _ended:  # a stop came while it started, after end_programs had looked: the gate ends, the program never runs
            raise OSError(errno.ECANCELED, "the run was stopped", command[0])
        _watch(f"+group {process.pid}")
        _limit_memory(process.pid, memory_mb)
        os.write(opened, b"\n")
    finally:
        os.close(opened)
    return process


def _limit_memory(pid: int, memory_mb: int) -> None:
    """The address-space limit of a started process, where the OS allows it (Linux)."""
    if memory_mb <= 0:
        return
    try:
        import resource

        limit = memory_mb << 20
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def reap(process: subprocess.Popen[Any]) -> None:
    """Wait for a spawned program, killing its process group first when it is still running (a timeout, an
    error), and tell the janitor it is gone (its number may be given to another process)."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError, ValueError):
        process.communicate()
    _running.discard(process)
    _watch(f"-group {process.pid}")


def end_programs() -> None:
    """A stop (Ctrl-C, SIGTERM), which ends the run: every program spawn started and reap has not ended yet is killed
    with what it started, and spawn starts no other. A thread waiting on one (a kustomize build) then ends at once:
    the run's end waited for it (a thread pool's, Python's exit) until the program ended or reached its time limit,
    30 s after the stop. Called by the stop's signal handler, before the stop is raised wherever the run is."""
    global _ended
    _ended = True  # first: a program starting now sees it once listed (spawn), or is listed before the loop below
    for process in list(_running):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    for worker in list(_workers):  # a pool whose workers are gone is broken: whoever waits on it is told at once
        with contextlib.suppress(OSError, ValueError, AttributeError):
            worker.kill()


def watch_workers(processes: Any) -> None:
    """The processes of a worker pool (multiprocessing.Process), which end_programs kills: a worker ignores the
    stops itself (ignore_stops), so the run's end does not wait for the work still queued in it."""
    _workers.update(processes)


def ignore_stops() -> None:
    """In a worker forked under signals_held, before release_signals: Ctrl-C, SIGTERM and SIGHUP are for the run,
    not for its workers, which the run ends (end_programs) or which die with it. A terminal's Ctrl-C and a CI
    runner's SIGTERM reach the whole process group: each idle worker printed a traceback of its own (KeyboardInterrupt
    in multiprocessing's queue), and one stopped while it held the queue's lock left the others waiting for it for
    ever, and the run's exit with them."""
    for signum in _STOPS:
        signal.signal(signum, signal.SIG_IGN)


def as_completed(futures: Iterable[Future[Any]]) -> Iterator[Future[Any]]:
    """concurrent.futures.as_completed in short waits: the kernel may give a stop (Ctrl-C, SIGTERM) to any thread, and
    Python runs its handler only in the main thread, once that wakes up; waiting for a kustomize build without a
    limit, the run ended at the build's 30 s limit, not at the stop."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
        yield from done


def settle(future: Future[Any]) -> None:
    """Wait for future to be done (its result or its error), in short waits as as_completed: the kernel may give a
    stop to the very thread doing the work (a render, a grep, a write), and the main thread, waiting on a lock
    without a time limit, ran the stop's handler only once that work was done."""
    from concurrent.futures import wait

    while not future.done():
        wait((future,), timeout=0.05)


def result(future: Future[T]) -> T:
    """future.result(), waited for as settle() waits: a stop is taken within 50 ms of coming."""
    settle(future)
    return future.result()


def die_with_parent(parent: int) -> None:
    """Called first in a child: the kernel kills it when `parent` dies (Linux PR_SET_PDEATHSIG); it exits now if
    the parent is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


# the stops: Ctrl-C, SIGTERM (a CI job cancelled), SIGHUP (the terminal or the ssh session closed)
_STOPS = (signal.SIGTERM, signal.SIGINT, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()))
_HELD = frozenset(_STOPS)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait while the body forks workers, and are raised when it ends: one that came during a
    fork was raised inside the fork's own handlers (logging's lock release), where Python prints "Exception
    ignored" and drops it, and the run went on to write every file (about one Ctrl-C in 15 at the start of a large
    run). The forked children start with them held: they call release_signals first."""
    main = threading.current_thread() is threading.main_thread()
    if not main or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def release_signals() -> None:
    """In a child forked under signals_held: Ctrl-C and SIGTERM reach it again, as before."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


class Stopped(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled) or SIGHUP (its terminal closed) during a run, raised as Ctrl-C is."""

    def __init__(self, name: str = "SIGTERM") -> None:
        super().__init__(name)
        self.name = name


def stop_name(exc: KeyboardInterrupt) -> str:
    """The signal a stop came from, as the report names it; a stop raised on from another (writer.HalfWritten):
    the first one's."""
    if isinstance(exc.__cause__, KeyboardInterrupt):
        return stop_name(exc.__cause__)
    return exc.name if isinstance(exc, Stopped) else "Ctrl-C"


def stop_code(name: str) -> int:
    """The exit code of a run a stop ended: 128 + the signal's number, as a shell gives it (130 for Ctrl-C)."""
    return 128 + (signal.SIGINT if name == "Ctrl-C" else signal.Signals[name])


@dataclass
class StopState:
    """What sigterm_raises's block knows of a stop: the signal ("SIGTERM", "Ctrl-C"; "" until one came), and, while a
    wait on threads is under way, the event a stop sets instead of raising."""

    signal: str = ""  # "SIGTERM", "SIGHUP", "Ctrl-C"
    quiet: threading.Event | None = None


@contextlib.contextmanager
def sigterm_raises() -> Iterator[StopState]:
    """SIGTERM and SIGHUP raise Stopped in the block (in the main thread), as Ctrl-C raises KeyboardInterrupt: the
    writes under way end, the others do not start, and the report says which files were written. Python's default ended
    the process at once, and nothing said which of the files were rewritten. Once stopped, the run ends with that
    report: a further SIGTERM or Ctrl-C is ignored (Ctrl-C pressed twice, or a CI runner's SIGINT then SIGTERM, cut
    the wait for the writes under way short, and no report named the files already rewritten). While the yielded
    state's `quiet` holds an event (the main thread waits for writer threads), a stop sets it and raises nothing: an
    exception raised inside a lock's wait could leave the lock released twice, and the run ended with an internal
    error ("release unlocked lock") instead of its report."""
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def stop(signum: int, frame: Any) -> None:
        end_programs()
        interrupt = KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signal.Signals(signum).name)
        state.signal = stop_name(interrupt)
        for other in before:
            signal.signal(other, signal.SIG_IGN)
        if state.quiet is not None:
            state.quiet.set()
            return
        raise interrupt

    # a signal ignored already (SIGINT of a job started in the background) stays ignored
    before = {s: h for s in _STOPS if (h := signal.getsignal(s)) not in (signal.SIG_IGN, None)}
    for signum in before:
        signal.signal(signum, stop)
    try:
        yield state
    finally:
        if not state.signal:
            for signum, handler in before.items():
                signal.signal(signum, handler)
