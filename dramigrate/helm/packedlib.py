"""A device request written by a packed library chart (`charts/common-1.2.9.tgz`, TrueNAS' `common` under its
photoprism and tdarr charts): the chart's own helper turns a values map (`photoprismGPU`) into the values the library
reads (`scaleGPU`), and a define of the library writes the device key into the container.

The rewrite changes only the chart's own templates (a change inside a packed dependency is undone by
`helm dependency update`), so what is left is the values: a values-only migration needs a library that renders a
pod's `resourceClaims` and a container's `resources.claims` from values. Which define of the library writes the key
is found by rendering, as for a helper of the chart (helper.mark_defines): a working copy gets the library unpacked
in place of its archive, with a marker on each key-shaped line of its defines. The message names the library, its
define and line, the values it reads, and the chart's template line that fills them. For a library whose values
places for claims are known (rules/library-values.json: bjw-s common from 5.0.1), it names those places, and
run.py tries the values-only rewrite through them (libvalues.py); such a library unpacked in `charts/common/` is
taken the same way (other unpacked libraries are the helper rewrite's).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.helper import TOYAML_VALUES_LINE, blocks, enclosing, mark_defines, marked_keys, template_files
from dramigrate.helm.templatelines import emits_text
from dramigrate.rules import RuleSet


@dataclass(frozen=True)
class Library:
    archive: str  # chart-relative path of the packed chart (`charts/common-1.2.9.tgz`)
    folder: str  # where the working copy holds it unpacked (`charts/common`)
    title: str  # `common 1.2.9`
    name: str = ""
    version: str = ""
    reads: frozenset[str] = frozenset()  # the pod_claims_read texts of rules/library-values.json its templates hold


def _reads(folder: Path) -> frozenset[str]:
    """The `pod_claims_read` texts of rules/library-values.json that the library's templates in `folder` hold: the
    pod option it renders resourceClaims from, read in the library itself (a fork renamed, or a version before the
    entry's from_version that renders it already)."""
    wanted = {str(e["pod_claims_read"]) for e in _library_entries() if e.get("pod_claims_read")}
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in template_files(folder)) if wanted else ""
    return frozenset(w for w in wanted if w in text)


def _charts_dirs(copy: Path) -> list[Path]:
    """The working copy's charts/ folder and those of its unpacked subcharts (an app-template fork in charts/ that
    holds its own library), SUBCHART_DEPTH deep."""
    out, level = [], [copy / "charts"]
    for _ in range(SUBCHART_DEPTH):
        level = [d for d in level if d.is_dir() and not d.is_symlink()]
        out += level
        level = [p / "charts" for d in level for p in sorted(d.iterdir()) if p.is_dir() and not p.is_symlink()]
    return out


SUBCHART_DEPTH = 2


def _unpack_libraries(copy: Path) -> list[Library]:
    """Each packed library chart of the working copy unpacked in place of its archive (bounded, no links). Each
    archive is unpacked in a fresh scratch folder beside the copy, in the work folder: a folder of the chart's own
    (`charts/.unpack-<lib>`) never clashes with it, and nothing is written into the chart."""
    from dramigrate.helm.sandbox import unpack_chart

    out = []
    for archive in sorted(a for charts in _charts_dirs(copy) for a in charts.glob("*.tgz")):
        scratch = Path(tempfile.mkdtemp(prefix="unpack-", dir=copy.parent))
        try:
            unpack_chart(archive, scratch)
            tops = [p for p in scratch.iterdir() if (p / "Chart.yaml").is_file()]
            meta = yaml.safe_load((tops[0] / "Chart.yaml").read_text(encoding="utf-8")) if tops else None
            folder = archive.parent / tops[0].name if tops else None
            if not isinstance(meta, dict) or meta.get("type") != "library" or folder is None:
                continue
            if folder.exists():  # the library unpacked beside its archive: Helm would render either, at random
                archive.unlink()
                continue
            tops[0].rename(folder)
        finally:
            shutil.rmtree(scratch)
        archive.unlink()
        title = f"{meta.get('name', folder.name)} {meta.get('version', '')}".strip()
        name, version = str(meta.get("name", folder.name)), str(meta.get("version", ""))
        out.append(
            Library(
                archive.relative_to(copy).as_posix(),
                folder.relative_to(copy).as_posix(),
                title,
                name,
                version,
                _reads(folder),
            )
        )
    return out


