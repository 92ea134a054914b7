"""Run the per-file pipeline over all inputs: in order, on both cores for large trees."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from dramigrate.config import Settings
from dramigrate.findings import RULES, Finding
from dramigrate.kustomize import report_only_files
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import DeviceClassInfo, RuleSet, load_rules
from dramigrate.sources import Inputs
from dramigrate.versions import Target

PARALLEL_MIN_FILES = 200
_worker: tuple[RuleSet, Settings, Target] | None = None


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)
    bad_input: int = 0
    scanned: int = 0


def _init(settings: Settings, target: Target) -> None:
    global _worker
    _worker = (load_rules(settings.rules), settings, target)


def _run(job: Job) -> FileResult:
    assert _worker is not None
    return run_file(job, *_worker)


def run(
    inputs: Inputs,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    fix: bool,
    stdin: bytes | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Every input through the per-file pipeline; progress(done, total) after each file, when given."""
    out = RunResult()
    jobs: list[Job] = []
    reasons = report_only_files(inputs.files, rules) if inputs.files else {}
    for path in inputs.files:
        jobs.append(Job(str(path), None, fix, reasons.get(path.resolve(), "")))
    if stdin is not None:
        jobs.append(Job("-", stdin, fix))
    out.scanned = len(jobs)
    if len(jobs) >= PARALLEL_MIN_FILES and (os.cpu_count() or 1) > 1:
        with ProcessPoolExecutor(
            max_workers=min(os.cpu_count() or 2, 8), initializer=_init, initargs=(settings, target)
        ) as pool:
            results = _collect(pool.map(_run, jobs, chunksize=32), len(jobs), progress)
    else:
        results = _collect((run_file(j, rules, settings, target) for j in jobs), len(jobs), progress)
    out.files.extend(results)
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
        if r.error is not None:
            out.bad_input += 1
    named = sorted(n for n, c in out.classes.items() if c.derived_from)
    if named:
        out.findings.append(_named_class_quota(out, named))
    out.findings.sort(key=Finding.sort_key)
    return out


def _collect(
    results: Iterable[FileResult], total: int, progress: Callable[[int, int], None] | None
) -> list[FileResult]:
    """The results that say something (findings, an error, a rewrite), in input order."""
    kept = []
    for done, r in enumerate(results, start=1):
        if progress is not None:
            progress(done, total)
        if r.findings or r.error or r.rewritten:
            kept.append(r)
    return kept


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
