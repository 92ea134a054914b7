"""Chart conventions a rewrite follows: Chart.yaml's version bumped (patch) and its `artifacthub.io/changes` extended,
and values.schema.json declaring the keys the rewrite adds, written back in the schema file's own layout.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.rewrite import Change, RewriteError
from dramigrate.helm.values import Path_, schema_with


def bump_version(chart_yaml: str) -> str:
    """Chart.yaml text with its `version:` a patch release up. A pre-release or build version is left as it is: its
    next one is the maintainer's call, and chartpress charts (dask, z2jh) carry `0.0.1-set.by.chartpress`, which the
    tool replaces when it publishes."""
    return re.sub(
        r"^(version:\s*[\"']?v?)(\d+)\.(\d+)\.(\d+)(?=[\"']?\s*(?:#.*)?$)",
        lambda m: f"{m.group(1)}{m.group(2)}.{m.group(3)}.{int(m.group(4)) + 1}",
        chart_yaml,
        count=1,
        flags=re.M,
    )


def chart_bump(root: Path, change: str) -> list[Change]:
    """Chart.yaml's `version:` bumped (patch) and its `artifacthub.io/changes` extended with `change` when it has one,
    in the list's own format (Artifact Hub takes objects, `kind: added` and a description, or plain strings, not a
    mix); empty when nothing changes."""
    before = (root / "Chart.yaml").read_text(encoding="utf-8")
    after = bump_version(before)
    changes = re.search(r"^(\s+)artifacthub\.io/changes:\s*\|[-+]?\s*\n((?:\1\s+.*\n?)+)", after, re.M)
    if changes:
        body = changes.group(2)
        first = body.splitlines()[0]
        item = " " * (len(first) - len(first.lstrip()))
        try:
            listed = yaml.safe_load(textwrap.dedent(body))
        except yaml.YAMLError:
            listed = None
        plain = isinstance(listed, list) and bool(listed) and all(isinstance(e, str) for e in listed)
        text = json.dumps(change) if ": " in change or " #" in change else change  # a plain scalar where it reads so
        entry = f"{item}- {text}\n" if plain else f"{item}- kind: added\n{item}  description: {text}\n"
        end = changes.end(2)
        after = after[:end] + ("" if after[:end].endswith("\n") else "\n") + entry + after[end:]
    return [Change("Chart.yaml", before, after)] if after != before else []


def conventions(
    root: Path,
    device_class: str | None,
    enabled: bool,
    change: str = "DRA ResourceClaims behind the dra.enabled switch",
    schema: tuple[str, dict[str, Any]] | None = None,
    nested: tuple[tuple[Path_, str, dict[str, Any]], ...] = (),
    top: bool = True,
) -> list[Change]:
    """Chart.yaml's version bumped (patch) and its `artifacthub.io/changes` extended when it has one;
    values.schema.json gets the `dra` block (or `schema`: key, entry) when the chart has a schema, and each key of
    `nested` (values path of the object, key, entry) the rewrite adds where that object forbids unknown keys."""
    out = chart_bump(root, change)
    schema_path = root / "values.schema.json"
    if schema_path.is_file():
        text = schema_path.read_text(encoding="utf-8")
        try:
            document = json.loads(text)
        except ValueError:
            return out
        key, entry = schema or ("dra", {})
        if not isinstance(document, dict):
            return out
        top = top and isinstance(document.get("properties"), dict) and key not in document["properties"]
        if top:
            offered = {} if device_class is None else {"deviceClassName": {"type": "string", "default": device_class}}
            document["properties"][key] = entry or {
                "type": "object",
                "description": "Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34+)",
                "properties": {
                    "enabled": {"type": "boolean", "default": enabled},
                    **offered,
                    "existingClaimTemplate": {"type": "string", "default": ""},
                },
            }
        more, unplaced = schema_with(document, list(nested))
        if unplaced:
            raise RewriteError(
                f"values.schema.json forbids unknown keys around {', '.join(unplaced)}, which the rewrite adds, and "
                "fix cannot tell where to declare them (anyOf/oneOf or a remote $ref on the way): declare them there"
            )
        if not (top or more):
            return out
        new = schema_text(document, text)
        out.append(Change("values.schema.json", text, new))
    return out


def schema_text(document: Any, text: str) -> str:
    """values.schema.json written back in the layout of `text`: its indent, and each value the rewrite leaves as it
    is (`"type": ["string", "null"]`, `{ "type": "string" }`) written as the file writes it, so the maintainer's
    diff shows only the keys added (json.dumps put every list item on its own line: 130 changed lines on a real
    schema). Each key is looked up in the file inside its parent's span, in order."""
    indent = re.search(r"\n( +)\"", text)
    pad = " " * (len(indent.group(1)) if indent else 2)
    decoder = json.JSONDecoder()
    # the objects of plain values a key the rewrite adds holds are written on one line (`"enabled": {"type":
    # "boolean", "default": true}`), with the spacing inside the braces of a file that writes its own so
    inline = re.search(r"\"[^\"\n]+\"[ \t]*:[ \t]*\{( ?)\"[^\n{}]*\}", text)

    colon = " : " if re.search(r"\"[^\"\n]*\" :", text) else ": "  # gimlet's onechart writes `"key" : value`

    def one_line(value: dict[str, Any]) -> str:
        space = inline.group(1) if inline else ""
        items = ", ".join(
            f"{json.dumps(k, ensure_ascii=False)}{colon}{json.dumps(v, ensure_ascii=False)}" for k, v in value.items()
        )
        return f"{{{space}{items}{space}}}"

    def located(key: str, lo: int, hi: int) -> tuple[Any, int, int, str] | None:
        """The value the file writes after `key` and its colon, spaced as the file spaces them (`"key" : `), or
        with no key (a list item or the document) the next value, between lo and hi: (value, start, end, the key
        and colon as written)."""
        head = ""
        if key:
            found = re.compile(re.escape(key) + r"\s*:\s*").search(text, lo, hi)
            if found is None:
                return None
            at, head = found.end(), found.group(0)
        else:
            at = lo
            while at < hi and text[at] in " \t\r\n,":
                at += 1
        try:
            value, stop = decoder.raw_decode(text, at)
        except ValueError:
            return None
        return (value, at, stop, head) if stop <= hi else None

    def dump(value: Any, depth: int, key: str, lo: int, hi: int) -> tuple[str, int, str]:
        """The text of `value`, where the search for the next key of its parent goes on, and its key and colon as
        the file writes them (`"key": ` for a key the rewrite adds)."""
        inner, outer = pad * (depth + 1), pad * depth
        found = located(key, lo, hi)
        head = found[3] if found is not None else f"{key}{colon}" if key else ""
        if found is not None:
            was, lo, hi, _ = found
            if was == value:
                return text[lo:hi], hi, head  # unchanged: as the file writes it (`[\n "a", "b"\n ]` too)
        else:
            lo, hi = lo, lo  # a key the rewrite adds: nothing of the file below it
            if isinstance(value, dict) and value and not any(isinstance(v, (dict, list)) for v in value.values()):
                return one_line(value), lo, head  # a new key's plain object: one line, three fewer for the reviewer
        after_value = hi if found is not None else lo
        if isinstance(value, dict) and value:
            items, at = [], lo
            for k, v in value.items():
                body, at, written = dump(v, depth + 1, json.dumps(k, ensure_ascii=False), at, hi)
                items.append(f"{inner}{written}{body}")
            return "{\n" + ",\n".join(items) + f"\n{outer}}}", after_value, head
        if isinstance(value, list) and value:
            out, at = [], lo + 1 if found is not None else lo  # past the `[`
            for v in value:
                body, at, _ = dump(v, depth + 1, "", at, hi)
                out.append(f"{inner}{body}")
            return "[\n" + ",\n".join(out) + f"\n{outer}]", after_value, head
        return json.dumps(value, ensure_ascii=False), after_value, head

    return dump(document, 0, "", 0, len(text))[0] + ("\n" if text.endswith("\n") else "")
