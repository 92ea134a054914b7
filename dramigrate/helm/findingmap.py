"""Findings on a rendered stream moved back to the chart: the template line (or the included define's line)
that wrote each one, the chart file its text comes from (tpl/.Files.Get), the values keys that set its device count
(attach_values), and the keys a render writes twice in one mapping (repeated_key_findings)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import yaml

from dramigrate.findings import RULES, Finding, Location
from dramigrate.helm.chartvalues import subchart_dirs, subchart_locate
from dramigrate.helm.fileleaf import file_twins
from dramigrate.helm.locate import (
    OBJECT_START,
    defines,
    find_in_files,
    map_line,
    source_of,
    stream_sources,
    through_include,
    within_include,
)
from dramigrate.helm.patterns import Pattern, classify
from dramigrate.helm.probe import Relation, matches
from dramigrate.helm.prove import RepeatedKey, repeated_keys
from dramigrate.helm.rewrite import RewriteError, chart_dependencies, chart_meta
from dramigrate.helm.twins import difference
from dramigrate.helm.values import ValueSources, bumped, display, locate
from dramigrate.rules import RuleSet


def read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _chart_files(chart_dir: Path) -> dict[str, str]:
    """Text files of a chart outside templates/ and charts/ that `.Files.Get` can pull in."""
    out: dict[str, str] = {}
    skip = {"Chart.yaml", "Chart.lock", "values.yaml", "values.schema.json", ".helmignore", "README.md"}
    for path in sorted(chart_dir.rglob("*")):
        rel = path.relative_to(chart_dir)
        if not path.is_file() or rel.parts[0] in ("templates", "charts") or rel.name in skip:
            continue
        if "values" in path.stem and path.suffix in (".yaml", ".yml"):
            continue  # a values file the chart ships (gaudi-values.yaml, ci/gpu-values.yaml): its text reaches the
            # render through values, not .Files.Get, so a rendered line equal to one of its lines says nothing
        if path.stat().st_size > 256 * 1024:
            continue
        text = read_text(path)
        if text is not None and "\0" not in text:
            out[rel.as_posix()] = text
    return out


PACKED_SUBCHART = "rendered line (packaged subchart)"  # the related line of a request fix does not rewrite


def _template_texts(root: Path, chart_dir: Path) -> dict[str, str]:
    """The template files of a chart and of its unpacked subcharts (library charts too), by path from `root`."""
    out: dict[str, str] = {}
    for folder in [chart_dir, *sorted(p for p in (chart_dir / "charts").glob("*") if p.is_dir())]:
        for path in sorted((folder / "templates").rglob("*")):
            text = read_text(path) if path.is_file() and not path.is_symlink() else None
            if text is not None and "define" in text:
                out[path.relative_to(root).as_posix()] = text
    return out


def _packed_subchart(chart_dir: Path, sub: str, source: str) -> str:
    """Why a template of the packaged subchart `sub` (a name or alias) is not rewritten, and what to do. fix rewrites
    a chart's own sources: a dependency from a chart repository is a build artifact the next `helm dependency build`
    brings back as the archive (Helm would then load it beside an unpacked copy), so its chart is migrated where
    it is kept; a vendored archive (no repository, or file://) can be unpacked in its place."""
    try:
        deps = chart_dependencies(chart_dir)
    except (OSError, yaml.YAMLError):
        deps = []
    dep = next((d for d in deps if sub in (d.get("alias"), d.get("name"))), {})
    name, repo = str(dep.get("name") or sub), str(dep.get("repository") or "")
    packed = sorted(p.name for p in (chart_dir / "charts").glob("*.tgz") if p.name.rsplit("-", 1)[0] == name)
    archive = f"charts/{packed[0]}" if packed else f"the archive of {name} in charts/"
    what = f"the packaged subchart {sub}" + (f" (chart {name})" if name != sub else "") + f", {archive}"
    if repo and not repo.startswith("file://"):
        declared = "Chart.yaml" if chart_meta(chart_dir).get("dependencies") else "requirements.yaml"
        version = packed[0].removesuffix(".tgz").rsplit("-", 1)[1] if packed else ""
        if release := _dra_release(name, repo, version):
            return (
                f"{source} comes from {what}, a dependency from {repo}, and {name} has its own DRA switch from "
                f"version {release['from_version']} on ({release['switch']}; {release['source']}): set version "
                f"{release['from_version']} or later for {name} in {declared} and run `helm dependency update`, then "
                f"fix turns the switch on in the {sub} values"
            )
        return (
            f"{source} comes from {what}, a dependency from {repo}: fix rewrites the chart's own sources, and the "
            f"next `helm dependency build` would bring the archive back; migrate the {name} chart where it is kept "
            f"(`dramigrate fix` on its source), release it as a new version, set that version for {name} in "
            f"{declared} and run `helm dependency update`, then run fix on this chart again for the {sub} values; "
            "until then a post-renderer migrates the render: `helm template ... | dramigrate fix -`, or a DeviceClass "
            "with extendedResourceName serves the unchanged request (--strategy extended-resource, Kubernetes 1.34+)"
        )
    twin = next((t for t in file_twins(chart_dir) if t.archive == archive), None)
    if twin is not None:  # built from a folder of the chart's repository, but not from what it holds now
        return (
            f"{source} comes from {what}, packed from its file:// folder {twin.folder}, but "
            f"{difference(chart_dir, twin)}: run `helm dependency build` to pack the folder again, and fix again"
        )
    return f"{source} comes from {what}: unpack it into charts/{name}/ in place of the archive so fix can rewrite it"


def _dra_release(name: str, repo: str, version: str) -> dict[str, str] | None:
    """The entry of rules/chart-dra-releases.json for a chart of that name from that repository at a version older
    than the one that brought its own DRA switch, else None."""
    from dramigrate.helm.packedlib import _version
    from dramigrate.rules import shipped_json

    for entry in shipped_json("chart-dra-releases.json")["charts"]:
        if entry["name"] == name and any(r in repo for r in entry["repositories"]):
            older = bool(version) and _version(version) < _version(entry["from_version"])
            return entry if older else None
    return None


def resolve_source(root: Path, source: str) -> tuple[str, str]:
    """`chart/charts/sub/templates/x.yaml` -> (subchart folder relative to root, "templates/x.yaml")."""
    parts = source.split("/")
    chart_dir, i = root, 1
    while i + 1 < len(parts) and parts[i] == "charts":
        sub = subchart_dirs(chart_dir).get(parts[i + 1])
        if sub is None:
            raise RewriteError(_packed_subchart(chart_dir, parts[i + 1], source))
        chart_dir, i = sub, i + 2
    rel_dir = chart_dir.relative_to(root).as_posix()
    return ("" if rel_dir == "." else rel_dir), "/".join(parts[i:])


# a pod's `spec:` or `template:`, alone or with the include of the define that writes its keys on the same line
# (`template: {{ include "app.pod" . | nindent 4 }}`)
_POD_KEYS = re.compile(r"(?:spec|template):(?:\s*\{\{-?\s*(?:include|template)\s+\"[^\"]+\"[^{}]*\}\})?")


def _passes_map(text: str, line: int, resource: str) -> bool:
    """Whether line `line` of a define's file passes a values resources map through (pattern B or C), as a pod spec
    define's `resources:` above `toYaml .Values.resources`: the pass-through writes into that define. A define that
    writes the device key itself, or includes a helper that does (a chain under the pod's `spec:`), is the helper
    rewrite's (D), which reads the pod from the workload's template."""
    return classify(text, line, resource).letter in ("B", "C")


def map_findings(findings: list[Finding], stream: str, root: Path, display_root: str) -> list[Finding]:
    """Findings on the rendered stream, moved to the template files that wrote them."""
    parts = stream_sources(stream)
    stream_lines = stream.splitlines()
    files_cache: dict[str, dict[str, str]] = {}
    texts = functools.cache(functools.partial(_template_texts, root))  # a chart folder's templates with defines
    # Helm shares the defines of the whole chart tree: a subchart's template may include one its parent holds
    tree = functools.cache(lambda chart_dir: {**texts(root), **texts(chart_dir)})
    named = functools.cache(lambda chart_dir: {**defines(texts(root)), **defines(texts(chart_dir))})
    helpers = functools.cache(map_helpers_of)  # a chart folder's map helpers, read for a helper line only, once
    out = []
    for f in findings:
        part = source_of(parts, f.line)
        if part is None:
            f.file = display_root
            out.append(f)
            continue
        rendered = "\n".join(stream_lines[part.start - 1 : part.end])
        try:
            sub, rel = resolve_source(root, part.source)
        except RewriteError:
            f.related.append(Location(part.source, f.line - part.start + 1, 0, PACKED_SUBCHART))
            f.file, f.line, f.column = f"{display_root}/{part.source.split('/', 1)[-1]}", 0, 0
            out.append(f)
            continue
        chart_dir = root / sub if sub else root
        template = read_text(chart_dir / rel)
        shown = f"{display_root}/{sub + '/' if sub else ''}{rel}"
        offset = f.line - part.start
        if template is None:
            f.file = shown
            out.append(f)
            continue
        mapped = map_line(template, rendered, offset, f.resource)
        via = None
        if mapped.note.startswith(OBJECT_START):  # a template that writes no line of it: an included define's line
            via = through_include(template, rendered, offset, f.resource, named(chart_dir))
        elif not mapped.exact and _POD_KEYS.fullmatch(template.splitlines()[mapped.line - 1].strip()):
            # a pod's `spec:` or `template:` whose keys a define writes (`{{- include "app.podSpec" . | nindent 6 }}`)
            via = within_include(template, rendered, offset, f.resource, named(chart_dir), mapped.line)
            if via is not None and not _passes_map(tree(chart_dir)[via[0].file], via[1].line, f.resource):
                via = None  # the define (or one it includes) writes the device key: the helper rewrite's, from here
        if via is not None:
            found, mapped, at = via
            f.related.append(Location(shown, at, 0, f'this line includes "{found.name}", which writes it'))
            shown, template = f"{display_root}/{found.file}", tree(chart_dir)[found.file]
        rendered_line = stream_lines[f.line - 1] if 0 < f.line <= len(stream_lines) else ""
        f.file, f.line = shown, mapped.line
        if f.resource and f.line:
            pattern = named_pattern(template, f.line, f.resource, functools.partial(helpers, chart_dir))
            f.message += f" [chart {pattern.describe()}]"
        if not mapped.exact:
            f.column = 1
            f.message += f" [{mapped.note}]"
            files = files_cache.setdefault(str(chart_dir), _chart_files(chart_dir))
            hit = find_in_files(files, rendered_line)
            if hit is not None:
                f.related.append(
                    Location(
                        f"{display_root}/{sub + '/' if sub else ''}{hit[0]}",
                        hit[1],
                        0,
                        "the text comes from this chart file (tpl/.Files.Get)",
                    )
                )
        out.append(f)
    return out


def named_pattern(
    template: str, line: int, resource: str, helpers: Callable[[], dict[str, str]], counted: tuple[str, ...] = ()
) -> Pattern:
    """The pattern of the device request at `line` of `template` as fix takes it (patterns.classify): a named
    helper that only passes a values map through (`helpers()`, passthrough.map_helpers, read only for a helper line)
    makes it B, the pass-through's, not D."""
    pattern = classify(template, line, resource, counted)
    if pattern.letter == "D":
        from dramigrate.helm.passthrough import expand_map_helpers

        return classify(expand_map_helpers(template, helpers()), line, resource, counted)
    return pattern


def map_helpers_of(chart_dir: Path) -> dict[str, str]:
    """passthrough.map_helpers (imported here: passthrough reads this module's users)."""
    from dramigrate.helm.passthrough import map_helpers

    return map_helpers(chart_dir)


def mapped_secret_findings(stream: str, root: Path, display_root: str, rules: RuleSet) -> list[Finding]:
    """Device requests in the rendered Secrets' base64 data, at the template line that writes them (the
    resource is set after mapping: the line is a Secret's, not a container's, so it names no chart pattern)."""
    from dramigrate.embedded import secret_findings

    if "Secret" not in stream:
        return []
    found = secret_findings(stream, display_root, rules)
    resources = [f.resource for f in found]
    for f in found:
        f.resource = ""
    mapped = map_findings(found, stream, root, display_root)
    for f, resource in zip(mapped, resources, strict=True):
        f.resource = resource
    return mapped


def repeated_key_findings(stream: str, file: str) -> list[Finding]:
    """A key one mapping of a Helm render writes twice, at the stream line that writes it again, the first one
    related: Helm keeps the last one, and dramigrate reads the render so (documents.helm_constructor)."""
    return [
        Finding(
            "chart-duplicate-key",
            RULES["chart-duplicate-key"][0],
            _repeat_message(r),
            file,
            r.line,
            related=[Location(file, r.first, 0, f"the first `{r.key}:`, which Helm drops")],
        )
        for r in repeated_keys(stream)
    ]


def mapped_repeated_keys(stream: str, root: Path, display_root: str) -> list[Finding]:
    """repeated_key_findings at the template lines that write the keys."""
    kept = repeated_key_findings(stream, display_root)
    firsts = [Finding(f.rule, f.severity, "", display_root, f.related[0].line) for f in kept]
    kept, firsts = map_findings(kept, stream, root, display_root), map_findings(firsts, stream, root, display_root)
    for f, first in zip(kept, firsts, strict=True):
        f.related[0] = Location(first.file, first.line, 0, f.related[0].note)
    return kept


def _repeat_message(r: RepeatedKey) -> str:
    return (
        f"{r.where}: `{r.key}:` is written twice in one mapping; Helm keeps this one, whole, and drops the first "
        "without a word (it reads the render as non-strict YAML, and dramigrate reads it as Helm does), while YAML "
        "forbids the repeat and Flux's helm-controller and kustomize's Helm support refuse the render: remove one "
        "from the template"
    )


def attach_values(
    findings: list[Finding], relations: list[Relation], sources: ValueSources, root: Path, display_root: str
) -> None:
    for f in findings:
        if not f.resource:
            continue
        for rel in relations:
            if not any(matches(f, k) for k in rel.keys):
                continue
            if rel.kind == "adds":
                continue
            loc = locate(rel.leaf.path, sources)
            if not loc.file:
                loc = subchart_locate(root, display_root, rel.leaf.path) or loc
            key, value = display(rel.leaf.path), json.dumps(rel.leaf.value)
            if rel.kind == "count":
                what = f"{key}: {value} sets this device count"
            else:
                other = json.dumps(not rel.leaf.value if isinstance(rel.leaf.value, bool) else bumped(rel.leaf.value))
                what = f"{key}: {value} keeps this device request (with {other} it is gone)"
            located = Location(loc.file or "values", loc.line, 0, what)
            if located not in f.related:
                f.related.append(located)
