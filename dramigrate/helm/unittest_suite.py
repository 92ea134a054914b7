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
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.rewrite import Change

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
    """Paths of `<resource>` keys directly under a container's `resources.limits` or `resources.requests`."""
    if isinstance(node, dict):
        if resource in node and len(at) >= 2 and at[-2] == "resources" and at[-1] in ("limits", "requests"):
            out.append([*at, resource])
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


def count_key(expr: str) -> str | None:
    """The values key (`gpu.count`) a count expression reads (`.Values.gpu.count`, `int .Values.gpu.count`)."""
    m = _VALUES_PATH.fullmatch(expr.strip())
    return m.group(1) if m else None


def suite(
    rel: str,
    claim_file: str,
    original: list[dict[str, Any]],
    resource: str,
    count_expr: str | None,
    claim: str,
    switch: str,
    claim_documents: int | None,
) -> Change | None:
    """The suite for one rewritten workload template, or None when its default render does not show the
    shape the suite can pin (one document, one device key, no claims of its own already)."""
    if len(original) != 1:
        return None
    (doc,) = original
    found = _device_paths(doc, resource, [], [])
    if len(found) != 1:
        return None
    key_path = found[0]
    container = key_path[:-3]
    if len(container) < 2 or not isinstance(container[-1], int):
        return None
    pod = container[:-2]
    pod_spec = _get(doc, pod)
    if pod_spec.get("resourceClaims") or _get(doc, container).get("resources", {}).get("claims"):
        return None
    template = rel.removeprefix("templates/")
    claims_template = claim_file.removeprefix("templates/")
    device, pod_claims = path_text(key_path), path_text([*pod, "resourceClaims"])
    container_claims = path_text([*container, "resources", "claims"])
    kind = str(doc.get("kind", ""))

    def on_workload(*asserts: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**a, "template": template} for a in ({"isKind": {"of": kind}}, *asserts)]

    def claim_docs(count: int | None) -> list[dict[str, Any]]:
        return [] if count is None else [{"hasDocuments": {"count": count}, "template": claims_template}]

    tests: list[dict[str, Any]] = [
        {
            "it": f"renders the {resource} device-plugin request and no claim with the DRA switch off",
            "set": {switch: False},
            "asserts": [
                *on_workload(
                    {"exists": {"path": device}},
                    {"notExists": {"path": pod_claims}},
                    {"notExists": {"path": container_claims}},
                ),
                *claim_docs(0 if claim_documents is not None else None),
            ],
        },
        {
            "it": f"renders a ResourceClaim and no {resource} request with the DRA switch on",
            "set": {switch: True},
            "asserts": [
                *on_workload(
                    {"notExists": {"path": device}},
                    {"equal": {"path": f"{pod_claims}[0].name", "value": claim}},
                    {"equal": {"path": f"{container_claims}[0].name", "value": claim}},
                ),
                *claim_docs(claim_documents),
                *(
                    [{"isKind": {"of": "ResourceClaimTemplate"}, "template": claims_template}]
                    if claim_documents == 1
                    else []
                ),
            ],
        },
    ]
    knob = count_key(count_expr) if count_expr else None
    if knob:
        tests.append(
            {
                "it": f"renders no claim with the DRA switch on and {knob} 0",
                "set": {switch: True, knob: 0},
                "asserts": [
                    *on_workload(
                        {"notExists": {"path": device}},
                        {"notExists": {"path": pod_claims}},
                        {"notExists": {"path": container_claims}},
                    ),
                    *claim_docs(0 if claim_documents is not None else None),
                ],
            }
        )
    body = {
        "suite": f"{template}: DRA ResourceClaims behind the {switch} switch",
        "templates": [template, claims_template],
        # the rewritten chart fails the render below Kubernetes 1.34 with the switch on: pin a DRA cluster
        "capabilities": {"majorVersion": 1, "minorVersion": 34, "apiVersions": ["resource.k8s.io/v1"]},
        "tests": tests,
    }
    text = "# helm-unittest (https://github.com/helm-unittest/helm-unittest): helm unittest .\n"
    text += yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)
    return Change(suite_path(rel), None, text)
