"""Where the classes file may be: fix appends DeviceClass documents to it, so it may not be a file the run reads
(the config, a rule pack, a CRD or values file, a manifest of the run) nor a file of a Helm chart (issue 11: with
`classes-file: .dramigrate.yaml` the next run failed on its own config)."""

from __future__ import annotations

import os
from pathlib import Path

from dramigrate.findings import InputError

ADVICE = "fix would append DeviceClasses to it; name a file of its own (cluster/deviceclasses.yaml, say)"


def check_place(path: Path, flag: bool, reads: list[tuple[Path | None, str]]) -> None:
    """Refuse, before any work, a classes file that is one of the files the run reads, reads: (file, what it is to
    the run), or that lies in a Helm chart folder (the nearest folder above it with a Chart.yaml): Helm would load
    it with the chart. flag: it comes from --classes-file, not the config file's `classes-file`."""
    from dramigrate.sources import YAML_SUFFIXES, chart_root

    if not path.name.lower().endswith(YAML_SUFFIXES):  # `classes-file: .gitignore` made git read DeviceClasses
        raise _refusal(path, flag, "is a YAML file applied with `kubectl apply -f`, so its name ends in .yaml or .yml")
    real = os.path.realpath(path)  # as Path.resolve, and a symlink loop is no RuntimeError
    for other, what in reads:
        if other is not None and os.path.realpath(other) == real:
            raise _refusal(path, flag, f"is {what}")
    chart = chart_root(Path(real), {})
    if chart is not None:
        raise _refusal(path, flag, f"is inside the Helm chart {chart} (a file of the chart, which Helm may load)")


def check_inputs(path: Path, flag: bool, files: list[str], resolved: dict[str, str], cap: int) -> None:
    """Refuse a classes file that is an input of the run (the walked or named files and chart archives): unless it
    holds DeviceClasses only (a classes file a walk of the repository meets, as `fix .` does with `classes-file:
    cluster/classes.yaml`)."""
    if not path.exists():
        return
    from dramigrate.sources import resolve_paths

    real = os.path.realpath(path)
    if real not in resolve_paths(files, resolved) or _classes_only(real, cap):
        return
    raise _refusal(path, flag, "is one of the files this run reads as input, with other objects than DeviceClasses")


def _classes_only(path: str, cap: int) -> bool:
    """Whether the file holds DeviceClass documents only (or none), alone or in lists: what a classes file holds."""
    from dramigrate.documents import parse_document, split_documents
    from dramigrate.limits import Limits, read_regular
    from dramigrate.writer import text_of

    try:
        raw = text_of(read_regular(path, Limits(max_bytes=cap))).encode("utf-8")  # UTF-16 with a BOM, as fix reads it
        docs = [parse_document(path, d) for d in split_documents(path, raw).documents]
    except Exception:  # a manifest that does not even load is no classes file
        return False
    from dramigrate.detect import objects_of

    # a list of DeviceClasses (`kubectl get deviceclasses -o yaml`) is one too
    return all(d is None or isinstance(d, dict) and all(o.kind == "DeviceClass" for o in objects_of(d)) for d in docs)


def _refusal(path: Path, flag: bool, why: str) -> InputError:
    name = "--classes-file" if flag else "the config's `classes-file`"
    return InputError(f"{name} {why}: {ADVICE}", os.fspath(path))
