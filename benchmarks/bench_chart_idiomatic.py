#!/usr/bin/env python3
"""How many charts get a proven idiomatic rewrite (the default `--chart-style idiomatic`), measured as issue 7
will be checked.

    python benchmarks/bench_chart_idiomatic.py [--corpus DIR] [--charts DIR] [--only TEXT]

Without --charts: every chart run of tests/test_chart_corpus.py (the corpus charts that render offline, each
with its GPU values). With --charts DIR: any folder of charts; DIR/runs.yaml lists the runs
(`- {chart: <folder under DIR or DIR/set>, label: <text>, values: [<file>], sets: [a=b], kube: "1.34"}`, a value
file is relative to DIR, or to the chart with a `chart:` prefix); without runs.yaml every chart folder
(a Chart.yaml not inside charts/) is one run with its defaults.

Each run: `fix` (idiomatic) on two copies of the chart, with --opt-in (the switch off by default) and without
(on by default); then, independently of the tool's own proof, the rewritten copies are rendered again:
  (L) the --opt-in copy with the run's values: byte-identical to the original chart's render (the original given
      the rewrite's Chart.yaml version bump, which shows in `helm.sh/chart` labels);
  (D) the other copy with the run's values (patterns A and D: the values switch is on by default) or with the
      `-dra` values overlays given after their originals, `-f gpu.yaml -f gpu-dra.yaml` (B/C; an overlay fix could
      not prove is a copy of its file, given in its place; a file whose DRA values are the defaults', which
      values-dra.yaml's header names, gets values-dra.yaml after it): strict-valid for 1.34 and 1.36, no
      device-plugin request left, and the devices the claims ask for per pod equal the devices the original pod
      asked for.
Per run it prints the state, the pattern(s) of the device requests (patterns.py), the added lines (all files /
the chart's own files, without the `-dra.yaml` variants fix writes beside the user's values files outside the chart /
without any `-dra.yaml` values overlay or variant) and whether
the engine was used; then per chart (a chart counts as proven when all its runs with device requests are) the
totals, the median added lines and the failures with their reason. Exits 0; says why and exits 0 when there is
nothing to measure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import stat
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    chart: Path  # the chart folder (read-only: copied before fix)
    label: str
    values: tuple[Path, ...] = ()
    sets: tuple[str, ...] = ()
    kube: str | None = None


@dataclass
class Result:
    run: Run
    # proven | manual | error | failed (the measurement raised) | reported (every device request in a kind fix leaves by
    # design: a Volcano Job, Knative; DESIGN.md; or in a kind it does not know: Argo WorkflowTemplate) | nothing to fix
    state: str = "nothing to fix"
    detail: str = ""
    how: str = ""
    patterns: set[str] = field(default_factory=set)
    added: int = 0  # every changed or new file
    added_chart: int = 0  # without the `-dra.yaml` values variants (copies of the user's or shipped values files)
    added_inside: int = 0  # the chart's own files only: not the variants of the user's values files beside it
    engine: bool = False
    checks: str = ""  # the independent L/D check: "" when passed
    took: float = 0.0


def folder_runs(folder: Path) -> list[Run]:
    spec = folder / "runs.yaml"
    base = folder / "set" if (folder / "set").is_dir() else folder
    if not spec.is_file():
        return [
            Run(p.parent, "defaults")
            for p in sorted(base.rglob("Chart.yaml"))
            if "charts" not in p.parent.relative_to(base).parts and "templates" not in p.parent.parts
        ]
    runs = []
    for item in yaml.safe_load(spec.read_text()) or []:
        chart = base / item["chart"]

        def where(v: str, chart: Path = chart) -> Path:
            return chart / v.removeprefix("chart:") if v.startswith("chart:") else folder / v

        runs.append(
            Run(
                chart,
                str(item.get("label", "defaults")),
                tuple(where(v) for v in item.get("values") or ()),
                tuple(item.get("sets") or ()),
                item.get("kube"),
            )
        )
    return runs


def corpus_runs(corpus: Path) -> tuple[list[Run], Any]:
    sys.path.insert(0, str(REPO / "tests"))
    import test_chart_corpus as corpus_module

    corpus_module.CORPUS = corpus
    return [
        Run(corpus / r.chart, r.label, tuple(Path(v) for v in r.values), r.sets, r.kube) for r in corpus_module.RUNS
    ], corpus_module


def copy_chart(run: Run, dest: Path, corpus_module: Any) -> tuple[Path, tuple[Path, ...]]:
    """A writable copy of the chart and of its values files (fix may write a values variant beside them)."""
    if corpus_module is not None:
        rel = str(run.chart.relative_to(corpus_module.CORPUS))
        root = corpus_module._copy(rel, dest)
        original = corpus_module.Run(rel, run.label, tuple(str(v) for v in run.values), run.sets, run.kube)
        return root, corpus_module._values(original, dest)
    root = dest / run.chart.name
    shutil.copytree(run.chart, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    values = []
    for i, v in enumerate(run.values):
        if v.is_relative_to(run.chart):
            values.append(root / v.relative_to(run.chart))
        else:
            copy = dest / "values" / str(i) / v.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(v.read_bytes())
            values.append(copy)
    return root, tuple(values)


def added_lines(changes: list[Any]) -> int:
    import difflib

    total = 0
    for c in changes:
        before = (c.before or "").splitlines()
        after = c.after.splitlines()
        total += sum(1 for line in difflib.unified_diff(before, after, lineterm="", n=0) if line.startswith("+")) - (
            1 if before or after else 0
        )  # the "+++" header
    return total


def patterns_of(findings: list[Any], display: str, root: Path) -> set[str]:
    from dramigrate.helm.outcome import _counted
    from dramigrate.helm.patterns import classify

    out = set()
    for f in findings:
        if not (f.resource and f.line and f.file.startswith(display + "/")):
            continue
        path = root / f.file[len(display) + 1 :]
        if "templates" in path.parts and path.name != "NOTES.txt":  # Helm renders `raycluster.yaml.j2` there too
            try:
                out.add(classify(path.read_text(encoding="utf-8"), f.line, f.resource, _counted(f)).letter)
            except OSError:
                continue
    return out


def pod_devices(
    stream: str, rules: Any, random_names: list[str] | None = None
) -> tuple[dict[str, int], dict[str, int], list[str], list[str]]:
    """Per pod template (kind/name/path): devices asked by extended resources, devices asked by claims
    (ResourceClaimTemplate counts, ExactCount or All=1), legacy device keys left, and the requests of resources
    fix reports and leaves by design (a pack's report_only: shared RDMA, HAMi memory; `where: key=value`; any in a
    kind no workloads rule knows, fix's unknown-kind: a KaiwoJob), which the DRA render must keep as they were.
    `random_names`: name patterns whose random part (randAlphaNum) is masked, so two renders' pods pair up
    (prove.volatile)."""
    from dramigrate.helm.prove import _unrandom, objects

    objs = _unrandom(objects(stream), random_names or [])
    templates: dict[str, int] = {}
    for (_, kind, _ns, _name), docs in objs.items():
        if kind == "ResourceClaimTemplate":
            for doc in docs:
                reqs = (((doc.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
                count = 0
                for req in reqs:
                    exact = req.get("exactly") or req
                    subs = req.get("firstAvailable")
                    if subs:
                        exact = subs[0]
                    count += int(exact.get("count", 1)) if exact.get("allocationMode", "ExactCount") != "All" else 1
                templates[str(doc["metadata"]["name"])] = count
    legacy: list[str] = []
    reported: list[str] = []
    plugin: dict[str, int] = {}
    claimed: dict[str, int] = {}

    def walk(node: Any, where: str, singles: tuple[str, ...], known: bool = True) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("containers"), list) or any(isinstance(node.get(k), dict) for k in singles):
                # a pod holds the most any init container asks for, or the sum of its containers (and sidecars,
                # init containers that keep running), whichever is more: Kubernetes' effective request
                total, first = 0, 0
                inits = [c for c in node.get("initContainers") or [] if isinstance(c, dict)]
                ended = [c for c in inits if c.get("restartPolicy") != "Always"]
                listed = [*(c for c in inits if c.get("restartPolicy") == "Always"), *(node.get("containers") or [])]
                singled = [node[k] for k in singles if isinstance(node.get(k), dict)]
                for n, c in enumerate([*ended, *listed, *singled]):
                    init = n < len(ended)
                    res = (c or {}).get("resources") or {}
                    counts: dict[str, int] = {}
                    # a whole device beside a slice of the same vendor's (HAMi's nvidia.com/gpumem) is a share fix
                    # leaves as it is (detect.py's shared-device)
                    sliced = {
                        str(key).split("/")[0]
                        for section in ("limits", "requests")
                        for key in res.get(section) or {}
                        if (m := rules.lookup(str(key))) and m.rule.report_only not in ("", "config")
                    }
                    for section in ("limits", "requests"):
                        for key, value in (res.get(section) or {}).items():
                            match = rules.lookup(str(key)) if rules.is_device_candidate(str(key)) else None
                            shared = str(key).split("/")[0] in sliced
                            if match is not None and (
                                match.rule.report_only or shared or not known
                            ):  # or a kind fix leaves
                                reported.append(f"{where}.{section}: {key}={value}")
                            elif match is not None:
                                try:
                                    counts[str(key)] = max(counts.get(str(key), 0), int(str(value)))
                                except ValueError:
                                    counts[str(key)] = counts.get(str(key), 0)
                    if init:
                        first = max(first, sum(counts.values()))
                    else:
                        total += sum(counts.values())
                    legacy.extend(f"{where}: {k}" for k, v in counts.items() if v)
                plugin[where] = max(total, first)
                claimed[where] = sum(
                    templates.get(str(rc.get("resourceClaimTemplateName")), 0)
                    for rc in node.get("resourceClaims") or []
                    if isinstance(rc, dict)
                )
            for k, v in node.items():
                walk(v, f"{where}.{k}", singles, known)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]", singles, known)

    for key, docs in objs.items():
        kind = rules.workload(key[0], key[1])  # KServe's predictor has one container under `model:`
        for i, doc in enumerate(docs):
            walk(doc, f"{key[1]}/{key[3]}#{i}", kind.single_containers if kind else (), kind is not None)
    return plugin, claimed, legacy, sorted(reported)


def _with_variant(values: Path, variant: Path) -> tuple[Path, ...]:
    """A values file with its DRA values: the overlay after it, or the copy (no "give it after" header) in its place."""
    if not variant.is_file():
        return (values,)
    head = "".join(variant.read_text().splitlines(True)[:2])
    return (values, variant) if head.startswith("#") and "give it after" in head else (variant,)


def _orders_differ(render: Callable[[], list[str]], off: str, tries: int = 8) -> bool:
    """Whether `off` is the original chart's render with its documents in another order, and the original chart itself
    renders its documents in another order from one render to the next (a library ranging over a map's keys unsorted,
    as bjw-s common before 5 does): of `tries` renders of the original, two differ only in their order."""
    first = render()
    if sorted(first) != sorted(_split(off)):
        return False
    return any(again != first and sorted(again) == sorted(first) for again in (render() for _ in range(tries)))


def _split(text: str) -> list[str]:
    return [f"---\n# Source: {part}" for part in text.split("---\n# Source: ")[1:]]


def independent_check(
    run: Run, root: Path, off_chart: Path, on: tuple[Path, tuple[Path, ...], Any], values: tuple[Path, ...], rules: Any
) -> str:
    """Proof L and D again, from outside the tool: "" when both hold, else the first failure. `off_chart`: the chart
    rewritten with --opt-in (the switch off by default); `on`: the chart rewritten without it, its values files
    and its outcome (a values switch, pattern A or D, is on by default there: no need to know its key)."""
    from dramigrate.helm.passthrough import SET_OVERLAY, TEMPLATE_FILE
    from dramigrate.helm.prove import strict_errors
    from dramigrate.helm.render import RenderOptions, render_chart

    def documents(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...]) -> list[str]:
        opts = RenderOptions(values_files=files, set_values=sets, kube_version=run.kube)
        return [f"---\n# Source: {m.source}\n{m.text}" for m in render_chart(chart, opts)]

    def render(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...]) -> str:
        return "".join(documents(chart, files, sets))

    on_chart, on_values, outcome = on
    for c in outcome.changes:  # the version bump shows in `helm.sh/chart` labels: the original gets it too
        if Path(c.rel).name == "Chart.yaml":
            (root / c.rel).write_text(c.after, encoding="utf-8")
    original = render(root, values, run.sets)
    off = render(off_chart, values, run.sets)
    if off != original and not _orders_differ(lambda: documents(root, values, run.sets), off):
        again = render(root, values, run.sets)
        lines = zip(original.splitlines(), again.splitlines(), off.splitlines(), strict=False)
        for n, (a, b, c) in enumerate(lines, start=1):
            if a != c and a == b:
                return f"L: switch off, not byte-identical: line {n}: {a.strip()!r} -> {c.strip()!r}"
        if len(original) != len(off) and again == original:
            return "L: with the switch off the render is not byte-identical (length)"
    rels = {c.rel for c in outcome.changes}
    files, sets = on_values, run.sets
    if any(r.endswith(TEMPLATE_FILE) for r in rels):  # B/C: the DRA variants of the values files are the switch
        overlay = [on_chart / "values-dra.yaml"] if "values-dra.yaml" in rels else []  # the chart's defaults
        variants = [f.with_name(f"{f.stem}-dra{f.suffix}") for f in on_values]
        head = "".join(overlay[0].read_text().splitlines(True)[:2]) if overlay else ""
        # a values file whose DRA values are the defaults' has none of its own: values-dra.yaml's header names it,
        # and values-dra.yaml goes after it too
        served = re.search(r"\(also after ([^)]*), which ask for the same\)", head)
        also = set(served.group(1).split(", ")) if served else set()
        files = (
            *overlay,
            *(
                x
                for v, f in zip(variants, on_values, strict=True)
                for x in (_with_variant(f, v) if f.name not in also or v.is_file() else (f, *overlay))
            ),
        )
        # values-dra.yaml in place of the --set that asks for devices: its first lines say which (the user reads it)
        stands = re.search(r"in place of\W*`([^`]*)`", head)
        if stands:
            dropped = re.findall(r"--set(?:-string)? (\S+)", stands.group(1))
            files, sets = (*files[1:], overlay[0]), tuple(x for x in run.sets if x not in dropped)
        if SET_OVERLAY in rels:  # values-set-dra.yaml in place of a --set of a device count, after the -f files
            head = "".join((on_chart / SET_OVERLAY).read_text().splitlines(True)[:2])
            stands = re.search(r"in place of\W*`([^`]*)`", head)
            dropped = re.findall(r"--set(?:-string)? (\S+)", stands.group(1)) if stands else []
            files, sets = (*on_values, on_chart / SET_OVERLAY), tuple(x for x in run.sets if x not in dropped)
    rendered = render(on_chart, files, sets)
    invalid = strict_errors(rendered, ("1.34", "1.36"), original)  # the chart's own errors are not the rewrite's
    if invalid:
        return f"D: not strict-valid: {invalid[:200]}"
    from dramigrate.helm.prove import _RANDOM_NAME, objects, volatile

    twice = volatile(objects(original), objects(render(root, values, run.sets)))  # names with randAlphaNum in them
    random_names = [p[len(_RANDOM_NAME) :] for p in twice if p.startswith(_RANDOM_NAME)]
    before, _, _, kept = pod_devices(original, rules, random_names)
    _, after_claims, legacy, reported = pod_devices(rendered, rules, random_names)
    if legacy:
        return f"D: device-plugin requests left: {legacy[0]}"
    if reported != kept:
        changed = sorted(set(reported) ^ set(kept))
        return f"D: a request fix reports and leaves changed: {changed[0]}"
    for pod, count in before.items():
        if count and after_claims.get(pod, 0) != count:
            return f"D: {pod} asked for {count} devices, its claims ask for {after_claims.get(pod, 0)}"
    return ""


def measure(run: Run, corpus_module: Any, rules: Any) -> Result:
    from dramigrate.config import Settings
    from dramigrate.helm.engine import HELPER_FILE
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.passthrough import SET_OVERLAY, TEMPLATE_FILE
    from dramigrate.helm.run import run_chart, write_changes
    from dramigrate.versions import Target

    result = Result(run)
    with tempfile.TemporaryDirectory(prefix="bench-idiomatic-") as tmp:
        root, values = copy_chart(run, Path(tmp), corpus_module)
        pristine = Path(tmp) / "pristine"
        shutil.copytree(root, pristine / root.name)
        options = ChartOptions(values_files=values, set_values=run.sets, kube_version=run.kube)
        settings = Settings(kube_version=run.kube or "1.36", opt_in=True)
        start = time.perf_counter()
        outcome = run_chart(root, options, rules, settings, Target.parse(settings.kube_version), "fix")
        result.took = time.perf_counter() - start
        result.patterns = patterns_of(outcome.findings, outcome.display, root)
        result.engine = any(Path(c.rel).as_posix().endswith(HELPER_FILE) for c in outcome.changes)
        result.added = added_lines(outcome.changes)
        result.added_chart = added_lines([c for c in outcome.changes if not c.rel.endswith("-dra.yaml")])
        # values-set-dra.yaml, in the chart's folder, holds the DRA values of the run's --set: the user's, as a variant
        inside = [c for c in outcome.changes if (root / c.rel).resolve().is_relative_to(root) and c.rel != SET_OVERLAY]
        result.added_inside = added_lines(inside)
        if outcome.proven:
            result.state = "proven"
            result.how = (
                "own DRA switch"
                if any(f.rule == "chart-dra-switch" for f in outcome.findings)
                else "B/C pass-through"
                if any(c.rel.endswith(TEMPLATE_FILE) for c in outcome.changes)
                else "D helper dra.enabled"
                if any(".draCount" in c.after for c in outcome.changes)
                else "A draDevices.enabled"  # beside a `dra:` key of the chart's own (switchname.py)
                if any(c.rel == "values.yaml" and "\ndraDevices:" in c.after for c in outcome.changes)
                else "A dra.enabled"
            )
            write_changes(outcome)
            on_root, on_values = copy_chart(run, Path(tmp) / "on", corpus_module)  # the switch on by default
            on_settings = Settings(kube_version=run.kube or "1.36")
            on_options = ChartOptions(values_files=on_values, set_values=run.sets, kube_version=run.kube)
            on = run_chart(on_root, on_options, rules, on_settings, Target.parse(settings.kube_version), "fix")
            if not on.proven:
                result.checks = f"without --opt-in: {on.manual or on.error}"
            else:
                write_changes(on)
                result.checks = independent_check(
                    run, pristine / root.name, root, (on_root, on_values, on), values, rules
                )
        elif any(f.rule == "chart-dra-switch" for f in outcome.findings):
            result.state, result.how = "proven", "own DRA switch"
        elif outcome.manual:
            result.state, result.detail = "manual", outcome.manual
        elif outcome.error is not None:
            result.state, result.detail = "error", str(outcome.error)
        elif left := [f for f in outcome.findings if f.rule in ("report-only-kind", "unknown-kind")]:
            result.state, result.detail = "reported", left[0].message
    return result


def chosen_runs(charts: Path | None, corpus: Path, only: str) -> tuple[list[Run], Any] | None:
    """The runs of a folder of charts (--charts) or of the corpus whose chart:label contains only, with the corpus
    test module when it is the corpus; None (after saying so) when there is no corpus."""
    corpus_module = None
    if charts is not None:
        runs = folder_runs(charts)
    elif corpus.is_dir():
        runs, corpus_module = corpus_runs(corpus)
    else:
        print(f"skipped: no corpus at {corpus} (it exists only in the dramigrate workspace and CI)")
        return None
    return [r for r in runs if only in f"{r.chart.name}:{r.label}"], corpus_module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--charts", type=Path, help="a folder of charts (with an optional runs.yaml)")
    parser.add_argument("--only", default="", help="only runs whose chart:label contains this text")
    args = parser.parse_args()
    chosen = chosen_runs(args.charts, args.corpus, args.only)
    if chosen is None:
        return 0
    runs, corpus_module = chosen
    from dramigrate.rules import load_rules

    rules = load_rules()
    results: list[Result] = []
    for run in runs:
        name = f"{run.chart.name}:{run.label}"
        try:
            r = measure(run, corpus_module, rules)
        except Exception as exc:  # one chart's failure is a result: the other charts are still measured
            where = traceback.extract_tb(exc.__traceback__)[-1]
            r = Result(run, state="failed", detail=f"{type(exc).__name__} at {where.filename}:{where.lineno}: {exc}")
        results.append(r)
        state = f"{r.state} ({r.how})" if r.how else r.state
        extra = f"  {r.detail[:200]}" if r.detail else ""
        check = f"  CHECK FAILED {r.checks}" if r.checks else ""
        pats = "".join(sorted(r.patterns)) or "-"
        lines = f"+{r.added}/{r.added_inside}/{r.added_chart}"
        print(f"{name:40} {r.took:5.1f}s  {pats:4} {lines:13} {state}{extra}{check}", flush=True)
    by_chart: dict[Path, list[Result]] = {}
    for r in results:
        if r.state not in ("nothing to fix", "reported"):
            by_chart.setdefault(r.run.chart, []).append(r)
    reported = sorted({r.run.chart.name for r in results if r.state == "reported"} - {c.name for c in by_chart})
    proven = {c: rs for c, rs in by_chart.items() if all(r.state == "proven" and not r.checks for r in rs)}
    added = {c: max(r.added for r in rs) for c, rs in proven.items() if any(r.added for r in rs)}
    added_chart = {c: max(r.added_chart for r in rs) for c, rs in proven.items() if any(r.added for r in rs)}
    added_inside = {c: max(r.added_inside for r in rs) for c, rs in proven.items() if any(r.added for r in rs)}
    engine = sum(r.engine for r in results)
    letters = Counter("".join(sorted(set().union(*(r.patterns for r in rs)))) or "-" for rs in by_chart.values())
    print(
        f"\ncharts with device requests: {len(by_chart)}; proven idiomatic (L and D, every run): {len(proven)} "
        f"({100 * len(proven) / max(1, len(by_chart)):.0f}%); engine used: {engine}"
    )
    print("patterns per chart: " + ", ".join(f"{k}: {v}" for k, v in sorted(letters.items())))
    if reported:  # not in the count above: DESIGN.md has fix report these kinds, never rewrite them
        print(
            f"charts whose device requests are all in kinds fix reports and leaves: {len(reported)} "
            f"({', '.join(reported)})"
        )
    if added:
        print(
            f"added lines per rewritten chart: median {statistics.median(added.values()):g}, "
            f"max {max(added.values())} ({', '.join(f'{c.name} {n}' for c, n in sorted(added.items()))})"
        )
        print(
            f"  in the chart's own files (not the -dra.yaml variants of the user's values files beside it): median "
            f"{statistics.median(added_inside.values()):g}, max {max(added_inside.values())}"
        )
        print(
            f"  without any -dra.yaml values variant: median {statistics.median(added_chart.values()):g}, "
            f"max {max(added_chart.values())}"
        )
    for chart, rs in sorted(by_chart.items()):
        if chart not in proven:
            bad = next(r for r in rs if r.state != "proven" or r.checks)
            print(f"  not proven: {chart.name} ({bad.run.label}): {(bad.checks or bad.detail)[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
