"""What a render takes from a chart's data files (`.Files`), found by rendering the chart again with every such file
changed: the values of the first render that the second does not hold came from those files.

A chart's words are shown in findings only when they are its own (sandbox.chart_words), but numbers were always
shown: a template writing a pod's name or a device count from a file's bytes (`printf "%v" (.Files.GetBytes
"gha-creds-1.json")`, `index (.Files.GetBytes ...) 0`) put that file into every report, one decimal number a byte
(`Pod/p-121-97-50-57-...`). Each letter and digit of a data file is shifted in the copy (rot13, digits by five), so a
file that parses as YAML or JSON still does, and a value read from it differs; a file's length and its punctuation
are the same in both renders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# what Helm loads as the chart itself, never into `.Files`
_CHART_FILES = frozenset(
    {"Chart.yaml", "values.yaml", "values.schema.json", "Chart.lock", "requirements.yaml", "requirements.lock"}
)
_SHIFT = bytes.maketrans(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    b"nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM5678901234",
)


def data_files(chart: Path) -> Iterator[Path]:
    """The files of a chart folder (and of its unpacked subcharts) that Helm gives templates as `.Files`."""
    for folder, dirs, files in os.walk(chart, followlinks=False):
        chart_folder = os.path.isfile(os.path.join(folder, "Chart.yaml"))
        dirs[:] = [d for d in dirs if d != ".git" and not (d == "templates" and chart_folder)]
        for name in files:
            path = Path(folder, name)
            if name in _CHART_FILES or name == ".helmignore" or path.is_symlink() or not path.is_file():
                continue
            if name.endswith(".tgz") and path.parent.name == "charts":
                continue
            yield path


def varied_by_files(root: Path, options: Any, objects: list[Any]) -> frozenset[str] | None:
    """The scalars (text of strings and numbers, keys too) of objects that a render of the chart with its data files
    changed does not hold; empty when the chart has no data file; None when that render fails (then any value may
    have come from a file)."""
    import yaml

    from dramigrate.findings import InputError
    from dramigrate.helm.prove import load_all
    from dramigrate.helm.render import HelmError, render_chart
    from dramigrate.helm.sandbox import private_copy
    from dramigrate.lifetime import temporary_folder

    if not objects or not root.is_dir() or next(data_files(root), None) is None:
        return frozenset()
    with temporary_folder("dramigrate-files-") as work:
        copy = private_copy(root, work / (root.resolve().name or "chart"))
        for path in list(data_files(copy)):
            path.write_bytes(path.read_bytes().translate(_SHIFT))
        try:
            stream = "\n---\n".join(m.text for m in render_chart(copy, options))
            other = set(_scalars(list(load_all(stream))))
        except (HelmError, InputError, yaml.YAMLError, ValueError, RecursionError):
            return None
    return frozenset(text for text in _scalars(objects) if text not in other)


def _scalars(node: Any) -> Iterator[str]:
    """Every string and number of node, as text."""
    from dramigrate.helm.sandbox import leaves

    return (str(t) for t in leaves(node) if isinstance(t, (str, int, float)) and not isinstance(t, bool))
