"""The data the idiomatic rewrite works with: each device key found in a template (Device, and the `range` it sits in),
what the manifest migration added to a pod (PodDelta), a workload template with its pods and devices (Workload), and
pattern E's lookup of what the migration derives from a device name (Lookup).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramigrate.helm import keyedmap

CLAIM_TEMPLATE_FILE = "templates/resourceclaimtemplate.yaml"


SWITCH = "dra.enabled"


OVER_LIMIT = (
    "a pod asks for more than 32 devices of one kind, and the scheduler allocates at most 32 to one claim "
    "(AllocationResultsMaxSize): lower the count in values, or set dra.enabled=false"
)
# the rewritten template's failure where a request the claim leaves out differs from its limit (idiomatic._equal_check)
UNEQUAL_REQUEST = (
    "differs from its limit: set them alike (Kubernetes needs the request of an extended resource equal to its "
    "limit, and the DRA claim asks for the count of the limit)"
)


@dataclass
class Device:
    index: int  # 0-based line of `<resource>: <count>`
    resource: str
    count: str  # Go expression, read from the chart's root
    conditions: list[str]
    scoped: bool = False  # inside `with .Values.x`: the key's own line reads the root as `$`
    branch: tuple[int, int] | None = None  # (offset of the innermost enclosing `if`, its branch: 0 `if`, 1 `else`..)
    branch_conditions: list[str] = field(default_factory=list)  # the conditions that branch adds (the last ones)
    name: str = ""  # pattern E: the Go expression of the resource name (read from the root); `resource` is its value
    name_key: str = ""  # pattern E: the values key the name reads (`gpu.type`), perhaps through template variables
    loop: Loop | None = None  # the key is inside `range` blocks: one pod per item
    per_item: bool = False  # its count reads the `range` item: one claim template per item (_item_section)
    # a key a template variable holds (patterns.HeldEntry, `index` the line that puts it there): the container's
    # `limits:` line that writes the variable, which stands for the key's section; -1: the key's own parent line
    section: int = -1


@dataclass(frozen=True)
class Loop:
    """The `range` blocks around a device key: `start`, how many of its conditions come before the outermost one;
    `headers`, each `range` action read from the chart's root (`range $i := until (int $pods)`), and `nonempty`, the
    condition under which it renders its body (one of the key's conditions); `opened`, the offset of the innermost
    one in the template; `names`, the variables the blocks set per item (`$i`, and a `$rank := add $i 1` inside),
    which nothing outside can read."""

    start: int
    headers: tuple[str, ...] = ()
    nonempty: tuple[str, ...] = ()
    opened: int = 0
    names: frozenset[str] = frozenset()
    steps: str = ""  # the innermost range's number of items when it counts (`until N`, `untilStep 0 N 1`): `N`
    item_read: str = ""  # the first `if` inside that reads the item (`if .enabled`): only a count per item takes it
    # the innermost range's own assignments (`$gpus := .gpus | default 1`): variable, action body, and how many of
    # `openers` they are inside
    body: tuple[tuple[str, str, int], ...] = ()
    nested: frozenset[str] = frozenset()  # the variables it sets inside blocks of its own (`if`, `with`)
    openers: tuple[str, ...] = ()  # the `if` actions inside it still open at the key, around assignments of `body`
    scope: str = ""  # what a `with` inside it around the key makes `.` (`$gres.limits`), read from the item

    @property
    def per_item(self) -> frozenset[str]:
        """The variables a count per item may read: those the range declares, and those its body sets at its own
        level or inside `if` blocks around the key, which the claim template file sets again inside the same
        range (and the same `if` blocks)."""
        return self.declared | (frozenset(name for name, _, _ in self.body) - self.nested)

    @property
    def declared(self) -> frozenset[str]:
        """The variables (without `$`) the `range` actions themselves declare (`$key`, `$model`), not those set
        inside."""
        return frozenset(v for header in self.headers for v in _VARIABLE.findall(header.split(":=", 1)[0]))


@dataclass
class PodDelta:
    """What the core's migration added to one pod spec."""

    claim: str  # the pod's resourceClaims[].name (= the container claim name)
    tolerations: list[dict[str, Any]]
    spec: dict[str, Any]  # ResourceClaimTemplate.spec
    namespaced: bool
    template: str = ""  # the migration's ResourceClaimTemplate name (`<workload>-<pod>-<hash>`)
    labels: dict[str, str] = field(default_factory=dict)  # nodeSelector labels the migration moved into the claim
    affinity: list[tuple[str, ...]] = field(default_factory=list)  # affinity keys it dropped (unpin.dropped)
    # the device plugin's tolerations it did not add because the pod has them already (from values, perhaps)
    covered: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)  # keys it set in the pod's group `rayStartParams` (num-gpus)
    # nodeSelector labels the pod keeps (a cloud node-pool label, translated into the claim's selectors as well)
    kept: dict[str, str] = field(default_factory=dict)


@dataclass
class Lookup:
    """Pattern E: what the migration derives from the device resource a values key names (CEL selectors, the
    toleration key), for each resource the key may plausibly name (name_candidates): the claim spec leaves that differ
    between them are fields of a `dict` the claim template looks the name up in; a leaf that is the name itself (the
    toleration key) reads the name."""

    expr: str  # the name's Go expression, read from the chart's root
    key: str  # the values key it reads
    entries: dict[str, dict[str, Any]]  # device resource -> field -> value
    spec: dict[tuple[Any, ...], str]  # leaf path in the ResourceClaimTemplate spec -> field, or NAME
    tolerations: dict[tuple[Any, ...], str]  # leaf path in the added tolerations -> NAME
    # device resource -> the claim the migration names after it (`gpu`, `mig` for a MIG profile), when they differ
    claims: dict[str, str] = field(default_factory=dict)


NAME = "@@DRANAME@@"  # a leaf that is the device resource name itself


@dataclass
class Workload:
    rel: str
    text: str
    devices: list[Device]
    delta: PodDelta
    requests: dict[str, str] = field(default_factory=dict)  # claim request name -> device resource
    base: str = ""  # the request name the migration gives the device when one container asks for it
    # a vendor choice (`if .Values.intel }}gpu.intel.com/i915: N{{ else }}nvidia.com/gpu: N`): each other branch's
    # device resource -> what the migration adds when the pod asks for that device instead, and its request names
    choices: dict[str, tuple[PodDelta, dict[str, str]]] = field(default_factory=dict)
    named: Lookup | None = None  # pattern E: the resource name comes from values
    # a pod asking for two device kinds (multiclaim.py): the claim of each when they go in claims of their own
    # (more than 32 devices together), "" for the one claim of both; `over`, the condition of that shape
    part: str = ""
    over: str = ""
    keeps_class: bool = False  # a part for the pod's second device kind: the migration's class, not dra.deviceClassName
    # the counts of the claim of both kinds: one above 32 devices, the migration refuses the pod, and the render fails
    limits: tuple[str, ...] = ()
    keyed: keyedmap.KeyedMap | None = None  # a values map's device keys beside the chart's own (keyedmap.py)
    helpers: str = ""  # the chart's helper files, for a pod whose tolerations an included define writes
    guards: tuple[str, ...] = ()  # more values conditions that keep this pod's switch off (a shared product it selects)


# what the migration adds to a template's pods when each container asks for `other` instead of `resource` (same
# count): (the template's objects so renamed, the migration of them, its ResourceClaimTemplates by name)
# (a template's objects, the device resource they ask for, another one; live=True: as a render shows that branch)
Alternative = Callable[..., tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]]


_VARIABLE = re.compile(r"\$([A-Za-z_]\w*)")
