"""What a maintainer does by hand when a chart's objects are written by a library subchart (its templates only
include the library's defines) whose pod renders no resourceClaims from values (idiomatic.library_writes): the
library's pod define, the values map it writes the container's resources from, and where the library's source is
(the chart's dependency), so that the change goes where `helm dependency update` keeps it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from dramigrate.helm.templatelines import is_key

# the values map a container's `resources:` is written from: `{{- with .Values.x.resources }}` above the key, or
# `toYaml .Values.x.resources` on its line or the next
_WITH_MAP = re.compile(r"\{\{-?\s*with\s+\$?\.Values\.([\w.]+)\s*-?\}\}")
_TOYAML_MAP = re.compile(r"\btoYaml\s+\$?\.Values\.([\w.]+)")


def _resources_map(lines: list[str], at: int) -> str:
    """The values path of the map the container's `resources:` key at line `at` is written from, else ""."""
    above = _WITH_MAP.fullmatch(lines[at - 1].strip()) if at > 0 else None
    if above:
        return above.group(1)
    for line in lines[at : at + 2]:
        if m := _TOYAML_MAP.search(line):
            return m.group(1)
    return ""


def _source(root: Path, folder: Path) -> str:
    """The repository the chart's Chart.yaml names for the library's dependency (`file://../..`), else ""."""
    try:
        own = yaml.safe_load((root / "Chart.yaml").read_text(encoding="utf-8"))
        lib = yaml.safe_load((folder / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    if not isinstance(own, dict) or not isinstance(lib, dict):
        return ""
    deps = own.get("dependencies") if isinstance(own.get("dependencies"), list) else []
    return next(
        (str(d.get("repository", "")) for d in deps if isinstance(d, dict) and d.get("name") == lib.get("name")), ""
    )


def pod_advice(root: Path, library: str) -> str:
    """For the manual message: the library `library` (`charts/<folder>`) writes the pod in one define and the
    container's resources whole from a values map but no pod resourceClaims: where each change by hand goes. ""
    when no define of the library writes such a pod, or when it renders resourceClaims (another message)."""
    from dramigrate.helm.helper import blocks, template_files  # helper imports idiomatic, which imports this module

    folder = root / library
    for path in template_files(folder):
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        for b in blocks(text):
            body = range(b.start, b.end + 1)
            if b.word != "define" or not any(is_key(lines[i], "containers") for i in body):
                continue
            if any("resourceClaims" in lines[i] for i in body):
                return ""
            at = next((i for i in body if is_key(lines[i], "resources") and _resources_map(lines, i)), -1)
            if at < 0:
                continue
            rel = path.relative_to(root).as_posix()
            values = _resources_map(lines, at)
            repo = _source(root, folder)
            source = f"the library's source ({repo})" if repo else "the library's source"
            return (
                f"the library renders no resourceClaims of a pod: its define {b.cond.strip(chr(34))} ({rel}:"
                f"{b.start + 1}) writes the pod, the container's resources whole from {values} (line {at + 1}). By "
                f"hand: in {source}, render the pod's resourceClaims from a values list in that define, as it renders "
                f"its other pod keys, and run `helm dependency update`; then, in this chart's values, drop the device "
                f"key from {values}, list the claim in its claims, name the claim in that new values list, and add "
                "the ResourceClaimTemplate in a template of the chart. Or leave the chart as it is and let a "
                "DeviceClass with extendedResourceName serve the request (--strategy extended-resource, Kubernetes "
                "1.34+)"
            )
    return ""
