"""Helm charts: lint, diff and fix a chart as `helm template` renders it, and rewrite its sources only when
a re-render proves the rewrite.

lint: the chart is rendered with the user's options (render.py; renderpool.py caches the renders of a chart run
and runs independent ones in parallel) and the rendered stream goes through the core (migrate.run_file), as
`helm template ... | dramigrate lint -` would; each finding is moved to the template that wrote it (findingmap.py,
locate.py) and, where a values key drives the count, gets that key's file and line as a related location
(probe.py: found by rendering again with the key changed; chartvalues.py, values.py: where the key is written).

fix and diff: the templates whose renders carry device requests are wrapped (rewrite.py) in a
working copy. The proof renders the original and the rewritten chart for the user's values, the
default values, each -f file, each values file the chart ships that asks for devices, values that change or
switch off each count found, and values that add a device to each resources map; migrating the original
rendering with the core must give the same objects as rendering the rewritten chart. Only then is anything
written (writer.write_atomic); else the chart is reported as needing manual work, with the suggested patch and
the first difference. This module picks the rewrite for the chart's patterns (_fix_idiomatic) and runs it; the
proofs are proveswitch.py and passthroughproof.py, on what outcome.py holds.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from dramigrate.config import Settings
from dramigrate.findings import RULES, Finding, InputError, Location
from dramigrate.helm import patterns
from dramigrate.helm.chartvalues import value_sources
from dramigrate.helm.claimnamespaces import NAMESPACES_APART, namespaces_apart
from dramigrate.helm.clustergated import branch_runs, cluster_gated
from dramigrate.helm.crdfiles import crd_requests
from dramigrate.helm.fileleaf import built_twins, renamed, renamed_rel, working_copy
from dramigrate.helm.findingmap import (
    attach_values,
    map_findings,
    map_helpers_of,
    mapped_repeated_keys,
    mapped_secret_findings,
    named_pattern,
    read_text,
    resolve_source,
)
from dramigrate.helm.foldguards import folded
from dramigrate.helm.labelleaves import label_leaves, pod_labels
from dramigrate.helm.leftout import plan as plan_left_out
from dramigrate.helm.leftwhy import left_lines, left_requests, nothing_left, shared_guards
from dramigrate.helm.locate import source_of, stream_sources
from dramigrate.helm.nullcounts import null_sets, reference_stream
from dramigrate.helm.omitlabels import omittable
from dramigrate.helm.outcome import (
    ADDED_DEVICE,
    ENGINE_HINT,
    OWN_LISTS,
    OWN_TOLERATION,
    ChartOptions,
    ChartOutcome,
    Variation,
    Workdir,
    _by_template,
    _classified,
    _copied_keys,
    _counted,
    _every_by_template,
    _hints,
    _in_umbrella,
    _manual,
    _merge,
    _rewritten_copy,
    _subchart_scopes,
    _switches_usage,
    _templates,
    _values_files,
    _volatile,
    _with_switches,
    fixed_marks,
    in_dependency_sources,
    restore_fixed,
    shipped_files,
    switch_files,
)
from dramigrate.helm.ownswitch import _own_dra_switch, _report_switch, _use_switch
from dramigrate.helm.passthroughproof import _carried, _fix_library_values, _fix_passthrough, fix_placed_values
from dramigrate.helm.patterns import (
    Pattern,
    compared_values,
    helpers_text,
    name_candidates,
    name_keys,
    name_source,
    named_key_in,
)
from dramigrate.helm.probe import DeviceKey, Relation, device_uses, override, probe
from dramigrate.helm.prove import (
    ObjKey,
    documents,
    first_difference,
    load_all,
    object_key,
    objects,
    without_nulls,
)
from dramigrate.helm.proveguards import guard_flips, vendor_flips
from dramigrate.helm.proveswitch import (
    _first_changes,
    _fix_map_built,
    _map_built,
    _maps_left_off,
    _mixed_switch,
    _own_render,
    _Switch,
    _switched_literal,
    prove_switch,
)
from dramigrate.helm.renderpool import (
    CACHE,
    PARALLEL_FROM,
    Render,
    RunCache,
    cached_render,
    generates_keys,
    render_again,
    render_each,
    run_core,
    settled,
)
from dramigrate.helm.rewrite import Change, RewriteError, build_rewrite, chart_name, with_line_ends
from dramigrate.helm.sharedlibrary import library_safe, others_unchanged, shared
from dramigrate.helm.switchname import OWN, build_beside, switch_key
from dramigrate.helm.twins import Twin, archive_writes, random_twin, twin_requests
from dramigrate.helm.values import (
    Leaf,
    Path_,
    ValueSources,
    bumped,
    display,
    get_path,
    inject,
    locate,
    read_tolerations,
    resource_sections,
    resources_maps,
    tolerations_lists,
    twin_path,
    with_paths,
    zero,
)
from dramigrate.limits import check_values_file, read_regular
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

if TYPE_CHECKING:
    from dramigrate.writer import WriteOptions

MAX_VARIATIONS = 28


def split_release(paths: list[str]) -> tuple[str | None, list[str]]:
    """`[RELEASE] CHART ...` as helm takes it: a first argument that is not a path, followed by a chart."""
    from dramigrate.helm.render import is_chart

    first_is_name = len(paths) >= 2 and paths[0] != "-" and not Path(paths[0]).exists()
    if first_is_name and any(p != "-" and is_chart(Path(p)) for p in paths[1:]):
        return paths[0], paths[1:]
    return None, paths


def _no_labels(rules: RuleSet) -> RuleSet:
    stripped = copy.copy(rules)
    stripped.labels = {}
    return stripped


# --- the chart run ----------------------------------------------------------------------------------------------


def run_chart(
    chart: Path, copts: ChartOptions, rules: RuleSet, settings: Settings, target: Target, mode: str
) -> ChartOutcome:
    """mode: lint, diff or fix."""
    from dramigrate.helm.leftout import Wider
    from dramigrate.helm.sandbox import ChartRefused, chart_time_limit, chart_timeout, shared_copies

    display_root = str(chart).rstrip("/") or "."
    outcome = ChartOutcome(chart, display_root, writable=chart.is_dir())
    work = Workdir()
    try:
        root = outcome.root = chart if chart.is_dir() else _unpack(chart, work.path / "unpacked")
        leaves = built_twins(root) if chart.is_dir() else []
        if leaves:  # a subchart packed from a file:// folder: read as an unpacked leaf, changed in its folder
            root = outcome.root = working_copy(root, leaves, work.path / "leaves" / chart.resolve().name)
        with shared_copies(), chart_time_limit(chart_timeout()):
            for narrow in (False, True):
                CACHE.append(RunCache(root, narrow=narrow))
                try:
                    _run(outcome, root, copts, rules, settings, target, mode, work)
                    break
                except Wider:  # the rewritten chart cannot leave out a subchart the renders so far left out
                    work.close()
                    work = Workdir()
                    outcome = ChartOutcome(chart, display_root, writable=chart.is_dir())
                    outcome.root = root
                finally:
                    settled(CACHE.pop())
        if leaves:
            _named_from_folders(outcome, leaves)
    except (InputError, UnicodeDecodeError) as exc:  # nothing is written: no finding says fixed (or fixable)
        outcome.error = exc if isinstance(exc, InputError) else _not_utf8(exc, chart, display_root)
        outcome.changes = []
        for f in outcome.findings:
            f.fixable = f.fixed = False
    except ChartRefused as exc:  # a link out of the chart, a render past its limits: nothing is written
        outcome.error = InputError(exc.message, display_root, rule=exc.rule)  # bad input, said once (not a finding)
        outcome.findings = []
        outcome.changes = []
    except BaseException:  # a stop (SIGTERM), a bug: nothing more is read
        work.close()
        raise
    try:
        _hide_data(outcome, copts)  # before a packed chart's unpacked copy goes
    finally:
        work.close()
    return outcome


def object_name(doc: dict[str, Any]) -> tuple[str, str]:
    """A rendered object's kind and name as a finding gives them (text, whatever the YAML holds: `kind: [Pod]`)."""
    metadata = doc.get("metadata")
    return str(doc.get("kind")), str(metadata.get("name") if isinstance(metadata, dict) else None)


def _hide_data(outcome: ChartOutcome, copts: ChartOptions) -> None:
    """The outcome's findings and messages with what a template rendered from a chart file hidden (sandbox.py)."""
    from dramigrate.helm.filedata import varied_by_files
    from dramigrate.helm.sandbox import hide_finding_data, hide_texts

    root = outcome.root or outcome.chart
    given = [copts.release, copts.namespace or "default", *copts.set_values, *copts.set_string_values]
    for values in copts.values_files:
        with contextlib.suppress(OSError, ValueError):
            given.append(read_regular(values).decode("utf-8", "replace"))
    named = {(f.kind, f.name) for f in outcome.findings}
    objects: list[Any] = []
    with contextlib.suppress(InputError, yaml.YAMLError, RecursionError):  # the core read this render
        objects = [d for d in load_all(outcome.rendered) if isinstance(d, dict) and object_name(d) in named]
    varied = varied_by_files(root, copts.render(), objects) if objects else frozenset()
    texts = hide_finding_data(outcome.findings, outcome.templates, root, "\n".join(given), objects, varied)
    for name in ("manual", "left", "usage"):
        setattr(outcome, name, hide_texts(getattr(outcome, name), texts))


def _named_from_folders(outcome: ChartOutcome, leaves: list[Twin]) -> None:
    """The run's changes, findings and messages on a working copy (fileleaf.working_copy) named from the chart:
    a change to charts/<leaf>/ is one to the leaf's file:// folder (its archive re-packed on write)."""
    outcome.changes = [Change(renamed_rel(c.rel, leaves), c.before, c.after) for c in outcome.changes]
    for f in outcome.findings:
        f.file = renamed(f.file, leaves, outcome.display)
        f.message = renamed(f.message, leaves, outcome.display)
        f.related = [replace(r, file=renamed(r.file, leaves, outcome.display)) for r in f.related]
    for name in ("manual", "patch", "usage"):
        setattr(outcome, name, renamed(getattr(outcome, name), leaves, outcome.display))


def _check_rewritable(root: Path, streams: tuple[str, ...], display_root: str) -> None:
    """What fix refuses in a chart it would rewrite, found before any rewrite so that lint says it too (lint called
    such a chart fixable, exit 1, while fix named it as bad input, exit 2): a template, Chart.yaml or values file
    that is not UTF-8, and a render whose YAML aliases expand past what a manifest may hold (an alias bomb)."""
    bad = _first_undecodable(root, rewritten_only=True)
    if bad is not None:
        raise _not_utf8(bad[1], root, display_root, bad)
    for stream in streams:
        if "&" in stream:  # no anchor, no alias to expand
            load_all(stream)


def _not_utf8(
    exc: UnicodeDecodeError, chart: Path, display_root: str, bad: tuple[str, UnicodeDecodeError] | None = None
) -> InputError:
    """A chart file Helm reads (YAML in UTF-16 with a byte-order mark, Latin-1 bytes in a template) that is not
    UTF-8, met wherever the chart's files are read (was: an internal error): bad input, naming the first such file
    (bad: that file, relative to the chart, and its error, when known)."""
    bad = bad or (_first_undecodable(chart) if chart.is_dir() else None)
    shown = os.path.join(display_root, bad[0]) if bad else display_root
    exc = bad[1] if bad else exc
    return InputError(
        f"not UTF-8 ({exc.reason} at byte {exc.start}): Helm may read it, but dramigrate checks and rewrites only "
        "UTF-8 charts",
        shown,
    )


def _first_undecodable(chart: Path, rewritten_only: bool = False) -> tuple[str, UnicodeDecodeError] | None:
    """The first text file of a chart folder that is not UTF-8 (its path in the chart, and why), or None.
    rewritten_only: only the files a rewrite reads (templates, Chart.yaml and values files, subcharts' too), not
    the chart's other files (a `files/` folder Helm reads as bytes)."""
    for folder, dirs, names in os.walk(chart):
        dirs.sort()
        rel = Path(folder).relative_to(chart)
        for name in sorted(names):
            if rewritten_only and not ("templates" in rel.parts or name == "Chart.yaml" or name.startswith("values")):
                continue
            why = _undecodable(os.path.join(folder, name))
            if why is not None:
                return (rel / name).as_posix(), why
    return None


