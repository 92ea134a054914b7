"""The proof of a rewrite behind the `dra.enabled` switch (patterns A and D, map-built and mixed shapes): the
rewritten chart with the switch off renders byte for byte as the original (L), and with it on renders the
migration of the original render (D), over every value set the proof derives (defaults, each shipped and named
values file, counts changed, switched off and added); the shapes that take several templates or branches are
proven part by part.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dramigrate.config import Settings
from dramigrate.findings import Finding
from dramigrate.helm.chartvalues import chart_defaults
from dramigrate.helm.foldguards import folded
from dramigrate.helm.listindent import INDENTED
from dramigrate.helm.outcome import (
    ADDED_DEVICE,
    ENGINE_HINT,
    ChartOutcome,
    Variation,
    Workdir,
    _by_template,
    _every_by_template,
    _finish,
    _hints,
    _in_umbrella,
    _manual,
    _not_identical,
    _not_proven_apart_from_invalid,
    _not_proven_on,
    _rewritten_copy,
    _subchart_scopes,
    _switches_usage,
    _with_switches,
    rendered_once_indented,
)
from dramigrate.helm.patterns import (
    UNTAKEN,
)
from dramigrate.helm.probe import Relation
from dramigrate.helm.prove import (
    objects,
)
from dramigrate.helm.renderpool import (
    Render,
    agains,
    cached_render,
    manifest_stream,
    may_matter,
    render_all,
    render_each,
    render_later,
)
from dramigrate.helm.rewrite import Change, RewriteError, chart_name
from dramigrate.helm.switchname import OWN, build_beside, switch_key
from dramigrate.helm.values import (
    Leaf,
)
from dramigrate.rules import RuleSet


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
        changes = build_beside(  # under `draDevices` where the chart's values have a `dra:` of their own
            leaf,
            lambda at: mapvars.build(
                at,
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
            ),
        )
        changes = _in_umbrella(root, sub, changes)
    except RewriteError as exc:
        _manual(outcome, f"{sub}/{exc}{ENGINE_HINT}" if sub else f"{exc}{ENGINE_HINT}", "")
        return
    key = switch_key(leaf) or OWN
    keys = [".".join((*scope, key, "enabled")) for scope in scopes]
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
    if sub or key != OWN:
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
    first_on: Render | None = None  # the first value set's switch-on render (_user_claims compares with it)
    try:
        for v, original, want, _ in expected:
            off, on, again = next(renders), next(renders), next(seconds)
            first_on = on if first_on is None else first_on
            if original.error and not off.error:
                indented = rendered_once_indented(root, outcome.changes, None, v, off)
                if indented == "":
                    outcome.checked.append(f"{v.label} (switch off, values the chart did not render: {INDENTED})")
                    continue
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
            why = {s: _side_unproven(s, said[s], sides[s], ref[s], added, root, v.left) for s in (False, True)}
            if any(why.values()) and (later := render_later(root, v.options)) is not None:  # the clock's next step
                late = (original, later, want)
                why = {
                    s: why[s] and _side_unproven(s, said[s], sides[s], late, added, root, v.left) for s in (False, True)
                }
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
            if why[True] and not why[False] and _refused_alike(sides[True], base, wanted):
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
    if why := _user_claims(outcome, root, expected[0][0], on, first_on):
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


def _user_claims(
    outcome: ChartOutcome, root: Path, v: Variation, on: Callable[[Any], Render], without: Render | None = None
) -> str:
    """The proof's value set `v` with a claim of the user's own in each resourceClaims value (claimsprobe.py), the
    DRA switch on (`on`: the rewritten chart's render of some options with it on): '' when proven or when the values
    have no such place; noted in `outcome.checked`. `without`: `on(v.options)` as the proof rendered it already (the
    very render it proved), else rendered here."""
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
        # independent renders: rendered at once
        given_on = functools.partial(on, v.options) if without is None else lambda: without
        calls = [functools.partial(on, options), given_on, functools.partial(cached_render, root, options, True)]
        why = claimsprobe.unproven(case, *render_all(calls))
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


def _refused_alike(on: Render, original: Render, wanted: str) -> bool:
    """Whether the switch-on render fails where the migration refuses the pods (it leaves the original render as it
    is): a device kind asking for more than the 32 devices the scheduler allocates to one claim (multiclaim.py), or a
    device request unlike its limit (a request unset renders no count: the API server rejects both)."""
    from dramigrate.helm.model import OVER_LIMIT, UNEQUAL_REQUEST

    failed = bool(on.error) and (OVER_LIMIT in on.error or UNEQUAL_REQUEST in on.error)
    return failed and wanted == original.stream


def _render_devices(render: Render) -> set[str]:
    """The device resources the containers of a render ask for."""
    from dramigrate.helm.idiomatic import _rendered_devices
    from dramigrate.helm.poddelta import shipped_rules

    docs = [d for docs in objects(render.stream).values() for d in docs]
    return _rendered_devices(docs, shipped_rules()) if not render.error else set()


def _side_unproven(
    on: bool,
    case: str,
    new: Render,
    reference: tuple[Render, Render, str],
    added: bool,
    root: Path | None = None,
    left: tuple[Finding, ...] = (),
) -> str:
    """Why one side of a value set is not proven ('' when it is): with the switch off the rewritten chart renders
    byte for byte the original's render (`reference`: that render, a second one, and its migration; `left`: the
    migration's findings on requests it leaves as they are), with it on the migration (a set that adds a device the
    templates do not ask for is checked off only)."""
    if new.error:
        return f"{case}, the rewritten chart does not render: {new.error}"
    original, again, want = reference
    if not on:
        return _not_identical(case, original, again, new)
    return "" if added else _not_proven_on(case, original, again, want, new, root=root, left=left)


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
