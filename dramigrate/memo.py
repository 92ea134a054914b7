"""Bounded memos: a module-level dict that remembers answers across a run and starts afresh when full."""

from __future__ import annotations

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
