#!/usr/bin/env python3
"""Wall time of `dramigrate fix CHART [-f values] [--set k=v]` alone, as a user runs it, over a chart set's runs.

    python benchmarks/bench_fix_time.py --charts /tmp/chartsN [--only TEXT] [--repeat 3] [--lint] [--python PY]
    python benchmarks/bench_fix_time.py --corpus ../shared/corpus     # the corpus runs of tests/test_chart_corpus.py

Each run of DIR/runs.yaml (the format bench_chart_idiomatic.py reads) is fixed on a fresh copy of its chart (and of
its values files) by a child `python -m dramigrate fix`: the time is the child's wall time, proof included, without
the independent checks bench_chart_idiomatic.py adds. With --repeat N every run is timed N times, the runs
alternating (round 1 of every run, then round 2...), and the median is kept. --lint times `dramigrate lint` instead
(no copy needed: lint writes nothing). --python runs another interpreter (venv) and --source another checkout's
dramigrate (first on the child's PYTHONPATH: a venv's editable install may point elsewhere), to compare
(`--python /tmp/snap23/.venv/bin/python --source /tmp/snap23`). The child runs with compiled bytecode, as an
installed tool does (child_env), after one unmeasured run that writes it when its cache folder is new. Prints each
run's median wall time and CPU time (dramigrate's and its Helm workers': steadier than wall time on a loaded
machine), then the distribution of wall time: median, p90, max and the count of runs above 5 s. Exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_chart_idiomatic import Run, copy_chart, corpus_runs, folder_runs  # noqa: E402

LIMIT = 5.0  # seconds: issue 7, "fix of a chart with its proof under 5 s"


def command(python: str, verb: str, root: Path, values: tuple[Path, ...], run: Run) -> list[str]:
    cmd = [python, "-m", "dramigrate", verb, str(root), "--exit-zero"]
    for v in values:
        cmd += ["-f", str(v)]
    for s in run.sets:
        cmd += ["--set", s]
    if run.kube:
        cmd += ["--kube-version", run.kube]
    return cmd


def child_env(python: str, source: str) -> dict[str, str]:
    """The child's environment: it runs with compiled bytecode, as an installed tool does (pip writes the .pyc
    files). PYTHONDONTWRITEBYTECODE=1 in this shell had every child compile every dramigrate module it imports from
    source (about 1 s of CPU a fix); the bytecode goes to a cache folder of its own (PYTHONPYCACHEPREFIX, one per
    interpreter and checkout, kept between runs), so a read-only checkout such as a snapshot is not written into."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tag = hashlib.sha256(f"{python}\0{source}".encode()).hexdigest()[:12]
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"bench-fix-time-pyc-{tag}")
    return env


def timed(cmd: list[str], source: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (the child's and its Helm workers', which it waits for) and exit code."""
    env = child_env(cmd[0], source)
    if source:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH", "")) if p)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, code


def time_once(python: str, source: str, run: Run, lint: bool, corpus: Any) -> tuple[float, float, int]:
    """Seconds and exit code of one fix (on a fresh copy) or lint (of the chart itself) of the run."""
    if lint:
        return timed(command(python, "lint", run.chart, run.values, run), source)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fix-time-"))
    try:
        root, values = copy_chart(run, tmp, corpus)
        return timed(command(python, "fix", root, values, run), source)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--charts", type=Path, help="a folder of charts with a runs.yaml")
    where.add_argument("--corpus", type=Path, help="the shared corpus: the runs of tests/test_chart_corpus.py")
    parser.add_argument("--only", default="", help="only runs whose chart:label contains this text")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (alternating); the median is kept")
    parser.add_argument("--lint", action="store_true", help="time lint instead of fix")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (venv) whose dramigrate runs")
    parser.add_argument("--source", default="", help="a checkout whose dramigrate the child imports first")
    args = parser.parse_args()
    corpus = None
    if args.corpus is not None:
        if not args.corpus.is_dir():
            print(f"nothing to measure: no corpus at {args.corpus}")
            return 0
        every, corpus = corpus_runs(args.corpus.resolve())
    else:
        every = folder_runs(args.charts)
    runs = [r for r in every if args.only in f"{r.chart.name}:{r.label}"]
    if not runs:
        print(f"nothing to measure: no run of {args.charts or args.corpus} matches {args.only!r}")
        return 0
    times: dict[int, list[float]] = {i: [] for i in range(len(runs))}
    cpus: dict[int, list[float]] = {i: [] for i in range(len(runs))}
    codes: dict[int, int] = {}
    if not Path(child_env(args.python, args.source)["PYTHONPYCACHEPREFIX"]).is_dir():
        time_once(args.python, args.source, runs[0], args.lint, corpus)  # unmeasured: writes the bytecode cache
    for _ in range(max(1, args.repeat)):
        for i, run in enumerate(runs):
            took, cpu, codes[i] = time_once(args.python, args.source, run, args.lint, corpus)
            times[i].append(took)
            cpus[i].append(cpu)
    medians = []
    for i, run in enumerate(runs):
        median = statistics.median(times[i])
        medians.append(median)
        spread = " ".join(f"{t:.1f}" for t in times[i])
        cpu = statistics.median(cpus[i])
        name = f"{run.chart.name}:{run.label}"
        print(f"{name:80} {median:6.1f}s  cpu {cpu:6.1f}s  ({spread}) exit {codes[i]}", flush=True)
    verb = "lint" if args.lint else "fix"
    median, p90, above = statistics.median(medians), percentile(medians, 0.9), sum(m > LIMIT for m in medians)
    print(f"{verb} over {len(medians)} runs: median {median:.1f}s, p90 {p90:.1f}s, max {max(medians):.1f}s,", end=" ")
    print(f"above {LIMIT:.0f}s: {above}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
