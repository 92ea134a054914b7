"""Subcharts left out of a chart run's renders where they render the same documents on both sides of every
comparison, so the proof does not render them dozens of times; a marker that Helm computes in each render says so.

A subchart's documents are a function of what its templates can read: its own files (`.Files`, `.Template`), its
`.Chart`, the values Helm hands it (`.Values`, `global` in it), `.Release` and `.Capabilities`, and the named
templates it executes; a template's output is never read by another (only a named or file template is, by `include`
or `template`). bitnami's etcd, packed in tke-dynamo-vllm-single-pd, calls `genPrivateKey "rsa"` in every render
(1.78 s of CPU a render, 0.05 s without it): its fix needed 42 renders, past the chart's 45 s budget.

After the run's first render (the values given), each subchart is taken (`plan`) when, whatever the values:
- its documents in that render ask for no device and the migration finds nothing in them, and no text of it, nor its
  part of a values file the umbrella ships, names a device resource (the rewrite leaves it as it is);
- Helm hands it its values under its own name (no alias);
- every template it includes is named literally or built from `.Template.BasePath` (its own files), and so is every
  template those include in turn, through the defines of the whole chart tree (Helm shares them: an umbrella's, or
  another subchart's, may override or serve its own); the names so reached are kept (`reaches`), since the rewrite
  may change one of them (the shared define of test_chart_umbrella_shared_define.py). When it does, or changes a
  subchart so taken, the renders made so far could not be compared with the rewritten chart's: the chart run starts
  again (`check_copy`, `Wider`) with a narrow plan, which takes only subcharts that include no other chart's template;
- leaving out its templates that only write documents (subchartless.py: under templates/, not a `_` helper, naming no
  `define` or `block`) leaves out something.

A render of the run's chart, or of a copy of it (the rewritten chart) whose files of that subchart are the same
(their digest: `.Files` and `.Template` are the same on both sides), whose templates that are new or changed
define no name the subchart's files name nor one it reaches (every name a file that differs from the chart's
defines, before or after, and the template names of such files), and whose other subcharts that may be left out are
the same too, then leaves it out (`leaving_out`), with every value set: it renders a
private copy whose subcharts so left out keep only their files that may define templates (the umbrella's templates
include the same defines and read the same values, and the values schemas still check), plus one template of ours,
`templates/zz-dramigrate-left-out.yaml`, that writes a ConfigMap holding the sha256 of everything else the
subchart's templates can read: `.Values`, `.Release`, `.Capabilities`, `.Chart` and `.Template.BasePath`, serialized
by Helm in that render with each scalar's Go type (toJson alone would print an int 1 and a float 1 alike, which
`kindOf` and `printf` tell apart). Every other document of the subchart is dropped from the render (`view`), the
marker kept. So the two sides of a comparison hold the same marker exactly when Helm handed the subchart the same
inputs on both (import-values, exports, tags and conditions included, as Helm coalesces them, whatever its version):
equal markers, and the left-out documents are equal by construction; different markers, or a marker on one side
alone (a condition that switches it), and the comparison fails, as it would where the documents differ. Random
values and map order aside, which the proof masks by rendering the original twice: a subchart left out has nothing
to mask.

The proof's migration (D) must also leave the documents as they are: a marker is taken only once a render with it of
the subchart in full asked for no device (`checked`: the first render's markers are; a render whose marker is new is
made once more with that subchart in full, the others still left out, and its documents checked). A marker whose
documents ask for one (a value set that adds a device to its `resources`) makes every render with it a full one, on
both sides: the rewrite left that subchart as it was, and the comparison says whether that is right. A render of the
copy that fails otherwise than by the umbrella's own `fail` or `required` is made in full (a template included by
its file name). The marker exists only in those private copies and their renders, which only the proof compares.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.helm.renderpool import _ACTION, Render, _calls, manifest_stream, run_cache, split_relevant
from dramigrate.helm.tararchive import open_packed

if TYPE_CHECKING:
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import Workdir
    from dramigrate.rules import RuleSet
    from dramigrate.versions import Target

_lock = threading.Lock()
# a name defined in a template file (`define`, `block`), as a string or raw literal
_DEFINES = re.compile(r"""\b(?:define|block)\s+(?:"((?:[^"\\\n]|\\.)*)"|`([^`]*)`)""")
# an `include` (or `template`) whose name is not a literal nor built from .Template.BasePath (the subchart's own files;
# of `.`, `$`, a variable or `.context`, as a shared define takes the subchart's context)
_BUILT_NAME = re.compile(
    r"""(?<![\w.$])(?:include|template)\b(?!\s*(?:["`]|\(\s*print\s+(?:\$\w*)?\.(?:context\.)?Template\.BasePath\b))"""
)
# the name of a template an `include` or `template` names literally
_INCLUDED = re.compile(r"""(?<![\w.$])(?:include|template)\s+(?:"((?:[^"\\\n]|\\.)*)"|`([^`]*)`)""")
# a template comment, which may hold `{{ ... }}` itself (a define's usage)
_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.DOTALL)
# a device resource as the rule packs name them: a domain, a slash, a name
_RESOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]{2,}/[A-Za-z0-9][A-Za-z0-9._-]*")

