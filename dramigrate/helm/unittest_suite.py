"""A helm-unittest suite for the idiomatic rewrite, written when the chart keeps its tests in `tests/`
(the helm-unittest plugin's layout): `tests/<template>-dra_test.yaml` pins the switch's three behaviours
so a maintainer's CI keeps them: switch off renders the device key and no claim; switch on renders the
claim and no device key; a count of 0 renders no claim.

The suite is built from the original chart's render (where the container and its device key are) and
the rewrite (the switch key, the count knob, the claim name); the paths use helm-unittest's syntax
(`spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.rewrite import Change
from dramigrate.helm.suitevalues import set_keys

Segment = str | int
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_VALUES_PATH = re.compile(r"(?:int\s+)?\.Values\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")


def suite_path(rel: str) -> str:
    """`templates/deployment.yaml` -> `tests/deployment-dra_test.yaml`."""
    return f"tests/{Path(rel).stem}-dra_test.yaml"


def path_text(segments: list[Segment]) -> str:
    """helm-unittest's path syntax: dotted keys, `[i]` list items, `["a.b/c"]` for keys with other characters."""
    out = ""
    for s in segments:
        if isinstance(s, int):
            out += f"[{s}]"
        elif _PLAIN_KEY.fullmatch(s):
            out += f".{s}" if out else s
        else:
            out += f'["{s}"]'
    return out


