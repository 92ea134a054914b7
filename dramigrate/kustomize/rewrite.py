"""Rewrite a kustomize graph's sources: bases through the core, patches into their DRA equivalent, and the
kustomization edits (configurations, overlay-owned templates, deletion of templates an overlay replaces).

Files are edited as round-trip documents (dramigrate.documents), so comments and layout survive.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dramigrate.documents import YamlFile, dump_yaml, indent_of, parse_document, split_documents, start_edit, to_plain
from dramigrate.emit import name_base, spec_hash
from dramigrate.kustomize.fields import device_key
from dramigrate.kustomize.graph import Kustomization, Patch
from dramigrate.kustomize.proof import RCT, load
from dramigrate.rules import RuleSet
from dramigrate.workloads import pod_specs

TEMPLATES_FILE = "dramigrate-claim-templates.yaml"
SECTIONS = ("limits", "requests")
POD_FIELDS_FROM_BUILD = ("tolerations", "nodeSelector", "affinity")


class Unprovable(Exception):
    """A graph this rewrite cannot express; the message names the file and what."""


@dataclass
class TreeEdit:
    """The new text of each file of a graph (absolute path -> text), and what changed in words."""

    texts: dict[Path, str] = field(default_factory=dict)
    originals: dict[Path, str | None] = field(default_factory=dict)  # None: a new file
    changes: list[str] = field(default_factory=list)
    pending: dict[Path, list[tuple[str, Any]]] = field(default_factory=dict)  # kustomization -> (key, item) to add
    dropped: dict[Path, set[tuple[str, int]]] = field(default_factory=dict)  # kustomization -> (key, index) to remove
    inline: dict[Path, dict[tuple[str, int], str]] = field(default_factory=dict)  # kustomization -> patch -> text

    def text(self, path: Path) -> str | None:
        if path in self.texts:
            return self.texts[path]
        try:
            return path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def set(self, path: Path, text: str) -> None:
        if path not in self.originals:
            self.originals[path] = path.read_bytes().decode("utf-8") if path.exists() else None
        self.texts[path] = text


def _yaml_file(path: Path, text: str) -> YamlFile:
    yf = split_documents(str(path), text.encode("utf-8"))
    for doc in yf.documents:
        parse_document(str(path), doc)
    return yf


# --- kustomization edits --------------------------------------------------------------------------------------


def add_list_item(edit: TreeEdit, k: Kustomization, key: str, item: Any) -> None:
    """Append an item to a top-level list of the kustomization (created when missing); see apply_items."""
    items = edit.pending.setdefault(k.file, [])
    if (key, item) not in items:
        items.append((key, item))


def drop_list_item(edit: TreeEdit, k: Kustomization, key: str, index: int) -> None:
    """Remove an item of a top-level list of the kustomization (the key too when it empties); see apply_items."""
    edit.dropped.setdefault(k.file, set()).add((key, index))
    edit.pending.setdefault(k.file, [])


def apply_items(edit: TreeEdit) -> None:
    """Write the pending list items and inline patch texts into each kustomization in one round trip, keeping the
    file's layout; patch texts and items to drop go first (drops last index first), so the indexes patches were
    found at still hold."""
    from ruamel.yaml.scalarstring import LiteralScalarString

    for file, items in edit.pending.items():
        yf = _yaml_file(file, edit.text(file) or "")
        doc = next(d for d in yf.documents if d.data is not None)
        start_edit(doc)
        for (key, index), text in edit.inline.get(file, {}).items():
            entry = doc.data[key][index]
            if isinstance(entry, dict):
                entry["patch"] = LiteralScalarString(text)
            else:
                doc.data[key][index] = LiteralScalarString(text)
        for key, index in sorted(edit.dropped.get(file, set()), key=lambda d: -d[1]):
            del doc.data[key][index]
            if not doc.data[key]:
                del doc.data[key]
        for key, item in items:
            entries = doc.data.get(key)
            if entries is None:
                doc.data[key] = [item]
            elif item not in [to_plain(e) for e in entries]:
                entries.append(item)
        edit.set(file, yf.render())
    edit.pending, edit.dropped, edit.inline = {}, {}, {}


def set_patch_text(edit: TreeEdit, patch: Patch, text: str) -> None:
    """Replace a patch's text: the patch file, or the inline `patch:` string of its kustomization entry (written
    by apply_items with the kustomization's other edits, in one round trip: one per patch took minutes for a
    kustomization of hundreds of inline patches)."""
    if patch.file is not None:
        edit.set(patch.file, text)
        return
    edit.inline.setdefault(patch.owner, {})[(patch.key, patch.index)] = text
    edit.pending.setdefault(patch.owner, [])


def delete_patch(api_version: str, name: str, namespace: str = "") -> dict[str, Any]:
    from ruamel.yaml.scalarstring import LiteralScalarString

    meta = f"  name: {name}\n" + (f"  namespace: {namespace}\n" if namespace else "")
    return {"patch": LiteralScalarString(f"$patch: delete\napiVersion: {api_version}\nkind: {RCT}\nmetadata:\n{meta}")}


# --- patches ------------------------------------------------------------------------------------------------


def _strip_devices(node: Any, rules: RuleSet, drop_labels: set[str]) -> None:
    """Remove device resources under limits/requests and the given node labels from a patch document."""
    if isinstance(node, dict):
        for key in list(node):
            value = node[key]
            if key in SECTIONS and isinstance(value, dict):
                for res in [r for r in value if device_key(str(r), rules)]:
                    del value[res]
                if not value:
                    del node[key]
            elif key == "nodeSelector" and isinstance(value, dict):
                for label in [k for k in value if k in drop_labels]:
                    del value[label]
                if not value:
                    del node[key]
            else:
                _strip_devices(value, rules, drop_labels)
        if "resources" in node and node["resources"] in ({}, None):
            del node["resources"]
    elif isinstance(node, list):
        for item in node:
            _strip_devices(item, rules, drop_labels)


@dataclass
class PodWiring:
    """What a patched pod spec needs from the migrated build: claims, containers' claims, pod fields."""

    path: str  # the pod spec's path in the object
    claims: list[dict[str, Any]]  # pod resourceClaims, with template names local to the overlay
    containers: dict[str, dict[str, list[Any]]]  # container list key -> container name -> resources.claims
    fields: dict[str, Any] = field(default_factory=dict)  # pod-spec fields to set as the build has them
    templates: list[dict[str, Any]] = field(default_factory=list)  # templates the overlay emits


