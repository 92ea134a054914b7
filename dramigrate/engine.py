"""Run the per-file pipeline over all inputs: in order, on both cores for large trees."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dramigrate import prefilter
from dramigrate.config import Settings
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.kustomize import Scan, patch_findings, scan
from dramigrate.kustomize.graph import NAMES as KUSTOMIZATION_NAMES
from dramigrate.kustomize.graph import under
from dramigrate.lifetime import die_with_parent, ignore_stops, release_signals, result, signals_held, watch_workers
from dramigrate.limits import is_regular
from dramigrate.migrate import FileResult, Job, failed_file, run_file
from dramigrate.rules import DeviceClassInfo, RuleSet, load_rules
from dramigrate.sources import Inputs, resolve_paths
from dramigrate.terminal import MESSAGES
from dramigrate.versions import Target

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from dramigrate.ahead import Ahead
    from dramigrate.cutover import Plan

PARALLEL_MIN_FILES = 200
_worker: tuple[RuleSet, Settings, Target] | None = None


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)
    bad_input: int = 0  # files that failed (bad input or a bug): exit 2; the summary's badInput counts bad input only
    scanned: int = 0
    kustomize: Scan | None = None  # the kustomize graphs around the inputs (commands migrates them)
    cutover: Plan | None = None  # the order of operations for the classes the run migrates to (report footer)
    decisions: list[str] = field(default_factory=list)  # --verbose: each file's decisions, in input order
    linked: dict[str, list[str]] = field(default_factory=dict)  # file -> its other names in the run (hard links)
    stopped: str = ""  # fix: the signal that stopped its writes (SIGTERM, Ctrl-C), or ""


def _init(parent: int, settings: Settings, target: Target, verbose: bool = False) -> None:
    """A pool worker: dies with dramigrate; a forked worker has the parent's rules already, a spawned one loads them.
    verbose: the run's --verbose (_run sends the files' decisions back only then)."""
    import gc

    global _worker
    MESSAGES.verbose = verbose
    die_with_parent(parent)
    ignore_stops()
    release_signals()
    gc.enable()  # forked during the folder walk, it starts with the walk's collector paused (sources.expand)
    if _worker is None or _worker[1:] != (settings, target):
        _worker = (load_rules(settings.rules), settings, target)


def _as_walked(r: FileResult, resolved: str | None) -> FileResult:
    """The file's result when the file read is the one the walk resolved; else (its name swapped for a symlink, or
    a folder on its way for a link elsewhere, after the walk) its refusal: nothing read from it reaches a report."""
    if not r.opened or resolved is None or r.opened == resolved:
        return r
    why = "replaced by a symlink or moved after it was found, so another file was read; not processed (run again)"
    return FileResult(r.path, error=InputError(why, r.path))


def _run(job: Job) -> FileResult:
    assert _worker is not None
    result = run_file(job, *_worker)
    if not MESSAGES.verbose:  # said only with --verbose: not pickled back (a third of a lint result's bytes)
        result.decisions = []
    return result


def run_chunk(jobs: list[Job]) -> list[FileResult]:
    """What a worker does with a chunk of the jobs."""
    return [_run(j) for j in jobs]


def run(
    inputs: Inputs,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    fix: bool,
    stdin: bytes | None = None,
    progress: Callable[[int, int], None] | None = None,
    stdin_render: bool = False,
    on_scan: Callable[[Scan, Ahead], None] | None = None,
    links_apart: bool = False,
) -> RunResult:
    """Every input through the per-file pipeline; progress(done, total) after each file, when given. stdin_render:
    stdin is what Helm rendered (a post-renderer's input, `helm template` piped), read as Helm reads it (a repeated
    key: the last wins).
    on_scan(kustomize scan, the files run ahead): called once the scan is done and the files go to forked workers,
    so that it may start threads working beside them; not called when no pool ran files ahead. links_apart (fix
    --force, which writes a hard-linked file as a file of its own): each name of a hard-linked file is checked and
    written apart, else once, under its first name."""
    out = RunResult()
    planned: list[tuple[str, str]] = []  # (file, resolved): a Job only for the files grep keeps
    # grep reads the files while the kustomize scan runs here (started during the walk when the CLI walked them)
    grep = inputs.grep if inputs.grep is not None else _start_grep(inputs.files, rules)
    resolved_files = resolve_paths(inputs.files, inputs.resolved)
    ahead = grep.ahead if grep is not None else None
    preloaded = ahead.loaded if ahead is not None and ahead.pool is not None else None
    first = _first_names(inputs.files, resolved_files)
    kz = scan(resolved_files, rules, inputs.walked, preloaded, _device_free(grep, first)) if inputs.files else None
    out.kustomize = kz
    if kz is not None:
        out.files.extend(failed_file(str(path), exc, "reading the kustomization") for path, exc in kz.errors)
    in_graphs = kz.unit_of if kz is not None else {}  # the files of kustomize graphs with devices (a few)
    for path, resolved in zip(inputs.files, resolved_files, strict=True):
        if first[resolved] != path:  # a symlink to a file the run already takes: one read, one write
            out.decisions.append(f"{path}: the same file as {first[resolved]}: checked and written once, there")
            continue
        if resolved in in_graphs and kz is not None and kz.skip(resolved):
            out.decisions.append(f"{path}: a kustomize patch: checked with its kustomization, not as a manifest")
            continue  # a kustomize patch: reported (and migrated) by the kustomize flow
        planned.append((path, resolved))
    out.scanned = len(planned) + (stdin is not None)
    found = grep.result() if grep is not None else None
    if found is not None and len(planned) >= prefilter.MIN_FILES:
        # files grep rules out would give no result: skip them unread
        maybe = found.candidates
        if MESSAGES.verbose:  # a line per file grep rules out (19,000 of a 20,000-file tree), said only with --verbose
            out.decisions.extend(
                f"{path}: nothing to check: no device resource name or device field in its bytes (grep pre-filter)"
                for path, _ in planned
                if path not in maybe
            )
        planned = [p for p in planned if p[0] in maybe]
    unwalked = _unwalked_resources(kz, set(resolved_files)) if kz is not None else []
    if unwalked:  # after grep's cut: it reads only the walked files
        planned += unwalked
        out.scanned += len(unwalked)
        resolved_files = [*resolved_files, *(resolved for _, resolved in unwalked)]
    if not links_apart:
        planned = _one_name_each(planned, out)
    # why the core leaves a file as it is (kustomize), asked only of the files grep keeps
    jobs = [Job(path, None, fix, kz.reason(resolved, fix) if kz is not None else "") for path, resolved in planned]
    if stdin is not None:
        jobs.append(Job("-", stdin, fix, helm_render=stdin_render))
    threads = on_scan is not None and kz is not None and ahead is not None and ahead.pool is not None
    if threads:
        on_scan(kz, ahead)  # type: ignore[misc,arg-type]  # the workers are forked: threads may start now
    real_of = dict(zip([*inputs.files, *(p for p, _ in unwalked)], resolved_files, strict=True))  # while workers run
    results = ahead.results(jobs, progress) if ahead is not None else None  # ran most already
    # no fork once on_scan's threads run (a fork while a thread holds a lock can hang the child): a pool that broke
    # is not started again, the files are done here
    if results is None and len(jobs) >= PARALLEL_MIN_FILES and not threads:
        results = _in_pool(jobs, rules, settings, target, progress)
    if results is None:
        results = _collect((run_file(j, rules, settings, target) for j in jobs), len(jobs), progress)
    results = [_as_walked(r, real_of.get(r.path)) for r in results]
    for r in results:
        if kz is not None and os.path.basename(r.path) in KUSTOMIZATION_NAMES and not r.findings:
            out.decisions.append(f"{r.path}: a kustomization: its patches are checked with its graph")
        else:
            out.decisions.extend(r.decisions)
    out.files.extend(r for r in results if r.findings or r.error or r.rewritten)
    if kz is not None:
        _kustomize_findings(kz, rules, out, real_of, lint=not fix)
    for r in out.files:
        out.findings.extend(r.findings)
        for name, cls in r.classes.items():
            if name in out.classes and out.classes[name] != cls:
                out.findings.append(
                    Finding(
                        "class-conflict",
                        RULES["class-conflict"][0],
                        f"two different DeviceClasses named {name}; rename one in its rule pack",
                        r.path,
                    )
                )
            out.classes.setdefault(name, cls)
        if r.failed:
            out.bad_input += 1
    if settings.strategy == "claims" and out.findings:  # no finding, no plan (and no cutover import)
        from dramigrate.cutover import autoscaler_findings, cutover_plan, seen_autoscalers

        out.cutover = cutover_plan(out.findings, rules)
        if out.cutover is not None:
            hits = found.needles if found is not None else None
            out.findings.extend(autoscaler_findings(out.findings, seen_autoscalers(inputs.files, stdin, hits)))
    named = sorted(n for n, c in out.classes.items() if c.derived_from)
    if named:
        out.findings.append(_named_class_quota(out, named))
    out.findings.sort(key=Finding.sort_key)
    return out


def _unwalked_resources(kz: Scan, known: set[str]) -> list[tuple[str, str]]:
    """The resource files (shown, resolved) of the device graphs under the given paths that the walk left out, for
    their name or their folder: kustomize reads a resource whatever it is called (`pod.txt`) and wherever it lies in
    the kustomization's folder (`node_modules/pod.yaml`, `venv/`, a file git ignores), and fix migrates it with its
    graph, so lint checks it too. Only files in the kustomization's own folder: kustomize refuses any other."""
    out = []
    for unit in kz.units:
        for folder in sorted(unit.folders):
            node = kz.graph.nodes[folder]
            root = {os.path.realpath(node.dir)}
            for f in sorted(node.files) if node.inside else ():
                if str(f) not in known and under(str(f), root) and is_regular(str(f)):
                    known.add(str(f))
                    out.append((kz.display(f), str(f)))
    return out


