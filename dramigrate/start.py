"""The command's entry point, kept to what Python starts with: a stop (Ctrl-C, SIGTERM, SIGHUP) that comes while
dramigrate imports its code and reads its command line (the first 0.2 s) is said on standard error, as later ones
are. Before, SIGTERM and SIGHUP ended the process without a word (a shell's 143, 129) and Ctrl-C printed a traceback
of whatever module was being imported; a cancelled CI job's log did not say the run had not begun.

hold() puts the starting handler in place; hand_over() gives the stops back to the command once it handles them
(lint, diff and fix: commands.said_stops; any other: the CLI's guard)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

_STOPS = (signal.SIGTERM, signal.SIGINT, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()))
_saved: dict[int, Any] = {}  # the handlers hold() replaced, which hand_over() puts back


def stopped_before_writing(command: str, name: str) -> str:
    """What a stop before the command wrote anything says (name: "SIGTERM", "Ctrl-C")."""
    if command in ("lint", "diff"):
        return f"dramigrate: stopped ({name}) before {command} wrote anything: nothing was written, no report made"
    if command == "fix":
        return f"dramigrate: stopped ({name}) before fix wrote anything: no file was written"
    return f"dramigrate: stopped ({name}) while starting: nothing was written"


def _starting(signum: int, frame: object) -> None:
    """A stop while starting: nothing was read or written, nothing started that outlives the process (the render
    process prestarted dies with it, the janitor removes any folder), so it is said and the process ends now."""
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    with contextlib.suppress(OSError):  # standard error closed: the exit code still says it
        os.write(2, (stopped_before_writing(command, name) + "\n").encode())
    os._exit(128 + signum)


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C once the command runs: the programs dramigrate started end at once (lifetime.end_programs: a kustomize
    build), then KeyboardInterrupt as Python's own handler raises it; the run's end waited for a build under way up
    to its 30 s time limit."""
    lifetime = sys.modules.get("dramigrate.lifetime")  # not imported yet: nothing started to end
    if lifetime is not None:
        lifetime.end_programs()
    raise KeyboardInterrupt


def hold() -> None:
    """The starting handler for each stop not ignored (a SIGINT of a job started in the background stays ignored).
    Once only: a second call keeps the first one's saved handlers."""
    if _saved:
        return
    for signum in _STOPS:
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_IGN, None) or handler is _starting:
            continue
        _saved[signum] = _interrupt if handler is signal.default_int_handler else handler
        signal.signal(signum, _starting)


def hand_over() -> None:
    """The command handles stops from here: the handlers hold() replaced are back (Ctrl-C ending the programs started
    first). Nothing when hold() did not run (the CLI called in a test's process)."""
    while _saved:
        signum, handler = _saved.popitem()
        if signal.getsignal(signum) is _starting:
            signal.signal(signum, handler)


def main() -> None:
    hold()
    from dramigrate.cli import main as run

    run()
