#!/usr/bin/env python3
"""How many corpus charts get a proven idiomatic rewrite (the default `--chart-style idiomatic`), per run.

    python benchmarks/bench_chart_idiomatic.py [--corpus DIR] [--only TEXT]

Runs `fix` (idiomatic, nothing written: on a copy) on every chart run of tests/test_chart_corpus.py (the corpus
charts that render offline, each with its GPU values), and prints per run: proven (with how: a pattern-A
switch, a B/C pass-through with DRA values files, or the chart's own DRA switch), nothing to fix, or manual
with the reason, and the time; then the totals (runs and charts). Issue 7's target: most real charts whose
device requests come from values get an idiomatic rewrite. Exits 0; says why and exits 0 when the corpus is
missing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--only", default="", help="only runs whose chart:label contains this text")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"skipped: no corpus at {args.corpus} (it exists only in the dramigrate workspace and CI)")
        return 0
    sys.path.insert(0, str(REPO / "tests"))
    import test_chart_corpus as corpus_runs

    from dramigrate.config import Settings
    from dramigrate.helm.passthrough import TEMPLATE_FILE
    from dramigrate.helm.run import ChartOptions, run_chart
    from dramigrate.versions import Target

    corpus_runs.CORPUS = args.corpus
    proven: dict[str, list[str]] = {}
    charts: set[str] = set()
    gpu_runs = 0
    for run in corpus_runs.RUNS:
        name = f"{Path(run.chart).name}:{run.label}"
        if args.only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="bench-idiomatic-") as tmp:
            root = corpus_runs._copy(run.chart, Path(tmp))
            options = ChartOptions(
                values_files=corpus_runs._values(run, Path(tmp)), set_values=run.sets, kube_version=run.kube
            )
            settings = Settings(kube_version=run.kube or "1.36")
            start = time.perf_counter()
            outcome = run_chart(root, options, corpus_runs.RULES, settings, Target.parse(settings.kube_version), "fix")
            took = time.perf_counter() - start
        charts.add(run.chart)
        rels = {Path(c.rel).name for c in outcome.changes}
        if outcome.proven:
            how = (
                "own DRA switch"
                if any(f.rule == "chart-dra-switch" for f in outcome.findings)
                else "B/C pass-through + DRA values"
                if Path(TEMPLATE_FILE).name in rels
                else "A: dra.enabled switch"
            )
            proven.setdefault(run.chart, []).append(run.label)
            state = f"proven ({how})"
        elif outcome.manual:
            state = f"manual: {outcome.manual[:160]}"
        elif outcome.error is not None:
            state = f"error: {outcome.error}"
        else:
            state = "nothing to fix"
        if outcome.proven or outcome.manual:
            gpu_runs += 1
        print(f"{name:45} {took:5.1f}s  {state}")
    runs = sum(len(v) for v in proven.values())
    print(
        f"\nproven idiomatic: {runs} of {gpu_runs} runs with device requests to fix; "
        f"{len(proven)} of {len(charts)} charts ({', '.join(sorted(Path(c).name for c in proven))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
