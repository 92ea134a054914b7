"""What the kustomizations around the inputs mean for the run, without building: which files belong to a
graph that holds devices, whether that graph can be migrated whole, and the findings on its patches."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dramigrate.findings import RULES, Finding, InputError
from dramigrate.kustomize.fields import (
    IDENTITY,
    DeviceField,
    container_of,
    copied_fields,
    kind_changing,
    mentions_device,
    object_kinds,
    patch_fields,
    patch_text_line,
    replacement_fields,
    target_kind,
    transformer_fields,
    written_keys_fields,
)
from dramigrate.kustomize.graph import (
    Graph,
    Kustomization,
    Patch,
    Preloaded,
    absolute_roots,
    discover,
    inflating_key,
    is_url,
    may_name,
    network_reads,
    outside_reads,
    under,
)
from dramigrate.limits import MAX_KUSTOMIZE_DEPTH, MAX_KUSTOMIZE_LOADS, read_regular
from dramigrate.rules import RuleSet
from dramigrate.sources import Walked, collector_paused


@dataclass
class DevicePatch:
    patch: Patch
    folder: Path  # the kustomization folder that lists it
    fields: list[DeviceField]
    component: bool = False  # listed by a Component


@dataclass
class Blocker:
    """Why a graph is not migrated: said once, at a place the user can open."""

    file: Path
    line: int
    message: str
    rule: str = "kustomize-unproven"
    partial: bool = False  # only because some of the graph's kustomizations are not among the given paths


@dataclass
class Unit:
    """A graph of kustomizations (connected by resources, bases and components) that holds device requests."""

    folders: set[Path]
    rules: RuleSet = field(repr=False, compare=False)
    files: set[Path] = field(default_factory=set)  # resource files
    patch_files: set[Path] = field(default_factory=set)
    device_patches: list[DevicePatch] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    _device_files: set[Path] | None = field(default=None, repr=False, compare=False)

    @property
    def device_files(self) -> set[Path]:
        """The resource files that name a device, read when first asked for (the scan only asks whether one does)."""
        if self._device_files is None:
            self._device_files = {f for f in self.files if mentions_device(_read(f), self.rules)}
        return self._device_files

    @property
    def migratable(self) -> bool:
        return not self.blockers

    @property
    def whole_elsewhere(self) -> bool:
        """fix migrates the graph when given all of it: lint reports its requests as it does those of a graph it
        was given whole (errors), so that a lint of the changed files (the pre-commit hook) never passes a request
        a lint of the repository fails on."""
        return all(b.partial for b in self.blockers)

    def why_not(self) -> str:
        return self.blockers[0].message if self.blockers else ""


MIGRATED_WITH_GRAPH = "migrated with its kustomize graph"  # fix's word on a file the kustomize flow rewrites
PATCH_WITH_GRAPH = "fix migrates it with its base and proves every overlay build"  # lint's word on a device patch


@dataclass
class Scan:
    graph: Graph
    units: list[Unit] = field(default_factory=list)
    unit_of: dict[str, Unit] = field(default_factory=dict)  # resource and patch file (resolved text) -> its graph
    errors: list[tuple[Path, BaseException]] = field(default_factory=list)  # broken kustomizations, for the run
    broken: set[Path] = field(default_factory=set)  # folders of broken kustomizations
    inputs: set[str] = field(default_factory=set)  # the input files, resolved
    inflates: set[Path] = field(default_factory=set)  # kustomizations under the paths that inflate Helm charts
    _broken_text: set[str] = field(default_factory=set, repr=False)
    _below: dict[str, bool] = field(default_factory=dict, repr=False)

    def skip(self, path: str) -> bool:
        """A patch file: the core does not read it as a manifest (the kustomize flow does). path: resolved."""
        unit = self.unit_of.get(path)
        return unit is not None and Path(path) in unit.patch_files and Path(path) not in unit.files

    def reason(self, path: str, fix: bool) -> str:
        """Why the core must leave this file as it is ("" when it may rewrite or report it as usual).

        In fix and diff mode every file of a device graph is left to the kustomize flow; lint reports the
        files of a graph that can be migrated as usual, and the others as kustomize-patch warnings."""
        unit = self.unit_of.get(path)
        if unit is None:
            if self.broken and self._below_broken(os.path.dirname(path)):
                return "a kustomization above it is broken, so the overlays that build on it are unknown"
            return ""
        if not unit.migratable and (fix or not unit.whole_elsewhere):
            return unit.why_not()
        return MIGRATED_WITH_GRAPH if fix else ""

    def _below_broken(self, folder: str) -> bool:
        """folder is, or is inside, the folder of a broken kustomization (remembered per folder)."""
        if len(self._broken_text) != len(self.broken):
            self._broken_text = {str(b) for b in self.broken}
            self._below = {}
        hit = self._below.get(folder)
        if hit is None:
            hit = self._below[folder] = under(folder, self._broken_text)
        return hit

    def display(self, folder: Path) -> str:
        try:
            return str(folder.relative_to(Path.cwd().resolve())) or "."
        except ValueError:
            return str(folder)


@collector_paused()  # its loads and graph set off a tenth of a 20,000-file lint's collections
def scan(
    paths: list[str],
    rules: RuleSet,
    walked: list[Walked] | None = None,
    preloaded: Preloaded | None = None,
    device_free: Callable[[str], bool] | None = None,
) -> Scan:
    """paths: the input files, resolved (sources.resolve_paths); walked: the folders their walk went through;
    preloaded: the kustomizations loaded already (graph.discover); device_free: says of a file (resolved) that it
    names no device resource, so that it is not read (the grep pre-filter read it: prefilter.Grep.device_free)."""
    graph = discover(paths, walked=walked, preloaded=preloaded)
    out = Scan(graph, errors=list(graph.errors))
    out.broken = set(graph.broken)
    out.errors = [(Path(out.display(p)), e) for p, e in graph.errors]
    for _, exc in out.errors:
        if isinstance(exc, InputError) and exc.file:
            exc.file = out.display(Path(exc.file))
    done: set[Path] = set()
    inputs = out.inputs = set(paths)
    out.inflates = {k.file for k in graph.nodes.values() if k.inside and inflating_key(k) is not None}
    for folder in sorted(graph.nodes):
        node = graph.nodes[folder]
        touched = (
            node.inside
            or any(str(f) in inputs for f in node.files)
            or any(p.file is not None and str(p.file) in inputs for p in node.patches)
        )
        if folder in done or not touched:
            continue
        members = graph.component_of(folder)
        done |= members
        unit = _unit(graph, members, rules, out, device_free)
        if unit is None:
            continue
        out.units.append(unit)
        for f in unit.files | unit.patch_files:  # a file of two graphs: the one fix migrates (it writes the file)
            if str(f) not in out.unit_of or not out.unit_of[str(f)].migratable:
                out.unit_of[str(f)] = unit
    out.errors.extend(
        (Path(out.display(b.file)), InputError(b.message, out.display(b.file), b.line))
        for unit in out.units
        for b in unit.blockers
        if b.rule == "bad-input"
    )
    return out


def _read(path: Path) -> str:
    try:
        return read_regular(str(path)).decode("utf-8", errors="replace")
    except (OSError, InputError):
        return ""


def _unit(
    graph: Graph, members: set[Path], rules: RuleSet, out: Scan, device_free: Callable[[str], bool] | None
) -> Unit | None:
    unit = Unit(members, rules=rules)
    # writes of kind or apiVersion: (file, field, by what, the kind of the objects they reach when named plainly)
    identity: list[tuple[Path, DeviceField, str, str | None]] = []

    def writes(
        found: Iterable[tuple[Path, DeviceField]], owner: Path, by: str, blocked: str, kind: str | None = None
    ) -> None:
        """Fields a kustomize write of owner's graph node reaches (file, field): one of kind or apiVersion is checked
        once the graph's files are read (identity, `by` what); any other is kustomize-device-field (`blocked`: why,
        to migrate by hand). Both are templates of {file}, {owner}, {what} and {path}."""
        for file, f in found:
            said = {"file": out.display(file), "owner": out.display(owner), "what": f.what, "path": f.path}
            if f.path in IDENTITY:
                identity.append((file, f, by.format(**said), kind))
            else:
                unit.blockers.append(Blocker(file, f.line, blocked.format(**said), "kustomize-device-field"))

    for d in sorted(members):
        node = graph.nodes[d]
        unit.files.update(node.files)
        for p in node.patches:
            if p.file is not None:
                unit.patch_files.add(p.file)
            tagged = "!" in p.text  # a tag kustomize reads through (!!binary): the parse refuses it
            try:
                found = (
                    patch_fields(p, rules) if tagged or mentions_device(p.text, rules) or _labels(p.text, rules) else []
                )
                # the operation's key may be spelled with an escape (`"\u006fp": move`)
                copied = copied_fields(p) if tagged or "op" in p.text or "\\" in p.text else []
            except InputError as exc:  # an alias bomb: named, never expanded; a !!binary value: bad input
                line = p.line if p.file is None else 1
                if exc.line:
                    line = patch_text_line(p) + exc.line - 1
                unit.blockers.append(Blocker(p.where, line, f"the patch holds {exc.message}", exc.rule))
                continue
            if found:
                unit.device_patches.append(DevicePatch(p, d, found, node.kind == "Component"))
            if kind_changing(node, p):
                at = DeviceField("kind", p.line, "allowKindChange")
                by = f"the patch of {out.display(node.file)} (options: allowKindChange)"
                identity.append((node.file, at, by, target_kind(p)))
            writes(
                ((p.where, f) for f in copied),
                node.file,
                "the JSON6902 patch {file} ({what})",
                "a JSON6902 patch of {owner} puts the field {path} together from elsewhere ({what}), which may bring "
                "a device request: migrate it by hand",
                target_kind(p),
            )
        keyed = _unless_bomb(unit, out, node, "configurations", "a configurations file", written_keys_fields, node)
        writes(
            keyed,
            node.file,
            "a fieldSpec of {file} ({what})",
            "the {what} of {owner} are written into {path} (a fieldSpec), which may write a device request there: "
            "migrate it by hand",
        )
        written = _unless_bomb(
            unit,
            out,
            node,
            "transformers",
            "a transformer",
            transformer_fields,
            node,
            _transformer_texts(graph, node),
            rules,
        )
        for file, line, key in _changed_configs(graph, node):
            unit.blockers.append(
                Blocker(
                    file,
                    line,
                    f"{out.display(file.parent)}, a folder kustomize builds for the transformers of "
                    f"{out.display(node.file)}, changes its transformer configurations in that build ({key}), which "
                    "dramigrate does not build: what they write into the objects (a device request) is unknown; "
                    "migrate it by hand",
                    "kustomize-device-field",
                )
            )
        writes(
            written,
            node.file,
            "a transformer of {owner} ({what})",
            "a transformer of {owner} ({what}) writes the field {path}, which may bring a device request: migrate it "
            "by hand",
        )
        replaced = _unless_bomb(unit, out, node, "replacements", "a replacements file", replacement_fields, node, rules)
        writes(
            ((node.file, f) for f in replaced),
            node.file,
            "a replacement in {owner}",
            "a replacement in {owner} reaches the device field {path}: migrate it by hand",
        )
    holds = any(not dp.fields[0].label for dp in unit.device_patches) or (
        (not unit.blockers or bool(identity))  # the files are read only when it matters
        and any(not (device_free and device_free(str(f))) and mentions_device(_read(f), rules) for f in unit.files)
    )
    if not unit.blockers and not holds:
        return None
    reached: set[str] | None = None
    for file, f, by, kind in identity if holds else []:
        if kind is not None:  # a write on the objects of one kind: only one that asks for a device matters
            reached = _device_kinds(unit.files, rules) if reached is None else reached
            if "" not in reached and kind not in reached:  # "": a file whose kinds are unknown
                continue
        unit.blockers.append(
            Blocker(
                file,
                f.line,
                f"{by} writes the {f.path} of the objects it reaches: an object of this graph that asks for a "
                "device under another kind (or one dramigrate does not know) would be built as a workload, and "
                "dramigrate reads each object as the kind its file gives; not checked, nothing of the graph is "
                "written (write the kind in the resource file)",
                "bad-input",
            )
        )
    for dp in unit.device_patches:
        f = dp.fields[0]
        if dp.component:
            unit.blockers.append(
                Blocker(
                    dp.patch.where,
                    f.line,
                    f"the component {out.display(dp.folder)} patches the device field {f.path}: migrate it by hand",
                    "kustomize-device-field",
                )
            )
        target = dp.patch.target or {}
        if dp.patch.json6902 and not (target.get("kind") and target.get("name")):  # fix wires one named workload
            unit.blockers.append(
                Blocker(
                    dp.patch.where,
                    f.line,
                    f"the JSON6902 patch {out.display(dp.patch.where)} sets the device field {f.path} on a target "
                    "without a kind and a name (every object its selector matches): migrate it by hand",
                    "kustomize-device-field",
                )
            )
    (depth, top), (loads, heaviest) = graph.stacking(members)
    if depth > MAX_KUSTOMIZE_DEPTH and top is not None:  # each build loads the stack below it: quadratic work
        unit.blockers.append(
            Blocker(
                graph.nodes[top].file,
                1,
                f"{out.display(top)} stacks {depth} kustomizations on one another (more than {MAX_KUSTOMIZE_DEPTH}): "
                "proving each of their builds would take minutes; nothing of the graph is written (migrate it by "
                "hand)",
            )
        )
    elif loads > MAX_KUSTOMIZE_LOADS and heaviest is not None:  # overlays including the same bases over and over
        unit.blockers.append(
            Blocker(
                graph.nodes[heaviest].file,
                1,
                f"building {out.display(heaviest)} loads {loads:,} kustomizations (more than {MAX_KUSTOMIZE_LOADS:,}: "
                "overlays that include the same bases over and over), which would take minutes; nothing of the "
                "graph is written (migrate it by hand)",
            )
        )
    outside = [d for d in sorted(members) if not graph.nodes[d].inside]
    if outside:
        names = ", ".join(out.display(d) for d in outside[:3]) + (
            f" and {len(outside) - 3} more" if len(outside) > 3 else ""
        )
        unit.blockers.append(
            Blocker(
                graph.nodes[outside[0]].file,
                1,
                f"{names} {'is' if len(outside) == 1 else 'are'} part of this kustomize graph but outside the given "
                "paths; nothing of the graph is written (pass them too)",
                partial=True,
            )
        )
    for d in sorted(members):
        node = graph.nodes[d]
        # a base or component outside the paths and the repository (or behind a symlink out of them), which no
        # walk found: its build would read, and the proof's messages quote, what lies there
        beyond = [c for c in node.children + node.components if c not in graph.nodes and c not in graph.broken]
        if beyond:
            entry, line = node.entries.get(beyond[0], (str(beyond[0]), node.line_of("resources")))
            unit.blockers.append(
                Blocker(
                    node.file,
                    line,
                    f"{out.display(node.file)} builds on {entry}, a kustomization outside the paths and the "
                    "repository: dramigrate neither builds nor rewrites it; nothing of the graph is written (pass "
                    "it too, or vendor it into the repository)",
                )
            )
        if node.remote:
            unit.blockers.append(
                Blocker(
                    node.file,
                    node.line_of("resources"),
                    f"{out.display(node.file)} builds on a remote base ({node.remote[0]}), which dramigrate "
                    "neither fetches nor rewrites: fix migrates local trees only, so this graph is reported and "
                    "left as it is (migrate the base where it lives, or vendor it into the repository)",
                )
            )
    for d in sorted(members):
        node = graph.nodes[d]
        for entry, line in network_reads(node)[:1]:
            unit.blockers.append(
                Blocker(
                    node.file,
                    line,
                    f"{out.display(node.file)} reads {entry} from the network, which kustomize would fetch and "
                    "dramigrate never does: this graph is reported and left as it is, unbuilt (vendor the file into "
                    "the repository)",
                )
            )
        for entry, line in absolute_roots(node):
            unit.blockers.append(
                Blocker(
                    node.file,
                    line,
                    f"{out.display(node.file)} names the kustomization folder {entry} by an absolute path, which "
                    "kustomize refuses (new root cannot be absolute), so the build fails; nothing of the graph is "
                    "written (write the path relative to the kustomization's folder)",
                )
            )
        reads = outside_reads(node)
        if reads:
            entry, line = reads[0]
            unit.blockers.append(
                Blocker(
                    node.file,
                    line,
                    f"{out.display(node.file)} reads {entry}, outside its own folder: kustomize refuses such a file "
                    "(its load restrictor), so the build fails; nothing of the graph is written (move the file "
                    "under the kustomization's folder, or make its folder a kustomization to list)",
                )
            )
    for d in sorted(members):
        node = graph.nodes[d]
        key = inflating_key(node)
        if key is not None:  # kubectl kustomize builds it only with --enable-helm, which runs helm and may pull charts
            unit.blockers.append(
                Blocker(
                    node.file,
                    node.line_of(key),
                    f"{out.display(node.file)} inflates Helm charts ({key}), which dramigrate does not build (the "
                    "build would run helm and may pull charts from the network); nothing of the graph is written "
                    "(migrate it by hand)",
                )
            )
    circle = graph.cycle(members)
    if circle:
        names = " -> ".join(out.display(d) for d in (*circle, circle[0]))
        top = graph.nodes[circle[0]]
        unit.blockers.append(
            Blocker(
                top.file,
                top.line_of("resources" if "resources" in top.lines else "bases"),
                f"{names}: these kustomizations build on one another in a circle, which kustomize refuses, so the "
                "build fails; nothing of the graph is written",
            )
        )
    # a broken kustomization blocks the graphs it may build on (it may be an overlay of theirs), not every graph
    named = members | unit.files | unit.patch_files | {graph.nodes[d].file for d in members}
    reaching = [shown for shown, (real, _) in zip(out.errors, graph.errors, strict=True) if may_name(real, named)]
    if reaching:
        path, exc = reaching[0]
        where = str(exc) if isinstance(exc, InputError) else f"{out.display(path)}: {type(exc).__name__}"
        unit.blockers.append(Blocker(path, 1, f"a kustomization under the paths is broken ({where}); nothing written"))
    return unit


def _device_kinds(files: set[Path], rules: RuleSet) -> set[str]:
    """The kinds of the objects (and of the items of lists) in those of files that name a device; "" among them
    when a file that names one cannot be read through (the kinds it holds are unknown)."""
    out: set[str] = set()
    for f in sorted(files):
        text = _read(f)
        if not mentions_device(text, rules):
            continue
        try:
            nodes = object_kinds(text)
        except InputError:
            nodes = None
        out.update(nodes if nodes is not None else {""})
    return out


T = TypeVar("T")


def _unless_bomb(
    unit: Unit, out: Scan, node: Kustomization, key: str, what: str, read: Callable[..., list[T]], *args: Any
) -> list[T]:
    """read(*args)'s device fields of the kustomization's `key` entry; none when what it reads holds an alias bomb
    (InputError), which is named at that entry as a blocker, never expanded."""
    try:
        return read(*args)
    except InputError as exc:
        unit.blockers.append(
            Blocker(node.file, node.line_of(key), f"{what} of {out.display(node.file)} holds {exc.message}", exc.rule)
        )
        return []


# what a kustomization built for its transformer configurations may do to them besides listing them
CONFIG_CHANGES = (
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "replacements",
    "transformers",
    "components",
    "generators",
)


@dataclass(frozen=True)
class _Changes:
    """A key of a transformer folder's kustomization that changes its configurations (CONFIG_CHANGES)."""

    key: str


