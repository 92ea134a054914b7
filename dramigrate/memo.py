"""Bounded memos: a module-level dict that remembers answers across a run and starts afresh when full; and the
run's memos, emptied as each run starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V, most: int) -> V:
    """value, stored under key in memo; a memo holding `most` answers is emptied first (a run over many distinct
    inputs starts it afresh rather than let it grow without bound)."""
    if len(memo) >= most:
        memo.clear()
    memo[key] = value
    return value


_RUN_MEMOS: list[Callable[[], None]] = []


def per_run(clear: Callable[[], None]) -> None:
    """Have start_run call clear: for a memo of paths and folders as they were when a run asked (a relative path
    resolved from its working folder, a folder's write state), which a later run in the same process (a program
    embedding dramigrate, fix run twice) must not see."""
    _RUN_MEMOS.append(clear)


def start_run() -> None:
    """Empty the memos of the modules imported so far, as a run in a new process starts."""
    for clear in _RUN_MEMOS:
        clear()
