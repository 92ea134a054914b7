"""Probe renders of an umbrella chart without the documents of its subcharts, where the probed values cannot reach
them and they hold no device request.

A probe (probe.py) renders the chart with values keys changed only to read the device requests of the render. In an
umbrella whose subcharts ask for no device (nebuly-platform: loki and the OpenTelemetry collector, 0.16 s of each
0.25 s render), a probe that changes only the umbrella's own keys cannot change what a subchart renders: Helm gives a
subchart its values under its name or alias, `global`, and the umbrella's conditions and tags that switch it, and
nothing else of the umbrella's values. Such a probe is rendered from a copy of the chart whose subcharts keep every
file but the templates that only write documents (a template named with `_`, or naming `define` or `block`, is
kept, so the umbrella's templates include the same defines and read the same coalesced values, and the values
schemas still check): the umbrella's documents are the full render's, and the subcharts' hold no device request,
as in the full render.

Taken only once checked on the run's own values: the full render of the probes' values files with nothing changed
has no device request in a subchart's document, and the pruned copy renders the same umbrella documents with the
same device requests, after the run's first render showed none in a subchart. A pruned render that fails is rendered
again in full (a template included by its file name fails only there), unless the umbrella's own `fail` or `required`
stopped it, as it stops the full render.
"""

from __future__ import annotations

import functools
import io
import re
import shutil
import tarfile
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.helm.renderpool import Render, cached_render, manifest_stream, may_matter, render_all, run_cache
from dramigrate.helm.tararchive import open_packed

if TYPE_CHECKING:
    from dramigrate.helm.outcome import ChartOptions, Workdir
    from dramigrate.helm.values import ValueSources
    from dramigrate.rules import RuleSet

# a template file that may hold a named template (`define`, `block`): kept, whatever else it writes
_NAMES_TEMPLATES = re.compile(rb"\b(?:define|block)\b")
_MAX_DEPTH = 5  # archives inside archives (schemarefs.MAX_PACKED_DEPTH): past it, no pruned copy
_lock = threading.Lock()


@dataclass(frozen=True)
class Reach:
    """The pruned copy of the run's chart, and the umbrella's values paths that reach a subchart."""

    copy: Path
    keys: frozenset[str]  # top-level values keys a subchart reads or that switch one: names, aliases, global, tags
    conditions: tuple[tuple[str, ...], ...]  # the umbrella's dependency conditions, as paths

    def allows(self, merged: dict[str, Any], values: dict[str, Any]) -> bool:
        """Whether values changes only umbrella keys no subchart reads and no condition switches."""
        from dramigrate.helm.values import minimal_patch

        for path in _paths(minimal_patch(merged, values)):
            if path[0] in self.keys:
                return False
            if any(c[: len(path)] == path or path[: len(c)] == c for c in self.conditions):
                return False
        return True


