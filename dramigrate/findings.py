"""Findings: what dramigrate reports, with where it is and whether `fix` resolves it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@dataclass(frozen=True)
class Location:
    file: str
    line: int = 0
    column: int = 0
    note: str = ""


@dataclass
class Finding:
    rule: str
    severity: Severity
    message: str
    file: str
    line: int = 0
    column: int = 0
    kind: str = ""
    namespace: str = ""
    name: str = ""
    pod_template_path: str = ""
    container: str = ""
    resource: str = ""
    device_class: str = ""  # the DeviceClass the resource maps to in the rule packs, "" when none
    fixable: bool = False
    fixed: bool = False
    related: list[Location] = field(default_factory=list)

    def recast(self, rule: str, message: str) -> Finding:
        """The same place and object under another rule: not fixable, not fixed."""
        return replace(
            self,
            rule=rule,
            severity=RULES[rule][0],
            message=message,
            fixable=False,
            fixed=False,
            related=list(self.related),
        )

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file, self.line, self.column, self.rule)

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "podTemplatePath": self.pod_template_path,
            "container": self.container,
            "resource": self.resource,
            "deviceClass": self.device_class,
            "message": self.message,
            "fixable": self.fixable,
            "fixed": self.fixed,
            "related": [{"file": r.file, "line": r.line, "column": r.column, "message": r.note} for r in self.related],
        }


class InputError(Exception):
    """Bad input: reported with file:line, exit code 2, never a traceback."""

    def __init__(self, message: str, file: str = "", line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return f"{where}: {self.message}" if where else self.message


# Every rule dramigrate reports, with its default severity and what it means. Grep finds them all.
RULES: dict[str, tuple[Severity, str]] = {
    "legacy-device-request": (Severity.ERROR, "a device-plugin request that fix rewrites into a DRA claim"),
    "quota-legacy-device": (Severity.ERROR, "a ResourceQuota on a device resource without the DRA key"),
    "dangling-claim": (Severity.ERROR, "a container claim name with no pod resourceClaims entry"),
    "extended-resource-beside-claim": (
        Severity.ERROR,
        "an extended resource beside a claim of the same device class (two devices)",
    ),
    "invalid-count": (Severity.WARNING, "a device count that is a placeholder, fraction or null"),
    "report-only-kind": (Severity.WARNING, "a device request in a kind whose controller drops or rejects claims"),
    "unknown-kind": (Severity.WARNING, "a device request in a kind dramigrate does not know"),
    "shared-device": (Severity.WARNING, "a shared, fractional or per-core device resource"),
    "unknown-resource": (Severity.WARNING, "an extended resource no rule pack knows"),
    "kustomize-patch": (Severity.WARNING, "a kustomize patch, or a base its overlays patch, with device resources"),
    "shared-claim-replicated": (Severity.WARNING, "a shared resourceClaimName in a replicated workload"),
    "scheduler-quota": (Severity.WARNING, "device quota in Kueue, Karpenter, KAI objects or LimitRanges"),
    "classes-file-needed": (Severity.WARNING, "cluster-scoped DeviceClasses are needed but no --classes-file"),
    "target-version": (Severity.WARNING, "the target Kubernetes version needs a feature gate or API group"),
    "templated-file": (Severity.WARNING, "a Go-templated file outside a Helm chart: render it first"),
    "rewrite-invalid": (Severity.ERROR, "the rewrite would introduce an invalid object; nothing written"),
    "inexact-label": (Severity.WARNING, "a node-label hack with no exact translation for the driver"),
    "preference-lost": (Severity.WARNING, "a preferred device choice the target version cannot express"),
    "topology-unaligned": (Severity.INFO, "GPUs and NICs in a shape that gets no pcieRoot constraint"),
    "pool-label-kept": (Severity.INFO, "a cloud node-pool label translated and kept on the pod"),
    "extended-resource-init": (Severity.WARNING, "a plain init container gets its own device under KEP-5004"),
    "extended-resource": (Severity.INFO, "a device-plugin request served through a DeviceClass extendedResourceName"),
    "named-class-quota": (Severity.WARNING, "claims on --classes named classes escape the vendor class's quota"),
    "class-conflict": (Severity.ERROR, "two different DeviceClasses would get the same name"),
    "count-from-limits": (Severity.INFO, "a controller read the device count from limits and is told explicitly"),
    "device-toleration": (Severity.INFO, "a device-taint toleration other than the plugin-equivalent one"),
    "chart-rewrite-unproven": (
        Severity.WARNING,
        "fix could not prove a rewrite of a Helm chart, so nothing was written; the report has the suggested patch",
    ),
    "internal-error": (
        Severity.ERROR,
        "dramigrate failed on this file (a bug): the file was left alone and the rest of the run went on",
    ),
    "chart-label-from-values": (
        Severity.WARNING,
        "a node-label hack comes from chart values: the rewritten chart keeps it; translate it by hand",
    ),
}