MARKER = "templates/zz-dramigrate-left-out.yaml"  # the marker's template in a subchart left out
# the marker: a ConfigMap whose one value is the sha256 of what the subchart's templates read, each scalar with its
# Go type (toJson alone prints the int 1 and the float 1 alike); Go's `range` walks a map in key order
_MARKER_TEXT = """\
{{- define "dramigrate-left-out.typed" -}}
{{- if kindIs "map" . -}}
{ {{- range $k, $v := . }}{{ toJson $k }}:{{ include "dramigrate-left-out.typed" $v }},{{ end -}} }
{{- else if kindIs "slice" . -}}
[ {{- range . }}{{ include "dramigrate-left-out.typed" . }},{{ end -}} ]
{{- else -}}
{{ typeOf . }}:{{ toJson . }}
{{- end -}}
{{- end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: dramigrate-left-out-NAME
data:
  inputs: {{ include "dramigrate-left-out.typed" (dict "values" .Values "release" .Release \
"capabilities" .Capabilities "chart" .Chart "basePath" .Template.BasePath) | sha256sum | quote }}
"""


@dataclass(frozen=True)
class Subchart:
    """A subchart the run may leave out."""

    entry: str  # its folder or archive in charts/
    key: str  # its name: its values key and its documents' folder in the render's sources
    digest: str  # of its files
    text: str  # every file of it, archives unpacked: what it may name
    pruned: Path  # its folder or archive without its document-only templates, with the marker's template
    reaches: frozenset[str] = frozenset()  # every template name it includes, and those include in turn (_reached)

    def source(self, chart: str) -> str:
        return f"{chart}/charts/{self.key}/{MARKER}"


@dataclass
class Plan:
    """The subcharts a chart run may leave out, the markers checked, and what was read of the folders rendered."""

    root: Path
    chart: str  # the umbrella's name: the first part of its documents' sources
    subcharts: tuple[Subchart, ...]
    dependencies: Any
    work: Path
    rules: RuleSet
    settings: Settings
    target: Target
    checked: set[tuple[str, str]] = field(default_factory=set)  # (subchart, marker) whose documents ask for no device
    devices: set[tuple[str, str]] = field(default_factory=set)  # (subchart, marker) whose documents ask for one
    files: dict[tuple[str, Any], dict[str, str] | None] = field(default_factory=dict)  # folder files -> digest
    # only subcharts that include no template of another chart (a run started again: Wider)
    narrow: bool = False
    copies: dict[tuple[str, Any, frozenset[str]], Path] = field(default_factory=dict)