def _one_name_each(planned: list[tuple[str, str]], out: RunResult) -> list[tuple[str, str]]:
    """The files to check (path, resolved), each under one name: a file hard-linked under two names of the run is
    checked (and refused by fix, which would split the links) once, under its first name, and its other names are
    told (out.linked); it was checked, reported and refused twice, each name's refusal said three times. Only the
    files left to check are looked at (the device files of a large tree)."""
    first: dict[tuple[int, int], str] = {}
    kept = []
    for path, resolved in planned:
        try:
            st = os.stat(path)
        except OSError:
            kept.append((path, resolved))  # said when it is read
            continue
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in first:
            out.linked.setdefault(first[key], []).append(path)
            out.decisions.append(f"{path}: the same file as {first[key]} (a hard link): checked once, there")
            out.scanned -= 1
            continue
        first.setdefault(key, path)
        kept.append((path, resolved))
    return kept


def _device_free(grep: prefilter.Grep | None, first: dict[str, str]) -> Callable[[str], bool] | None:
    """For the kustomize scan: is this file (resolved) one grep read and found no device word in? The scan then
    does not read it again (a repository's kustomize graphs list a thousand files, almost none with a device)."""
    if grep is None:
        return None
    return lambda real: (name := first.get(real)) is not None and grep.device_free(name)


