"""The proof of the pass-through rewrite (patterns B and C): the chart takes `resourceClaims` and
`resourceClaimTemplates` from values, and the DRA variants of the values files (`*-dra.yaml`) turn them on. Proven
over the value sets the proof derives: with the chart's own values the rewritten chart renders as before (L); with
the DRA values it renders the migration of the original (D); values files the user gives after the DRA values
(tolerations lists, device keys set again) are checked as well, and library charts' values-only rewrites too.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.config import Settings
from dramigrate.embedded import held_as_text
from dramigrate.findings import InputError
from dramigrate.helm import wholemaps
from dramigrate.helm.chartvalues import chart_defaults, value_sources
from dramigrate.helm.claimnamespaces import NAMESPACES_APART, namespaces_apart
from dramigrate.helm.findingmap import (
    read_text,
    resolve_source,
)
from dramigrate.helm.listindent import INDENTED
from dramigrate.helm.outcome import (
    _UNCOVERED,
    ADDED_DEVICE,
    ENGINE_HINT,
    OWN_LISTS,
    OWN_TOLERATION,
    ChartOptions,
    ChartOutcome,
    Variation,
    Workdir,
    _by_template,
    _defaults_cover,
    _edits_in_file,
    _in_chart,
    _in_umbrella,
    _manual,
    _not_identical,
    _not_proven_later,
    _not_proven_on,
    _rewritten_copy,
    _templates,
    _uncovered,
    fixed_marks,
    rendered_once_indented,
    restore_fixed,
)
from dramigrate.helm.poddelta import shipped_rules
from dramigrate.helm.probe import override
from dramigrate.helm.prove import documents, objects
from dramigrate.helm.proveswitch import (
    _Switch,
    _user_claims,
)
from dramigrate.helm.renderpool import (
    Render,
    agains,
    cached_render,
    orders_at_random,
    render_all,
    render_later,
    render_once_more,
    render_probed,
    start_renders,
)
from dramigrate.helm.rewrite import Change, RewriteError
from dramigrate.helm.suitevalues import SuiteRender, trimmed_case
from dramigrate.helm.values import (
    Leaf,
    Path_,
    ValueSources,
    differing,
    display,
    get_path,
    set_path,
    tolerations_lists,
    with_paths,
)
from dramigrate.memo import remember
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

if TYPE_CHECKING:
    from dramigrate.helm.libvalues import Placer


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

    place = placer(found.lib.title, found.places, chart_name(root))
    return fix_placed_values(outcome, root, copts, work, expected, hints, place)


def fix_placed_values(
    outcome: ChartOutcome,
    root: Path,
    copts: ChartOptions,
    work: Workdir,
    expected: list[tuple[Variation, Render, str, list[tuple[str, Leaf]]]],
    hints: dict[str, Any],
    place: Placer,
) -> str:
    """The values-only rewrite through the values places `place` (a library's, or a pod spec the chart takes from
    values, libvalues.pod_spec_places), proven as the pass-through's: "" when it holds (or the outcome is final),
    else why not, with the outcome as before it."""
    first = min(hints.items(), key=lambda kv: (kv[0], kv[1].line))
    marks = fixed_marks(outcome.findings)
    _fix_passthrough(outcome, root, copts, work, {"": set()}, expected, first, {"": [()]}, places=place)
    if not outcome.manual or outcome.patch_proven:
        return ""
    tried = outcome.manual.removesuffix(ENGINE_HINT)
    outcome.manual, outcome.changes = "", []
    outcome.findings[:] = [f for f, _ in marks]
    restore_fixed(marks)
    return tried


def _whole_values(root: Path, v: Variation, original: Render) -> bool:
    """Whether the chart renders something derived from its values as a whole (render_probed differs from the
    original's render with the same values, random values aside): then a key added to values.yaml changes the render
    with the switch off (a hash of .Values in an annotation), so values.yaml documents the keys in comments only."""
    if original.error:
        return False
    key = (str(root), v.options, original.stream)  # once per chart and values (the pass-through tries up to four)
    if key not in _WHOLE_VALUES:
        unordered = orders_at_random(root)
        probe = functools.partial(render_probed, root, v.options)

        def differs(again: Render, probed: Render) -> bool:
            return not probed.error and bool(_not_identical("", original, again, probed, unordered))

        # the second render of the original and the probed one are independent: rendered at once
        again, probed = render_all([functools.partial(cached_render, root, v.options, True), probe])
        found = differs(again, probed)
        if found and (third := render_once_more(root, v.options)) is not None:
            # random values or map order can leave two renders of the original alike where the probed one differs
            # (one fix in six of adorsys' chart commented the keys): a second pair must differ too
            found = differs(third, probe())
        remember(_WHOLE_VALUES, key, found, 64)
    return _WHOLE_VALUES[key]


_WHOLE_VALUES: dict[tuple[str, Any, str], bool] = {}


def _commented_keys(change: Change) -> Change:
    """values.yaml with the lines the rewrite added as comments: the keys it documents (`resourceClaimTemplates: {}`)
    commented out, which the templates read as unset, as they read the key's empty value."""
    before = (change.before or "").splitlines(keepends=True)
    after = change.after.splitlines(keepends=True)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            return change  # lines changed, not only added: the proof shows what that does
        if op == "equal":
            out += before[i1:i2]
            continue
        for line in after[j1:j2]:
            body = line.lstrip(" ")
            out.append(line if not body.strip() or body.startswith("#") else f"{line[: len(line) - len(body)]}# {body}")
    return Change(change.rel, change.before, "".join(out))


def _left_alone(left: Any, findings: list[Any], root: Path) -> str:
    """The message of a LeftAlone, at the template line of the finding the lint made where the migration leaves that
    container (`unknown-kind`: a pod spec the workloads rules do not name, which a workloads file of the user's can)."""
    found = next((f for f in findings if f.name == left.name and f.pod_template_path.startswith(left.path)), None)
    if found is None:
        return str(left)
    file = Path(found.file)
    where = f"{file.relative_to(root) if file.is_relative_to(root) else file}:{found.line}"
    why = f" ({found.rule})"
    if found.rule == "unknown-kind":
        why = (
            f" (unknown-kind: {left.path.split('.containers')[0]} is not a pod spec dramigrate knows in {found.kind};"
            " a workloads file given with --rules that names it, if the operator takes claims there, lets fix "
            "migrate it, docs/rules.md)"
        )
    return f"{where}: {left}{why}"


def _merged_claims(
    root: Path,
    copts: ChartOptions,
    work: Workdir,
    sources: Any,
    marked: dict[str, Any],
    maps: list[Any],
    edits: list[Any],
    templates: list[str],
) -> None:
    """The pod claims of the edits whose resources map no template of the chart reads (its library's define does)
    placed in the values map the chart merges over the pods that take it (mergedpod.py), found by rendering; left
    beside the map when none is."""
    from dramigrate.helm import mergedpod

    alone = [e for e in edits if mergedpod.unread(templates, e.path)]
    candidates = mergedpod.merged_maps(templates, sources.merged) if alone else []
    if not candidates:
        return
    claimed = work.values_file(override(sources, mergedpod.marked_claims(marked, candidates)))
    probe = cached_render(root, copts.render((claimed,), sets=False))
    if not probe.error:
        mergedpod.claims_places(probe.stream, maps, candidates, alone)


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
    kept = (fixed_marks(outcome.findings), list(outcome.checked), outcome.usage)
    args = (outcome, root, copts, work, leaves, expected, hint, scopes, switch, places)

    def again() -> bool:
        """Whether the try just made failed the proof (then the outcome is reset for the next)."""
        if not outcome.manual or outcome.patch_proven:
            return False
        outcome.findings[:], outcome.checked[:], outcome.usage = [f for f, _ in kept[0]], kept[1], kept[2]
        restore_fixed(kept[0])
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
        left, mine = list(edits), {}
        for scope in (scope for keys in scopes.values() for scope in keys):
            mine[scope] = [e for e in left if tuple(e.path[: len(scope)]) == scope]  # another subchart's map: not its
            left = [e for e in left if e not in mine[scope]]
        if left:
            raise pt.NotPassThrough(f"{display(left[0].path)} asks for devices in none of the subcharts fix changes")
        # a subchart used under several aliases (speechmatics' sm-gpu, six times) renders each alias's templates: their
        # names take the alias, where they would be the same
        chart = chart_name(root)
        groups = Counter(g for own in mine.values() for g in {pt.group(e, chart) for e in own})
        return {
            scope: pt.claim_names(
                own, rcts, chart, scoped, "-".join(scope) if any(groups[pt.group(e, chart)] > 1 for e in own) else ""
            )
            for scope, own in mine.items()
            if own
        }

    @functools.cache
    def chart_templates() -> list[str]:
        """The chart's template texts, helpers too: read once for every value set (the proof writes under root none)."""
        return _templates(root, helpers=True)

    def edits_of(options: Any, render: Render, want: str) -> tuple[Any, list[Any], dict[str, Any]]:
        """The values of a value set, the map edits that make the chart render its migration, and the claim
        templates (found by rendering with a marker in each resources map)."""
        nonlocal scoped
        sources = value_sources(root, outcome.display, copts, options)
        for flats in (True, False):  # a marker in a flat map may fail the chart's render: then in the others only
            more = wholemaps.whole_maps(chart_templates(), sources.merged)  # `toYaml .Values.flavor`
            marked, maps = pt.marked_values(
                sources.merged, flats, places.maps(sources.merged) if places else None, more
            )
            probe = cached_render(root, copts.render((work.values_file(override(sources, marked)),), sets=False))
            if not probe.error:
                break
        if probe.error:
            raise pt.NotPassThrough(f"the chart does not render with a marker in each resources map: {probe.error}")
        copied = frozenset(c.read for c in pt.copies(root)) if list(leaves) == [""] else frozenset()
        try:
            edits, rcts = pt.map_edits(render.stream, want, pt.feeds(probe.stream, maps), sources.merged, hint, copied)
        except pt.LeftAlone as left:
            raise pt.NotPassThrough(_left_alone(left, outcome.findings, root)) from None
        if not places and list(leaves) == [""]:  # a map only a library reads: the pod's claims in a merged map
            _merged_claims(root, copts, work, sources, marked, maps, edits, chart_templates())
            # rendered by the chart's toYaml, not the pass-through's tpl: the claim templates keep bare names
            scoped = scoped and not any("resourceClaims" in e.places for e in edits)
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
                unread = pt.unread_lists(planted, chart_templates())  # another pod's, if read
                places_in = (found.stream, maps, lists, edits, found.rest, joined(), listed, unread)
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
    overlays: dict[Path, dict[str, Any]] = {}  # the DRA values of each variant written as an overlay
    by_defaults: list[Path] = []  # values files whose DRA values are values-dra.yaml's: no variant of their own
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
            # claims the chart's own map merged over the pod takes (mergedpod.py): no template change beside the map
            claims = {"resourceClaims"} if places or "resourceClaims" not in e.places else set()
            paths.setdefault(e.path, set()).update({*claims, *beside, *e.unpinned})
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
                    overlays[f] = values
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
            # a values file whose DRA values are the defaults' (a shipped example that changes the replicas, or
            # sets the defaults' device count again): its variant would repeat values-dra.yaml line for line, and
            # values-dra.yaml after it is its DRA values (a user's file, when it is the only one given and no --set
            # is: values-set-dra.yaml goes after the user's files and their variants, written for them without it)
            any_set = bool(copts.set_values or copts.set_string_values)
            for f, values in overlays.items():
                alone = f not in copts.values_files or (copts.values_files == (f,) and not any_set)
                if alone and values == dvalues:
                    by_defaults.append(f)
                    del variants[f]
            also = tuple(f.name for f in by_defaults)
            overlay = pt.overlay_text(dvalues, switches=len(default_edits) > len(base_edits), also=also)
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
            named = places.claims_named() if places else ""
            built = pt.build(
                leaf, rels, own, namespaced, some_class, scoped, reads, *extra, documented=documented, named=named
            )
            built += places.templates(leaf) if places else []  # a define of the chart the library merges
            for c in _in_umbrella(root, sub, built):
                if c.rel != "Chart.yaml" or all(x.rel != "Chart.yaml" for x in changes):  # one umbrella bump
                    changes.append(c)
        if switch:
            changes = switch.build(changes)
        if _whole_values(root, *expected[0][:2]):
            changes = [_commented_keys(c) if c.rel == "values.yaml" else c for c in changes]
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
    if by_defaults and switch is None and copts.values_files == (by_defaults[0],):
        name = copts.values_files[0].name
        outcome.usage = (
            f"for the DRA request, give the chart's {pt.OVERLAY} after your values file: -f {name} -f {pt.OVERLAY}"
        )
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
    own = [c for c in outcome.changes if not Path(c.rel).is_absolute()]  # the chart's files (and values-dra.yaml)
    # the second and third tries (_fix_passthrough) write their own copies
    second = ("" if fold else "-alone") + ("-copies" if copies else "")
    copy_root = _rewritten_copy(root, own, work, skip=frozenset({"Chart.yaml"}), where=f"rewritten{second}")
    # the suites render the rewritten chart (a subchart alone, as helm-unittest does) to trim the values they set
    trial = SuiteRender(copy_root, work, copts.render())
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
            outcome.changes += _leaf_suites(root, root, leaves[""], [()], variants, streams, not copies, trial)
    for sub, rels in leaves.items():  # an umbrella's subchart that keeps unit tests: a suite in its own keys
        if sub and (root / sub / "tests").is_dir():
            outcome.changes += [
                c
                for c in _in_umbrella(
                    root,
                    sub,
                    _leaf_suites(root, root / sub, rels, scopes[sub], variants, streams, not copies, trial),
                )
                if c.rel != "Chart.yaml"
            ]
    patch = outcome.diff()
    staged = {f: copy_root / pt.OVERLAY for f in by_defaults}  # values-dra.yaml, after the file
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
        # each map it sets a key of, and each list it sets whole (`runtime.resourceClaims`: not all of `runtime`, whose
        # `type` a guard flip changes)
        keys = [p if len(p) == 1 or isinstance(get_path(overlaid, p), list) else p[:-1] for p in _leaf_paths(overlaid)]
        keys += tolerations_lists(dsources.merged)
        merged = value_sources(root, outcome.display, copts, v.options).merged
        defaults = dsources.merged
        if v.label == NAMESPACES_APART:  # the defaults in other namespaces: the keys that set them differ alone
            defaults = namespaces_apart(defaults) or defaults
        if any(get_path(merged, k) != get_path(defaults, k) for k in keys):
            return False  # read off the values before edits_of's marker render: a count changed fails here (groundx)
        try:
            _, edits, _ = edits_of(v.options, through, through_want)
        except (pt.NotPassThrough, InputError):
            return False
        # a map values-dra.yaml does not migrate (another accelerator's): not covered, as documented
        return {e.path for e in edits} <= {e.path for e in default_edits}

    def dra_of(v: Variation, original: Render, want: str) -> tuple[Any, bool, bool]:
        """The values a value set is proven with the DRA values files (None: values the DRA files do not cover),
        whether it is a value set of the defaults that values-dra.yaml goes with (derived_alike), and whether its
        maps ask for a device."""
        sets = bool(copts.set_values or copts.set_string_values)
        through, through_want = passed(original, want)
        asks = through_want != through.stream
        if not asks:  # the maps ask for no device: the switch alone migrates (below)
            return None, False, asks
        if set_for and v.label == "your values":  # the user's -f files as they are, values-set-dra.yaml after
            return kept.render((*copts.values_files, copy_root / pt.SET_OVERLAY)), False, asks
        if (stands_for or switched) and v.label == "your values":
            return kept.render((*with_dra(copts.values_files), copy_root / pt.OVERLAY)), False, asks
        if stands_for or switched:
            return None, False, asks  # value sets without the --set: the values as they were, proven above
        if overlay and (v.label == "default values" or (v.label == "your values" and (beneath or not sets))):
            own = (
                (copy_root / pt.OVERLAY,)
                if v.label == "default values"
                else (copy_root / pt.OVERLAY, *with_dra(copts.values_files))
            )
            return copts.render(own, sets=v.label == "your values"), False, asks
        if overlay and v.label in folded:  # a switch the defaults leave off, on: its maps are in values-dra.yaml too
            return replace(v.options, values_files=(*v.options.values_files, copy_root / pt.OVERLAY)), False, asks
        if v.label == "your values" and copts.values_files:
            return copts.render(with_dra(copts.values_files)), False, asks
        if v.label.startswith("-f ") and Path(v.label[3:]) in staged:
            return copts.render(with_dra((Path(v.label[3:]),)), sets=False), False, asks
        if derived_alike(v, dvalues, through, through_want):  # a value set of the defaults
            return replace(v.options, values_files=(*v.options.values_files, copy_root / pt.OVERLAY)), True, asks
        return None, False, asks  # value sets the DRA files do not cover: the values as they were, proven above

    # (L) and (D) of each value set, in turn: the render with the switch off (or the values as they were) and the one
    # with the DRA values (or the switch on) are started now, in the order they are compared, so that a value set's
    # comparisons overlap the next ones' renders
    off = [switch.options(v.options, False) if switch else v.options for v, *_ in expected]
    dras = [dra_of(v, r, want) if not r.error else (None, False, False) for v, r, want, _ in expected]
    ons: list[Any] = []  # the values of proof D by value set (None: no proof D)
    for (v, original, *_), (dra, *_) in zip(expected, dras, strict=True):
        if original.error or (dra is None and (not switch or v.label.endswith(ADDED_DEVICE))):
            ons.append(None)  # a device added to the maps stays a device-plugin request, as before
        else:  # with the switch on; a value set no DRA file covers: only the switch's templates migrate
            ons.append(switch.options(dra or v.options, True) if switch else dra)
    # the DRA values of the user's values (or of the defaults: the values the tolerations value set is derived from,
    # _variations), and the later values files proven after them (_later_files), whose renders start after the first
    # value set's
    yours_dra = ons[0] if expected and dras[0][0] is not None else None
    merged = value_sources(root, outcome.display, copts, copts.render()).merged if yours_dra is not None else {}
    lists = () if places or whole_lists else tuple(tolerations_lists(merged))  # (one in an item's list too)
    originals = {v.label: r for v, r, *_ in expected}
    later = None
    if yours_dra is not None:
        later = _later_asked(outcome, copy_root, work, yours_dra, merged, lists, originals, removed)
    pairs = [o for pair in zip(off, ons, strict=True) for o in pair if o is not None]
    start_renders(copy_root, [*pairs[:2], *(later.options if later else ()), *pairs[2:]])
    seconds = agains(root, [v.options for v, *_ in expected])  # second renders read on a difference
    renders: dict[str, tuple[Render, Render, str]] = {}  # by value set: the original's render, again, migrated
    masked: list[str] = []  # what proof D of a value set did not compare (_not_proven_later)
    for i, ((v, original, want, _), again) in enumerate(zip(expected, seconds, strict=True)):
        new = cached_render(copy_root, off[i])
        renders[v.label] = (original, again, want)
        if original.error and not new.error and (why := rendered_once_indented(root, own, work, v, new)) is not None:
            if why:
                _manual(outcome, why, patch)
                return bool(folded), bool(variants) and not copies
            outcome.checked.append(f"{v.label} (device-plugin values, which the chart did not render: {INDENTED})")
            continue
        if original.error or new.error:
            if not (original.error and new.error):
                _manual(outcome, f"with {v.label}, one chart renders and the other does not: {new.error}", patch)
                return bool(folded), bool(variants) and not copies
            continue
        unordered = orders_at_random(root)
        why = _not_identical(f"with {v.label} (values as they were)", original, again, new, unordered)
        if why and (later := render_later(root, v.options)) is not None:  # the clock's next step (render_later)
            why = _not_identical(f"with {v.label} (values as they were)", original, later, new, unordered)
        if why:
            _manual(outcome, why, patch)
            return bool(folded), bool(variants) and not copies
        outcome.checked.append(f"{v.label} (device-plugin values)")
        if v.label.startswith("-f ") and Path(v.label[3:]) in unvaried:
            outcome.checked[-1] = f"{v.label} (device-plugin values; no DRA variant: {unvaried[Path(v.label[3:])]})"
        dra, derived, asks = dras[i]
        if dra is None and not switch and v.label == "your values" and asks:
            # the run the user asked for asks for devices no DRA values file covers: it cannot be called proven
            _manual(outcome, uncovered, patch)
            return bool(folded), bool(variants) and not copies
        if ons[i] is None:
            continue
        case, files = f"with {v.label} and the DRA values files", dra is not None
        if switch:
            case = f"{case} and {switch.key} on" if dra else f"with {v.label} and {switch.key} on"
            want = want if dra else switch.want(original)
        dra = ons[i]
        on = cached_render(copy_root, dra)
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
                left_out=pt.unused_templates(on, unnamed if derived else inert, copts.release, unnamed),
                root=root,
                passthrough=True,
                left=v.left,
            ),
            again,
            masked,
        ):
            migrated, rewritten = objects(want), objects(on.stream + on.rest)
            changed = {(k[1], k[3]) for k, docs in rewritten.items() if migrated.get(k) != docs}
            _manual(outcome, why + held_as_text(documents(original.stream), shipped_rules(), changed), patch)
        else:
            proofs = v.options.values_files if v.label in folded or derived else ()  # the proof's file: unnamed
            names = [Path(p).name for p in dra.values_files if p not in proofs]  # the DRA files it rendered with
            shown = [f"DRA values: {', '.join(names)}"] * files + ([f"{switch.key} on"] if switch else [])
            outcome.checked.append(f"{v.label} ({'; '.join([*shown, *masked])})")
            masked.clear()
            continue
        # why, when the chart (an umbrella's subchart, by its own values' paths) reads the device key itself
        own = {sub: removed if list(leaves) == [""] else _leaf_reads(removed, scopes, sub) for sub in leaves}
        if reads := next((r for sub in leaves if (r := pt.device_key_reads(root / sub, own[sub], sub))), ""):
            outcome.manual = f"{reads}; {outcome.manual}"
        return bool(folded), bool(variants) and not copies
    if later is not None:
        if places or whole_lists:
            # a packed library's pod options, or a list a helper writes: the DRA values carry the list whole, and a
            # later file of the user's that sets it replaces the device toleration (said, not proven)
            pod_options = ".".join(filter(None, [places.places["pod_options"], "tolerations"])) if places else ""
            where = ", ".join(sorted(display(p) for p in whole_lists)) or pod_options
            outcome.checked.append(f"{LATER_TOLERATIONS}: not kept (the GPU toleration is in the DRA values' {where})")
        if why := _later_files(outcome, copy_root, later, renders):
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


