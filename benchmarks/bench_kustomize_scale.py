#!/usr/bin/env python3
"""Time lint, diff and fix of kustomize repositories with thousands of device files (generate_kustomize.py).

    python benchmarks/bench_kustomize_scale.py [--sizes 1000,3000,6000] [--baseline /tmp/old] [--timeout 300]

For each size (device files), generates one repository (teams of apps: bases of device workloads, four overlays
each with count, JSON6902 and node-label patches, a Component, a cluster overlay sharing the bases) and runs each
command as a child process, from the repository's folder:

  lint   dramigrate lint . --format json     (no builds)
  diff   dramigrate diff .                   (builds, migrates and proves every graph; writes nothing)
  fix    dramigrate fix .                    (the same, then writes; on a fresh copy, made before the clock starts)

and prints wall time, CPU time (the process and its children: dramigrate, its workers and the kustomize builds)
and whether any graph was left unproven. --baseline SRC runs the same commands with another checkout of
dramigrate (`git worktree add --detach /tmp/old <commit>`) alternated with this one, prints new/baseline, and
whether lint's report, diff's output and fix's written tree (and its report) are byte-identical. A command past
--timeout is stopped and shown as such. Always exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate_kustomize import generate  # noqa: E402

COMMANDS = ("lint", "diff", "fix")


@dataclass
class Ran:
    wall: float
    cpu: float
    code: int | None  # None: stopped at the timeout
    out: bytes  # lint's JSON report, diff's standard output, fix's written tree (a digest of every file)
    err: bytes  # the report on standard error
    unproven: int  # kustomize-unproven findings


def tree_digest(root: Path) -> bytes:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".git" not in p.relative_to(root).parts:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest().encode()


def run(command: str, tree: Path, work: Path, env: dict[str, str], timeout: float) -> Ran:
    cwd = tree
    if command == "fix":
        cwd = work / "fix-copy"
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.copytree(tree, cwd, symlinks=True)
    args = {"lint": ["lint", ".", "--format", "json"], "diff": ["diff", "."], "fix": ["fix", "."]}[command]
    cmd = [sys.executable, "-m", "dramigrate", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        code = None
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if command == "fix":
        out = tree_digest(cwd)
    return Ran(wall, cpu, code, out, err, (out + err).count(b"kustomize-unproven]"))


def environment(source: Path) -> dict[str, str]:
    """Runs `python -m dramigrate` from this checkout (PYTHONSAFEPATH: the child's cwd is not on its path)."""
    return {**os.environ, "PYTHONPATH": str(source.resolve()), "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,3000,6000", help="device files per repository, comma-separated")
    parser.add_argument("--per-base", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout of dramigrate to compare")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a command is stopped")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--keep", action="store_true", help="keep the generated repositories and print where")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    checkouts = {"new": environment(here)}
    if args.baseline is not None:
        if not (args.baseline / "dramigrate" / "__init__.py").is_file():
            print(f"--baseline {args.baseline}: no dramigrate package in it", file=sys.stderr)
            return 0
        checkouts["baseline"] = environment(args.baseline)
    commands = [c for c in args.commands.split(",") if c in COMMANDS]
    work = Path(tempfile.mkdtemp(prefix="dramigrate-bench-kustomize-scale-"))
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}; timeout {args.timeout:.0f} s")
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            tree = work / f"repo-{size}"
            counts = generate(tree, size, args.seed, args.per_base)
            print(f"\n{', '.join(f'{v} {k}' for k, v in counts.items())}")
            for command in commands:
                ran = {name: run(command, tree, work, env, args.timeout) for name, env in checkouts.items()}
                for name, r in ran.items():
                    code = "stopped at the timeout" if r.code is None else f"exit {r.code}"
                    line = f"  {command:5} {name:9} {r.wall:8.2f} s wall {r.cpu:8.2f} s cpu  {code}"
                    print(line + (f", {r.unproven} unproven" if command != "lint" else ""), flush=True)
                if "baseline" in ran:
                    new, old = ran["new"], ran["baseline"]
                    same = "byte-identical" if (new.out, new.err) == (old.out, old.err) else "DIFFERENT"
                    if new.code is None or old.code is None:
                        same = "not compared (stopped at the timeout)"
                    print(f"  {command:5} new/baseline {new.wall / old.wall:5.2f} wall; output {same}", flush=True)
    finally:
        if args.keep:
            print(f"\nkept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