def _start_grep(files: list[str], rules: RuleSet) -> prefilter.Grep | None:
    """The grep pre-filter over every input file (the kustomize patches among them are read for nothing), with
    the autoscaler check's needles in the same pass; None on a small run (no grep, and no cutover import)."""
    stream = prefilter.Stream(rules)
    stream.add(files)
    return stream.finish()


def _in_pool(
    jobs: list[Job], rules: RuleSet, settings: Settings, target: Target, progress: Callable[[int, int], None] | None
) -> list[FileResult] | None:
    """The jobs' results in input order, over every core (at most 8); None when there is one core or a worker died
    (killed, out of memory: the caller then does the files here, one by one). Workers die with dramigrate."""
    from concurrent.futures.process import BrokenProcessPool

    global _worker
    made = worker_pool(rules, settings, target)
    if made is None:
        return None
    pool, workers = made
    # Chunks small enough that both workers stay busy to the end, large enough to keep pickling cheap.
    chunk = max(1, min(32, len(jobs) // (workers * 8)))
    try:
        with pool:
            # each chunk waited for in short waits (lifetime.result): a stop the kernel gives to another thread (a
            # kustomize build's, a render's) is taken at once, not once every chunk is done
            futures = [pool.submit(run_chunk, jobs[i : i + chunk]) for i in range(0, len(jobs), chunk)]
            return _collect((r for f in futures for r in result(f)), len(jobs), progress)
    except BrokenProcessPool:
        return None
    finally:
        _worker = None


def worker_pool(rules: RuleSet, settings: Settings, target: Target) -> tuple[ProcessPoolExecutor, int] | None:
    """Forked workers (one a core, at most 8) that start with these rules and die with dramigrate, and how many;
    None on one core, or when they cannot all be started."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        return None
    from concurrent.futures import ProcessPoolExecutor

    _load_before_fork()
    global _worker
    _worker = (rules, settings, target)  # what a forked worker starts with
    workers = min(cores, 8)
    pool = ProcessPoolExecutor(workers, initializer=_init, initargs=(os.getpid(), settings, target, MESSAGES.verbose))
    started = pool._processes  # the workers, as the first task forks them (shutdown drops this dict)
    try:
        with signals_held():
            pool.submit(_ready)  # forks every worker now
            watch_workers(started.values())
    except (OSError, KeyboardInterrupt) as exc:
        # a worker could not start (too many open files or processes: ulimit -n, ulimit -u): the run ended in an
        # internal error, then waited for ever at its exit for the workers that had started; those are stopped
        # and the files are done here, one by one (or not at all: Ctrl-C)
        for process in list(started.values()):
            process.kill()
            process.join()
        pool.shutdown(wait=False)
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    return pool, workers


def _load_before_fork() -> None:
    """What every worker needs, loaded once here so that the workers forked next have it: each worker loaded ruamel's
    string classes and the rule catalogue again (20 ms of CPU apiece) while these lines ran after the fork."""
    if sys.platform.startswith("linux"):
        import ctypes  # noqa: F401  # lifetime.die_with_parent's prctl: each worker imported it (6 ms) at its start

    import dramigrate.pipeline  # noqa: F401
    import dramigrate.topology  # noqa: F401
    from dramigrate.fastyaml import _string_types
    from dramigrate.findings import RULES

    _string_types()  # ruamel's string classes (the fast parse gives quoted scalars as them)
    RULES.get("internal-error")  # the rule catalogue, read once


def _ready() -> None:
    """The first task: makes the pool fork its workers now."""


def _first_names(paths: list[str], resolved: list[str]) -> dict[str, str]:
    """For each resolved file, the one input name it is processed under: a name that is not a symlink if there is
    one, else the first (fixing a file twice, through itself and a link to it, would fail the second write)."""
    out: dict[str, str] = {}
    for path, real in zip(paths, resolved, strict=True):
        if real not in out or (os.path.islink(out[real]) and not os.path.islink(path)):
            out[real] = path
    return out


def _collect(
    results: Iterable[FileResult], total: int, progress: Callable[[int, int], None] | None
) -> list[FileResult]:
    """The results in input order, telling progress(done, total) after each."""
    out = []
    for done, r in enumerate(results, start=1):
        if progress is not None:
            progress(done, total)
        out.append(r)
    return out


def _kustomize_findings(kz: Scan, rules: RuleSet, out: RunResult, resolved: dict[str, str], lint: bool) -> None:
    """Findings on kustomize patches and graphs (no build); a base's requests name the overlays on it.
    resolved: the inputs' resolved paths (each file is resolved once per run). lint: patch_findings'."""
    for r in out.files:
        if r.path == "-" or not kz.unit_of:
            continue
        known = resolved.get(r.path)
        unit = kz.unit_of.get(known if known is not None else str(_resolved(Path(r.path))))
        if unit is None or not (unit.migratable or lint and unit.whole_elsewhere):
            continue
        path = Path(known) if known is not None else _resolved(Path(r.path))
        folders = kz.graph.owners_of(path)
        overlays = ", ".join(sorted({kz.display(o) for d in folders for o in kz.graph.overlays_of(d)}))
        for f in r.findings:
            if f.fixable:
                f.message += (
                    f"; in a kustomize base of {overlays}: fix migrates it with every overlay, proving each build"
                )
    by_file: dict[str, list[Finding]] = {}
    found = patch_findings(kz, rules, lint)
    if found:
        from dramigrate.detect import explain_requests

        out.decisions.extend(explain_requests(found, rules))
    for f in found:
        by_file.setdefault(f.file, []).append(f)
    for file, found in by_file.items():
        out.files.append(FileResult(file, findings=found))


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the file fails on its own when read
        return path


def needed_classes(result: RunResult) -> list[DeviceClassInfo]:
    """DeviceClasses the claims use that no installed driver chart ships: the cluster admins create them."""
    return [result.classes[name] for name in sorted(result.classes)]


def classes_warning(result: RunResult, missing: list[DeviceClassInfo]) -> Finding:
    first = next((f for f in result.findings if f.file and f.line), None)
    return Finding(
        "classes-file-needed",
        RULES["classes-file-needed"][0],
        f"the claims use DeviceClasses that no driver chart ships ({', '.join(c.name for c in missing)}); "
        "pass --classes-file FILE to write them for the cluster admins",
        first.file if first else next((r.path for r in result.files), "-"),
        first.line if first else 1,
        first.column if first else 1,
    )


def _named_class_quota(result: RunResult, named: list[str]) -> Finding:
    """Quota counts claims per class: claims on a named class escape the vendor class's quota key."""
    first = next((f for f in result.findings if f.rule == "legacy-device-request"), None)
    keys = ", ".join(f"{n}.deviceclass.resource.k8s.io/devices" for n in named)
    bases = sorted({result.classes[n].derived_from for n in named})
    return Finding(
        "named-class-quota",
        RULES["named-class-quota"][0],
        f"claims on the named classes count toward {keys}, not toward the quota keys of {', '.join(bases)}: "
        "size ResourceQuotas for them",
        first.file if first else "-",
        first.line if first else 1,
        first.column if first else 1,
    )
