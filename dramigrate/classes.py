"""The classes file: cluster-scoped DeviceClasses the claims need, for the cluster admins to apply."""

from __future__ import annotations

from dramigrate.documents import dominant_newline, dump_yaml, parse_document, split_documents
from dramigrate.emit import device_class, spec_hash
from dramigrate.findings import InputError
from dramigrate.rules import DeviceClassInfo
from dramigrate.validate import device_class_errors
from dramigrate.versions import Target

HEADER = (
    "# DeviceClasses that the migrated ResourceClaimTemplates need and that no installed driver chart\n"
    "# ships. Written by dramigrate for the cluster admins: review, then kubectl apply -f this file.\n"
)


def merge_classes(path: str, existing: str, classes: list[DeviceClassInfo], target: Target) -> str:
    """The existing file with every missing class appended, in the file's own line ends; classes already there are
    kept as they are. A file that holds anything but Kubernetes objects (a README, a script, a CI workflow a pull
    request's config named) is bad input, never appended to."""
    present: set[str] = set()
    if existing.strip():
        yf = split_documents(path, existing.encode("utf-8"))
        for doc in yf.documents:
            data = parse_document(path, doc)
            if data is not None and not _is_object(data):
                raise InputError(
                    "the classes file holds other things than Kubernetes objects (a document with no apiVersion and "
                    "kind); DeviceClasses are not appended to it: name a file of its own (cluster/deviceclasses.yaml, "
                    "say)",
                    path,
                    doc.start_line,
                )
            for obj in device_classes(data):
                metadata = obj.get("metadata") or {}
                if not isinstance(metadata, dict):  # `metadata: [1]` was an internal error (AttributeError)
                    raise InputError(
                        "a DeviceClass of the classes file has a metadata that is no mapping, which the API server "
                        "refuses; DeviceClasses are not appended to it",
                        path,
                        doc.start_line,
                    )
                present.add(str(metadata.get("name")))
    out = existing or HEADER
    newline = dominant_newline(out)
    for cls in classes:
        if cls.name in present:
            continue
        obj = device_class(cls, target)
        errors = device_class_errors(obj, target.text)
        if errors:
            raise InputError(f"DeviceClass {cls.name} from pack {cls.pack} is invalid: {'; '.join(errors)}", path)
        if not out.endswith("\n"):
            out += newline
        out += ("---\n" + dump_yaml(obj)).replace("\n", newline)
    return out


def device_classes(data: object) -> list[dict[str, object]]:
    """The DeviceClasses of a document as kubectl reads it: the document itself, or the items of a list
    (`kubectl get deviceclasses -o yaml` writes a `kind: List`, the API a DeviceClassList), where fix appended a
    second class of a name the list held, and `kubectl apply -f` put the pack's selectors in place of the admin's."""
    from dramigrate.detect import objects_of

    return [info.obj for info in objects_of(data) if info.kind == "DeviceClass"]


def _is_object(data: object) -> bool:
    """Whether a document is a Kubernetes object: a mapping with an apiVersion and a kind."""
    return isinstance(data, dict) and all(isinstance(data.get(k), str) and data.get(k) for k in ("apiVersion", "kind"))


def class_selectors(cls: DeviceClassInfo) -> tuple[str, ...]:
    """What the vendor's class selects (from the pack), or every device of its driver."""
    return cls.selectors or (f"device.driver == '{cls.driver}'",)


def named_class(base: DeviceClassInfo, selectors: tuple[str, ...], slugs: dict[str, str]) -> DeviceClassInfo:
    """One DeviceClass for one hardware choice: the vendor class's selectors plus the request's."""
    from dramigrate.plan import dns_label

    parts = [slugs[s] for s in selectors if slugs.get(s)]
    readable = dns_label("-".join(dict.fromkeys(parts)) or "devices", 40)
    digest = spec_hash(list(selectors))[:6]
    name = f"{readable}-{digest}.{base.name}"
    return DeviceClassInfo(
        name=name,
        driver=base.driver,
        selectors=tuple(dict.fromkeys(class_selectors(base) + selectors)),
        config=base.config,
        pack=base.pack,
        derived_from=base.name,
    )


def extended_resource_class(resource: str, base: DeviceClassInfo, selectors: tuple[str, ...]) -> DeviceClassInfo:
    """A DeviceClass that serves a device-plugin resource name through extendedResourceName (KEP-5004)."""
    from dramigrate.plan import dns_label

    name = f"{dns_label(resource.split('/', 1)[-1])}.{base.driver}"
    return DeviceClassInfo(
        name=name,
        driver=base.driver,
        extended_resource_name=resource,
        selectors=tuple(dict.fromkeys(class_selectors(base) + selectors)),
        config=base.config,
        pack=base.pack,
    )
