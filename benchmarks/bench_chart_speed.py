#!/usr/bin/env python3
"""How long `dramigrate fix` takes on a chart, proof included (issue 7: "fix of a chart with its proof under 5 s").

    python benchmarks/bench_chart_speed.py [--charts DIR] [--corpus DIR] [--only TEXT] [--repeat N]
                                           [--other PYTHONPATH] [--out FILE] [--command fix|lint|diff]

Runs are those of `bench_chart_idiomatic.py` (--charts DIR with its runs.yaml, else the corpus runs). Each run copies
the chart (and its values files) into a temp folder and times `python -m dramigrate fix` on the copy as a user runs
it: wall time and CPU time (user + system of dramigrate and its Helm worker, from wait4). With --other DIR, the
dramigrate found in DIR (e.g. an exported older commit) is timed too, alternating with this one round by round, so
both see the same load on a shared machine; the table shows medians and whether the written chart (every file's
bytes) and the report are the same. --out FILE writes the written trees' digests as JSON. Exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_chart_idiomatic import Run, chosen_runs, copy_chart  # noqa: E402


def tree_digest(*tops: Path, base: Path | None = None) -> dict[str, str]:
    """Each file's digest by its path from base (the run's temp folder, whose name differs run by run), else from
    its top's parent."""
    out = {}
    for top in tops:
        for path in sorted(top.rglob("*")):
            if path.is_file():
                name = path.relative_to(base if base is not None and path.is_relative_to(base) else top.parent)
                out[str(name)] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return out


def one(
    run: Run, corpus_module: object, pythonpath: str | None, command_name: str = "fix"
) -> tuple[float, float, int, dict[str, str], str]:
    """wall, cpu, exit code, digest of the written files, the report."""
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp:
        root, values = copy_chart(run, Path(tmp), corpus_module)
        command = [sys.executable, "-m", "dramigrate", command_name, str(root), "--exit-zero"]
        command += [f"--values={v}" for v in values] + [f"--set={s}" for s in run.sets]
        if run.kube:
            command.append(f"--kube-version={run.kube}")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        process = subprocess.run(command, cwd=tmp, env=env, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # dramigrate and the workers it waited for
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out, err = process.stdout, process.stderr
        report = (out + err).decode("utf-8", "replace").replace(tmp, "<tmp>")
        digest = tree_digest(root, *{v.parent for v in values if not v.is_relative_to(root)}, base=Path(tmp))
    return wall, cpu, process.returncode, digest, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "corpus")
    parser.add_argument("--charts", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--other", help="PYTHONPATH of another dramigrate to time alternately")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--command", choices=("fix", "lint", "diff"), default="fix", help="what to time (fix)")
    args = parser.parse_args()
    chosen = chosen_runs(args.charts, args.corpus, args.only)
    if chosen is None:
        return 0
    runs, corpus_module = chosen
    sides = [("this", None)] + ([("other", args.other)] if args.other else [])
    digests: dict[str, dict[str, object]] = {}
    for run in runs:
        name = f"{run.chart.name}:{run.label}"
        times: dict[str, list[tuple[float, float]]] = {side: [] for side, _ in sides}
        seen: dict[str, tuple[int, dict[str, str], str]] = {}
        for i in range(args.repeat):
            for side, path in sides if i % 2 == 0 else sides[::-1]:
                wall, cpu, code, digest, report = one(run, corpus_module, path, args.command)
                times[side].append((wall, cpu))
                seen[side] = (code, digest, report)
        cells = []
        for side, _ in sides:
            walls = [w for w, _ in times[side]]
            cpus = [c for _, c in times[side]]
            cells.append(f"{side} {statistics.median(walls):5.2f}s wall {statistics.median(cpus):5.2f}s cpu")
        same = ""
        if args.other:
            a, b = seen["this"], seen["other"]
            same = "  same output" if a == b else f"  DIFFERENT OUTPUT (exit {a[0]}/{b[0]}, files {a[1] == b[1]})"
        print(f"{name:38} " + " | ".join(cells) + same, flush=True)
        digests[name] = {"exit": seen["this"][0], "files": seen["this"][1], "report": seen["this"][2]}
    if args.out:
        args.out.write_text(json.dumps(digests, indent=1, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
