"""Subcharts left out of a chart run's renders where they render the same documents on both sides of every
comparison, so the proof does not render them dozens of times.

A subchart's documents are a function of its own files, the values Helm hands it, the release and capabilities, and
the named templates it executes: Helm gives a subchart its values under its name (coalesced over its values.yaml),
`global`, and the umbrella's conditions and tags that switch it, and nothing else of the umbrella's values; a
template's output is never read by another (only a named or file template is, by `include` or `template`). So where
those inputs are the same in two renders, the subchart's documents are the same in both (random values and map
order aside, which the proof masks by rendering the original twice: a subchart that is left out has nothing to mask).
bitnami's etcd, packed in tke-dynamo-vllm-single-pd, calls `genPrivateKey "rsa"` in every render (1.78 s of CPU a
render, 0.05 s without it): its fix needed 42 renders, past the chart's 45 s budget.

After the run's first render (the values given), each subchart is taken (`plan`) when:
- its documents in that render ask for no device and the migration finds nothing in them, and no text of it, nor its
  part of a values file the umbrella ships, names a device resource (the rewrite leaves it as it is);
- Helm hands it its values under its own name (no alias), and none of its conditions reads another subchart's values;
- its templates include only templates it defines itself (one of the umbrella's, shared across the chart tree, may be
  the rewrite's to change: the shared define of test_chart_umbrella_shared_define.py), each by a literal name or one
  built from `.Template.BasePath` (its own files);
- leaving out its templates that only write documents (subchartless.py: under templates/, not a `_` helper, naming no
  `define` or `block`) leaves out something.

A render of the run's chart, or of a copy of it (the rewritten chart) whose files of that subchart are the same, then
leaves it out (`leaving_out`) when its inputs are the ones of the first render: its values coalesced as Helm does (its
defaults, the umbrella's values.yaml and the values files under its name), `global`, `tags` and the umbrella's values
its conditions read, compared with their types (1, 1.0, true and "1" apart); the paths where a values file sets a null
(Helm deletes the key there, and keeps a null of the subchart's own defaults); the `--set` expressions that may name
them, as written (a `--set` number is an int to Helm, a file's a float); the release and capabilities; and the
umbrella's dependencies. And when no named template of the copy that is new or changed can be reached from it: every
name a file that differs from the chart's defines (before or after) and the template names of such files; it names
none of them in its files or values, and it builds no template name it includes but from `.Template.BasePath` (its own
files). The render is of a copy whose subcharts so left out keep only their files that may define templates (the
umbrella's templates include the same defines and read the same coalesced values, and the values schemas still check),
and every document of a subchart left out is dropped from it, and from a render of the same values made before
(`view`): both sides of a comparison hold the documents of the same subcharts, and a subchart left out on both had the
same inputs on both. A render of the copy that fails otherwise than by the umbrella's own `fail` or `required` is made
in full (a template included by its file name). A subchart the rewrite changes, or whose inputs a value set changes
(a device added to its `resources`, its tolerations set), is rendered and compared as before (were it rendered on one
side of a comparison alone, that comparison would fail: never a proof that did not compare it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import threading
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.helm.renderpool import _ACTION, Render, _calls, manifest_stream, may_matter, run_cache

if TYPE_CHECKING:
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import Workdir
    from dramigrate.rules import RuleSet
    from dramigrate.versions import Target

_lock = threading.Lock()
# a name defined in a template file (`define`, `block`), as a string or raw literal
_DEFINES = re.compile(r"""\b(?:define|block)\s+(?:"((?:[^"\\\n]|\\.)*)"|`([^`]*)`)""")
# an `include` (or `template`) whose name is not a literal nor built from .Template.BasePath (the subchart's own files)
_BUILT_NAME = re.compile(
    r"""(?<![\w.$])(?:include|template)\b(?!\s*(?:["`]|\(\s*print\s+\$?\.(?:context\.)?Template\.BasePath\b))"""
)
# the name of a template an `include` or `template` names literally
_INCLUDED = re.compile(r"""(?<![\w.$])(?:include|template)\s+(?:"((?:[^"\\\n]|\\.)*)"|`([^`]*)`)""")
# a template comment, which may hold `{{ ... }}` itself (a define's usage)
_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
# a device resource as the rule packs name them: a domain, a slash, a name
_RESOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2,}/[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Subchart:
    """A subchart the run may leave out."""

    entry: str  # its folder or archive in charts/
    key: str  # its name: its values key and its documents' folder in the render's sources
    digest: str  # of its files
    text: str  # every file of it, archives unpacked: what it may name
    conditions: tuple[tuple[str, ...], ...]
    defaults: dict[str, Any]  # its values.yaml, with its subchart folders' under their names (chartvalues)
    pruned: Path  # its folder or archive without its document-only templates
    inputs: Any  # its inputs in the run's first render (_inputs)


@dataclass
class Plan:
    """The subcharts a chart run may leave out, and what was read of the folders rendered."""

    root: Path
    chart: str  # the umbrella's name: the first part of its documents' sources
    subcharts: tuple[Subchart, ...]
    dependencies: Any
    work: Path
    files: dict[tuple[str, Any], dict[str, str]] = field(default_factory=dict)  # folder files -> digest, by stamp
    copies: dict[tuple[str, Any, frozenset[str]], Path] = field(default_factory=dict)
    inputs: dict[tuple[str, Any, Any, str], Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftOut:
    """A render's subcharts left out: the sources of their documents, and the copy that leaves them out."""

    made: Plan
    root: Path
    stamp: Any
    keys: tuple[Subchart, ...]

    @property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(f"{self.made.chart}/charts/{s.key}/" for s in self.keys)

    def view(self, rendered: Render) -> Render:
        """The render without the documents of the subcharts left out."""
        return without(rendered, self.prefixes)

    def copy(self) -> Path:
        """A private copy of the folder whose subcharts left out keep only their files that may define templates."""
        return _copy(self.made, self.root, self.stamp, self.keys)


def without(rendered: Render, prefixes: tuple[str, ...]) -> Render:
    """A render without the documents whose source starts with one of prefixes."""
    kept = [m for m in rendered.manifests if not m.source.startswith(prefixes)]
    if len(kept) == len(rendered.manifests):
        return rendered
    relevant = [m for m in kept if may_matter(m.text)]
    rest = manifest_stream([m for m in kept if m not in relevant])
    return Render(kept, manifest_stream(relevant), rest, rendered.error, rendered.took, rendered.ended)


def plan(
    root: Path, base: Any, base_render: Render, rules: RuleSet, settings: Settings, target: Target, work: Workdir
) -> None:
    """Find, after the run's first render (`base` its options), the subcharts its later renders may leave out."""
    cache = run_cache(root)
    if cache is None or base.helm_binary is not None or base_render.error or not (root / "charts").is_dir():
        return
    from dramigrate.helm.rewrite import chart_dependencies, chart_name
    from dramigrate.helm.sandbox import chart_for_render

    chart = chart_name(root)
    deps = chart_dependencies(root)
    names = [str(d.get("name") or "") for d in deps]
    aliased = {str(d.get("name")) for d in deps if d.get("alias")} | {n for n in names if names.count(n) > 1}
    folder = work.path / "leftout"
    found: list[Subchart] = []
    try:
        with chart_for_render(root) as safe:
            shipped = _shipped_values(Path(safe))
            for entry in sorted((Path(safe) / "charts").iterdir()):
                sub = _subchart(entry, folder, chart, deps, aliased, shipped, base_render, rules, settings, target)
                if sub is not None:
                    found.append(sub)
    except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error, yaml.YAMLError):
        return
    keys = [sub.key for sub in found]
    found = [sub for sub in found if keys.count(sub.key) == 1]  # two charts of one name: neither is left out
    if not found:
        return
    made = Plan(root, chart, (), deps, folder)
    subs = []
    for sub in found:
        inputs = _inputs(made, root, base, sub, _RUN)
        if inputs is not None:
            subs.append(replace(sub, inputs=inputs))
    if subs:
        made.subcharts = tuple(subs)
        cache.leftout = made


def _subchart(
    entry: Path,
    folder: Path,
    chart: str,
    deps: list[dict[str, Any]],
    aliased: set[str],
    shipped: list[Any],
    base_render: Render,
    rules: RuleSet,
    settings: Settings,
    target: Target,
) -> Subchart | None:
    """The Subchart of a charts/ entry of the run's private copy, or None when it may not be left out."""
    from dramigrate.helm.chartvalues import _chart_defaults, _values_from_yaml
    from dramigrate.helm.probe import device_uses
    from dramigrate.helm.renderpool import run_core
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.subchartless import prune_folder, pruned_archive
    from dramigrate.helm.twins import archive_members, packed_meta

    if entry.is_symlink():
        return None
    if entry.is_dir() and (entry / "Chart.yaml").is_file():
        key = chart_name(entry)
        files = {p.relative_to(entry).as_posix(): p.read_bytes() for p in sorted(entry.rglob("*")) if p.is_file()}
        defaults = _chart_defaults(entry)
    elif entry.is_file() and entry.name.endswith(".tgz"):
        data = entry.read_bytes()
        files = archive_members(data)
        top, meta = packed_meta(files)
        key = str(meta.get("name") or "")
        defaults = _values_from_yaml(files.get(f"{top}/values.yaml", b"").decode("utf-8", "replace"))
    else:
        return None
    if not key or key in aliased or key in ("global", "tags"):
        return None
    code = _COMMENT.sub("", "\n".join(_texts(files, templates=True)))
    if any(_BUILT_NAME.search(action) for action in _calls(code)):
        return None  # it may include any template, the umbrella's that the rewrite changes too
    defined = {a or b for a, b in _DEFINES.findall(code)}
    if any((a or b) not in defined for action in _ACTION.findall(code) for a, b in _INCLUDED.findall(action)):
        return None  # it includes a template of the umbrella (or of another subchart), which the rewrite may change
    text = "\n".join(_texts(files))
    mine = [m for m in base_render.manifests if m.source.startswith(f"{chart}/charts/{key}/")]
    if (
        not mine
        or _names_device(text, rules)
        or any(_names_device(repr(v.get(key)) + repr(v.get(None)), rules) for v in shipped)
    ):
        return None
    stream = manifest_stream(mine)
    migrated = run_core(stream, "subchart", rules, settings, target, True, True)
    if device_uses(stream, rules) or migrated.findings or migrated.error is not None:
        return None
    conditions = tuple(
        tuple(c.strip().split("."))
        for d in deps
        if d.get("name") == key
        for c in str(d.get("condition") or "").split(",")
        if c.strip()
    )
    if any(c[0] != key and c[0] in {str(d.get("name")) for d in deps} for c in conditions):
        return None  # a condition on another subchart's values, whose defaults the rewrite may change
    folder.mkdir(mode=0o700, exist_ok=True)
    pruned = folder / entry.name
    if entry.is_dir():
        shutil.copytree(entry, pruned)
        removed = prune_folder(pruned, 0)
    else:
        stored, _, removed = pruned_archive(entry.read_bytes(), 0)
        pruned.write_bytes(stored)
    if not removed:
        return None
    return Subchart(entry.name, key, _digest(files), text, conditions, defaults, pruned, None)


def _texts(files: dict[str, bytes], templates: bool = False) -> list[str]:
    """The text of a subchart's files (templates: only of those in a templates/ folder), archives inside it unpacked."""
    from dramigrate.helm.twins import archive_members

    out = []
    for name, data in sorted(files.items()):
        if name.endswith(".tgz"):
            out.extend(_texts(archive_members(data), templates))
        elif not templates or "templates" in name.split("/")[:-1]:
            out.append(data.decode("utf-8", "replace"))
    return out


def _names_device(text: str, rules: RuleSet) -> bool:
    return any(rules.lookup(m.group(0)) is not None for m in _RESOURCE.finditer(text))


def _shipped_values(root: Path) -> list[dict[Any, Any]]:
    """The values files the umbrella ships (beside Chart.yaml and in ci/), as data by top-level key; one that does not
    read as a map is its text alone (under no key: a device it names counts for every subchart)."""
    out: list[dict[Any, Any]] = []
    for path in sorted([*root.glob("*.y*ml*"), *root.glob("ci/*.y*ml*")]):
        if path.name in ("Chart.yaml", "Chart.lock", "requirements.yaml") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            data = None
        out.append({str(k): v for k, v in data.items()} if isinstance(data, dict) else {None: text})
    return out


def _digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def leaving_out(root: Path, options: Any) -> LeftOut | None:
    """The subcharts a render of root (the run's chart or a copy of it) with these options leaves out, None for
    none. Only within a chart run that found some (plan)."""
    from dramigrate.helm.renderpool import CACHE

    made = CACHE[-1].leftout if CACHE else None
    if made is None or options.helm_binary is not None:
        return None
    try:
        stamp = _RUN if root == made.root else _stamp(root)  # the run's chart renders from one copy made once
        files = _files(made, root, stamp)
        if files is None:
            return None
        reach = _changed_names(made, root, stamp, files)
        keys: list[Subchart] = []
        for sub in made.subcharts:
            if files.get(f"charts/{sub.entry}") != sub.digest:
                continue  # the rewrite changed it (or a copy holds another): rendered in full
            if reach and any(n in sub.text for n in reach):
                continue
            inputs = _inputs(made, root, options, sub, stamp)
            if inputs is None or inputs != sub.inputs or (reach and any(n in repr(inputs) for n in reach)):
                continue
            keys.append(sub)
    except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error, yaml.YAMLError):
        return None
    return LeftOut(made, root, stamp, tuple(keys)) if keys else None


