"""What running both cores at once costs on this machine, whatever dramigrate does: the workers' lint of the files the
grep pre-filter keeps, in one process pinned to the first core, alone and then beside a twin pinned to the second.

    python benchmarks/two_cores.py DIR [--repeat N]

Each child lints the files in-process (`migrate.run_file`, as a pool worker does) after a warm-up and reports the
CPU seconds of that loop; the rounds alternate alone and together, and the medians are printed. Needs Linux
(`os.sched_setaffinity`) and two cores. A lint of DIR uses about the together figure per worker: the difference is
the share of "parallel work" in benchmarks/README.md that no change to dramigrate can take away.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[2])})
from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target
files = open(sys.argv[1]).read().split("\n")
rules, settings = load_rules(), Settings()
target = Target.parse(settings.kube_version)
for f in files[:50]:
    run_file(Job(f, None, False), rules, settings, target)
start = time.process_time()
for f in files:
    run_file(Job(f, None, False), rules, settings, target)
print(time.process_time() - start)
"""


def kept_files(tree: str) -> list[str]:
    """The files a lint of tree gives its workers: what the grep pre-filter keeps."""
    from dramigrate import prefilter, sources
    from dramigrate.cutover import needles
    from dramigrate.rules import load_rules

    files = sources.expand([tree]).files
    grep = prefilter._grep()
    if grep is None:
        sys.exit("needs GNU grep (the pre-filter picks the files)")
    g = prefilter.Grep(grep, load_rules(), needles())
    g.add(files)
    kept = g.result().candidates
    return [f for f in files if f in kept]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        sys.exit("needs Linux and two cores")
    first, second = sorted(os.sched_getaffinity(0))[:2]
    files = kept_files(args.tree)
    alone: list[float] = []
    together: list[float] = []
    with tempfile.TemporaryDirectory(prefix="two-cores-") as tmp:
        listing = Path(tmp, "files")
        listing.write_text("\n".join(files))

        def start(core: int) -> subprocess.Popen[str]:
            command = [sys.executable, "-c", CHILD, str(listing), str(core)]
            return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)

        for _ in range(args.repeat):
            one = start(first)
            alone.append(float(one.communicate()[0]))
            pair = [start(first), start(second)]
            together.extend(float(p.communicate()[0]) for p in pair)
    load = os.getloadavg()[0]
    print(f"{len(files)} files, {args.repeat} rounds alternated, load {load:.1f}: CPU s of one process's lint")
    print(f"alone     median {statistics.median(alone):.3f}  best {min(alone):.3f}")
    print(f"together  median {statistics.median(together):.3f}  best {min(together):.3f}  (each of the two)")
    print(f"together / alone (medians): {statistics.median(together) / statistics.median(alone):.2f}")


if __name__ == "__main__":
    main()
