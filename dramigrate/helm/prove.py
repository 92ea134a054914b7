"""The proof's yardstick: renders compared as parsed objects, with the fields that change between two
renders of the same chart (random passwords, checksums) set aside.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.memo import remember

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


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The C loader, where a tag YAML does not know (`!!string`, `!custom`) reads as the node's plain value, as
    Kubernetes' decoder reads it (a chart that renders `value: !!string 8` stopped the proof with an internal error)."""


def _untagged(loader: Any, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_Loader.add_multi_constructor("", _untagged)
_LOADER = _Loader
# A line starting with `---` and a blank (or nothing) begins a document wherever it stands (YAML forbids it inside
# a scalar), so a stream is its documents read one `---` at a time.
_DOCUMENT_START = re.compile(r"^(?=---(?:[ \t]|$))", re.MULTILINE)
_DOCUMENTS: dict[str, list[Any]] = {}  # the text from one `---` to the next -> its documents (read-only)
_DOCUMENTS_MAX = 20000


def documents(text: str) -> Iterable[Any]:
    """The documents of a rendered stream as the C loader builds them (YAML 1.1, as Kubernetes reads it). Shared:
    never change them. A proof reads the same documents in dozens of renders; each text is parsed once. A stream
    that does not parse is read as one stream as before (the documents before the error, then the error)."""
    out: list[Any] = []
    for part in _DOCUMENT_START.split(text):
        docs = _DOCUMENTS.get(part)
        if docs is None:
            try:
                docs = _bounded(list(yaml.load_all(part, Loader=_LOADER)))
            except yaml.YAMLError:
                return yaml.load_all(text, Loader=_LOADER)
            remember(_DOCUMENTS, part, docs, _DOCUMENTS_MAX)
        out.extend(docs)
    return out


@dataclass(frozen=True)
class RepeatedKey:
    """A key one mapping of a rendered stream writes twice: Helm keeps the later value, whole, and drops the first
    without a word (documents.helm_constructor says how Helm reads it); the chart has a bug its maintainer should
    know of, and other readers of the render (Flux's helm-controller, kustomize's Helm support) refuse it."""

    key: str
    line: int  # 1-based line of the stream that writes it again (the value Helm keeps)
    first: int  # the line of the first one (the value Helm drops)
    where: str  # the object and the mapping: `Deployment/whisper spec.template.spec.containers[0]`


def repeated_keys(text: str) -> list[RepeatedKey]:
    """The keys a mapping of a rendered stream repeats, in stream order ([] when the stream does not parse: that
    error is said where the stream is read). Read from the parser's events: composing the nodes took five times
    as long (0.2 s a MB)."""
    out: list[RepeatedKey] = []
    try:
        for doc in _event_documents(text):
            out.extend(_repeats_of(doc))
    except yaml.YAMLError:
        return []
    return out


def new_repeats(stream: str, before: str) -> str:
    """The first key a mapping of the rewritten render `stream` writes twice where the original render `before`
    does not ('' when none): Helm and the proof's reader keep the last one, so the comparison cannot see that the
    first is dropped, while strict readers (`kubectl apply --server-side`, Flux) refuse the render."""
    found = repeated_keys(stream)
    if not found:
        return ""
    known = Counter((r.where, r.key) for r in repeated_keys(before))
    for r in found:
        if known[r.where, r.key] > 0:
            known[r.where, r.key] -= 1
            continue
        return f"line {r.line}: {r.where}: `{r.key}:` is written twice in one mapping (first at line {r.first})"
    return ""


def new_duplicates(new: list[Any], before: list[Any]) -> str:
    """The first object (kind, namespace, name) the rewritten render writes more often than the original render does
    ('' when none), with the templates that write it: `manifests` of each, as render_chart gives them. Helm creates
    each document of a release and fails on the second one of a name (`already exists`), while the proof's
    comparison reads claim templates alike as one (canonical_claims)."""
    found = _sources_by_object(new)
    if not found:
        return ""
    known = _sources_by_object(before)
    for (kind, namespace, name), sources in found.items():
        had = len(known.get((kind, namespace, name), []))
        if len(sources) > max(1, had):
            where = f"{namespace}/{name}" if namespace else name
            users = _claiming(new, name)
            by = f", for the pods of {', '.join(users)}" if users else ""
            return (
                f"{kind} {where} is rendered {len(sources)} times ({', '.join(dict.fromkeys(sources))}{by}): Helm "
                "creates each document of a release and fails on the second of one name (`already exists`), where "
                f"the original renders it {'once' if had == 1 else 'not at all'} (workloads of one name in several "
                "templates asking for the same devices: rename one, or fix the chart by hand)"
            )
    return ""


def _claiming(manifests: list[Any], template: str) -> list[str]:
    """The objects (`Kind/name (template)`) of rendered manifests whose pods take claims from the claim template
    named `template`."""

    def uses(node: Any) -> bool:
        if isinstance(node, dict):
            return node.get("resourceClaimTemplateName") == template or any(uses(v) for v in node.values())
        return isinstance(node, list) and any(uses(v) for v in node)

    def named(meta: dict[str, Any]) -> Any:
        return meta.get("name") or meta.get("generateName")  # a Job created again and again: its prefix

    return [
        f"{doc.get('kind')}/{named(doc.get('metadata') or {})} ({source})"
        for source, doc in _documents_by_source(manifests)
        if isinstance(doc, dict) and doc.get("kind") != "ResourceClaimTemplate" and uses(doc)
    ]


def _documents_by_source(manifests: list[Any]) -> Iterator[tuple[str, Any]]:
    """Each document of the rendered manifests with its template; a manifest that does not parse is skipped (the
    proof reports it elsewhere)."""
    for m in manifests:
        try:
            docs = list(documents(m.text))
        except yaml.YAMLError:
            continue
        for doc in docs:
            yield m.source, doc


def _sources_by_object(manifests: list[Any]) -> dict[tuple[str, str, str], list[str]]:
    out: dict[tuple[str, str, str], list[str]] = {}
    for source, doc in _documents_by_source(manifests):
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if isinstance(meta, dict) and meta.get("name"):
            key = (str(doc.get("kind", "")), str(meta.get("namespace") or ""), str(meta["name"]))
            out.setdefault(key, []).append(source)
    return out


def _event_documents(text: str) -> Iterator[list[Any]]:
    events: list[Any] = []
    for event in yaml.parse(text, Loader=_LOADER):
        events.append(event)
        if isinstance(event, yaml.DocumentEndEvent):
            yield events
            events = []


class _Frame:
    """An open collection while a document's events are read."""

    __slots__ = ("at", "is_key", "is_map", "key_next", "keys")

    def __init__(self, is_map: bool, is_key: bool = False) -> None:
        self.is_map = is_map
        self.is_key = is_key  # a complex key (`? [a]`): once read, its mapping reads the value
        self.keys: dict[str, int] = {}  # a mapping's keys so far -> the line of each
        self.at: Any = 0  # the path part of the value being read: its key, or its index
        self.key_next = is_map

    def value_read(self) -> None:
        if self.is_map:
            self.key_next = True
        else:
            self.at += 1


def _repeats_of(events: list[Any]) -> list[RepeatedKey]:
    """The repeated keys of one document's events, with the object's kind and name and the mapping's path."""
    found: list[tuple[str, int, int, str]] = []
    names: dict[str, str] = {}  # kind and metadata.name
    frames: list[_Frame] = []
    for event in events:
        top = frames[-1] if frames else None
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            if not frames.pop().is_key and frames:
                frames[-1].value_read()
            continue
        opens = isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
        if top is not None and top.key_next:
            if isinstance(event, yaml.ScalarEvent) and not (event.value == "<<" and event.implicit[0]):  # no merge
                line = event.start_mark.line + 1
                if event.value in top.keys:
                    path = "".join(f".{f.at}" if f.is_map else f"[{f.at}]" for f in frames[:-1])
                    found.append((event.value, line, top.keys[event.value], path.lstrip(".")))
                top.keys.setdefault(event.value, line)
            top.at, top.key_next = getattr(event, "value", "?"), False
            if opens:
                frames.append(_Frame(isinstance(event, yaml.MappingStartEvent), is_key=True))
        elif opens:
            frames.append(_Frame(isinstance(event, yaml.MappingStartEvent)))
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)) and top is not None:
            if isinstance(event, yaml.ScalarEvent) and len(frames) <= 2:
                where = ".".join(str(f.at) for f in frames)
                if where in ("kind", "metadata.name"):
                    names[where] = event.value
            top.value_read()
    what = "/".join(n for n in (names.get("kind"), names.get("metadata.name")) if n)
    return [RepeatedKey(key, line, first, f"{what} {where}".rstrip()) for key, line, first, where in found]