def _undecodable(path: str) -> UnicodeDecodeError | None:
    if not path.endswith((".yaml", ".yml", ".tpl", ".txt", ".json")) or not os.path.isfile(path):
        return None
    from dramigrate.findings import InputError
    from dramigrate.limits import read_regular

    try:
        read_regular(path).decode("utf-8")  # as large as it is: read(MAX_FILE_BYTES) took 32 MiB for each file
    except UnicodeDecodeError as exc:
        return exc
    except (OSError, InputError):
        return None
    return None


def _unpack(archive: Path, dest: Path) -> Path:
    from dramigrate.helm.sandbox import unpack_chart

    dest.mkdir(parents=True)
    unpack_chart(archive, dest)  # bounded, no links, nothing outside dest (sandbox.py)
    tops = [p for p in dest.iterdir() if (p / "Chart.yaml").is_file()]
    if not tops:
        raise InputError("not a packaged chart: no <name>/Chart.yaml inside", str(archive))
    return tops[0]


FIX_RENDERS = 20  # about the fewest renders of a fix that proves a rewrite (the probe's, the proof's of each value set)


def _run(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    mode: str,
    work: Workdir,
) -> None:
    from dramigrate.helm.helmignore import bad_pattern_line
    from dramigrate.helm.sandbox import check_packed_values, check_subchart_depth, refuse_outside_links

    # before any file of the chart is read: a values.yaml linked out of the chart told, by its bound, what it pointed to
    refuse_outside_links(root, outcome.display)
    check_subchart_depth(root)
    for path in _values_files(root, copts):
        shown = str(path) if path in copts.values_files else f"{outcome.display}/{path.relative_to(root).as_posix()}"
        check_values_file(str(path), shown)
    check_packed_values(root, outcome.display)
    if line := bad_pattern_line(str(root)):  # Helm would fail with `syntax error in pattern`, naming no file nor line
        raise InputError(
            "Helm refuses this .helmignore pattern (syntax error in pattern)", f"{outcome.display}/.helmignore", line
        )
    base_options = copts.render()
    base = cached_render(root, base_options)
    if base.error:
        raise InputError(f"helm: {base.error}", outcome.display)
    if mode != "lint":  # the subcharts the proof's renders may leave out (leftout.py): read off this render
        plan_left_out(root, base_options, base, rules, settings, target, work)

    def probed() -> tuple[dict[DeviceKey, Any], ValueSources, list[Relation]]:
        uses = device_uses(base.stream, rules)
        sources = value_sources(root, outcome.display, copts, base_options)
        return uses, sources, probe(root, copts, sources, uses, rules, work) if uses else []

    from dramigrate.helm.sandbox import prestart_another
    from dramigrate.lifetime import result, settle

    # the probe renders on two workers from its start: a slow render holds up none else (a run with --helm-binary
    # renders with that binary, on no worker); so does a fix of a chart whose render asks for devices and whose renders
    # take long enough that the fix's (FIX_RENDERS) pay for another worker, on which the proof renders anyway: started
    # now, the second worker takes the probe's renders and the proof's first value sets beside the first
    # (nebius-ray-cluster's nine probe renders and six proof renders, 0.1 s each, went one by one on one worker, each
    # batch too short to pay for starting another; a chart of 10 ms renders keeps to one)
    from dramigrate.triage import may_matter

    slow = mode != "lint" and base.took * FIX_RENDERS >= PARALLEL_FROM
    if copts.helm_binary is None and (
        generates_keys(root) or (slow and may_matter(base.stream.encode("utf-8"), rules))
    ):
        prestart_another()
    # the probe's renders run while the base render is migrated and mapped: a thread of its own, since the probe
    # itself waits on the render pool
    own = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dramigrate-probe")
    probing = own.submit(probed)
    own.shutdown(wait=False)  # the thread ends with the probe
    try:
        core = run_core(base.stream, outcome.display, rules, settings, target, fix=mode != "lint")
        if core.error is not None:
            raise _render_error(core.error.message, core.error.line, base.stream, outcome.display)
        outcome.classes = dict(core.classes)
        outcome.templates = list(core.templates)
        outcome.rendered = base.stream + base.rest
        findings = map_findings(core.findings, base.stream, root, outcome.display)
        for part in (base.stream, base.rest):
            findings.extend(mapped_secret_findings(part, root, outcome.display, rules))
        findings.extend(mapped_repeated_keys(base.stream, root, outcome.display))
        findings.extend(crd_requests(root, outcome.display, rules, settings, target))
        if not any(f.rule == "legacy-device-request" for f in findings):  # Helm took one copy of a subchart held twice
            findings.extend(twin_requests(root, outcome.display, base_options, rules, work.path))
        runs = functools.partial(branch_runs, root, base_options, work.path)
        findings.extend(cluster_gated(root, outcome.display, findings, rules, copts.values_files, runs))
    except BaseException:
        settle(probing)  # this error came first, as when the probe ran after it; the probe's own is dropped
        raise
    outcome.findings = findings
    base_uses, sources, relations = result(probing)
    if base_uses:
        attach_values(findings, relations, sources, root, outcome.display)
        attach_label_values(findings, base.stream, rules, sources)
        _repattern(findings, root, outcome.display)
    from dramigrate.detect import explain_requests
    from dramigrate.suppress import suppressed_request
    from dramigrate.terminal import MESSAGES

    for decision in explain_requests(findings, rules):
        MESSAGES.explain(decision)
    why = suppressed_request(findings)
    if mode != "lint" and why:
        MESSAGES.note(f"{outcome.display}: chart not rewritten: {why}")
        _left_as_it_is(findings, "a device request in it is suppressed")
        return
    partial: list[Any] = []  # what a switch of the chart's own leaves on the device plugin (llm-d's accelerator.dra)
    switch = _own_dra_switch(root, copts, sources, base_uses, rules, work, findings, partial) if base_uses else None
    if switch is None and not why and any(f.fixable for f in findings):  # lint says what fix refuses before rewriting
        _check_rewritable(root, (base.stream, base.rest), outcome.display)  # (a switch rewrites no template)
    if switch is not None:
        _report_switch(outcome, switch, sources, root)
        if mode != "lint" and not settings.opt_in:  # --opt-in: the chart's default stays as it is
            _use_switch(outcome, root, switch, copts)
        return
    if mode == "lint":
        if settings.chart_style == "idiomatic" and _library_template(root, findings, rules, outcome):
            # fix may take such a chart another way (a map passed through, a packed library's values places) or
            # leave it to the user: the rewrite decides, tried as diff tries it, for such charts only (lint of
            # others renders nothing more)
            trial = ChartOutcome(outcome.chart, outcome.display, copy.deepcopy(findings), root=root)
            _fix(trial, root, copts, rules, settings, target, work, sources, relations, "diff")
            if trial.manual and not trial.changes:
                _left_as_it_is(findings, "its rewrite is manual work (diff and fix say why)")
        else:
            _untried(findings, root, outcome.display, settings)
        return
    _fix(outcome, root, copts, rules, settings, target, work, sources, relations, mode)
    if not outcome.changes and not outcome.manual:
        outcome.left = nothing_left(findings)
    if outcome.proven:  # a subchart copied from a chart repository: the next dependency build drops the rewrite
        from dramigrate.helm.vendored import vendored_findings

        outcome.findings += vendored_findings(root, outcome.display, [c.rel for c in outcome.changes])
    if outcome.manual and partial:
        from dramigrate.helm.ownswitch import left_by, note, per_object

        scoped = per_object(root, copts, sources, work, partial[0][0], base.stream, outcome.findings)
        note(outcome, left_by(*partial[0], outcome.findings, root, base.stream, scoped))
    if outcome.manual and not outcome.changes:
        _left_as_it_is(outcome.findings, "its rewrite is manual work (chart-rewrite-unproven)")


def _left_as_it_is(findings: list[Finding], why: str) -> None:
    """Findings fix would resolve that it will not in this chart (`why`): neither marked nor counted as fixable."""
    for f in findings:
        if f.fixable:
            f.fixable = f.fixed = False
            f.message += f"; fix leaves this chart as it is: {why}"


def _untried(findings: list[Finding], root: Path, display: str, settings: Settings) -> None:
    """lint's verdict on a chart it does not try to rewrite (lintverdict.py): a refusal fix gives before any rewrite
    (a request from a packaged subchart, a chart name the rewrite cannot write) with its reason, and patterns whose
    rewrite only a try decides (D, E, F) not promised."""
    from dramigrate.helm.lintverdict import packed_refusal, tried_patterns

    if not any(f.fixable for f in findings):
        return
    if why := packed_refusal(root, findings) or _unsafe_name(root) or random_twin(root):
        _left_as_it_is(findings, why)
        return
    tried = tried_patterns(findings, root, display) if settings.chart_style == "idiomatic" else ""
    for f in findings if tried else ():
        if f.fixable:
            f.fixable = False
            f.message += (
                f"; fix tries the rewrite of pattern {tried} and may leave this chart to you: "
                "`dramigrate diff` tries it without writing and says which"
            )


def _variations(
    root: Path, copts: ChartOptions, sources: ValueSources, relations: list[Relation], rules: RuleSet, work: Workdir
) -> list[Variation]:
    """The value sets the proof renders: the user's, the defaults, each -f file, each count changed and
    switched off, each switch flipped, and a device added to every resources map."""
    out: list[Variation] = []
    seen: set[str] = set()

    def add(
        label: str, options: Any, values: dict[str, Any] | None = None, vendor: bool = False, tolerates: tuple = ()
    ) -> None:
        key = json.dumps(values, sort_keys=True, default=str) if values is not None else repr(options)
        if key not in seen and len(out) < MAX_VARIATIONS:
            seen.add(key)
            out.append(Variation(label, options, vendor=vendor, tolerates=tolerates))

    user_given = bool(copts.values_files or copts.set_values or copts.set_string_values)
    add("your values" if user_given else "default values", copts.render())
    if user_given:
        add("default values", copts.render((), sets=False))
        for f in copts.values_files:
            add(f"-f {f}", copts.render((f,), sets=False))
    merged = sources.merged
    limits_alone: list[Path_] = []  # the request of a device count the values give in both sections
    counts: list[tuple[Path_, Path_ | None]] = []  # each count's values path, and its twin: set to null last
    for rel in relations:
        leaf = rel.leaf
        if rel.kind == "count":
            changed = rel.changed if rel.changed is not None else bumped(leaf.value)
            options = [(changed, "changed to"), (zero(leaf.value), "switched off with")]
        else:
            options = [(not leaf.value if isinstance(leaf.value, bool) else zero(leaf.value), "flipped to")]
            if rel.kind == "adds" and not isinstance(leaf.value, bool):  # a number of pods or containers
                options.insert(0, (bumped(leaf.value), "changed to"))
        twin = twin_path(merged, leaf.path) if rel.kind == "count" else None
        limits_alone += [p for p in (leaf.path, twin) if twin is not None and _section(p) == "requests"]
        counts += [(leaf.path, twin)] if rel.kind == "count" else []
        for value, how in options:
            changed = with_paths(merged, [(leaf.path, value)] + ([(twin, value)] if twin is not None else []))
            label = f"{display(leaf.path)} {how} {json.dumps(value)}"
            if twin is not None:  # limits and requests of one device change together, as the API server needs
                label += f" (and {display(twin)})"
            values = override(sources, changed)
            add(label, copts.render((work.values_file(values),), False), values)
    for path, other in _other_names(root, merged, rules):  # pattern E: the name set to another resource it may name
        values, label = _name_changed(sources, merged, path, other)
        add(label, copts.render((work.values_file(values),), False), values)
    for label, changed in vendor_flips(_templates(root, helpers=True), merged, rules):  # each vendor of the key
        values = override(sources, changed)
        add(label, copts.render((work.values_file(values),), False), values, vendor=True)
    for path, literals in compared_values(_templates(root)).items():  # each branch of a vendor choice by name
        for literal in literals:
            if get_path(merged, path) != literal:
                values = override(sources, with_paths(merged, [(path, literal)]))
                label = f"{display(path)} changed to {json.dumps(literal)}"
                add(label, copts.render((work.values_file(values),), False), values)
    maps = resources_maps(merged)
    resource = _probe_resource(rules)
    if maps and resource:
        values = override(sources, inject(merged, maps, resource, 1))
        label = f"{resource}: 1 {ADDED_DEVICE}"
        add(label, copts.render((work.values_file(values),), False), values)
    for label, changed in guard_flips(_templates(root, helpers=True), merged, rules):  # each branch around a device
        values = override(sources, changed)
        add(label, copts.render((work.values_file(values),), False), values)
    # the user's own tolerations in place of the chart's (or of none, also where the values have no such key)
    if tolerations := [*tolerations_lists(merged), *read_tolerations(_templates(root, helpers=True), merged)]:
        own = with_paths(merged, [(path, [dict(OWN_TOLERATION)]) for path in tolerations])
        values = override(sources, own)
        label = OWN_LISTS
        add(label, copts.render((work.values_file(values),), False), values)
        # the user's lists tolerating the devices' taints themselves (GPU values often do): the migration then adds
        # no toleration, nor may the rewrite (a second one); with several devices, also the first alone: the taints
        # are checked one by one (a list tolerating the GPU's taint does not tolerate an EFA NIC's)
        devices = sorted({k[5] for rel in relations for k in rel.keys})
        for some in [devices, devices[:1]] if len(devices) > 1 else [devices] if devices else []:
            listed = [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in some]
            tolerated = with_paths(merged, [(path, listed) for path in tolerations])
            values = override(sources, tolerated)
            label = f"every tolerations list of the values set to tolerate {', '.join(some)}"
            add(label, copts.render((work.values_file(values),), False), values, tolerates=tuple(listed))
    from dramigrate.helm import claimsprobe  # (passthrough, which it reads, reads this module)

    if own_claims := claimsprobe.own_paths(merged):  # the pod's own claims named as the migration names its own
        named = claimsprobe.named_like(rules)
        changed = with_paths(merged, [(path, named) for path in own_claims])
        values = override(sources, changed)
        label = f"every resourceClaims list of the values set to claims named {', '.join(c['name'] for c in named)}"
        add(label, copts.render((work.values_file(values),), False), values)
    for path in dict.fromkeys(limits_alone):  # the limit alone asks for the device (Kubernetes takes the request
        # from it): porter-web keys its own GPU toleration on the request, and the DRA claim on the limit
        values = override(sources, with_paths(merged, [(path, None)]))
        label = f"{display(path)} unset (the limit alone asks for the device)"
        add(label, copts.render((work.values_file(values),), False), values)
    for label, changed in null_sets(merged, counts):  # a count unset: the pod asks for no device (nullcounts.py)
        values = override(sources, changed)
        add(label, copts.render((work.values_file(values),), False), values)
    for path in _left_alone_names(root, merged, rules):  # pattern E: a name the migration leaves alone
        values, label = _name_changed(sources, merged, path, LEFT_ALONE)
        add(label, copts.render((work.values_file(values),), False), values)
    if (apart := namespaces_apart(merged)) is not None:  # each pod's claim template in its namespace, past the cap
        values = override(sources, apart)
        out.append(Variation(NAMESPACES_APART, copts.render((work.values_file(values),), False)))
    return out