_RUN = "run"  # the stamp of the run's own chart


def _stamp(root: Path) -> Any:
    """What changes when a file of a copy of the chart does (every file's path, size, mtime and inode)."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            st = os.lstat(os.path.join(folder, name))
            out.append((os.path.relpath(os.path.join(folder, name), root), st.st_size, st.st_mtime_ns, st.st_ino))
    return hash(tuple(out))


def _files(made: Plan, root: Path, stamp: Any) -> dict[str, str] | None:
    """The digest of each file of the folder as Helm reads it (its private copy), a subchart's files as one digest
    under `charts/<entry>`; None when its dependencies differ from the run's chart's."""
    from dramigrate.helm.rewrite import chart_dependencies, chart_name
    from dramigrate.helm.sandbox import chart_for_render
    from dramigrate.helm.twins import archive_members

    key = (str(root), stamp)
    with _lock:
        if key in made.files:
            return made.files[key]
    if chart_name(root) != made.chart or chart_dependencies(root) != made.dependencies:
        out = None
    else:
        out = {}
        with chart_for_render(root) as safe:
            top = Path(safe)
            entries = {s.entry for s in made.subcharts}
            subs: dict[str, dict[str, bytes]] = {}
            for path in sorted(top.rglob("*")):
                if path.is_symlink() or not path.is_file():
                    continue
                rel = path.relative_to(top).parts
                if len(rel) >= 2 and rel[0] == "charts" and rel[1] in entries:
                    if len(rel) == 2:
                        subs[rel[1]] = archive_members(path.read_bytes())
                    else:
                        subs.setdefault(rel[1], {})["/".join(rel[2:])] = path.read_bytes()
                else:
                    out["/".join(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
            for entry, files in subs.items():
                out[f"charts/{entry}"] = _digest(files)
    with _lock:
        made.files[key] = out
    return out


def _changed_names(made: Plan, root: Path, stamp: Any, files: dict[str, str]) -> set[str]:
    """The template names a render of the folder may define otherwise than the run's chart: every name a file that
    differs from the chart's defines (in either), and the template names of such files."""
    if root == made.root:
        return set()
    original = _files(made, made.root, _RUN)
    if original is None:
        return {""}
    from dramigrate.helm.sandbox import chart_for_render

    names: set[str] = set()
    held = {f"charts/{s.entry}" for s in made.subcharts}  # compared whole, by their digest
    for rel in sorted(set(files) | set(original)):
        if files.get(rel) == original.get(rel) or rel in held:
            continue
        names.add(f"{made.chart}/{rel}")
        for folder in (made.root, root):
            with chart_for_render(folder) as safe:
                path = Path(safe) / rel
                text = path.read_bytes() if path.is_file() else b""
            if rel.endswith(".tgz"):
                try:
                    text = "\n".join(_texts(_members(text))).encode("utf-8")
                except (tarfile.TarError, EOFError, zlib.error, ValueError):
                    return {""}  # an archive that cannot be read: anything may be named
            for m in _DEFINES.finditer(text.decode("utf-8", "replace")):
                names.add(m.group(1) if m.group(1) is not None else m.group(2))
    return {n for n in names if n}


