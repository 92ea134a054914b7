"""A progress bar on standard error for runs longer than about a second, on a terminal only (never when piped,
or with --quiet). Drawn with rich; it disappears when the run ends."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from dramigrate.limits import env_number

DELAY = 1.0  # seconds before the bar appears: short runs stay silent (DRAMIGRATE_PROGRESS_DELAY overrides it)


class Progress:
    def __init__(self, enabled: bool, color: bool, what: str = "files") -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.color = color
        self.what = what
        self.started = time.monotonic()
        self.delay = env_number("DRAMIGRATE_PROGRESS_DELAY", DELAY, least=-1.0)
        self._bar: Any = None
        self._task: Any = None

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total <= 1:
            return
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

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