def _name_changed(sources: ValueSources, merged: dict[str, Any], path: Path_, name: str) -> tuple[dict[str, Any], str]:
    """The values with the device resource name at `path` changed to `name`, and its label: with the name of the other
    section when the values name the device alike in a limit and its request (ovms' `limits.xpu_device` and
    `requests.xpu_device`), as the API server needs an extended resource's request to name its limit's."""
    label, twin = f"{display(path)} changed to {json.dumps(name)}", twin_path(merged, path)
    if twin is not None:
        label = f"{label} (and {display(twin)})"
    changed = with_paths(merged, [(path, name)] + ([(twin, name)] if twin is not None else []))
    return override(sources, changed), label


def _section(path: Path_) -> str:
    """`limits` or `requests`: the section of a resources map a count's values path is in ('' when none)."""
    return next((str(p) for p in reversed(path[-2:]) if p in ("limits", "requests")), "")


# a device resource no rule pack knows, which the migration leaves on its device plugin
LEFT_ALONE = "example.org/accelerator"


def _left_alone_names(root: Path, merged: dict[str, Any], rules: RuleSet) -> list[Path_]:
    """Each values key a workload template writes as a device key's name (pattern E) that names a resource the packs
    migrate: the proof sets it to LEFT_ALONE, whose request `fix -` keeps on the device plugin, as the chart must."""
    if rules.lookup(LEFT_ALONE) is not None:
        return []
    out = []
    for path, default in name_keys(_templates(root), helpers_text(root)).items():
        current = get_path(merged, path)
        current = default if current is None else current
        if isinstance(current, str) and name_candidates(current, rules):
            out.append(path)
    return out


def _other_names(root: Path, merged: dict[str, Any], rules: RuleSet) -> list[tuple[Path_, str]]:
    """Each values key a workload template writes as a device key's name (pattern E), with each other device resource
    the idiomatic rewrite looks that name up among (name_candidates); helpers (`_*.tpl`) are the helper rewrite's."""
    out = []
    helpers = helpers_text(root)
    for path, default in name_keys(_templates(root), helpers).items():
        current = get_path(merged, path)
        current = default if current is None else current
        if isinstance(current, str):
            out += [(path, other) for other in name_candidates(current, rules)[1:]]
    for text in _templates(root):  # a name a helper maps values to: each string its branches compare (a vendor)
        keys = {k[0] for line in text.splitlines() if (k := named_key_in(line, text, helpers))}
        for expr in sorted(keys):
            source = name_source(expr, text + helpers)
            for path, literal, name in source.choices if source else ():
                if get_path(merged, path) != literal and rules.lookup(name) is not None:
                    out.append((path, literal))
    return list(dict.fromkeys(out))


def _render_error(message: str, line: int | None, stream: str, display: str) -> InputError:
    """The chart's rendered output does not parse: named by the template that wrote the line (and the line in its
    output), since the user never sees the rendered stream. (A repeated key is no error here: the render is read as
    Helm reads it, mapped_repeated_keys.)"""
    part = source_of(stream_sources(stream), line) if line else None
    if part is None or not part.source:
        return InputError(f"rendered output: {message}", display, line)
    template = part.source.split("/", 1)[-1]
    where = f"line {line - part.start + 1} of it"
    return InputError(f"its rendered output does not parse ({where}): {message}", f"{display}/{template}")


def _probe_resource(rules: RuleSet) -> str:
    """A whole-device resource the packs migrate, for the added-device probe: nvidia.com/gpu if known."""
    whole = [r.match for r in rules.resources if r.match and not r.report_only and r.device_class]
    return "nvidia.com/gpu" if "nvidia.com/gpu" in whole else (whole[0] if whole else "")


def _fix(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    work: Workdir,
    sources: ValueSources,
    relations: list[Relation],
    mode: str,
) -> None:
    if why := random_twin(root):  # the chart's own renders differ: no proof can hold
        _manual(outcome, why, "")
        return
    variations = _variations(root, copts, sources, relations, rules, work)
    if settings.chart_style == "idiomatic" and _helper_likely(outcome, root, rules):
        from dramigrate.helm.helper import start_marked_render  # wanted after the migrations: rendered beside them

        start_marked_render(root, work, copts.render(), rules)
    nolabels = _no_labels(rules)
    given = {"your values", "default values"} | {f"-f {f}" for f in copts.values_files}
    wanted: dict[str, set[str]] = {}
    wanted_given: dict[str, set[str]] = {}  # templates with device requests under the values users give
    # ... under the value sets the proof derives that render what the templates write (_own_render; not the shipped
    # values files, whose subcharts fix leaves are proven without a DRA variant, said)
    wanted_own: dict[str, set[str]] = {}
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]] = []
    rewrite = literal_labels = False
    set_by: dict[tuple[Any, ...], bool] = {}

    v0 = variations[0]  # the user's values (or the defaults): the tolerating value sets differ only in their lists

    def migrate(v: Variation, r: Render) -> bool:
        """Migrate one value set's render into `expected`; False when the chart is manual work (said). A shipped values
        file that does not render or asks for no device is left out (it proves nothing about the rewrite)."""
        nonlocal rewrite, literal_labels
        if v.tolerates and (r.error or not _carried(r.stream, v.tolerates, cached_render(root, v0.options).stream)):
            # the chart does not render such a list as given (one item a line; two items' later lines outside the
            # list repeat their keys, and it does not render at all): it stands for no user's
            return True
        if r.error:
            if not v.shipped:
                expected.append((v, r, "", []))
            return True
        stream = reference_stream(r.stream, rules)  # a null count asks for no device (nullcounts.py)
        full = run_core(stream, outcome.display, rules, settings, target, fix=True, objects=True)
        if v.shipped and _text(full, stream) == stream:
            return True
        if v.switches and not _asks_elsewhere(root, (v, r, _text(full, stream)), expected, given):
            return True  # the same templates ask for the devices as with the user's values: nothing new to prove
        own = value_sources(root, outcome.display, copts, v.options) if v.shipped else sources
        invalid = [f for f in full.findings if f.rule == "invalid-count"]
        v.invalid = invalid[0].message if invalid else ""
        v.invalid_objects = frozenset((f.kind, f.namespace, f.name) for f in invalid)
        result, notes = full, []
        if rules.labels and pod_labels(r.stream).keys() & set(rules.labels):
            bare = run_core(stream, outcome.display, nolabels, settings, target, fix=True, objects=True)
            if _text(bare, stream) != _text(full, stream):
                from_values = _labels_from_values(r.stream, rules, own.merged)
                # probed in this value set's own render: a label only another branch writes (gpu.vendor changed to
                # nvidia from a run with amd values) is not in the user's render, where changing its leaf shows nothing
                probed = own if v.shipped else value_sources(root, outcome.display, copts, v.options)
                if from_values and _labels_set_by(root, copts, probed, work, from_values, set_by, v.options):
                    if not omittable(root, from_values, rules):  # else the DRA branch omits them (omitlabels.py)
                        result, notes = bare, from_values
                else:
                    literal_labels = True
        v.left = left_requests(result.findings)
        parts = stream_sources(r.stream)
        fixable = [f for f in result.findings if f.fixable]
        if fixable and v.label in given:
            rewrite = True
        for f in fixable:
            part = source_of(parts, f.line)
            if part is None:
                continue
            try:
                sub, rel = resolve_source(root, part.source)
            except RewriteError as exc:
                if v.label.endswith(ADDED_DEVICE):
                    continue  # the probe's device in a packaged subchart's resources map (milvus' minio): no template
                    # of the chart asks for it, and that value set is only checked with the switch off
                _manual(outcome, str(exc), "")
                return False
            wanted.setdefault(sub, set()).add(rel)
            if v.label in given:
                wanted_given.setdefault(sub, set()).add(rel)
            if _own_render(v, r) and not v.shipped:
                wanted_own.setdefault(sub, set()).add(rel)
        want = _text(result, stream)
        expected.append((v, r, r.stream if want == stream else want, notes))
        return True

    # the value sets the user gives come first: they decide what to rewrite, and a chart whose objects a library
    # chart writes ends there, before the other value sets are rendered and migrated
    split = next((i for i, v in enumerate(variations) if v.label not in given), len(variations))
    for v, r in _rendered(root, variations[:split]):
        if not migrate(v, r):
            return
    own = _own_templates(outcome, root, wanted_given, expected, given, rules, settings) if rewrite else None
    if rewrite and (
        why := _unsafe_name(root)
        or (own and _library_only(own, root, rules, settings, work))
        or _mixed_pod(outcome, root, wanted_given, settings)
        or (own and _no_rewrite_shape(own, root, rules, settings, work, relations))
    ):
        _manual(outcome, why, "")
        return
    if not rewrite:
        return
    # the proof's other value sets: the chart's shipped values files first, then those derived from the values
    files = shipped_files(outcome, root, copts, rules)
    shipped = [Variation(f"-f {p}", copts.render((p,), sets=False), shipped=True) for p in files]
    shipped += [
        Variation(f"-f {p}", copts.render((p,), sets=False), shipped=True, switches=True)
        for p in switch_files(root, copts, rules)
    ]
    render_again(root, [v.options for v in variations])  # a proof follows: the second renders of slow value sets
    for v, r in _rendered(root, [*shipped, *variations[split:]]):
        render_again(root, [v.options])
        if not migrate(v, r):
            return
    if settings.chart_style == "idiomatic":
        # a subchart the user's values leave off (`vllm.enabled: false`) whose device request a value set of the
        # proof turns on is rewritten too: the proof compares that render with its migration (peoplemesh's vllm)
        turned_on = {sub: rels for sub, rels in wanted_own.items() if sub and sub not in wanted_given}
        taken = {**wanted_given, **turned_on}
        _fix_idiomatic(outcome, root, copts, rules, settings, target, work, taken, expected, given, mode, relations)
        if outcome.changes and not outcome.manual:
            _note_labels(outcome, root, expected, sources)
        return
    try:
        changes = build_rewrite(root, wanted, rules, settings, target)
    except RewriteError as exc:
        _manual(outcome, f"a workload template cannot be wrapped: {exc}", "")
        return
    except (OSError, UnicodeDecodeError) as exc:
        _manual(outcome, f"cannot read a template: {exc}", "")
        return
    outcome.changes = changes
    patch = outcome.diff()
    copy_root = _rewritten_copy(root, changes, work)
    for v, original, want, _ in expected:
        new = cached_render(copy_root, v.options)
        if original.error:
            if not new.error:
                _manual(
                    outcome,
                    f"with {v.label}, the original chart fails to render ({original.error}) "
                    "but the rewritten one renders",
                    patch,
                )
                return
            continue
        if new.error:
            _manual(outcome, f"with {v.label}, the rewritten chart does not render: {new.error}", patch)
            return
        expected_objects = without_nulls(_merge(objects(want), objects(original.rest)))  # a null count: no key
        got = without_nulls(objects(new.stream + new.rest))
        diff = first_difference(expected_objects, got)  # equal: the second render (what to mask) is not read
        if diff:
            diff = first_difference(expected_objects, got, _volatile(original, cached_render(root, v.options, True)))
        if diff:
            why = (
                "the pods select nodes by device labels that a template writes itself (the core moves them into "
                "the claim's selectors, the chart helper does not); "
                if literal_labels
                else ""
            )
            _manual(
                outcome,
                f"{why}with {v.label}, the rewritten chart renders differently from the migrated original "
                f"rendering: {diff}",
                patch,
            )
            return
        outcome.checked.append(v.label)
    _note_labels(outcome, root, expected, sources)
    if not outcome.writable and mode == "fix":
        _manual(
            outcome,
            "a packaged chart is not rewritten in place: unpack it (tar xzf) and run fix on the "
            "folder; the patch below was proven",
            patch,
        )
        outcome.patch_proven = True