def _transformer_texts(graph: Graph, k: Kustomization) -> list[tuple[Path, int, str]]:
    """(file, line, text) of each transformer configuration k's `transformers:` lists: inline (k's file, the entry's
    line), a file of k's folder, or the resource files of a kustomization folder kustomize builds for them."""
    return [t for t in _transformer_sources(graph, k) if isinstance(t[2], str)]


def _changed_configs(graph: Graph, k: Kustomization) -> list[tuple[Path, int, str]]:
    """(kustomization file, line, key) of each kustomization folder k's `transformers:` builds whose own build
    changes the configurations it lists (a patch, a replacement, ...): what they write is known only from a build."""
    return [(f, line, key.key) for f, line, key in _transformer_sources(graph, k) if isinstance(key, _Changes)]


def _transformer_sources(graph: Graph, k: Kustomization) -> list[tuple[Path, int, str | _Changes]]:
    entries = k.data.get("transformers")
    out: list[tuple[Path, int, str | _Changes]] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, str) or "\0" in entry or is_url(entry):
            continue
        if "\n" in entry or ":" in entry:
            out.append((k.file, k.item_line("transformers", i), entry))
            continue
        target = (k.dir / entry).resolve()
        todo, seen = [target], set()
        while todo:  # a folder's kustomization and those it builds on (each once)
            folder = todo.pop()
            node = graph.nodes.get(folder)
            if node is None or folder in seen:
                continue
            seen.add(folder)
            out.extend((f, 1, _read(f)) for f in node.files)
            out.extend((node.file, node.line_of(key), _Changes(key)) for key in CONFIG_CHANGES if node.data.get(key))
            todo.extend(node.children)
        if not seen and under(str(target), {str(k.dir.resolve())}):  # kustomize reads no file elsewhere
            out.append((target, 1, _read(target)))
    return out