def _paths(patch: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(patch, dict) and patch:
        return [p for k, v in patch.items() for p in _paths(v, (*prefix, str(k)))]
    return [prefix] if prefix else []


def reach(root: Path, copts: ChartOptions, sources: ValueSources, rules: RuleSet, work: Workdir) -> Reach | None:
    """The run's Reach for the chart at root, made and checked once a run; None where probes render in full (no
    subchart, a subchart document asking for a device, a copy that renders the umbrella otherwise, outside a run)."""
    cache = run_cache(root)
    if cache is None or not (root / "charts").is_dir():
        return None
    with _lock:
        if str(root) not in cache.subchartless:
            cache.subchartless[str(root)] = _checked(root, copts, sources, rules, work)
        found: Reach | None = cache.subchartless[str(root)]
    return found


def _checked(root: Path, copts: ChartOptions, sources: ValueSources, rules: RuleSet, work: Workdir) -> Reach | None:
    from dramigrate.helm.probe import device_uses, override

    base = cached_render(root, copts.render())  # the run's first render, read before any other is made
    subcharts = [m for m in base.manifests if _in_subchart(m.source)]
    if base.error or not subcharts or device_uses(manifest_stream(subcharts), rules):
        return None
    made = _pruned(root)
    if made is None:
        return None
    options = copts.render((work.values_file(override(sources, sources.merged)),), sets=False)
    full, pruned = render_all(
        [functools.partial(cached_render, root, options), functools.partial(_render, made, options)]
    )
    if full.error or pruned.error:
        return None
    if device_uses(manifest_stream([m for m in full.manifests if _in_subchart(m.source)]), rules):
        return None
    own, kept = umbrella_part(full), umbrella_part(pruned)
    if [m.source for m in own.manifests] != [m.source for m in kept.manifests]:
        return None
    if device_uses(own.stream, rules) != device_uses(kept.stream, rules):
        return None
    return made


def probe_render(root: Path, options: Any, found: Reach | None) -> Render:
    """The render a probe reads: from the pruned copy (the umbrella's documents) when found, else in full; a pruned
    render that fails is rendered in full."""
    if found is not None:
        rendered = _render(found, options)
        if not rendered.error or umbrella_fails(found.copy, rendered.error):
            return umbrella_part(rendered)
    return cached_render(root, options)


_EXECUTION_ERROR = re.compile(r"execution error at \(([^():]+):(\d+):(\d+)\)")
_FAILS = re.compile(r"[\s|(]*(?:fail|required)\b")


def umbrella_fails(copy: Path, error: str) -> bool:
    """Whether a pruned render's error is a `fail` or `required` of the umbrella's own template, which the full
    render meets as well (the template reads the same values and defines there). Any other error may come from the
    pruning (a template included by its file name): the probe then renders in full."""
    found = _EXECUTION_ERROR.match(error)
    if found is None:
        return False
    parts = found.group(1).split("/")
    if len(parts) < 3 or parts[1] != "templates" or "charts" in parts or ".." in parts:
        return False
    try:
        lines = (copy / Path(*parts[1:])).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    line, column = int(found.group(2)), int(found.group(3))
    return 0 < line <= len(lines) and _FAILS.match(lines[line - 1][max(column - 1, 0) :]) is not None


def _render(found: Reach, options: Any) -> Render:
    """The pruned copy rendered; a render past a limit is an error here: the full render meets it, or not."""
    from dramigrate.helm.renderpool import _render_uncached
    from dramigrate.helm.sandbox import ChartRefused

    try:
        return _render_uncached(found.copy, options)
    except ChartRefused as exc:
        return Render([], "", "", exc.message)


def umbrella_part(rendered: Render) -> Render:
    """A render with its subcharts' documents left out."""
    own = [m for m in rendered.manifests if not _in_subchart(m.source)]
    stream = manifest_stream([m for m in own if may_matter(m.text)])
    return Render(own, stream, "", rendered.error, rendered.took, rendered.ended)


def _in_subchart(source: str) -> bool:
    return source.split("/")[1:2] == ["charts"]


def _pruned(root: Path) -> Reach | None:
    """The pruned copy of the chart, beside the run's private copy (removed with it), and what reaches a subchart."""
    from dramigrate.helm.rewrite import chart_dependencies, chart_name
    from dramigrate.helm.sandbox import chart_for_render, private_copy

    with chart_for_render(root) as safe:
        folder = Path(safe).parent / "subchartless"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(mode=0o700)
        copy = private_copy(Path(safe), folder / Path(safe).name)
    keys = {"global", "tags"}
    removed = 0
    try:
        for dep in chart_dependencies(copy):
            keys |= {str(dep[k]) for k in ("name", "alias") if dep.get(k)}
        conditions = tuple(
            tuple(c.strip().split("."))
            for dep in chart_dependencies(copy)
            for c in str(dep.get("condition") or "").split(",")
            if c.strip()
        )
        for entry in sorted((copy / "charts").iterdir()):
            if entry.is_symlink():
                return None
            if entry.is_dir():
                keys |= {entry.name, chart_name(entry)}
                removed += prune_folder(entry, 0)
            elif entry.name.endswith(".tgz") and entry.is_file():
                data, name, left_out = pruned_archive(entry.read_bytes(), 0)
                keys |= {entry.name.rsplit("-", 1)[0], name}
                removed += left_out
                entry.write_bytes(data)
    except (OSError, ValueError, tarfile.TarError, EOFError, zlib.error, yaml.YAMLError):
        return None
    return Reach(copy, frozenset(k for k in keys if k), conditions) if removed else None


def _document_only(rel: list[str], data: bytes) -> bool:
    """Whether a file at rel (a path inside a chart folder, subcharts' folders and all) is a template that only writes
    documents: under a chart's templates/, not a `_` helper, naming no template of its own."""
    while len(rel) > 2 and rel[0] == "charts":
        rel = rel[2:]
    return len(rel) > 1 and rel[0] == "templates" and not rel[-1].startswith("_") and not _NAMES_TEMPLATES.search(data)


def prune_folder(chart: Path, depth: int) -> int:
    """Remove the document-only templates of a subchart folder (its archives' too); how many."""
    removed = 0
    for path in sorted(chart.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(chart).parts
        data = path.read_bytes()
        if path.name.endswith(".tgz") and len(rel) >= 2 and rel[-2] == "charts":
            data, _, left_out = pruned_archive(data, depth + 1)
            path.write_bytes(data)
            removed += left_out
        elif _document_only(list(rel), data):
            path.unlink()
            removed += 1
    return removed


def pruned_archive(data: bytes, depth: int) -> tuple[bytes, str, int]:
    """A packed chart without its document-only templates (nested archives likewise), its name, how many left out."""
    if depth > _MAX_DEPTH:
        raise ValueError("packed too deep")
    out = io.BytesIO()
    name = ""
    removed = 0
    with (
        open_packed(fileobj=io.BytesIO(data)) as source,
        tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as target,
    ):
        for member in source:
            parts = member.name.split("/")
            if not member.isfile():
                target.addfile(member)
                continue
            handle = source.extractfile(member)
            content = handle.read() if handle is not None else b""
            if parts[1:] == ["Chart.yaml"]:
                meta = yaml.safe_load(content)
                name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
            if member.name.endswith(".tgz") and parts[-2:-1] == ["charts"]:
                content, _, left_out = pruned_archive(content, depth + 1)
                removed += left_out
            elif _document_only(parts[1:], content):
                removed += 1
                continue
            member.size = len(content)
            target.addfile(member, io.BytesIO(content))
    return out.getvalue(), name, removed