def _note_labels(outcome: ChartOutcome, root: Path, expected: list[Any], sources: ValueSources) -> None:
    """The warning that node-label hacks from values stay on the pods of a proven rewrite (the proof compared them
    with the migration that leaves them), on the values key that sets the first (in the user's values, else in the
    chart's shipped values file that sets it)."""
    label_notes = sorted({(key, leaf.path) for _, _, _, notes in expected for key, leaf in notes})
    if not label_notes:
        return
    shipped = [(f"{outcome.display}/{p.relative_to(root).as_posix()}", p) for p in _shipped_with_notes(expected)]
    where = locate(label_notes[0][1], replace(sources, files=[*shipped, *sources.files]))
    streams = [r.stream for _, r, *_ in expected if not r.error]
    soft = [
        key
        for key, _ in label_notes
        if all(key in _preferred_presence(stream, True) for stream in streams if key in pod_labels(stream))
    ]
    how = "translate them by hand with the claim's selectors"
    if len(soft) == len(label_notes):  # a preference ranks nodes and requires nothing: it may stay as it is
        how = (
            "they are preferred node affinity only, which ranks nodes and requires nothing, so the pods keep "
            "preferring those nodes while the claim asks for any device of its class; to have the claim itself "
            "prefer the model, give its claim template a firstAvailable list with those values as CEL selectors "
            "(as `helm template ... | dramigrate fix -` writes it) and leave the affinity's values out"
        )
    outcome.findings.append(
        Finding(
            "chart-label-from-values",
            RULES["chart-label-from-values"][0],
            "node-label hacks that come from values stay on the pods (the chart cannot translate them into "
            "CEL selectors): " + "; ".join(f"{key} from {display(path)}" for key, path in label_notes) + f"; {how}",
            where.file or f"{outcome.display}/values.yaml",
            where.line,
        )
    )


def _asks_elsewhere(root: Path, shown: tuple[Variation, Render, str], expected: list[Any], given: set[str]) -> bool:
    """Whether the migration of a value set's render (`shown`: the set, its render and that migrated) changes the
    objects of a template of the chart it changes in none of the renders of the user's value sets (`given`) in
    `expected`: a shipped file that switches to another workload (`mode: job`) then asks for devices there, and the
    proof renders it with the DRA values too."""
    known = _changed_templates(root, expected, lambda v, r: v.label in given)
    return bool(_changed_templates(root, [(*shown, [])], lambda v, r: True).keys() - known.keys())


def _shipped_templates(root: Path, expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]]) -> set[str]:
    """The chart's own templates whose objects the migration of a shipped values file's render changes: a file that
    renders another workload (coreweave's LeaderWorkerSet, helix-sandbox's StatefulSet) has it rewritten too."""
    return set(_changed_templates(root, expected, lambda v, r: v.shipped and not v.switches))


def _alike_templates(
    outcome: ChartOutcome, root: Path, expected: list[Any], rels: set[str], rules: RuleSet
) -> set[str]:
    """The templates a shipped values file without a device key switches to (switch_files) whose device request has
    the one pattern of the templates the rewrite takes (`rels`): rewritten with them (a Job beside the Deployment,
    both passing `resources` through). One of another shape is left to the proof, which fails on it while it asks
    for the device plugin's devices with the DRA values on (vLLM production-stack's Deployment beside the
    RayCluster its raycluster values render, which its other rewrite takes)."""
    switched = set(_changed_templates(root, expected, lambda v, r: v.switches)) - rels
    letters = {h.letter for h in _hints(outcome, root, "", rels, rules).values()} if switched else set()
    if len(letters) != 1:
        return set()
    return {rel for rel, h in _hints(outcome, root, "", switched, rules).items() if h.letter in letters}


def _switched_passthrough(
    outcome: ChartOutcome, root: Path, rels: set[str], rules: RuleSet, switched: dict[str, str]
) -> set[str]:
    """The templates that ask for devices only in a value set of the proof that turns them on (`switched`,
    _switched_templates: `if eq "comfyui" .Values.runtime.type` where the values choose "sdwebui") and pass a resources
    map through (B, C), when a template the rewrite takes (`rels`) passes one through too: rewritten with them, so
    the pods of either branch take the claims values-dra.yaml puts beside the map."""
    if not any(h.letter in ("B", "C") for h in _hints(outcome, root, "", rels, rules).values()):
        return set()
    turned = _hints(outcome, root, "", set(switched) - rels, rules)
    return {rel for rel, h in turned.items() if h.letter in ("B", "C")}


def _changed_templates(
    root: Path,
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    which: Callable[[Variation, Render], bool],
) -> dict[str, str]:
    """The chart's own templates whose objects the migration changes in the renders of the value sets `which` takes,
    each with the first such set's label."""
    from dramigrate.helm.rewrite import chart_name

    name, out = chart_name(root), {}
    for v, r, want, _ in expected:
        if which(v, r):
            before, after = _by_template(r.stream, name), _by_template(want, name)
            for rel, docs in after.items():
                if rel.startswith("templates/") and before.get(rel) != docs and (root / rel).is_file():
                    out.setdefault(rel, v.label)
    return out


def _switched_templates(
    root: Path, expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]]
) -> dict[str, str]:
    """_changed_templates of the value sets that render what the templates write (_own_render): a workload behind
    its own switch (`if .Values.<profile>.enabled`) that the values leave off, which the proof turns on."""
    return _changed_templates(root, expected, _own_render)


def _shipped_with_notes(expected: list[Any]) -> list[Path]:
    """The shipped values files (Variation.shipped) whose value sets have node-label notes."""
    return [Path(v.options.values_files[0]) for v, _, _, notes in expected if v.shipped and notes]


def _rendered(root: Path, variations: list[Variation]) -> Iterator[tuple[Variation, Render]]:
    """Each value set with its render, as the later ones still render (the caller's work overlaps them)."""
    return zip(
        variations, render_each([functools.partial(cached_render, root, v.options) for v in variations]), strict=True
    )


def _text(result: Any, original: str) -> str:
    return result.rewritten if result.rewritten is not None else original


def _labels_from_values(stream: str, rules: RuleSet, merged: dict[str, Any]) -> list[tuple[str, Leaf]]:
    """The label hacks of the rendered pods with the values leaves that set them; empty when one is not
    set by values. A label keyed in several places of the values (jellyfin's values-example.yaml: a nodeSelector and
    a node affinity expression) comes with each, so that _labels_set_by changes them all."""
    from dramigrate.helm.values import walk

    found = label_leaves(stream, rules, merged)
    soft = _preferred_presence(stream)
    if any(leaf is None and key in soft for key, leaf in found.items()):  # kept on the pods like the others
        found = {key: leaf for key, leaf in found.items() if not (leaf is None and key in soft)}
    if not found or any(leaf is None for leaf in found.values()):
        return []
    leaves = list(walk(merged))
    out = []
    for key, first in found.items():
        if first is not None:  # all are (above)
            same = [leaf for leaf in leaves if (leaf.path and leaf.path[-1] == key) or leaf.value == key]
            out += [(key, leaf) for leaf in [first, *(leaf for leaf in same if leaf.path != first.path)]]
    return out


def _preferred_presence(stream: str, valued: bool = False) -> set[str]:
    """Node label keys the rendered pods name only in preferred node affinity terms, each with `Exists` (or
    `DoesNotExist`) and no value: a soft preference for nodes that have the label (cyberun's comfyui ranks
    `nvidia.com/gpu.present` nodes below those of the model `.Values.gpus` names). It selects no model the claim would
    need, so beside a label that comes from values it stays on the pods with that one (the proof compares with the
    migration that leaves labels), never translated by the template. `valued`: those named only in preferred terms,
    whatever their operator."""
    soft: set[str] = set()
    hard: set[str] = set()  # keys of nodeSelectors, required terms and preferred terms with values

    def walk(node: Any, preferred: bool) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("nodeSelector"), dict):
                hard.update(str(k) for k in node["nodeSelector"])
            exprs = node.get("matchExpressions")
            for e in exprs if isinstance(exprs, list) else []:
                if isinstance(e, dict):
                    bare = valued or (e.get("operator") in ("Exists", "DoesNotExist") and not e.get("values"))
                    (soft if preferred and bare else hard).add(str(e.get("key")))
            for key, value in node.items():
                walk(value, preferred or key == "preferredDuringSchedulingIgnoredDuringExecution")
        elif isinstance(node, list):
            for value in node:
                walk(value, preferred)

    try:
        for doc in documents(stream):
            walk(doc, False)
    except yaml.YAMLError:
        return set()
    return soft - hard


def _labels_set_by(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    work: Workdir,
    found: list[tuple[str, Leaf]],
    cache: dict[tuple[Any, ...], bool],
    options: Any = None,
) -> bool:
    """Whether the values leaves label_leaves paired with the pods' device labels do set them: the chart rendered
    with each leaf changed selects otherwise. A leaf found by its text alone (an unread affinity block in values.yaml
    spelling `key: nvidia.com/gpu.product` beside a label the template writes itself) is not the label's source, and
    the label is then the template's, which the rewrite moves into the claim's selectors. `options`: the value set
    `sources` holds the values of (a shipped values file; the user's by default). One render per set of leaves and
    value set, cached in `cache`."""
    options = copts.render() if options is None else options
    key = (repr(options), *((label, leaf.path) for label, leaf in found))
    if key not in cache:
        changed = with_paths(sources.merged, [(leaf.path, f"{leaf.value}-dramigrate-probe") for _, leaf in found])
        before = pod_labels(cached_render(root, options).stream)
        new = cached_render(root, copts.render((work.values_file(override(sources, changed)),), sets=False))
        after = pod_labels(new.stream) if not new.error else {}
        cache[key] = all(after.get(label) != before.get(label) for label, _ in found)
    return cache[key]


