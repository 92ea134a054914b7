#!/usr/bin/env python3
"""Benchmark one large input of each kind a run reads whole: a manifest that is one big document, and a --crds file.

    python benchmarks/bench_big_inputs.py [--mib 15] [--crd-mib 4] [--fix-pods 500] [--repeat 3] [--timeout 300]

Writes (1) one `kind: List` document of about --mib MiB holding GPU pods, each with a long annotation, and (2) a
`kubectl get crd -o yaml`-shaped List of about --crd-mib MiB of CRDs with deep schemas, then times, as child
processes alternated --repeat times: `dramigrate lint list.yaml`, `dramigrate lint pod.yaml --crds crds.yaml`,
`dramigrate lint pod.yaml` (the start-up and the one pod without the CRD file), `dramigrate fix` of a copy of a
List of --fix-pods small GPU pods (one document), and a plain C-loader parse of each file (yaml.load_all with
CSafeLoader). Prints the median wall time, the CPU time (this machine is shared: CPU time is the steadier figure)
and the peak memory of each, and the ratios to the parse. A command past
--timeout is stopped and shown as such. Until 2026-12 a 15 MiB List of 10,000 pods ran for over 10 minutes
(each finding split the whole document into lines again, and each pod looked for its object among all pods),
a 5 MiB CRD file took 2 s of CPU to load (PyYAML building every node of its schemas), and the fix of a List of 500
pods 28 s (the minimal-edit merge compared every pair of its thousands of equal lines). Always exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

POD = """\
  - apiVersion: v1
    kind: Pod
    metadata:
      name: pod-{i}
      annotations: {{note: "{pad}"}}
    spec:
      containers:
      - name: app
        image: app:1
        resources:
          limits:
            nvidia.com/gpu: 1
"""
ONE_POD = "".join(line[4:] + "\n" for line in POD.format(i=0, pad="x").splitlines())
PARSE = "import sys, yaml\nfor _ in yaml.load_all(open(sys.argv[1]), Loader=yaml.CSafeLoader): pass\n"


def big_list(mib: float) -> str:
    pad = "p" * 1300
    one = len(POD.format(i=0, pad=pad))
    count = max(1, int(mib * 2**20 / one))
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(POD.format(i=i, pad=pad) for i in range(count))


def _schema(depth: int) -> str:
    """A schema `depth` levels of 5 properties deep, as flow YAML."""
    if depth == 0:
        return '{type: string, description: "' + "d" * 60 + '"}'
    inner = ", ".join(f"f{i}: {_schema(depth - 1)}" for i in range(5))
    return '{type: object, description: "' + "d" * 80 + '", properties: {' + inner + "}}"


def crd_file(mib: float) -> str:
    schema = _schema(4)
    crds = []
    n = 0
    size = 0
    while size < mib * 2**20:
        crd = (
            f"- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n"
            f"  metadata: {{name: things{n}.example{n}.io}}\n"
            f"  spec:\n    group: example{n}.io\n    names: {{kind: Thing{n}, plural: things{n}}}\n"
            f"    scope: Namespaced\n    versions:\n    - name: v1\n      served: true\n      storage: true\n"
            f"      schema:\n        openAPIV3Schema: {schema}\n"
        )
        crds.append(crd)
        size += len(crd)
        n += 1
    return "apiVersion: v1\nkind: List\nitems:\n" + "".join(crds)


def run(command: list[str], cwd: Path, timeout: float) -> tuple[float, float, float, str]:
    """(wall s, CPU s of the child and its children, peak MiB, outcome) of one run, measured in a fresh process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        f"try:\n    p = subprocess.run(sys.argv[1:], capture_output=True, timeout={timeout})\n"
        "    rc = str(p.returncode)\n"
        "except subprocess.TimeoutExpired:\n    rc = 'timeout'\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024, rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *command], cwd=cwd, capture_output=True, text=True).stdout
    wall, cpu, peak, rc = out.split()
    return float(wall), float(cpu), float(peak), rc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=15.0, help="size of the one-document List (default 15 MiB)")
    parser.add_argument("--crd-mib", type=float, default=4.0, help="size of the CRD file (default 4 MiB)")
    parser.add_argument("--fix-pods", type=int, default=500, help="pods of the List fix rewrites (default 500)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a command is stopped")
    args = parser.parse_args()
    exe = shutil.which("dramigrate") or "dramigrate"
    with tempfile.TemporaryDirectory(prefix="bench-big-") as tmp:
        root = Path(tmp)
        (root / "list.yaml").write_text(big_list(args.mib))
        (root / "crds.yaml").write_text(crd_file(args.crd_mib))
        (root / "pod.yaml").write_text(ONE_POD)
        small = POD.replace('      annotations: {{note: "{pad}"}}\n', "")
        (root / "pods.yaml").write_text(
            "apiVersion: v1\nkind: List\nitems:\n" + "".join(small.format(i=i) for i in range(args.fix_pods))
        )
        sizes = {name: os.path.getsize(root / name) / 2**20 for name in ("list.yaml", "crds.yaml")}
        commands = {
            "lint list.yaml": [exe, "lint", "list.yaml", "--format", "json"],
            "parse list.yaml": [sys.executable, "-c", PARSE, "list.yaml"],
            "lint pod.yaml --crds": [exe, "lint", "pod.yaml", "--crds", "crds.yaml", "--format", "json"],
            "lint pod.yaml": [exe, "lint", "pod.yaml", "--format", "json"],
            "parse crds.yaml": [sys.executable, "-c", PARSE, "crds.yaml"],
            "fix copy of pods.yaml": ["sh", "-c", f"cp pods.yaml fixed.yaml && exec {exe} fix fixed.yaml"],
        }
        results: dict[str, list[tuple[float, float, float, str]]] = {name: [] for name in commands}
        for _ in range(args.repeat):  # alternated: a busy spell of the machine hits every command alike
            for name, command in commands.items():
                if results[name] and results[name][-1][3] == "timeout":
                    continue  # once past the limit, not again
                results[name].append(run(command, root, args.timeout))
    print(f"list.yaml: {sizes['list.yaml']:.1f} MiB in one document; crds.yaml: {sizes['crds.yaml']:.1f} MiB")
    print(f"{'command':<24} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}  exit")
    med: dict[str, float] = {}
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = med[name] = statistics.median(r[1] for r in runs)
        shown = f">{args.timeout:.0f}" if runs[-1][3] == "timeout" else f"{wall:.2f}"
        print(f"{name:<24} {shown:>8} {cpu:>8.2f} {max(r[2] for r in runs):>9.0f}  {runs[-1][3]}")
    print(f"lint list / parse (CPU): {med['lint list.yaml'] / med['parse list.yaml']:.2f}x")
    extra = med["lint pod.yaml --crds"] - med["lint pod.yaml"]
    print(f"--crds adds {extra:.2f} s CPU; the CRD file's parse alone: {med['parse crds.yaml']:.2f} s")
    print(f"fix of a List of {args.fix_pods} pods: {med['fix copy of pods.yaml']:.2f} s CPU")


if __name__ == "__main__":
    main()