def load_all(text: str) -> list[Any]:
    """The documents of a text as the C loader builds them, the caller's own to change (documents() shares them)."""
    return _bounded(list(yaml.load_all(text, Loader=_LOADER)))


def _bounded(docs: list[Any]) -> list[Any]:
    """docs, unless their aliases expand past what a manifest may hold: a template that renders an alias bomb
    (nine aliases of nine aliases ...) rendered in a few seconds, then the proof's comparison expanded it for
    minutes. Helm renders it as text; the chart is bad input, named, and the other files go on."""
    from dramigrate.documents import MAX_NODES
    from dramigrate.limits import expands_within

    if not expands_within(docs, MAX_NODES):
        raise InputError(
            f"a rendered document expands past {MAX_NODES:,} values through its YAML aliases (an alias bomb); "
            "the chart is not checked further"
        )
    return docs


def objects(text: str) -> dict[ObjKey, list[Any]]:
    """The objects of a rendered stream by (apiVersion, kind, namespace, name); YAML 1.1 as Kubernetes reads it."""
    out: dict[ObjKey, list[Any]] = {}
    for doc in documents(text):
        if isinstance(doc, dict):
            out.setdefault(object_key(doc), []).append(_plain(doc))
    for docs in out.values():
        docs.sort(key=lambda d: json.dumps(d, sort_keys=True, default=str))
    return out