def attach_label_values(findings: list[Finding], stream: str, rules: RuleSet, sources: ValueSources) -> None:
    """Findings about node-label hacks get the values key that sets the label as a related location."""
    leaves = {k: v for k, v in label_leaves(stream, rules, sources.merged).items() if v is not None}
    for f in findings:
        for key, leaf in leaves.items():
            if key in f.message and not f.resource:
                loc = locate(leaf.path, sources)
                located = Location(loc.file or "values", loc.line, 0, f"{display(leaf.path)} sets this node label")
                if located not in f.related:
                    f.related.append(located)


def write_changes(outcome: ChartOutcome, options: WriteOptions | None = None) -> int:
    """Write a proven rewrite into the chart folder; the number of files written. Every file is checked before the
    first is written: the proof holds for all the changes together, so one refused file (read-only, changed since it
    was read) leaves the chart as it was (was: templates and Chart.yaml written, values.yaml refused, 0 reported),
    and so does a full disk (write_group)."""
    from dramigrate.writer import write_group

    writes = planned_writes(outcome, options)
    for path, _, _ in writes:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_group(writes, options)  # all or none (disk full)
    return len(writes)


def planned_writes(
    outcome: ChartOutcome, options: WriteOptions | None = None
) -> list[tuple[Path, str | bytes, bytes | None]]:
    """The writes of a chart's rewrite (path, new text, the bytes it holds now), each checked as write_changes
    checks it (InputError for the first it would refuse); writes nothing, so diff asks it too."""
    from dramigrate.writer import check_writable

    top = outcome.chart.resolve()
    writes: list[tuple[Path, str | bytes, bytes | None]] = []
    for c in outcome.changes:
        path = outcome.chart / c.rel
        if not Path(c.rel).is_absolute() and top not in path.resolve().parents:  # an -f file is named by the user
            raise InputError("a symlink whose target is outside the chart; not written through it", str(path))
        if c.before is None and path.exists():
            raise InputError("appeared since it was read; not overwritten (run again)", str(path))
        c = with_line_ends(path, c)
        expected = None if c.before is None else c.before.encode("utf-8")
        if c.before is not None:
            check_writable(path, expected, options)
        writes.append((path, c.after, expected))
    for rel, before, data in archive_writes(outcome.chart, outcome.changes):  # the folder's .tgz twin (twins.py)
        check_writable(outcome.chart / rel, before, options)
        writes.append((outcome.chart / rel, data, before))
    if options is not None and options.backup:
        _check_backups(outcome.chart, [path for path, _, before in writes if before is not None], options.backup)
    return writes


def _check_backups(chart: Path, paths: list[Path], suffix: str) -> None:
    """Refuse --backup where Helm would load the backup with the chart: every file under templates/ is rendered
    (`pod.yaml.orig` asked for the devices again beside the migrated pod) and every file under charts/ is read as
    a subchart; unless the chart's .helmignore leaves it out."""
    from dramigrate.helm.helmignore import helmignore

    ignored = helmignore(str(chart))
    for path in paths:
        try:
            rel = path.relative_to(chart).as_posix() + suffix
        except ValueError:  # an -f values file the user named, outside the chart
            continue
        if rel.split("/", 1)[0] in ("templates", "charts") and not ignored(rel, False):
            raise InputError(
                f"--backup: Helm would load {rel} with the chart (every file under templates/ is a template, every "
                f"file under charts/ a subchart), so the chart is not written: list `*{suffix}` in its .helmignore, "
                "or fix it without --backup",
                str(path),
            )


def chart_options(opts: Any, release: str | None) -> ChartOptions:
    return ChartOptions(
        release=release or "release-name",
        values_files=tuple(Path(p) for p in opts.values_files),
        set_values=tuple(opts.set_values),
        set_string_values=tuple(opts.set_string_values),
        namespace=opts.namespace,
        kube_version=opts.kube_version,
        api_versions=tuple(opts.api_versions),
        helm_binary=Path(opts.helm_binary) if opts.helm_binary else None,
    )


def stream_related(findings: list[Finding], text: str) -> None:
    """Findings on a rendered stream (stdin) get the template each document came from as a related
    location: `# Source:` comments or the Helm 4 post-renderer filename annotation."""
    parts = stream_sources(text)
    if not parts:
        return
    for f in findings:
        part = source_of(parts, f.line)
        if part is not None:
            note = f"rendered from this template (line {f.line - part.start + 1} of its output)"
            f.related.append(Location(part.source, 0, 0, note))


def valid_yaml(text: str) -> bool:
    """Whether a stream parses as YAML (what a post-renderer must hand back to Helm)."""
    try:
        for _ in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            pass
    except yaml.YAMLError as exc:
        print(f"dramigrate: the manifests are not valid YAML: {exc}", file=sys.stderr)
        return False
    return True


def run_charts(ctx: Any, opts: Any, mode: str, result: Any) -> list[ChartOutcome]:
    """Every chart of the run, in input order; findings, classes and errors go into the run's result. A chart still
    at work after a few seconds is named on standard error (progress.py), on a terminal or in a CI log."""
    from dramigrate.progress import Progress
    from dramigrate.terminal import use_color

    copts = chart_options(opts, ctx.release)
    outcomes = []
    if ctx.inputs.charts and copts.helm_binary is None:
        from dramigrate.helm.sandbox import prestart

        prestart()
    doing = "being rendered" if mode == "lint" else "being rendered and its rewrite proven"
    total = len(ctx.inputs.charts)
    with Progress(not opts.quiet, use_color(sys.stderr, opts.color), "charts") as progress:
        for done, chart in enumerate(ctx.inputs.charts):
            with progress.item(str(chart), doing, f"chart {done + 1} of {total}"):
                _run_one(chart, copts, ctx, mode, result, outcomes)
            progress.update(done + 1, total)
    result.findings.sort(key=Finding.sort_key)
    return outcomes


def _run_one(chart: Any, copts: Any, ctx: Any, mode: str, result: Any, outcomes: list[ChartOutcome]) -> None:
    """One chart of run_charts: its outcome appended, its findings, classes and error in the run's result."""
    from dramigrate.migrate import FileResult, failed_file

    try:
        outcome = run_chart(Path(chart), copts, ctx.rules, ctx.settings, ctx.target, mode)
    except Exception as exc:  # one chart's failure is that chart's finding; the other charts go on
        failed = failed_file(str(chart), exc, "checking the chart")
        result.scanned += 1
        result.files.append(failed)
        result.findings.extend(failed.findings)
        result.bad_input += 1
        return
    outcomes.append(outcome)
    result.scanned += 1
    if outcome.error is not None:
        if not outcome.error.file:
            outcome.error.file = outcome.display
        result.files.append(FileResult(outcome.display, error=outcome.error, findings=outcome.findings))
        result.findings.extend(outcome.findings)
        result.bad_input += 1
        return
    result.files.append(
        FileResult(outcome.display, findings=outcome.findings, classes=outcome.classes, templates=outcome.templates)
    )
    result.findings.extend(outcome.findings)
    for name, cls in outcome.classes.items():
        result.classes.setdefault(name, cls)


# --- the idiomatic rewrite (idiomatic.py) and its proof -----------------------------------------------------


def _alternative(
    name: str,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    docs: list[dict[str, Any]],
    resource: str,
    other: str,
    renders: tuple[tuple[str, str], ...] = (),
    live: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """A template's objects with each container asking for `other` where it asks for `resource` (the same count),
    their migration and its ResourceClaimTemplates by name: what the migration adds in the other branch of a vendor
    choice (`if .Values.intel }}gpu.intel.com/i915{{ else }}nvidia.com/gpu`) that the render did not take. With
    `live`, instead, the branch as a value set of the proof renders it (`renders`: each render's stream and its
    migration), nothing when none does: the lines that branch writes besides the device key (dell's
    `nvidia.com/gpu.product` nodeSelector under `if regexMatch "nvidia"`) are then in what the migration adds (the
    label moved into the claim)."""
    if live:
        found = (_live_branch(docs, before, after, resource, other) for before, after in renders)
        return next((f for f in found if f), ([], [], {}))
    renamed = copy.deepcopy(docs)
    for holder, section in resource_sections(renamed):
        if resource in (own := holder[section]):
            holder[section] = {other if k == resource else k: v for k, v in own.items()}
    stream = "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in renamed)
    out = [d for d in load_all(_text(run_core(stream, name, rules, settings, target, fix=True), stream)) if d]
    templates = {str(d["metadata"]["name"]): d for d in out if d.get("kind") == "ResourceClaimTemplate"}
    return renamed, [d for d in out if d.get("kind") != "ResourceClaimTemplate"], templates


def _live_branch(
    docs: list[dict[str, Any]], before: str, after: str, resource: str, other: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]] | None:
    """The objects of one render that are `docs` (by kind, namespace and name, or generateName, as the proof pairs
    objects), when they ask for `other` and not `resource`, with their migration (`after`) and its
    ResourceClaimTemplates by name; None when that render has not each of them once, or they ask otherwise."""

    def by_key(found: list[Any]) -> dict[ObjKey, list[dict[str, Any]]]:
        out: dict[ObjKey, list[dict[str, Any]]] = {}
        for d in found:
            if isinstance(d, dict):
                out.setdefault(object_key(d), []).append(d)
        return out

    olds, news = by_key(load_all(before)), by_key(load_all(after))
    keys = [object_key(d) for d in docs]
    if not keys or any(len(olds.get(k, [])) != 1 or len(news.get(k, [])) != 1 for k in keys):
        return None  # not there, or not told apart from another object of that kind, namespace and name
    asked = {str(n) for k in keys for holder, section in resource_sections(olds[k][0]) for n in holder[section]}
    if other not in asked or resource in asked:
        return None
    templates = {
        str(d["metadata"]["name"]): d for ds in news.values() for d in ds if d.get("kind") == "ResourceClaimTemplate"
    }
    return [olds[k][0] for k in keys], [news[k][0] for k in keys], templates


def _through_includes(rels: set[str], defines: dict[str, str]) -> set[str]:
    """The templates to change: a template that only includes a define (`{{ include "nim.common.v1.deployment" . }}`
    from an unpacked library chart) stands for the file of that define (`defines`: _define_files), where its finding
    points (map_findings)."""
    return (set(rels) - set(defines.values())) | set(defines)


def _define_files(outcome: ChartOutcome, sub: str, rels: set[str]) -> dict[str, str]:
    """Each file of a define that writes a device request of a template of `rels` (relative to the chart `sub`), with
    that template, whose line includes it: the objects the render names by the template are the define's."""
    prefix = f"{outcome.display}/{sub + '/' if sub else ''}"
    out: dict[str, str] = {}
    for f in outcome.findings:
        via = [r for r in f.related if r.note.startswith("this line includes ") and r.file.startswith(prefix)]
        if f.resource and via and f.file.startswith(prefix) and via[0].file[len(prefix) :] in rels:
            out.setdefault(f.file[len(prefix) :], via[0].file[len(prefix) :])
    return out


def _repattern(findings: list[Finding], root: Path, display: str) -> None:
    """A finding named pattern B or C from a values map its line reads, where the device count comes from values
    keys outside that map (the line is in the other branch of an `if`), named again with those keys known."""
    helpers = functools.cache(map_helpers_of)  # a chart folder's, read for a helper line only, once
    for f in findings:
        named = re.search(r"\[chart (pattern [BC] \([^)]*\))\]", f.message)
        if named is None or not (counted := _counted(f)) or not f.file.startswith(f"{display}/"):
            continue
        path = root / f.file[len(display) + 1 :]
        if (text := read_text(path)) is None:
            continue
        chart = next((p for p in path.parents if (p / "Chart.yaml").is_file()), root)  # the template's own chart
        pattern = named_pattern(text, f.line, f.resource, functools.partial(helpers, chart), counted)
        if pattern.describe() != named.group(1):
            f.message = f.message.replace(named.group(0), f"[chart {pattern.describe()}]")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _unsafe_name(root: Path) -> str:
    """Why the chart's name cannot go into the template strings the rewrite writes (`include "NAME.draClaimSpec"`):
    a quote or braces in it would become template code; "" when it can."""
    name = chart_name(root)
    if _PLAIN_NAME.fullmatch(name):
        return ""
    return (
        f"Chart.yaml: the chart name `{name}` has characters other than letters, digits, `.`, `_` and"
        " `-`, and the rewrite writes it into template strings: rename the chart (Helm's convention: lowercase"
        " letters, digits and dashes) or migrate it by hand (docs/helm.md)"
    )


