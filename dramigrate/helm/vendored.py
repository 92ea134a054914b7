"""The warnings that fix rewrote a chart in a charts/ folder (an umbrella's subchart, a library's define) whose
source it could not write, so the next `helm dependency update` or `build` puts that source back in its place and
the rewrite is lost without a word: a copy of a chart from a chart repository (its dependency names `https://` or
`oci://`), or a `file://` dependency whose folder is not there (the chart copied out of its repository alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import RULES, Finding
from dramigrate.helm.rewrite import chart_meta, chart_name


def _dependency(chart_dir: Path, folder: Path) -> tuple[dict[str, Any], int] | None:
    """The dependency entry of `chart_dir`'s Chart.yaml that `folder` (charts/<x>) is a copy of, with the line of its
    repository, when fix cannot write what the copy is built from: a chart repository (not file://), or a file://
    folder that is not there."""
    try:
        name = chart_name(folder)
        deps = chart_meta(chart_dir).get("dependencies") or []
    except (OSError, yaml.YAMLError, ValueError):
        return None
    for i, dep in enumerate(deps):
        if not isinstance(dep, dict) or dep.get("name") != name:
            continue
        repo = str(dep.get("repository") or "")
        if repo and (not repo.startswith("file://") or not (chart_dir / repo.removeprefix("file://")).is_dir()):
            return dep, _repository_line(chart_dir / "Chart.yaml", i)
    return None


def _repository_line(chart_yaml: Path, index: int) -> int:
    """The line (1-based) of the `repository:` of dependency `index` in Chart.yaml, 0 when it cannot be found."""
    try:
        node = yaml.compose(chart_yaml.read_text(encoding="utf-8"))
        deps = next(v for k, v in node.value if k.value == "dependencies")
        return next(v.start_mark.line + 1 for k, v in deps.value[index].value if k.value == "repository")
    except (OSError, yaml.YAMLError, StopIteration, AttributeError, IndexError, TypeError):
        return 0


def vendored_findings(root: Path, display: str, changed: list[str]) -> list[Finding]:
    """One warning per subchart copy from a chart repository that the changes `changed` (paths relative to `root`)
    write into: it names the subchart, its repository and what to do."""
    seen: dict[str, Finding | None] = {}  # each subchart folder's warning, None when it is no such copy
    for rel in changed:
        parts, chart_dir, i = Path(rel).parts, root, 0
        while i + 2 < len(parts) and parts[i] == "charts":
            folder = chart_dir / "charts" / parts[i + 1]
            where = folder.relative_to(root).as_posix()
            found = _dependency(chart_dir, folder) if where not in seen else None
            seen.setdefault(where, None)
            if found is not None:
                dep, line = found
                seen[where] = _finding(
                    where, dep, f"{display}/{(chart_dir / 'Chart.yaml').relative_to(root).as_posix()}", line
                )
            chart_dir, i = folder, i + 2
    return [f for f in seen.values() if f is not None]


def _finding(where: str, dep: dict[str, Any], chart_yaml: str, line: int) -> Finding:
    """The warning for the copy `where` (charts/<x>) of the dependency `dep`, at its `repository:` line."""
    name, repo = str(dep.get("name")), str(dep.get("repository"))
    copy = f"{where} (chart {name} {dep.get('version', '')}".rstrip() + ")"
    if repo.startswith("file://"):
        source = repo.removeprefix("file://")
        return Finding(
            "chart-file-source-missing",
            RULES["chart-file-source-missing"][0],
            f"{copy} is built from {repo}, which is not there: fix rewrote only the copy, and `helm dependency "
            f"build` where that folder is (the chart's own repository) copies it back, dropping the rewrite; write the "
            f"same change into {source} (fix on a folder that holds the chart and {source} writes both)",
            chart_yaml,
            line,
        )
    return Finding(
        "chart-vendored-subchart",
        RULES["chart-vendored-subchart"][0],
        f"{copy} is a copy of a dependency from {repo}: fix rewrote the copy, and the next "
        "`helm dependency update` or `helm dependency build` replaces it with the published chart, "
        f"dropping the rewrite; upstream the change to the {name} chart and bump the dependency, or "
        f"keep the rewritten copy as your own chart: move it out of charts/ and name it with "
        "`repository: file://<its folder>`",
        chart_yaml,
        line,
    )
