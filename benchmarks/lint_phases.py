"""Where a large lint spends its time: each phase's wall clock and CPU, per process.

    python benchmarks/lint_phases.py DIR [--repeat N] [-- LINT OPTIONS]

Runs `dramigrate lint DIR --format json` (the report is discarded) N times in a child process whose phases are
timed from the inside (its functions wrapped, nothing else changed), and prints the medians: when each phase of the
main thread starts and ends (seconds since the child started) and the CPU it used; the grep pre-filter's runs; the
workers' lint of the files grep kept and their kustomization loads; and the CPU of every process. A run on two cores
ends no sooner than half its total CPU, nor than the main thread's own path (start-up, walk, kustomize scan, report):
the table shows both. cProfile and pyinstrument see only the main thread; this sees the workers and grep too.

Phases whose function is gone (renamed since) are left out with a note. Needs only the venv dramigrate runs in.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

# The child: wraps dramigrate's phase functions with timers that append "pid label start end cpu" lines to LOG.
CHILD = r"""
import os, sys, time, resource, threading
T0 = time.time()
LOG = open(os.environ["LINT_PHASES_LOG"], "a", buffering=1)

def note(label, start, end, cpu):
    LOG.write(f"{os.getpid()} {label} {start - T0:.4f} {end - T0:.4f} {cpu:.4f}\n")

def wrap(owner, name, label, process_cpu=False):
    f = getattr(owner, name, None)
    if f is None:
        LOG.write(f"missing {label}\n")
        return
    clock = time.process_time if process_cpu else time.thread_time
    def timed(*args, **kwargs):
        start, cpu = time.time(), clock()
        try:
            return f(*args, **kwargs)
        finally:
            note(label, start, time.time(), clock() - (0.0 if process_cpu else cpu))
    if isinstance(owner, type):
        timed.__qualname__, timed.__module__ = f.__qualname__, f.__module__
    else:  # pickled by reference (a pool task): found under its own name in the module that now holds it
        timed.__qualname__, timed.__module__ = name, owner.__name__
    setattr(owner, name, timed)