def _mixed_pod(outcome: ChartOutcome, root: Path, wanted: dict[str, set[str]], settings: Settings) -> str:
    """Why an idiomatic fix is manual work when one pod of the chart's own templates asks for devices both through a
    named helper (pattern D) and through a values map or key (A, B, C, E): each rewrite takes its own containers
    only and would leave the others' device-plugin request beside the claim. "" when no pod is so. A helper's
    container that copies its device keys from the values map another container takes whole (B, C: gsampaio's
    ollama, its model-pull init container's `index .Values.resources.limits "nvidia.com/gpu"` beside
    `toYaml .Values.resources`) goes with the pass-through, which gives it the map's claims."""
    from dramigrate.helm.passthrough import map_helpers

    if settings.chart_style != "idiomatic" or "" not in wanted:
        return ""
    pods: dict[tuple[str, str, str, str], dict[str, tuple[str, Any, str]]] = {}
    helpers = functools.cache(lambda: map_helpers(root))
    copied = functools.cache(lambda: _copied_keys(root))
    text = functools.cache(lambda rel: (root / rel).read_text(encoding="utf-8"))  # a template with many requests
    for f in sorted(outcome.findings, key=lambda f: f.line):
        rel = f.file[len(outcome.display) + 1 :]
        if not (f.resource and f.line and f.container and rel in wanted[""]):
            continue
        pattern = _classified(text(rel), f, helpers)
        pods.setdefault((rel, f.kind, f.namespace, f.name), {}).setdefault(f.container, (f.file, pattern, f.resource))
    for (rel, kind, _, name), containers in sorted(pods.items()):
        letters = {p.letter for _, p, _ in containers.values()}
        if letters & {"B", "C"}:
            letters = {p.letter for _, p, r in containers.values() if p.letter != "D" or r not in copied()}
        if "D" in letters and len(letters) > 1:
            ways = "; ".join(
                f"container {c} at {file}:{p.line}: {p.describe()}" for c, (file, p, _) in containers.items()
            )
            return (
                f"{kind} {name} ({rel}) asks for devices in two ways: {ways}; the helper rewrite takes only the "
                f"helper's containers and would leave the others' device-plugin request beside the one pod claim "
                f"the migration gives them all{ENGINE_HINT}"
            )
    return ""


def _both_shapes(root: Path, hints: dict[str, Any], rules: RuleSet) -> dict[str, Any]:
    """The templates whose literal device key (pattern A) is in one branch of an `if` on a values map that the
    container takes whole in another (idiomatic.maps_beside), each with the map's line (pattern B)."""
    from dramigrate.helm.idiomatic import maps_beside

    out = {}
    for rel, h in sorted(hints.items()):
        if h.letter in ("A", "B", "C") and (found := maps_beside((root / rel).read_text(encoding="utf-8"), rel, rules)):
            out[rel] = found
    return out


def _helper_built(root: Path, hints: dict[str, Any]) -> dict[str, Any]:
    """When every template that asks for devices reads its container's resources map out of a dict a named helper
    builds (passthrough.helper_built_map), each with that read (pattern F); else {}."""
    from dramigrate.helm.passthrough import helper_built_map

    out = {}
    for rel, h in sorted(hints.items()):
        text = (root / rel).read_text(encoding="utf-8") if h.letter in ("D", "F") else ""
        if (found := helper_built_map(text)) is None:
            return {}
        out[rel] = Pattern("F", found[0], text.splitlines()[found[0] - 1].strip())
    return out


def _adds_tolerations(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    """Whether the migration of a template's objects adds a toleration to one of them."""

    def lists(node: Any) -> list[Any]:
        if isinstance(node, dict):
            return [node.get("tolerations"), *(x for k, v in node.items() if k != "tolerations" for x in lists(v))]
        return [x for v in node for x in lists(v)] if isinstance(node, list) else []

    return lists(before) != lists([a for a in after if a.get("kind") != "ResourceClaimTemplate"])


def _helper_likely(outcome: ChartOutcome, root: Path, rules: RuleSet) -> bool:
    """Whether the chart's own templates write a device request the idiomatic rewrite reads through a helper (pattern
    D, E or F: helper.fix renders a marked copy of the chart for it, started early to render beside the migrations)."""
    prefix = f"{outcome.display}/"
    rels = {
        f.file[len(prefix) :]
        for f in outcome.findings
        if f.fixable
        and f.resource
        and f.line
        and f.file.startswith(prefix)
        and "/charts/" not in f"/{f.file[len(prefix) :]}"
    }
    try:
        hints = _hints(outcome, root, "", rels, rules)
    except (OSError, UnicodeDecodeError):
        return False
    return any(h.letter in ("D", "E", "F") for h in hints.values())


class _OwnTemplates(NamedTuple):
    """The chart's own templates that ask for devices with the value sets the user gives (through an unpacked
    library's includes), the pattern of each and the value set the rewrite is read from (_reference)."""

    reference: tuple[Variation, Render, str]
    rels: set[str]
    hints: dict[str, Any]


def _own_templates(
    outcome: ChartOutcome,
    root: Path,
    wanted: dict[str, set[str]],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    given: set[str],
    rules: RuleSet,
    settings: Settings,
) -> _OwnTemplates | None:
    """What _library_only and _no_rewrite_shape read, once: None unless an idiomatic fix of the chart itself (no
    subchart) has a reference value set and templates to change."""
    if settings.chart_style != "idiomatic" or list(wanted) != [""]:
        return None
    reference = _reference(expected, given)
    rels = _through_includes(wanted[""], _define_files(outcome, "", wanted[""]))
    if reference is None or not rels:
        return None
    return _OwnTemplates(reference, rels, _hints(outcome, root, "", rels, rules))


def _library_only(own: _OwnTemplates, root: Path, rules: RuleSet, settings: Settings, work: Workdir) -> str:
    """Why an idiomatic fix is manual work when every template of the chart with a device request only includes a
    library chart's templates (immich and app-template on bjw-s common): the message _fix_idiomatic ends with
    (idiomatic.build refuses such a template, and no helper of the chart writes the device key), known from the
    value sets the user gives. "" when not so, or when the rewrite would take another way."""
    from dramigrate.helm import helper, idiomatic, packedlib

    reference, rels, hints = own
    if not all(_library_written(root, rel, rules) for rel in rels):
        return ""
    if any(h.letter in ("B", "C") for h in hints.values()):
        return ""  # the pass-through rewrite
    if packedlib.merged_request(root, work):
        return ""  # the library merges a define of the chart into the pod: the values-only rewrite (libvalues.py)
    if (
        any(h.letter in ("D", "E", "F") for h in hints.values())
        and helper.marked_render(root, work, reference[0].options, rules)[2]
    ):
        return ""  # a helper of the chart writes the device key: the helper rewrite
    if packedlib.find_request(root, work, reference[0].options, rules):
        return ""  # a packed library's define writes it: its values places, or why it has none (library_request)
    try:
        idiomatic.build(root, rels, rules, {}, {}, {}, settings.opt_in, hints)  # raises on the first template
    except RewriteError as exc:
        return f"{exc}{ENGINE_HINT}"
    return ""


def _no_rewrite_shape(
    own: _OwnTemplates, root: Path, rules: RuleSet, settings: Settings, work: Workdir, relations: list[Relation]
) -> str:
    """Why an idiomatic fix is manual work when no template of the chart itself that asks for devices (with the value
    sets the user gives) has a device key line, a helper line that writes one, a resources map passed through or
    built in variables, or a packed library's define (groundx: its resources map read out of a helper-built dict):
    the message _fix_idiomatic ends with (idiomatic.build refuses the first such template), known before the proof's
    other value sets are rendered and migrated (groundx spent 5 renders and 6 migrations on them), with the steps by
    hand for a map read out of a helper-built dict (in the values maps the probe found). "" otherwise."""
    from dramigrate.helm import helper, idiomatic, keyedmap, packedlib
    from dramigrate.helm.passthrough import (
        built_defines,
        built_pod_tolerations,
        built_tolerations_call,
        built_tolerations_reason,
        helper_built_map,
        helper_built_steps,
    )
    from dramigrate.helm.rewrite import chart_name

    reference, rels, hints = own
    if any(h.letter not in ("D", "E", "F") for h in hints.values()) or _map_built(root, rels, hints, rules):
        return ""
    originals = _by_template(reference[1].stream, chart_name(root))
    try:
        texts = {rel: (root / rel).read_text(encoding="utf-8") for rel in rels}
        h = helpers_text(root)
        if any(idiomatic.template_devices(root, rel, t, originals.get(rel, []), rules, h) for rel, t in texts.items()):
            return ""
        if helper.marked_render(root, work, reference[0].options, rules)[2]:
            return ""
        if packedlib.find_request(root, work, reference[0].options, rules) or packedlib.merged_request(root, work):
            return ""
        idiomatic.build(root, rels, rules, originals, {}, {}, settings.opt_in, hints)
    except patterns.NotIdiomatic as exc:
        if idiomatic.containers_of_ranges(exc):
            return ""  # the rewrite of containers `range` blocks write, read from the migrated value sets (build)
        text = texts.get(exc.rel, "")
        if keyedmap.key_lines(text.splitlines()):
            return ""  # device keys only from `range` maps: the keyed-map rewrite with the migrated value sets (build)
        maps, written = _device_maps(relations), None
        if helper_built_map(text) and _helper_built(root, hints) and built_defines(root, text, maps):
            written = None if built_tolerations_call(text) else built_pod_tolerations(text)
            wants = _by_template(reference[2], chart_name(root)).get(exc.rel, [])
            if written is None or not _adds_tolerations(originals.get(exc.rel, []), wants):
                return ""  # the pass-through through the helper-built dict (_fix_idiomatic) takes it
            exc.why = built_tolerations_reason(text, written)
        steps = helper_built_steps(root, exc.rel, text, maps) if text else ""
        if steps and written:
            steps += f", and the toleration the migration adds where line {written[0]} writes the pod's"
        why = f"{exc.rel}:{exc.pattern.line}: {exc.pattern.describe()}{': ' + exc.why if exc.why else ''}"
        return f"{why}{'; ' + steps if steps else ''}{ENGINE_HINT}"
    except (RewriteError, OSError, UnicodeDecodeError):
        return ""
    return ""


def _map_only_keys(root: Path, maps: dict[str, Pattern], expected: list[Any], rules: RuleSet) -> str:
    """Why the pass-through could not take a template whose container writes its device keys only from the variables
    of a `range` over a values map (`{{ $k }}: {{ $v }}` of `.Values.resources.limits`, awssamples' eksml charts,
    whose `.Values.resources` holds `node_type` too, so it is not passed through whole): the pattern-E reason with
    what to change by hand (idiomatic.range_named_keys), not the pass-through's; "" for another shape. Such a
    template takes the idiomatic route next (keyedmap.map_only), which says that reason where it refuses."""
    from dramigrate.helm import idiomatic, keyedmap

    for rel in sorted(maps):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not keyedmap.key_lines(text.splitlines()):
            continue
        docs = [
            d for _, r, _, _ in expected if not r.error for d in _by_template(r.stream, chart_name(root)).get(rel, [])
        ]
        try:
            idiomatic.range_named_keys(text, rel, docs, [], rules)
        except patterns.NotIdiomatic as exc:
            return f"{rel}:{exc.pattern.line}: {exc.pattern.describe()}: {exc.why}"
    return ""


def _device_maps(relations: list[Relation]) -> list[Path_]:
    """The values resources maps whose device keys set a count (the probe's), each once: the path up to the map."""
    maps = []
    for r in relations:
        at = max((i for i, k in enumerate(r.leaf.path) if re.search(r"[Rr]esources$", str(k))), default=None)
        if r.kind == "count" and at is not None:
            maps.append(tuple(r.leaf.path[: at + 1]))
    return list(dict.fromkeys(maps))


def _reference(
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]], given: set[str]
) -> tuple[Variation, Render, str] | None:
    """The value set the rewrite is read from: one of the user's with device requests, an installable one first (a
    request left a placeholder keeps its pod out of the migration, and the rewrite would miss that template)."""
    references = [(v, r, want) for v, r, want, _ in expected if v.label in given and want != r.stream]
    return next((ref for ref in references if not ref[0].invalid), references[0] if references else None)