def _members(data: bytes) -> dict[str, bytes]:
    from dramigrate.helm.twins import archive_members

    return archive_members(data) if data else {}


def _inputs(made: Plan, root: Path, options: Any, sub: Subchart, stamp: Any) -> Any:
    """What Helm hands the subchart in a render of the folder with these options, comparable (None: values that do not
    read, or a values key of the subchart that is not a map); the release and capabilities with it."""
    from dramigrate.helm.chartvalues import _values_from_yaml
    from dramigrate.helm.render import HelmError, _merge_maps, _user_values
    from dramigrate.helm.renderpool import render_key

    rkey = render_key(options)
    key = (str(root), stamp, rkey, sub.key)
    with _lock:
        if rkey is not None and key in made.inputs:
            return made.inputs[key]
    try:
        user = _user_values(options)
    except HelmError:
        return None
    own = root / "values.yaml"
    parent = _values_from_yaml(own.read_text(encoding="utf-8")) if own.is_file() else {}
    values = _merge_maps(parent, user)
    mine = [parent.get(sub.key), user.get(sub.key)]
    if any(v is not None and not isinstance(v, dict) for v in mine):
        return None
    coalesced = sub.defaults
    for v in mine:
        coalesced = _merge_maps(coalesced, v or {})
    sets = [
        s
        for s in (*options.set_values, *options.set_string_values)
        if any(k in s for k in (sub.key, "global", "tags", *(c[0] for c in sub.conditions)))
    ]
    plain = replace(options, values_files=(), set_values=(), set_string_values=())
    parts = [coalesced, values.get("global"), values.get("tags"), [_get(values, c) for c in sub.conditions]]
    # where a values file sets a null: Helm deletes the key there, and keeps a null of the subchart's own defaults
    nulls = sorted(
        {p for layer in (parent, user) for k in (sub.key, "global", "tags") if k in layer for p in _nulls(layer[k], k)}
    )
    found = (_canonical(parts), tuple(nulls), tuple(sets), repr(plain))
    if rkey is not None:
        with _lock:
            made.inputs[key] = found
    return found