@dataclass(frozen=True)
class _Later:
    """The values files of the user's given after the DRA values that _later_files proves the pass-through with."""

    lists: dict[str, Any] | None  # one that sets every tolerations list to one of another taint (None: not proven)
    unkept: bool  # such a file is not proven: a list is in one the DRA values set whole (said)
    zero: list[str]  # device keys the values ask 0 of: the DRA values give them no claim
    twice: bool  # one that sets the device keys the DRA values drop again
    options: tuple[Any, ...]  # the rewritten chart's renders of them, in that order


def _later_asked(
    outcome: ChartOutcome,
    copy_root: Path,
    work: Workdir,
    dra: Any,
    merged: dict[str, Any],
    lists: tuple[Path_, ...],
    originals: dict[str, Render],
    removed: set[tuple[Path_, str, str]],
) -> _Later:
    """The later values files of the user's values with the DRA values files `dra` (those values `merged`): one that
    sets every tolerations list `lists`, and one that sets the device keys again (when a template says so); their
    renders are started with the value sets' (start_renders), compared by _later_files."""
    from dramigrate.helm.passthrough import DEVICE_TWICE

    later = None
    unkept = False
    if lists and OWN_LISTS in originals and not originals[OWN_LISTS].error:
        later = _later_lists(merged, lists, value_sources(copy_root, outcome.display, ChartOptions(), dra).merged)
        unkept = later is None  # said, not proven (as for a list the DRA values carry whole)
    again: dict[str, Any] = {}
    zero = []  # device keys the values ask 0 of: the DRA values give no claim for them, nothing can be asked twice
    for path, section, key in sorted(removed, key=str):
        value = get_path(merged, (*path, section, key))
        if _zero_count(value) and all(isinstance(k, str) for k in path):
            zero.append(f"{display((*path, section))}[{json.dumps(key)}]")
        elif value is not None and all(isinstance(k, str) for k in path):
            again = set_path(again, (*path, section, key), value)
    twice = bool(again) and any(DEVICE_TWICE in c.after for c in outcome.changes if c.after)
    asked = [x for x in (later, again if twice else None) if x is not None]
    options = tuple(replace(dra, values_files=(*dra.values_files, work.values_file(x))) for x in asked)
    return _Later(later, unkept, zero, twice, options)