def _library_template(root: Path, findings: list[Finding], rules: RuleSet, outcome: ChartOutcome) -> str:
    """The chart's template, named as fixable findings are or as their related lines (`this line includes ...`),
    whose objects a library chart writes (_library_written), which fix often leaves to the user; else ""."""
    prefix = outcome.display.rstrip("/") + "/"
    files = [x.file for f in findings if f.fixable for x in (f, *f.related)]
    rels = dict.fromkeys(x.removeprefix(prefix) for x in files if x.startswith(prefix + "templates/"))
    return next((rel for rel in rels if _library_written(root, rel, rules)), "")


def _library_written(root: Path, rel: str, rules: RuleSet) -> bool:
    """What idiomatic.build refuses as written by a library chart: a template of the chart itself with no device key
    of its own, whose objects a define of a library subchart writes. A device key the rewrite refuses (inside a
    range of pods) is the template's own: build gives that refusal."""
    from dramigrate.helm import idiomatic

    try:
        text = (root / rel).read_text(encoding="utf-8")
        return (
            not rel.startswith("charts/")
            and not idiomatic.find_devices(text, rel, rules)
            and bool(idiomatic.library_writes(root, text))
        )
    except (OSError, UnicodeDecodeError, RewriteError):
        return False


def _fix_idiomatic(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    work: Workdir,
    wanted: dict[str, set[str]],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    given: set[str],
    mode: str,
    relations: list[Relation] | None = None,
    leaves: list[_LeafFix] | None = None,
) -> None:
    """Rewrite a pattern-A chart behind a `dra.enabled` switch and prove it: with the switch off every render
    is byte-identical to the original chart's, with it on every render equals the migrated original render
    (claim templates compared by content) and is strict-valid for Kubernetes 1.34 and 1.36. With `leaves`, the
    one subchart of `wanted` is rewritten, not proven: its changes and switch key are added to `leaves`
    (_fix_leaves proves an umbrella's subcharts together)."""
    from dramigrate.helm import idiomatic, mapvars
    from dramigrate.helm.rewrite import chart_name

    # read from the value sets' renders (each parsed per template) by up to three of the paths below: once
    switched_templates = functools.cache(functools.partial(_switched_templates, root, expected))
    subs = sorted(s for s in wanted if s)
    charts = [""] * bool(wanted.get("")) + subs  # an umbrella's own templates ("") and its subcharts'
    if len(charts) > 1 and leaves is None:
        args = _FixArgs(outcome, root, copts, rules, settings, target, work, wanted, expected, given, mode, relations)
        if _fix_subchart_helper(args, subs):  # a vendored subchart's helper writes the key, others a literal one
            return
        if not _fix_umbrella_maps(args, charts):  # charts that pass resources maps through (B/C), and others
            _fix_leaves(args, charts)  # each chart a literal device key (A)
        return
    sub = subs[0] if subs else ""
    leaf = root / sub if sub else root
    prefix = f"{sub}/" if sub else ""
    scopes = _subchart_scopes(root, leaf)
    reference = _reference(expected, given)
    if reference is None:
        return
    _, ref_render, ref_want = reference
    name = chart_name(root)
    defines = _define_files(outcome, sub, wanted[sub])

    def in_leaf(by_template: dict[str, Any]) -> dict[str, Any]:
        """Objects by template path inside the leaf chart (an aliased subchart renders as charts/<alias>/...); a
        define's file (an unpacked library's) has the objects of the template that includes it."""
        out = {}
        for key, docs in by_template.items():
            try:
                where, rel = resolve_source(root, f"{name}/{key}")
            except RewriteError:
                continue
            if where == sub:
                out[rel] = docs
        return out | {define: out[rel] for define, rel in defines.items() if rel in out}

    migrated = in_leaf(_by_template(ref_want, name))
    named: dict[str, set[str]] = {}  # pattern E: the resource names each template renders with the chart's own and
    for v, r, _, _ in expected:  # the user's value sets (defaults, shipped and -f files), each looked up in the claim
        if v.label in given or v.label.startswith("-f "):
            for rel, docs in in_leaf(_by_template(r.stream, name)).items():
                named.setdefault(rel, set()).update(mapvars.resource_names(docs))
    claim_templates = {
        str(doc["metadata"]["name"]): doc
        for key, docs in objects(ref_want).items()
        if key[1] == "ResourceClaimTemplate"
        for doc in docs
    }
    wanted[sub] = _through_includes(wanted[sub], defines)
    extra = set() if sub else _shipped_templates(root, expected) - wanted[sub]
    extra |= set() if sub else _alike_templates(outcome, root, expected, wanted[sub] | extra, rules)
    extra |= set() if sub else _switched_passthrough(outcome, root, wanted[sub] | extra, rules, switched_templates())
    wanted[sub] |= extra
    hints = _hints(outcome, root, sub, wanted[sub], rules)
    if not sub and hints and all(h.letter == "A" for h in hints.values()):
        # a template with a literal device key under its own switch that the values leave off, which the proof turns
        # on (one template per serving profile), is rewritten too; one of another pattern is not taken into this
        # rewrite (a map passed through, a helper's key: vLLM production-stack's Deployment beside its RayCluster)
        turned = {rel: label for rel, label in switched_templates().items() if rel not in wanted[sub]}
        # a template that only includes a library's define is rewritten in that define (in wanted already)
        turned = {rel: label for rel, label in turned.items() if rel not in defines.values()}
        switched = _hints(outcome, root, sub, set(turned), rules)
        if other := sorted((rel, h) for rel, h in switched.items() if h.letter != "A"):
            (rel, h), label = other[0], turned[other[0][0]]
            why = (
                f"{rel}:{h.line}: {h.describe()}, which asks for devices with {label}: the rewrite of the chart's "
                "literal device keys (A) does not take a template of another pattern that the values leave off"
            )
            _manual(outcome, f"{why}{ENGINE_HINT}", "")
            return
        wanted[sub] |= set(switched)
        hints = _hints(outcome, root, sub, wanted[sub], rules)
    renders = tuple((r.stream, want) for _, r, want, _ in expected if not r.error and want != r.stream)
    alter = functools.partial(_alternative, outcome.display, rules, settings, target, renders=renders)

    def migrate(stream: str) -> str:
        return _text(run_core(stream, outcome.display, rules, settings, target, fix=True, objects=True), stream)

    both = _both_shapes(root / sub if sub else root, hints, rules)  # a key's branch and a map's in one container
    if not sub and leaves is None and _pod_spec_values(outcome, root, copts, expected, hints, relations or []):
        return
    if any(h.letter in ("B", "C") for h in hints.values()) or both:
        maps = {**{rel: h for rel, h in hints.items() if h.letter in ("B", "C")}, **both}
        first = min(maps.items(), key=lambda kv: (kv[0], kv[1].line))
        if leaves is not None or (sub and both):  # one leaf of several passes a map through, another has a literal key
            why = f"{prefix}{first[0]}:{first[1].line}: {first[1].describe()}, in a chart with a literal key as well"
            _manual(outcome, f"{why}: in an umbrella, the rewrite takes each chart one way{ENGINE_HINT}", "")
            return
        hint = (prefix + first[0], first[1])
        switch = None
        if not sub:  # templates with a literal device key beside those that pass a map through (A and B mixed)
            hints = _hints(outcome, root, sub, wanted[sub], rules)  # the shipped files' templates too
            both = _both_shapes(root, hints, rules)
            try:
                switch = _mixed_switch(
                    root,
                    rules,
                    work,
                    hints,
                    expected,
                    settings.opt_in,
                    relations or [],
                    named,
                    alter,
                    migrate,
                    frozenset(both),
                )
            except RewriteError as exc:
                _manual(outcome, f"{exc}{ENGINE_HINT}", "")
                return
        rels = wanted[sub] - (switch.rels - switch.both if switch else set())
        marks = fixed_marks(outcome.findings)
        _fix_passthrough(outcome, root, copts, work, {sub: rels}, expected, hint, {sub: scopes}, switch)
        keys = _map_only_keys(root, maps, expected, rules) if outcome.manual and not sub and not switch else ""
        if keys:  # device keys only from `range` maps: the keyed-map rewrite (keyedmap.map_only), below
            outcome.findings = [f for f in outcome.findings if f.rule != "chart-rewrite-unproven"]
            outcome.manual, outcome.patch = "", ""
            restore_fixed(marks)  # the failed pass-through cleared them: the keyed-map rewrite writes the same
        elif switch and switch.both and outcome.changes and not outcome.manual and not outcome.usage:
            rel, beside = min(both.items())
            maps_too = f"; the resources map of the other branch ({rel}:{beside.line}) takes the DRA values files"
            outcome.usage = (
                _switches_usage(list(switch.keys), settings.opt_in) + f"{maps_too} (each *-dra.yaml after its file)"
            )
        if not keys:
            return
    guards, notes = idiomatic.kind_guards(expected, relations or [], rules) if not sub else ([], {})
    if not sub:  # a product the migration reads as shared with some values: the switch stays off with them too
        sources = functools.partial(value_sources, root, outcome.display, copts, copts.render())
        pinned, said = shared_guards(expected, reference, rules, sources)
        kind_only, guards, notes = list(guards), [*guards, *pinned], {**notes, **said}
    else:
        kind_only, pinned = guards, {}
    if not sub and leaves is not None and any(h.letter == "D" for h in hints.values()):
        rel, first = min(((r, h) for r, h in hints.items() if h.letter == "D"), key=lambda kv: (kv[0], kv[1].line))
        why = f"{rel}:{first.line}: {first.describe()}, while a subchart asks for devices too"
        _manual(outcome, f"{why}: the helper rewrite takes a chart alone{ENGINE_HINT}", "")
        return
    if not sub and leaves is None and (built := _helper_built(root, hints)):
        # the container's resources map read out of a dict a named helper builds from values (groundx): the
        # pass-through, through that dict
        _fix_passthrough(outcome, root, copts, work, {sub: wanted[sub]}, expected, min(built.items()), {sub: scopes})
        return
    if sub and leaves is None and any(h.letter == "D" for h in hints.values()):
        args = _FixArgs(outcome, root, copts, rules, settings, target, work, wanted, expected, given, mode, relations)
        if _fix_subchart_helper(args, subs):  # a vendored subchart's helper writes the key (vLLM production-stack's)
            return
        from dramigrate.helm import packedlib

        found = packedlib.find_request(root, work, reference[0].options, rules)
        # the subchart's own library writes it (an app-template fork holding bjw-s common): the umbrella's values
        if found and f"{found.lib.folder}/".startswith(f"{sub}/"):
            _fix_packed_library(args, hints, reference, found)
            return
    if not sub and leaves is None and any(h.letter in ("D", "E", "F") for h in hints.values()):
        from dramigrate.helm import helper  # pattern D: the device key is written by a named helper

        kind_guards = (tuple(guards), notes)
        opt_in = settings.opt_in
        switched = _switched_literal(outcome, root, wanted[sub], rules, expected, switched_templates())
        if helper.fix(
            outcome,
            root,
            wanted[sub],
            rules,
            work,
            expected,
            reference,
            opt_in,
            mode,
            migrate,
            kind_guards,
            alter,
            switched,
        ):
            return
        if built := _map_built(root, wanted[sub], hints, rules):  # pattern F: the template builds the map in variables
            built |= _maps_left_off(root, switched_templates(), built)
            _fix_map_built(outcome, root, rules, settings, work, built, expected, mode, named, alter)
            return
        from dramigrate.helm import packedlib  # a define of a packed library chart writes the key

        found = packedlib.find_request(root, work, reference[0].options, rules) or packedlib.merged_request(root, work)
        if found:
            args = _FixArgs(
                outcome, root, copts, rules, settings, target, work, wanted, expected, given, mode, relations
            )
            _fix_packed_library(args, hints, reference, found)
            return
    elif leaves is None and (built := _map_built(leaf, wanted[sub], hints, rules)):
        # pattern A at a device key the pod writes beside a map built in variables (the `else` without the map), or
        # a map built in variables in an umbrella's subchart
        _fix_map_built(outcome, root, rules, settings, work, built, expected, mode, named, alter, sub)
        return
    from dramigrate.helm.unittest_suite import Rendered

    try:
        originals = in_leaf(_by_template(ref_render.stream, name))
        rendered = Rendered(in_leaf(_every_by_template(ref_render, name)), reference[0].options.release_name)
        if unseen := {rel for rel in wanted[sub] if not sub and migrated.get(rel) == originals.get(rel)}:
            # templates the reference render leaves without a device request (a shipped values file's, a profile
            # the chart's defaults turn on but the user's values off, one the proof switches on): read from the
            # first value set that renders them with one
            more = _first_changes(root, frozenset(unseen), [e for e in expected if _own_render(*e[:2])])
            originals, migrated = {**originals, **more[0]}, {**migrated, **more[1]}
            claim_templates = {**claim_templates, **more[2]}
            rendered = Rendered({**rendered.documents, **more[3].documents}, rendered.release)
        changes = build_beside(  # under `draDevices` where the chart's values have a `dra:` of their own
            leaf,
            lambda at: idiomatic.build(
                at,
                wanted[sub],
                rules,
                originals,
                migrated,
                claim_templates,
                settings.opt_in,
                hints,
                tuple(kind_only),
                alter,
                {rel: sorted(names) for rel, names in named.items()},
                rendered,
                left=left_lines(outcome.findings, outcome.display) if not sub else None,
                pinned=pinned,
            ),
        )
        changes = _in_umbrella(root, sub, changes) if sub else in_dependency_sources(root, changes)
    except RewriteError as exc:
        _manual(outcome, f"{f'{sub}: ' if leaves is not None else ''}{exc}{ENGINE_HINT}", "")
        return
    except (OSError, UnicodeDecodeError) as exc:
        _manual(outcome, f"cannot read a template: {exc}", "")
        return
    switch_name = switch_key(leaf)  # the chart's switch key, read from its values.yaml once
    switch_keys = [".".join((*scope, switch_name or OWN, "enabled")) for scope in scopes]
    if leaves is not None:
        shown = {f"charts/{'/charts/'.join(scope)}/{rel}" if scope else rel for scope in scopes for rel in wanted[sub]}
        leaves.append(_LeafFix(changes, switch_keys, notes, frozenset(shown)))
        return
    outcome.changes = changes = folded(changes)  # the guards' lines, fewer where they fold
    if not sub:  # a library's define, which charts without the `dra:` block may include: the switch read nil-safe
        outcome.changes = changes = library_safe(changes, switch_name or OWN)
    patch = outcome.diff()
    own = [c for c in changes if not Path(c.rel).is_absolute()]
    copy_root = _rewritten_copy(root, own, work, skip=frozenset({"Chart.yaml"}))  # version bump shows in labels
    prove_switch(
        outcome,
        root,
        expected,
        lambda options, on: cached_render(copy_root, _with_switches(options, on, switch_keys)),
        patch,
        mode,
        notes,
    )
    if outcome.proven and not sub and (library := [c for c in own if shared(c.rel)]):
        library_only = _rewritten_copy(root, library, work, where="library-only")
        if why := others_unchanged(root, expected, lambda options: cached_render(library_only, options)):
            _manual(outcome, why, patch)
    if len(switch_keys) > 1 or switch_name != OWN:
        outcome.usage = _switches_usage(switch_keys, settings.opt_in)


