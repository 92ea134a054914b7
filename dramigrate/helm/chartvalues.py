"""The values a chart renders with: its values.yaml with its subcharts' defaults under their names, the user's
values on top, and where a values key is written (the chart's, a subchart's, or the user's values file)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.findings import Location
from dramigrate.helm.renderpool import CACHE
from dramigrate.helm.rewrite import chart_dependencies
from dramigrate.helm.values import Path_, ValueSources, display, locate

if TYPE_CHECKING:
    from dramigrate.helm.outcome import ChartOptions


def _values_from_yaml(text: str) -> dict[str, Any]:
    import helm_python as sdk

    try:
        data = sdk.values_from_yaml(text)
    except sdk.HelmError:
        return {}
    return data if isinstance(data, dict) else {}


def chart_defaults(chart_dir: Path) -> dict[str, Any]:
    """A chart's values.yaml with its subcharts' defaults under their names (parent values win); read once per
    chart run (an umbrella's tree of Chart.yaml and values files took half a second to read each time)."""
    cache = CACHE[-1].defaults if CACHE else None
    if cache is None:
        return _chart_defaults(chart_dir)
    key = str(chart_dir.absolute())
    if key not in cache:
        cache[key] = _chart_defaults(chart_dir)
    return copy.deepcopy(cache[key])


def _chart_defaults(chart_dir: Path) -> dict[str, Any]:
    from dramigrate.helm.render import _merge_maps

    path = chart_dir / "values.yaml"
    values = _values_from_yaml(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for key, sub in subchart_dirs(chart_dir).items():
        if sub is None:
            continue
        parent = values.get(key)
        values[key] = _merge_maps(_chart_defaults(sub), parent if isinstance(parent, dict) else {})
    return values


def packed_defaults(chart_dir: Path) -> dict[str, dict[str, Any]]:
    """The values.yaml of each subchart the chart holds packed (`charts/ollama-1.77.0.tgz`, from a chart repository)
    under its name and aliases: chart_defaults leaves them out (their keys are not the chart's to locate or edit),
    but a switch of their own is set in the chart's values (ownswitch.py). An archive that cannot be read gives
    nothing (the render names it)."""
    from dramigrate.helm.twins import packed_members, packed_meta

    packed = [n for n, folder in subchart_dirs(chart_dir).items() if folder is None]
    out: dict[str, dict[str, Any]] = {}
    for archive in sorted((chart_dir / "charts").glob("*.tgz")) if packed else []:
        members = packed_members(archive)
        top, meta = packed_meta(members or {})
        name = str(meta.get("name") or "")
        if members is None or name not in packed:
            continue
        values = _values_from_yaml(members.get(f"{top}/values.yaml", b"").decode("utf-8", "replace"))
        aliases = [str(d["alias"]) for d in chart_dependencies(chart_dir) if d.get("name") == name and d.get("alias")]
        for key in [name, *aliases]:
            out.setdefault(key, values)
    return out


def subchart_dirs(chart_dir: Path) -> dict[str, Path | None]:
    """Subchart name (and alias) -> its folder in charts/, or None when it is packaged; read once per chart run
    while neither charts/ nor Chart.yaml changes (a chart 40 subcharts deep took minutes re-reading them)."""
    cache = CACHE[-1].subcharts if CACHE else None
    if cache is None:
        return _subchart_dirs(chart_dir)
    key = (str(chart_dir), *_stamp(chart_dir / "charts"), *_stamp(chart_dir / "Chart.yaml"))
    if key not in cache:
        cache[key] = _subchart_dirs(chart_dir)
    return dict(cache[key])


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _subchart_dirs(chart_dir: Path) -> dict[str, Path | None]:
    out: dict[str, Path | None] = {}
    charts = chart_dir / "charts"
    if charts.is_dir():
        for entry in sorted(charts.iterdir()):
            if entry.is_dir() and (entry / "Chart.yaml").is_file():
                from dramigrate.helm.rewrite import chart_name

                out.setdefault(chart_name(entry), entry)
            elif entry.suffix == ".tgz":
                out.setdefault(entry.name.rsplit("-", 1)[0], None)
    try:
        deps = chart_dependencies(chart_dir)
    except (OSError, yaml.YAMLError):
        deps = []
    for dep in deps:
        if dep.get("alias") and dep.get("name") in out:
            out[str(dep["alias"])] = out[str(dep["name"])]
    return out


def _user_values(options: Any) -> dict[str, Any]:
    from dramigrate.helm.render import _user_values as helm_user_values

    return helm_user_values(options)


def value_sources(root: Path, display_root: str, copts: ChartOptions, options: Any) -> ValueSources:
    from dramigrate.helm.render import _merge_maps

    user = _user_values(options)
    merged = _merge_maps(chart_defaults(root), user)
    files: list[tuple[str, Path]] = []
    if (root / "values.yaml").is_file():
        files.append((f"{display_root}/values.yaml", root / "values.yaml"))
    files += [(str(p), Path(p)) for p in options.values_files]
    sets = [*options.set_values, *options.set_string_values]
    return ValueSources(merged, user, files, [s for expr in sets for s in expr.split(",")])


def subchart_locate(root: Path, display_root: str, path: Path_) -> Location | None:
    """A key inside a subchart's defaults: that subchart's values.yaml."""
    if not path or not isinstance(path[0], str):
        return None
    sub = subchart_dirs(root).get(path[0])
    if sub is None:
        return None
    rel = sub.relative_to(root).as_posix()
    inner = ValueSources({}, {}, [(f"{display_root}/{rel}/values.yaml", sub / "values.yaml")], [])
    loc = locate(path[1:], inner)
    if loc.line:
        return Location(loc.file, loc.line, 0, display(path))
    return subchart_locate(sub, f"{display_root}/{rel}", path[1:])