def _folder_libraries(copy: Path) -> list[Library]:
    """The library charts the working copy holds unpacked in charts/ (`charts/common/`), each its own archive."""
    out = []
    folders = (p for charts in _charts_dirs(copy) for p in sorted(charts.glob("*")))
    for folder in (p for p in folders if p.is_dir() and not p.is_symlink()):
        chart = folder / "Chart.yaml"
        try:
            meta = yaml.safe_load(chart.read_text(encoding="utf-8")) if chart.is_file() else None
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if isinstance(meta, dict) and meta.get("type") == "library":
            name, version = str(meta.get("name", folder.name)), str(meta.get("version", ""))
            rel = folder.relative_to(copy).as_posix()
            out.append(Library(rel, rel, f"{name} {version}".strip(), name, version, _reads(folder)))
    return out


def _values_read(text: str, index: int) -> str:
    """The values key the library reads for its device key: in a block around the key, else the nearest one its
    define reads on the key's line or above it (`nvidia.com/gpu: {{ .Values.worker.gpus }}`; `range $GPUValues :=
    $rootCtx.Values.scaleGPU`, collected into a list ranged over later; `$res := $c.resources | default
    $root.Values.resources` then `toYaml $res`), not the define's first read, which may be any field of the
    container (`image.pullPolicy`)."""
    around = enclosing(blocks(text), index)
    for b in reversed(around):
        found = re.search(r"\.Values\.([\w.]+)", b.cond)
        if found:
            return found.group(1)
    define = next((b for b in around if b.word == "define"), None)
    lines = text.splitlines()[define.start : index + 1] if define else []
    found = next((m for line in reversed(lines) if (m := re.search(r"\.Values\.([\w.]+)", line))), None)
    return found.group(1) if found else ""


def _chart_line(root: Path, keys: list[str]) -> tuple[str, int, str] | None:
    """The first line of the chart's own templates that reads one of the values keys (top-level names), with the
    define it sits in: (file, 1-based line, define or "")."""
    if not keys:
        return None
    wanted = re.compile(r"\.Values\.(" + "|".join(re.escape(k) for k in keys) + r")\b")
    for path in template_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        all_blocks = blocks(text)
        for i, line in enumerate(text.splitlines()):
            if wanted.search(line):
                around = [b for b in enclosing(all_blocks, i) if b.word == "define"]
                name = re.sub(r'^"|"$', "", around[0].cond) if around else ""
                return path.relative_to(root).as_posix(), i + 1, name
    return None


def _include_line(root: Path, folder: Path) -> tuple[str, int] | None:
    """The first line of the chart's own templates that includes a define of the library in `folder`
    (`{{ include "common.all" . }}`): (file, 1-based line)."""
    names = {
        b.cond.strip('"')
        for path in template_files(folder)
        for b in blocks(path.read_text(encoding="utf-8", errors="replace"))
        if b.word == "define"
    }
    for path in template_files(root):
        if path.name == "NOTES.txt":  # renders no object
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            if any(name in names for name in _INCLUDES.findall(line)):
                return path.relative_to(root).as_posix(), i + 1
    return None


def _define_call(root: Path, define: str) -> tuple[str, int] | None:
    """The first line of the chart's own templates that includes `define` itself: (file, 1-based line)."""
    for path in template_files(root):
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            if path.name != "NOTES.txt" and define in _INCLUDES.findall(line):
                return path.relative_to(root).as_posix(), i + 1
    return None


def _held(lib: Library) -> str:
    """Where the chart holds the library: `packed in charts/common-5.0.1.tgz`, or `unpacked in charts/common`."""
    return f"packed in {lib.archive}" if lib.archive.endswith(".tgz") else f"unpacked in {lib.archive}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text.split("-")[0])[:3])


