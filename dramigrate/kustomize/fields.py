"""Device fields in kustomize patches, components and replacements, with the line that sets each (no build)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.kustomize.graph import BINARY_READ, Kustomization, Patch, binary_node, excessive_aliasing, under
from dramigrate.limits import check_structure, read_regular
from dramigrate.rules import RuleSet

SECTIONS = ("limits", "requests")
UNREAD = "kustomize-unproven"  # the rule of a text the scan does not read (an alias bomb): its graph is left
# what an object is: a build that writes either turns an object dramigrate read as another kind (or as nothing it
# knows, `kind: Podx` asking for a GPU) into a workload; DeviceField.path names the field so written
IDENTITY = ("kind", "apiVersion")
_KEY = re.compile(r"([a-z0-9][-a-z0-9.]*\.[a-z]{2,}/[-\w.]+)")


def is_identity(segments: list[str]) -> bool:
    """The field path (split) is the object's kind or apiVersion."""
    return len(segments) == 1 and segments[0] in IDENTITY


@dataclass(frozen=True)
class DeviceField:
    """A device count, a device resource or a hardware-pinning node label a patch or replacement sets."""

    path: str  # the field, e.g. spec.template.spec.containers[name=c].resources.limits.nvidia.com/gpu
    line: int  # 1-based, in the patch file (or the kustomization for inline patches)
    what: str  # the resource or label key
    value: Any = None
    label: bool = False  # a node label rather than a device resource
    # (kind, namespace, name) of what the patch changes: its document's own, else its entry's `target` (a name regex,
    # with the selectors it gives); what a baseline matches a patch's finding by, beside the container
    target: tuple[str, str, str] = ("", "", "")


def device_key(key: str, rules: RuleSet) -> bool:
    return rules.is_device_candidate(key) and rules.lookup(key) is not None


def _compose_all(text: str) -> list[yaml.Node]:
    """The patch's documents; InputError for one whose aliases expand to nearly all it holds (a YAML alias bomb),
    which the walk for device fields would follow copy by copy (2^29 of them in a 35-line patch), or that nests
    past the limit (rule kustomize-unproven: the graph is left); and bad input for a value written as !!binary
    (kustomize reads `path: !!binary L3NwZWMv...` as the path it encodes), at its line in the text."""
    try:
        check_structure("", text)  # hundreds of nested collections, which the composer recurses into: named
    except InputError as exc:
        raise InputError(f"values {exc.message}, and nothing of its graph is written", rule=UNREAD) from exc
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
    except yaml.YAMLError:
        return []
    if "*" in text and any(excessive_aliasing(n) for n in nodes):
        raise InputError(
            "aliases that expand to nearly every value of it (a YAML alias bomb): not read, and nothing of its "
            "graph is written (migrate it by hand)",
            rule=UNREAD,
        )
    binary = next((b for n in nodes if (b := binary_node(n)) is not None), None) if "!" in text else None
    if binary is not None:
        raise InputError(f"a value written as !!binary, {BINARY_READ}", line=binary.start_mark.line + 1)
    return nodes


def _documents(text: str) -> list[Any]:
    """The documents of a configuration file as data ([] when it does not parse); InputError for an alias bomb
    (_compose_all): its lists of aliased lists would be looped over copy by copy."""
    loader = yaml.SafeLoader("")
    try:
        return [loader.construct_document(n) for n in _compose_all(text)]
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return []
    finally:
        loader.dispose()