def _pod_spec_values(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    hints: dict[str, Any],
    relations: list[Relation],
) -> bool:
    """The values-only rewrite of a pod spec the chart renders from values with each container whole (a runner scale
    set's `template.spec`, libvalues.pod_spec_places): the DRA values carry the claims, as a library's values places
    do. True when it holds (the outcome is final); False with the outcome as it was, for the chart's other rewrites."""
    from dramigrate.helm import libvalues
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.wholecontainers import whole_places

    counts = [r.leaf.path for r in relations if r.kind == "count"]
    spec, kind = libvalues.pod_spec_places(counts), "the pod spec from values"
    if spec is None and hints:  # a container's fields and its pod's keys, each a values map written whole
        spec, kind = whole_places(root, hints, counts), "the pod's keys from values"
    if spec is None or not hints:
        return False
    kept = (outcome.manual, outcome.patch, outcome.patch_proven, outcome.usage, list(outcome.checked))
    place = libvalues.Placer(spec["pod_options"], spec, chart_name(root), kind)
    trial = Workdir()  # its working copies apart from those of the rewrite tried next
    if not fix_placed_values(outcome, root, copts, trial, expected, hints, place):
        return True
    trial.close()
    outcome.manual, outcome.patch, outcome.patch_proven, outcome.usage, outcome.checked[:] = kept
    outcome.changes = []
    return False


class _LeafFix(NamedTuple):
    """One chart of an umbrella rewritten behind its `dra.enabled` switch (pattern A), not yet proven."""

    changes: list[Change]
    keys: list[str]  # its switch under each key the umbrella passes it values by (`llm.dra.enabled`)
    notes: dict[str, str]  # value set label -> what the proof calls it
    shown: frozenset[str]  # its templates as the umbrella's render names them (charts/<alias>/templates/x.yaml)


class _FixArgs(NamedTuple):
    """What _fix_idiomatic is given, handed on whole to the umbrella steps (which call it per chart)."""

    outcome: ChartOutcome
    root: Path
    copts: ChartOptions
    rules: RuleSet
    settings: Settings
    target: Target
    work: Workdir
    wanted: dict[str, set[str]]
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]]
    given: set[str]
    mode: str
    relations: list[Relation] | None


def _fix_umbrella_maps(args: _FixArgs, charts: list[str]) -> bool:
    """An umbrella whose subcharts (and own templates, "") pass resources maps through (B/C): one pass-through
    rewrite of them, each subchart's claims under the keys it reads (its name or aliases); the charts with a literal
    device key (A) take their switches beside it, proven together. False when no chart passes a map through."""
    outcome, root, copts, rules, settings, target, work, wanted, expected, _, _, _ = args
    by_chart = {s: _hints(outcome, root, s, wanted[s], rules) for s in charts}
    maps = [s for s in charts if by_chart[s] and all(p.letter in ("B", "C") for p in by_chart[s].values())]
    if not maps:
        return False
    switch = None
    if others := [s for s in charts if s not in maps]:
        fixed = _rewrite_leaves(args, others)
        if fixed is None:
            return True

        def migrate(stream: str) -> str:
            return _text(run_core(stream, outcome.display, rules, settings, target, fix=True, objects=True), stream)

        def build(passed: list[Change]) -> list[Change]:
            return _umbrella_changes([passed, *(f.changes for f in fixed)])

        keys = tuple(k for f in fixed for k in f.keys)
        switch = _Switch(frozenset(r for f in fixed for r in f.shown), build, migrate, keys)
    # the umbrella's own scope () holds every values path: it goes last, after the subcharts' take theirs
    order = [*(s for s in maps if s), *(s for s in maps if not s)]
    scopes = {s: _subchart_scopes(root, root / s if s else root) for s in order}
    rel, first = min(by_chart[maps[0]].items(), key=lambda kv: (kv[0], kv[1].line))
    hint = (f"{maps[0]}/{rel}" if maps[0] else rel, first)
    _fix_passthrough(outcome, root, copts, work, {s: wanted[s] for s in order}, expected, hint, scopes, switch)
    if switch and outcome.changes and not outcome.manual and not outcome.usage:
        maps_too = "; the resources maps passed through take the DRA values files (each *-dra.yaml after its file)"
        outcome.usage = _switches_usage(list(switch.keys), settings.opt_in) + maps_too
    return True


def _fix_packed_library(args: _FixArgs, hints: dict[str, Any], reference: Any, found: Any) -> None:
    """A device key a library chart's define writes (packedlib.find_request: packed or unpacked in the chart's charts/
    or a subchart's): the values-only rewrite through the library's values places when it has them and it holds
    (libvalues.py), else manual work naming the library, its define and what it lacks."""
    from dramigrate.helm import packedlib

    outcome, root, copts, rules, settings, target, work, _, expected, _, _, relations = args
    tried = ""  # why the values-only rewrite through the library's values places (libvalues.py) fails
    if found.places:
        tried = _fix_library_values(outcome, root, copts, rules, settings, target, work, expected, hints, found)
        if not tried:
            return
    counted = list(dict.fromkeys(str(r.leaf.path[0]) for r in relations or [] if r.kind == "count"))
    why = packedlib.written_twice(found, reference[1].stream, rules) or packedlib.library_request(
        found, root, counted, tried
    )
    _manual(outcome, f"{why}{ENGINE_HINT}", outcome.patch)


def _fix_subchart_helper(args: _FixArgs, subs: list[str]) -> bool:
    """An umbrella whose vendored subchart writes its device key in a named helper (vLLM production-stack's
    `chart.resources`, in etalab's and SUSE's umbrellas): the helper rewrite on the umbrella, the subchart's files
    rewritten where they are and the switch documented in the umbrella's values; the umbrella's own templates with
    a literal key take the pattern-A rewrite beside it. False (nothing done) when no subchart's helper writes it."""
    from dramigrate.helm import helper, idiomatic

    outcome, root, _, rules, settings, target, work, wanted, expected, given, mode, relations = args
    helped = [
        sub for sub in subs if any(h.letter == "D" for h in _hints(outcome, root, sub, wanted[sub], rules).values())
    ]
    if len(helped) != 1:
        return False
    reference = _reference(expected, given)
    if reference is None:
        return False
    renders = tuple((r.stream, want) for _, r, want, _ in expected if not r.error and want != r.stream)
    alter = functools.partial(_alternative, outcome.display, rules, settings, target, renders=renders)

    def migrate(stream: str) -> str:
        return _text(run_core(stream, outcome.display, rules, settings, target, fix=True, objects=True), stream)

    guards, notes = idiomatic.kind_guards(expected, relations or [], rules)
    rels = {f"{sub}/{rel}" if sub else rel for sub, own in wanted.items() for rel in own}
    opt_in = settings.opt_in
    return helper.fix(
        outcome,
        root,
        rels,
        rules,
        work,
        expected,
        reference,
        opt_in,
        mode,
        migrate,
        (tuple(guards), notes),
        alter,
        within=helped[0],
    )


def _rewrite_leaves(args: _FixArgs, subs: list[str]) -> list[_LeafFix] | None:
    """Each chart of `subs` (an umbrella's subcharts, "" its own templates) rewritten behind its switch; None when one
    is manual work (the outcome says why)."""
    leaves: list[_LeafFix] = []
    for n, sub in enumerate(subs, start=1):
        _fix_idiomatic(*args._replace(wanted={sub: args.wanted[sub]}), leaves)
        if args.outcome.manual or len(leaves) < n:
            return None
    return leaves


def _umbrella_changes(parts: list[list[Change]]) -> list[Change]:
    """The changes of several charts of an umbrella, each of which bumps the umbrella's version: bumped once."""
    changes: list[Change] = []
    for own in parts:
        changes += [c for c in own if c.rel != "Chart.yaml" or all(x.rel != "Chart.yaml" for x in changes)]
    return changes


def _fix_leaves(args: _FixArgs, subs: list[str]) -> None:
    """An umbrella whose device requests come from several charts (`subs`: its subcharts, and "" its own templates),
    each a literal device key with a values count (pattern A): each rewritten behind its own `dra.enabled`
    (`<subchart>.dra.enabled` in the umbrella's values), one version bump of the umbrella, and the charts proven
    together: every switch off renders byte-identical, every switch on renders the migration (was: manual, "run fix
    on each"). The report names the switches."""
    outcome, root, _, _, settings, _, work, _, expected, _, mode, _ = args
    leaves = _rewrite_leaves(args, subs)
    if leaves is None:
        return
    changes = _umbrella_changes([f.changes for f in leaves])
    outcome.changes = changes = folded(changes)  # the guards' lines, fewer where they fold
    patch = outcome.diff()
    copy_root = _rewritten_copy(root, [c for c in changes if not Path(c.rel).is_absolute()], work, {"Chart.yaml"})
    keys = [key for f in leaves for key in f.keys]

    def rewritten(options: Any, on: bool) -> Render:
        return cached_render(copy_root, _with_switches(options, on, keys))

    prove_switch(outcome, root, expected, rewritten, patch, mode, {k: v for f in leaves for k, v in f.notes.items()})
    outcome.usage = _switches_usage(keys, settings.opt_in)


# --- charts that have their own DRA switch (ollama `draEnabled`, llm-d `accelerator.dra`) -------------------
