"""Kustomize: find patches and the bases that overlays patch with device resources, to report, not rewrite.

A half-migrated overlay would ask for a device twice (the base's claim plus the patch's limit), so
files that are kustomize patches, and files an overlay patches with device resources, are left alone.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.limits import is_regular, read_regular
from dramigrate.rules import RuleSet
from dramigrate.sources import SKIP_DIRS, walk

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_KEY = re.compile(r"([a-z0-9][-a-z0-9.]*\.[a-z]{2,}/[-\w.]+)")


def repo_root(start: Path) -> Path:
    """The enclosing git work tree (a folder with .git), else the folder itself."""
    folder = (start if start.is_dir() else start.parent).resolve()
    return _root_of(folder)


@cache
def _root_of(folder: Path) -> Path:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def mentions_device(text: str, rules: RuleSet) -> bool:
    return any(rules.is_device_candidate(k) and rules.lookup(k) for k in _KEY.findall(text))


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(read_regular(str(path)).decode("utf-8"))
    except (OSError, InputError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _kustomization_in(folder: Path) -> Path | None:
    for name in NAMES:
        if is_regular(folder / name):
            return folder / name
    return None


def report_only_files(
    roots: list[Path], rules: RuleSet, failures: list[tuple[Path, BaseException]] | None = None
) -> dict[Path, str]:
    """Resolved file path -> why it must be left alone. A kustomization that cannot be read is added to failures
    and every YAML file in its folder and below is left alone (its patches are not known)."""
    reasons: dict[Path, str] = {}
    scanned: set[Path] = set()
    tops: set[Path] = set()
    for top in sorted(
        {repo_root(r) for r in {p if p.is_dir() else p.parent for p in roots}}, key=lambda t: len(t.parts)
    ):
        if not any(parent in tops for parent in top.parents):  # a folder inside another is walked with it
            tops.add(top)
    for root in sorted(tops):
        for folder, dirs, names in walk(root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in names:
                if name in NAMES and is_regular(Path(folder) / name) and (Path(folder) / name).resolve() not in scanned:
                    k = (Path(folder) / name).resolve()
                    scanned.add(k)
                    try:
                        _scan(k, rules, reasons)
                    except Exception as exc:
                        if failures is None:
                            raise
                        failures.append((Path(folder) / name, exc))
                        _leave_folder_alone(k, reasons)
    return reasons


def _leave_folder_alone(kfile: Path, reasons: dict[Path, str]) -> None:
    why = f"the kustomization {kfile} could not be read, so its patches are unknown"
    for folder, _dirs, names in walk(kfile.parent):
        for name in names:
            if name.endswith((".yaml", ".yml")):
                reasons.setdefault((Path(folder) / name).resolve(), why)


def _patch_files(base: Path, data: dict[str, Any]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    inline: list[str] = []
    for item in data.get("patchesStrategicMerge") or []:
        if isinstance(item, str) and "\n" not in item:
            files.append(base / item)
        elif isinstance(item, str):
            inline.append(item)
    for item in (data.get("patches") or []) + (data.get("patchesJson6902") or []):
        if isinstance(item, dict):
            if item.get("path"):
                files.append(base / str(item["path"]))
            if item.get("patch"):
                inline.append(str(item["patch"]))
    return [f.resolve() for f in files], inline


def _scan(kfile: Path, rules: RuleSet, reasons: dict[Path, str]) -> None:
    base = kfile.parent
    data = _load(kfile)
    files, inline = _patch_files(base, data)
    device_patch = any(mentions_device(t, rules) for t in inline)
    for f in files:
        reasons.setdefault(f, f"kustomize patch listed in {kfile}")
        try:
            if mentions_device(read_regular(str(f)).decode("utf-8", errors="replace"), rules):
                device_patch = True
        except (OSError, InputError):
            pass
    if device_patch:
        for f in _reachable(base, data, set()):
            reasons.setdefault(f, f"a kustomize base that overlay {kfile} patches with device resources")


def _reachable(base: Path, data: dict[str, Any], seen: set[Path]) -> set[Path]:
    out: set[Path] = set()
    for item in (data.get("resources") or []) + (data.get("bases") or []) + (data.get("components") or []):
        if not isinstance(item, str) or "://" in item:
            continue
        target = (base / item).resolve()
        if target in seen:
            continue
        seen.add(target)
        if target.is_file():
            out.add(target)
        elif target.is_dir() and (k := _kustomization_in(target)):
            out |= _reachable(target, _load(k), seen)
    return out