def _get(values: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(values, dict):
            return None
        values = values.get(part)
    return values


def _nulls(node: Any, path: str) -> list[str]:
    """The paths under path where node holds a null."""
    if node is None:
        return [path]
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _nulls(v, f"{path}[{i}]")]
    return []


def _canonical(node: Any) -> Any:
    """A value as a comparable structure that keeps its types (1, 1.0, True and "1" apart, as templates see them)."""
    if isinstance(node, dict):
        return ("map", tuple(sorted((type(k).__name__, str(k), _canonical(v)) for k, v in node.items())))
    if isinstance(node, list):
        return ("list", tuple(_canonical(v) for v in node))
    return (type(node).__name__, repr(node))


def _copy(made: Plan, root: Path, stamp: Any, keys: tuple[Subchart, ...]) -> Path:
    from dramigrate.helm.sandbox import chart_for_render, private_copy

    entries = frozenset(s.entry for s in keys)
    key = (str(root), stamp, entries)
    with _lock:
        if key in made.copies:
            return made.copies[key]
        folder = made.work / f"copy-{len(made.copies)}"
        folder.mkdir(mode=0o700)
        with chart_for_render(root) as safe:
            copy = private_copy(Path(safe), folder / Path(safe).name)
        for sub in keys:
            target = copy / "charts" / sub.entry
            if target.is_dir():
                shutil.rmtree(target)
                shutil.copytree(sub.pruned, target)
            else:
                shutil.copyfile(sub.pruned, target)
        made.copies[key] = copy
        return copy