def _later_files(
    outcome: ChartOutcome, copy_root: Path, asked: _Later, renders: dict[str, tuple[Render, Render, str]]
) -> str:
    """The pass-through proven with a values file the user gives after the DRA values files (_later_asked): one that
    sets every tolerations list to one of another taint renders the migration of the original with those lists (the
    device toleration the DRA values add is the template's, not in a list Helm replaces); one that sets the device
    keys the DRA values drop again fails the render with the template's message, not a container asking for the
    device twice (device plugin and claim). '' when proven, else why not."""
    from dramigrate.helm.passthrough import DEVICE_TWICE

    if asked.unkept:
        outcome.checked.append(f"{LATER_TOLERATIONS}: not kept (one is in a list the DRA values set whole)")
    # the two renders are independent of each other: rendered at once (started with the value sets'), checked in turn
    rendered = iter(render_all([functools.partial(cached_render, copy_root, options) for options in asked.options]))
    later_on = next(rendered) if asked.lists is not None else None
    twice_on = next(rendered) if asked.twice else None
    if later_on is not None:
        case = f"with {LATER_TOLERATIONS} to [{OWN_TOLERATION['key']}]"
        if later_on.error:
            return f"{case}, the rewritten chart does not render: {later_on.error}"
        if why := _not_proven_on(case, *renders[OWN_LISTS], later_on):
            return why
        outcome.checked.append(f"{LATER_TOLERATIONS} (DRA values, then [{OWN_TOLERATION['key']}])")
    if asked.zero:
        outcome.checked.append(f"{LATER_DEVICES}: {', '.join(asked.zero)} {ZERO_AGAIN}")
    if twice_on is not None:
        if DEVICE_TWICE not in (twice_on.error or ""):
            return (
                f"with {LATER_DEVICES}, the rewritten chart renders a container that asks for a device through the "
                f"device plugin and its DRA claim, not the template's message: {twice_on.error or 'it renders'}"
            )
        outcome.checked.append(f"{LATER_DEVICES} (fails: {DEVICE_TWICE})")
    return ""


