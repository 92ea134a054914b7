"""Lint ahead: the files the grep pre-filter lets through are linted in the worker pool while the main process
still walks the folders and scans the kustomizations.

Without it the pool started only once the walk and the kustomize scan were done, and the second core sat idle
for the scan. Which jobs lint runs is known only after the scan (a kustomize patch is left out, a file of a graph
that cannot be migrated is reported differently), so what runs ahead is a guess: a plain lint job for each file
grep keeps. results() takes a guessed job's result only where the real job is the same job (Job compares every
field), and runs the others then; a result depends only on the job and the file, so the output is the same.

The workers also load the kustomizations the walk finds (kustomize.graph.load_many): the kustomize scan takes each
load that is done when it comes to that kustomization and loads the others itself, so it never waits for one.

The workers are forked before grep's threads exist (a fork while another thread holds a lock can hang the child):
start() runs before the first grep starts, and a pool started with fork forks all its workers at the first submit.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, CancelledError, Future
from typing import TYPE_CHECKING

from dramigrate import engine
from dramigrate.config import Settings
from dramigrate.kustomize.graph import Loaded, load_many
from dramigrate.lifetime import result
from dramigrate.migrate import FileResult, Job
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

CHUNK = 16  # files a worker takes at once: small enough that both stay busy to the end
KUSTOMIZATION_CHUNK = 32  # kustomizations a worker loads at once (each is a few hundred bytes)


class Ahead:
    def __init__(self, rules: RuleSet, settings: Settings, target: Target, fix: bool = False) -> None:
        self.rules, self.settings, self.target, self.fix = rules, settings, target, fix
        self.pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._guessed: dict[str, tuple[Future[list[FileResult]], int]] = {}  # path -> (its chunk, index in it)
        self.taken = 0  # results of jobs run ahead that results() took
        self._kustomizations: list[str] = []  # found, not sent to a worker yet
        self._loads: dict[str, tuple[Future[list[Loaded | None]], int]] = {}  # path -> (its chunk, index in it)
        self.preloaded = 0  # kustomization loads the scan took
        self._holders = 0  # threads that still run jobs in the pool (hold): close() waits for the last of them
        self._close_asked = False

    def start(self) -> bool:
        """Fork the workers (before any thread of grep's exists); False with one core."""
        made = engine.worker_pool(self.rules, self.settings, self.target)
        if made is None:
            return False
        self.pool = made[0]
        self._send_kustomizations(KUSTOMIZATION_CHUNK)
        return True

    def kustomization(self, path: str) -> None:
        """Load this kustomization (resolved) in the pool, with the next few the walk finds."""
        self._kustomizations.append(path)
        self._send_kustomizations(KUSTOMIZATION_CHUNK)

    def flush(self) -> None:
        """Send the kustomizations found since the last chunk (the walk is done)."""
        self._send_kustomizations(1)

    def _send_kustomizations(self, least: int) -> None:
        if self.pool is None or len(self._kustomizations) < least:
            return
        paths, self._kustomizations = self._kustomizations, []
        try:
            for i in range(0, len(paths), KUSTOMIZATION_CHUNK):
                part = paths[i : i + KUSTOMIZATION_CHUNK]
                future = self.pool.submit(load_many, part)
                self._loads.update((p, (future, n)) for n, p in enumerate(part))
        except (RuntimeError, BrokenExecutor):
            pass  # the scan loads them

    def loaded(self, path: str) -> Loaded | None:
        """The kustomization's load if a worker has done it by now, else None (the scan then loads it itself)."""
        future, n = self._loads.pop(path, (None, 0))
        if future is None or not future.done():
            return None
        try:
            done = future.result()[n]
        except Exception:  # cancelled, a broken pool, a load that could not come back: the scan loads it
            return None
        self.preloaded += done is not None
        return done

    def feed(self, paths: list[str]) -> None:
        """Lint these files ahead (called from grep's threads with the files of a batch it keeps)."""
        if self.pool is None:
            return
        with self._lock:
            paths = [p for p in paths if p not in self._guessed]
            try:
                for i in range(0, len(paths), CHUNK):
                    part = paths[i : i + CHUNK]
                    future = self.pool.submit(engine.run_chunk, [Job(p, None, self.fix) for p in part])
                    self._guessed.update((p, (future, n)) for n, p in enumerate(part))
            except (RuntimeError, BrokenExecutor):
                pass  # not ahead then: results() runs them

    def take(self, jobs: list[Job]) -> dict[Job, Callable[[], FileResult | None]]:
        """For each of these jobs that runs ahead as it is, a function that waits for its result (None when the
        pool never ran it: shut down or broken); results() then runs such a job again, should it need it."""
        with self._lock:
            taken = {j: self._guessed.pop(j.path) for j in jobs if _same(j, self._guessed.get(j.path), self.fix)}
        return {j: functools.partial(_result, *where) for j, where in taken.items()}

    def hold(self) -> None:
        """Keep the pool open past results() until release(): the kustomize thread migrates its builds in it."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            last = self._holders == 0 and self._close_asked
        if last:
            self.close()

    def submit(self, job: Job) -> Callable[[], FileResult | None] | None:
        """Run one more job in the pool (a kustomize build's migration, by a thread that holds it): a function that
        waits for its result (None when the pool never ran it); None when there is no pool to run it."""
        with self._lock:
            if self.pool is None:
                return None
            try:
                future = self.pool.submit(engine.run_chunk, [job])
            except (RuntimeError, BrokenExecutor):
                return None
        return functools.partial(_result, future, 0)

    def results(self, jobs: list[Job], progress: Callable[[int, int], None] | None) -> list[FileResult] | None:
        """The jobs' results in input order: each guessed job that is the real one from its chunk, the others run
        now; None when a worker died (the caller then runs every job here). The pool is shut down after."""
        if self.pool is None:
            return None
        try:
            with self._lock:
                guessed, self._guessed = self._guessed, {}
            where: list[tuple[Future[list[FileResult]], int]] = []
            rest = [j for j in jobs if not _same(j, guessed.get(j.path), self.fix)]
            chunks: dict[int, tuple[Future[list[FileResult]], int]] = {}
            for i in range(0, len(rest), CHUNK):
                future = self.pool.submit(engine.run_chunk, rest[i : i + CHUNK])
                chunks.update((id(j), (future, n)) for n, j in enumerate(rest[i : i + CHUNK]))
            for j in jobs:
                where.append(chunks[id(j)] if id(j) in chunks else guessed[j.path])
            self.taken = len(jobs) - len(rest)
            out = []
            for done, (future, n) in enumerate(where, start=1):
                out.append(result(future)[n])
                if progress is not None:
                    progress(done, len(jobs))
            return out
        except BrokenExecutor:
            return None
        finally:
            self.close()

    def close(self) -> None:
        """Shut the pool down, or once the last thread that holds it releases it."""
        with self._lock:
            self._close_asked = True
            if self._holders:
                return
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
            engine._worker = None


def _result(future: Future[list[FileResult]], n: int) -> FileResult | None:
    try:
        return result(future)[n]
    except (CancelledError, BrokenExecutor):
        return None


def _same(job: Job, guess: tuple[Future[list[FileResult]], int] | None, fix: bool) -> bool:
    return guess is not None and job == Job(job.path, None, fix)