def object_key(doc: dict[str, Any]) -> ObjKey:
    """A rendered object's (apiVersion, kind, namespace, name), its generateName when it has no name: how the proof
    pairs the objects of two renders."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return (
        str(doc.get("apiVersion", "")),
        str(doc.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or meta.get("generateName") or ""),
    )


_RANDOM_NAME = "random-name|"  # an ignore entry: a name pattern whose random part is not compared


def _random_part(x: str, y: str) -> str:
    """`prefix|length|suffix` of two object names that differ in one alphanumeric run of the same length
    (`job-pehpa` and `job-x2kqz`: randAlphaNum in a name), else ''."""
    if len(x) != len(y) or x == y:
        return ""
    start = next(i for i, (c, d) in enumerate(zip(x, y, strict=True)) if c != d)
    end = len(x) - next(i for i, (c, d) in enumerate(zip(reversed(x), reversed(y), strict=True)) if c != d)
    while start and x[start - 1].isalnum():
        start -= 1
    while end < len(x) and x[end].isalnum():
        end += 1
    if not start or end - start < 3 or not (x[start:end].isalnum() and y[start:end].isalnum()):
        return ""
    return f"{x[:start]}|{end - start}|{x[end:]}"


def _unrandom(objs: dict[ObjKey, list[Any]], patterns: list[str]) -> dict[ObjKey, list[Any]]:
    """The objects with the random part of each name that matches a pattern (and every other occurrence of that
    text: labels, claim template names) replaced by `*`s, so two renders with their own random names compare."""
    tokens: set[str] = set()
    for key in objs:
        for pattern in patterns:
            prefix, length, suffix = pattern.split("|")
            m = re.fullmatch(re.escape(prefix) + f"([A-Za-z0-9]{{{length}}})" + re.escape(suffix), key[3])
            if m:
                tokens.add(m.group(1))
    if not tokens:
        return objs

    def mask(node: Any) -> Any:  # in strings only: a token of digits inside a number (port 8482) is no name
        if isinstance(node, str):
            for token in tokens:
                node = node.replace(token, "*" * len(token))
            return node
        if isinstance(node, dict):
            return {mask(k): mask(v) for k, v in node.items()}
        if isinstance(node, list):
            return [mask(v) for v in node]
        return node

    out: dict[ObjKey, list[Any]] = {}
    for key, docs in objs.items():
        out.setdefault(tuple(mask(list(key))), []).extend(mask(docs))
    return out


def random_names(a: dict[ObjKey, list[Any]], b: dict[ObjKey, list[Any]]) -> list[str]:
    """The name patterns (`prefix|length|suffix`) of objects one render names with a random part and the other with
    another (`job-{{ randAlphaNum 5 }}`): paired by the rest of their name."""
    out: dict[str, None] = {}
    only_a = sorted(k for k in a if k not in b)
    only_b = sorted(k for k in b if k not in a)
    for x, y in zip(only_a, only_b, strict=False):
        if x[:3] == y[:3] and (pattern := _random_part(x[3], y[3])):
            out[pattern] = None
    return list(out)


def unrandom_pair(
    a: dict[ObjKey, list[Any]], b: dict[ObjKey, list[Any]]
) -> tuple[dict[ObjKey, list[Any]], dict[ObjKey, list[Any]]]:
    """Two renders' objects with the random part of their names masked (random_names), so they pair by key."""
    patterns = random_names(a, b)
    return (_unrandom(a, patterns), _unrandom(b, patterns)) if patterns else (a, b)