def _switches_nothing(values: dict[str, Any], defaults: dict[str, Any], maps: set[Path_]) -> bool:
    """Whether the values differ from the defaults only inside the defaults' resources `maps` (a count changed or
    unset) and tolerations lists: a value set that turns no switch, whose maps the defaults' DRA values migrate."""
    changed = differing(values, defaults)
    return bool(changed) and all("tolerations" in p or any(p[: len(m)] == m for m in maps) for p in changed)


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
    """Every `tolerations` list of the rendered objects (shared: read only); None when the text does not parse. Read
    with the C loader, each document once (prove.documents): PyYAML's Python parser read the user's render again for
    each tolerating value set (oci-gpu-scanner: 4% of its fix)."""

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
        return list(lists(list(documents(stream))))
    except yaml.YAMLError:
        return None


def _later_lists(merged: dict[str, Any], lists: tuple[Path_, ...], dra: dict[str, Any]) -> dict[str, Any] | None:
    """The values file of the user's that sets every tolerations list `lists` of the values `merged` to one of another
    taint, as the proof's value set does: a list inside a list's item (oci-gpu-scanner's `drhpc.gpuTypes[0]`) is
    set by the outer list written whole (Helm replaces a list; it merges no item). None when such an outer list
    differs in the rewritten chart's values with the DRA values (`dra`): the user's file would drop their claims."""
    own = with_paths(merged, [(path, [dict(OWN_TOLERATION)]) for path in lists])
    outers = []
    for path in lists:
        outer = path[: next((i for i, k in enumerate(path) if isinstance(k, int)), len(path))]
        if len(outer) < len(path) and get_path(dra, outer) != get_path(merged, outer):
            return None
        outers.append((outer, get_path(own, outer)))
    return with_paths({}, outers)


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
    after: bool,
    trial: SuiteRender,
) -> list[Change]:
    """helm-unittest suites for an umbrella's subchart (paths relative to it) that passes resources maps through:
    the values are the subchart's own keys of the first values file that sets them (`set:`, the part under the
    umbrella's key for the subchart) and of its DRA variant (`after`: an overlay, set over the file's). `keys` [()]:
    the chart itself, whose values files are outside it (a suite names its values files relative to itself). Each
    case sets the keys its device request and claim come from, as far as the rewritten chart (`trial`) renders the
    same request and claim with them as with the whole file (suitevalues.py); else the whole file."""
    from dramigrate.helm.passthrough import TEMPLATE_FILE, variant_path
    from dramigrate.helm.render import _merge_maps
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.unittest_suite import Case, removed_device, suite, suite_path

    name = chart_name(root)
    sub = leaf.relative_to(root).as_posix() if leaf != root else ""
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
            plugin, dra = plugin_values[key], dra_values[key]
            tested = (rel, TEMPLATE_FILE)
            cases = [
                Case(
                    f"renders the {resource} device-plugin request and no claim with {whose} of {f.name}",
                    set=trimmed_case(trial, sub, tested, plugin, dra, resource),
                    expect="device",
                    claim_documents=0,
                ),
                Case(
                    f"renders a ResourceClaim and no {resource} request with {whose} of {variant_path(f).name}",
                    set=trimmed_case(trial, sub, tested, dra, plugin, resource),
                    expect="claim",
                ),
            ]
            docs, about = every.get(source), "DRA ResourceClaims from values"
            release = trial.options.release_name
            made = suite(
                rel, TEMPLATE_FILE, original[source], resource, claim, cases, about, docs, release, several=True
            )
            if made is not None:
                out.append(made)
        if out:
            return out
    return []
