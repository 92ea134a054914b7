"""Child processes die with dramigrate: a `kill -9` of the parent leaves no worker behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def die_with_parent(parent: int) -> None:
    """Called first in a child: the kernel kills it when `parent` dies (Linux PR_SET_PDEATHSIG); it exits now if
    the parent is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