def _library_entries() -> list[dict[str, Any]]:
    """The entries of rules/library-values.json."""
    from dramigrate.rules import shipped_json

    return [dict(e) for e in shipped_json("library-values.json")["libraries"]]


def _entries(lib: Library, define: str) -> list[dict[str, Any]]:
    """The entries of rules/library-values.json for the library's name and define prefix, any version up to the
    entry's through_version (if it has one), that have values places for a pod's resourceClaims."""
    return [
        e
        for e in _library_entries()
        if (e["name"] == lib.name or e.get("pod_claims_read") in lib.reads)
        and define.startswith(e["define_prefix"])
        and e["pod_claims"]
        and _version(lib.version) <= _version(e.get("through_version", lib.version))
    ]


def lacking(lib: Library, define: str) -> dict[str, Any] | None:
    """The entry of rules/library-values.json recording that the library, at its version, has no values place for a
    pod's resourceClaims (no pod_claims; checked from_version through through_version), else None."""
    version = _version(lib.version)
    return next(
        (
            e
            for e in _library_entries()
            if e["name"] == lib.name
            and define.startswith(e["define_prefix"])
            and not e["pod_claims"]
            and _version(e["from_version"]) <= version <= _version(e["through_version"])
        ),
        None,
    )


def _lacks(lib: Library, entry: dict[str, Any]) -> str:
    """What a library recorded without a values place for a pod's resourceClaims (lacking) lacks, for the message."""
    checked = f"{lib.name} {entry['from_version']}"
    if entry["through_version"] != entry["from_version"]:
        checked += f" to {entry['through_version']}"
    pod = (
        f"{lib.title} renders no resourceClaims of a pod from values: its define {entry['pod_define']} writes the "
        f"pod spec from a fixed set of values, none of them resourceClaims, and takes no pod fields whole "
        f"(checked in {checked}, rules/library-values.json)"
    )
    if entry["container_resources"]:
        container = (
            f"; it passes the container's resources through whole ({', '.join(entry['container_resources'])}, "
            f"in {entry['container_define']}), so a values file could list the claim in resources.claims, but the "
            "pod would not name it"
        )
    else:
        container = (
            f"; nor resources.claims of a container: its define {entry['container_define']} writes only "
            f"{entry['container_writes']}"
        )
    return f"{pod}{container}, so no values can move the request to a claim"


def values_places(lib: Library, define: str) -> dict[str, Any] | None:
    """The values places (rules/library-values.json) through which the library sets a pod's resourceClaims and a
    container's resources.claims, when its name, define prefix and version match an entry; else None."""
    return next(
        (
            e
            for e in _entries(lib, define)
            if _version(lib.version) >= _version(e["from_version"]) or e.get("pod_claims_read") in lib.reads
        ),
        None,
    )


