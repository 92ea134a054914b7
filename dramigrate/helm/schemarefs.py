"""A chart's JSON schemas read from the chart, not the network: remote `$id`/`$ref` URLs that name a file the chart
itself ships become `file://` URLs of that file in the render's private copy.

Helm validates values against values.schema.json and loads every `$ref` it names, over HTTP for an `https://` one.
Library charts publish their schema that way: bjw-s `common` (app-template, immich and many more) gives its
values.schema.json an `$id` on raw.githubusercontent.com, so each relative `$ref` (`schemas/pod.json`) is fetched
from GitHub, and the parent chart's schema is one `$ref` to that URL. Offline (or behind a proxy) no such chart
renders. The files are in the chart (charts/common/schemas/pod.json): a schema file's own remote `$id` names its
folder, so a remote URL under that folder is the local file with the same relative path. Only the render's copy is
changed.

A remote URL that names no file of the chart is never fetched: a render must not reach the network (a chart under
review in CI could make it call any host). Its `$ref` is dropped (that part of the values is then not checked, the
rendered output is the same), a remote `$schema` other than json-schema.org's drafts likewise, and a remote `$id`
becomes the file's own URL, so relative `$ref`s read files beside it.

Nor is a file outside the chart read: Helm's loader reads a `file://` URL or a relative path (`../../../x.json`)
wherever it leads, so a schema of a chart under review could read `/home/runner/.docker/config.json`, and whether
the chart renders told its author something of that file. A reference that stays in the chart becomes the absolute
URL of its file in the copy (what is checked is what Helm reads); one that leaves it is dropped, as a remote one.

A packed subchart (`charts/sub-1.0.0.tgz`) is read by Helm from the archive: its files are not on disk, so every
reference of its schemas that is not a fragment (`#/definitions/x`) leads out of the chart (a relative one resolves
against `file:///values.schema.json`, the root folder). In the copy's archive each such `$ref` and `$id` is
dropped, and a `$schema` other than a draft: a packed subchart's schema never makes Helm read a file or the network.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import tempfile
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlparse

from dramigrate.helm.tararchive import open_packed
from dramigrate.memo import remember

_REMOTE = ("https://", "http://")
# the keywords whose value is a URL Helm's validator (santhosh-tekuri/jsonschema) loads; a text that may name one
# that is neither a fragment (#/definitions/x) nor a JSON Schema draft: a URL, a file or a path
_KEYS = ("$id", "$ref", "$schema", "$dynamicRef", "$recursiveRef")
_OUTWARD_KEY = re.compile(
    r'"\$(?:id|ref|schema|dynamicRef|recursiveRef)"\s*:\s*"(?!#|https?://json-schema\.org/)'
    r"|\\u"  # a JSON escape: a key spelled "\u0024ref" is "$ref" once parsed
)
_DRAFTS = ("http://json-schema.org/", "https://json-schema.org/")  # built into Helm's validator, never fetched
# a schema file larger than this is left alone: Helm never reads it (the render's copy refuses a chart file over
# sandbox.MAX_MEMBER_BYTES, Helm's own bound); a smaller bound let a 4.5 MiB schema's references through
_MAX_BYTES = 5 << 20


def localize_schema_refs(root: Path) -> int:
    """Rewrite, in place, the remote `$id`/`$ref` URLs of the JSON files under `root` that name a file under `root`;
    returns how many files changed. `root` must be dramigrate's private copy of a chart."""
    schemas: list[Path] = []
    packed: list[Path] = []
    charts = [str(root)]
    while charts:  # the chart's values.schema.json and its subcharts', not a walk of every file (renders repeat)
        chart = charts.pop()
        try:
            with os.scandir(chart) as entries:
                found = {e.name: e for e in entries if e.name in ("values.schema.json", "charts")}
            if "values.schema.json" in found and found["values.schema.json"].is_file(follow_symlinks=False):
                schemas.append(Path(found["values.schema.json"].path))
            if "charts" in found and found["charts"].is_dir(follow_symlinks=False):
                with os.scandir(found["charts"].path) as subs:
                    listed = sorted(subs, key=lambda e: e.name)
                charts.extend(e.path for e in listed if e.is_dir(follow_symlinks=False))
                packed += [Path(e.path) for e in listed if e.name.endswith(".tgz") and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
    changed = sum(_confine_packed(archive) for archive in packed)
    settled = _SETTLED.get(str(root))
    if settled is not None and settled == _stats([*schemas, *_other_json(root)]):
        return changed  # the files a pass over this copy changed nothing in, as they were
    docs = _remote(schemas)
    if not docs:  # no values schema names a URL (nearly every chart): nothing else is read
        return changed
    others = _other_json(root)
    docs.update(_remote(others))
    rewritten = _rewrite(docs, root)
    if not rewritten:
        remember(_SETTLED, str(root), _stats([*schemas, *others]), 64)
    return changed + rewritten


# a copy whose schemas name URLs, after a pass that changed nothing in it: the stat of each JSON file it read. Every
# render of a shared copy localizes it again, and each pass read and walked a library's whole schema (bjw-s common's
# 700 KB: 8 ms a render, 39 renders for timkrehan-immich) to change nothing
_SETTLED: dict[str, tuple[tuple[str, int, int, int], ...]] = {}


def _other_json(root: Path) -> list[Path]:
    """The JSON files under root other than values schemas (the files a schema's `$ref` may name)."""
    others = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        others += [Path(folder) / n for n in sorted(files) if n.endswith(".json") and n != "values.schema.json"]
    return others


def _stats(paths: list[Path]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            st = None
        out.append((str(path), st.st_ino, st.st_size, st.st_mtime_ns) if st else (str(path), 0, -1, 0))
    return tuple(out)


MAX_PACKED_DEPTH = 5  # archives inside archives: real charts pack one level, two for an umbrella's library
_packed_lock = threading.Lock()
_PACKED_CLEAN: set[tuple[str, int, int, int]] = set()  # archives of copies already seen with no outward reference


def _confine_packed(archive: Path) -> bool:
    """Rewrite, in place, a packed subchart of the copy whose schemas name anything but a fragment or a draft;
    whether it changed. Renders of one shared copy may run at once: one rewrites, the others then see it clean."""
    with _packed_lock:
        try:
            st = archive.stat()
            key = (str(archive), st.st_ino, st.st_size, st.st_mtime_ns)
            if key in _PACKED_CLEAN:
                return False
            data = _packed_without_refs(archive.read_bytes(), 0)
            if data is not None:
                fd, tmp = tempfile.mkstemp(dir=archive.parent, prefix=".", suffix=".dramigrate-tmp")
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(tmp, archive)
                st = archive.stat()
            _PACKED_CLEAN.add((str(archive), st.st_ino, st.st_size, st.st_mtime_ns))
            return data is not None
        except OSError:
            return False


def _packed_without_refs(data: bytes, depth: int) -> bytes | None:
    """The archive `data` with the outward references of its schemas dropped (and of the archives it packs, which
    Helm loads at any depth: past MAX_PACKED_DEPTH the chart is refused); None when none has one, or when the
    archive is past Helm's own bounds (the render then names it)."""
    from dramigrate.helm.sandbox import MAX_ARCHIVE_BYTES, MAX_MEMBER_BYTES, MAX_MEMBERS, ChartRefused

    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    changed = False
    total = 0
    try:
        with open_packed(fileobj=io.BytesIO(data)) as tar:
            for count, member in enumerate(tar, start=1):
                total += member.size
                if count > MAX_MEMBERS or total > MAX_ARCHIVE_BYTES or member.size > MAX_MEMBER_BYTES:
                    return None
                source = tar.extractfile(member) if member.isfile() else None
                content = source.read() if source is not None else None
                new = None
                if content is not None and member.name.endswith("values.schema.json"):
                    new = _schema_without_refs(content)
                elif (
                    content is not None and member.name.endswith(".tgz") and member.name.split("/")[-2:-1] == ["charts"]
                ):
                    if depth >= MAX_PACKED_DEPTH:
                        raise ChartRefused(
                            "chart-archive-limit",
                            f"not rendered: packed subcharts nested more than {MAX_PACKED_DEPTH} deep ({member.name})",
                        )
                    new = _packed_without_refs(content, depth + 1)
                if new is not None:
                    member.size, content, changed = len(new), new, True
                members.append((member, content))
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        return None
    if not changed:
        return None
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for member, content in members:
            tar.addfile(member, io.BytesIO(content) if content is not None else None)
    return out.getvalue()


def _schema_without_refs(content: bytes) -> bytes | None:
    """A packed schema's text with every `$id`, every `$ref` but a fragment and every `$schema` but a draft dropped;
    None when it has none (or is not JSON: Helm then names it)."""
    try:
        # as Helm reads a chart file: its UTF-8 byte-order mark dropped, bytes that are not UTF-8 taken (U+FFFD)
        text = content.decode("utf-8", errors="replace").removeprefix("\ufeff")
        if not _OUTWARD_KEY.search(text):
            return None
        doc = json.loads(text)
    except ValueError:
        return None
    for item, key, value in _references(doc):
        if not value.startswith(("#", *_DRAFTS)):
            del item[key]
    return json.dumps(doc).encode("utf-8")


def _references(node: Any) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(the mapping, its key, the URL) of every string `$id`, `$ref`, ... in a schema document, outermost first; the
    caller may replace or delete that key before the walk goes on into the mapping's values."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in _KEYS:
                value = item.get(key)
                if isinstance(value, str):
                    yield item, key, value
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _remote(paths: list[Path]) -> dict[Path, Any]:
    """The JSON documents among `paths` that name a remote `$id` or `$ref`, or a file or path."""
    docs: dict[Path, Any] = {}
    for path in paths:
        try:
            if path.stat().st_size > _MAX_BYTES:
                continue
            # as Helm reads a chart file: its UTF-8 byte-order mark dropped, and bytes that are not UTF-8 taken (each
            # U+FFFD, as Go's JSON reader does); either let the schema's references through unchecked
            text = path.read_text(encoding="utf-8", errors="replace").removeprefix("\ufeff")
        except (OSError, UnicodeDecodeError):
            continue
        if not _OUTWARD_KEY.search(text):  # most charts: nothing to do (a copy rendered again: only its own files)
            continue
        try:
            docs[path] = json.loads(text)
        except ValueError:
            continue
    return docs


def _rewrite(docs: dict[Path, Any], root: Path) -> int:
    folders: dict[str, Path] = {}  # remote folder URL (ends with /) -> local folder
    for path, doc in docs.items():
        url = doc.get("$id") if isinstance(doc, dict) else None
        if isinstance(url, str) and url.startswith(_REMOTE):
            folders[urldefrag(url).url.rsplit("/", 1)[0] + "/"] = path.parent
    changed = 0
    for path, doc in docs.items():
        if _localize(doc, folders, root.resolve(), path.resolve().as_uri()):
            # Renders of one shared copy may run at once: each writes a temp file of its own, each sees a whole file.
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".dramigrate-tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(doc))
            os.replace(tmp, path)
            changed += 1
    return changed


def _local(url: str, folders: dict[str, Path], top: Path) -> str | None:
    base, fragment = urldefrag(url)
    for prefix, folder in folders.items():
        if base.startswith(prefix):
            target = (folder / base[len(prefix) :]).resolve()
            if top in target.parents and target.is_file():
                return target.as_uri() + (f"#{fragment}" if fragment else "")
    return None


def _localize(node: Any, folders: dict[str, Path], top: Path, own: str) -> bool:
    """Each remote URL of one schema document (whose file is `own`) made local or harmless; whether any changed."""
    changed = False
    for item, key, value in _references(node):
        if value.startswith(("#", *_DRAFTS)):
            continue
        if not value.startswith(_REMOTE):
            changed |= _confine(item, key, value, node, top, own)
            continue
        local = _local(value, folders, top)
        if local is not None:
            item[key] = local
        elif key == "$id" and item is node:
            item[key] = own  # relative $refs read files beside it
        else:
            del item[key]  # not fetched: this part of the values goes unchecked
        changed = True
    return changed


def _confine(item: dict[str, Any], key: str, value: str, doc: Any, top: Path, own: str) -> bool:
    """A file URL or path of one schema (whose file is `own`): the absolute URL of its file when that is in the chart
    (`top`), else dropped (a nested `$id` too: every reference resolves against the document's own URL); whether
    item changed. Idempotent: a copy rendered again is not written again."""
    if key == "$id":
        if item is doc and value == own:
            return False
        if item is doc:
            item[key] = own
        else:
            del item[key]
        return True
    base = doc.get("$id") if isinstance(doc, dict) and str(doc.get("$id", "")).startswith("file:") else own
    url, fragment = urldefrag(urljoin(base, value))
    parsed = urlparse(url)
    target = Path(unquote(parsed.path)).resolve() if parsed.scheme == "file" else None
    if target is not None and top in target.parents and target.is_file():
        inside = target.as_uri() + (f"#{fragment}" if fragment else "")
        if inside == value:
            return False
        item[key] = inside
    else:
        del item[key]  # never read: this part of the values goes unchecked
    return True
