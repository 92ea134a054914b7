"""The proof's yardstick: renders compared as parsed objects, with the fields that change between two
renders of the same chart (random passwords, checksums) set aside.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import yaml

# --- comparing renders --------------------------------------------------------------------------------------

ObjKey = tuple[str, str, str, str]


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, (datetime.date, datetime.datetime)):
        return node.isoformat()
    return node


def objects(text: str) -> dict[ObjKey, list[Any]]:
    """The objects of a rendered stream by (apiVersion, kind, namespace, name); YAML 1.1 as Kubernetes reads it."""
    out: dict[ObjKey, list[Any]] = {}
    for doc in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        key = (
            str(doc.get("apiVersion", "")),
            str(doc.get("kind", "")),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or meta.get("generateName") or ""),
        )
        out.setdefault(key, []).append(_plain(doc))
    for docs in out.values():
        docs.sort(key=lambda d: json.dumps(d, sort_keys=True, default=str))
    return out


def volatile(a: dict[ObjKey, list[Any]], b: dict[ObjKey, list[Any]]) -> set[str]:
    """Where two renders of the same chart with the same values differ (random passwords, checksums of
    them): `<key>` for whole objects, `<key>|<path>` for fields. The proof does not compare those."""
    out: set[str] = set()
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if x is None or y is None or len(x) != len(y):
            out.add(repr(key))
            continue
        for i, j in zip(x, y, strict=True):
            _collect(i, j, "", repr(key), out)
    return out


def _collect(x: Any, y: Any, path: str, key: str, out: set[str]) -> None:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in set(x) | set(y):
            sub = f"{path}.{k}" if path else str(k)
            if k not in x or k not in y:
                out.add(f"{key}|{sub}")
            else:
                _collect(x[k], y[k], sub, key, out)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            _collect(a, b, f"{path}[{i}]", key, out)
    elif x != y:
        out.add(f"{key}|{path}")


def first_difference(
    expected: dict[ObjKey, list[Any]], actual: dict[ObjKey, list[Any]], ignore: set[str] | None = None
) -> str:
    """'' when equal (fields in `ignore` aside, see volatile); else the first difference, in words."""
    ignore = ignore or set()
    for key in sorted(set(expected) | set(actual)):
        if repr(key) in ignore:
            continue
        e, a = expected.get(key), actual.get(key)
        what = f"{key[1]} {key[2] + '/' if key[2] else ''}{key[3]}"
        if e is None:
            return f"{what}: the rewritten chart renders it, migrating the original rendering does not"
        if a is None:
            return f"{what}: migrating the original rendering gives it, the rewritten chart does not render it"
        if len(e) != len(a):
            return f"{what}: {len(e)} object(s) expected, {len(a)} rendered"
        for x, y in zip(e, a, strict=True):
            where = _diff_path(x, y, "", repr(key), ignore)
            if where is not None:
                return f"{what}: {where}"
    return ""


def _diff_path(x: Any, y: Any, path: str, key: str, ignore: set[str]) -> str | None:
    if path and f"{key}|{path}" in ignore:
        return None
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if f"{key}|{sub}" in ignore:
                continue
            if k not in y:
                return f"{sub}: expected {_short(x[k])}, the rewritten chart has none"
            if k not in x:
                return f"{sub}: not expected, the rewritten chart has {_short(y[k])}"
            found = _diff_path(x[k], y[k], sub, key, ignore)
            if found is not None:
                return found
        return None
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return f"{path}: expected {_short(x)}, the rewritten chart has {_short(y)}"
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            found = _diff_path(a, b, f"{path}[{i}]", key, ignore)
            if found is not None:
                return found
        return None

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    same_type = type(x) is type(y) or (number(x) and number(y))  # 2 and 2.0 are the same count
    if x != y or not same_type:
        return f"{path}: expected {_short(x)}, the rewritten chart has {_short(y)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