@dataclass(frozen=True)
class LeftOut:
    """A folder's subcharts left out: the sources of their documents, and the copy that leaves them out."""

    made: Plan
    root: Path
    stamp: Any
    keys: tuple[Subchart, ...]

    @property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(f"{self.made.chart}/charts/{s.key}/" for s in self.keys)

    def view(self, rendered: Render) -> Render:
        """The render without the documents of the subcharts left out, their markers kept."""
        return without(rendered, self.prefixes, {s.source(self.made.chart) for s in self.keys})

    def copy(self) -> Path:
        """A private copy of the folder whose subcharts left out keep only their files that may define templates, and
        the marker's template."""
        return _copy(self.made, self.root, self.stamp, self.keys)

    def render(self, options: Any, full: Render | None = None) -> Render:
        """The folder rendered with these options from its copy, the subcharts left out, or in full (see the module
        docstring); `full`: its full render, made already."""
        from dramigrate.helm.renderpool import _render_folder
        from dramigrate.helm.subchartless import umbrella_fails

        copy = self.copy()
        rendered = _render_folder(copy, options)
        if rendered.error:
            return rendered if umbrella_fails(copy, rendered.error) else full or _render_folder(self.root, options)
        markers = self.markers(rendered)
        made = self.made
        with _lock:
            # None: a marker whose documents ask for a device; else the markers not checked yet
            new = None if any(m in made.devices for m in markers) else [m for m in markers if m not in made.checked]
        if new is None:
            return full or _render_folder(self.root, options)
        if new:
            # the subcharts of the new markers rendered in full (the others left out still), their documents checked
            names = {key for key, _ in new}
            if full is None:
                rest = tuple(s for s in self.keys if s.key not in names)
                folder = _copy(made, self.root, self.stamp, rest) if rest else self.root
                full = _render_folder(folder, options)
            if full.error:
                return _render_folder(self.root, options)
            for key, marker in new:
                docs = [m for m in full.manifests if m.source.startswith(f"{made.chart}/charts/{key}/")]
                found = made.checked if _asks_for_none(made, docs) else made.devices
                with _lock:
                    found.add((key, marker))
                if found is made.devices:
                    return _render_folder(self.root, options)
        return self.view(rendered)

    def markers(self, rendered: Render) -> list[tuple[str, str]]:
        """The (subchart, marker) of each subchart left out that the render holds (one its condition switches off
        holds none)."""
        sources = {s.source(self.made.chart): s.key for s in self.keys}
        out = []
        for m in rendered.manifests:
            if m.source in sources:
                data = yaml.safe_load(m.text)
                out.append((sources[m.source], str(data["data"]["inputs"])))
        return out


def _asks_for_none(made: Plan, docs: list[Any]) -> bool:
    """Whether a subchart's documents ask for no device and the migration finds nothing in them."""
    from dramigrate.helm.probe import device_uses
    from dramigrate.helm.renderpool import run_core

    stream = manifest_stream(docs)
    migrated = run_core(stream, "subchart", made.rules, made.settings, made.target, True, True)
    return not device_uses(stream, made.rules) and not migrated.findings and migrated.error is None


def without(rendered: Render, prefixes: tuple[str, ...], kept_sources: set[str] | None = None) -> Render:
    """A render without the documents whose source starts with one of prefixes (but those of kept_sources)."""
    kept = [m for m in rendered.manifests if not m.source.startswith(prefixes) or m.source in (kept_sources or ())]
    if len(kept) == len(rendered.manifests):
        return rendered
    relevant, others = split_relevant(kept)
    stream, rest = manifest_stream(relevant), manifest_stream(others)
    return Render(kept, stream, rest, rendered.error, rendered.took, rendered.ended)


def plan(
    root: Path, base: Any, base_render: Render, rules: RuleSet, settings: Settings, target: Target, work: Workdir
) -> None:
    """Find, after the run's first render (`base` its options), the subcharts its later renders may leave out; the
    first render, as those give it, is then the copy's (its markers checked by its documents)."""
    from dramigrate.helm.renderpool import render_key

    cache = run_cache(root)
    if cache is None or base.helm_binary is not None or base_render.error or not (root / "charts").is_dir():
        return
    from dramigrate.helm.rewrite import chart_dependencies, chart_name
    from dramigrate.helm.sandbox import ChartRefused, chart_for_render

    chart = chart_name(root)
    deps = chart_dependencies(root)
    names = [str(d.get("name") or "") for d in deps]
    aliased = {str(d.get("name")) for d in deps if d.get("alias")} | {n for n in names if names.count(n) > 1}
    folder = work.path / "leftout"
    made = Plan(root, chart, (), deps, folder, rules, settings, target, narrow=cache.narrow)
    found: list[Subchart] = []
    try:
        with chart_for_render(root) as safe:
            shipped = _shipped_values(Path(safe))
            tree = _tree_defines(Path(safe))
            for entry in sorted((Path(safe) / "charts").iterdir()):
                sub = _subchart(entry, made, aliased, shipped, base_render, tree)
                if sub is not None:
                    found.append(sub)
    except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error, yaml.YAMLError, ChartRefused):
        return  # a packed subchart past dramigrate's bounds (Helm renders it): none is left out
    keys = [sub.key for sub in found]
    made.subcharts = tuple(sub for sub in found if keys.count(sub.key) == 1)  # two charts of one name: neither
    if not made.subcharts:
        return
    cache.leftout = made
    left = leaving_out(root, base)
    key = render_key(base)
    if left is not None and key is not None:
        with cache.lock:  # renders made before this one: made again as the later renders make them
            cache.renders.clear()
        cache.renders[key] = left.render(base, base_render)