def _scalar(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else ""


def _walk(node: yaml.Node, path: str, parent_key: str, rules: RuleSet, out: list[DeviceField]) -> None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = _scalar(k)
            sub = f"{path}.{key}" if path else key
            if parent_key in SECTIONS and device_key(key, rules):
                out.append(DeviceField(sub, k.start_mark.line + 1, key, _scalar(v) or None))
            elif parent_key == "nodeSelector" and key in rules.labels:
                out.append(DeviceField(sub, k.start_mark.line + 1, key, _scalar(v) or None, label=True))
            elif key == "key" and parent_key == "matchExpressions" and _scalar(v) in rules.labels:
                out.append(DeviceField(f"{path}[key={_scalar(v)}]", k.start_mark.line + 1, _scalar(v), label=True))
            else:
                _walk(v, sub, key if parent_key != "matchExpressions" else parent_key, rules, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            label = ""
            if isinstance(item, yaml.MappingNode):
                label = next((_scalar(v) for k, v in item.value if _scalar(k) == "name"), "")
            _walk(item, f"{path}[{f'name={label}' if label else i}]", parent_key, rules, out)


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


def _json6902(nodes: list[yaml.Node], rules: RuleSet, out: list[DeviceField]) -> None:
    for node in nodes:
        if not isinstance(node, yaml.SequenceNode):
            continue
        for op in node.value:
            if not isinstance(op, yaml.MappingNode):
                continue
            fields = {_scalar(k): (k, v) for k, v in op.value}
            if "path" not in fields:
                continue
            path = _scalar(fields["path"][1])
            segments = [_unescape(s) for s in path.split("/")[1:]]
            line = op.start_mark.line + 1
            value = fields.get("value")
            last = segments[-1] if segments else ""
            where = ".".join(segments)
            if device_key(last, rules) and any(s in SECTIONS for s in segments):
                out.append(DeviceField(where, line, last, _scalar(value[1]) if value else None))
            elif last in rules.labels and "nodeSelector" in segments:
                out.append(DeviceField(where, line, last, _scalar(value[1]) if value else None, label=True))
            elif value is not None:
                inner: list[DeviceField] = []
                _walk(value[1], where, last, rules, inner)
                for f in inner:
                    out.append(DeviceField(f.path, line, f.what, f.value, f.label))


def copied_fields(patch: Patch) -> list[DeviceField]:
    """The JSON6902 `copy` and `move` operations of a patch that put a whole value where it may bring a device request
    (_takes_requests: a resources section, a container, a pod spec): it comes from elsewhere in the object (its
    labels `{nvidia.com/gpu: "2"}`) and the patch text names no device; and any operation but `test` on the
    object's `kind` or `apiVersion` (path: one of IDENTITY), which makes another kind of it. Lines are in
    `patch.where`."""
    out: list[DeviceField] = []
    for node in _compose_all(patch.text) if patch.json6902 else []:
        for op in node.value if isinstance(node, yaml.SequenceNode) else []:
            fields = {_scalar(k): _scalar(v) for k, v in op.value} if isinstance(op, yaml.MappingNode) else {}
            segments = [_unescape(s) for s in fields.get("path", "").split("/")[1:]]
            line = op.start_mark.line + patch_text_line(patch)
            if fields.get("op") in ("copy", "move") and "path" in fields and _takes_requests(segments):
                what = f"{segments[-1] if segments else 'the object'} (a {fields['op']} from {fields.get('from', '')})"
                out.append(DeviceField(".".join(segments), line, what))
            elif fields.get("op") != "test" and is_identity(segments):
                out.append(
                    DeviceField(segments[0], line, f"a {fields.get('op')} of /{segments[0]}", fields.get("value"))
                )
    return out


def kind_changing(k: Kustomization, patch: Patch) -> bool:
    """The patch entry lets its strategic-merge patch write the kind of what it patches (`options:
    {allowKindChange: true}`), which kustomize then does."""
    entries = k.data.get(patch.key)
    entry = entries[patch.index] if isinstance(entries, list) and patch.index < len(entries) else None
    options = entry.get("options") if isinstance(entry, dict) else None
    return isinstance(options, dict) and options.get("allowKindChange") not in (None, False, "false")


def target_kind(patch: Patch) -> str | None:
    """The kind a patch's target selects when it names one plainly (kustomize reads it as a regular expression:
    None for one that may match other kinds, and for no kind at all)."""
    kind = (patch.target or {}).get("kind")
    return kind if isinstance(kind, str) and re.fullmatch(r"[A-Za-z0-9]+", kind) else None


def object_kinds(text: str) -> set[str] | None:
    """The kinds of a manifest's objects and of the items of its lists, as written; None when one of its documents
    or items is not a mapping with a plain kind (InputError for an alias bomb, as _compose_all)."""
    out: set[str] = set()
    todo = list(_compose_all(text))
    while todo:
        node = todo.pop()
        if not isinstance(node, yaml.MappingNode):
            return None
        fields = {_scalar(k): v for k, v in node.value}
        kind = fields.get("kind")
        if not isinstance(kind, yaml.ScalarNode) or kind.tag != "tag:yaml.org,2002:str":
            return None
        out.add(str(kind.value))
        items = fields.get("items")
        if isinstance(items, yaml.SequenceNode):
            todo.extend(items.value)
    return out


CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
POD_HOLDERS = (*CONTAINER_LISTS, "spec", "template", "jobTemplate")


def _takes_requests(segments: list[str]) -> bool:
    """A JSON pointer (split) where a whole value put there may bring device requests: a resources section, a
    container, a container list, a pod spec or template, or the object itself (a `move` from a field of the object
    Kubernetes would drop, `spec.spare: [{... nvidia.com/gpu: 2}]`, into `spec.containers`)."""
    if not segments:
        return True
    last = segments[-1]
    return (
        last in (*SECTIONS, "resources", *POD_HOLDERS)
        or len(segments) > 1
        and segments[-2] in CONTAINER_LISTS
        and (last.isdigit() or last == "-")
    )


def patch_fields(patch: Patch, rules: RuleSet) -> list[DeviceField]:
    """Device fields the patch sets; lines are in `patch.where`."""
    out: list[DeviceField] = []
    nodes = _compose_all(patch.text)
    target = _target(patch.target)
    if patch.json6902:
        _json6902(nodes, rules, out)
        out = [replace(f, target=target) for f in out]
    else:
        for node in nodes:
            found: list[DeviceField] = []
            _walk(node, "", "", rules, found)
            own = _identity(node)
            identity = (own[0] or target[0], own[1] or target[1], own[2] or target[2])
            out.extend(replace(f, target=identity) for f in found)
    offset = patch_text_line(patch) - 1
    return [replace(f, line=f.line + offset) for f in out]


def _target(target: dict[str, Any] | None) -> tuple[str, str, str]:
    """(kind, namespace, name) a patch entry's `target` selects; its label and annotation selectors follow the name."""
    t = target or {}
    name = " ".join(
        [str(t.get("name") or ""), *(f"{s}={t[s]}" for s in ("labelSelector", "annotationSelector") if t.get(s))]
    )
    return str(t.get("kind") or ""), str(t.get("namespace") or ""), name.strip()


def _identity(node: yaml.Node) -> tuple[str, str, str]:
    """(kind, namespace, name) a strategic-merge patch document names for itself ("" where it names none)."""
    top = {_scalar(k): v for k, v in node.value} if isinstance(node, yaml.MappingNode) else {}
    meta = top.get("metadata")
    fields = {_scalar(k): _scalar(v) for k, v in meta.value} if isinstance(meta, yaml.MappingNode) else {}
    return _scalar(top["kind"]) if "kind" in top else "", fields.get("namespace", ""), fields.get("name", "")


_CONTAINER = re.compile(r"(?:^|\.)((?:init|ephemeral)?[cC]ontainers)(?:\[name=([^\]]*)\]|\[(\d+)\]|\.(\d+|-))")


def container_of(path: str) -> str:
    """The container a device field's path reaches: its name, or its list and position (`containers[0]`, and
    `containers[-]` for a JSON6902 append) where the path names none; "" for a field of no container."""
    m = _CONTAINER.search(path)
    if m is None:
        return ""
    return m.group(2) if m.group(2) is not None else f"{m.group(1)}[{m.group(3) or m.group(4)}]"


def patch_text_line(patch: Patch) -> int:
    """The line where the patch text starts in `patch.where`: 1 for a file, the line after `patch: |` inline."""
    if patch.file is not None:
        return 1
    first = next((ln.strip() for ln in patch.text.splitlines() if ln.strip()), "")
    try:
        lines = patch.owner.read_text(encoding="utf-8").splitlines()
    except OSError:
        return patch.line
    for i in range(patch.line - 1, len(lines)):
        if lines[i].strip() == first:
            return i + 1 - next(j for j, ln in enumerate(patch.text.splitlines()) if ln.strip())
    return patch.line


def replacement_fields(k: Kustomization, rules: RuleSet) -> list[DeviceField]:
    """Replacements whose source or target field path reaches a device resource or a device label."""
    return _replacement_paths(k, k.data.get("replacements"), rules, k.line_of("replacements"))


def _replacement_paths(
    k: Kustomization, entries: Any, rules: RuleSet, line: int, files: bool = True
) -> list[DeviceField]:
    """files: entries may name a file of replacements (`- path: repl.yaml`), not those of such a file."""
    out: list[DeviceField] = []
    if not isinstance(entries, list):
        return out
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if files and isinstance(entry.get("path"), str):
            out.extend(_replacement_paths(k, _replacements_file(k, entry["path"]), rules, line, files=False))
            continue
        paths: list[str] = []
        source = entry.get("source")
        if isinstance(source, dict) and source.get("fieldPath"):
            paths.append(str(source["fieldPath"]))
        for target in entry.get("targets") or []:
            if isinstance(target, dict):
                paths.extend(str(p) for p in target.get("fieldPaths") or [])
        for p in paths:
            segments = field_path_segments(p)
            if any(device_key(s, rules) for s in segments) or (
                "nodeSelector" in segments and any(s in rules.labels for s in segments)
            ):
                what = next((s for s in segments if device_key(s, rules) or s in rules.labels), p)
                out.append(DeviceField(p, line, what))
            elif segments and segments[-1] in (*SECTIONS, "resources"):  # a whole map put there, from elsewhere
                out.append(DeviceField(p, line, segments[-1]))
            elif is_identity(segments) and p in _target_paths(entry):
                out.append(DeviceField(segments[0], line, "a replacement"))
    return out


def _target_paths(entry: dict[str, Any]) -> list[str]:
    """The fieldPaths a replacement writes."""
    targets = entry.get("targets")
    return (
        [str(p) for t in targets if isinstance(t, dict) for p in t.get("fieldPaths") or []]
        if isinstance(targets, list)
        else []
    )


def _replacements_file(k: Kustomization, name: str) -> Any:
    """The replacements a `path:` entry names: a file of k's folder holding a list of them (or one), else []."""
    path = k.dir / name
    try:
        if not under(str(path.resolve()), {str(k.dir.resolve())}):  # kustomize reads no file elsewhere
            return []
        text = read_regular(str(path)).decode("utf-8")
    except (OSError, ValueError, InputError):
        return []  # a file kustomize cannot read fails its build, found by fix's proof
    data = next(iter(_documents(text)), None)
    return data if isinstance(data, list) else [data]


def written_keys_fields(k: Kustomization) -> list[tuple[Path, DeviceField]]:
    """The fieldSpecs of kustomize's transformers that reach into a resources section: a `labels` entry's own
    `fields`, or any transformer's in a `configurations` file of the kustomization. kustomize writes there, creating
    the field: a label `nvidia.com/gpu: "1"` into `spec/containers[]/resources/limits`, or the `replicas` count into
    `.../limits/nvidia.com\\/gpu`, is a GPU request. (file, field; field.what: the transformer)."""
    out: list[tuple[Path, DeviceField]] = []
    labels = k.data.get("labels")
    for i, entry in enumerate(labels if isinstance(labels, list) else []):
        specs = entry.get("fields") if isinstance(entry, dict) else None
        for spec in specs if isinstance(specs, list) else []:
            if _into_resources(spec):
                out.append((k.file, DeviceField(str(spec["path"]), k.item_line("labels", i), "labels")))
    entries = k.data.get("configurations")
    for name in entries if isinstance(entries, list) else []:
        conf = k.dir / str(name)
        try:
            text = read_regular(str(conf)).decode("utf-8") if under(str(conf.resolve()), {str(k.dir.resolve())}) else ""
        except (OSError, ValueError, InputError):
            continue  # a configuration kustomize cannot read fails its build, found by fix's proof
        data = next(iter(_documents(text)), None)  # InputError for an alias bomb
        lines = text.splitlines()
        for key, specs in data.items() if isinstance(data, dict) else ():
            for spec in specs if isinstance(specs, list) else []:
                nested = spec.get("fieldSpecs") if isinstance(spec, dict) else None  # nameReference, varReference
                for one in [spec, *(nested if isinstance(nested, list) else [])]:
                    if _into_resources(one):
                        path = str(one["path"])
                        line = next((i for i, at in enumerate(lines, start=1) if path in at), 1)
                        out.append((conf, DeviceField(path, line, str(key))))
    return out


PATCH_TRANSFORMERS = ("PatchTransformer", "PatchStrategicMergeTransformer", "PatchJson6902Transformer")


def transformer_fields(
    k: Kustomization, texts: list[tuple[Path, int, str]], rules: RuleSet
) -> list[tuple[Path, DeviceField]]:
    """Device fields the transformer configurations of k's `transformers:` write (texts: (file, line, text) of each
    configuration; the file is k's own for an inline one): a builtin patch transformer's patch, inline or in a file
    of k's folder, that sets a device field or copies a map into a resources section; any transformer's fieldSpecs
    that reach into a resources section (a LabelTransformer writing `nvidia.com/gpu: "1"` into limits); and a
    ReplacementTransformer's replacements reaching one. kustomize applies each to the overlay's objects as it
    applies the kustomization's own patches. (file, field): the patch file that sets it, or the configuration's."""
    out: list[tuple[Path, DeviceField]] = []
    for file, line, text in texts:
        # a configuration kustomize cannot read fails its build, found by fix's proof
        for doc in (d for d in _documents(text) if isinstance(d, dict)):
            patches: list[Patch] = []
            if doc.get("kind") in PATCH_TRANSFORMERS:
                for name in ("patch", "patches", "jsonOp"):
                    if isinstance(doc.get(name), str):
                        patches.append(Patch(k.file, "transformers", 0, line, None, doc[name], None, line))
                files = [doc.get("path"), *(doc.get("paths") if isinstance(doc.get("paths"), list) else [])]
                for name in (f for f in files if isinstance(f, str) and f):
                    path = k.dir / name
                    try:
                        inside = under(str(path.resolve()), {str(k.dir.resolve())})  # kustomize reads no other
                        body = read_regular(str(path)).decode("utf-8") if inside else ""
                    except (OSError, ValueError, InputError):
                        continue
                    patches.append(Patch(k.file, "transformers", 0, line, path.resolve(), body, None))
            for p in patches:
                for f in [*patch_fields(p, rules), *copied_fields(p)]:
                    at = (p.file, f.line) if p.file is not None else (file, line)
                    out.append((at[0], replace(f, line=at[1])))
            specs = doc.get("fieldSpecs")
            for spec in specs if isinstance(specs, list) else []:
                if _into_resources(spec):
                    path = str(spec["path"])
                    at = next((i for i, t in enumerate(text.splitlines()) if path in t), 0)
                    at += line + (file == k.file)  # an inline configuration starts on the line after its entry's
                    out.append((file, DeviceField(path, at, str(doc.get("kind") or "transformer"))))
            out.extend((file, f) for f in _replacement_paths(k, doc.get("replacements"), rules, line))
    return out


def _into_resources(spec: Any) -> bool:
    """A fieldSpec whose path reaches into a resources section of a container (or is one), or is the object's kind
    or apiVersion (a name prefix written there makes `od` a Pod)."""
    path = spec.get("path") if isinstance(spec, dict) else None
    segments = [s.removesuffix("[]") for s in str(path).split("/")] if isinstance(path, str) else []
    return bool(segments) and (
        segments[-1] == "resources" or any(s in SECTIONS for s in segments) or is_identity(segments)
    )


def field_path_segments(path: str) -> list[str]:
    """A replacement's fieldPath as kustomize splits it: at the dots outside brackets, a bracketed segment that is
    no `[name=value]` selector being the key it holds (`limits.[nvidia.com/gpu]`)."""
    segments = re.findall(r"\[[^\]]*\]|[^.\[]+", path)
    return [s[1:-1] if s.startswith("[") and "=" not in s else s for s in segments]


def mentions_device(text: str, rules: RuleSet) -> bool:
    """A cheap test: the text names a device resource some pack knows (keys repeat across a repository's files:
    each is looked up in the packs once), also where a quoted key spells it with an escape (`"nvidia.com\\x2Fgpu"`,
    `\\u006e`, `\\/`, a folded line), which the patch's parse (and the API server) reads as the name."""
    return _names_device(text, rules) or ("\\" in text and _names_device(_scalars(text), rules))


def _scalars(text: str) -> str:
    """The text's scalars as YAML reads them (escapes decoded), one a line; as many as read before an error."""
    out: list[str] = []
    with contextlib.suppress(yaml.YAMLError):
        out.extend(t.value for t in yaml.scan(text, Loader=yaml.SafeLoader) if isinstance(t, yaml.ScalarToken))
    return "\n".join(out)


def _names_device(text: str, rules: RuleSet) -> bool:
    known = _known.get(id(rules))
    if known is None or known[0] is not rules:
        known = _known[id(rules)] = (rules, {})
    seen = known[1]
    for key in _keys(text.replace("~1", "/")):
        hit = seen.get(key)
        if hit is None:
            hit = device_key(key, rules)
            if len(seen) < 100_000:
                seen[key] = hit
        if hit:
            return True
    return False


_known: dict[int, tuple[RuleSet, dict[str, bool]]] = {}  # rule set -> key -> device_key(key)
_RUN_BACK = re.compile(r"[-a-z0-9.]*")  # _KEY's [-a-z0-9.]
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_PATH = re.compile(r"[-\w.]+")


def _keys(text: str) -> Iterator[str]:
    """_KEY.findall(text), found from each `/` instead of tried at every letter (the regex backtracks through every
    word: three times slower on a repository's graph files). A key's domain is the end of the run of [-a-z0-9.]
    before a `/`, from its first letter or digit, whose part after its last dot is two or more letters; its path is
    the [-\\w.]+ after the `/`; the search goes on after the path, as findall's does."""
    pos = 0
    s = text.find("/")
    if s == -1:
        return
    back, end = text[::-1], len(text)  # the run before a `/` is matched forwards in the reversed text (in C)
    while s != -1:
        r = max(pos, end - _RUN_BACK.match(back, end - s).end())
        p = r
        while p < s and text[p] in "-.":
            p += 1
        dot = text.rfind(".", p + 1, s)
        if dot != -1 and s - dot > 2 and _LOWER.issuperset(text[dot + 1 : s]):
            m = _PATH.match(text, s + 1)
            if m is not None:
                yield text[p : m.end()]
                pos = m.end()
                s = text.find("/", pos)
                continue
        s = text.find("/", s + 1)