def _get(node: Any, path: str) -> Any:
    """Follow a concrete path like spec.workerGroupSpecs[0].template.spec."""
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            i = int(part[1:-1])
            node = node[i] if isinstance(node, list) and i < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _ensure(node: Any, path: str) -> Any:
    """Follow a path of mapping keys, creating mappings on the way (list indexes must exist)."""
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            node = node[int(part[1:-1])]
        else:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
    return node


def wire_patch_doc(data: Any, kind_rules: Any, wirings: list[PodWiring]) -> None:
    """Put the DRA wiring of each pod spec into a strategic-merge patch document."""
    for w in wirings:
        spec = _ensure(data, w.path)
        spec["resourceClaims"] = copy.deepcopy(w.claims)
        for list_key, by_name in w.containers.items():
            items = spec.get(list_key)
            if items is None:
                items = spec[list_key] = []
            for name, claims in by_name.items():
                entry = next((c for c in items if isinstance(c, dict) and c.get("name") == name), None)
                if entry is None:
                    entry = {"name": name}
                    items.append(entry)
                resources = entry.get("resources")
                if resources is None:
                    resources = entry["resources"] = {}
                resources["claims"] = copy.deepcopy(claims)
        for key, value in w.fields.items():
            if value is None:
                spec.pop(key, None)
            else:
                spec[key] = copy.deepcopy(value)


def smp_text(path: Path, text: str, rules: RuleSet, wiring_of: Any, drop_labels: set[str]) -> str:
    """The rewritten strategic-merge patch text: device fields out, DRA wiring in (per document)."""
    yf = _yaml_file(path, text)
    for doc in yf.documents:
        if not isinstance(doc.data, dict):
            continue
        wirings = wiring_of(to_plain(doc.data))
        if wirings is None:
            continue
        start_edit(doc)
        _strip_devices(doc.data, rules, drop_labels)
        wire_patch_doc(doc.data, None, wirings)
    return yf.render()