def _source(root: Path, lib: Library) -> str:
    """Where the chart's Chart.yaml takes the library from when that is a folder of the maintainer's own
    (`repository: file://../../../common`, the TrueNAS catalog's charts): "" for a chart repository or none."""
    try:
        meta = yaml.safe_load((root / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    deps = meta.get("dependencies") if isinstance(meta, dict) else None
    for dep in deps if isinstance(deps, list) else []:
        repo = dep.get("repository") if isinstance(dep, dict) else None
        if dep.get("name") == lib.name and isinstance(repo, str) and repo.startswith("file://"):
            return repo
    return ""


def _library_change(lib: Library, entry: dict[str, Any], source: str) -> str:
    """What a library recorded without a values place for a pod's resourceClaims (lacking) must gain, and where the
    maintainer makes that change, for the manual message."""
    what = f"its define {entry['pod_define']} must render a pod's resourceClaims from values"
    if not entry["container_resources"]:
        what += f" and its define {entry['container_define']} a container's resources.claims"
    where = (
        f"the library's source is the chart's dependency {source} (Chart.yaml): change it there, bump its version and "
        f"run `helm dependency update`"
        if source
        else f"a new version of {lib.name} from its maintainers, then `helm dependency update`"
    )
    then = "and the chart's values set them in place of the device keys"
    return f"the change belongs in the library: {what} ({where}), {then}"


def _offer(lib: Library, define: str, claims: list[str], tried: str = "", source: str = "") -> str:
    """What the library offers for a values-only migration, for the manual message (`source`: where the chart takes
    the library from, _source)."""
    places = values_places(lib, define)
    if places and places.get("wrapped_define"):
        return (
            f"{lib.title} passes the container's resources through whole ({' or '.join(places['container_resources'])}"
            f": list the claim in their claims) and renders no pod resourceClaims; the chart's own include of "
            f"{places['wrapped_define']} can add them to each pod it renders when the values set resourceClaims (and "
            f"the ResourceClaimTemplate in a template of the chart); the migration through them does not hold for "
            f"this chart: {tried or 'not tried'}"
        )
    if places and places.get("merged_pod_define"):
        maps = " or ".join(places["container_resources"])
        return (
            f"{lib.title} passes the container's resources through whole ({maps}: list the claim in their claims)"
            " and merges the chart's own define given to "
            f"{places['merged_pod_define']} into the pod spec (render the pod's resourceClaims there, and the "
            f"ResourceClaimTemplate in a template of the chart); the migration through them does not hold for this "
            f"chart: {tried or 'not tried'}"
        )
    if places:
        return (
            f"{lib.title} has values places for it: drop the device keys from the container resources, list the "
            f"claim in {places['container_claims']}, name it in {' or '.join(places['pod_claims'])} (rendered from "
            f"Kubernetes {places['pod_claims_from_kube']}), and add its ResourceClaimTemplate under "
            f"{places['extra_objects']} (or a template of the chart); the values-only migration through them does "
            f"not hold for this chart: {tried or 'not tried'}"
        )
    if entry := lacking(lib, define):
        return (
            f"{_lacks(lib, entry)}; {_library_change(lib, entry, source)}; until then leave the chart as it is and "
            "let a DeviceClass with extendedResourceName serve the request (--strategy extended-resource, Kubernetes "
            "1.34+), or use a post-renderer: `helm template ... | dramigrate fix -`"
        )
    older = next((e for e in _entries(lib, define) if not e.get("wrapped_define")), None)  # pod options of its own
    if older:
        return (
            f"{lib.title} renders no resourceClaims of a pod from values (its pod options take them from "
            f"{older['from_version']}: {' or '.join(older['pod_claims'])}), so no values can move the request to a "
            f"claim: update the dependency to {lib.name} {older['from_version']} or later and run fix again"
        )
    if claims:
        return (
            f"the library writes resourceClaims in {', '.join(claims)}, but a values-only migration through it is "
            "not automated: move the device out of the values the library reads and set its claims by hand"
        )
    return (
        "the library has no values place for the resourceClaims of a pod or the resources.claims of a "
        "container, so no "
        "values can move the request to a claim; the change belongs in the library (a pod's resourceClaims and a "
        "container's resources.claims from values; or a post-renderer: `helm template ... | dramigrate fix -`)"
    )


@dataclass(frozen=True)
class Found:
    """The packed library define that writes the device key, as found by rendering the marked working copy."""

    lib: Library
    define: str
    file: str  # the define's file in the working copy (`charts/common/templates/...`)
    index: int  # its 0-based line
    copy: Path  # the working copy, the library unpacked in it
    places: dict[str, Any] | None  # the library's values places for claims (values_places), if it has them


def find_request(root: Path, work: Any, options: Any, rules: RuleSet) -> Found | None:
    """The define of a packed library chart that writes the device key, or None when no packed library writes it.
    Once per chart run and options: lint's triage and fix each ask, and each copied the chart, unpacked its
    libraries and rendered the copy again (timkrehan-immich: three identical renders of 0.16 s CPU each)."""
    from dramigrate.helm.renderpool import render_key, run_cache

    cache, values = run_cache(root), render_key(options)
    if cache is None or values is None:
        return _find_request(root, work, options, rules)
    key = (work.path, values)  # its working copy is in work
    if key not in cache.libraries:
        cache.libraries[key] = _find_request(root, work, options, rules)
    return cache.libraries[key]


def _find_request(root: Path, work: Any, options: Any, rules: RuleSet) -> Found | None:
    from dramigrate.helm.renderpool import cached_render
    from dramigrate.helm.sandbox import refuse_outside_links

    if not (root / "charts").is_dir():
        return None
    refuse_outside_links(root, str(root))
    for maps in (None, TOYAML_VALUES_LINE):  # a key line or a map variable's toYaml; then a values map's toYaml
        copy = work.path / ("packed-library-maps" if maps else "packed-library") / root.name  # a render per folder
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(root, copy, symlinks=False)
        unpacked = _folder_libraries(copy)  # before the archives are unpacked beside them
        libraries = [*_unpack_libraries(copy), *unpacked]
        marks: dict[int, tuple[str, int, str]] = {}
        for lib in libraries:
            for path in template_files(copy / lib.folder):
                mark_defines(path, path.relative_to(copy).as_posix(), marks, *([maps] if maps else []))
        if not marks:
            return None
        rendered = cached_render(copy, options)
        hits = {} if rendered.error else marked_keys(rendered.stream, marks, rules)
        if hits:
            break
    else:
        return None
    file, index, define = marks[min(hits)]
    lib = next(lib for lib in libraries if file.startswith(f"{lib.folder}/"))
    if lib in unpacked and not _entries(lib, define) and not lacking(lib, define):
        # an unpacked library's define is the helper rewrite's (helper.py), unless its values can do it or it is
        # recorded without a values place for claims (k8s-at-home common 4.5.2 under plex, vendored in charts/common)
        return None
    return Found(lib, define, file, index, copy, values_places(lib, define))


def library_request(found: Found, root: Path, counted: list[str], tried: str = "") -> str:
    """Why the device request `found` in a packed library is manual work. `counted`: the top-level values keys found
    to set the device count (lint's perturbation); `tried`: why the values-only migration through the library's
    values places did not hold, when it was tried."""
    lib, copy = found.lib, found.copy
    inside = found.file[len(lib.folder) + 1 :]
    text = (copy / found.file).read_text(encoding="utf-8")
    merges = bool(found.places and found.places.get("merged_pod_define") == found.define)
    read = "" if merges else _values_read(text, found.index)
    source = f"its define {found.define} ({inside}:{found.index + 1}) writes the device key"
    if merges:  # the key is in a resources map of the values, which the library writes into the container whole
        source = f"its define {found.define} ({inside}:{found.index + 1}) writes the pod, the device key from values"
    if read:
        source += f" from .Values.{read}"
    fed = _chart_line(root, [k for k in counted if k != read])
    where = ""
    if fed:
        helper = f" {fed[2]}" if fed[2] else ""  # no quotes in the message: _manual hides quoted text
        source += f", which the chart helper{helper} fills from {', '.join(k for k in counted if k != read)}"
        where = f"{fed[0]}:{fed[1]}: "
        if not fed[2] and (call := _define_call(root, found.define)):
            # no chart helper between the values and the library: the line that includes the define is where the
            # request enters (tjungbauer's tpl harness: not the first template that reads `.Values.harness`)
            where = f"{call[0]}:{call[1]}: "
    elif called := _include_line(root, copy / lib.folder):
        where = f"{called[0]}:{called[1]}: "
    claims = [
        p.relative_to(copy / lib.folder).as_posix()
        for p in template_files(copy / lib.folder)
        if "resourceClaims" in p.read_text(encoding="utf-8", errors="replace")
    ]
    offer = _offer(lib, found.define, claims, tried, _source(root, lib))
    if not claims and not _entries(lib, found.define):
        entry = lacking(lib, found.define)  # a library that passes the resources whole: only its pod define to override
        offer += _override_cost(copy / lib.folder, found.define, not (entry and entry["container_resources"]), entry)
    if fed and fed[2] and (by_hand := _merged_values_define(root, fed[2], [k for k in counted if k != read])):
        offer += by_hand
    packed = "packed " if lib.archive.endswith(".tgz") else ""
    return (
        f"{where}pattern D (library chart {lib.title}, {_held(lib)}): {source}; the rewrite changes only "
        f"the templates of the chart itself (a change in the {packed}library would be undone by "
        f"`helm dependency update`), and {offer}"
    )


def written_twice(found: Found, stream: str, rules: RuleSet) -> str:
    """Why the device request `found` is manual work when a container of the render `stream` writes `resources:`
    twice with the device key in the first (a library's define included, then a define of the chart writing the
    key again): Helm keeps the second, whole, and drops the first, and a DRA branch in either define leaves the
    device key in the other's text, which strict readers of the render (Flux's helm-controller, kustomize) read or
    refuse. "" when no container does so."""
    from dramigrate.helm.prove import repeated_keys

    lines = stream.splitlines()
    for r in repeated_keys(stream):
        first = lines[r.first - 1]
        indent = len(first) - len(first.lstrip())
        value = []
        for line in lines[r.first :]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            value.append(line)
        keys = [k.group(1) for line in value if (k := re.match(r"""^\s*["']?([^"':\s]+)["']?\s*:""", line))]
        devices = [k for k in keys if rules.is_device_candidate(k) and rules.lookup(k) is not None]
        if r.key != "resources" or not devices:
            continue
        return (
            f"{r.where}: the container writes `resources:` twice, each with {devices[0]} (the chart-duplicate-key "
            f"warning), once from {found.define} of the library chart {found.lib.title}; Helm keeps the second whole "
            "and drops the first, and a DRA branch in one leaves the device-plugin request in the other's text, "
            "which Flux's helm-controller and kustomize read or refuse. Write the container's resources once: drop "
            "one of the two includes and write what it added (other limits) in the one you keep, then run fix again"
        )
    return ""


def _merged_values_define(root: Path, define: str, keys: list[str]) -> str:
    """For the manual message, where the change by hand goes when the chart's own define that fills the library's
    values from `keys` is merged into the chart's values (k8s-at-home's `hardcodedValues`: `{{- $_ := mergeOverwrite
    .Values (include "games-on-whales.harcodedValues" . | fromYaml) -}}`, which writes `graphic_resources` into the
    requests and limits of four containers): no values file can reach the lines that copy the device keys, so the
    change is in that define. "" when the define is not merged so."""
    merged = re.compile(rf'\bmerge(?:Overwrite)?\s+\$?\.Values\s+\(\s*include\s+"{re.escape(define)}"')
    reads = re.compile(r"\.Values\.(" + "|".join(re.escape(k) for k in keys) + r")\b") if keys else None
    for path in template_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        if reads is None or not merged.search(text):
            continue
        body = next((b for b in blocks(text) if b.word == "define" and b.cond == f'"{define}"'), None)
        lines = text.splitlines()[body.start : body.end] if body else []
        copied = [body.start + 1 + i for i, line in enumerate(lines) if reads.search(line) and emits_text(line)]
        if not copied:
            continue
        rel = path.relative_to(root).as_posix()
        return (
            f"; the chart's define {define} is merged into its values and copies the device keys into the "
            f"resources it returns ({rel}, lines {', '.join(str(n) for n in copied)}), where no values file reaches "
            f"them: by hand, that define writes each container's resources.claims in place of the device keys "
            f"behind a switch of its own, and returns resourceClaims and the toleration among its values (with "
            f"the chart's include of the library wrapped as above), the ResourceClaimTemplate in a template of the "
            f"chart"
        )
    return ""


def merged_request(root: Path, work: Any) -> Found | None:
    """A library chart that merges a define of the chart's own into the pod spec it writes (corvid's
    `include "corvid.podSpec" (list . "ollama-podSpec")`, rules/library-values.json `merged_pod_define`), whose
    values places take the migration: the library passes the container's resources map through whole, and the
    chart's define is where the pod's `resourceClaims` go (libvalues.merged_claims). The library's merge writes the
    pod again with toYaml, so find_request's markers do not reach the render: the call is read from the chart's own
    templates instead. None when no such call or library."""
    merging = {str(e["merged_pod_define"]) for e in _library_entries() if e.get("merged_pod_define")}
    calls = {
        m.group(1)
        for path in template_files(root)
        for m in _MERGE_CALL.finditer(path.read_text(encoding="utf-8", errors="replace"))
        if m.group(1) in merging
    }
    if not calls or not (root / "charts").is_dir():
        return None
    from dramigrate.helm.sandbox import refuse_outside_links

    refuse_outside_links(root, str(root))
    copy = work.path / "merged-library" / root.name
    if copy.exists():
        shutil.rmtree(copy)
    copy.mkdir(parents=True)
    shutil.copytree(root / "charts", copy / "charts", symlinks=False)
    unpacked = _folder_libraries(copy)
    for lib in [*_unpack_libraries(copy), *unpacked]:
        for call in sorted(calls):
            places = values_places(lib, call)
            if places and places.get("merged_pod_define") == call:
                for path in template_files(copy / lib.folder):
                    text = path.read_text(encoding="utf-8", errors="replace")
                    at = next((b.start for b in blocks(text) if b.word == "define" and b.cond == f'"{call}"'), None)
                    if at is not None:
                        return Found(lib, call, path.relative_to(copy).as_posix(), at, copy, places)
    return None


_INCLUDES = re.compile(r'\b(?:include|template)\s+"([^"]+)"')
# `include "corvid.podSpec" (list . "ollama-podSpec")`: a library define given the chart's own define to merge
_MERGE_CALL = re.compile(r'\binclude\s+"([\w.-]+)"\s+\(list\s+[.$]\w*\s+"[\w.-]+"\s*\)')


def _override_cost(folder: Path, define: str, container: bool = True, entry: dict[str, Any] | None = None) -> str:
    """What overriding the library from the chart would take, for the manual message: the defines a DRA branch goes
    in (the one that writes the container's `resources:` around the key's define, the one that writes the pod's
    `containers:`; those `entry` of rules/library-values.json records, when it does: read from the text alone,
    another define that includes the key's, TrueCharts' CloudNativePG cluster, may come first), each copied whole
    into a define of the same name in the chart's templates/ (Helm reads those after the library's, so they win and
    `helm dependency update` keeps them), with their lines; the pod's alone when not `container` (a library that
    passes the container's resources through whole). "" when not found."""
    found: dict[str, tuple[str, int, int, str]] = {}  # define -> (file, 1-based line, lines, body)
    for path in template_files(folder):
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        for b in blocks(text):
            if b.word == "define":
                body = "\n".join(lines[b.start : b.end + 1])
                found[b.cond.strip('"')] = (path.relative_to(folder).as_posix(), b.start + 1, b.end - b.start + 1, body)
    calls = re.compile(rf'\b(?:include|template)\s+"{re.escape(define)}"')
    resources = entry["container_define"] if entry else None
    resources = resources or next(
        (n for n, d in found.items() if calls.search(d[3]) and re.search(r"^\s*(limits|resources):", d[3], re.M)),
        define,
    )
    included = {n: set(_INCLUDES.findall(d[3])) for n, d in found.items()}

    def reaches(name: str) -> bool:  # the define includes `resources`, through other defines or itself
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n == resources:
                return True
            if n not in seen:
                seen.add(n)
                todo += included.get(n, set())
        return False

    pod = entry["pod_define"] if entry else None
    pod = pod or next((n for n, d in found.items() if re.search(r"^\s*containers:", d[3], re.M) and reaches(n)), None)
    picked = list(dict.fromkeys(n for n in (resources if container else None, pod) if n in found))
    if not picked:
        return ""
    where = ", ".join(f"{n} ({found[n][0]}:{found[n][1]}, {found[n][2]} lines)" for n in picked)
    total = sum(found[n][2] for n in picked)
    return (
        f"; overriding it from the chart means a define of the same name in the chart's templates/ (Helm reads it "
        f"after the library's, and `helm dependency update` keeps it) for {where}: {total} lines copied from the "
        f"library with a DRA branch added, which a later library version would leave stale"
    )
