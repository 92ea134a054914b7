#!/usr/bin/env python3
"""Benchmark kustomize migration: a repository of bases, each with overlays that patch devices, fixed and proven.

    python benchmarks/bench_kustomize.py [--bases 10] [--overlays 10] [--kustomize-binary PATH]

Generates --bases bases (a Deployment asking for one GPU) with --overlays overlays each: one in four sets a
namePrefix and the count with a strategic-merge patch file, one in four a nameSuffix and the count with an
inline JSON6902 patch, one in four pins the GPU model with a node label, the rest only rename. Then times, each
as a child process on the same tree:

  lint      dramigrate lint DIR          (no builds)
  diff      dramigrate diff DIR          (builds, migrates and proves every overlay; writes nothing)
  build     one `kubectl kustomize` of one overlay (the unit cost the proof pays twice per kustomization)

and prints wall times, the number of kustomizations and the time per kustomization. The issue's target: 100
overlays over 10 bases migrate and prove in under 60 s on 2 cores. Always exits 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app{b}
spec:
  selector: {{matchLabels: {{app: app{b}}}}}
  template:
    metadata: {{labels: {{app: app{b}}}}}
    spec:
      containers:
      - name: main
        image: registry.example/app{b}:1
        resources:
          limits:
            nvidia.com/gpu: 1
            memory: 8Gi
"""
SMP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app{b}
spec:
  template:
    spec:
      containers:
      - name: main
        resources:
          limits:
            nvidia.com/gpu: {n}
"""
LABEL = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app{b}
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
"""
JSON6902 = """\
resources:
- ../../base
nameSuffix: -o{o}
patches:
- target: {{kind: Deployment, name: app{b}}}
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu
      value: {n}
"""


def generate(root: Path, bases: int, overlays: int) -> int:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    count = 0
    for b in range(bases):
        top = root / f"app{b}"
        (top / "base").mkdir(parents=True)
        (top / "base" / "deploy.yaml").write_text(BASE.format(b=b))
        (top / "base" / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
        count += 1
        for o in range(overlays):
            d = top / "overlays" / f"o{o}"
            d.mkdir(parents=True)
            n = 2 + o % 7
            if o % 4 == 0:
                (d / "gpus.yaml").write_text(SMP.format(b=b, n=n))
                text = f"resources:\n- ../../base\nnamePrefix: o{o}-\npatches:\n- path: gpus.yaml\n"
            elif o % 4 == 1:
                text = JSON6902.format(b=b, o=o, n=n)
            elif o % 4 == 2:
                (d / "model.yaml").write_text(LABEL.format(b=b))
                text = f"resources:\n- ../../base\nnamespace: team{o}\npatches:\n- path: model.yaml\n"
            else:
                text = f"resources:\n- ../../base\nnamePrefix: plain{o}-\n"
            (d / "kustomization.yaml").write_text(text)
            count += 1
    return count


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall time, CPU time of the process and its children (user + system), exit code, last line of stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return wall, cpu, proc.returncode, lines[-1] if lines else ""
    return (
        time.perf_counter() - start,
        proc.returncode,
        proc.stderr.strip().splitlines()[-1:] and proc.stderr.strip().splitlines()[-1] or "",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bases", type=int, default=10)
    parser.add_argument("--overlays", type=int, default=10)
    parser.add_argument("--kustomize-binary", default=None)
    args = parser.parse_args()
    exe = shutil.which("dramigrate") or str(Path(sys.executable).parent / "dramigrate")
    extra = ["--kustomize-binary", args.kustomize_binary] if args.kustomize_binary else []
    with tempfile.TemporaryDirectory(prefix="dramigrate-bench-kustomize-") as tmp:
        root = Path(tmp) / "repo"
        kustomizations = generate(root, args.bases, args.overlays)
        from dramigrate.kustomize.build import find_binary

        binary = find_binary(Path(args.kustomize_binary) if args.kustomize_binary else None)
        print(
            f"{args.bases} bases x {args.overlays} overlays = {kustomizations} kustomizations; cores: {os.cpu_count()}"
        )
        print(f"kustomize: {' '.join(binary)}")
        load = os.getloadavg()[0]
        one, one_cpu, code, _ = timed([*binary, str(root / "app0" / "overlays" / "o0")], root)
        print(f"build     {one:7.2f} s wall {one_cpu:7.2f} s cpu  one overlay (exit {code})")
        lint, lint_cpu, code, last = timed([exe, "lint", ".", *extra], root)
        print(f"lint      {lint:7.2f} s wall {lint_cpu:7.2f} s cpu  exit {code}: {last}")
        diff, diff_cpu, code, last = timed([exe, "diff", ".", *extra], root)
        print(f"diff      {diff:7.2f} s wall {diff_cpu:7.2f} s cpu  exit {code}: {last}")
        print(f"per kustomization: {diff / kustomizations * 1000:.0f} ms wall (two builds each: original, rewritten)")
        print(f"load average at start: {load:.1f} (wall times stretch on a busy machine; cpu / cores is the floor)")
        print(f"target: under 60 s for 100 overlays over 10 bases: {'met' if diff < 60 else 'NOT met'} (wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
