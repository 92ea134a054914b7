"""Baselines: record today's findings (`lint --write-baseline FILE`), then fail only on new ones
(`lint --baseline FILE`).

A finding is matched by what it is about, not where: file, object identity (kind, namespace, name), container,
resource and rule. Unrelated edits that move lines do not break the baseline; a new device request (another
container, another object, another resource) is new. Entries that match nothing any more are stale: fixed since.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from dramigrate.findings import Finding, InputError
from dramigrate.report.escape import clipped

VERSION = 1
FIELDS = ("file", "kind", "namespace", "name", "container", "resource", "rule")
# Which pod template of the object (`spec.headGroupSpec`, `spec.pytorchReplicaSpecs.Worker`), list positions left out
# (`spec.workerGroupSpecs[]`: reordering the groups is no new request). Written by every baseline; an entry without
# it (a baseline written before it was) matches the finding in any pod template of the object, as it did.
TEMPLATE = "podTemplate"
Key = tuple[str | None, ...]


def _file(path: str) -> str:
    text = PurePosixPath(Path(path).as_posix()).as_posix()
    return text[2:] if text.startswith("./") else text


_POSITION = re.compile(r"\[\d+\]")


def _template(path: str) -> str:
    """A pod template's path as a baseline names it: "" for an object's only one (a Pod's, a Deployment's)."""
    path = _POSITION.sub("[]", path)
    return "" if path in ("spec", "spec.template.spec") else path.removesuffix(".template.spec")


def key(f: Finding) -> Key:
    """What a finding is about: its file, object, container, resource and rule, and the pod template of the object
    (a RayCluster's worker group and head both name their container `ray`: a GPU moved from one to the other was
    still known)."""
    return (_file(f.file), f.kind, f.namespace, f.name, f.container, f.resource, f.rule, _template(f.pod_template_path))


def document(findings: list[Finding]) -> dict[str, Any]:
    counts = Counter(key(f) for f in findings if not f.fixed)
    entries = [_entry(k, n) for k, n in sorted(counts.items(), key=lambda kn: tuple(x or "" for x in kn[0]))]
    return {"version": VERSION, "tool": "dramigrate", "findings": entries}


def _entry(k: Key, count: int) -> dict[str, Any]:
    entry: dict[str, Any] = dict(zip(FIELDS, k[: len(FIELDS)], strict=True))
    if k[-1] is not None:
        entry[TEMPLATE] = k[-1]
    return {**entry, "count": count}


def write(path: Path, findings: list[Finding]) -> int:
    """Write the baseline of these findings; the number of findings it holds."""
    from dramigrate.writer import write_output

    doc = document(findings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        raise InputError(f"cannot write the baseline: {exc.strerror}", str(path)) from exc
    return sum(e["count"] for e in doc["findings"])


def load(path: Path) -> Counter[Key]:
    """The baseline's entries. It is a file of the repository (a pull request can change it): only a regular file
    within the size limit is read, and an entry whose count is not a whole number of at least 1 is bad input."""
    from dramigrate.limits import read_regular
    from dramigrate.longints import LongInt, RepeatedKey, loads_json

    try:  # a key set twice: JSON keeps the last, and a reviewer of the pull request reads the first
        doc = loads_json(read_regular(str(path)).decode("utf-8"), unique=True)
    except RepeatedKey as exc:
        raise InputError(
            f"the baseline sets `{exc.key}` twice in one object (the last one wins, and a reviewer reads the first); "
            "keep one",
            str(path),
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read the baseline: {exc.strerror}", str(path)) from exc
    except LongInt as exc:
        raise InputError(f"the baseline holds {exc.message}", str(path), exc.line, exc.column) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"the baseline is not UTF-8 text (byte {exc.start + 1})", str(path)) from exc
    except ValueError as exc:  # json's own text says `line 3 column 1 (char 32)` after the problem
        line, column = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
        raise InputError(f"the baseline is not JSON: {getattr(exc, 'msg', exc)}", str(path), line, column) from exc
    except RecursionError:  # `[[[[...` a pull request commits as the baseline: json's decoder recurses per level
        raise InputError("the baseline is not a dramigrate baseline: it nests too deeply to read", str(path)) from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("findings"), list):
        raise InputError(f"not a dramigrate baseline (version {VERSION}); write one with --write-baseline", str(path))
    out: Counter[Key] = Counter()
    for i, entry in enumerate(doc["findings"]):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FIELDS):
            raise InputError(f"findings[{i}]: an entry needs the string fields {', '.join(FIELDS)}", str(path))
        count = entry.get("count", 1)
        if type(count) is not int or count < 1:
            raise InputError(f"findings[{i}]: `count` must be a whole number of at least 1", str(path))
        template = entry.get(TEMPLATE)
        if template is not None and not isinstance(template, str):
            raise InputError(f"findings[{i}]: `{TEMPLATE}` must be a string", str(path))
        out[(*(_file(entry["file"]) if k == "file" else entry[k] for k in FIELDS), template)] += count
    return out


@dataclass
class Outcome:
    new: list[Finding] = field(default_factory=list)  # not in the baseline: these are reported
    known: list[Finding] = field(default_factory=list)  # in the baseline: not reported
    stale: list[dict[str, Any]] = field(default_factory=list)  # baseline entries nothing matched: fixed since


def apply(findings: list[Finding], baseline: Counter[Key]) -> Outcome:
    left = Counter(baseline)
    out = Outcome()
    for f in findings:
        k = key(f)
        older = (*k[:-1], None)  # an entry of a baseline written without pod templates
        at = k if left[k] > 0 else older
        if not f.fixed and left[at] > 0:
            left[at] -= 1
            out.known.append(f)
        else:
            out.new.append(f)
    stale = sorted(((k, n) for k, n in left.items() if n > 0), key=lambda kn: tuple(x or "" for x in kn[0]))
    out.stale = [_entry(k, n) for k, n in stale]
    return out


STALE_SHOWN = 10  # stale entries a message names; the JSON report lists each


def listed(entries: list[dict[str, Any]]) -> str:
    """Entries for a message: the first STALE_SHOWN, each bounded, and how many more (200,000 stale entries were one
    line of 15 MB on standard error)."""
    shown = "; ".join(clipped(describe(e)) for e in entries[:STALE_SHOWN])
    more = len(entries) - STALE_SHOWN
    return shown + (f"; and {more:,} more (the JSON report lists each)" if more > 0 else "")


def describe(entry: dict[str, Any]) -> str:
    obj = f"{entry['kind']}/{entry['name']}" if entry["kind"] else ""
    parts = [entry["file"], obj, entry.get(TEMPLATE) or ""]
    parts += [f"container {entry['container']}" if entry["container"] else "", entry["resource"]]
    return " ".join(p for p in parts if p) + f" [{entry['rule']}]"