def _device_paths(node: Any, resource: str, at: list[Segment], out: list[list[Segment]]) -> list[list[Segment]]:
    """Paths of `<resource>` keys (every `<domain>/<name>` key when resource is "") directly under a container's
    `resources.limits` or `resources.requests`."""
    if isinstance(node, dict):
        if len(at) >= 2 and at[-2] == "resources" and at[-1] in ("limits", "requests"):
            out.extend([*at, str(k)] for k in node if (k == resource if resource else "/" in str(k)))
        for k, v in node.items():
            _device_paths(v, resource, [*at, str(k)], out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _device_paths(v, resource, [*at, i], out)
    return out


def _get(node: Any, segments: list[Segment]) -> Any:
    for s in segments:
        node = node[s]
    return node


def removed_device(original: list[dict[str, Any]], migrated: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(device resource, claim name) of the containers that lost a device key to a claim in the migration, or None
    when the template's documents show no such change, or changes of more than one resource or claim name (the
    worker groups of one RayCluster each lose nvidia.com/gpu to their own pod's claim `gpu`: one pair)."""
    found = []
    for before, after in zip(original, migrated, strict=False):
        if before.get("kind") != after.get("kind"):
            return None
        for at in _device_paths(before, "", [], []):
            container = at[:-3]
            kept = _get(after, at[:-1]) if _has(after, at[:-1]) else {}
            claims = _get(after, [*container, "resources"]).get("claims") if _has(after, container) else None
            if at[-1] not in kept and claims:
                found.append((str(at[-1]), str(claims[-1].get("name"))))
    return found[0] if len(set(found)) == 1 else None


def _has(node: Any, segments: list[Segment]) -> bool:
    try:
        _get(node, segments)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def count_key(expr: str) -> str | None:
    """The values key (`gpu.count`) a count expression reads (`.Values.gpu.count`, `int .Values.gpu.count`)."""
    m = _VALUES_PATH.fullmatch(expr.strip())
    return m.group(1) if m else None


@dataclass
class Case:
    """One test of the suite: the values it renders with and what the workload must show."""

    it: str
    set: dict[str, Any] = field(default_factory=dict)
    values: list[str] = field(default_factory=list)  # values files, relative to the suite file
    expect: str = "device"  # "device": the device key, no claim; "claim": the claim, no key; "none": neither
    claim_documents: int | None = None  # documents the claim-template file renders (None: not asserted)


def switch_cases(resource: str, switch: str, count_expr: str | None, claim_documents: int | None) -> list[Case]:
    """Pattern A: the switch off, on, and on with the count knob at 0."""
    cases = [
        Case(
            f"renders the {resource} device-plugin request and no claim with the DRA switch off",
            {switch: False},
            expect="device",
            claim_documents=0 if claim_documents is not None else None,
        ),
        Case(
            f"renders a ResourceClaim and no {resource} request with the DRA switch on",
            {switch: True},
            expect="claim",
            claim_documents=claim_documents,
        ),
    ]
    knob = count_key(count_expr) if count_expr else None
    if knob:
        cases.append(
            Case(
                f"renders no claim with the DRA switch on and {knob} 0",
                {switch: True, knob: 0},
                expect="none",
                claim_documents=0 if claim_documents is not None else None,
            )
        )
    return cases


def values_cases(resource: str, plugin: str | None, dra: str, after: bool = True) -> list[Case]:
    """Patterns B and C: the chart's values (or a values file it ships) and their DRA values (an overlay given after
    the file it stands for; values-dra.yaml for the chart's defaults). `after`: False for a DRA copy of the file,
    given in its place."""
    where = f"with {plugin}" if plugin else "with the chart's defaults"
    over = bool(plugin and after)
    return [
        Case(
            f"renders the {resource} device-plugin request and no claim {where}",
            values=[f"../{plugin}"] if plugin else [],
            expect="device",
            claim_documents=0,
        ),
        Case(
            f"renders a ResourceClaim and no {resource} request with {dra}" + (f" after {plugin}" if over else ""),
            values=[*([f"../{plugin}"] if over else []), f"../{dra}"],
            expect="claim",
        ),
    ]


@dataclass(frozen=True)
class Rendered:
    """Every document each template renders (by its path in the chart) in the render a suite is built from, which
    holds more than the documents that may hold device requests, and that render's release name."""

    documents: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    release: str = "release-name"


def _identity(doc: dict[str, Any], pod: list[Segment]) -> dict[str, Any]:
    """What a documentSelector can tell a document by (helm-unittest paths): its kind, its name, each label, each
    label of its pod template (at `pod`, the path of the pod's metadata, as in the workload)."""
    out = {"kind": doc.get("kind"), "metadata.name": (doc.get("metadata") or {}).get("name")}
    for at in (["metadata"], pod):
        labels = _get(doc, [*at, "labels"]) if _has(doc, [*at, "labels"]) else None
        if isinstance(labels, dict):
            out |= {path_text([*at, "labels", str(k)]): v for k, v in labels.items() if isinstance(v, str)}
    return out


def selector(doc: dict[str, Any], documents: list[dict[str, Any]], pod: list[Segment]) -> dict[str, Any] | None:
    """helm-unittest's documentSelector for `doc` among the documents its template renders: its kind, else its
    name, else one of its labels or its pod's, the first no other document shares (the plugin fails an assert
    whose selector matches several documents), or None."""
    others = [_identity(d, pod) for d in documents]
    for path, value in _identity(doc, pod).items():
        if value is not None and sum(o.get(path) == value for o in others) == 1:
            return {"path": path, "value": value}
    return None


def suite(
    rel: str,
    claim_file: str,
    original: list[dict[str, Any]],
    resource: str,
    claim: str,
    cases: list[Case],
    about: str,
    documents: list[dict[str, Any]] | None = None,
    release: str = "release-name",
    several: bool = False,
) -> Change | None:
    """The suite for one rewritten workload template, or None when its render does not show the shape the
    suite can pin (one device key in one document that a documentSelector tells from the template's others, and no
    claims of its own already). `original`: the template's documents that may hold device requests; `documents`:
    all it renders (by default `original`), in the render of release name `release`. `several`: the document may
    hold the key in several containers, each of which takes `claim` (removed_device found them so), all pinned."""
    documents = original if documents is None else documents
    holding = [d for d in original if _device_paths(d, resource, [], [])]
    if len(holding) != 1:
        return None
    (doc,) = holding
    kind = str(doc.get("kind", ""))
    found = _device_paths(doc, resource, [], [])
    containers = list(dict.fromkeys(tuple(p[:-3]) for p in found))
    if not containers or (len(containers) > 1 and not several):  # the key in one container (limits and requests)
        return None
    if any(len(c) < 2 or not isinstance(c[-1], int) for c in containers):
        return None
    pods = list(dict.fromkeys(c[:-2] for c in containers))
    if any(_get(doc, list(p)).get("resourceClaims") for p in pods) or any(
        _get(doc, list(c)).get("resources", {}).get("claims") for c in containers
    ):
        return None
    pick = selector(doc, documents, [*pods[0][:-1], "metadata"])
    if pick is None:
        return None
    selected = len(documents) > 1 or claim_file == rel
    template = rel.removeprefix("templates/")
    claims_template = claim_file.removeprefix("templates/")
    devices = [path_text(p) for p in found]
    pod_claims = [path_text([*p, "resourceClaims"]) for p in pods]
    container_claims = [path_text([*c, "resources", "claims"]) for c in containers]

    # an assert names its template when the suite renders two (the workload's and the claims'); else the suite's one
    named = {"template": template} if claims_template != template else {}

    # the workload's kind, unless the documentSelector picks it by its kind already (an isKind that cannot fail)
    by_kind = selected and pick["path"] == "kind"

    def on_workload(*asserts: dict[str, Any]) -> list[dict[str, Any]]:
        head = [] if by_kind else [{"isKind": {"of": kind}}]  # a dict of its own per case: no YAML anchor
        out = [{**a, **named} for a in (*head, *asserts)]
        # a template of several documents (or one that renders its claim template too): its workload selected
        return [{**a, "documentSelector": dict(pick)} for a in out] if selected else out

    claims = [*pod_claims, *container_claims]
    expected = {
        "device": [
            *({"exists": {"path": device}} for device in devices),
            *({"notExists": {"path": path}} for path in claims),
        ],
        "claim": [
            *({"notExists": {"path": device}} for device in devices),
            *({"equal": {"path": f"{path}[0].name", "value": claim}} for path in claims),
        ],
        "none": [
            *({"notExists": {"path": device}} for device in devices),
            *({"notExists": {"path": path}} for path in claims),
        ],
    }
    tests = []
    for case in cases:
        asserts = on_workload(*expected[case.expect])
        if case.claim_documents is not None:
            claims_named = {"template": claims_template} if named else {}
            asserts.append({"hasDocuments": {"count": case.claim_documents}, **claims_named})
            if case.claim_documents == 1:
                asserts.append({"isKind": {"of": "ResourceClaimTemplate"}, **claims_named})
        test: dict[str, Any] = {"it": case.it}
        if case.values:
            test["values"] = case.values
        if case.set:
            test["set"] = set_keys(case.set)
        tests.append({**test, "asserts": asserts})
    body: dict[str, Any] = {"suite": f"{template}: {about}", "templates": [*dict.fromkeys([template, claims_template])]}
    if selected and pick["path"] == "metadata.name":
        body["release"] = {"name": release}  # the name is the release's (`{{ .Release.Name }}-server`), as rendered
    # the rewritten chart fails the render below Kubernetes 1.34 when it renders claims: pin a DRA cluster
    body["capabilities"] = {"majorVersion": 1, "minorVersion": 34, "apiVersions": ["resource.k8s.io/v1"]}
    body["tests"] = tests
    text = "# helm-unittest (https://github.com/helm-unittest/helm-unittest): helm unittest .\n"
    text += yaml.dump(body, Dumper=_Unaliased, sort_keys=False, default_flow_style=False, width=1000)
    return Change(suite_path(rel), None, text)


class _Unaliased(yaml.SafeDumper):
    """Each case written whole: values two cases share (the keys of a values file beside its device map) are not
    an anchor in the first and an alias (`*id001`) in the next. A map or list of scalars on one line
    (`exists: {path: ...}`, `documentSelector: {path: kind, value: Job}`): an assert reads as one line or two."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _scalars(items: Any) -> bool:
    return bool(items) and not any(isinstance(x, (dict, list)) for x in items)


_Unaliased.add_representer(
    dict, lambda d, data: d.represent_mapping("tag:yaml.org,2002:map", data, flow_style=_scalars(data.values()))
)
_Unaliased.add_representer(
    list, lambda d, data: d.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=_scalars(data))
)