def _subchart(
    entry: Path, made: Plan, aliased: set[str], shipped: list[Any], base_render: Render, tree: _Defines
) -> Subchart | None:
    """The Subchart of a charts/ entry of the run's private copy, or None when it may not be left out."""
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.subchartless import prune_folder, pruned_archive
    from dramigrate.helm.twins import archive_members, packed_meta

    if entry.is_symlink():
        return None
    if entry.is_dir() and (entry / "Chart.yaml").is_file():
        key = chart_name(entry)
        files = {p.relative_to(entry).as_posix(): p.read_bytes() for p in sorted(entry.rglob("*")) if p.is_file()}
    elif entry.is_file() and entry.name.endswith(".tgz"):
        files = archive_members(entry.read_bytes())
        key = str(packed_meta(files)[1].get("name") or "")
    else:
        return None
    if not key or key in aliased or key in ("global", "tags"):
        return None
    if any(name == MARKER or name.endswith("/" + MARKER) for name in files):
        return None  # a file of its own by the marker's name, which the marker would take the place of
    code = _COMMENT.sub("", "\n".join(_texts(files, templates=True)))
    reached = _reached(code, f"charts/{entry.name}", tree)
    if reached is None:
        return None  # it may include any template, the umbrella's that the rewrite changes too
    defined = {a or b for a, b in _DEFINES.findall(code)}
    if made.narrow and not reached <= defined:
        return None  # it includes a template of the umbrella (or of another subchart), which the rewrite may change
    text = "\n".join(_texts(files))
    mine = [m for m in base_render.manifests if m.source.startswith(f"{made.chart}/charts/{key}/")]
    if (
        not mine
        or _names_device(text, made.rules)
        or any(_names_device(repr(v.get(key)) + repr(v.get(None)), made.rules) for v in shipped)
        or not _asks_for_none(made, mine)
    ):
        return None
    made.work.mkdir(mode=0o700, exist_ok=True)
    pruned = made.work / entry.name
    marker = _MARKER_TEXT.replace("NAME", re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")[:40] or "chart")
    if entry.is_dir():
        shutil.copytree(entry, pruned)
        removed = prune_folder(pruned, 0)
        (pruned / MARKER).parent.mkdir(exist_ok=True)
        (pruned / MARKER).write_text(marker, encoding="utf-8")
    else:
        stored, _, removed = pruned_archive(entry.read_bytes(), 0)
        pruned.write_bytes(_with_member(stored, f"{packed_meta(files)[0]}/{MARKER}", marker.encode("utf-8")))
    if not removed:
        return None
    return Subchart(entry.name, key, _digest(files), text, pruned, reached)


# template name -> the (charts/ entry, or "" for the umbrella's own, and text) of each template file defining it
_Defines = dict[str, list[tuple[str, str]]]


def _tree_defines(top: Path) -> _Defines:
    """Where each template name is defined in the chart tree Helm loads as one set of templates: every file in a
    templates/ folder of the umbrella and of its subcharts (archives unpacked, nested ones too)."""
    from dramigrate.helm.twins import archive_members

    out: _Defines = {}

    def add(owner: str, files: dict[str, bytes]) -> None:
        for name, data in sorted(files.items()):
            if name.endswith(".tgz"):
                add(owner, archive_members(data))
            elif "templates" in name.split("/")[:-1]:
                text = data.decode("utf-8", "replace")
                for a, b in _DEFINES.findall(_COMMENT.sub("", text)):
                    out.setdefault(a or b, []).append((owner, text))

    add(
        "",
        {p.relative_to(top).as_posix(): p.read_bytes() for p in sorted((top / "templates").rglob("*")) if p.is_file()},
    )
    for entry in sorted((top / "charts").iterdir()):
        if entry.is_symlink():
            continue
        if entry.is_dir():
            add(
                f"charts/{entry.name}",
                {p.relative_to(entry).as_posix(): p.read_bytes() for p in sorted(entry.rglob("*")) if p.is_file()},
            )
        elif entry.is_file() and entry.name.endswith(".tgz"):
            add(f"charts/{entry.name}", archive_members(entry.read_bytes()))
    return out


def _reached(code: str, own: str, tree: _Defines) -> frozenset[str] | None:
    """The template names a subchart's templates (`code`, comments out) include, and those the files defining them
    outside the subchart include in turn (a whole file read as reached: any define of it may run); None when one of
    those includes a template by a name it builds (it may reach any)."""

    def includes(text: str) -> set[str] | None:
        if any(_BUILT_NAME.search(action) for action in _calls(text)):
            return None
        return {a or b for action in _ACTION.findall(text) for a, b in _INCLUDED.findall(action)}

    first = includes(code)
    if first is None:
        return None
    names, seen = set(first), set()
    queue = list(first)
    while queue:
        for owner, text in tree.get(queue.pop(), []):
            if owner == own or (owner, text) in seen:
                continue
            seen.add((owner, text))
            more = includes(_COMMENT.sub("", text))
            if more is None:
                return None
            queue.extend(sorted(more - names))
            names |= more
    return frozenset(names)


def _with_member(data: bytes, name: str, content: bytes) -> bytes:
    """A packed chart with one more file."""
    out = io.BytesIO()
    with (
        open_packed(fileobj=io.BytesIO(data)) as source,
        tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as target,
    ):
        for member in source:
            handle = source.extractfile(member) if member.isfile() else None
            target.addfile(member, handle)
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(content), 0o644
        target.addfile(info, io.BytesIO(content))
    return out.getvalue()


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
    """The subcharts a render of root (the run's chart or a copy of it) leaves out, None for none: whatever the
    values (their markers tell a render's inputs). Only within a chart run that found some (plan)."""
    from dramigrate.helm.renderpool import CACHE

    made = CACHE[-1].leftout if CACHE else None
    if made is None or options.helm_binary is not None:
        return None
    stamp = _RUN if root == made.root else _stamp(root)  # the run's chart renders from one copy made once
    keys = _kept(made, root, stamp)
    return LeftOut(made, root, stamp, keys) if keys else None


def _kept(made: Plan, root: Path, stamp: Any) -> tuple[Subchart, ...]:
    """The subcharts of the plan a render of root leaves out."""
    try:
        files = _files(made, root, stamp)
        if files is None:
            return ()
        reach = _changed_names(made, root, stamp, files)
        if not made.narrow and any(files.get(f"charts/{sub.entry}") != sub.digest for sub in made.subcharts):
            # a subchart compared whole that differs (or a copy holds another): the names it defines, before or
            # after, which a subchart including another chart's templates may reach, are not in reach
            return ()
        return tuple(
            sub
            for sub in made.subcharts
            # the rewrite changed it (or a copy holds another), or it names or reaches a template a changed file
            # may define
            if files.get(f"charts/{sub.entry}") == sub.digest
            and not (reach and (reach & sub.reaches or any(n in sub.text for n in reach)))
        )
    except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error, yaml.YAMLError):
        return ()


