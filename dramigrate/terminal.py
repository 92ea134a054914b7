"""Terminal manners: colour (--color, NO_COLOR, FORCE_COLOR), and human messages on standard error (--quiet,
--verbose). Reports go where the command sends them; this module only speaks to people."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO

from dramigrate.findings import MESSAGE_LIMIT
from dramigrate.report.escape import clipped, plain

COLOR_MODES = ("auto", "always", "never")


def use_color(stream: TextIO, mode: str = "auto") -> bool:
    """--color always/never wins; then NO_COLOR (https://no-color.org) and FORCE_COLOR; then: is it a terminal?"""
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@dataclass
class Messages:
    """What dramigrate tells the person running it, on standard error."""

    quiet: bool = False
    verbose: bool = False

    def note(self, message: str) -> None:
        """Worth knowing, not a finding (a skipped library chart, where a report went); hidden by --quiet."""
        if not self.quiet:
            self._say(message)

    def warn(self, message: str) -> None:
        """Something the user must see even with --quiet."""
        self._say(message)

    def explain(self, message: str) -> None:
        """--verbose: why dramigrate decided what it did (a file skipped, a finding suppressed or baselined)."""
        if self.verbose:
            self._say(message)

    def _say(self, message: str) -> None:
        # one line: input cannot start another; and a bounded one, whatever it quotes
        print(f"dramigrate: {plain(clipped(message, MESSAGE_LIMIT), False)}", file=sys.stderr)


MESSAGES = Messages()  # the run's; the command line sets quiet and verbose