def json6902_ops(text: str, rules: RuleSet, drop_labels: set[str]) -> tuple[list[dict[str, Any]], bool]:
    """The JSON patch's operations without the ones that set device fields (values stripped of device keys)."""
    import yaml

    data = yaml.safe_load(text)
    kept: list[dict[str, Any]] = []
    changed = False
    for op in data or []:
        path = str(op.get("path", ""))
        segments = [s.replace("~1", "/").replace("~0", "~") for s in path.split("/")[1:]]
        last = segments[-1] if segments else ""
        if (device_key(last, rules) and any(s in SECTIONS for s in segments)) or (
            last in drop_labels and "nodeSelector" in segments
        ):
            changed = True
            continue
        if "value" in op:
            before = copy.deepcopy(op["value"])
            value = op["value"]
            if last in SECTIONS and isinstance(value, dict):
                for res in [r for r in value if device_key(str(r), rules)]:
                    del value[res]
            else:
                _strip_devices(value, rules, drop_labels)
            changed = changed or before != value
        kept.append(op)
    return kept, changed


def dump_ops(ops: list[dict[str, Any]]) -> str:
    return dump_yaml(ops, indent_of(""))


def smp_for(api_version: str, kind: str, name: str, wirings: list[PodWiring]) -> str:
    data: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    wire_patch_doc(data, None, wirings)
    return dump_yaml(data, indent_of(""))


# --- wiring from the migrated build --------------------------------------------------------------------------


def wiring(
    migrated: dict[str, Any],
    templates: dict[tuple[str, str], dict[str, Any]],
    kind_rules: Any,
    patch_name: str,
    namespace: str | None,
    patched_paths: set[str] | None,
) -> list[PodWiring]:
    """For each pod spec of the migrated object (or only `patched_paths`), the claims and the overlay's templates."""
    out: list[PodWiring] = []
    ns = str((migrated.get("metadata") or {}).get("namespace") or "")
    for ref in pod_specs(migrated, kind_rules):
        if patched_paths is not None and ref.path not in patched_paths:
            continue
        spec = ref.spec
        claims = spec.get("resourceClaims") or []
        if not claims:
            continue
        local: list[dict[str, Any]] = []
        emitted: list[dict[str, Any]] = []
        for c in claims:
            c = dict(c)
            rct = templates.get((ns, str(c.get("resourceClaimTemplateName", ""))))
            if rct is not None:
                name = f"{name_base(patch_name, ref.name_suffix)}-{spec_hash(rct['spec'])}"
                c["resourceClaimTemplateName"] = name
                meta: dict[str, Any] = {"name": name}
                if namespace:
                    meta["namespace"] = namespace
                emitted.append(
                    {"apiVersion": rct["apiVersion"], "kind": RCT, "metadata": meta, "spec": copy.deepcopy(rct["spec"])}
                )
            local.append(c)
        containers: dict[str, dict[str, list[Any]]] = {}
        for list_key in kind_rules.container_lists:
            for ctr in spec.get(list_key) or []:
                if isinstance(ctr, dict) and (ctr.get("resources") or {}).get("claims"):
                    containers.setdefault(list_key, {})[str(ctr.get("name"))] = ctr["resources"]["claims"]
        out.append(PodWiring(ref.path, local, containers, templates=emitted))
    return out


def templates_of(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for o in objects:
        if o.get("kind") == RCT:
            meta = o.get("metadata") or {}
            out[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = o
    return out


def templates_text(existing: str | None, templates: list[dict[str, Any]]) -> str:
    head = existing or (
        "# ResourceClaimTemplates this overlay's patches point its pods at (written by dramigrate; each name ends\n"
        "# with the hash of its spec, so a changed count makes a new template).\n"
    )
    names = {str((o.get("metadata") or {}).get("name")) for o in load(existing or "")}
    parts = [head.rstrip("\n") + "\n"]
    for t in templates:
        if t["metadata"]["name"] in names:
            continue
        names.add(t["metadata"]["name"])
        parts.append("---\n" + dump_yaml(t, indent_of("")))
    return "".join(parts)
