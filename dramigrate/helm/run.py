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
the first difference.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from dramigrate.config import Settings
from dramigrate.documents import chart_text, universal_newlines
from dramigrate.findings import RULES, Finding, InputError, Location
from dramigrate.helm import patterns, wholemaps
from dramigrate.helm.chartvalues import chart_defaults, value_sources
from dramigrate.helm.findingmap import (
    attach_values,
    map_findings,
    mapped_repeated_keys,
    mapped_secret_findings,
    read_text,
    resolve_source,
)
from dramigrate.helm.foldguards import folded
from dramigrate.helm.locate import source_of, stream_sources
from dramigrate.helm.nullcounts import null_sets, reference_stream
from dramigrate.helm.patterns import (
    UNTAKEN,
    Pattern,
    classify,
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
    _object_name,
    canonical_claims,
    documents,
    first_difference,
    load_all,
    new_duplicates,
    new_repeats,
    objects,
    same_text,
    strict_errors,
    volatile,
    without_nulls,
)
from dramigrate.helm.proveguards import guard_flips, vendor_flips
from dramigrate.helm.renderpool import (
    CACHE,
    Render,
    RunCache,
    agains,
    cached_render,
    generates_keys,
    manifest_stream,
    may_matter,
    render_again,
    render_all,
    render_each,
    render_later,
    run_core,
    settled,
)
from dramigrate.helm.rewrite import Change, RewriteError, build_rewrite, chart_meta, chart_name, with_line_ends
from dramigrate.helm.twins import archive_writes, binary_note
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
    set_path,
    tolerations_lists,
    twin_path,
    zero,
)
from dramigrate.limits import check_values_file
from dramigrate.rules import NATIVE_RESOURCES, RuleSet
from dramigrate.versions import Target

if TYPE_CHECKING:
    from dramigrate.helm.libvalues import Placer
    from dramigrate.writer import WriteOptions

MAX_VARIATIONS = 28
ADDED_DEVICE = "added to every resources map of the values"  # the end of that proof value set's label
# a user's own toleration, of a taint no device plugin uses: what a DRA pod must add its device's toleration to (one
# key, one line of YAML: a chart that misindents a longer list renders it as badly without the rewrite)
OWN_TOLERATION = {"key": "example.com/dedicated"}
_UNCOVERED = (  # your values ask for devices through keys the DRA values files fix wrote leave as they are
    "with your values, the device request comes from values no DRA values file covers (the --set options choose "
    "device keys other than those values-dra.yaml migrates); put the device keys in a -f values file so fix can write "
    "its DRA variant"
)
ENGINE_HINT = "; fix it by hand (docs/helm.md) or run fix with --chart-style engine"  # ends a manual idiomatic fix


@dataclass(frozen=True)
class ChartOptions:
    """The `helm template` options the user gave."""

    release: str = "release-name"
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    set_string_values: tuple[str, ...] = ()
    namespace: str | None = None
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    helm_binary: Path | None = None

    def render(self, values_files: tuple[Path, ...] | None = None, sets: bool = True) -> Any:
        from dramigrate.helm.render import RenderOptions

        return RenderOptions(
            release_name=self.release,
            namespace=self.namespace,
            values_files=self.values_files if values_files is None else values_files,
            set_values=self.set_values if sets else (),
            set_string_values=self.set_string_values if sets else (),
            kube_version=self.kube_version,
            api_versions=self.api_versions,
            helm_binary=self.helm_binary,
        )


def split_release(paths: list[str]) -> tuple[str | None, list[str]]:
    """`[RELEASE] CHART ...` as helm takes it: a first argument that is not a path, followed by a chart."""
    from dramigrate.helm.render import is_chart

    first_is_name = len(paths) >= 2 and paths[0] != "-" and not Path(paths[0]).exists()
    if first_is_name and any(p != "-" and is_chart(Path(p)) for p in paths[1:]):
        return paths[0], paths[1:]
    return None, paths


ObjectName = tuple[str, str, str]  # kind, namespace, name


@dataclass
class Variation:
    label: str
    options: Any  # helm.RenderOptions
    invalid: str = ""  # why the original render is not installable for its device counts (the core's invalid-count)
    invalid_objects: frozenset[ObjectName] = frozenset()  # the objects of the original render holding those counts
    shipped: bool = False  # a values file the chart ships (shipped_files), not one the user named
    vendor: bool = False  # another branch of a vendor choice of the device key (vendor_flips): the DRA branch may fail
    tolerates: tuple[dict[str, str], ...] = ()  # the tolerations every values list is set to (the devices' taints)


@dataclass
class ChartOutcome:
    chart: Path
    display: str
    findings: list[Finding] = field(default_factory=list)
    error: InputError | None = None
    changes: list[Change] = field(default_factory=list)  # proven; written by fix, shown by diff
    writable: bool = True  # a chart folder (a packaged chart is not rewritten in place)
    manual: str = ""  # why the chart needs manual work
    patch: str = ""  # the suggested patch when it does
    patch_proven: bool = False  # a packaged chart: the patch was proven but cannot be written in place
    checked: list[str] = field(default_factory=list)  # value sets the proof rendered
    usage: str = ""  # how to use what the rewrite wrote, when the user's options change (a values file for --set)
    classes: dict[str, Any] = field(default_factory=dict)
    templates: list[dict[str, Any]] = field(default_factory=list)
    root: Path | None = None  # the chart folder rendered (a packaged chart's unpacked copy)

    @property
    def proven(self) -> bool:
        return bool(self.changes) and not self.manual

    def diff(self) -> str:
        from dramigrate.report.diff import unified

        text = "".join(unified(self.diff_name(c.rel), c.before or "", c.after) for c in self.changes)
        return text + "".join(binary_note(name) for name in self.archives())

    def archives(self) -> list[str]:
        """The subchart archives fix re-packs with the changes of their unpacked twins (twins.py), as diff names
        them."""
        return [self.diff_name(rel) for rel, _, _ in archive_writes(self.chart, self.changes)] if self.changes else []

    def diff_name(self, rel: str) -> str:
        """A changed file as the diff names it: a chart file under the chart's display name; a values file outside
        the chart (an -f file's DRA variant, held by its absolute path) from the working directory when it is under
        it and the chart is named so too, so the patch applies with `patch -p1` where fix would write it."""
        if not Path(rel).is_absolute():
            return f"{self.display}/{rel}"
        if Path(self.display).is_absolute():
            return rel
        try:
            return Path(rel).relative_to(Path.cwd()).as_posix()
        except ValueError:
            return rel

    def report(self) -> str:
        """What fix and diff say of the chart on standard error: each line starts with `dramigrate: `, whatever the
        chart's folder is named (a line break in it must not start a line GitHub Actions obeys), then the patch."""
        from dramigrate.report.escape import plain

        shown = plain(self.display, False)
        if self.manual:
            text = f"dramigrate: {shown}: needs manual work, nothing written: {plain(self.manual, False)}\n"
            if self.patch:
                text += ("patch (proven):\n" if self.patch_proven else "suggested patch (not proven):\n") + self.patch
            return text
        if self.changes:
            return (
                f"dramigrate: {shown}: rewrite proven on {len(self.checked)} value set(s): "
                + plain("; ".join(self.checked), False)
                + "\n"
                + (f"dramigrate: {shown}: {plain(self.usage, False)}\n" if self.usage else "")
            )
        return ""


def _no_labels(rules: RuleSet) -> RuleSet:
    stripped = copy.copy(rules)
    stripped.labels = {}
    return stripped


class Workdir:
    """Temporary files of one chart run: value files for probes, working copies."""

    def __init__(self) -> None:
        from dramigrate.lifetime import make_folder

        self.path = make_folder("dramigrate-chart-")  # removed even if dramigrate is killed
        self._n = 0

    def values_file(self, values: dict[str, Any]) -> Path:
        self._n += 1
        path = self.path / f"values-{self._n}.json"
        path.write_text(json.dumps(values, default=str), encoding="utf-8")
        return path

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


# --- the chart run ----------------------------------------------------------------------------------------------


def run_chart(
    chart: Path, copts: ChartOptions, rules: RuleSet, settings: Settings, target: Target, mode: str
) -> ChartOutcome:
    """mode: lint, diff or fix."""
    from dramigrate.helm.sandbox import ChartRefused, chart_time_limit, chart_timeout, shared_copies

    display_root = str(chart).rstrip("/") or "."
    outcome = ChartOutcome(chart, display_root, writable=chart.is_dir())
    work = Workdir()
    try:
        root = outcome.root = chart if chart.is_dir() else _unpack(chart, work.path / "unpacked")
        with shared_copies(), chart_time_limit(chart_timeout()):
            CACHE.append(RunCache(root))
            try:
                _run(outcome, root, copts, rules, settings, target, mode, work)
            finally:
                settled(CACHE.pop())
    except (InputError, UnicodeDecodeError) as exc:  # nothing is written: no finding says fixed (or fixable)
        outcome.error = exc if isinstance(exc, InputError) else _not_utf8(exc, chart, display_root)
        outcome.changes = []
        for f in outcome.findings:
            f.fixable = f.fixed = False
    except ChartRefused as exc:  # a link out of the chart, a render past its limits: nothing is written
        outcome.error = InputError(exc.message, display_root, rule=exc.rule)  # bad input, said once (not a finding)
        outcome.findings = []
        outcome.changes = []
    finally:
        work.close()
    return outcome


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
    from dramigrate.limits import MAX_FILE_BYTES

    try:
        with open(path, "rb") as fh:
            fh.read(MAX_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    except OSError:
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
    from dramigrate.helm.sandbox import check_packed_values, check_subchart_depth, refuse_outside_links

    # before any file of the chart is read: a values.yaml linked out of the chart told, by its bound, what it pointed to
    refuse_outside_links(root, outcome.display)
    check_subchart_depth(root)
    for path in _values_files(root, copts):
        shown = str(path) if path in copts.values_files else f"{outcome.display}/{path.relative_to(root).as_posix()}"
        check_values_file(str(path), shown)
    check_packed_values(root, outcome.display)
    base_options = copts.render()
    base = cached_render(root, base_options)
    if base.error:
        raise InputError(f"helm: {base.error}", outcome.display)

    def probed() -> tuple[dict[DeviceKey, Any], ValueSources, list[Relation]]:
        uses = device_uses(base.stream, rules)
        sources = value_sources(root, outcome.display, copts, base_options)
        return uses, sources, probe(root, copts, sources, uses, rules, work) if uses else []

    from concurrent.futures import wait

    from dramigrate.helm.sandbox import prestart_another

    # the probe renders on two workers from its start: a slow render holds up none else (a run with --helm-binary
    # renders with that binary, on no worker)
    if copts.helm_binary is None and generates_keys(root):
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
        findings = map_findings(core.findings, base.stream, root, outcome.display)
        for part in (base.stream, base.rest):
            findings.extend(mapped_secret_findings(part, root, outcome.display, rules))
        findings.extend(mapped_repeated_keys(base.stream, root, outcome.display))
    except BaseException:
        wait([probing])  # this error came first, as when the probe ran after it; the probe's own is dropped
        raise
    outcome.findings = findings
    base_uses, sources, relations = probing.result()
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
    if not why and any(f.fixable for f in findings):  # lint says what fix refuses before rewriting
        _check_rewritable(root, (base.stream, base.rest), outcome.display)
    if mode != "lint" and why:
        MESSAGES.note(f"{outcome.display}: chart not rewritten: {why}")
        for f in findings:
            if f.fixable:  # fix will not resolve it: the summary must not count it as fixable
                f.fixable = f.fixed = False
                f.message += "; fix leaves this chart as it is: a device request in it is suppressed"
        return
    partial: list[Any] = []  # what a switch of the chart's own leaves on the device plugin (llm-d's accelerator.dra)
    switch = _own_dra_switch(root, copts, sources, base_uses, rules, work, partial) if base_uses else None
    if switch is not None:
        _report_switch(outcome, switch, sources, root)
        if mode != "lint" and not settings.opt_in:  # --opt-in: the chart's default stays as it is
            _use_switch(outcome, root, switch, copts)
        return
    if mode == "lint":
        return
    _fix(outcome, root, copts, rules, settings, target, work, sources, relations, mode)
    if outcome.proven:  # a subchart copied from a chart repository: the next dependency build drops the rewrite
        from dramigrate.helm.vendored import vendored_findings

        outcome.findings += vendored_findings(root, outcome.display, [c.rel for c in outcome.changes])
    if outcome.manual and partial:
        from dramigrate.helm.ownswitch import left_by, note

        note(outcome, left_by(*partial[0], outcome.findings, root), ENGINE_HINT)


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
            changed = set_path(merged, leaf.path, value)
            label = f"{display(leaf.path)} {how} {json.dumps(value)}"
            if twin is not None:  # limits and requests of one device change together, as the API server needs
                changed = set_path(changed, twin, value)
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
                values = override(sources, set_path(merged, path, literal))
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
        own = merged
        for path in tolerations:
            own = set_path(own, path, [dict(OWN_TOLERATION)])
        values = override(sources, own)
        label = f"every tolerations list of the values set to [{OWN_TOLERATION['key']}]"
        add(label, copts.render((work.values_file(values),), False), values)
        # the user's lists tolerating the devices' taints themselves (GPU values often do): the migration then adds
        # no toleration, nor may the rewrite (a second one)
        # no toleration, nor may the rewrite (a second one); with several devices, also the first alone: the taints
        # are checked one by one (a list tolerating the GPU's taint does not tolerate an EFA NIC's)
        devices = sorted({k[5] for rel in relations for k in rel.keys})
        for some in [devices, devices[:1]] if len(devices) > 1 else [devices] if devices else []:
            tolerated = merged
            for path in tolerations:
                listed = [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in some]
                tolerated = set_path(tolerated, path, listed)
            values = override(sources, tolerated)
            label = f"every tolerations list of the values set to tolerate {', '.join(some)}"
            add(label, copts.render((work.values_file(values),), False), values, tolerates=tuple(listed))
    from dramigrate.helm import claimsprobe  # (passthrough, which it reads, reads this module)

    if own_claims := claimsprobe.own_paths(merged):  # the pod's own claims named as the migration names its own
        named, changed = claimsprobe.named_like(rules), merged
        for path in own_claims:
            changed = set_path(changed, path, named)
        values = override(sources, changed)
        label = f"every resourceClaims list of the values set to claims named {', '.join(c['name'] for c in named)}"
        add(label, copts.render((work.values_file(values),), False), values)
    for path in dict.fromkeys(limits_alone):  # the limit alone asks for the device (Kubernetes takes the request
        # from it): porter-web keys its own GPU toleration on the request, and the DRA claim on the limit
        values = override(sources, set_path(merged, path, None))
        label = f"{display(path)} unset (the limit alone asks for the device)"
        add(label, copts.render((work.values_file(values),), False), values)
    for label, changed in null_sets(merged, counts):  # a count unset: the pod asks for no device (nullcounts.py)
        values = override(sources, changed)
        add(label, copts.render((work.values_file(values),), False), values)
    for path in _left_alone_names(root, merged, rules):  # pattern E: a name the migration leaves alone
        values, label = _name_changed(sources, merged, path, LEFT_ALONE)
        add(label, copts.render((work.values_file(values),), False), values)
    return out


def _name_changed(sources: ValueSources, merged: dict[str, Any], path: Path_, name: str) -> tuple[dict[str, Any], str]:
    """The values with the device resource name at `path` changed to `name`, and its label: with the name of the other
    section when the values name the device alike in a limit and its request (ovms' `limits.xpu_device` and
    `requests.xpu_device`), as the API server needs an extended resource's request to name its limit's."""
    changed, label = set_path(merged, path, name), f"{display(path)} changed to {json.dumps(name)}"
    if (twin := twin_path(merged, path)) is not None:
        changed, label = set_path(changed, twin, name), f"{label} (and {display(twin)})"
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


def _templates(root: Path, helpers: bool = False) -> list[str]:
    """The text of each workload template of the chart (helpers, `_*.tpl`, left out unless asked for; NOTES.txt,
    which renders no manifest, always)."""
    files = (root / "templates").rglob("*")
    paths = sorted(
        p
        for p in files
        if p.is_file() and not p.is_symlink() and (helpers or not p.name.startswith("_")) and p.name != "NOTES.txt"
    )
    return [t for p in paths if (t := read_text(p)) is not None]


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
        full = run_core(stream, outcome.display, rules, settings, target, fix=True)
        if v.shipped and _text(full, stream) == stream:
            return True
        own = value_sources(root, outcome.display, copts, v.options) if v.shipped else sources
        invalid = [f for f in full.findings if f.rule == "invalid-count"]
        v.invalid = invalid[0].message if invalid else ""
        v.invalid_objects = frozenset((f.kind, f.namespace, f.name) for f in invalid)
        result, notes = full, []
        if rules.labels and _pod_labels(r.stream).keys() & set(rules.labels):
            bare = run_core(stream, outcome.display, nolabels, settings, target, fix=True)
            if _text(bare, stream) != _text(full, stream):
                from_values = _labels_from_values(r.stream, rules, own.merged)
                if from_values and _labels_set_by(
                    root, copts, own, work, from_values, set_by, v.options if v.shipped else None
                ):
                    result, notes = bare, from_values
                else:
                    literal_labels = True
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
        if all(key in _preferred_presence(stream, True) for stream in streams if key in _pod_labels(stream))
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


def _shipped_templates(root: Path, expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]]) -> set[str]:
    """The chart's own templates whose objects the migration of a shipped values file's render changes: a file that
    renders another workload (coreweave's LeaderWorkerSet, helix-sandbox's StatefulSet) has it rewritten too."""
    return set(_changed_templates(root, expected, lambda v, r: v.shipped))


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


