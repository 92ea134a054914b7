#!/usr/bin/env python3
"""Benchmark dramigrate lint and fix against grep and a plain YAML parse of the same trees.

    python benchmarks/bench.py [--files 2000] [--seed 1] [--corpus ../shared/corpus] [--repeat 3]

Generates a repo with benchmarks/generate.py into a temp dir, copies the corpus (if it exists) into
another one, and measures wall time (best of --repeat runs) and peak RSS of each child process:

  lint      dramigrate lint DIR --format json   (report written to a temp file)
  fix       dramigrate fix DIR                  (on a fresh copy of the tree for every run)
  grep      grep -rlE 'nvidia.com/gpu|amd.com/gpu' DIR
  parse     one Python process that loads every *.yaml/*.yml dramigrate would read with
            yaml.CSafeLoader (load_all), skipping files that fail
  start-up  dramigrate lint on a single clean file, next to `python -c "import yaml"`

Prints a table and the ratios lint/grep, lint/parse and fix/parse. Always exits 0 (a failed child is
shown in the table, not raised), so it can run in CI without gating.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
GREP_PATTERN = "nvidia.com/gpu|amd.com/gpu"

# The parse baseline reads the same files dramigrate's folder walk reads: *.yaml/*.yml, skipping VCS and
# vendor folders and Helm chart folders (dramigrate says it skips those; grep cannot and does not).
PARSE_SCRIPT = r"""
import os, sys, yaml
SKIP = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".terraform"}
ok = bad = docs = 0
for top in sys.argv[1:]:
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP)
        if "Chart.yaml" in names:
            dirs[:] = []
            continue
        for name in sorted(names):
            if not name.endswith((".yaml", ".yml")):
                continue
            try:
                with open(os.path.join(folder, name), "rb") as fh:
                    docs += sum(1 for _ in yaml.load_all(fh, Loader=yaml.CSafeLoader))
                ok += 1
            except Exception:
                bad += 1
