"""fix and diff on kustomize graphs: build every kustomization of a graph with the real kustomize, migrate each
build (`fix -`), rewrite the sources, build the rewritten tree in a scratch copy, and keep the rewrite only when
every build equals the migration of its original build (templates by content), validates for 1.34 and 1.36, and
leaves no legacy request. Builds of all graphs run together, in parallel.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dramigrate.config import Settings
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.kustomize.build import Build, Builder, build_timeout
from dramigrate.kustomize.fields import mentions_device
from dramigrate.kustomize.graph import Kustomization
from dramigrate.kustomize.namerefs import FILE_NAME, configuration_text, map_keys_of
from dramigrate.kustomize.proof import canonical, differences, invalid, load
from dramigrate.kustomize.rewrite import (
    POD_FIELDS_FROM_BUILD,
    TEMPLATES_FILE,
    PodWiring,
    TreeEdit,
    Unprovable,
    add_list_item,
    apply_items,
    delete_patch,
    drop_list_item,
    dump_ops,
    json6902_ops,
    set_patch_text,
    smp_for,
    smp_text,
    templates_of,
    templates_text,
    wiring,
)
from dramigrate.kustomize.scan import MIGRATED_WITH_GRAPH, PATCH_WITH_GRAPH, Scan, Unit
from dramigrate.memo import per_run
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import RuleSet
from dramigrate.sources import SKIP_DIRS
from dramigrate.suppress import FileSuppressions, suppressed_request
from dramigrate.terminal import MESSAGES
from dramigrate.versions import Target
from dramigrate.workloads import pod_specs

if TYPE_CHECKING:
    from collections.abc import Callable

    from dramigrate.ahead import Ahead as FilesAhead

PROOF_VERSIONS = ("1.34", "1.36")
_QUOTED_PATH = re.compile(r"'(/[^']*)'")  # kustomize quotes the absolute paths it names
FILL_ROUNDS = 2


@dataclass
class Outcome:
    unit: Unit
    edit: TreeEdit = field(default_factory=TreeEdit)
    base_results: dict[Path, FileResult] = field(default_factory=dict)
    expected: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)  # folder -> migrated original build
    reason: str = ""  # why nothing is written ("" when proven)
    where: tuple[Path, int] | None = None
    fill: dict[tuple[Path, int, str, str], dict[str, Any]] = field(default_factory=dict)  # pod fields from builds
    proven: bool = False
    checked: list[Path] = field(default_factory=list)
    bad_input: bool = False  # the reason is a file of the graph dramigrate cannot read (named at `where`), exit 2


@dataclass
class _Patching:
    """What rewriting one graph's device patches collects."""

    outcome: Outcome
    base_claims: dict[tuple[str, str, str], dict[str, str]]
    base_templates: dict[str, str]  # name -> namespace ("" when none) of the templates the base files hold
    emitted: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)  # folder -> templates it emits
    deletes: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)  # folder -> delete patches
    deleted: dict[Path, set[str]] = field(default_factory=dict)  # folder -> names of the templates it deletes
    # (folder, kind, name, pod path) -> claim name -> template name, as the folder's device patch wires the pod
    wired: dict[tuple[Path, str, str, str], dict[str, str]] = field(default_factory=dict)