import dramigrate.cli as cli
note("start-up (import dramigrate.cli)", T0, time.time(), time.process_time())
import importlib
def module(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        LOG.write(f"missing {name}\n")
        return None
commands, engine, prefilter, ahead = (module(f"dramigrate.{m}") for m in ("commands", "engine", "prefilter", "ahead"))
for owner, name, label in [
    (commands, "prepare", "prepare (settings, rules, walk)"),
    (commands, "expand", "  walk (grep, workers start)"),
    (commands, "run", "run (scan, wait, collect)"),
    (engine, "resolve_paths", "  resolve paths"),
    (engine, "scan", "  kustomize scan"),
    (commands, "_report", "report"),
]:
    if owner is not None:
        wrap(owner, name, label)
if prefilter is not None:
    wrap(prefilter, "_output", "grep")
    if hasattr(prefilter, "Grep"):
        wrap(prefilter.Grep, "result", "  wait for grep")
if ahead is not None:
    wrap(ahead, "_run_chunk", "lint chunk", process_cpu=True)  # in the workers: the worker's CPU so far
    wrap(ahead, "load_many", "kustomization loads", process_cpu=True)
    if hasattr(ahead, "Ahead"):
        wrap(ahead.Ahead, "results", "  wait for workers")

_run = threading.Thread.run
def thread_run(self):
    cpu = time.thread_time()
    kind = "grep readers" if self.name.startswith("ThreadPoolExecutor") else "other"
    if "Feeder" in self.name:  # multiprocessing's queue feeder: pickles the pool's tasks
        kind = "pool feeder"
    try:
        _run(self)
    finally:
        LOG.write(f"thread {time.thread_time() - cpu:.4f} {kind}\n")
threading.Thread.run = thread_run
try:
    import concurrent.futures.process as cfp
    _manager = cfp._ExecutorManagerThread.run
    def manager_run(self):
        cpu = time.thread_time()
        try:
            _manager(self)
        finally:
            LOG.write(f"thread {time.thread_time() - cpu:.4f} pool manager\n")
    cfp._ExecutorManagerThread.run = manager_run
except (ImportError, AttributeError):
    pass

import atexit
def done():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    LOG.write(f"end {time.time() - T0:.4f} {me.ru_utime + me.ru_stime:.4f} {kids.ru_utime + kids.ru_stime:.4f}\n")
atexit.register(done)
sys.argv = ["dramigrate", "lint", *sys.argv[1:]]
cli.main()
"""

WORKER_LABELS = ("lint chunk", "kustomization loads")


def one_run(tree: Path, extra: list[str]) -> dict[str, float]:
    """One lint in a child; its figures by name."""
    with tempfile.TemporaryDirectory(prefix="lint-phases-") as tmp:
        log = Path(tmp, "phases.log")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed tool runs
        env["LINT_PHASES_LOG"] = str(log)
        subprocess.run(
            [sys.executable, "-c", CHILD, str(tree), "--format", "json", *extra],
            stdout=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        lines = log.read_text().splitlines() if log.exists() else []
    return figures(lines)


def figures(lines: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    main_pid = lines[0].split()[0] if lines and lines[0][0].isdigit() else ""
    spans: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    worker_cpu: dict[str, float] = {}
    threads: dict[str, float] = defaultdict(float)  # each kind of thread of the main process: its CPU
    for line in lines:
        head, _, rest = line.partition(" ")
        if head == "missing":
            out[f"missing: {rest}"] = 1.0
            continue
        if head == "thread":
            cpu_text, _, kind = rest.partition(" ")
            threads[kind or "other"] += float(cpu_text)
            continue
        if head == "end":
            wall, mine, kids = map(float, rest.split())
            out.update({"wall": wall, "cpu main process": mine, "cpu children": kids})
            continue
        fields = rest.rsplit(" ", 3)
        label, start, end, cpu = fields[0], float(fields[1]), float(fields[2]), float(fields[3])
        if head != main_pid and label in WORKER_LABELS:
            worker_cpu[head] = max(worker_cpu.get(head, 0.0), cpu)  # the worker's process CPU at its last task
            label = f"workers: {label}"
        spans[label].append((start, end, cpu))
    for label, runs in spans.items():
        out[f"{label}|start"] = min(s for s, _, _ in runs)
        out[f"{label}|end"] = max(e for _, e, _ in runs)
        out[f"{label}|n"] = len(runs)
        if not label.startswith("workers:") and label != "grep":  # grep's CPU is its processes' (below)
            out[f"{label}|cpu"] = sum(c for _, _, c in runs)
    out["cpu workers"] = sum(worker_cpu.values())
    out["cpu main threads (grep readers, pool)"] = sum(threads.values())
    out.update({f"  of which {kind}": cpu for kind, cpu in sorted(threads.items())})
    if "cpu children" in out:
        out["cpu grep (children - workers)"] = out["cpu children"] - out["cpu workers"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path, help="the folder to lint (benchmarks/generate.py makes one)")
    ap.add_argument("--repeat", type=int, default=5, help="runs; medians are shown (default 5)")
    ap.add_argument("lint_args", nargs="*", help="more lint options, after --")
    args = ap.parse_args()
    runs = [one_run(args.tree, args.lint_args) for _ in range(args.repeat)]
    keys = list(dict.fromkeys(k for r in runs for k in r))

    def med(key: str) -> float:
        values = [r[key] for r in runs if key in r]
        return statistics.median(values) if values else float("nan")

    print(f"lint {args.tree} --format json: median of {args.repeat} runs, load {os.getloadavg()[0]:.1f}")
    print(f"{'phase':40s} {'start s':>8s} {'end s':>8s} {'cpu s':>7s} {'calls':>6s}")
    for label in sorted((k[: -len("|start")] for k in keys if k.endswith("|start")), key=lambda p: med(p + "|start")):
        cpu = f"{med(label + '|cpu'):7.3f}" if f"{label}|cpu" in keys else f"{'':7s}"
        print(f"{label:40s} {med(label + '|start'):8.3f} {med(label + '|end'):8.3f} {cpu} {med(label + '|n'):6.0f}")
    for key in [k for k in keys if "|" not in k]:
        print(f"{key:40s} {med(key):8.3f}" if not key.startswith("missing") else f"{key} (not timed)")
    total = med("cpu main process") + med("cpu children")
    print(f"{'cpu total':40s} {total:8.3f}   (on 2 cores no run ends before {total / 2:.3f} s)")


if __name__ == "__main__":
    main()
