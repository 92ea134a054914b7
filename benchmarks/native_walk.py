"""Would a native tool do lint's walk and grep pre-filter for less? Today's walk and pre-filter next to ripgrep,
`grep -r` and `find` doing the same work on the same tree.

    python benchmarks/native_walk.py DIR [--repeat N]

Every row runs once per round, alternating, and the table shows the best wall time, the best and the median CPU
(user + system, this process's for the rows run in it, the child's for the others). Rows:

- today's walk: `sources.walk_entries` alone (the folder listing) and `sources.expand` as lint calls it;
- today's pre-filter: `prefilter.Grep` over the walked files (GNU grep, its word pass and section pass), and its
  word pass alone;
- `rg --files`, `rg -o` of the word pass's pattern walking DIR, and `rg -o` over the walked files in grep's batches;
- `grep -r -o` of the same pattern walking DIR (one C pass, as the pre-filter's word pass reads each file);
- `find -printf '%y %p\\0'`: a C walk that lists every entry with its type.

The last column says what each row gives: a native walk has to give what `sources.expand` gives (FIFOs, devices,
sockets and symlinks named, folders that hold no regular file, the files without a match) for lint's selection and
notes to stay the same. ripgrep (`pip install ripgrep`) is looked up on PATH; its rows are left out without it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dramigrate import prefilter, sources
from dramigrate.cutover import needles
from dramigrate.rules import load_rules

ENV = {**os.environ, "LC_ALL": "C"}
RG = ["--no-config", "-j1", "--no-ignore", "--hidden", "-a", "--null", "-H", "--no-line-number", "--no-heading"]


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of work (this process's and its children's)."""
    (me, kids), start = _cpu(), time.perf_counter()
    work()
    wall = time.perf_counter() - start
    me2, kids2 = _cpu()
    return wall, me2 - me + kids2 - kids


def run(command: list[str]) -> Callable[[], object]:
    return lambda: subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)


def run_batches(commands: list[list[str]]) -> Callable[[], object]:
    return lambda: [run(c)() for c in commands]


def rows(tree: str, pattern_file: str, files: list[str]) -> list[tuple[str, Callable[[], object], str]]:
    rules = load_rules()
    grep = prefilter._grep()
    found = needles()

    def grep_prefilter() -> object:
        if grep is None:
            return None
        g = prefilter.Grep(grep, rules, found)
        g.add(files)
        return g.result()

    def listing() -> object:
        return sum(len(entries) for _, _, entries in sources.walk_entries(tree))

    out: list[tuple[str, Callable[[], object], str]] = [
        ("sources.walk_entries (listing)", listing, "every entry with its kind, folders in order"),
        ("sources.expand (lint's walk)", lambda: sources.expand([tree]), "lint's selection and notes"),
    ]
    if grep is not None:
        out.append(("prefilter.Grep, both passes", grep_prefilter, "candidates, needles (given the walked files)"))
    rg = shutil.which("rg")
    batches = [list(b) for b in prefilter._batches(files)]
    if rg is not None:
        out += [
            ("rg --files", run([rg, *RG, "--files", tree]), "regular files only"),
            ("rg -o word pass, walking", run([rg, *RG, "-o", "-f", pattern_file, tree]), "matched files only"),
            (
                "rg -o word pass, walked files",
                run_batches([[rg, *RG, "-o", "-f", pattern_file, "--", *b] for b in batches]),
                "matched files only",
            ),
        ]
    if grep is not None:  # the pre-filter's word pass alone, as it runs it
        word_pass = [[grep, "-oaHZE", "-D", "skip", "-d", "skip", "-s", "-f", pattern_file, "--", *b] for b in batches]
        out.append(("grep -o word pass, walked files", run_batches(word_pass), "matched files only"))
    out.append(
        (
            "grep -r -o word pass, walking",
            run(["grep", "-r", "-oaHZE", "-D", "skip", "-f", pattern_file, tree]),
            "matched files only",
        )
    )
    if shutil.which("find"):
        listed = run(["find", "-H", tree, "-mindepth", "1", "-printf", r"%y%p\0"])
        out.append(("find -printf '%y %p\\0'", listed, "every entry with its type, unsorted"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tree = os.fspath(Path(args.tree))
    files = sources.expand([tree]).files
    with tempfile.TemporaryDirectory(prefix="native-walk-") as tmp:
        pattern_file = os.path.join(tmp, "pattern")
        Path(pattern_file).write_bytes(prefilter.word_pass(load_rules(), needles()))
        table = rows(tree, pattern_file, files)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in table}
        for _ in range(args.repeat):
            for name, work, _ in table:
                times[name].append(timed(work))
    load = os.getloadavg()[0]
    print(f"{tree}: {len(files)} files lint reads, best of {args.repeat} rounds (alternated), load {load:.1f}")
    if shutil.which("rg") is None:
        print("(no rg on PATH: pip install ripgrep for its rows)")
    print(f"{'':32} {'wall s':>7} {'cpu s':>7} {'median':>7}  gives")
    for name, _, gives in table:
        walls, cpus = zip(*times[name], strict=True)
        print(f"{name:32} {min(walls):7.3f} {min(cpus):7.3f} {statistics.median(cpus):7.3f}  {gives}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