print(ok, bad, docs)
"""


@dataclass
class Run:
    seconds: float
    rss_kib: int
    rc: int
    cpu: float = 0.0  # user + system seconds of the child and the processes it waited for
    crash: str = ""  # the exception line, if the child died with a Python traceback


@dataclass
class Figure:
    name: str
    tree: str
    files: int
    runs: list[Run] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> float:
        return min(r.seconds for r in self.runs)

    @property
    def cpu(self) -> float:
        return min(self.runs, key=lambda r: r.seconds).cpu

    @property
    def rss_mib(self) -> float:
        return max(r.rss_kib for r in self.runs) / 1024

    @property
    def rcs(self) -> str:
        return ",".join(sorted({str(r.rc) for r in self.runs}))


def maxrss_kib(ru_maxrss: int) -> int:
    return ru_maxrss // 1024 if sys.platform == "darwin" else ru_maxrss  # bytes on macOS, KiB elsewhere


TIME_V = shutil.which("time", path="/usr/bin:/bin")  # GNU time, for -v -o


def time_v_works() -> bool:
    if not TIME_V:
        return False
    with tempfile.NamedTemporaryFile("r") as tf:
        r = subprocess.run([TIME_V, "-v", "-o", tf.name, "true"], capture_output=True)
        return r.returncode == 0 and "Maximum resident set size" in tf.read()


USE_TIME_V = time_v_works()


def run_once(cmd: list[str], stdout_path: Path | None = None) -> Run:
    """Run cmd once: wall time, exit code and the child's peak RSS.

    Peak RSS comes from GNU `/usr/bin/time -v` when it is there. Without it, os.wait4's ru_maxrss is used, but on
    Linux a child forked from this Python process starts with this process's high-water mark (it survives exec),
    so every figure is at least the benchmark's own RSS (the "rss floor" printed at the top).
    """
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(stdout_path, "wb")) if stdout_path else subprocess.DEVNULL
        rss_file = stack.enter_context(tempfile.NamedTemporaryFile("r", suffix=".time")) if USE_TIME_V else None
        full = [TIME_V, "-v", "-o", rss_file.name, *cmd] if rss_file else cmd
        t0 = time.perf_counter()
        err = stack.enter_context(tempfile.TemporaryFile())
        proc = subprocess.Popen(full, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        rc = proc.returncode = os.waitstatus_to_exitcode(status)
        rss = maxrss_kib(usage.ru_maxrss)
        if rss_file:
            for line in rss_file.read().splitlines():
                if "Maximum resident set size" in line:
                    rss = int(line.rsplit(":", 1)[1])
                elif "Exit status:" in line:
                    rc = int(line.rsplit(":", 1)[1])
        err.seek(0)
        crash = next((m.group(0) for m in CRASH.finditer(err.read().decode("utf-8", "replace"))), "")
    return Run(seconds, rss, rc, usage.ru_utime + usage.ru_stime, crash[:100])


# The last line of a Python traceback (plain or rich-formatted), e.g. "AttributeError: 'X' object has no ...".
CRASH = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception|Interrupt|Exit)\b:? .*$", re.M)


def measure(
    fig: Figure, cmd: list[str], repeat: int, budget: float, prepare=None, stdout_path: Path | None = None
) -> Figure:
    """Best of `repeat` runs, but start no further run that would push this figure past `budget` seconds."""
    spent = 0.0
    for i in range(repeat):
        if prepare:
            prepare()
        r = run_once(cmd, stdout_path)
        fig.runs.append(r)
        spent += r.seconds
        if i + 1 < repeat and spent + r.seconds > budget:
            fig.note = f"{len(fig.runs)} of {repeat} runs (time budget)"
            break
    crashes = [r.crash for r in fig.runs if r.crash]
    if crashes:
        fig.note = (fig.note + "; " if fig.note else "") + f"CRASHED {len(crashes)}x: {crashes[-1]}"
    return fig


SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".terraform"}


def yaml_files(top: Path) -> int:
    """*.yaml/*.yml files dramigrate (and the parse baseline) reads under top: the walk in PARSE_SCRIPT."""
    n = 0
    for _folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        if "Chart.yaml" in names:
            dirs[:] = []
            continue
        n += sum(1 for name in names if name.endswith((".yaml", ".yml")))
    return n


def copy_tree(src: Path, dst: Path) -> None:
    """Copy src to dst and make the copy writable (the corpus is read-only and fix writes in place)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    for folder, dirs, names in os.walk(dst):
        for n in dirs + names:
            p = os.path.join(folder, n)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)


def load_generator():
    spec = importlib.util.spec_from_file_location("dramigrate_bench_generate", HERE / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lint_summary(report: Path) -> str:
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as e:
        return f"unreadable JSON report ({e})"
    s = data.get("summary", {})
    return (
        f"{s.get('files', '?')} files scanned, {len({f['file'] for f in data.get('findings', [])})} with findings, "
        f"{len(data.get('findings', []))} findings ({s.get('errors', '?')} errors, {s.get('warnings', '?')} warnings), "
        f"{len(data.get('errors', []))} bad input"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=2000, help="files in the generated repo (default 2000)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument(
        "--corpus",
        type=Path,
        default=HERE.parent.parent / "shared" / "corpus",
        help="real-world tree to measure too (skipped if missing)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is reported (default 3)")
    ap.add_argument(
        "--budget", type=float, default=40.0, help="seconds per figure before repeats are cut short (default 40)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs and print where they are")
    args = ap.parse_args(argv)

    exe = Path(sys.executable).parent / "dramigrate"
    if not exe.exists():
        found = shutil.which("dramigrate")
        if not found:
            print(f"dramigrate not found next to {sys.executable} or on PATH; install it first", file=sys.stderr)
            return 0
        exe = Path(found)
    grep = shutil.which("grep")

    work = Path(tempfile.mkdtemp(prefix="dramigrate-bench-"))
    try:
        t0 = time.perf_counter()
        gen_dir = work / "generated"
        stats = load_generator().generate(gen_dir, args.files, args.seed)
        print(
            f"generated {stats['files']} files ({stats['device_files']} with device requests, "
            f"{stats['bytes'] / 2**20:.1f} MiB, seed {args.seed}) in {time.perf_counter() - t0:.1f} s"
        )
        trees: list[tuple[str, Path]] = [("generated", gen_dir)]
        if args.corpus.is_dir():
            corpus_dir = work / "corpus"
            copy_tree(args.corpus, corpus_dir)
            trees.append(("corpus", corpus_dir))
            n_all = sum(1 for p in corpus_dir.rglob("*") if p.suffix in (".yaml", ".yml"))
            size = sum(p.stat().st_size for p in corpus_dir.rglob("*") if p.is_file()) / 2**20
            print(
                f"copied corpus {args.corpus} ({n_all} YAML files, {yaml_files(corpus_dir)} outside Helm charts; "
                f"{size:.1f} MiB)"
            )
        else:
            print(f"no corpus at {args.corpus}; measuring the generated repo only")
        version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.strip()
        print(f"dramigrate: {exe}  ({version})")

        floor = maxrss_kib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
        rss_how = (
            f"peak RSS via {TIME_V} -v"
            if USE_TIME_V
            else f"peak RSS via wait4 (rss floor {floor:.0f} MiB: this process)"
        )
        print(f"cpus: {os.cpu_count()}  python: {sys.version.split()[0]}  runs: best of {args.repeat}  {rss_how}\n")

        figures: list[Figure] = []
        notes: list[str] = []
        for label, tree in trees:
            n = yaml_files(tree)
            report = work / f"lint-{label}.json"
            fig = measure(
                Figure("lint --format json", label, n),
                [str(exe), "lint", str(tree), "--format", "json"],
                args.repeat,
                args.budget,
                stdout_path=report,
            )
            figures.append(fig)
            notes.append(f"lint {label}: {lint_summary(report)}")

            fix_dir = work / f"fix-{label}"
            fig = measure(
                Figure("fix", label, n),
                [str(exe), "fix", str(fix_dir)],
                args.repeat,
                args.budget,
                prepare=lambda src=tree, dst=fix_dir: copy_tree(src, dst),
                stdout_path=work / f"fix-{label}.txt",
            )
            figures.append(fig)

            if grep:
                figures.append(
                    measure(
                        Figure("grep -rlE", label, n), [grep, "-rlE", GREP_PATTERN, str(tree)], args.repeat, args.budget
                    )
                )
            parse_out = work / f"parse-{label}.txt"
            fig = measure(
                Figure("yaml parse (CSafeLoader)", label, n),
                [sys.executable, "-c", PARSE_SCRIPT, str(tree)],
                args.repeat,
                args.budget,
                stdout_path=parse_out,
            )
            ok, bad, docs = (parse_out.read_text().split() + ["?"] * 3)[:3]
            fig.note = (fig.note + "; " if fig.note else "") + f"{ok} parsed, {bad} failed, {docs} docs"
            figures.append(fig)

        # Start-up: one small clean file (a Service) from the generated repo.
        single = next((p for p in sorted(gen_dir.rglob("service.yaml"))), None) or next(
            iter(sorted(gen_dir.rglob("*.yaml")))
        )
        figures.append(
            measure(
                Figure("lint, one clean file", "start-up", 1),
                [str(exe), "lint", str(single), "--format", "json"],
                max(args.repeat, 5),
                args.budget,
            )
        )
        figures.append(
            measure(
                Figure("python -c 'import yaml'", "start-up", 1),
                [sys.executable, "-c", "import yaml"],
                max(args.repeat, 5),
                args.budget,
            )
        )

        print_table(figures)
        print()
        print_ratios(figures, [t for t, _ in trees])
        print()
        for n in notes:
            print(n)
        if args.keep:
            print(f"\nkept {work}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def print_table(figures: list[Figure]) -> None:
    head = (
        f"{'tree':<10} {'command':<26} {'files':>6} {'best s':>8} {'cpu s':>7} {'files/s':>9} "
        f"{'peak MiB':>9} {'exit':>5}  note"
    )
    print(head)
    print("-" * len(head))
    for f in figures:
        rate = f.files / f.best if f.best > 0 else float("inf")
        print(
            f"{f.tree:<10} {f.name:<26} {f.files:>6} {f.best:>8.3f} {f.cpu:>7.2f} {rate:>9.0f} "
            f"{f.rss_mib:>9.1f} {f.rcs:>5}  {f.note}"
        )


def print_ratios(figures: list[Figure], trees: list[str]) -> None:
    by = {(f.tree, f.name): f for f in figures}
    print(f"{'ratios (time)':<14} {'lint/grep':>10} {'lint/parse':>11} {'fix/parse':>10}   {'lint MiB/parse MiB':>18}")
    for t in trees:
        lint, fix = by.get((t, "lint --format json")), by.get((t, "fix"))
        grep, parse = by.get((t, "grep -rlE")), by.get((t, "yaml parse (CSafeLoader)"))

        def ratio(a, b):
            return f"{a.best / b.best:.1f}x" if a and b and b.best > 0 else "n/a"

        mem = f"{lint.rss_mib / parse.rss_mib:.1f}x" if lint and parse else "n/a"
        print(f"{t:<14} {ratio(lint, grep):>10} {ratio(lint, parse):>11} {ratio(fix, parse):>10}   {mem:>18}")
    start, py = by.get(("start-up", "lint, one clean file")), by.get(("start-up", "python -c 'import yaml'"))
    if start and py:
        ms, py_ms = start.best * 1000, py.best * 1000
        print(f"start-up: lint on one file {ms:.0f} ms, of which python + import yaml {py_ms:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