class Wider(Exception):
    """The rewritten chart renders in full a subchart that the run's renders left out, which its comparisons would
    refuse: the chart run starts again leaving out only subcharts that include no template of another chart."""


def check_copy(root: Path) -> None:
    """Raise Wider when renders of this copy of the run's chart (a rewritten one) would not leave out every subchart
    the run's own renders leave out, in a run that leaves out subcharts including another chart's templates: the
    renders made so far (with their markers) could not be compared with the copy's (with the documents)."""
    from dramigrate.helm.renderpool import CACHE

    made = CACHE[-1].leftout if CACHE else None
    if made is None or made.narrow or root == made.root:
        return
    if len(_kept(made, root, _stamp(root))) != len(made.subcharts):
        raise Wider


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
                    out["/".join(rel)] = _file_digest(path.read_bytes(), path.name)
            for entry, files in subs.items():
                out[f"charts/{entry}"] = _digest(files)
    with _lock:
        made.files[key] = out
    return out


def _file_digest(data: bytes, name: str) -> str:
    """A file's digest; an archive's is of its members, so the same chart stored or compressed is the same (a render
    stores the packed subcharts of its private copy uncompressed, storedarchives.py: a copy read before its first
    render held every archive of the chart as changed, and every name they define as one a changed file defines)."""
    if name.endswith(".tgz"):
        try:
            return _digest(_members(data))
        except (tarfile.TarError, EOFError, zlib.error, ValueError):
            pass
    return hashlib.sha256(data).hexdigest()


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