def _merge(a: dict[Any, list[Any]], b: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    out = {k: list(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, []).extend(v)
    for docs in out.values():
        docs.sort(key=lambda d: json.dumps(d, sort_keys=True, default=str))
    return out


def _text(result: Any, original: str) -> str:
    return result.rewritten if result.rewritten is not None else original


def _pod_labels(stream: str) -> dict[str, set[str]]:
    """Node label keys the rendered objects select on (nodeSelector keys and node-affinity expression keys), each
    with the values they select (a nodeSelector value, the `values` of an expression)."""
    labels: dict[str, set[str]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            selector = node.get("nodeSelector")
            if isinstance(selector, dict):
                for k, v in selector.items():
                    labels.setdefault(str(k), set()).add(str(v))
            exprs = node.get("matchExpressions")
            if isinstance(exprs, list):
                for e in exprs:
                    if isinstance(e, dict):
                        found = e.get("values") if isinstance(e.get("values"), list) else []
                        own = labels.setdefault(str(e.get("key")), set())
                        own.update(str(v) for v in found if isinstance(v, (str, int, float)))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    try:
        for doc in documents(stream):
            walk(doc)
    except yaml.YAMLError:
        pass
    return labels


def _label_leaves(stream: str, rules: RuleSet, merged: dict[str, Any]) -> dict[str, Leaf | None]:
    """Each device-selecting node label the rendered pods use, with the values leaf that sets it (a key named after
    the label, or a value equal to it; or, for a label key the template writes itself, the leaf holding each value
    it selects: triton's `nvidia.com/gpu.product In [{{ .Values.gpu }}]`), None when the label does not come from
    values."""
    from dramigrate.helm.values import walk

    leaves = list(walk(merged))
    out: dict[str, Leaf | None] = {}
    for key, selected in sorted(_pod_labels(stream).items()):
        if key not in rules.labels:
            continue
        out[key] = next((leaf for leaf in leaves if (leaf.path and leaf.path[-1] == key) or leaf.value == key), None)
        named = [
            v for v in selected if re.search(r"[A-Za-z]", v) and v.lower() not in ("true", "false")
        ]  # not 1, "true"
        holders = [
            next((leaf for leaf in leaves if isinstance(leaf.value, str) and leaf.value == v), None) for v in named
        ]
        if out[key] is None and holders and len(named) == len(selected) and None not in holders:
            out[key] = holders[0]
    return out


def _labels_from_values(stream: str, rules: RuleSet, merged: dict[str, Any]) -> list[tuple[str, Leaf]]:
    """The label hacks of the rendered pods with the values leaves that set them; empty when one is not
    set by values. A label keyed in several places of the values (jellyfin's values-example.yaml: a nodeSelector and
    a node affinity expression) comes with each, so that _labels_set_by changes them all."""
    from dramigrate.helm.values import walk

    found = _label_leaves(stream, rules, merged)
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
    """Whether the values leaves _label_leaves paired with the pods' device labels do set them: the chart rendered
    with each leaf changed selects otherwise. A leaf found by its text alone (an unread affinity block in values.yaml
    spelling `key: nvidia.com/gpu.product` beside a label the template writes itself) is not the label's source, and
    the label is then the template's, which the rewrite moves into the claim's selectors. `options`: the value set
    `sources` holds the values of (a shipped values file; the user's by default). One render per set of leaves and
    value set, cached in `cache`."""
    options = copts.render() if options is None else options
    key = (repr(options), *((label, leaf.path) for label, leaf in found))
    if key not in cache:
        changed = sources.merged
        for _, leaf in found:
            changed = set_path(changed, leaf.path, f"{leaf.value}-dramigrate-probe")
        before = _pod_labels(cached_render(root, options).stream)
        new = cached_render(root, copts.render((work.values_file(override(sources, changed)),), sets=False))
        after = _pod_labels(new.stream) if not new.error else {}
        cache[key] = all(after.get(label) != before.get(label) for label, _ in found)
    return cache[key]


def attach_label_values(findings: list[Finding], stream: str, rules: RuleSet, sources: ValueSources) -> None:
    """Findings about node-label hacks get the values key that sets the label as a related location."""
    leaves = {k: v for k, v in _label_leaves(stream, rules, sources.merged).items() if v is not None}
    for f in findings:
        for key, leaf in leaves.items():
            if key in f.message and not f.resource:
                loc = locate(leaf.path, sources)
                located = Location(loc.file or "values", loc.line, 0, f"{display(leaf.path)} sets this node label")
                if located not in f.related:
                    f.related.append(located)


def _volatile(original: Any, again: Any) -> set[Any]:
    """Fields that differ between two renders of the original chart (randAlphaNum and the like): not compared."""
    if again.error:
        return set()
    return volatile(objects(original.stream + original.rest), objects(again.stream + again.rest))


def _not_identical(case: str, original: Any, again: Any, new: Any) -> str:
    """Proof L for one value set: '' when the rewritten chart renders byte for byte what the original did (text that
    differs between two renders of the original aside); else why not (the chart is then manual work)."""
    difference = same_text(original.manifests, original.manifests, new.manifests)  # identical: no second render read
    if difference:
        twice = again.manifests if not again.error else original.manifests
        difference = same_text(original.manifests, twice, new.manifests)
    return f"{case}, the render is not byte-identical: {difference}" if difference else ""


def _not_proven_on(
    case: str,
    original: Any,
    again: Any,
    want: str,
    on: Any,
    left_out: frozenset[ObjectName] = frozenset(),
    root: Path | None = None,
    passthrough: bool = False,
) -> str:
    """Proof D for one value set: '' when the migrated chart's render equals the migration of the original render
    (fields that differ between two renders of the original masked) and is strict-valid; else why not. `left_out`:
    objects (kind, namespace, name) not compared. `root`: the chart, whose template line writing a device label the
    rewrite left on the pods the reason names (labelwhy.py; `passthrough`: the rewrite passes resources maps
    through)."""

    def kept(objs: dict[ObjKey, list[Any]]) -> dict[ObjKey, list[Any]]:
        return {k: docs for k, docs in objs.items() if k[1:] not in left_out}

    expected = without_nulls(canonical_claims(kept(_merge(objects(want), objects(original.rest)))))
    got = without_nulls(canonical_claims(kept(objects(on.stream + on.rest))))
    diff = first_difference(expected, got)  # equal: the second render (what to mask) is not read
    if diff:
        diff = first_difference(expected, got, _volatile(original, again))
    if diff and (repeat := new_repeats(on.stream, original.stream)):  # a key written twice: the cause, said first
        return f"{case}, the render is not valid: {_repeated(repeat)}"
    if diff:
        why = ""
        if re.search(r"\.(nodeSelector|affinity)\b", diff.split(": ", 2)[1] if diff.count(": ") > 1 else diff):
            from dramigrate.helm.labelwhy import label_refusal

            why = (label_refusal(root, original.stream, want, passthrough) if root else "") or (
                "the pods select nodes by a device label that a template writes itself (the migration moves it into "
                "CEL selectors of the claim; the rewrite leaves the node selection of the chart as it is): translate "
                "the label by hand; "
            )
        kept = _kept_requests(expected, objects(on.stream))
        differs = "the rewritten chart renders differently from the migrated original rendering"
        return f"{why}{case}, {differs}: {diff}{kept}"
    invalid = strict_errors(on.stream, ("1.34", "1.36"), original.stream)
    if not invalid and (repeat := new_repeats(on.stream, original.stream)):
        invalid = _repeated(repeat)
    invalid = invalid or new_duplicates(on.manifests, original.manifests)
    return f"{case}, the render is not valid: {invalid}" if invalid else ""


def _not_proven_later(root: Path, options: Any, check: Callable[..., str], again: Render) -> str:
    """`check(again=...)` with the original's second render, and, when that fails for a chart that reads the clock,
    with a third render of it made now (render_later): '' when either proves."""
    why = check(again=again)
    if why and (later := render_later(root, options)) is not None:
        why = check(again=later)
    return why


def _repeated(repeat: str) -> str:
    return (
        f"{repeat}, which the original render does not repeat (Helm keeps the last one; strict readers such as "
        "`kubectl apply --server-side` and Flux refuse the render)"
    )


def _kept_requests(expected: dict[ObjKey, list[Any]], on: dict[ObjKey, list[Any]]) -> str:
    """Where the switch-on render still asks for an extended resource that the migration took into a claim (clause
    text for the proof's failure, '' when it does not): the request comes from a part of the template the DRA branch
    does not reach (clusterjellyfin's `toYaml .Values.workers.resources` in the `else` of its GPU switch, where the
    values give nvidia.com/gpu too), which the difference alone does not tell."""
    for key in sorted(set(expected) & set(on)):
        for want, got in zip(expected[key], on[key], strict=False):
            mine = dict(_extended(want))
            for path, names in _extended(got):
                for name in (n for n in names if n not in mine.get(path, ())):
                    return (
                        f"; with the switch on it still asks the device plugin for {name} at {key[1]} "
                        f"{_object_name(key[3])}: {path}, which the migration takes into a claim: a part of the "
                        "template the DRA branch does not reach writes it (a values map in another branch of an `if` "
                        "beside the chart's own device setting): take the device out of that map, or fix the chart "
                        "by hand"
                    )
    return ""


def _extended(node: Any, path: str = "") -> Iterator[tuple[str, list[str]]]:
    """Each `limits`/`requests` map of an object (its path) with the extended resources it names."""
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{path}.{k}" if path else str(k)
            if k in ("limits", "requests") and isinstance(v, dict) and path.endswith("resources"):
                yield here, [str(n) for n in v if "/" in str(n) and not NATIVE_RESOURCES.match(str(n))]
            else:
                yield from _extended(v, here)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _extended(v, f"{path}[{i}]")


def _not_proven_apart_from_invalid(case: str, original: Any, again: Any, want: str, on: Any, v: Variation) -> str:
    """Proof D for a value set whose original render is not installable for a device count: that render proves
    nothing about the objects holding the invalid count (nor about the claim templates only they name: frigate's
    i915 limit beside a null request, whose pod the rewrite gives a claim), but the other objects of the set must
    still prove ('' when they do, or when the switch-on render fails as a whole and so cannot be compared object by
    object)."""
    if on.error:
        return ""
    found = objects(on.stream + on.rest)
    named: dict[bool, set[str]] = {True: set(), False: set()}  # by whether a left-out object names the template
    for key, docs in found.items():
        named[key[1:] in v.invalid_objects].update(
            re.findall(r'"resourceClaimTemplateName": "([^"]+)"', json.dumps(docs))
        )
    templates = {k[1:] for k in found if k[1] == "ResourceClaimTemplate" and k[3] in named[True] - named[False]}
    return _not_proven_on(case, original, again, want, on, v.invalid_objects | templates)


def _finish(renders: Iterator[Any]) -> None:
    """Wait for the renders left in a proof's stream (render_each): a render past its limits raises here, before
    the chart is called manual work, as when every render of the proof was awaited before any comparison."""
    for _ in renders:
        pass


def _manual(outcome: ChartOutcome, reason: str, patch: str) -> None:
    from dramigrate.helm.sandbox import hide_chart_data

    reason = hide_chart_data(reason, outcome.root or outcome.chart)  # a rendered value can be a chart file's text
    outcome.manual = reason
    outcome.patch = patch
    outcome.changes = []
    outcome.findings.append(
        Finding(
            "chart-rewrite-unproven",
            RULES["chart-rewrite-unproven"][0],
            f"fix writes nothing for this chart: {reason}",
            outcome.display,
        )
    )
    for f in outcome.findings:
        f.fixed = False


def _in_chart(root: Path, path: Path) -> str:
    """A Change's name for a file given by a path from the working directory (an -f file's DRA variant): relative to
    the chart when the file is in it, else absolute (a Change's relative name is read from the chart root)."""
    path, top = path.absolute(), root.absolute()
    return path.relative_to(top).as_posix() if path.is_relative_to(top) else str(path)


def write_changes(outcome: ChartOutcome, options: WriteOptions | None = None) -> int:
    """Write a proven rewrite into the chart folder; the number of files written. Every file is checked before the
    first is written: the proof holds for all the changes together, so one refused file (read-only, changed since it
    was read) leaves the chart as it was (was: templates and Chart.yaml written, values.yaml refused, 0 reported),
    and so does a full disk (write_group)."""
    from dramigrate.writer import check_writable, write_group

    top = outcome.chart.resolve()
    planned: list[tuple[Path, Change, bytes | None]] = []
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
        planned.append((path, c, expected))
    for path, _, _ in planned:
        path.parent.mkdir(parents=True, exist_ok=True)
    writes: list[tuple[Path, str | bytes, bytes | None]] = [(path, c.after, expected) for path, c, expected in planned]
    for rel, before, data in archive_writes(outcome.chart, outcome.changes):  # the folder's .tgz twin (twins.py)
        check_writable(outcome.chart / rel, before, options)
        writes.append((outcome.chart / rel, data, before))
    write_group(writes, options)  # all or none (disk full)
    return len(writes)


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
    """Every chart of the run, in input order; findings, classes and errors go into the run's result."""
    from dramigrate.migrate import FileResult, failed_file

    copts = chart_options(opts, ctx.release)
    outcomes = []
    if ctx.inputs.charts and copts.helm_binary is None:
        from dramigrate.helm.sandbox import prestart

        prestart()
    for chart in ctx.inputs.charts:
        try:
            outcome = run_chart(Path(chart), copts, ctx.rules, ctx.settings, ctx.target, mode)
        except Exception as exc:  # one chart's failure is that chart's finding; the other charts go on
            failed = failed_file(str(chart), exc, "checking the chart")
            result.scanned += 1
            result.files.append(failed)
            result.findings.extend(failed.findings)
            result.bad_input += 1
            continue
        outcomes.append(outcome)
        result.scanned += 1
        if outcome.error is not None:
            if not outcome.error.file:
                outcome.error.file = outcome.display
            result.files.append(FileResult(outcome.display, error=outcome.error, findings=outcome.findings))
            result.findings.extend(outcome.findings)
            result.bad_input += 1
            continue
        result.files.append(
            FileResult(outcome.display, findings=outcome.findings, classes=outcome.classes, templates=outcome.templates)
        )
        result.findings.extend(outcome.findings)
        for name, cls in outcome.classes.items():
            result.classes.setdefault(name, cls)
    result.findings.sort(key=Finding.sort_key)
    return outcomes


# --- the idiomatic rewrite (idiomatic.py) and its proof -----------------------------------------------------


def _with_switch(options: Any, on: bool, key: str = "dra.enabled") -> Any:
    import dataclasses

    return dataclasses.replace(options, set_values=(*options.set_values, f"{key}={'true' if on else 'false'}"))


def _subchart_scopes(root: Path, leaf: Path) -> list[tuple[str, ...]]:
    """The values keys under which an umbrella chart passes values to its subchart `leaf` (its aliases, else its
    name; one chart included twice, `llm` and `embed`, has two; a subchart's subchart, charts/mid/charts/deep, the
    keys of each level: `mid.deep`); [()] for the chart itself."""
    if leaf == root:
        return [()]
    child = root / Path(*leaf.relative_to(root).parts[:2])  # charts/<folder>: the subchart `leaf` is in or is
    name = chart_name(child)
    deps = [d for d in chart_meta(root).get("dependencies") or [] if isinstance(d, dict) and d.get("name") == name]
    keys = sorted({str(d.get("alias") or name) for d in deps}) or [name]  # a vendored chart not listed: its name
    return [(k, *inner) for k in keys for inner in _subchart_scopes(child, leaf)]


def _with_switches(options: Any, on: bool, keys: list[str]) -> Any:
    for key in keys:
        options = _with_switch(options, on, key)
    return options


def _switches_usage(keys: list[str], opt_in: bool) -> str:
    """What the report says of several DRA switches (one per chart of an umbrella, or per alias of a subchart)."""
    each = "each" if len(keys) > 1 else "it"
    how = f"off by default (--opt-in), set {each} to true for the DRA" if opt_in else f"on by default, set {each}"
    how += "" if opt_in else " to false for the device-plugin"
    return f"the DRA switch{'es' * (len(keys) > 1)} {', '.join(keys)}: {how} request"


def _file_source(root: Path, leaf: Path) -> Path | None:
    """The folder a subchart in charts/ was built from, when the umbrella names it with a `file://` repository."""
    from dramigrate.helm.rewrite import chart_name

    meta = chart_meta(root)
    for dep in meta.get("dependencies") or []:
        repo = str(dep.get("repository", "")) if isinstance(dep, dict) else ""
        if repo.startswith("file://") and dep.get("name") == chart_name(leaf):
            source = (root / repo.removeprefix("file://")).resolve()
            if source.is_dir() and source != leaf.resolve():
                return source
    return None


def _in_umbrella(root: Path, sub: str, changes: list[Change]) -> list[Change]:
    """A subchart's changes as the umbrella's: paths under charts/<sub>/, the same change to the `file://`
    folder the subchart is built from (whose files must match the copy in charts/), and the version bump on the
    umbrella's Chart.yaml instead of the subchart's (its version is pinned in the umbrella's dependencies)."""
    if not sub:
        return changes
    from dramigrate.helm.conventions import bump_version

    leaf = root / sub
    source = _file_source(root, leaf)
    out = []
    for c in changes:
        if Path(c.rel).is_absolute():
            out.append(c)
            continue
        if c.rel == "Chart.yaml":
            continue
        out.append(Change(f"{sub}/{c.rel}", c.before, c.after))
        if source is not None:
            before = read_text(source / c.rel)  # the rewrite's text has LF line ends; the write keeps the file's
            read = () if before is None else (before, chart_text(before), universal_newlines(before))
            if c.before not in read and not (before is None and c.before is None):
                raise RewriteError(
                    f"{sub}/{c.rel} differs from its file:// source {source / c.rel}: run `helm dependency build` "
                    "and fix again"
                )
            out.append(Change(str(source / c.rel), c.before, c.after))
    text = (root / "Chart.yaml").read_text(encoding="utf-8")
    bumped_text = bump_version(text)
    if bumped_text != text:
        out.append(Change("Chart.yaml", text, bumped_text))
    return out


def _by_template(text: str, chart: str) -> dict[str, list[dict[str, Any]]]:
    """The objects of a rendered stream per template path of the root chart (`templates/x.yaml`)."""
    out: dict[str, list[dict[str, Any]]] = {}
    lines = text.splitlines()
    for part in stream_sources(text):
        source = part.source.split("/", 1)[-1] if part.source.startswith(chart + "/") else part.source
        try:
            docs = load_all("\n".join(lines[part.start - 1 : part.end]))
        except yaml.YAMLError:
            continue
        out.setdefault(source, []).extend(d for d in docs if isinstance(d, dict))
    return out


def _every_by_template(render: Render, chart: str) -> dict[str, list[dict[str, Any]]]:
    """Every object of a render per template path, the ones that cannot hold device requests too (Render.rest)."""
    return _by_template(render.stream + render.rest, chart)


def _defaults_cover(edits: list[Any], default_edits: list[Any], copts: ChartOptions) -> bool:
    """Whether values-dra.yaml, written for the chart defaults' map edits, migrates the user's values too: the user's
    --set options set no device key and pick only maps whose device keys the defaults' edits drop (goend-ark-ai's
    `--set modelConfig.current.serviceType=vllm`, served by the same resources map)."""
    if _device_sets(copts, edits):
        return False
    dropped = {(e.path, section, k) for e in default_edits for section, keys in e.removed.items() for k in keys}
    return bool(edits) and all(
        (e.path, section, k) in dropped for e in edits for section, keys in e.removed.items() for k in keys
    )


def _device_sets(copts: ChartOptions, edits: list[Any]) -> list[str]:
    """The user's --set and --set-string options that set a device key of the map edits."""
    from dramigrate.helm import passthrough as pt

    plain, strings = (
        pt.device_sets(copts.set_values, False, edits)[0],
        pt.device_sets(copts.set_string_values, True, edits)[0],
    )
    return [*plain, *strings]


def _uncovered(edits: list[Any], default_edits: list[Any], copts: ChartOptions) -> str:
    """Why values-dra.yaml, written for the chart defaults' map edits, does not migrate the user's values, and what
    to do: the --set options set device keys it drops, or ask for devices through maps it leaves as they are
    (learnwith-llm-inference's `vllm.enabled=true sglang.enabled=false` turns on vllm.resources, values-dra.yaml
    migrates sglang.resources)."""
    from dramigrate.helm.values import display

    setting = _device_sets(copts, edits)
    ours = {e.path for e in default_edits}
    migrated = ", ".join(sorted(display(p) for p in ours))
    if setting:
        how = f"--set {' '.join(setting)} sets device keys over those values-dra.yaml ({migrated}) drops"
    else:
        given = [*(f"--set {x}" for x in copts.set_values), *(f"--set-string {x}" for x in copts.set_string_values)]
        left = sorted(display(e.path) for e in edits if e.path not in ours)
        through = ", ".join(left or sorted(display(e.path) for e in edits))
        how = (
            f"with {' '.join(given)} the pods ask for devices through {through}, "
            + ("which" if left else "device keys that")
            + f" values-dra.yaml (the chart defaults' DRA values: {migrated}) leaves as it is"
        )
    return (
        f"with your values, the device request comes from values no DRA values file covers: {how}; put those --set "
        "options in a -f values file and run fix with it, which writes that file's DRA variant"
    )


def _edits_in_file(edits: list[Any], sources: ValueSources) -> list[Any]:
    """The map edits (pattern B) whose device keys a values file sets (`sources`: the chart defaults and the file)."""
    from dramigrate.helm.values import get_path

    return [
        e
        for e in edits
        if any(
            isinstance(own := get_path(sources.merged, e.section_path(section)), dict) and set(keys) & set(own)
            for section, keys in e.removed.items()
        )
    ]


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
    """The objects of one render named as `docs` are (kind and name), when they ask for `other` and not `resource`,
    with their migration (`after`) and its ResourceClaimTemplates by name; None when that render has not each of
    them, or they ask otherwise."""

    def key(d: Any) -> tuple[str, str, str]:
        meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        return str(d.get("apiVersion")), str(d.get("kind")), str(meta.get("name"))

    olds = {key(d): d for d in load_all(before) if isinstance(d, dict)}
    news = {key(d): d for d in load_all(after) if isinstance(d, dict)}
    keys = [key(d) for d in docs]
    if not keys or any(k not in olds or k not in news for k in keys):
        return None
    asked = {str(n) for k in keys for holder, section in resource_sections(olds[k]) for n in holder[section]}
    if other not in asked or resource in asked:
        return None
    templates = {str(d["metadata"]["name"]): d for d in news.values() if d.get("kind") == "ResourceClaimTemplate"}
    return [olds[k] for k in keys], [news[k] for k in keys], templates


def _packed_twin(root: Path, rels: set[str]) -> str | None:
    """Why a rewrite of an unpacked subchart (a library chart's define) cannot be made while charts/ also holds that
    chart packed: Helm renders the folder or the .tgz at random (both load under one name, twins.py), and the .tgz
    is not the folder packed, so it cannot be changed the same way. None when no such twin, or when the .tgz holds
    the folder's files (the rewrite changes both: twins.archive_writes)."""
    from dramigrate.helm.twins import difference, twins

    for twin in twins(root):
        if any(r.startswith(f"{twin.folder}/") for r in rels) and (why := difference(root, twin)):
            return (
                f"charts/ holds the chart of {twin.folder} twice, unpacked and packed ({twin.archive}), and Helm "
                f"renders either one at random; the rewrite would change both the same way, but {why}: run "
                "`helm dependency update` (it packs the folder again) and fix again"
            )
    return None


def _through_includes(outcome: ChartOutcome, sub: str, rels: set[str]) -> set[str]:
    """The templates to change: a template that only includes a define (`{{ include "nim.common.v1.deployment" . }}`
    from an unpacked library chart) stands for the file of that define, where its finding points (map_findings)."""
    prefix = f"{outcome.display}/{sub + '/' if sub else ''}"
    out = set(rels)
    for f in outcome.findings:
        via = [r for r in f.related if r.note.startswith("this line includes ") and r.file.startswith(prefix)]
        if f.resource and via and f.file.startswith(prefix) and via[0].file[len(prefix) :] in rels:
            out.discard(via[0].file[len(prefix) :])
            out.add(f.file[len(prefix) :])
    return out


def _hints(outcome: ChartOutcome, root: Path, sub: str, rels: set[str], rules: RuleSet) -> dict[str, Any]:
    """The pattern of the first device request the findings map to in each template of `rels` (relative to the
    chart `sub`, "" for the chart itself); in a template no finding maps to, of its first device line."""
    from dramigrate.helm.idiomatic import first_device_line
    from dramigrate.helm.passthrough import map_helpers

    prefix = f"{sub}/" if sub else ""
    leaf = root / sub if sub else root
    hints: dict[str, Any] = {}
    helpers = functools.cache(lambda: map_helpers(leaf))
    copied = functools.cache(lambda: _copied_keys(leaf))
    copying: set[str] = set()  # templates whose hint so far is a helper's copy of a map's device key
    for f in sorted(outcome.findings, key=lambda f: f.line):
        rel = f.file[len(outcome.display) + 1 :]
        if f.rule == "unknown-kind":  # a kind the migration leaves as is (a KaiwoJob wrapping the chart's Job in a
            continue  # define): not the shape the rewrite changes; the kind guard keeps the switch off there
        if f.resource and f.line and rel.startswith(prefix) and rel[len(prefix) :] in rels:
            rel = rel[len(prefix) :]
            if rel not in hints or rel in copying:  # the first request of each template (setdefault read and
                # classified every one); a helper's copy of a values map's device key gives way to the container
                # that takes the map (B, C): the pass-through gives the copy the map's claims
                pattern = _classified((leaf / rel).read_text(encoding="utf-8"), f, helpers)
                if rel in copying and pattern.letter not in ("B", "C"):
                    continue
                hints[rel] = pattern
                copying.discard(rel)
                if pattern.letter == "D" and f.resource in copied():
                    copying.add(rel)
    for rel in sorted(rels - hints.keys()):  # asks for devices only in value sets the findings do not come from
        try:
            hints[rel] = first_device_line((leaf / rel).read_text(encoding="utf-8"), rules)
        except (OSError, UnicodeDecodeError):
            continue
    return hints


def _classified(text: str, f: Finding, helpers: Callable[[], dict[str, str]]) -> Any:
    """The pattern of the device request of finding `f` at its line of the template `text`; a helper that only
    passes a values map through (`helpers()`, passthrough.map_helpers, read only for a helper line) makes it B."""
    from dramigrate.helm.passthrough import expand_map_helpers

    counted = _counted(f)
    pattern = classify(text, f.line, f.resource, counted)
    if pattern.letter == "D":
        return classify(expand_map_helpers(text, helpers()), f.line, f.resource, counted)
    return pattern


def _counted(f: Finding) -> tuple[str, ...]:
    """The values keys (dotted) attach_values found the finding's device count in."""
    return tuple(m.group(1) for r in f.related if (m := _COUNTED.match(r.note)))


def _repattern(findings: list[Finding], root: Path, display: str) -> None:
    """A finding named pattern B or C from a values map its line reads, where the device count comes from values
    keys outside that map (the line is in the other branch of an `if`), named again with those keys known."""
    for f in findings:
        named = re.search(r"\[chart (pattern [BC] \([^)]*\))\]", f.message)
        if named is None or not (counted := _counted(f)) or not f.file.startswith(f"{display}/"):
            continue
        text = read_text(root / f.file[len(display) + 1 :])
        if text is not None and (pattern := classify(text, f.line, f.resource, counted)).describe() != named.group(1):
            f.message = f.message.replace(named.group(0), f"[chart {pattern.describe()}]")


_COUNTED = re.compile(r"([^\[:]+)(?:\[[^\]]*\])*: .* sets this device count$")  # attach_values' note: its key


def _copied_keys(root: Path) -> set[str]:
    """The device keys a template line of the chart copies from a values resources map (passthrough.copies)."""
    from dramigrate.helm.passthrough import copies

    try:
        return {c.key for c in copies(root)}
    except (OSError, UnicodeDecodeError):
        return set()


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
    rels = _through_includes(outcome, "", wanted[""])
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
        if any(
            idiomatic.find_devices(t, rel, rules, idiomatic._named_resource(t, originals.get(rel, []), rules, h), h)
            for rel, t in texts.items()
        ):
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

    def in_leaf(by_template: dict[str, Any]) -> dict[str, Any]:
        """Objects by template path inside the leaf chart (an aliased subchart renders as charts/<alias>/...)."""
        out = {}
        for key, docs in by_template.items():
            try:
                where, rel = resolve_source(root, f"{name}/{key}")
            except RewriteError:
                continue
            if where == sub:
                out[rel] = docs
        return out

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
    wanted[sub] = _through_includes(outcome, sub, wanted[sub])
    extra = set() if sub else _shipped_templates(root, expected) - wanted[sub]
    wanted[sub] |= extra
    if why := _packed_twin(leaf, wanted[sub]):
        _manual(outcome, why, "")
        return
    hints = _hints(outcome, root, sub, wanted[sub], rules)
    if not sub and hints and all(h.letter == "A" for h in hints.values()):
        # a template with a literal device key under its own switch that the values leave off, which the proof turns
        # on (one template per serving profile), is rewritten too; one of another pattern is not taken into this
        # rewrite (a map passed through, a helper's key: vLLM production-stack's Deployment beside its RayCluster)
        turned = {rel: label for rel, label in switched_templates().items() if rel not in wanted[sub]}
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
        return _text(run_core(stream, outcome.display, rules, settings, target, fix=True), stream)

    both = _both_shapes(root / sub if sub else root, hints, rules)  # a key's branch and a map's in one container
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
        _fix_passthrough(outcome, root, copts, work, {sub: rels}, expected, hint, {sub: scopes}, switch)
        keys = _map_only_keys(root, maps, expected, rules) if outcome.manual and not sub and not switch else ""
        if keys:  # device keys only from `range` maps: the keyed-map rewrite (keyedmap.map_only), below
            outcome.findings = [f for f in outcome.findings if f.rule != "chart-rewrite-unproven"]
            outcome.manual, outcome.patch = "", ""
        elif switch and switch.both and outcome.changes and not outcome.manual and not outcome.usage:
            rel, beside = min(both.items())
            maps_too = f"; the resources map of the other branch ({rel}:{beside.line}) takes the DRA values files"
            outcome.usage = (
                _switches_usage(list(switch.keys), settings.opt_in) + f"{maps_too} (each *-dra.yaml after its file)"
            )
        if not keys:
            return
    guards, notes = idiomatic.kind_guards(expected, relations or [], rules) if not sub else ([], {})
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
            tried = ""  # why the values-only rewrite through the library's values places (libvalues.py) fails
            if found.places:
                tried = _fix_library_values(outcome, root, copts, rules, settings, target, work, expected, hints, found)
                if not tried:
                    return
            counted = list(dict.fromkeys(str(r.leaf.path[0]) for r in relations or [] if r.kind == "count"))
            why = packedlib.library_request(found, root, counted, tried)
            _manual(outcome, f"{why}{ENGINE_HINT}", outcome.patch)
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
        changes = idiomatic.build(
            leaf,
            wanted[sub],
            rules,
            originals,
            migrated,
            claim_templates,
            settings.opt_in,
            hints,
            tuple(guards),
            alter,
            {rel: sorted(names) for rel, names in named.items()},
            rendered,
        )
        changes = _in_umbrella(root, sub, changes)
    except RewriteError as exc:
        _manual(outcome, f"{f'{sub}: ' if leaves is not None else ''}{exc}{ENGINE_HINT}", "")
        return
    except (OSError, UnicodeDecodeError) as exc:
        _manual(outcome, f"cannot read a template: {exc}", "")
        return
    switch_keys = [".".join((*scope, "dra", "enabled")) for scope in scopes]
    if leaves is not None:
        shown = {f"charts/{'/charts/'.join(scope)}/{rel}" if scope else rel for scope in scopes for rel in wanted[sub]}
        leaves.append(_LeafFix(changes, switch_keys, notes, frozenset(shown)))
        return
    outcome.changes = changes = folded(changes)  # the guards' lines, fewer where they fold
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
    if len(switch_keys) > 1:
        outcome.usage = _switches_usage(switch_keys, settings.opt_in)


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
            return _text(run_core(stream, outcome.display, rules, settings, target, fix=True), stream)

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
        return _text(run_core(stream, outcome.display, rules, settings, target, fix=True), stream)

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


@dataclass(frozen=True)
class _Switch:
    """The templates of a chart with a literal device key (patterns A and E) when its other templates pass values
    resources maps through (B and C): they take the `dra.enabled` switch (idiomatic.py) beside the pass-through
    (passthrough.py), and the two are proven together."""

    rels: frozenset[str]  # as the render's sources name them, relative to the root chart (charts/<alias>/...)
    build: Callable[[list[Change]], list[Change]]  # the pass-through's changes -> the changes of both rewrites
    migrate: Callable[[str], str]  # the core's migration of a rendered stream
    keys: tuple[str, ...] = ("dra.enabled",)  # an umbrella's: one per chart with a literal key (and per alias)
    # templates of `rels` whose container takes a values map in another branch (the pass-through's), and for each
    # render of the proof (by its stream) the indexes of its documents the key's branch wrote (_key_branch_documents)
    both: frozenset[str] = frozenset()
    branched: dict[str, frozenset[int]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return ", ".join(self.keys)

    def options(self, options: Any, on: bool) -> Any:
        return _with_switches(options, on, list(self.keys))

    def switched(self, r: Render, k: int) -> bool:
        """Whether document `k` of a render is the switch's: its template's, and in a template of both shapes, written
        by the branch with the literal key."""
        rel = _template_of(r.manifests[k].source)
        return rel in self.rels and (rel not in self.both or k in self.branched.get(r.stream, ()))

    def part(self, r: Render, switched: bool) -> str:
        """The documents of a render written by the switch's templates (`switched`) or by the others."""
        return manifest_stream(
            [m for k, m in enumerate(r.manifests) if may_matter(m.text) and self.switched(r, k) == switched]
        )

    def passed(self, r: Render, want: str) -> tuple[Render, str]:
        """A value set as the pass-through reads it: the other templates' documents, and their migration."""
        if r.error:
            return r, want
        stream = self.part(r, False)
        return Render(r.manifests, stream, r.rest, r.error, r.took), self.migrate(stream)

    def want(self, r: Render) -> str:
        """The migration of a render where only the switch moves requests: its templates' documents migrated."""
        return self.migrate(self.part(r, True)) + self.part(r, False)


def _switch_part(r: Render, switch: _Switch) -> tuple[Render, str]:
    """A render as the switch's rewrite reads it: its documents, and their migration."""
    stream = switch.part(r, True)
    return Render(r.manifests, stream, r.rest, r.error, r.took), switch.migrate(stream)


def _template_of(source: str) -> str:
    """The template path a `# Source:` names, relative to the root chart (`templates/x.yaml`)."""
    return source.split("/", 1)[-1]


def _mixed_switch(
    root: Path,
    rules: RuleSet,
    work: Workdir,
    hints: dict[str, Any],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    opt_in: bool,
    relations: list[Relation],
    named: dict[str, set[str]],
    alternative: Any,
    migrate: Callable[[str], str],
    both: frozenset[str] = frozenset(),
) -> _Switch | None:
    """The `dra.enabled` switch of the pattern A and E templates of a chart whose other templates pass resources maps
    through; None when it has none. Raises RewriteError for a template that does both, unless it does them in the
    branches of an `if` on the map (`both`: the key's branch takes the switch, the map's the pass-through)."""
    from dramigrate.helm import idiomatic

    rels = frozenset(rel for rel, h in hints.items() if h.letter in ("A", "E")) | both
    if not rels:
        return None
    branched = _key_branch_documents(root, rules, work, both, expected)
    for rel, h in sorted(hints.items()):
        keys = idiomatic.find_devices((root / rel).read_text(encoding="utf-8"), rel, rules) if rel not in rels else []
        if keys:
            raise RewriteError(
                f"{rel}:{h.line}: {h.describe()}, and line {keys[0].index + 1} writes the device key itself (pattern "
                "A): the rewrite takes one of them per template (a literal key behind dra.enabled, a map passed "
                "through with resourceClaims beside it)"
            )
    switch = _Switch(rels, lambda passed: passed, migrate, both=both, branched=branched)
    originals, migrated, claim_templates, rendered = _first_changes(root, rels, expected, switch)
    guards, _ = idiomatic.kind_guards(expected, relations, rules)
    own = {rel: h for rel, h in hints.items() if rel in rels}

    def build(passed: list[Change]) -> list[Change]:
        copy_root = _rewritten_copy(root, passed, work, where="mixed")
        names = {rel: sorted(n) for rel, n in named.items() if rel in rels}
        changes = idiomatic.build(
            copy_root,
            set(rels),
            rules,
            originals,
            migrated,
            claim_templates,
            opt_in,
            own,
            tuple(guards),
            alternative,
            names,
            rendered,
            both,
        )
        return _chained(passed, changes)

    return replace(switch, build=build)


BRANCH_MARK = " # dramigrate: the key's branch"


def _key_branch_documents(
    root: Path,
    rules: RuleSet,
    work: Workdir,
    both: frozenset[str],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
) -> dict[str, frozenset[int]]:
    """For each render of the proof with a document of a template in `both`, the indexes of the documents its branch
    with the literal device key wrote: read off a copy of the chart whose key lines end in a YAML comment, rendered
    with the same values (the branches cannot be told apart by the rendered text: a map may hold the same key)."""
    from dramigrate.helm import idiomatic

    if not both:
        return {}
    marked = []
    for rel in sorted(both):
        text = (root / rel).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        for d in idiomatic.find_devices(text, rel, rules):
            body = lines[d.index].rstrip("\r\n")
            lines[d.index] = body + BRANCH_MARK + lines[d.index][len(body) :]
        marked.append(Change(rel, text, "".join(lines)))
    copy_root = _rewritten_copy(root, marked, work, where="branches")
    shown = [
        (v, r) for v, r, _, _ in expected if not r.error and any(_template_of(m.source) in both for m in r.manifests)
    ]
    renders = render_all([functools.partial(cached_render, copy_root, v.options) for v, _ in shown])
    out = {}
    for (v, r), again in zip(shown, renders, strict=True):
        if again.error or [m.source for m in again.manifests] != [m.source for m in r.manifests]:
            raise RewriteError(f"with {v.label}, the chart renders other documents with its device keys marked")
        out[r.stream] = frozenset(k for k, m in enumerate(again.manifests) if BRANCH_MARK in m.text)
    return out


def _first_changes(
    root: Path,
    rels: frozenset[str],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    switch: _Switch | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]], dict[str, Any], Any]:
    """Each template's objects before and after the migration, read from the first value set whose migration
    changes it, the claim templates of those migrations by name, and each template's every object in that render
    (unittest_suite.Rendered). Raises RewriteError for a template none does. With a `switch`, only its documents
    (a template of both shapes: those of the key's branch) and their migration."""
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.unittest_suite import Rendered

    name = chart_name(root)
    originals: dict[str, list[dict[str, Any]]] = {}
    migrated: dict[str, list[dict[str, Any]]] = {}
    claim_templates: dict[str, Any] = {}
    rendered = Rendered()
    for v, r, want, _ in expected:
        if r.error or v.invalid:
            continue
        if switch is not None and switch.both:
            r, want = _switch_part(r, switch)
        before, after = _by_template(r.stream, name), _by_template(want, name)
        took = {rel for rel in rels - originals.keys() if before.get(rel) != after.get(rel)}
        for rel in took:
            originals[rel], migrated[rel] = before.get(rel, []), after.get(rel, [])
        if took:
            every = _every_by_template(r, name)
            rendered = Rendered({**rendered.documents, **{rel: every[rel] for rel in took}}, v.options.release_name)
        if took:
            claim_templates |= {
                str(d["metadata"]["name"]): d
                for k, ds in objects(want).items()
                if k[1] == "ResourceClaimTemplate"
                for d in ds
            }
    if missing := sorted(rels - originals.keys()):
        raise RewriteError(f"{missing[0]}: no value set of the proof renders its device request installably")
    return originals, migrated, claim_templates, rendered


def _fix_map_built(
    outcome: ChartOutcome,
    root: Path,
    rules: RuleSet,
    settings: Settings,
    work: Workdir,
    rels: frozenset[str],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    mode: str,
    named: dict[str, set[str]],
    alternative: Any,
    sub: str = "",
) -> None:
    """Pattern F templates whose container resources are a map built in variables (mapvars.py), behind the
    dra.enabled switch, proven as pattern A is (prove_switch). With `sub`, the templates of an umbrella's subchart
    (`charts/llm-service`, the RAG umbrella's): rewritten there, the switch under the keys the umbrella passes it
    values by (`llm-service.dra.enabled`), proven by rendering the umbrella."""
    from dramigrate.helm import mapvars

    leaf = root / sub if sub else root
    scopes = _subchart_scopes(root, leaf)
    # the umbrella's render names the subchart's templates charts/<name or alias>/templates/x.yaml (the first alias's
    # objects stand for all: the proof renders each)
    prefix = "".join(f"charts/{key}/" for key in scopes[0])
    try:
        originals, migrated, claim_templates, _ = _first_changes(root, frozenset(prefix + r for r in rels), expected)
        originals, migrated = ({k.removeprefix(prefix): v for k, v in d.items()} for d in (originals, migrated))
        names = {rel: sorted(n) for rel, n in named.items()}
        chart = chart_name(root)
        renders = [_by_template(r.stream, chart) for v, r, _, _ in expected if _own_render(v, r)]
        tolerated = {rel: mapvars.self_tolerated([by.get(prefix + rel, []) for by in renders]) for rel in rels}
        together = frozenset(
            rel for rel in rels if mapvars.at_once([by.get(prefix + rel, []) for by in renders], rules)
        )
        changes = mapvars.build(
            leaf,
            set(rels),
            rules,
            originals,
            migrated,
            claim_templates,
            settings.opt_in,
            alternative,
            names,
            tolerated,
            together,
        )
        changes = _in_umbrella(root, sub, changes)
    except RewriteError as exc:
        _manual(outcome, f"{sub}/{exc}{ENGINE_HINT}" if sub else f"{exc}{ENGINE_HINT}", "")
        return
    keys = [".".join((*scope, "dra", "enabled")) for scope in scopes]
    outcome.changes = changes = folded(changes)  # the guards' lines, fewer where they fold
    patch = outcome.diff()
    own = [c for c in changes if not Path(c.rel).is_absolute()]
    copy_root = _rewritten_copy(root, own, work, skip=frozenset({"Chart.yaml"}))
    prove_switch(
        outcome,
        root,
        expected,
        lambda options, on: cached_render(copy_root, _with_switches(options, on, keys)),
        patch,
        mode,
    )
    if sub:
        outcome.usage = _switches_usage(keys, settings.opt_in)


def _maps_left_off(root: Path, switched: dict[str, str], built: frozenset[str]) -> frozenset[str]:
    """The other templates that build a resources map in variables (mapvars.site) and ask for a device in a value set
    the proof renders, not in the user's (tvarr's coordinator with gpu.enabled flipped, where the user's values
    enable the transcoder's GPU only): rewritten with `built`, else that value set's switch-on render would keep
    their device-plugin request."""
    from dramigrate.helm import mapvars

    found = set()
    for rel in set(switched) - built:
        try:
            if mapvars.site((root / rel).read_text(encoding="utf-8")):
                found.add(rel)
        except (OSError, UnicodeDecodeError):
            continue
    return frozenset(found)


def _switched_literal(
    outcome: ChartOutcome,
    root: Path,
    wanted: set[str],
    rules: RuleSet,
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    switched_templates: dict[str, str],
) -> tuple[frozenset[str], dict[str, Any], dict[str, Any], dict[str, Any]] | None:
    """The pattern-A templates under a switch of their own that the values leave off and the proof turns on
    (_switched_templates), with their objects before and after the migration read from the first value set that
    renders them (_first_changes): for the helper rewrite to rewrite beside its own; None when there are none."""
    switched = _hints(outcome, root, "", set(switched_templates) - wanted, rules)
    literal = frozenset(rel for rel, h in switched.items() if h.letter == "A")
    if not literal:
        return None
    try:
        originals, migrated, claim_templates, _ = _first_changes(
            root, literal, [e for e in expected if _own_render(*e[:2])]
        )
    except RewriteError:
        return None
    return literal, originals, migrated, claim_templates


def _own_render(v: Variation, r: Render) -> bool:
    """A value set's render shows what the chart's own templates write (no device added to its values maps)."""
    return not (r.error or v.invalid or v.label.endswith(ADDED_DEVICE))


def _map_built(root: Path, rels: set[str], hints: dict[str, Any], rules: RuleSet) -> frozenset[str]:
    """The templates of `rels` when each has its container resources a map built in variables: pattern F, or A or E at a
    device key the pod writes beside that map (smg-gateway's `{{ $gpuType }}: {{ $gpuCount }}` in the `else`)."""
    from dramigrate.helm import mapvars

    try:
        found = {
            rel
            for rel in rels
            if hints.get(rel) and mapvars.takes((root / rel).read_text(encoding="utf-8"), hints[rel], rules)
        }
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return frozenset(found) if found == rels else frozenset()


def _chained(first: list[Change], then: list[Change]) -> list[Change]:
    """Two rewrites of one chart, the second made on the first's result, as one list of changes with one version
    bump (the second's Chart.yaml change bumps it again)."""
    out = {c.rel: c for c in first}
    for c in then:
        if c.rel == "Chart.yaml" and c.rel in out:
            continue
        out[c.rel] = Change(c.rel, out[c.rel].before if c.rel in out else c.before, c.after)
    return list(out.values())


@dataclass(frozen=True)
class Flip:
    """A switch the proof turns against the chart's default through values, where the rewrite's documentation tells
    the user to set it (pattern D: `dra.enabled` in values.yaml, or in each values object a helper's call site gets),
    so that both sides are proven on the chart as written."""

    default: bool  # the switch when the values do not set it
    options: Callable[[Any], Any]  # a value set's render options with the switch set against its default
    label: str  # where it was set, for messages (`dra.enabled=true set in each steps.<name>`)
    migrate: Callable[[str], str]  # the core's migration of a rendered stream


def prove_switch(
    outcome: ChartOutcome,
    root: Path,
    expected: list[Any],
    rewritten: Callable[[Any, bool], Render],
    patch: str,
    mode: str,
    notes: dict[str, str] | None = None,
    flip: Flip | None = None,
) -> None:
    """Proofs (L) and (D) of a rewrite behind a values switch, over the value sets of `expected`: rendered with the
    switch off (`rewritten(options, False)`) every set is byte-identical to the original chart's render, and with
    it on it equals the migration of that render; a set that adds a device the templates do not ask for is only
    checked off, and so is a set whose original render Kubernetes would refuse for a device count (launcher
    placeholders as the chart's defaults, a request unlike its limit): it proves nothing about the DRA branch, which
    at least one set with device requests must prove. The first failure makes the chart manual work, with the
    patch. The renders run in parallel (render_each), each value set compared as soon as its renders are in.
    With a `flip`, the side against its default is rendered with `flip.options` (the switch set in the values); when
    that side differs from the value set's own render, the original chart is rendered with those values too, and if
    they change it (z2jh's hub Secret shows its values), that render (migrated, for the switch on) is the reference."""
    turned = flip is not None and not flip.default  # the side rendered with the switch set in the values
    calls: list[Callable[[], Render]] = []
    for v, *_ in expected:
        options = {on: flip.options(v.options) if flip and on == turned else v.options for on in (False, True)}
        calls += [
            functools.partial(rewritten, options[False], False),
            functools.partial(rewritten, options[True], True),
        ]
    renders = render_each(calls)  # each value set compared while the next ones render
    seconds = iter(agains(root, [v.options for v, *_ in expected]))  # the second renders, read on a difference only
    proven_on = False  # a value set with device requests proven with the switch on
    yours: set[str] | None = None  # the device resources the original chart asks for with the user's values
    try:
        for v, original, want, _ in expected:
            off, on, again = next(renders), next(renders), next(seconds)
            if original.error:
                if not (off.error and on.error):
                    _finish(renders)
                    why = "the original chart fails to render but the rewritten one renders"
                    _manual(outcome, f"with {v.label}, {why}", patch)
                    return
                continue
            added = v.label.endswith(ADDED_DEVICE)  # a device the chart's own templates do not ask for: checked off
            devices = _render_devices(original)
            yours = devices if yours is None else yours
            ref = {False: (original, again, want), True: (original, again, want)}
            said = {False: f"with {v.label} and the DRA switch off", True: f"with {v.label} and the DRA switch on"}
            if flip:
                said[turned] = f"with {v.label} and {flip.label}"
            sides = {False: off, True: on}
            why = {s: _side_unproven(s, said[s], sides[s], ref[s], added, root) for s in (False, True)}
            if any(why.values()) and (later := render_later(root, v.options)) is not None:  # the clock's next step
                late = (original, later, want)
                why = {s: why[s] and _side_unproven(s, said[s], sides[s], late, added, root) for s in (False, True)}
            if flip and why[turned] and (given := _turned_original(root, flip, v.options, original, again)):
                ref[turned] = given
                why[turned] = _side_unproven(turned, said[turned], sides[turned], given, added, root)
            base, twice, wanted = ref[True]
            if why[True] and not why[False] and v.invalid:
                why[True] = _not_proven_apart_from_invalid(said[True], base, twice, wanted, on, v)
                if not why[True]:
                    outcome.checked.append(
                        f"{v.label} (switch off only: the original render is not installable: {v.invalid})"
                    )
                    continue
            if why[True] and not why[False] and _over_limit(sides[True], base, wanted):
                outcome.checked.append(
                    f"{v.label} (switch off; on, the migration refuses the pod and the render fails)"
                )
                continue
            if why[True] and not why[False] and _refused(v, added or bool(devices - yours), sides[True]):
                outcome.checked.append(f"{v.label} (switch off; on, the DRA branch fails the render: {UNTAKEN})")
                continue
            if why[False] or why[True]:
                _finish(renders)
                _manual(outcome, why[True] if on.error and not off.error else why[False] or why[True], patch)
                return
            if added:  # it stays a device-plugin request, as before
                outcome.checked.append(f"{v.label} (switch off)")
                continue
            proven_on = proven_on or wanted != base.stream
            outcome.checked.append((notes or {}).get(v.label, v.label))
    except BaseException:
        _finish(renders)  # a render past its limits ends the run first, as before any comparison
        raise
    if not proven_on:
        why = (
            "no value set with device requests renders a chart Kubernetes would install, so the DRA switch is unproven"
        )
        _manual(outcome, f"{why}: {'; '.join(outcome.checked)}", patch)
        return
    on = (lambda o: rewritten(flip.options(o), True)) if flip and turned else (lambda o: rewritten(o, True))
    if why := _user_claims(outcome, root, expected[0][0], on):
        _manual(outcome, why, patch)
        return
    if not outcome.writable and mode == "fix":
        _manual(
            outcome,
            "a packaged chart is not rewritten in place: unpack it (tar xzf) and run fix on the folder; the patch "
            "below was proven",
            patch,
        )
        outcome.patch_proven = True


def _user_claims(outcome: ChartOutcome, root: Path, v: Variation, on: Callable[[Any], Render]) -> str:
    """The proof's value set `v` with a claim of the user's own in each resourceClaims value (claimsprobe.py), the
    DRA switch on (`on`: the rewritten chart's render of some options with it on): '' when proven or when the values
    have no such place; noted in `outcome.checked`."""
    import tempfile

    from dramigrate.helm import claimsprobe

    extra = claimsprobe.overlay(chart_defaults(root))
    if not extra or v.options is None:
        return ""
    with tempfile.TemporaryDirectory(prefix="dramigrate-claims-") as folder:
        given = Path(folder) / "claims.json"
        given.write_text(json.dumps(extra), encoding="utf-8")
        options = replace(v.options, values_files=(*v.options.values_files, given))
        case = f"with {v.label}, the DRA switch on and a claim of the user's own in each resourceClaims value"
        why = claimsprobe.unproven(case, on(options), on(v.options), cached_render(root, options, fresh=True))
    if not why:
        outcome.checked.append(f"{v.label} with a claim of the user's own in each resourceClaims value (switch on)")
    return why


def _refused(v: Variation, added: bool, on: Render) -> bool:
    """Whether the switch-on render of a value set that picks another vendor of the device choice (or adds a device
    the user's values do not ask for: one put in every resources map, or one a switch of the chart adds, frigate's
    `gpu.nvidia.enabled` beside an Intel GPU in `resources`) fails with the DRA branch's own guard: a device
    resource its claim does not take is refused, not silently left to the device plugin (helper.MapChoice,
    mapvars)."""
    return (v.vendor or added) and bool(on.error) and UNTAKEN in on.error


def _over_limit(on: Render, original: Render, wanted: str) -> bool:
    """Whether the switch-on render fails where the migration refuses the pods (it leaves the original render as it
    is): a device kind asking for more than the 32 devices the scheduler allocates to one claim (multiclaim.py)."""
    from dramigrate.helm.model import OVER_LIMIT

    return bool(on.error) and OVER_LIMIT in on.error and wanted == original.stream


def _render_devices(render: Render) -> set[str]:
    """The device resources the containers of a render ask for."""
    from dramigrate.helm.idiomatic import _rendered_devices
    from dramigrate.helm.poddelta import shipped_rules

    docs = [d for docs in objects(render.stream).values() for d in docs]
    return _rendered_devices(docs, shipped_rules()) if not render.error else set()


def _side_unproven(
    on: bool, case: str, new: Render, reference: tuple[Render, Render, str], added: bool, root: Path | None = None
) -> str:
    """Why one side of a value set is not proven ('' when it is): with the switch off the rewritten chart renders
    byte for byte the original's render (`reference`: that render, a second one, and its migration), with it on the
    migration (a set that adds a device the templates do not ask for is checked off only)."""
    if new.error:
        return f"{case}, the rewritten chart does not render: {new.error}"
    original, again, want = reference
    if not on:
        return _not_identical(case, original, again, new)
    return "" if added else _not_proven_on(case, original, again, want, new, root=root)


def _turned_original(
    root: Path, flip: Flip, options: Any, original: Render, again: Render
) -> tuple[Render, Render, str] | None:
    """The original chart rendered with a value set's values and the switch set in them (twice: random values
    masked), and that render migrated, when setting the switch changes what the original renders (z2jh embeds its
    values in the hub Secret); None when it does not, or the original refuses the key (a closed values schema)."""
    turned = flip.options(options)
    given = cached_render(root, turned)
    if given.error or not _not_identical("", original, again, given):
        return None
    return given, cached_render(root, turned, fresh=True), flip.migrate(given.stream)


def _fix_library_values(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    work: Workdir,
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    hints: dict[str, Any],
    found: Any,
) -> str:
    """A device request a packed library writes from values it has places for claims in (bjw-s common, libvalues.py):
    the pass-through's rewrite and proof without template edits, the pods' siblings in the library's pod options.
    Returns "" when it holds (or the outcome is final: a packaged chart's proven patch), else why not, with the
    outcome as before it but for the patch tried (the caller writes the manual finding, naming the library)."""
    from dramigrate.helm.libvalues import placer
    from dramigrate.helm.rewrite import chart_name

    first = min(hints.items(), key=lambda kv: (kv[0], kv[1].line))
    findings, fixed = list(outcome.findings), [f.fixed for f in outcome.findings]
    place = placer(found.lib.title, found.places, chart_name(root))
    _fix_passthrough(outcome, root, copts, work, {"": set()}, expected, first, {"": [()]}, places=place)
    if not outcome.manual or outcome.patch_proven:
        return ""
    tried = outcome.manual.removesuffix(ENGINE_HINT)
    outcome.manual, outcome.changes = "", []
    outcome.findings[:] = findings
    for f, was in zip(findings, fixed, strict=True):
        f.fixed = was
    return tried


def _values_files(root: Path, copts: ChartOptions) -> list[Path]:
    """The values files every render of a chart run reads: the -f files, and the chart's and its unpacked subcharts'
    values.yaml (a shipped values file is checked when the proof takes it, other YAML of the chart never)."""
    own = [
        p
        for p in sorted(root.rglob("values.yaml"))
        if not {"templates", "crds", "tests"} & set(p.relative_to(root).parts[:-1])
    ]
    return [*copts.values_files, *own]


# a document's top-level `apiVersion:` and `kind:`: a Kubernetes object, which a values file is not
_MANIFEST_HEAD = re.compile(r"^apiVersion:[ \t]*[\w.-]+(?:/[\w.-]+)?[ \t]*$", re.M)
_MANIFEST_KIND = re.compile(r"^kind:[ \t]*[A-Z]\w*[ \t]*$", re.M)


def shipped_files(outcome: ChartOutcome, root: Path, copts: ChartOptions, rules: RuleSet) -> list[Path]:
    """The chart's own values files that name a device resource (`ci/gpu-values.yaml`, `values-gpu.yaml`; not
    values.yaml, templates/, charts/ or tests/, nor the -f files the user names), each checked as a values file:
    every rewrite's proof renders each (_fix), the pass-through writes a DRA variant of each that asks for devices."""
    out = []
    given = {p.resolve() for p in copts.values_files}
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        rel = path.relative_to(root)
        if rel.parts[0] in ("templates", "charts", "tests") or len(rel.parts) > 3 or path.resolve() in given:
            continue
        if rel.name in ("Chart.yaml", "values.yaml", "Chart.lock") or rel.stem.endswith("-dra"):
            continue
        text = read_text(path)
        names = re.findall(r"[\w.-]+\.[a-z]+/[\w.-]+", text or "")
        if not any(rules.is_device_candidate(n) and rules.lookup(n) is not None for n in names):
            continue
        if _MANIFEST_HEAD.search(text or "") and _MANIFEST_KIND.search(text or ""):
            continue  # Kubernetes objects (a render the chart ships, ai-workloads' out.yaml), not values
        check_values_file(str(path), f"{outcome.display}/{rel.as_posix()}")  # a value set of the proof from here on
        out.append(path)
    return out


def _fix_passthrough(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    work: Workdir,
    leaves: dict[str, set[str]],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    hint: tuple[str, Any],
    scopes: dict[str, list[tuple[str, ...]]],
    switch: _Switch | None = None,
    places: Placer | None = None,
) -> None:
    """The pass-through rewrite (_passthrough), its values-dra.yaml migrating the maps under switches the defaults
    leave off too; when that does not prove, the rewrite with values-dra.yaml for the defaults' maps alone (a --set
    that switches the others on is then not covered, and said so)."""
    kept = (list(outcome.findings), [f.fixed for f in outcome.findings], list(outcome.checked), outcome.usage)
    args = (outcome, root, copts, work, leaves, expected, hint, scopes, switch, places)

    def again() -> bool:
        """Whether the try just made failed the proof (then the outcome is reset for the next)."""
        if not outcome.manual or outcome.patch_proven:
            return False
        outcome.findings[:], outcome.checked[:], outcome.usage = kept[0], kept[2], kept[3]
        for f, was in zip(kept[0], kept[1], strict=True):
            f.fixed = was
        outcome.manual, outcome.patch, outcome.changes, outcome.patch_proven = "", "", [], False
        return True

    folded, overlaid = _passthrough(*args, fold=True)
    if folded and again():
        overlaid |= _passthrough(*args, fold=False)[1]
    if not overlaid or not again():
        return
    # the -dra.yaml overlays did not prove (a null of a key only the file sets, in a map no template line can drop it
    # from): each is a copy of its file with the device key replaced, given in place of the file
    if _passthrough(*args, fold=True, copies=True)[0] and again():
        _passthrough(*args, fold=False, copies=True)


def _passthrough(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    work: Workdir,
    leaves: dict[str, set[str]],
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    hint: tuple[str, Any],
    scopes: dict[str, list[tuple[str, ...]]],
    switch: _Switch | None,
    places: Placer | None,
    fold: bool,
    copies: bool = False,
) -> tuple[bool, bool]:
    """Patterns B and C (passthrough.py): the templates pass `resourceClaims` through beside the resources
    maps, one new template renders `resourceClaimTemplates` from values, and each values file that asks for
    devices gets a DRA variant. `leaves`: the templates to change by chart ("" the chart itself, else an
    umbrella's subcharts, each passed its values under the keys `scopes[sub]`: its name or its aliases).
    Proven: (L) every value set renders byte-identical with the original values; (D) with the variants in place
    of the files, the render equals the migration of the original render and is strict-valid for Kubernetes
    1.34 and 1.36. With a `switch`, its templates (a literal device key) take `dra.enabled` as well: (L) with it off,
    (D) with it on (a value set no DRA file covers: only their requests migrated). With `places`, a packed library
    writes the objects (libvalues.py): no template passes anything through, the pods' siblings go where `places`
    puts them (the library's pod options, rendered without `tpl`: the claim templates keep bare names)."""
    from dramigrate.helm import passthrough as pt
    from dramigrate.helm.idiomatic import _device_class
    from dramigrate.helm.libvalues import CHANGE as LIBRARY_CHANGE
    from dramigrate.helm.render import _merge_maps
    from dramigrate.helm.rewrite import chart_name

    def named(edits: list[Any], rcts: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
        """The claim templates by the values scope of the chart whose pods take them (each leaf its own)."""
        out = {}
        left = list(edits)
        for scope in (scope for keys in scopes.values() for scope in keys):
            mine = [e for e in left if tuple(e.path[: len(scope)]) == scope]  # another subchart's map: not its
            left = [e for e in left if e not in mine]
            if mine:
                out[scope] = pt.claim_names(mine, rcts, chart_name(root), scoped)
        if left:
            raise pt.NotPassThrough(f"{display(left[0].path)} asks for devices in none of the subcharts fix changes")
        return out

    def edits_of(options: Any, render: Render, want: str) -> tuple[Any, list[Any], dict[str, Any]]:
        """The values of a value set, the map edits that make the chart render its migration, and the claim
        templates (found by rendering with a marker in each resources map)."""
        sources = value_sources(root, outcome.display, copts, options)
        for flats in (True, False):  # a marker in a flat map may fail the chart's render: then in the others only
            more = wholemaps.whole_maps(_templates(root, helpers=True), sources.merged)  # `toYaml .Values.flavor`
            marked, maps = pt.marked_values(
                sources.merged, flats, places.maps(sources.merged) if places else None, more
            )
            probe = cached_render(root, copts.render((work.values_file(override(sources, marked)),), sets=False))
            if not probe.error:
                break
        if probe.error:
            raise pt.NotPassThrough(f"the chart does not render with a marker in each resources map: {probe.error}")
        copied = frozenset(c.read for c in pt.copies(root)) if list(leaves) == [""] else frozenset()
        edits, rcts = pt.map_edits(render.stream, want, pt.feeds(probe.stream, maps), sources.merged, hint, copied)
        if places:
            places(edits, sources.merged)
        elif any("tolerations" in e.siblings or e.covered for e in edits):
            undeclared = pt.undeclared_lists(edits, marked)  # one a pod without the map may render too
            for planted, named in dict.fromkeys((p, n) for p in (undeclared, ()) for n in ("", "tolerations")):
                # a marker in a list of other maps may fail the render: then in theirs
                listed, lists = pt.marked_lists(marked, named, planted)
                found = cached_render(root, copts.render((work.values_file(override(sources, listed)),), sets=False))
                if not found.error:
                    break
            if not found.error:  # the values list the pods render their tolerations from (else beside the map)
                places_in = (found.stream, maps, lists, edits, found.rest, joined(), listed, planted)
                pt.toleration_places(*places_in, original=render.stream, values=sources.merged)
            for sub, rels in leaves.items():  # a helper call writes the pod's: the toleration under its own key
                pt.own_key_for_calls(root / sub if sub else root, rels, edits)
        if not places:
            pt.count_siblings(root, edits, sources.merged, scopes)  # the counts a template line reads itself
        return sources, edits, rcts

    def passed(r: Render, want: str) -> tuple[Render, str]:
        return switch.passed(r, want) if switch else (r, want)

    @functools.cache
    def joined() -> frozenset[str]:
        """The values lists the chart's templates (its subcharts' too) join the device toleration to."""
        files = [p for p in sorted(root.rglob("*")) if "templates" in p.relative_to(root).parts and p.is_file()]
        return pt.joined_lists([t for p in files if not p.is_symlink() and (t := read_text(p)) is not None])

    folded: set[str] = set()  # the value sets whose switched-on maps values-dra.yaml migrates too
    inert: set[str] = set()  # with those maps, values-dra.yaml's claim templates, which some value sets name none of

    def switched_on(defaults: dict[str, Any], edits: list[Any], rcts: dict[str, Any]) -> None:
        """Add to the defaults' map edits those of the maps the chart ships with device keys under a switch the
        defaults leave off (archana's `configs.int8.resources` under `configs.int8.enabled: false`): read off each
        value set of the proof that turns one on and leaves every map it renders as the defaults set it, so
        values-dra.yaml covers any --set of the chart's own switches."""
        ours, name = {e.path for e in edits}, chart_name(root)
        defaults_asking: dict[str, list[dict[str, Any]]] = {}  # the defaults' objects that ask for devices
        if default is not None:
            before, after = _by_template(default[0].stream, name), _by_template(default[1], name)
            defaults_asking = {t: docs for t, docs in before.items() if after.get(t) != docs}

        def changes_template(t: str) -> bool:
            """Whether the rewrite changes the template a render names `t` (an umbrella's subchart's too)."""
            try:
                sub, rel = resolve_source(root, f"{name}/{t}")
            except RewriteError:
                return False
            return rel in leaves.get(sub, ())

        for v, r, want, _ in expected:
            if v.label in ("your values", "default values") or v.label.startswith("-f ") or r.error:
                continue
            through, through_want = passed(r, want)
            if v.label.endswith(ADDED_DEVICE) or not through_want or through_want == through.stream:
                continue
            if _switches_nothing(value_sources(root, outcome.display, copts, v.options).merged, defaults, ours):
                continue  # a count or a tolerations list changed: no map turned on (it saves the renders below)
            before, after = _by_template(through.stream, name), _by_template(through_want, name)
            if any(after.get(t) != docs and not changes_template(t) for t, docs in before.items()):
                continue  # a template the rewrite leaves as it is asks for devices there (one under its own switch)
            asking = {t: docs for t, docs in before.items() if after.get(t) != docs}
            if asking.items() <= defaults_asking.items():
                continue  # the defaults' own objects ask for devices, as they render them (another component off)
            try:
                vsources, more, more_rcts = edits_of(v.options, through, through_want)
            except (pt.NotPassThrough, InputError):
                continue
            new = [e for e in more if e.path not in ours]
            if new and all(get_path(vsources.merged, e.path) == get_path(defaults, e.path) for e in more):
                edits += new
                rcts.update(more_rcts)
                ours |= {e.path for e in new}
                folded.add(v.label)

    by_options = {repr(v.options): (v, *passed(r, want)) for v, r, want, _ in expected}
    variants: dict[Path, str] = {}
    unvaried: dict[Path, str] = {}  # shipped values files fix cannot write a DRA variant of, with the reason
    removed: set[tuple[Path_, str, str]] = set()  # (values map, section, device key) the DRA values drop
    whole_lists: set[Path_] = set()  # tolerations lists the DRA values carry whole (the toleration at the end)
    streams: dict[Path, tuple[str, str, str]] = {}  # values file -> (its render, that migrated, its other objects)
    paths: dict[Path_, set[str]] = {}  # values resources map -> the pod-level siblings the migration fills
    namespaced, classes = False, set[str]()
    files = list(
        dict.fromkeys(
            [*copts.values_files, *(Path(v.label[3:]) for v, _, _, _ in expected if v.label.startswith("-f "))]
        )
    )

    def take(edits: list[Any], rcts: dict[str, Any], templates: dict[tuple[str, ...], dict[str, Any]]) -> None:
        """What one DRA values file's edits need of the chart: a namespace, classes, pass-throughs, dropped keys."""
        nonlocal namespaced
        namespaced |= any(bool(t["metadata"].get("namespace")) for t in rcts.values())
        classes.update(_device_class(spec) for own in templates.values() for spec in own.values())
        for e in edits:  # each file's edits of a map may fill other siblings (KubeRay's num-gpus in one file only)
            beside = {n for n in e.siblings if n not in e.places}  # a sibling placed elsewhere: in the values only
            paths.setdefault(e.path, set()).update({"resourceClaims", *beside, *e.unpinned})
            paths[e.path].update(f"{pt.DEVICE}{k}" for keys in e.removed.values() for k in keys)
            paths[e.path].update([f"{pt.JOINS}{'.'.join(map(str, e.joins))}"] if e.joins else [])
            if e.flat:
                paths[e.path].add(pt.SECTION_CONTENT)
        removed.update((e.path, s, k) for e in edits for s, keys in e.removed.items() for k in keys)
        whole_lists.update(e.places["tolerations"] for e in edits if "tolerations" in e.places)
        whole_lists.update(e.kept_in for e in edits if e.kept_in)  # the pods' own list, no line joins (said)

    def device_sets_overlay(after: tuple[str, ...] | None = None) -> tuple[tuple[str, ...], str, Any, tuple]:
        """The DRA values standing for the user's --set expressions that set device keys: (those expressions, the
        overlay's text, the user's options without them, edits_of the user's render); ((), "", copts, ...) when
        no --set sets one. `after`: overlay_text's (values-set-dra.yaml goes after the user's -f files)."""
        found = ysources, set_edits, set_rcts = edits_of(copts.render(), *yours)
        plain = pt.device_sets(copts.set_values, False, set_edits)
        strings = pt.device_sets(copts.set_string_values, True, set_edits)
        given = (*(f"--set {x}" for x in plain[0]), *(f"--set-string {x}" for x in strings[0]))
        if not given:
            return (), "", copts, found
        set_templates = named(set_edits, set_rcts)
        take(set_edits, set_rcts, set_templates)
        underneath = value_sources(root, outcome.display, copts, copts.render(sets=False)).merged
        start = _merge_maps(plain[1], strings[1])
        values = pt.overlay_values(set_edits, set_templates, ysources.merged, start, underneath)
        for kept_null in _set_kept_nulls(root, values, scopes) if after is not None else ():  # a -f file's key
            paths.setdefault(kept_null[:-2], set()).add(pt.DROP_NULLS)
        without = replace(
            copts,
            set_values=tuple(x for x in copts.set_values if x not in plain[0]),
            set_string_values=tuple(x for x in copts.set_string_values if x not in strings[0]),
        )
        return given, pt.overlay_text(values, given, after=after), without, found

    stands_for: tuple[str, ...] = ()  # the --set options values-dra.yaml stands for (`--set a=1`), if it does
    switched = False  # values-dra.yaml overlays the defaults' device keys that the user's --set switches on
    beneath = False  # values-dra.yaml, written for the defaults, covers the user's --set too (it sets no device key)
    uncovered = _UNCOVERED  # why no DRA values file covers the user's values, when none does
    kept = copts  # the user's options without them
    set_for: tuple[str, ...] = ()  # the --set of device counts values-set-dra.yaml stands for, over values that ask
    set_text = ""  # values-set-dra.yaml
    try:
        scoped = not places and all(pt.release_scoped(root / sub if sub else root, r) for sub, r in leaves.items())
        overlay = ""
        dvalues: dict[str, Any] = {}  # what values-dra.yaml sets
        default_edits: list[Any] = []  # the chart defaults' DRA values (values-dra.yaml): its map edits and templates
        default_templates: dict[tuple[str, ...], dict[str, Any]] = {}
        default_rcts: dict[str, Any] = {}
        base_edits: list[Any] = []  # those of the maps the defaults render (default_edits adds the switched-off ones)
        dsources = None
        default = next((passed(r, want) for v, r, want, _ in expected if v.label == "default values"), None)
        # a switch beside a map in one template: the maps of the chart's own switches go into values-dra.yaml too
        folds = fold and places is None
        asked = bool(default and default[1] and default[1] != default[0].stream)  # the defaults' maps ask for one
        if asked:
            dsources, default_edits, default_rcts = edits_of(copts.render((), sets=False), *default)
        elif folds and switch is not None:
            dsources = value_sources(root, outcome.display, copts, copts.render((), sets=False))
        if dsources is not None:
            base_edits = list(default_edits)
            if folds:
                switched_on(dsources.merged, default_edits, default_rcts)
            if not (asked or default_edits):  # no map of the chart's own switches asks for a device either
                dsources = None
            default_templates = named(default_edits, default_rcts)
            if len(default_edits) > len(base_edits):  # a value set of a switch may leave the defaults' unnamed too
                inert = pt.template_names(default_templates)
        yours = next((passed(r, want) for v, r, want, _ in expected if v.label == "your values"), None)
        for f in files:
            options = copts.render((f,), sets=False)
            _, r, want = by_options.get(repr(options), (None, Render([], ""), ""))
            alone = not (r.error and f in copts.values_files and yours)
            # the file's own device keys may ask for devices only with the user's --set (`ollama.enabled=true`)
            by_set = f in copts.values_files and yours and yours[1] != yours[0].stream and want in ("", r.stream)
            if by_set:
                alone = False
            if not alone:  # the file does not render alone (a chart without values.yaml reads the user's other
                options, (r, want) = copts.render(), yours  # files and --set): its device keys in the user's values
            if not want or want == r.stream:
                continue  # this file alone asks for no device
            fsources, edits, rcts = edits_of(options, r, want)
            if not alone:
                filed = value_sources(root, outcome.display, copts, copts.render((f,), False))
                own = _edits_in_file(edits, ValueSources(filed.user, {}) if by_set else filed)
                if not own or (by_set and own != edits):
                    continue  # the device keys are in the user's other files or --set (or, by_set, the defaults)
                edits = own
            try:
                templates = named(edits, rcts)  # a shipped file's maps of a subchart fix leaves: no variant (said)
                # given with values-dra.yaml, the variant drops the default claim templates its pods no longer name
                stale = pt.superseded(edits, templates, base_edits, default_templates)
                carried = {s: {**templates.get(s, {}), **stale.get(s, {})} for s in dict.fromkeys([*templates, *stale])}
                lists = pt.stale_lists(edits, base_edits, fsources.merged)
                if copies:  # the file with the device key replaced in it, given in place of the file
                    variants[f] = pt.variant_text(f, edits, carried, fsources.merged, chart_defaults(root), lists)
                else:  # only what DRA changes, given after the file
                    values = pt.variant_overlay(edits, carried, fsources.merged, lists)
                    for kept_null in _set_kept_nulls(root, values, scopes, sections=True):  # only the file sets
                        paths.setdefault(pt.null_map(kept_null), set()).add(pt.DROP_NULLS)
                    variants[f] = pt.variant_overlay_text(f, values)
            except (pt.NotPassThrough, InputError) as exc:
                if f in copts.values_files:
                    raise
                # a values file the chart ships (an example) that fix cannot edit: proven as it is, left without a
                # DRA variant (Helm read substratus' vllm example with a duplicate key our YAML parser refuses)
                unvaried[f] = f"{exc.message if isinstance(exc, InputError) else exc}" + (
                    f" (line {exc.line})" if isinstance(exc, InputError) and exc.line else ""
                )
                continue
            take(edits, rcts, templates)
            streams[f] = (r.stream, want, r.rest)
        if dsources is not None:
            take(default_edits, default_rcts, default_templates)
            dvalues = pt.overlay_values(default_edits, default_templates, dsources.merged)
            subcharts = {k: chart_defaults(root / sub) for sub, keys in scopes.items() if sub for k in keys}
            for kept_null in pt.kept_nulls(dvalues, subcharts):  # the subchart's template drops it (proven below)
                paths.setdefault(kept_null[:-2], set()).add(pt.DROP_NULLS)
            overlay = pt.overlay_text(dvalues, switches=len(default_edits) > len(base_edits))
        if not variants and not overlay and yours and yours[1] and yours[1] != yours[0].stream:
            # the device request comes from --set: values-dra.yaml stands for the --set expressions that carry it
            stands_for, set_overlay, set_kept, (ysources, set_edits, set_rcts) = device_sets_overlay()
            if stands_for:
                overlay, kept = set_overlay, set_kept
            elif set_edits and _edits_in_file(set_edits, ValueSources(chart_defaults(root), {}, [], [])) == set_edits:
                # the --set turns a switch on (`gpu.enabled=true`) and the device keys are the chart's defaults:
                # values-dra.yaml overlays those defaults and goes with the user's --set, all of them kept
                set_templates = named(set_edits, set_rcts)
                take(set_edits, set_rcts, set_templates)
                overlay = pt.overlay_text(pt.overlay_values(set_edits, set_templates, ysources.merged), switched=True)
                switched = True
        given_sets = copts.set_values + copts.set_string_values
        if (variants or overlay) and not stands_for and yours and yours[1] != yours[0].stream and given_sets:
            # a --set of a device key over values that ask for devices (t9k's `--set resources.limits.nvidia\.com/
            # gpu=2`): values-set-dra.yaml stands for it, after the user's -f files as they are
            set_for, set_text, set_kept, _ = device_sets_overlay(tuple(f.name for f in copts.values_files))
            if set_for:
                kept = set_kept
        if (
            not set_for
            and overlay
            and not variants
            and yours
            and yours[1] != yours[0].stream
            and copts.set_values + copts.set_string_values
        ):
            set_edits = edits_of(copts.render(), *yours)[1]
            beneath = _defaults_cover(set_edits, default_edits, copts)
            uncovered = _UNCOVERED if beneath else _uncovered(set_edits, default_edits, copts)
        if not variants and not overlay:
            raise pt.NotPassThrough(
                f"{hint[0]}:{hint[1].line}: {hint[1].describe()}: the device request is not set in a -f values file "
                "(it comes from --set or the chart's defaults); put it in a values file so fix can write its DRA "
                "variant"
            )
        # each values variant carries its own claim templates, so the chart's shipped files may ask for different
        # device classes (an NVIDIA, a Gaudi and a ROCm file); the class only documents the schema entry
        some_class = min((c for c in classes if c), default="")
        changes = []
        for sub, rels in leaves.items():
            own = {p: v for p, v in paths.items() if len(leaves) == 1 or _owner(p, scopes) == sub}
            own = {} if places else own  # no sibling beside a map: the library's pod options hold them
            leaf = root / sub if sub else root
            reads = removed if list(leaves) == [""] else _leaf_reads(removed, scopes, sub)
            extra = [LIBRARY_CHANGE] if places else []
            documented = tuple(places.documented()) if places else ()
            built = pt.build(leaf, rels, own, namespaced, some_class, scoped, reads, *extra, documented=documented)
            built += places.templates(leaf) if places else []  # a define of the chart the library merges
            for c in _in_umbrella(root, sub, built):
                if c.rel != "Chart.yaml" or all(x.rel != "Chart.yaml" for x in changes):  # one umbrella bump
                    changes.append(c)
        if switch:
            changes = switch.build(changes)
    except RewriteError as exc:
        _manual(outcome, f"{exc}{ENGINE_HINT}", "")
        return bool(folded), bool(variants) and not copies
    except (OSError, UnicodeDecodeError) as exc:
        _manual(outcome, f"cannot read a template or values file: {exc}", "")
        return bool(folded), bool(variants) and not copies
    targets = {pt.variant_path(f): t for f, t in variants.items()} | ({root / pt.OVERLAY: overlay} if overlay else {})
    targets |= {root / pt.SET_OVERLAY: set_text} if set_text else {}
    for target, text in targets.items():
        if target.exists() and read_text(target) != text:  # the user's own file: kept (one fix wrote is written again)
            _manual(outcome, f"{target} exists already: move it away and run fix again", "")
            return bool(folded), bool(variants) and not copies
    written = [Change(_in_chart(root, target), None, text) for target, text in targets.items() if not target.exists()]
    outcome.changes = [*changes, *written]
    if variants and switch is None:  # which files to give: the user's own, else one the chart ships
        given = [f for f in copts.values_files if f in variants] or list(variants)[:1]
        how = "use each -dra.yaml in place of its file" if copies else "give each -dra.yaml after its values file"
        files = " ".join(f"-f {f.name} " * (not copies) + f"-f {pt.variant_path(f).name}" for f in given)
        outcome.usage = f"for the DRA request, {how}: {files}"
    if switched or beneath:
        outcome.usage = f"for the DRA request, add -f {pt.OVERLAY} (the chart's {pt.OVERLAY}) to your --set"
    if stands_for:
        given = " ".join(stands_for)
        outcome.usage = f"for the DRA request, use -f {pt.OVERLAY} in place of {given} (the chart's {pt.OVERLAY})"
    if set_for:
        given, files = " ".join(set_for), "".join(f"-f {f} " for f in copts.values_files)
        outcome.usage = (
            f"for the DRA request of your values, use {files}-f {outcome.diff_name(pt.SET_OVERLAY)} in place of "
            f"{given} (written for them; {pt.OVERLAY} and the -dra.yaml variants are for the values without it)"
        )
    if list(leaves) == [""] and (root / "tests").is_dir():
        ours = overlay and default and not stands_for and not switched
        pair = (None, pt.OVERLAY, (default[0].stream, default[1], default[0].rest)) if ours else None
        for f in variants:
            if pair is None and f.resolve().is_relative_to(root.resolve()):
                rel_f = f.resolve().relative_to(root.resolve()).as_posix()
                pair = (rel_f, pt.variant_path(Path(rel_f)).as_posix(), streams[f])
        if pair is not None:
            outcome.changes += _passthrough_suites(root, leaves[""], *pair, copts.release, not copies)
        else:  # the values files that ask for devices are outside the chart: the suite sets their values itself
            outcome.changes += _leaf_suites(root, root, leaves[""], [()], variants, streams, copts.release, not copies)
    for sub, rels in leaves.items():  # an umbrella's subchart that keeps unit tests: a suite in its own keys
        if sub and (root / sub / "tests").is_dir():
            outcome.changes += [
                c
                for c in _in_umbrella(
                    root,
                    sub,
                    _leaf_suites(root, root / sub, rels, scopes[sub], variants, streams, copts.release, not copies),
                )
                if c.rel != "Chart.yaml"
            ]
    patch = outcome.diff()
    own = [c for c in outcome.changes if not Path(c.rel).is_absolute()]  # the chart's files (and values-dra.yaml)
    # the second and third tries (_fix_passthrough) write their own copies
    second = ("" if fold else "-alone") + ("-copies" if copies else "")
    copy_root = _rewritten_copy(root, own, work, skip=frozenset({"Chart.yaml"}), where=f"rewritten{second}")
    staged = {}
    for i, (f, text) in enumerate(variants.items()):
        staged[f] = work.path / f"variants{second}" / str(i) / pt.variant_path(f).name
        staged[f].parent.mkdir(parents=True, exist_ok=True)
        staged[f].write_text(text, encoding="utf-8")

    def with_dra(files: tuple[Path, ...]) -> tuple[Path, ...]:
        """The values files with the DRA values of each: its overlay after it (its copy in its place)."""
        return tuple(x for f in files for x in (((staged[f],) if copies else (f, staged[f])) if f in staged else (f,)))

    unnamed = inert | pt.template_names(default_templates)  # a value set's pods may name none of values-dra.yaml's

    def derived_alike(v: Variation, overlaid: dict[str, Any], through: Render, through_want: str) -> bool:
        """Whether a value set the proof derived from the chart defaults (a guard flipped: a sidecar under its own
        switch that takes the same resources map) asks for devices only through the maps values-dra.yaml migrates
        and leaves every values key it sets, and the tolerations lists, as the defaults have them: values-dra.yaml
        then goes with it as with the defaults, and the switch-on render must prove too. (A user's own tolerations
        come in a values file of their own, which fix gives a DRA variant.)"""
        if not overlaid or stands_for or switched or dsources is None or v.label.endswith(ADDED_DEVICE):
            return False
        if copts.values_files or copts.set_values or copts.set_string_values or v.shipped or v.label in _GIVEN:
            return False
        keys = [p[:-1] if len(p) > 1 else p for p in _leaf_paths(overlaid)]  # each map or list it sets a key of
        keys += tolerations_lists(dsources.merged)
        merged = value_sources(root, outcome.display, copts, v.options).merged
        if any(get_path(merged, k) != get_path(dsources.merged, k) for k in keys):
            return False  # read off the values before edits_of's marker render: a count changed fails here (groundx)
        try:
            _, edits, _ = edits_of(v.options, through, through_want)
        except (pt.NotPassThrough, InputError):
            return False
        # a map values-dra.yaml does not migrate (another accelerator's): not covered, as documented
        return {e.path for e in edits} <= {e.path for e in default_edits}

    off = [switch.options(v.options, False) if switch else v.options for v, *_ in expected]
    calls = [functools.partial(cached_render, copy_root, options) for options in off]
    both = [*render_all(calls), *agains(root, [v.options for v, *_ in expected])]  # second renders read on a difference
    given_dra: Any = None  # the DRA values of the user's values (or of the defaults)
    renders: dict[str, tuple[Render, Render, str]] = {}  # by value set: the original's render, again, migrated
    for (v, original, want, _), new, again in zip(expected, both[: len(expected)], both[len(expected) :], strict=True):
        renders[v.label] = (original, again, want)
        if original.error or new.error:
            if not (original.error and new.error):
                _manual(outcome, f"with {v.label}, one chart renders and the other does not: {new.error}", patch)
                return bool(folded), bool(variants) and not copies
            continue
        why = _not_identical(f"with {v.label} (values as they were)", original, again, new)
        if why and (later := render_later(root, v.options)) is not None:  # the clock's next step (render_later)
            why = _not_identical(f"with {v.label} (values as they were)", original, later, new)
        if why:
            _manual(outcome, why, patch)
            return bool(folded), bool(variants) and not copies
        outcome.checked.append(f"{v.label} (device-plugin values)")
        if v.label.startswith("-f ") and Path(v.label[3:]) in unvaried:
            outcome.checked[-1] = f"{v.label} (device-plugin values; no DRA variant: {unvaried[Path(v.label[3:])]})"
        sets = bool(copts.set_values or copts.set_string_values)
        derived = False
        through, through_want = passed(original, want)
        if through_want == through.stream:  # the maps ask for no device: the switch alone migrates (below)
            dra = None
        elif set_for and v.label == "your values":  # the user's -f files as they are, values-set-dra.yaml after
            dra = kept.render((*copts.values_files, copy_root / pt.SET_OVERLAY))
        elif (stands_for or switched) and v.label == "your values":
            dra = kept.render((*with_dra(copts.values_files), copy_root / pt.OVERLAY))
        elif stands_for or switched:
            dra = None  # value sets without the --set: the values as they were, proven above
        elif overlay and (v.label == "default values" or (v.label == "your values" and (beneath or not sets))):
            own = (
                (copy_root / pt.OVERLAY,)
                if v.label == "default values"
                else (copy_root / pt.OVERLAY, *with_dra(copts.values_files))
            )
            dra = copts.render(own, sets=v.label == "your values")
        elif overlay and v.label in folded:  # a switch the defaults leave off, on: its maps are in values-dra.yaml too
            dra = replace(v.options, values_files=(*v.options.values_files, copy_root / pt.OVERLAY))
        elif v.label == "your values" and copts.values_files:
            dra = copts.render(with_dra(copts.values_files))
        elif v.label.startswith("-f ") and Path(v.label[3:]) in staged:
            dra = copts.render(with_dra((Path(v.label[3:]),)), sets=False)
        elif derived := derived_alike(v, dvalues, through, through_want):  # a value set of the defaults
            dra = replace(v.options, values_files=(*v.options.values_files, copy_root / pt.OVERLAY))
        else:
            dra = None  # value sets the DRA files do not cover: the values as they were, proven above
        if dra is None and not switch and v.label == "your values" and through_want != through.stream:
            # the run the user asked for asks for devices no DRA values file covers: it cannot be called proven
            _manual(outcome, uncovered, patch)
            return bool(folded), bool(variants) and not copies
        if dra is None and (not switch or v.label.endswith(ADDED_DEVICE)):
            continue  # a device added to the maps stays a device-plugin request, as before
        case, files = f"with {v.label} and the DRA values files", dra is not None
        if switch:  # with the switch on; a value set no DRA file covers: only the switch's templates migrate
            case = f"{case} and {switch.key} on" if dra else f"with {v.label} and {switch.key} on"
            want = want if dra else switch.want(original)
            dra = switch.options(dra or v.options, True)
        on = cached_render(copy_root, dra)
        if files and v is expected[0][0]:  # the values the tolerations value set is derived from (_variations)
            given_dra = dra
        if on.error:
            _manual(outcome, f"{case}, the rewritten chart does not render: {on.error}", patch)
        elif why := _not_proven_later(
            root,
            v.options,
            functools.partial(
                _not_proven_on,
                case,
                original,
                want=want,
                on=on,
                left_out=pt.unused_templates(on, unnamed if derived else inert, copts.release),
                root=root,
                passthrough=True,
            ),
            again,
        ):
            _manual(outcome, why, patch)
        else:
            proofs = v.options.values_files if v.label in folded or derived else ()  # the proof's file: unnamed
            names = [Path(p).name for p in dra.values_files if p not in proofs]  # the DRA files it rendered with
            shown = [f"DRA values: {', '.join(names)}"] * files + ([f"{switch.key} on"] if switch else [])
            outcome.checked.append(f"{v.label} ({'; '.join(shown)})")
            continue
        # why, when the chart (an umbrella's subchart, by its own values' paths) reads the device key itself
        own = {sub: removed if list(leaves) == [""] else _leaf_reads(removed, scopes, sub) for sub in leaves}
        if reads := next((r for sub in leaves if (r := pt.device_key_reads(root / sub, own[sub], sub))), ""):
            outcome.manual = f"{reads}; {outcome.manual}"
        return bool(folded), bool(variants) and not copies
    if given_dra is not None:
        merged = value_sources(root, outcome.display, copts, copts.render()).merged
        lists = tuple(tolerations_lists(merged))  # (one in a list's item too: drhpc.gpuTypes[0].tolerations)
        if places or whole_lists:
            # a packed library's pod options, or a list a helper writes: the DRA values carry the list whole, and a
            # later file of the user's that sets it replaces the device toleration (said, not proven)
            where = ", ".join(sorted(display(p) for p in whole_lists)) or "the library's pod options"
            outcome.checked.append(f"{LATER_TOLERATIONS}: not kept (the GPU toleration is in the DRA values' {where})")
            lists = ()
        if why := _later_files(outcome, copy_root, work, given_dra, merged, lists, renders, removed):
            _manual(outcome, why, patch)
            return bool(folded), bool(variants) and not copies
    if switch and (
        why := _user_claims(outcome, root, expected[0][0], lambda o: cached_render(copy_root, switch.options(o, True)))
    ):
        _manual(outcome, why, patch)
        return bool(folded), bool(variants) and not copies
    if not outcome.writable:
        _manual(
            outcome, "a packaged chart is not rewritten in place: unpack it (tar xzf) and run fix on the folder", patch
        )
        outcome.patch_proven = True
    return bool(folded), bool(variants) and not copies


_GIVEN = ("your values", "default values")
LATER_TOLERATIONS = "a values file of yours after the DRA values that sets every tolerations list"
LATER_DEVICES = "a values file of yours after the DRA values that sets the device keys again"
ZERO_AGAIN = (
    "asked 0 devices, so the DRA values give that map no claim and nothing can be asked twice: set to 0 again it "
    "asks for none; set to a count, it stays a device-plugin request as before (lint reports it), since without a "
    "claim in that map the template cannot tell the DRA values were given"
)


def _zero_count(value: Any) -> bool:
    """Whether a values count is 0 (`0`, `"0"`): a device key that asks for no device (DESIGN.md: drop it, no claim)."""
    return not isinstance(value, bool) and str(value).strip() in ("0", "0.0")


def _later_files(
    outcome: ChartOutcome,
    copy_root: Path,
    work: Workdir,
    dra: Any,
    merged: dict[str, Any],
    lists: tuple[Path_, ...],
    renders: dict[str, tuple[Render, Render, str]],
    removed: set[tuple[Path_, str, str]],
) -> str:
    """The pass-through proven with a values file the user gives after the DRA values files (`dra`, those of their
    values, `merged`): one that sets every tolerations list `lists` to one of another taint renders the migration of
    the original with those lists (the device toleration the DRA values add is the template's, not in a list Helm
    replaces); one that sets the device keys the DRA values drop again fails the render with the template's
    message, not a container asking for the device twice (device plugin and claim). '' when proven, else why not."""
    from dramigrate.helm.passthrough import DEVICE_TWICE

    label = f"every tolerations list of the values set to [{OWN_TOLERATION['key']}]"
    later = None
    if lists and label in renders and not renders[label][0].error:
        later = _later_lists(merged, lists, value_sources(copy_root, outcome.display, ChartOptions(), dra).merged)
        if later is None:  # said, not proven (as for a list the DRA values carry whole)
            outcome.checked.append(f"{LATER_TOLERATIONS}: not kept (one is in a list the DRA values set whole)")
    if later is not None:
        options = replace(dra, values_files=(*dra.values_files, work.values_file(later)))
        case = f"with {LATER_TOLERATIONS} to [{OWN_TOLERATION['key']}]"
        on = cached_render(copy_root, options)
        if on.error:
            return f"{case}, the rewritten chart does not render: {on.error}"
        if why := _not_proven_on(case, *renders[label], on):
            return why
        outcome.checked.append(f"{LATER_TOLERATIONS} (DRA values, then [{OWN_TOLERATION['key']}])")
    again: dict[str, Any] = {}
    zero = []  # device keys the values ask 0 of: the DRA values give no claim for them, nothing can be asked twice
    for path, section, key in sorted(removed, key=str):
        value = get_path(merged, (*path, section, key))
        if _zero_count(value) and all(isinstance(k, str) for k in path):
            zero.append(f"{display((*path, section))}[{json.dumps(key)}]")
        elif value is not None and all(isinstance(k, str) for k in path):
            again = set_path(again, (*path, section, key), value)
    if zero:
        outcome.checked.append(f"{LATER_DEVICES}: {', '.join(zero)} {ZERO_AGAIN}")
    if again and any(DEVICE_TWICE in c.after for c in outcome.changes if c.after):
        on = cached_render(copy_root, replace(dra, values_files=(*dra.values_files, work.values_file(again))))
        if DEVICE_TWICE not in (on.error or ""):
            return (
                f"with {LATER_DEVICES}, the rewritten chart renders a container that asks for a device through the "
                f"device plugin and its DRA claim, not the template's message: {on.error or 'it renders'}"
            )
        outcome.checked.append(f"{LATER_DEVICES} (fails: {DEVICE_TWICE})")
    return ""


def _switches_nothing(values: dict[str, Any], defaults: dict[str, Any], maps: set[Path_]) -> bool:
    """Whether the values differ from the defaults only inside the defaults' resources `maps` (a count changed or
    unset) and tolerations lists: a value set that turns no switch, whose maps the defaults' DRA values migrate."""
    changed = _differing(values, defaults)
    return bool(changed) and all("tolerations" in p or any(p[: len(m)] == m for m in maps) for p in changed)


def _differing(a: Any, b: Any, path: Path_ = ()) -> list[Path_]:
    """The paths where two values trees differ, into maps and into the items of lists of one length."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in dict.fromkeys([*a, *b]) for p in _differing(a.get(k), b.get(k), (*path, str(k)))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _differing(x, y, (*path, i))]
    return [] if a == b else [path]


def _carried(stream: str, items: tuple[dict[str, str], ...], before: str) -> bool:
    """Whether some `tolerations` list of the rendered objects holds every one of `items`, each with its key (the
    chart may drop a field: kubeflow arena's writes each one it knows), each item by more entries than the render
    `before` (the value set's values without those lists) holds it: the chart's own entry for the same taint is not
    the user's. Not so in triton's LWS chart, which tolerates the GPU's taint itself and then indents only the first
    line of each item of the values' list: the others land outside it."""
    now, was = _tolerations_lists(stream), _tolerations_lists(before) or []
    if now is None:
        return False

    def holds(found: list[Any], item: dict[str, str]) -> int:  # the item, or its key with fewer fields (arena's)
        return sum(isinstance(t, dict) and t.get("key") == item["key"] and t.items() <= item.items() for t in found)

    def count(lists: list[list[Any]], item: dict[str, str]) -> int:
        return sum(holds(found, item) for found in lists)

    return any(all(holds(found, item) for item in items) for found in now) and all(
        count(now, item) > count(was, item) for item in items
    )


def _tolerations_lists(stream: str) -> list[list[Any]] | None:
    """Every `tolerations` list of the rendered objects; None when the text does not parse."""

    def lists(node: Any) -> Iterator[list[Any]]:
        if isinstance(node, dict):
            if isinstance(node.get("tolerations"), list):
                yield node["tolerations"]
            for value in node.values():
                yield from lists(value)
        elif isinstance(node, list):
            for value in node:
                yield from lists(value)

    try:
        return list(lists(list(yaml.safe_load_all(stream))))
    except yaml.YAMLError:
        return None


def _later_lists(merged: dict[str, Any], lists: tuple[Path_, ...], dra: dict[str, Any]) -> dict[str, Any] | None:
    """The values file of the user's that sets every tolerations list `lists` of the values `merged` to one of another
    taint, as the proof's value set does: a list inside a list's item (oci-gpu-scanner's `drhpc.gpuTypes[0]`) is
    set by the outer list written whole (Helm replaces a list; it merges no item). None when such an outer list
    differs in the rewritten chart's values with the DRA values (`dra`): the user's file would drop their claims."""
    own = merged
    for path in lists:
        own = set_path(own, path, [dict(OWN_TOLERATION)])
    later: dict[str, Any] = {}
    for path in lists:
        outer = path[: next((i for i, k in enumerate(path) if isinstance(k, int)), len(path))]
        if len(outer) < len(path) and get_path(dra, outer) != get_path(merged, outer):
            return None
        later = set_path(later, outer, get_path(own, outer))
    return later


def _leaf_paths(node: Any, path: Path_ = ()) -> list[Path_]:
    """The paths of a values tree's leaves (a list is a leaf)."""
    if isinstance(node, dict) and node:
        return [p for k, v in node.items() for p in _leaf_paths(v, (*path, str(k)))]
    return [path] if path else []


def _leaf_reads(
    removed: set[tuple[Path_, str, str]], scopes: dict[str, list[tuple[str, ...]]], sub: str
) -> set[tuple[Path_, str, str]]:
    """The dropped device keys (values map, section, key) of the subchart `sub`, each map's path from the subchart's
    own values (`sglang.resources` -> `resources`), as its templates read them."""
    return {
        (path[len(scope) :], section, key)
        for path, section, key in removed
        if _owner(path, scopes) == sub
        for scope in scopes[sub]
        if tuple(path[: len(scope)]) == scope
    }


def _set_kept_nulls(
    root: Path, values: dict[str, Any], scopes: dict[str, list[tuple[str, ...]]], sections: bool = False
) -> list[Path_]:
    """The device keys values-set-dra.yaml sets to null that Helm keeps: a key the user's -f files set and the
    values.yaml of the chart that reads it does not (foldingathome's shipped values-gpu.yaml). Helm deletes a null
    only where those defaults set the key, so such a null renders (`nvidia.com/gpu: null`) unless the template
    drops it (DROP_NULLS). `sections`: a whole section set to null too (a -f file's overlay)."""
    from dramigrate.helm import passthrough as pt

    kept = []
    for path in pt.kept_nulls(values, {(): {}}, sections=sections):  # every device key (section) it sets to null
        sub = _owner(path, scopes)
        scope = max((k for k in scopes.get(sub, [()]) if tuple(path[: len(k)]) == k), key=len, default=())
        if get_path(chart_defaults(root / sub if sub else root), path[len(scope) :]) is None:
            kept.append(path)
    return kept


def _owner(path: Path_, scopes: dict[str, list[tuple[str, ...]]]) -> str:
    """The chart whose values a values path is: the subchart whose key (name or alias) it starts with, else the
    umbrella itself ("")."""
    keys = [(len(k), sub) for sub, ks in scopes.items() for k in ks if tuple(path[: len(k)]) == k]
    return max(keys, default=(0, ""))[1]


def _passthrough_suites(
    root: Path,
    rels: set[str],
    plugin: str | None,
    dra: str,
    renders: tuple[str, str, str],
    release: str,
    after: bool = True,
) -> list[Change]:
    """helm-unittest suites (the chart keeps its unit tests in `tests/`) for the pass-through rewrite: with the
    values as they were the template renders the device key, with the DRA values file the claim. `renders`: the
    render's objects that may hold device requests, those migrated, and its others."""
    from dramigrate.helm.passthrough import TEMPLATE_FILE
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.unittest_suite import removed_device, suite, suite_path, values_cases

    name = chart_name(root)
    original, migrated = _by_template(renders[0], name), _by_template(renders[1], name)
    every = _by_template(renders[0] + renders[2], name)
    out = []
    for rel in _suite_templates(rels, original):
        found = removed_device(original.get(rel, []), migrated.get(rel, []))
        if found is None or (root / suite_path(rel)).exists():
            continue
        resource, claim = found
        cases = values_cases(resource, plugin, dra, after)
        about = f"DRA ResourceClaims with {dra}"
        made = suite(
            rel, TEMPLATE_FILE, original[rel], resource, claim, cases, about, every.get(rel), release, several=True
        )
        if made is not None:
            out.append(made)
    return out


def _suite_templates(rels: set[str], original: dict[str, Any], key: str = "") -> list[str]:
    """The templates of a chart (`key`: an umbrella's subchart) to write suites for: `rels`, the ones the rewrite
    changed, or when it changed none (a library writes the objects from values: libvalues.py), each template whose
    render may hold device requests (a suite is written where the migration took one away)."""
    if rels:
        return sorted(rels)
    inside = f"charts/{key}/" if key else ""
    own = (t.removeprefix(inside) for t in original if t.startswith(inside))
    return sorted(t for t in own if t.startswith("templates/"))


def _leaf_suites(
    root: Path,
    leaf: Path,
    rels: set[str],
    keys: list[tuple[str, ...]],
    variants: dict[Path, str],
    streams: dict[Path, tuple[str, str, str]],
    release: str,
    after: bool = True,
) -> list[Change]:
    """helm-unittest suites for an umbrella's subchart (paths relative to it) that passes resources maps through:
    the values are the subchart's own keys of the first values file that sets them (`set:`, the part under the
    umbrella's key for the subchart) and of its DRA variant (`after`: an overlay, set over the file's). `keys` [()]:
    the chart itself, whose values files are outside it (a suite names its values files relative to itself), so
    `set:` holds the whole file."""
    from dramigrate.helm.passthrough import TEMPLATE_FILE, variant_path
    from dramigrate.helm.render import _merge_maps
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.unittest_suite import Case, removed_device, suite, suite_path

    name = chart_name(root)
    for f, dra_text in variants.items():
        plugin_values = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        dra_values = yaml.safe_load(dra_text) or {}
        if after:  # an overlay, given after the file: the suite sets both
            dra_values = _merge_maps(plugin_values, dra_values)
        if keys == [()]:  # the chart itself: the whole file
            key = ""
            plugin_values, dra_values = {"": plugin_values}, {"": dra_values}
        else:
            key = next((k[0] for k in keys if isinstance(plugin_values.get(k[0]), dict)), None)
            if key is None or not isinstance(dra_values.get(key), dict):
                continue
        original, migrated = _by_template(streams[f][0], name), _by_template(streams[f][1], name)
        every = _by_template(streams[f][0] + streams[f][2], name)
        out = []
        for rel in _suite_templates(rels, original, key):
            source = f"charts/{key}/{rel}" if key else rel
            found = removed_device(original.get(source, []), migrated.get(source, []))
            if found is None or (leaf / suite_path(rel)).exists():
                continue
            resource, claim = found
            whose = f"the {key} values" if key else "the values"
            cases = [
                Case(
                    f"renders the {resource} device-plugin request and no claim with {whose} of {f.name}",
                    set=plugin_values[key],
                    expect="device",
                    claim_documents=0,
                ),
                Case(
                    f"renders a ResourceClaim and no {resource} request with {whose} of {variant_path(f).name}",
                    set=dra_values[key],
                    expect="claim",
                ),
            ]
            docs, about = every.get(source), "DRA ResourceClaims from values"
            made = suite(
                rel, TEMPLATE_FILE, original[source], resource, claim, cases, about, docs, release, several=True
            )
            if made is not None:
                out.append(made)
        if out:
            return out
    return []


# --- charts that have their own DRA switch (ollama `draEnabled`, llm-d `accelerator.dra`) -------------------

_SWITCH_KEY = re.compile(r"^(dra|draEnabled|dra_enabled|enableDra|useDra)$", re.IGNORECASE)


def _own_dra_switch(
    root: Path,
    copts: ChartOptions,
    sources: ValueSources,
    base: dict[DeviceKey, Any],
    rules: RuleSet,
    work: Workdir,
    partial: list[Any] | None = None,
) -> Leaf | None:
    """A boolean values key of the chart's own (`draEnabled`, `dra`, `dra.enabled`) that is off and, turned
    on, renders ResourceClaims in place of the device requests: the chart migrates itself. `partial` gets, for a
    switch that renders claims but leaves as many device requests, (the switch, its render, the device requests left),
    for ownswitch.left_by."""
    from dramigrate.helm.values import walk

    for leaf in walk(sources.merged):
        if leaf.value is not False or not leaf.path:
            continue
        named = [str(p) for p in leaf.path if isinstance(p, str)]
        if not named or not (_SWITCH_KEY.match(named[-1]) or (named[-1] == "enabled" and named[-2:-1] == ["dra"])):
            continue
        values = override(sources, set_path(sources.merged, leaf.path, True))
        rendered = cached_render(root, copts.render((work.values_file(values),), sets=False))
        if rendered.error or "resourceClaimTemplateName" not in rendered.stream:
            continue
        uses = device_uses(rendered.stream, rules)
        if len(uses) < len(base):
            return leaf
        if partial is not None:
            partial.append((leaf, rendered.stream, uses))
    return None


def _report_switch(outcome: ChartOutcome, leaf: Leaf, sources: ValueSources, root: Path) -> None:
    loc = locate(leaf.path, sources)
    setting = f"{display(leaf.path)}=true"
    outcome.findings.append(
        Finding(
            "chart-dra-switch",
            RULES["chart-dra-switch"][0],
            f"the chart has its own DRA switch: set {setting} (with it on, the chart renders ResourceClaims instead "
            "of device-plugin requests); fix writes it into the values file, not into the templates",
            loc.file or f"{outcome.display}/values.yaml",
            loc.line,
        )
    )
    for f in outcome.findings:
        if f.resource:
            f.related.append(Location(loc.file or f"{outcome.display}/values.yaml", loc.line, 0, f"set {setting}"))


def _use_switch(outcome: ChartOutcome, root: Path, leaf: Leaf, copts: ChartOptions) -> None:
    """fix: the switch goes on in the last -f file the user named, else in the chart's values.yaml."""
    from dramigrate.documents import parse_document, split_documents, start_edit

    path = copts.values_files[-1] if copts.values_files else root / "values.yaml"
    rel = str(path.resolve()) if copts.values_files else "values.yaml"
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    yf = split_documents(str(path), before.encode("utf-8"))
    doc = next((d for d in yf.documents if parse_document(str(path), d) is not None), None)
    if doc is None or not isinstance(doc.data, dict):
        _manual(outcome, f"cannot set {display(leaf.path)} in {path}: it is not a YAML mapping", "")
        return
    start_edit(doc)
    node = doc.data
    for key in leaf.path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[leaf.path[-1]] = True
    outcome.changes = [Change(rel, before if path.is_file() else None, yf.render())]
    if not copts.values_files:  # the chart's defaults change: its version too, as for any rewrite
        from dramigrate.helm.conventions import chart_bump

        outcome.changes += chart_bump(root, f"DRA ResourceClaims on by default ({display(leaf.path)}=true)")
    outcome.checked.append(f"the chart's own switch {display(leaf.path)}=true")
    for f in outcome.findings:
        if f.resource:
            f.fixed = True


def _rewritten_copy(
    root: Path, changes: list[Change], work: Workdir, skip: frozenset[str] = frozenset(), where: str = "rewritten"
) -> Path:
    """A copy of the chart in the proof's work folder (`where` in it) with the rewrite applied (files in `skip` left
    as they were)."""
    from dramigrate.helm.sandbox import private_copy

    copy_root = work.path / where / root.name
    copy_root.parent.mkdir(exist_ok=True)
    # Links (all inside the chart, checked in the copy) become plain files: no write below follows one, into the
    # chart or anywhere else, and Helm reads the same text through them.
    private_copy(root, copy_root)
    top = copy_root.resolve()
    for c in changes:
        if c.rel in skip:
            continue
        target = copy_root / c.rel
        if top not in target.resolve().parents:
            raise InputError(f"{c.rel} is not inside the chart", str(root))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(with_line_ends(target, c).after.encode("utf-8"))
    for rel, _, data in archive_writes(root, changes):  # a subchart's .tgz beside its changed folder (twins.py)
        (copy_root / rel).write_bytes(data)
    return copy_root
