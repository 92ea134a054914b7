"""Progress on standard error, never with --quiet. On a terminal: a bar for runs longer than about a second, drawn
with rich, gone when the run ends. Elsewhere (a CI log, where a bar is noise and a silent minute looks like a hang):
a line now and then, as a CI log reads it: how many files are checked once the run is a few seconds in (again at
most every half minute), and each item still at work after a few seconds (a chart rendered and proven, the kustomize
builds) named once, when it starts being slow; on a terminal such an item is named too, above the bar."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from dramigrate.limits import env_number

if TYPE_CHECKING:
    from collections.abc import Iterator

DELAY = 1.0  # seconds before the bar appears: short runs stay silent (DRAMIGRATE_PROGRESS_DELAY overrides it)
SLOW = 5.0  # seconds before an item still at work is named, and a log's first count (DRAMIGRATE_PROGRESS_SLOW)
EVERY = 6  # a log's counts at most every EVERY * SLOW seconds: sparse, not a line a file


class Progress:
    def __init__(self, enabled: bool, color: bool, what: str = "files") -> None:
        self.enabled = enabled
        self.terminal = enabled and sys.stderr.isatty()
        self.color = color
        self.what = what
        self.started = time.monotonic()
        self.delay = env_number("DRAMIGRATE_PROGRESS_DELAY", DELAY, least=-1.0)
        self.slow = env_number("DRAMIGRATE_PROGRESS_SLOW", SLOW)
        self._said = 0.0  # when a log's count was last said (0: never)
        self._lock = threading.Lock()  # the slow-item timer's thread and the run's both print
        self._bar: Any = None
        self._task: Any = None

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total <= 1:
            return
        if not self.terminal:
            self._count(done, total)
            return
        with self._lock:
            if self._bar is None:
                if time.monotonic() - self.started < self.delay:
                    return
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
                from rich.progress import Progress as Bar

                console = Console(file=sys.stderr, force_terminal=True, no_color=not self.color)
                self._bar = Bar(
                    TextColumn("dramigrate"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn(self.what),
                    TimeRemainingColumn(),
                    console=console,
                    transient=True,
                )
                self._bar.start()
                self._task = self._bar.add_task("scan", total=total)
            self._bar.update(self._task, completed=done, total=total)

    def _count(self, done: int, total: int) -> None:
        """A log's line of how far the run is: once it is SLOW seconds in, then at most every EVERY * SLOW."""
        now = time.monotonic()
        if done >= total or now - self.started < self.slow or (self._said and now - self._said < EVERY * self.slow):
            return
        self._said = now
        self._say(f"{done} of {total} {self.what} checked ({now - self.started:.0f} s)")

    @contextlib.contextmanager
    def item(self, name: str, doing: str, where: str = "") -> Iterator[None]:
        """The block works on one item (a chart): still at work after SLOW seconds, it is named once while it runs,
        with what is being done and where the run is ("chart 2 of 7")."""
        if not self.enabled:
            yield
            return
        line = f"{name}: still {doing} after {self.slow:g} s" + (f" ({where})" if where else "")
        timer = threading.Timer(self.slow, self._say, (line,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _say(self, line: str) -> None:
        from dramigrate.report.escape import plain

        text = f"dramigrate: {plain(line, False)}"  # one line: a chart's name cannot start another
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(text, markup=False, highlight=False)
            else:  # one write: a line of the run's own printed meanwhile is not cut in two
                sys.stderr.write(text + "\n")
                sys.stderr.flush()

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