def volatile(a: dict[ObjKey, list[Any]], b: dict[ObjKey, list[Any]]) -> set[str]:
    """Where two renders of the same chart with the same values differ (random passwords, checksums of
    them): `<key>` for whole objects, `<key>|<path>` for fields. The proof does not compare those. Objects named
    with a random part (`job-{{ randAlphaNum 5 }}`) are paired by the rest of their name: a `random-name|` entry
    tells first_difference to compare them so."""
    patterns = random_names(a, b)
    out = {_RANDOM_NAME + p for p in patterns}
    if patterns:
        a, b = _unrandom(a, patterns), _unrandom(b, patterns)
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
    patterns = [p[len(_RANDOM_NAME) :] for p in ignore if p.startswith(_RANDOM_NAME)]
    if patterns:
        expected, actual = _unrandom(expected, patterns), _unrandom(actual, patterns)
    for key in sorted(set(expected) | set(actual)):
        if repr(key) in ignore:
            continue
        e, a = expected.get(key), actual.get(key)
        what = f"{key[1]} {key[2] + '/' if key[2] else ''}{_object_name(key[3])}"
        if e is None or a is None:
            other = expected if e is None else actual
            moved = next((k for k in other if k[:2] == key[:2] and k[3] == key[3] and k[2] != key[2]), None)
            if moved is not None:  # the object is there, in another namespace: name both (the tool's own keys)
                want, got = (moved, key) if e is None else (key, moved)
                return (
                    f"{key[1]} {_object_name(key[3])}: migrating the original rendering puts it in namespace "
                    f"{json.dumps(want[2])}, the rewritten chart in namespace {json.dumps(got[2])}"
                )
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


CLAIM_TEMPLATE = "claim-template:"  # canonical_claims names a ResourceClaimTemplate by its spec, after this


