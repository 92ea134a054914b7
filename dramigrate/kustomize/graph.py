"""Discovery: every kustomization under the repository, what it lists, and which overlays build on each base.

Kustomizations are read as plain YAML with positions (no building): resources, bases, components, patches in
their three forms (`patchesStrategicMerge`, `patchesJson6902`, `patches` with a file or inline), replacements,
namePrefix/nameSuffix, namespace, labels and configurations. A graph is a set of kustomizations connected by
resources, bases or components; it is migrated whole or not at all.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.limits import check_structure, file_type, is_regular, nodes_upto, read_regular, repeated_key
from dramigrate.sources import GIT_ABOVE, KUSTOMIZATION_NAMES, SKIP_DIRS, Walked, git_above, leaves_folder, walk

NAMES = KUSTOMIZATION_NAMES
# a 3 MB kustomization of 1.5 million values took 20 s and 600 MB to load (a 30 MB one, minutes)
MAX_KUSTOMIZATION_VALUES = 100_000
PATCH_KEYS = ("patches", "patchesStrategicMerge", "patchesJson6902")
HELM_KEYS = ("helmCharts", "helmChartInflationGenerator")  # Helm charts kustomize inflates (with helm)
HELM_GENERATOR = "HelmChartInflationGenerator"  # the kind of a `generators:` entry that inflates a chart
# A kustomization as _load reads it: its data, the line of each top-level key, the line of each item of list keys
Loaded = tuple[dict[str, Any], dict[str, int], dict[str, list[int]]]
# Where discover may find a kustomization loaded already (by path, resolved): its load, or None (then it loads it)
Preloaded = Callable[[str], Loaded | None]


@dataclass
class Patch:
    """One patch entry of a kustomization."""

    owner: Path  # the kustomization file that lists it
    key: str  # patches, patchesStrategicMerge or patchesJson6902
    index: int  # position in that list
    line: int  # line of the entry in the kustomization
    file: Path | None  # the patch file; None for an inline patch
    text: str  # the patch's text (file contents or the inline string)
    target: dict[str, Any] | None = None
    text_line: int = 1  # line of the patch text's first line in `file`, or in the kustomization when inline

    @property
    def json6902(self) -> bool:
        """A JSON patch (a list of operations) rather than a strategic-merge patch; kustomize decides by content."""
        if self.key == "patchesJson6902":
            return True
        if self.key == "patchesStrategicMerge":
            return False
        try:
            check_structure("", self.text)
            data = yaml.safe_load(self.text)
        except InputError:  # nested past the limit: operations it may hold are unread, which fields._compose_all says
            return True
        except yaml.YAMLError:
            return False
        return isinstance(data, list)

    @property
    def where(self) -> Path:
        return self.file if self.file is not None else self.owner

    @property
    def form(self) -> str:
        if self.json6902:
            return "JSON6902 patch"
        return "inline patch" if self.file is None else "strategic-merge patch"


@dataclass
class Kustomization:
    file: Path
    data: dict[str, Any]
    inside: bool  # under the paths the user gave
    kind: str = "Kustomization"  # or Component
    files: list[Path] = field(default_factory=list)  # resource files
    children: list[Path] = field(default_factory=list)  # folders of kustomizations it builds on (resources, bases)
    components: list[Path] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    remote: list[str] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # top-level key -> line
    # each resource file, base and component folder -> (its entry as written, the entry's line)
    entries: dict[Path, tuple[str, int]] = field(default_factory=dict)
    items: dict[str, list[int]] = field(default_factory=dict)  # list key -> the line of each of its items

    @property
    def dir(self) -> Path:
        return self.file.parent

    def line_of(self, key: str) -> int:
        return self.lines.get(key, 1)

    def item_line(self, key: str, index: int) -> int:
        """The line of the index-th item of a list key (the key's line when unknown)."""
        lines = self.items.get(key, [])
        return lines[index] if index < len(lines) else self.line_of(key)


@dataclass
class Graph:
    """Kustomizations by folder, and who builds on whom."""

    nodes: dict[Path, Kustomization] = field(default_factory=dict)
    parents: dict[Path, set[Path]] = field(default_factory=dict)  # folder -> folders that list it
    errors: list[tuple[Path, BaseException]] = field(default_factory=list)  # broken kustomizations under the paths
    broken: set[Path] = field(default_factory=set)  # folders of every broken kustomization
    # resource file -> the folders listing it, built on the first owners_of (the graph is complete by then)
    _owners: tuple[int, dict[Path, list[Path]]] = field(default=(-1, {}), repr=False)

    def overlays_of(self, folder: Path) -> list[Path]:
        """The top overlays (kustomizations nothing builds on) that reach `folder`, itself included when it is one."""
        out: set[Path] = set()
        seen: set[Path] = set()
        todo = [folder]
        while todo:
            here = todo.pop()
            if here in seen:
                continue
            seen.add(here)
            up = self.parents.get(here, set())
            if not up and self.nodes.get(here) is not None and self.nodes[here].kind != "Component":
                out.add(here)
            todo.extend(up)
        return sorted(out)

    def owners_of(self, path: Path) -> list[Path]:
        """Kustomization folders that list the resource file `path`."""
        if self._owners[0] != len(self.nodes):
            owners: dict[Path, list[Path]] = {}
            for d, k in self.nodes.items():
                for f in dict.fromkeys(k.files):
                    owners.setdefault(f, []).append(d)
            self._owners = (len(self.nodes), owners)
        return sorted(self._owners[1].get(path, ()))

    def cycle(self, members: set[Path]) -> list[Path]:
        """A circle of kustomizations among members, each building on the next (resources, bases or components) and
        the last on the first, which kustomize refuses (`cycle detected`); [] when there is none."""
        state: dict[Path, int] = {}  # 1: on the current path, 2: done
        for start in sorted(members):
            if start in state:
                continue
            path, todo = [start], [iter(self._below(start, members))]
            state[start] = 1
            while todo:
                nxt = next(todo[-1], None)
                if nxt is None:
                    state[path.pop()] = 2
                    todo.pop()
                elif state.get(nxt) == 1:
                    return path[path.index(nxt) :]
                elif nxt not in state:
                    state[nxt] = 1
                    path.append(nxt)
                    todo.append(iter(self._below(nxt, members)))
        return []

    def _below(self, folder: Path, members: set[Path]) -> list[Path]:
        node = self.nodes[folder]
        return [d for d in node.children + node.components if d in members]

    def component_of(self, folder: Path) -> set[Path]:
        """Every kustomization connected to `folder` by resources, bases or components, either way."""
        out: set[Path] = set()
        todo = [folder]
        while todo:
            here = todo.pop()
            if here in out or here not in self.nodes:
                continue
            out.add(here)
            node = self.nodes[here]
            todo.extend(node.children)
            todo.extend(node.components)
            todo.extend(self.parents.get(here, set()))
        return out

    def stacking(self, folders: set[Path]) -> tuple[tuple[int, Path | None], tuple[int, Path | None]]:
        """((depth, top), (loads, top)) of folders: the most kustomizations stacked on one another (by resources,
        bases and components) and the top one of that stack; the most kustomizations one build loads (a base
        reached by two paths is loaded twice, as kustomize does) and that build's folder. Counted without
        recursion; a cycle counted once round."""
        depth: dict[Path, int] = {}
        loads: dict[Path, int] = {}
        for start in sorted(folders):
            stack: list[tuple[Path, bool]] = [(start, False)]
            open_: set[Path] = set()
            while stack:
                here, done = stack.pop()
                if done:
                    open_.discard(here)
                    below = self._below(here, folders)
                    depth[here] = 1 + max((depth.get(c, 0) for c in below), default=0)
                    loads[here] = 1 + sum(loads.get(c, 0) for c in below)
                    continue
                if here in depth or here in open_:
                    continue
                open_.add(here)
                stack.append((here, True))
                stack.extend((c, False) for c in self._below(here, folders) if c not in depth and c not in open_)
        deepest = max(((d, f) for f, d in depth.items()), key=lambda x: x[0], default=(0, None))
        heaviest = max(((n, f) for f, n in loads.items()), key=lambda x: x[0], default=(0, None))
        return deepest, heaviest

    def _below(self, folder: Path, folders: set[Path]) -> list[Path]:
        node = self.nodes[folder]
        return [c for c in node.children + node.components if c in folders and c in self.nodes]

    def build_order(self, folders: set[Path]) -> list[Path]:
        """Buildable kustomizations of a graph (not Components), bases first."""
        order: list[Path] = []
        seen: set[Path] = set()

        def visit(d: Path) -> None:
            if d in seen or d not in folders:
                return
            seen.add(d)
            for c in self.nodes[d].children + self.nodes[d].components:
                visit(c)
            if self.nodes[d].kind != "Component":
                order.append(d)

        for d in sorted(folders):
            visit(d)
        return order


def kustomization_in(folder: Path, regular: set[str] | frozenset[str] = frozenset()) -> Path | None:
    """regular: files (resolved) known to be regular files, which need no stat."""
    for name in NAMES:
        file = folder / name
        if str(file) in regular or is_regular(file) and not leaves_folder(str(file)):  # a FIFO would block a read
            return file
    return None


def repo_root(start: Path) -> Path:
    """The enclosing git work tree (a folder with .git), else the folder itself."""
    folder = (start if start.is_dir() else start.parent).resolve()
    return _root_of(folder)


def _root_of(folder: Path) -> Path:
    return Path(git_above(str(folder)) or folder)


def load_many(paths: list[str]) -> list[Loaded | None]:
    """Each kustomization's load, or None where it fails (discover loads it again, for its error): run in a pool
    worker while the walk goes on (ahead.py)."""
    out: list[Loaded | None] = []
    for path in paths:
        try:
            out.append(_load(Path(path)))
        except Exception:
            out.append(None)
    return out


def _load(path: Path, preloaded: Preloaded | None = None) -> Loaded:
    """The kustomization's data, the line of each top-level key, and the line of each item of list keys."""
    if preloaded is not None and (done := preloaded(str(path))) is not None:
        return done
    try:
        text = read_regular(str(path)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8 text", str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", str(path)) from exc
    # counted before a value is built; libyaml gives at most about one node a character (`{a,b,c}`, the densest
    # form), so a text of under a quarter of the limit in characters is not counted (a third of a 200-byte load)
    if (
        len(text) > MAX_KUSTOMIZATION_VALUES // 4
        and nodes_upto(text, MAX_KUSTOMIZATION_VALUES) > MAX_KUSTOMIZATION_VALUES
    ):
        raise InputError(
            f"the kustomization holds more than {MAX_KUSTOMIZATION_VALUES:,} values (real ones hold a few hundred); "
            "not read (limit on values)",
            str(path),
            1,
        )
    node, data = _load_fast(text)
    if node is None:  # PyYAML's own parser for the message and position of what libyaml refused (or no libyaml)
        try:
            loader = yaml.SafeLoader(text)
        except yaml.YAMLError as exc:  # its reader refuses a character YAML does not allow (a NUL) before parsing
            from dramigrate.documents import yaml_problem

            what, line, column = yaml_problem(text, exc)
            raise InputError(what.replace("invalid YAML", "invalid kustomization", 1), str(path), line, column) from exc
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(
                f"invalid kustomization: {getattr(exc, 'problem', None) or exc}",
                str(path),
                mark.line + 1 if mark else 0,
                mark.column + 1 if mark else 0,
            ) from exc
        finally:
            loader.dispose()
    if node is not None and (twice := repeated_key(node)) is not None:  # fix's round-trip parser refuses it too
        raise InputError(
            f"invalid kustomization: duplicate key: {twice.value}",
            str(path),
            twice.start_mark.line + 1,
            twice.start_mark.column + 1,
        )
    if "!" in text and node is not None and (binary := binary_node(node)) is not None:
        raise InputError(
            f"the kustomization has a value written as !!binary, {BINARY_READ}",
            str(path),
            binary.start_mark.line + 1,
            binary.start_mark.column + 1,
        )
    if "*" in text and node is not None and excessive_aliasing(node):
        raise InputError(
            "invalid kustomization: its aliases expand to nearly every value it holds (a YAML alias bomb), which "
            "kustomize refuses (document contains excessive aliasing)",
            str(path),
            1,
        )
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("invalid kustomization: not a mapping", str(path), 1, 1)
    lines: dict[str, int] = {}
    items: dict[str, list[int]] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines[str(key.value)] = key.start_mark.line + 1
            if isinstance(value, yaml.SequenceNode):
                items[str(key.value)] = [v.start_mark.line + 1 for v in value.value]
    return data, lines, items


BINARY = "tag:yaml.org,2002:binary"
BINARY_READ = (
    "which kustomize decodes to its text (a patch, a path, a device name) and dramigrate does not read through; "
    "not processed: write it as text"
)


def binary_node(root: yaml.Node) -> yaml.Node | None:
    """The first node of root tagged !!binary (however the tag is spelled: `!!binary`, a %TAG handle, a verbatim or
    %-escaped tag; the composer resolves them all), which Go's YAML decoders read as the text it encodes."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: its anchor's node, walked once
            continue
        seen.add(id(node))
        if node.tag == BINARY:
            return node
        if isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(child for pair in reversed(node.value) for child in reversed(pair))
    return None


# Go's YAML decoder (yaml.v3, which kustomize reads a kustomization with) counts the nodes it decodes (the document,
# each alias, each value) and those decoded inside an alias, and refuses a document once more than 100 of 1,000+
# came through aliases and their share passes 99% (up to 400,000 nodes), then down to 10% (at 4,000,000): "document
# contains excessive aliasing". A PyYAML node reached again is an alias (its anchor comes first, in document order).
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


def excessive_aliasing(root: yaml.Node) -> bool:
    """Whether yaml.v3 refuses the document of root for its aliases (see above), decoding it in order."""
    decoded, aliased = 1, 0  # the document node
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack and decoded <= _ALIAS_HIGH:
        node, inside = stack.pop()
        if id(node) in seen and not inside:  # the alias node, then its anchor's nodes inside it
            decoded += 1
            inside = True
        seen.add(id(node))
        decoded += 1
        aliased += inside
        if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
            return True
        if isinstance(node, yaml.SequenceNode):
            stack += [(child, inside) for child in reversed(node.value)]
        elif isinstance(node, yaml.MappingNode):
            stack += [(child, inside) for pair in reversed(node.value) for child in reversed(pair)]
    return False


def _load_fast(text: str) -> tuple[Any, Any]:
    """(node, data) from libyaml (C, several times faster), or (None, None) when it is missing or refuses."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is None:
        return None, None
    loader = fast(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else {}
    except yaml.YAMLError:
        return None, None
    finally:
        loader.dispose()


def _strings(data: dict[str, Any], key: str, file: Path, lines: dict[str, int]) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"invalid kustomization: {key} must be a list of paths", str(file), lines.get(key, 0))
    return value


def read_kustomization(
    file: Path, inside: bool, preloaded: Preloaded | None = None, regular: set[str] | frozenset[str] = frozenset()
) -> Kustomization:
    """regular: files (resolved) known to be regular files, which need no stat (the input files)."""
    data, lines, items = _load(file, preloaded)
    k = Kustomization(file, data, inside, str(data.get("kind") or "Kustomization"), lines=lines, items=items)
    folder = file.parent
    for key in ("resources", "bases", "components"):
        for i, entry in enumerate(_strings(data, key, file, lines)):
            if is_url(entry):
                k.remote.append(entry)
                continue
            resolved = _resolve_in(str(folder), entry, regular)
            target = Path(resolved)
            line = items.get(key, [])[i] if i < len(items.get(key, [])) else lines.get(key, 0)
            k.entries.setdefault(target, (entry, line))
            if resolved in regular or target.is_file():
                if key == "components":
                    raise InputError(f"invalid kustomization: component {entry} is not a folder", str(file), line)
                k.files.append(target)
            elif target.is_dir() and kustomization_in(target, regular) is not None:
                (k.components if key == "components" else k.children).append(target)
            elif (what := _special(target)) is not None:  # kustomize would block on a FIFO or read a device without end
                raise InputError(f"{key} entry {entry}: {what}, not a regular file; never read", str(file), line)
            else:
                raise InputError(f"{key} entry {entry}: no such file or kustomization folder", str(file), line)
    for key in PATCH_KEYS:
        entries = data.get(key) or []
        if not isinstance(entries, list):
            raise InputError(f"invalid kustomization: {key} must be a list", str(file), lines.get(key, 0))
        for i, entry in enumerate(entries):
            line = items.get(key, [])[i] if i < len(items.get(key, [])) else lines.get(key, 0)
            k.patches.append(_patch(file, key, i, line, entry))
    for key, entry in _read_paths(data):  # kustomize would wait on a FIFO for its whole time limit
        if not is_url(entry) and "\0" not in entry:
            what = _special(Path(_resolve_in(str(folder), entry, regular)))
            if what is not None:
                raise InputError(
                    f"{key} entry {entry}: {what}, not a regular file; never read", str(file), k.line_of(key)
                )
    return k


def inflating_key(k: Kustomization) -> str | None:
    """The key under which k inflates Helm charts (kustomize runs helm to build it): helmCharts, the deprecated
    helmChartInflationGenerator, or generators holding a HelmChartInflationGenerator (inline, or a file of k's own
    folder); None when it inflates none."""
    key = next((key for key in HELM_KEYS if key in k.data), None)
    if key is None and any(HELM_GENERATOR in text for _, text in generator_texts(k)):
        key = "generators"
    return key


def generator_texts(k: Kustomization) -> list[tuple[int, str]]:
    """(index, text) of each `generators:` entry of k: an inline configuration as written, a file's contents when
    it is a regular file in k's own folder (kustomize reads no other); entries that are neither are left out."""
    out: list[tuple[int, str]] = []
    entries = k.data.get("generators")
    if not isinstance(entries, list) or not entries:  # most have none: no realpath of the folder (a stat per part)
        return out
    root = os.path.realpath(k.dir)
    for i, entry in enumerate(entries):
        if not isinstance(entry, str) or "\0" in entry:  # no path holds a NUL
            continue
        if "\n" in entry or ":" in entry:  # an inline configuration (a path holds neither)
            out.append((i, entry))
            continue
        path = os.path.realpath(os.path.join(root, entry))
        if not under(path, {root}) or not is_regular(Path(path)):
            continue
        try:
            out.append((i, read_regular(path).decode("utf-8", "replace")))
        except (OSError, InputError):
            continue
    return out


def _special(path: Path) -> str | None:
    """What path is when it exists but is neither a regular file nor a folder (a FIFO, a device, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else file_type(mode)


GENERATORS = ("configMapGenerator", "secretGenerator")
FILE_LISTS = ("configurations", "crds", "generators", "transformers", "validators")  # paths, or inline YAML


def outside_reads(k: Kustomization) -> list[tuple[str, int]]:
    """The files k's build reads from outside k's own folder (entry as written, line of its key): kustomize's load
    restrictor refuses each (`security; file ... is not in or below ...`), so the build fails. Folders of other
    kustomizations (bases, components) may be anywhere; a file, even through a symlink, may not."""
    root = os.path.realpath(k.dir)
    out: list[tuple[str, int]] = []
    for f in k.files:
        if not under(str(f), {root}):
            out.append(k.entries.get(f, (os.path.relpath(f, k.dir), k.line_of("resources"))))
    for p in k.patches:
        if p.file is not None and not under(str(p.file), {root}):
            out.append((_patch_path(k, p) or os.path.relpath(p.file, k.dir), p.line))
    for key, entry in _read_paths(k.data):
        if not is_url(entry) and not under(_resolve_in(root, entry), {root}):
            out.append((entry, k.line_of(key)))
    return out


def is_url(entry: str) -> bool:
    """Whether kustomize fetches entry from the network (http://, https://, and the remote base forms)."""
    return "://" in entry or entry.startswith(("github.com/", "git@"))


def network_reads(k: Kustomization) -> list[tuple[str, int]]:
    """The files k's build would fetch from the network (entry, line of its key): kustomize fetches a URL wherever
    it reads a file (a transformer, a CRD file, the OpenAPI schema, a ConfigMap's file), as it fetches remote
    bases. dramigrate builds neither: a pull request must not have the CI runner's network asked for anything."""
    return [(entry, k.line_of(key)) for key, entry in _read_paths(k.data) if is_url(entry)]


def absolute_roots(k: Kustomization) -> list[tuple[str, int]]:
    """The bases and components k names by an absolute path (entry, line): kustomize refuses each (`new root
    '/...' cannot be absolute`), so the build fails."""
    return [k.entries[d] for d in k.children + k.components if d in k.entries and os.path.isabs(k.entries[d][0])]


def _patch_path(k: Kustomization, p: Patch) -> str | None:
    """The path of p's file as k writes it."""
    entry = (k.data.get(p.key) or [None] * (p.index + 1))[p.index]
    path = entry.get("path") if isinstance(entry, dict) else entry
    return path.strip() if isinstance(path, str) else None


MAX_BROKEN_WORDS = 5_000  # words of a broken kustomization looked up as paths; past that it may name anything
_WORDS = re.compile(r"[\s\[\]{},'\"]+")
_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def may_name(broken: Path, paths: set[Path]) -> bool:
    """Whether the kustomization file `broken`, which did not load, may name one of paths (resolved: the folders
    of a graph's kustomizations, its resource and patch files) as a base, component, resource or patch: a word of
    its text that is such a path from its folder. Its entries are unknown, so this errs towards yes: an escape
    (which may spell any path), too many words, or a file that cannot be read."""
    try:
        text = read_regular(str(broken)).decode("utf-8", "replace")
    except (OSError, InputError):
        return True
    words = set(_WORDS.split(text)) | {q for pair in _QUOTED.findall(text) for q in pair if q}
    if "\\" in text or "\0" in text or len(words) > MAX_BROKEN_WORDS:
        return True
    targets = {str(p) for p in paths}
    here = str(broken.parent)
    return any(w and os.path.realpath(os.path.join(here, w)) in targets for w in words)


def _read_paths(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, path) for each file a kustomization's generators and file lists name."""
    for key in GENERATORS:
        for gen in data.get(key) or []:
            if not isinstance(gen, dict):
                continue
            for source in (gen.get("files") or []) + (gen.get("envs") or []) + [gen.get("env")]:
                if isinstance(source, str) and source:
                    yield key, source.split("=", 1)[-1]
    for key in FILE_LISTS:
        for entry in data.get(key) or []:
            if isinstance(entry, str) and "\n" not in entry and (":" not in entry or is_url(entry)):  # not inline
                yield key, entry
    for r in data.get("replacements") or []:
        if isinstance(r, dict) and isinstance(r.get("path"), str):
            yield "replacements", r["path"]
    openapi = data.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        yield "openapi", openapi["path"]


def _patch(file: Path, key: str, index: int, line: int, entry: Any) -> Patch:
    folder = file.parent
    if isinstance(entry, str):
        if key == "patchesStrategicMerge" and "\n" not in entry.strip() and not entry.lstrip().startswith("apiVersion"):
            return _patch_file(file, key, index, line, folder / entry, None)
        return Patch(file, key, index, line, None, entry, None, line + 1)
    if not isinstance(entry, dict):
        raise InputError(f"invalid kustomization: {key} entry is not a mapping", str(file), line)
    target = entry.get("target") if isinstance(entry.get("target"), dict) else None
    if entry.get("path"):
        return _patch_file(file, key, index, line, folder / str(entry["path"]), target)
    if entry.get("patch") is not None:
        return Patch(file, key, index, line, None, str(entry["patch"]), target, line + 1)
    raise InputError(f"invalid kustomization: {key} entry has neither path nor patch", str(file), line)


def _patch_file(file: Path, key: str, index: int, line: int, path: Path, target: dict[str, Any] | None) -> Patch:
    real = os.path.realpath(path)
    if not under(real, {os.path.realpath(file.parent)}):
        # kustomize refuses a file outside the kustomization's folder, even through a link (its load restrictor):
        # the build fails on it (outside_reads says so) and it is never read, so nothing of a file elsewhere on the
        # machine (a container name, a count) reaches a report
        return Patch(file, key, index, line, Path(real), "", target)
    try:
        text = read_regular(str(path)).decode("utf-8")
    except (OSError, InputError, UnicodeDecodeError) as exc:
        raise InputError(f"{key} entry {path.name}: cannot read the patch file", str(file), line) from exc
    return Patch(file, key, index, line, path.resolve(), text, target)


def discover(
    paths: list[str],
    extra_roots: tuple[Path, ...] = (),
    walked: list[Walked] | None = None,
    preloaded: Preloaded | None = None,
) -> Graph:
    """Every kustomization of the repositories that hold `paths` (resolved); those under `paths` are marked inside.

    `walked`: the folders the input walk went through, with the kustomizations it saw there; they are not walked
    again. `preloaded`: the kustomizations loaded already (in the worker pool). A broken kustomization under the
    paths is bad input (in `errors`); one outside them is left out."""
    graph = Graph()
    if not extra_roots and not any(w.kustomizations for w in walked or ()) and not _in_a_kustomization(paths):
        return graph  # no kustomization anywhere can load these files: skip the walk of the whole repository
    # sets of strings: a repository has thousands of files and folders. The inputs, resolved, are regular files (the
    # walk saw each) and none is a symlink (a resolved path never ends in one): asked about them, no stat is needed
    wanted_set = set(paths)
    sep = os.sep
    folders = {p.rpartition(sep)[0] or sep for p in paths}  # _parent of each, inline (20,000 paths)
    known = GIT_ABOVE  # the walk looked up each of its folders already: a dict lookup, not a call per folder
    roots = {(known[f] if f in known else git_above(f)) or f for f in folders}
    roots |= {str(r.resolve()) for r in extra_roots}
    # Inside a root is inside the outermost root holding it: `under(x, roots)` asks what `under(x, outermost)` did,
    # without sorting every root (a tree without a .git has one root per folder of files: 16,000 on 20,000 files)
    files: set[Path] = set()
    done = {str(w.top): w for w in walked or ()}
    for w in done.values():  # the walk saw these kustomizations: no second walk, only of what it did not enter
        files.update(k for k in w.kustomizations if under(str(k.parent), roots))
        files.update(k for p in w.pruned if under(str(p), roots) for k in _find(p, done))
    pruned = {key: {str(p) for p in w.pruned} for key, w in done.items()}
    # the walked tops, innermost first, each with the prefix of what is inside it (paths are normalized)
    walked_tops = [(t, t if t.endswith(sep) else t + sep) for t in sorted(done, key=len, reverse=True)]

    def walked_top(folder: str) -> str | None:
        """The innermost walked top that is folder or holds it."""
        for t, inside in walked_tops:
            if folder == t or folder.startswith(inside):
                return t
        return None

    if len(walked_tops) == 1 and not pruned[walked_tops[0][0]]:  # one walk that left nothing out: one prefix test
        top, inside = walked_tops[0]
        unwalked = [r for r in roots if r != top and not r.startswith(inside)]
    else:
        unwalked = [r for r in roots if (key := walked_top(r)) is None or (pruned[key] and under(r, pruned[key]))]
    for top in _outermost(unwalked):  # the folders no walk went through
        files.update(_find(Path(top), done))
    # the first of kustomize's names in each folder, folders in Path.parts order (as strings: no Path per step)
    ranked = []
    for f in files:
        folder, _, name = str(f).rpartition(sep)
        ranked.append((folder.split(sep), NAMES.index(name) if name in NAMES else 9, folder or sep, f))
    ranked.sort(key=lambda r: (r[0], r[1]))
    by_folder: dict[str, Path] = {}  # in that order
    for _, _, folder, f in ranked:
        if folder not in by_folder and (str(f) in wanted_set or is_regular(f) and not leaves_folder(str(f))):
            by_folder[folder] = f
    for listed in by_folder.values():
        file = listed
        if str(file) not in wanted_set and file.is_symlink():  # an input resolved to itself is no symlink
            file = file.resolve()
        inside = under(str(file), wanted_set)
        try:
            graph.nodes[file.parent] = read_kustomization(file, inside, preloaded, wanted_set)
        except Exception as exc:  # a broken kustomization is its own file's error; the run goes on
            graph.broken.add(file.parent)
            if inside:
                graph.errors.append((listed, exc))
    # bases and components in folders no walk enters (node_modules/, venv/, a folder git ignores), inside the
    # repositories: kustomize builds them into their overlays all the same
    tops = set(done)
    todo = [c for node in graph.nodes.values() for c in node.children + node.components]
    while todo:
        child = todo.pop()
        if child in graph.nodes or child in graph.broken or not under(str(child), roots):
            continue
        file = kustomization_in(child)
        if file is None:
            continue
        inside = under(str(child), tops)
        try:
            graph.nodes[child] = read_kustomization(file, inside, preloaded, wanted_set)
        except Exception as exc:
            graph.broken.add(child)
            if inside:
                graph.errors.append((file, exc))
            continue
        todo.extend(graph.nodes[child].children + graph.nodes[child].components)
    for folder, node in graph.nodes.items():
        for child in node.children + node.components:
            graph.parents.setdefault(child, set()).add(folder)
    return graph


def _outermost(folders: list[str]) -> list[str]:
    """The folders that are inside none of the others (normalized paths)."""
    tops: list[str] = []
    last = None
    # a folder's subfolders come right after it: sorted as split on the separator (which sorts before any name)
    for top in sorted(folders, key=lambda t: t.replace(os.sep, "\0")):
        if last is None or not (top == last or top.startswith(last.rstrip(os.sep) + os.sep)):
            tops.append(top)  # one top per folder, the outermost
            last = top
    return tops


def _in_a_kustomization(paths: list[str]) -> bool:
    """Some path has a kustomization in its folder or a folder above. kustomize loads a file only from under the
    kustomization's own folder (its default load restrictor), so a file with none above it is in no graph."""
    seen: set[str] = set()
    for p in paths:
        for folder in _ancestors(_parent(p)):
            if folder in seen:  # it and every folder above it were looked at already
                break
            seen.add(folder)
            if any(os.path.isfile(os.path.join(folder, n)) for n in NAMES):
                return True
    return False


def under(folder: str, folders: set[str]) -> bool:
    """folder is one of folders or inside one of them (paths as strings: no Path objects per step)."""
    while folder not in folders:
        parent = _parent(folder)
        if parent == folder:
            return False
        folder = parent
    return True


def _ancestors(folder: str) -> Iterator[str]:
    """folder, then each folder above it up to the root (folder: normalized, as realpath gives it)."""
    while True:
        yield folder
        parent = _parent(folder)
        if parent == folder:
            return
        folder = parent


def _resolve_in(folder: str, entry: str, regular: set[str] | frozenset[str] = frozenset()) -> str:
    """(folder / entry).resolve() for a resolved folder, looking up only the entry's own components (resolve looks
    up every component from the root: ten per entry of a deep repository). `..` of a resolved folder is its
    parent; at a symlink, resolve takes the whole path (links are rare, and it treats loops its own way). regular:
    files known to be no symlink (the inputs, resolved), which are not looked up."""
    if os.path.isabs(entry):  # an absolute entry is not below the folder (kustomize takes such a file)
        return str(Path(entry).resolve())
    cur = folder
    for part in entry.split(os.sep):
        if part in ("", "."):
            continue
        if part == "..":
            cur = _parent(cur)
            continue
        cur = cur + part if cur.endswith(os.sep) else cur + os.sep + part
        if cur not in regular and os.path.islink(cur):
            return str((Path(folder) / entry).resolve())
    return cur


def _parent(path: str) -> str:
    """os.path.dirname of a normalized path (no "//", no trailing separator), without its checks."""
    head, sep, _ = path.rpartition(os.sep)
    return head or sep


def _find(top: Path, walked: dict[str, Walked]) -> list[Path]:
    """Kustomization files under top by walking it, except inside folders already walked (their own lists count)."""
    found: list[Path] = []
    for folder, dirs, names in walk(top):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and os.path.join(folder, d) not in walked]
        found.extend(here / n for n in NAMES if n in names)
    return found