def _labels(text: str, rules: RuleSet) -> bool:
    return "nodeSelector" in text or "matchExpressions" in text and any(k in text for k in rules.labels)


def patch_findings(s: Scan, rules: RuleSet, lint: bool = False) -> list[Finding]:
    """Lint's findings on device patches (file and line of the field, naming the overlays) and on blockers. lint: a
    graph blocked only for kustomizations outside the given paths is reported as fix would find it given them."""
    out: list[Finding] = []
    for unit in s.units:
        for dp in unit.device_patches:
            if not s.graph.nodes[dp.folder].inside and str(dp.patch.file) not in s.inputs:
                continue
            overlays = ", ".join(s.display(o) for o in s.graph.overlays_of(dp.folder)) or s.display(dp.folder)
            for f in dp.fields:
                what = f"node label {f.what}" if f.label else f"{f.what}: {f.value}" if f.value else f.what
                text = (
                    f"{f.path}: {what} set by the {dp.patch.form} of {s.display(dp.patch.owner)} (overlay {overlays})"
                )
                if unit.migratable or lint and unit.whole_elsewhere:
                    rule, text = (
                        "kustomize-device-patch",
                        f"{text}; {PATCH_WITH_GRAPH}",
                    )
                else:
                    rule, text = "kustomize-patch", f"{text}; left as is: {unit.why_not()}"
                resource = "" if f.label else f.what
                where = s.display(dp.patch.where)
                kind, namespace, name = f.target  # a patch retargeted, or moved to another container, is new
                out.append(
                    Finding(
                        rule,
                        RULES[rule][0],
                        text,
                        where,
                        f.line,
                        1,
                        kind=kind,
                        namespace=namespace,
                        name=name,
                        container=container_of(f.path),
                        resource=resource,
                        fixable=unit.migratable,
                    )
                )
        seen: set[tuple[str, int, str]] = set()
        for b in unit.blockers:
            key = (str(b.file), b.line, b.message)
            if key in seen or b.rule == "bad-input":  # the run's bad input (Scan.errors)
                continue
            seen.add(key)
            out.append(Finding(b.rule, RULES[b.rule][0], b.message, s.display(b.file), b.line, 1))
    return out