def _object_name(name: str) -> str:
    """An object's name in a message; a claim template named by its spec (canonical_claims) by its requests, not
    the spec quoted whole."""
    if not name.startswith(CLAIM_TEMPLATE):
        return name
    found: list[str] = []

    def requests(node: Any) -> None:
        if isinstance(node, dict):
            items = node.get("requests")
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict):
                    one = item.get("exactly") if isinstance(item.get("exactly"), dict) else item
                    found.append(f"{item.get('name')} ({one.get('deviceClassName', 'first available')})")
            for v in node.values():
                requests(v)

    requests(json.loads(name[len(CLAIM_TEMPLATE) :]))
    return f"(the claim template of request {', '.join(found)})" if found else "(a claim template)"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def without_api_defaults(spec: Any) -> Any:
    """A copy of a ResourceClaimTemplate's spec (`{spec: {devices: ...}}`) or of a claim spec (`{devices: ...}`)
    without `allocationMode: ExactCount`, the API's default: the migration writes it out, a chart's values and
    templates leave it to the API (one line less in each claim template a maintainer reads); both ask alike."""
    out = json.loads(json.dumps(spec, default=str))
    claim = out.get("spec", out) if isinstance(out, dict) else None
    devices = claim.get("devices") if isinstance(claim, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    for req in requests if isinstance(requests, list) else []:
        if not isinstance(req, dict):
            continue
        subs = req.get("firstAvailable")
        for sub in [req.get("exactly", req), *(subs if isinstance(subs, list) else [])]:
            if isinstance(sub, dict) and sub.get("allocationMode") == "ExactCount":
                del sub["allocationMode"]
    return out


def canonical_claims(objs: dict[ObjKey, list[Any]]) -> dict[ObjKey, list[Any]]:
    """ResourceClaimTemplates named by their content: the chart names them with its own name helper, the
    manifest migration with the workload's name; both end in a hash of the spec. The pods' references follow.
    Templates alike in everything but the name are one: each pod gets its own claim from a template, so the
    migration's template per Deployment of a `range` and the chart's one template for all of them ask the same.
    The API's defaults are left out of both (without_api_defaults)."""
    renames: dict[str, str] = {}
    out: dict[ObjKey, list[Any]] = {}
    for key, docs in objs.items():
        if key[1] == "ResourceClaimTemplate":
            for doc in docs:
                doc = json.loads(json.dumps(doc, default=str))
                doc["spec"] = without_api_defaults(doc.get("spec"))  # the migration's spells out the defaults
                content = CLAIM_TEMPLATE + json.dumps(doc["spec"], sort_keys=True, default=str)
                renames[key[3]] = content
                doc["metadata"]["name"] = content
                same = out.setdefault((key[0], key[1], key[2], content), [])
                if doc not in same:
                    same.append(doc)
        else:
            out[key] = docs
    if not renames:
        return out

    def follow(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (renames.get(v, v) if k == "resourceClaimTemplateName" and isinstance(v, str) else follow(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [follow(v) for v in node]
        return node

    return {k: [_whole_claims(follow(d)) for d in docs] for k, docs in out.items()}


def _whole_claims(node: Any, singles: dict[str, str] | None = None) -> Any:
    """A document whose containers name the one request of a pod claim (`claims: [{name: gpu, request: gpu}]`)
    as they would name the claim whole (`[{name: gpu}]`): a container given a claim gets all its requests, so with
    one request the two are alike (the migration names the request where an init container shares the claim with
    the main one, and not where the main one has it alone; a rewrite written for one case renders the other).
    `singles`: in a pod spec, each pod claim from a template of this render with one request, to that request."""
    if isinstance(node, list):
        return [_whole_claims(v, singles) for v in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("resourceClaims"), list):
        singles = {}
        for claim in node["resourceClaims"]:
            name = claim.get("resourceClaimTemplateName") if isinstance(claim, dict) else None
            if isinstance(name, str) and name.startswith(CLAIM_TEMPLATE):
                requests = (json.loads(name[len(CLAIM_TEMPLATE) :]) or {}).get("spec", {}).get("devices", {})
                listed = requests.get("requests") if isinstance(requests, dict) else None
                if isinstance(listed, list) and len(listed) == 1 and isinstance(listed[0], dict):
                    singles[str(claim.get("name"))] = str(listed[0].get("name"))
    out = {k: _whole_claims(v, singles) for k, v in node.items()}
    claims = out.get("claims")
    if singles and isinstance(claims, list):
        out["claims"] = [
            {k: v for k, v in c.items() if k != "request"}
            if isinstance(c, dict) and "request" in c and singles.get(str(c.get("name"))) == c["request"]
            else c
            for c in claims
        ]
    return out


def line_change(before: str, after: str) -> str:
    """How a rendered line changed, in words a user can act on: the two texts, and where they differ only in
    spaces (which a quoted text shown stripped would hide), which spaces."""
    if before.strip() != after.strip():
        return f"{before.strip()!r} became {after.strip()!r}"
    if before.rstrip() != after.rstrip():
        indent = len(before) - len(before.lstrip())
        now = len(after) - len(after.lstrip())
        return f"{before.strip()!r} is indented by {now} spaces instead of {indent}"
    end = len(before) - len(before.rstrip())
    now = len(after) - len(after.rstrip())
    why = f"{before.lstrip()!r} became {after.lstrip()!r}: the line ends in {now} space(s) instead of {end}"
    if now < end:  # a `{{-` the rewrite wrote after the line: the chart loses nothing without those spaces
        why += " (a `{{-` trim of the rewrite takes them: without the spaces at that template line's end it does not)"
    return why


def _documents_of(text: str) -> list[str]:
    """A template's rendered documents, in order, as Helm's `---` lines part them (blank ones left out)."""
    return [d.strip("\n") for d in re.split(r"(?m)^---[ \t]*$", text) if d.strip()]


def _sorted_documents(manifests: list[Any]) -> dict[str, list[str]]:
    """Each template's rendered documents (_documents_of), sorted: Helm gives a template's documents one manifest each,
    or one manifest holds several (a `---` a define writes inside a line of text)."""
    out: dict[str, list[str]] = {}
    for m in manifests:
        out.setdefault(m.source, []).extend(_documents_of(m.text))
    return {source: sorted(docs) for source, docs in out.items()}


def same_text(original: list[Any], again: list[Any], new: list[Any], unordered: bool = False) -> str:
    """'' when the rewritten chart's manifests are byte-identical to the original chart's (lines that
    differ between two renders of the original, random values, are masked); else the first difference. `unordered`:
    the chart ranges over map keys unsorted (sprig's `keys`, bjw-s common's objects), so its own renders order one
    template's documents differently each time: a template whose documents are byte-identical in another order is
    the same."""
    if [m.source for m in new] != [m.source for m in original]:
        extra = sorted({m.source for m in new} ^ {m.source for m in original})
        before, after = Counter(m.source for m in original), Counter(m.source for m in new)
        if not extra and before != after:  # a template renders one more document (a claim template)
            more = next(source for source in after if after[source] != before[source])
            return f"{more} renders {before[more]} document(s) before, {after[more]} after"
        return f"the templates rendered differ: {', '.join(extra) or 'their order'}"
    if unordered and _sorted_documents(original) == _sorted_documents(new):
        return ""
    for a, b, c in zip(original, again, new, strict=False):
        if a.text == c.text:
            continue
        la, lb, lc = a.text.splitlines(), b.text.splitlines(), c.text.splitlines()
        if len(la) != len(lc) or len(la) != len(lb):
            return f"{a.source}: {len(la)} lines before, {len(lc)} after"
        for n, (x, y, z) in enumerate(zip(la, lb, lc, strict=False), start=1):
            if x != z and x == y:
                return f"{a.source}:{n}: {line_change(x, z)}"
        if a.text.endswith("\n") != c.text.endswith("\n"):
            return f"{a.source}: the final newline differs"
    return ""


def strict_errors(stream: str, versions: tuple[str, ...], before: str = "") -> str:
    """The first strict-schema error of the rendered ResourceClaimTemplates and built-in workloads (each object
    checked once per version: the value sets of a proof render mostly the same objects). `before`: the original
    chart's render; an error its same object has there too (a field the chart misspells upstream) is the chart's,
    not the rewrite's, and is left out. So an object `before` holds exactly as it is (the same kind and name, the
    same JSON, keys in their order) is not validated at all: its errors are a function of that JSON alone, so each
    would be the original's and left out (most objects of a rewritten render are ones the rewrite does not touch:
    a chart's Services and ConfigMaps, its other workloads)."""
    kept = _as_json(before) if before else frozenset()
    known: set[tuple[str, str]] | None = None  # read only when the rewritten render has an error
    for where, error in _strict_errors(stream, versions, kept):
        if before and known is None:
            known = set(_strict_errors(before, versions))
        if known is None or (where, error) not in known:
            return f"{where}: {error}"
    return ""


_CHECKED_KINDS = ("resource.k8s.io", "apps", "batch", "v1")  # the API groups strict_errors validates


def _checked_objects(stream: str) -> Iterator[dict[str, Any]]:
    """The objects of a render strict_errors validates, as plain data."""
    for doc in documents(stream):
        if isinstance(doc, dict) and str(doc.get("apiVersion", "")).split("/")[0] in _CHECKED_KINDS:
            yield _plain(doc)


def _as_json(stream: str) -> frozenset[str]:
    """The JSON of each object of a render strict_errors validates (validate.object_json)."""
    from dramigrate.validate import object_json

    return frozenset(text for obj in _checked_objects(stream) if (text := object_json(obj)) is not None)


def _strict_errors(
    stream: str, versions: tuple[str, ...], kept: frozenset[str] = frozenset()
) -> Iterator[tuple[str, str]]:
    """Each object's strict-schema errors for each version, but for the objects whose JSON is in `kept`."""
    from dramigrate.validate import object_json, schema_errors

    for plain in _checked_objects(stream):
        if kept and object_json(plain) in kept:
            continue
        for version in versions:
            errors = schema_errors(plain, version)  # checked once per object and version (validate.py keeps them)
            where = f"{plain.get('kind')}/{(plain.get('metadata') or {}).get('name')} for Kubernetes {version}"
            for error in errors:
                yield where, error


# Maps the API reads the same empty as absent: a container's `resources` is a value (not a pointer) in the API, and
# its `limits`/`requests` are maps, so `resources: {limits: null}`, `resources: {}` and no `resources` are one.
_EMPTY_IS_ABSENT = frozenset({"resources", "limits", "requests"})


def without_nulls(objs: dict[ObjKey, list[Any]]) -> dict[ObjKey, list[Any]]:
    """Objects with null-valued keys dropped: the API server reads `limits:` with nothing under it as no
    `limits` at all, as the migration writes it; and a `resources` map left empty so (count 0 with the
    device key the only limit) as no `resources` at all."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items() if v is not None}
            return {k: v for k, v in out.items() if not (k in _EMPTY_IS_ABSENT and v == {})}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return {k: [strip(d) for d in docs] for k, docs in objs.items()}