class Runner:
    def __init__(
        self,
        kz: Scan,
        rules: RuleSet,
        settings: Settings,
        target: Target,
        builder: Builder,
        ran_ahead: dict[Job, Callable[[], FileResult | None]] | None = None,
        submit: Callable[[Job], Callable[[], FileResult | None] | None] | None = None,
    ) -> None:
        self.kz = kz
        self.rules = rules
        self.settings = settings
        self.target = target
        self.builder = builder
        self.ran_ahead = ran_ahead or {}  # device files' fix jobs the worker pool ran: their results, once each
        self.submit = submit  # runs a job in the worker pool (Ahead.submit), when there is one
        self._fixed_results: dict[Path, FileResult] = {}  # device file -> its fix result, run once per run
        self.took = builder.took  # folder -> seconds its builds took (the original's, then the proof's)
        self.versions = tuple(v for v in PROOF_VERSIONS if Target.parse(v).at_least("1.34")) or (target.text,)
        if not target.at_least("1.34"):
            self.versions = (target.text,)

    # --- the run -------------------------------------------------------------------------------------------

    def run(self, left_alone: frozenset[int] = frozenset()) -> list[Outcome]:
        """Every migratable graph but those left alone (ids of units), each proven or with the reason it is not.
        Graphs are independent: each one's outcome is the same whichever others run with it, but for slow builds,
        which share the run's budget (limits.SlowBudget)."""
        outcomes = [Outcome(u) for u in self.kz.units if u.migratable and id(u) not in left_alone]
        orders = {id(o): self.kz.graph.build_order(o.unit.folders) for o in outcomes}
        owner = {f: o for o in outcomes for f in orders[id(o)]}
        # migrate each build while the others still run: in the worker pool when there is one (a build holds every
        # device workload of its bases, so these migrations are most of the work), else here between two builds
        pending: list[tuple[Outcome, Path, Build, Callable[[], FileResult | None] | None]] = []
        # a graph with a failed build is not migrated: its other builds are not started (each may take the limit)
        builds = self.builder.stream(list(owner), dropped=lambda f: bool(owner[f].reason))
        for folder, b in builds:
            o = owner[folder]
            if self.submit is None or not b.ok:
                if not o.reason:
                    self._expect(o, folder, b)
                continue
            job = self._build_job(folder, b)
            pending.append((o, folder, b, self.submit(job) if job is not None else None))
        for o, folder, b, took in pending:  # in the order the builds came, as above
            if not o.reason:
                self._expect(o, folder, b, took() if took is not None else None)
        live = [o for o in outcomes if not o.reason]
        for o in live:
            self._rewrite(o)
        for _ in range(FILL_ROUNDS + 1):
            todo = [o for o in live if not o.reason and not o.proven]
            if not todo:
                break
            self._prove(todo, orders)
            for o in todo:
                if not o.proven and not o.reason.startswith("!"):
                    o.edit = TreeEdit()
                    o.base_results = {}
                    self._rewrite(o)
        for o in live:
            if not o.proven and not o.reason:
                o.reason = "the rewrite could not be proven"
            o.reason = o.reason.removeprefix("!")
        return outcomes

    def display(self, path: Path) -> str:
        return self.kz.display(path)

    def _quotable(self, error: str) -> str:
        """kustomize's error, unless it names a path outside the kustomizations dramigrate read: kustomize prints
        the object it refuses (`missing metadata.name in object {{v1 Secret} {{ } map[...]}}`), and what a folder
        outside the repository holds must never reach a report."""
        line = error.splitlines()[0] if error else ""
        for quoted in _QUOTED_PATH.findall(line):
            path = Path(quoted)
            if not any(p in self.kz.graph.nodes for p in (path, *path.parents)):
                return f"its message is not quoted: the build reads {path}, outside the kustomizations read here"
        return line

    def _build_job(self, folder: Path, b: Build) -> Job | None:
        """The migration of a build (None when there is none to run: the build failed or names no device)."""
        if not b.ok or not mentions_device(b.text, self.rules):
            return None
        return Job(f"{self.display(folder)} (kustomize build)", b.text.encode("utf-8"), True)

    def _expect(self, o: Outcome, folder: Path, b: Build, ran: FileResult | None = None) -> None:
        """The migrated original build of a folder (ran: the migration of its build, when the pool ran it)."""
        if not b.ok:
            o.reason = f"{self.display(folder)} does not build with kustomize: {self._quotable(b.error)}"
            o.where = (self.kz.graph.nodes[folder].file, 1)
            return
        job = self._build_job(folder, b)
        if job is None:
            o.expected[folder] = load(b.text)
            return
        r = ran if ran is not None else run_file(job, self.rules, self.settings, self.target)
        left = [f for f in r.findings if f.severity.value == "error" and not f.fixed]
        if r.error is not None or left:
            why = str(r.error) if r.error is not None else f"[{left[0].rule}] {left[0].message}"
            o.reason = f"the migration of the build of {self.display(folder)} leaves an error: {why}"
            o.where = (self.kz.graph.nodes[folder].file, 1)
            return
        o.expected[folder] = load(r.rewritten or r.original or b.text)

    # --- rewriting -----------------------------------------------------------------------------------------

    def _rewrite(self, o: Outcome) -> None:
        try:
            self._rewrite_bases(o)
            self._rewrite_patches(o)
            apply_items(o.edit)
        except Unprovable as exc:
            o.reason = "!" + str(exc)

    def _rewrite_bases(self, o: Outcome) -> None:
        graph = self.kz.graph
        for f in sorted(o.unit.device_files):
            r = self._fixed(f)
            if r.error is not None:
                raise Unprovable(f"{self.display(f)}: {r.error.message}")
            left = [x for x in r.findings if x.severity.value == "error" and not x.fixed]
            if left:
                raise Unprovable(f"{self.display(f)}:{left[0].line}: [{left[0].rule}] {left[0].message}")
            o.base_results[f] = r
            if r.rewritten is not None:
                o.edit.set(f, r.rewritten)
                o.edit.changes.extend(r.changes)
        objects = [obj for objs in o.expected.values() for obj in objs]
        text = configuration_text(self.rules, map_keys_of(objects, self.rules))
        for folder in sorted(o.unit.folders):
            k = graph.nodes[folder]
            if not any(o.base_results.get(f) and o.base_results[f].templates for f in k.files):
                continue
            config = folder / FILE_NAME
            if o.edit.text(config) != text:
                o.edit.set(config, text)
            add_list_item(o.edit, k, "configurations", FILE_NAME)
            o.edit.changes.append(f"{self.display(k.file)}: configurations: {FILE_NAME} (name references to templates)")

    def _fixed(self, f: Path) -> FileResult:
        """The fix result of a device file: the worker pool's when it ran this very job ahead (a result depends only
        on the job and the file), else run here; once a run. A later round, or another graph that lists the file,
        gets a copy: a proven graph's results are changed as they join the run's result, after the run."""
        done = self._fixed_results.get(f)
        if done is not None:
            return copy.deepcopy(done)
        job = Job(self.display(f), None, True)
        took = self.ran_ahead.pop(job, None)
        r = took() if took is not None else None
        r = r if r is not None else run_file(job, self.rules, self.settings, self.target)
        self._fixed_results[f] = r
        return r

    def _base_claims(self, o: Outcome) -> dict[tuple[str, str, str], dict[str, str]]:
        """(kind, name, pod path) -> claim name -> template name, in the rewritten base files."""
        out: dict[tuple[str, str, str], dict[str, str]] = {}
        for f, r in o.base_results.items():
            for obj in load(o.edit.text(f) or ""):
                kind = self.rules.workload(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
                if kind is None:
                    continue
                for ref in pod_specs(obj, kind):
                    claims = (ref.spec or {}).get("resourceClaims") or []
                    out[(str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")), ref.path)] = {
                        str(c.get("name")): str(c.get("resourceClaimTemplateName")) for c in claims
                    }
            del r
        return out

    def _base_templates(self, o: Outcome) -> dict[str, str]:
        return {
            str(t["metadata"]["name"]): str(t["metadata"].get("namespace") or "")
            for r in o.base_results.values()
            for t in r.templates
        }

    def _rewrite_patches(self, o: Outcome) -> None:
        graph = self.kz.graph
        pc = _Patching(o, self._base_claims(o), self._base_templates(o))
        order = {d: i for i, d in enumerate(graph.build_order(o.unit.folders))}
        # bases first: an overlay of an overlay replaces the templates the overlay below it emitted
        for dp in sorted(o.unit.device_patches, key=lambda dp: order.get(dp.folder, -1)):
            k = graph.nodes[dp.folder]
            built = o.expected.get(dp.folder)
            if built is None:
                raise Unprovable(f"{self.display(k.file)}: a device patch in a kustomization that is not built")
            labels = {f.what for f in dp.fields if f.label}
            drop = {lb for lb in labels if not _has_label(built, lb)}
            if dp.patch.json6902:
                self._json6902(pc, dp, k, built, drop)
                continue

            def wiring_of(doc: dict[str, Any], dp: Any = dp, k: Kustomization = k, built: Any = built) -> Any:
                meta = doc.get("metadata") or {}
                text = str(doc)
                if not mentions_device(text, self.rules) and not any(lb in text for lb in {f.what for f in dp.fields}):
                    return None
                return self._wire(pc, dp, k, built, doc, str(doc.get("kind", "")), str(meta.get("name", "")))[0]

            text = o.edit.text(dp.patch.where) if dp.patch.file is not None else dp.patch.text
            try:
                rewritten = smp_text(dp.patch.where, text or "", self.rules, wiring_of, drop)
            except InputError as exc:  # kustomize built it, but its YAML does not read (a key twice): this graph only
                line = exc.line + dp.patch.text_line - 1 if exc.line else dp.patch.line
                o.where, o.bad_input = (dp.patch.where, line), True
                raise Unprovable(f"its device patch does not read: {exc.message}") from None
            set_patch_text(o.edit, dp.patch, rewritten)
            o.edit.changes.append(f"{self.display(dp.patch.where)}: device patch -> DRA claims")
        for folder, templates in pc.emitted.items():
            k = graph.nodes[folder]
            path = folder / TEMPLATES_FILE
            o.edit.set(path, templates_text(o.edit.text(path) if path.exists() else None, templates))
            add_list_item(o.edit, k, "resources", TEMPLATES_FILE)
            o.edit.changes.append(f"{self.display(path)}: ResourceClaimTemplates of the overlay")
        for folder, items in pc.deletes.items():
            for item in items:
                add_list_item(o.edit, graph.nodes[folder], "patches", item)

    def _json6902(self, pc: _Patching, dp: Any, k: Kustomization, built: list[dict[str, Any]], drop: set[str]) -> None:
        from ruamel.yaml.scalarstring import LiteralScalarString

        o = pc.outcome
        target = dp.patch.target or {}
        kind, name = str(target.get("kind", "")), str(target.get("name", ""))  # both given (scan's blockers)
        wirings, obj = self._wire(pc, dp, k, built, {}, kind, name)
        ops, _ = json6902_ops(dp.patch.text, self.rules, drop)
        smp = smp_for(str(obj.get("apiVersion")), kind, name, wirings)
        if ops:
            set_patch_text(o.edit, dp.patch, dump_ops(ops))
            add_list_item(o.edit, k, "patches", {"patch": LiteralScalarString(smp)})
        elif dp.patch.key == "patchesJson6902":  # it takes operations only, and none is left: the wiring replaces it
            drop_list_item(o.edit, k, dp.patch.key, dp.patch.index)
            add_list_item(o.edit, k, "patches", {"patch": LiteralScalarString(smp)})
            if dp.patch.file is not None:
                o.edit.changes.append(
                    f"{self.display(k.file)}: patchesJson6902 {self.display(dp.patch.file)} replaced by the DRA "
                    "wiring (its operations only set device fields; the file is no longer used, delete it)"
                )
        else:
            set_patch_text(o.edit, dp.patch, smp)
        o.edit.changes.append(f"{self.display(dp.patch.where)}: JSON6902 device operations -> DRA claims")

    def _wire(
        self,
        pc: _Patching,
        dp: Any,
        k: Kustomization,
        built: list[dict[str, Any]],
        doc: dict[str, Any],
        kind: str,
        name: str,
    ) -> tuple[list[PodWiring], dict[str, Any]]:
        obj = _match(built, kind, name, k)
        if obj is None:
            raise Unprovable(
                f"{self.display(dp.patch.where)}: the {dp.patch.form} targets {kind}/{name}, which the build of "
                f"{self.display(k.dir)} does not hold under a name kustomize gave it"
            )
        kind_rules = self.rules.workload(str(obj.get("apiVersion", "")), kind)
        if kind_rules is None:
            raise Unprovable(f"{self.display(dp.patch.where)}: {kind} is not a workload kind dramigrate knows")
        paths = {ref.path for ref in pod_specs(doc, kind_rules)} if doc else None
        ns = None if k.data.get("namespace") else str((obj.get("metadata") or {}).get("namespace") or "") or None
        wirings = wiring(obj, templates_of(built), kind_rules, name, ns, paths)
        for w in wirings:
            self._local(pc, w, kind, name, k)
            fill = pc.outcome.fill.get((dp.patch.where, dp.patch.index, name, w.path), {})
            for key in POD_FIELDS_FROM_BUILD:
                if key in fill:
                    w.fields[key] = fill[key]
        return wirings, obj

    def _local(self, pc: _Patching, w: PodWiring, kind: str, name: str, k: Kustomization) -> None:
        """The overlay's own templates for a wired pod, and deletion of the templates it replaces: the base's, or
        those an overlay below it emitted (an overlay of an overlay), as far as they reach this overlay."""
        new_names = {str(c.get("resourceClaimTemplateName")) for c in w.claims}
        below = _below(self.kz.graph, k.dir)
        # name -> namespace: a delete patch names the template's namespace, or matches no template of a base whose
        # workloads set one (the rewritten overlay did not build)
        namespaces = dict(pc.base_templates)
        namespaces.update(
            (str(t["metadata"]["name"]), str(t["metadata"].get("namespace") or ""))
            for d in below
            for t in pc.emitted.get(d, [])
        )
        reaching = set(namespaces)
        reaching -= {n for d in below for n in pc.deleted.get(d, set())}
        for t in w.templates:
            if t["metadata"]["name"] not in reaching:
                pc.emitted.setdefault(k.dir, []).append(t)
        old = dict(pc.base_claims.get((kind, name, w.path), {}))
        for d in self.kz.graph.build_order(below):  # the nearest overlay below that wired this pod wins
            old = pc.wired.get((d, kind, name, w.path), old)
        pc.wired[(k.dir, kind, name, w.path)] = {
            str(c.get("name")): str(c.get("resourceClaimTemplateName")) for c in w.claims
        }
        api = w.templates[0]["apiVersion"] if w.templates else self.target.api_version
        for tname in sorted((set(old.values()) & reaching) - new_names):
            item = delete_patch(api, tname, namespaces[tname])
            pc.deleted.setdefault(k.dir, set()).add(tname)
            if item not in pc.deletes.setdefault(k.dir, []):
                pc.deletes[k.dir].append(item)

    # --- the proof -----------------------------------------------------------------------------------------

    def _prove(self, outcomes: list[Outcome], orders: dict[int, list[Path]]) -> None:
        from dramigrate.lifetime import make_folder

        scratch = make_folder("dramigrate-kustomize-")  # removed even if dramigrate is killed
        try:
            roots: dict[int, tuple[Path, Path]] = {}
            for i, o in enumerate(outcomes):
                root = _common_root(o.unit, o.edit)
                copy_root = scratch / str(i)
                _copy_graph(o.unit.folders, root, copy_root, self.settings.max_file_size)
                for path, text in o.edit.texts.items():
                    if not _write_copy(copy_root / path.relative_to(root), text):
                        o.reason = f"!{self.display(path)} is a symlink: the rewrite would write through it"
                        o.where = (path, 1)
                        break
                roots[id(o)] = (root, copy_root)
            outcomes = [o for o in outcomes if not o.reason]
            builder = Builder(self.builder.command, self.builder.workers, self.builder.budget)
            copies = {  # a proof copy's folder -> (the folder it copies, its graph)
                (roots[id(o)][1] / f.relative_to(roots[id(o)][0])).resolve(): (f, id(o))
                for o in outcomes
                for f in orders[id(o)]
            }
            failed: set[int] = set()  # graphs a proof build failed: the rest of theirs are not started
            builds: dict[Path, Build] = {}
            # a folder's builds share one time limit: the original's, then each round of the proof's
            for c, b in builder.stream(
                list(copies),
                lambda c: build_timeout() - self.took.get(copies[c][0], 0.0),
                lambda c: copies[c][1] in failed,
            ):
                builds[c] = b
                if not b.ok:
                    failed.add(copies[c][1])
            for c, (f, _) in copies.items():
                self.took[f] = self.took.get(f, 0.0) + builder.took.get(c, 0.0)
            self.builder.count += builder.count
            for o in outcomes:
                root, copy_root = roots[id(o)]
                mine = {f: builds.get((copy_root / f.relative_to(root)).resolve()) for f in orders[id(o)]}
                self._check(o, orders[id(o)], {f: b for f, b in mine.items() if b is not None})
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _check(self, o: Outcome, order: list[Path], builds: dict[Path, Build]) -> None:
        for folder in order:
            b = builds.get(folder)
            if b is None:  # not built: another build of the graph failed (met in this loop too)
                continue
            k = self.kz.graph.nodes[folder]
            if not b.ok:
                o.reason = f"the rewritten {self.display(folder)} does not build: {b.error.splitlines()[0]}"
                o.where = (k.file, 1)
                return
            actual = load(b.text)
            diffs = differences(canonical(o.expected[folder]), canonical(actual))
            if diffs:
                if self._fillable(o, folder, diffs, actual):
                    o.reason = ""
                    return
                o.reason = f"!the rewritten {self.display(folder)} builds differently: {diffs[0][2]}"
                o.reason += self._why_different(o, folder)
                o.where = (k.file, 1)
                return
            bad = invalid(actual, self.rules, self.versions)
            if bad:
                o.reason = f"!the rewritten {self.display(folder)} does not validate: {bad}"
                o.where = (k.file, 1)
                return
        o.proven = True
        o.checked = order

    def _why_different(self, o: Outcome, folder: Path) -> str:
        """What in the overlay's own device patches fix cannot carry over (a device taken away), for the finding."""
        gone = [
            f"{self.display(dp.patch.where)}:{f.line} {'removes' if f.value is None else 'sets 0 for'} {f.what}"
            for dp in o.unit.device_patches
            if dp.folder == folder
            for f in dp.fields
            if not f.label and (f.value is None or str(f.value).strip() in ("0", "'0'", '"0"'))
        ]
        if not gone:
            return ""
        return (
            f" (because {', '.join(gone)}: the overlay takes away a device the base asks for, and fix does not yet "
            "rewrite such a patch to take away the base's claim)"
        )

    def _fillable(self, o: Outcome, folder: Path, diffs: list[Any], actual: list[dict[str, Any]]) -> bool:
        """Differences only in pod fields a device patch can set (tolerations, nodeSelector, affinity): set them
        from the migrated build in the next round."""
        added = False
        expected = o.expected[folder]
        for dp in o.unit.device_patches:
            if dp.folder != folder:
                continue
            for obj in expected:
                kind_rules = self.rules.workload(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
                if kind_rules is None:
                    continue
                name = _patched_name(dp, obj)
                if name is None:
                    continue
                for ref in pod_specs(obj, kind_rules):
                    for key in POD_FIELDS_FROM_BUILD:
                        if any(d[1].startswith(f"{ref.path}.{key}") for d in diffs):
                            fill = o.fill.setdefault((dp.patch.where, dp.patch.index, name, ref.path), {})
                            if key not in fill:
                                fill[key] = copy.deepcopy(ref.spec.get(key))
                                added = True
        return added


def _below(graph: Any, folder: Path) -> set[Path]:
    """The kustomizations a folder builds on, at any depth (resources, bases and components), itself excluded."""
    out: set[Path] = set()
    todo = list(graph.nodes[folder].children + graph.nodes[folder].components) if folder in graph.nodes else []
    while todo:
        here = todo.pop()
        if here in out or here not in graph.nodes:
            continue
        out.add(here)
        todo.extend(graph.nodes[here].children + graph.nodes[here].components)
    return out


def _patched_name(dp: Any, obj: dict[str, Any]) -> str | None:
    """The name a device patch gives for this built object, when the patch targets it."""
    built = str((obj.get("metadata") or {}).get("name") or "")
    if dp.patch.json6902:
        t = dp.patch.target or {}
        name = str(t.get("name", ""))
        return name if t.get("kind") == obj.get("kind") and name and name in built else None
    for doc in load(dp.patch.text):
        name = str((doc.get("metadata") or {}).get("name") or "")
        if doc.get("kind") == obj.get("kind") and name and name in built:
            return name
    return None


def _match(objects: list[dict[str, Any]], kind: str, name: str, k: Kustomization) -> dict[str, Any] | None:
    prefix = str(k.data.get("namePrefix") or "")
    suffix = str(k.data.get("nameSuffix") or "")
    same = [o for o in objects if o.get("kind") == kind]
    for o in same:
        if (o.get("metadata") or {}).get("name") == f"{prefix}{name}{suffix}":
            return o
    near = [
        o
        for o in same
        if name in str((o.get("metadata") or {}).get("name"))
        and str((o.get("metadata") or {}).get("name")).startswith(prefix)
        and str((o.get("metadata") or {}).get("name")).endswith(suffix)
    ]
    return near[0] if len(near) == 1 else None


def _has_label(objects: list[dict[str, Any]], label: str) -> bool:
    import json

    return any(f'"{label}"' in json.dumps(o) for o in objects)


def _common_root(unit: Unit, edit: TreeEdit) -> Path:
    import os

    paths = [str(p) for p in unit.folders] + [str(p.parent) for p in unit.files | unit.patch_files]
    paths += [str(p.parent) for p in edit.texts]
    return Path(os.path.commonpath(paths))


# --- into the run's result -------------------------------------------------------------------------------------


class Background:
    """The graphs migrated and proven in a thread while the worker pool still does the files: the builds, the
    migration of each build, the rewrite and the proof need only the scan and the files on disk, and took a third
    of fix's time after the pool. Which graphs a suppressed request leaves alone is known only from the files'
    results, so every migratable graph runs here and run_kustomize drops the outcomes of those left alone (graphs
    are independent, so the others' outcomes are the same). Start it only once the pool's workers are forked: a
    fork while this thread holds a lock could hang the child."""

    def __init__(self, runner: Callable[[], Runner], done: Callable[[], None] = lambda: None) -> None:
        import threading

        self._outcomes: list[Outcome] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(runner, done), name="dramigrate-kustomize", daemon=True)
        self._thread.start()

    def _run(self, runner: Callable[[], Runner], done: Callable[[], None]) -> None:
        try:
            self._outcomes = runner().run()
        except BaseException as exc:  # raised again where run_kustomize takes the outcomes
            self._error = exc
        finally:
            done()

    def outcomes(self) -> list[Outcome]:
        # in short waits, as lifetime.as_completed
        while self._thread.is_alive():
            self._thread.join(0.05)
        if self._error is not None:
            raise self._error
        return self._outcomes


def start(
    kz: Scan, rules: RuleSet, settings: Settings, target: Target, binary: Any, ahead: FilesAhead
) -> Background | None:
    """fix/diff: start migrating the graphs now (see Background); None when no graph can be migrated. The graphs'
    device files are taken from what the worker pool runs ahead."""
    from dramigrate.kustomize.build import find_binary

    units = [u for u in kz.units if u.migratable]
    if not units:
        return None
    jobs = [Job(kz.display(f), None, True) for u in units for f in sorted(u.device_files)]
    ran = ahead.take(jobs)
    ahead.hold()  # the builds' migrations run in the pool too: it stays open until the thread is done
    return Background(
        lambda: Runner(kz, rules, settings, target, Builder(find_binary(binary)), ran, ahead.submit), ahead.release
    )


def run_kustomize(
    result: Any,
    kz: Scan,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    binary: Any,
    background: Background | None = None,
) -> None:
    """fix/diff: migrate every migratable graph (or take what background did); proven graphs' files join the result as
    rewritten files, the others get a kustomize-unproven finding and stay as they are."""
    from dramigrate.kustomize.build import find_binary

    if not any(u.migratable for u in kz.units):
        return
    command = find_binary(binary)  # no kubectl: said before anything else
    left_alone: set[int] = set()  # units fix leaves as they are (a suppressed request), by id
    for unit in kz.units:
        if unit.migratable and (why := _suppressed(result, kz, unit)):
            left_alone.add(id(unit))
            top = min(kz.graph.nodes[d].file for d in unit.folders)
            MESSAGES.note(f"kustomize graph of {kz.display(top)} not migrated: {why}")
            for f in result.findings:
                if _resolve(f.file) in _members(kz, unit) and f.fixable:  # fix will not resolve it
                    f.fixable = f.fixed = False
                    f.message += "; fix leaves this kustomize graph as it is: a device request in it is suppressed"
    if background is not None:
        outcomes = [o for o in background.outcomes() if id(o.unit) not in left_alone]
    else:
        outcomes = Runner(kz, rules, settings, target, Builder(command)).run(frozenset(left_alone))
    for o in outcomes:
        if o.proven:
            _proven(result, kz, o)
            continue
        file, line = o.where or (min(kz.graph.nodes[d].file for d in o.unit.folders), 1)
        finding = Finding(
            "kustomize-unproven",
            RULES["kustomize-unproven"][0],
            f"nothing of this kustomize graph is written: {o.reason}",
            kz.display(file),
            line,
            1,
        )
        if o.bad_input:  # named as bad input at its line, as a file that does not read is (exit 2)
            error = InputError(f"{finding.message} (the kustomize graph is left as it is)", kz.display(file), line)
            result.files.append(FileResult(kz.display(file), findings=[finding], error=error))
            result.bad_input += 1
        else:
            result.files.append(FileResult(kz.display(file), findings=[finding]))
        members = _members(kz, o.unit)
        for f in result.findings:  # the graph's device requests: not "migrated with its kustomize graph" after all
            if MIGRATED_WITH_GRAPH in f.message and _resolve(f.file) in members:
                f.message = f.message.replace(MIGRATED_WITH_GRAPH, f"not migrated: {kz.display(file)} is unproven")
            elif f.rule == "kustomize-device-patch" and _resolve(f.file) in members:  # no run of fix migrates it
                f.fixable = f.fixed = False
                f.message = f.message.replace(PATCH_WITH_GRAPH, f"not migrated: {kz.display(file)} is unproven")
        result.findings.append(finding)
    result.findings.sort(key=Finding.sort_key)


def _write_copy(target: Path, text: str) -> bool:
    """A file of the proof's copy of the tree; False, writing nothing, when the copy holds a symlink at that name
    (the copy keeps links as links: written through, one to a file anywhere was overwritten, by diff too)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        if target.is_symlink():  # ELOOP from O_NOFOLLOW
            return False
        raise exc from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def _members(kz: Scan, unit: Unit) -> set[Path]:
    """A graph's files: resources, patches and kustomization files."""
    return unit.files | unit.patch_files | {kz.graph.nodes[d].file for d in unit.folders}


def _suppressed(result: Any, kz: Scan, unit: Unit) -> str:
    """Why a graph is left alone: a device request in one of its files is suppressed by a comment (fix never
    rewrites a suppressed request, and a graph is migrated whole); "" when none is."""
    members = _members(kz, unit)
    suppressions = FileSuppressions()
    hidden = [f for r in result.files if _resolve(r.path) in members for f in r.suppressed]
    for f in hidden:
        if f.fixable:
            how = suppressions.reason(f) or "a `# dramigrate: ignore` comment"
            return (
                f"[{f.rule}] at {f.file}:{f.line} is suppressed by {how}; fix never rewrites a suppressed request, "
                "and a kustomize graph is migrated whole or not at all"
            )
    return suppressed_request([f for f in result.findings if _resolve(f.file) in members], suppressions)


@cache
def _resolve(path: str) -> Path | None:
    try:
        return Path(path).resolve() if path != "-" else None
    except (OSError, RuntimeError):
        return None


per_run(_resolve.cache_clear)  # resolved from the run's working folder


def _proven(result: Any, kz: Scan, o: Outcome) -> None:
    """Swap the graph's report-only results for the proven rewrite; device-patch findings become fixed."""
    bases = set(o.base_results)
    removed = {id(r): r for r in result.files if _resolve(r.path) in bases}
    result.files[:] = [r for r in result.files if id(r) not in removed]
    dropped = {id(f) for r in removed.values() for f in r.findings}
    result.findings[:] = [f for f in result.findings if id(f) not in dropped]
    members = o.unit.files | o.unit.patch_files | {kz.graph.nodes[d].file for d in o.unit.folders}
    for r in result.files:
        if _resolve(r.path) in members:
            for f in r.findings:
                if f.rule == "kustomize-device-patch":
                    f.fixed = True
    for f, r in o.base_results.items():
        r.path = kz.display(f)
        overlays = ", ".join(sorted({kz.display(x) for d in kz.graph.owners_of(f) for x in kz.graph.overlays_of(d)}))
        for finding in r.findings:
            finding.file = r.path
            if finding.fixable:
                finding.message += f"; in a kustomize base of {overlays}, migrated with every overlay and proven"
        r.rewritten = r.original = r.raw = None
        result.files.append(r)
        result.findings.extend(r.findings)
    first: dict[Path | None, FileResult] = {}  # resolved path -> the first result of that file
    for r in reversed(result.files):
        first[_resolve(r.path)] = r
    for path, text in o.edit.texts.items():
        original = o.edit.originals.get(path)
        existing = first.get(path)
        if existing is None:
            existing = first[path] = FileResult(kz.display(path))
            result.files.append(existing)
        existing.original = original or ""
        existing.rewritten = text
        existing.raw = original.encode("utf-8") if original is not None else None
        existing.changes = [c for c in o.edit.changes if c.startswith(existing.path)]
        existing.together = kz.display(min(kz.graph.nodes[d].file for d in o.unit.folders))


def _copy_graph(folders: set[Path], root: Path, copy_root: Path, max_bytes: int) -> None:
    """Copy the graph's kustomization folders, at their places under root, into copy_root: all its builds read
    (kustomize's load restrictor keeps each build's files in its kustomization's folder). Not all of root, which is
    often the repository: with thousands of files and a few dozen graphs, the copies alone took past a minute."""
    copied: list[Path] = []
    for folder in sorted(folders):  # a folder inside one copied already is in that copy
        if any(folder.is_relative_to(c) for c in copied):
            continue
        try:
            shutil.copytree(
                folder,
                copy_root / folder.relative_to(root),
                symlinks=True,
                ignore=partial(_skipped, max_bytes),
                dirs_exist_ok=True,
            )
        except shutil.Error as exc:  # (source, copy, why) of each file not copied; it said only `Error`
            raise InputError(f"cannot copy it to prove the rewrite: {exc.args[0][0][2]}", str(folder)) from None
        copied.append(folder)


def _skipped(max_bytes: int, folder: str, names: list[str]) -> set[str]:
    """What the proof's copy leaves out: the SKIP_DIRS, FIFOs, devices and sockets (a copy would block on a FIFO or
    read a device such as /dev/zero without end; kustomize loads only regular files), and files past the file size
    limit, which no run reads (a model or disk image in a kustomization's folder took the copy minutes and filled
    the temp folder)."""
    out = set(shutil.ignore_patterns(*SKIP_DIRS)(folder, names))
    for name in names:
        try:
            st = os.lstat(os.path.join(folder, name))
        except OSError:
            out.add(name)
            continue
        regular = stat.S_ISREG(st.st_mode)
        if regular and st.st_size > max_bytes or not (regular or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            out.add(name)
    return out
