"""Semantic safety (issue 9 items 3 and 5): no migrated pod loses its devices or starts differently in silence.

Each test names the review item (../shared/reference/semantic-review.md) it guards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dramigrate.config import Settings
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()


def run(text: str, fix: bool = True, kube: str = "1.36", **settings: Any) -> FileResult:
    result = run_file(Job("in.yaml", text.encode(), fix), RULES, Settings(**settings), Target.parse(kube))
    assert result.error is None, str(result.error)
    return result


def rules_of(result: FileResult) -> list[str]:
    return [f.rule for f in result.findings]


def output_docs(result: FileResult) -> list[dict[str, Any]]:
    assert result.rewritten is not None
    return [d for d in yaml.safe_load_all(result.rewritten) if d]


def claim_requests(result: FileResult) -> list[dict[str, Any]]:
    rcts = [d for d in output_docs(result) if d["kind"] == "ResourceClaimTemplate"]
    return [r for rct in rcts for r in rct["spec"]["spec"]["devices"]["requests"]]


# -- A1: SR-IOV VFs ---------------------------------------------------------------------------------------------

SRIOV_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: roce
  annotations:
    k8s.v1.cni.cncf.io/networks: sriov-111
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        intel.com/sriov_111: 1
        nvidia.com/gpu: 1
"""


def test_sriov_vf_is_reported_not_migrated_and_the_gpu_beside_it_still_is() -> None:
    result = run(SRIOV_POD)
    vf = [f for f in result.findings if f.resource == "intel.com/sriov_111"]
    assert [f.rule for f in vf] == ["driver-config-needed"]
    assert "netAttachDefName" in vf[0].message and "resourceName" in vf[0].message
    pod = output_docs(result)[0]
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"intel.com/sriov_111": 1}
    assert [r["exactly"]["deviceClassName"] for r in claim_requests(result)] == ["gpu.nvidia.com"]


# -- A3: CRDs that prune claims ---------------------------------------------------------------------------------

RAYCLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: llm
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: head
          image: ray:2
  workerGroupSpecs:
  - groupName: gpu
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: worker
          image: ray:2
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def _pod_spec_schema(flat: bool) -> dict[str, Any]:
    """A PodSpec schema as controller-gen writes it: before Kubernetes 1.31 the template name sits under `source`."""
    ref = {"resourceClaimTemplateName": {"type": "string"}, "resourceClaimName": {"type": "string"}}
    claim = {"name": {"type": "string"}, **(ref if flat else {"source": {"type": "object", "properties": ref}})}
    container_claim = {"name": {"type": "string"}, **({"request": {"type": "string"}} if flat else {})}
    container = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "resources": {
                "type": "object",
                "properties": {
                    "limits": {"type": "object", "additionalProperties": {"type": "string"}},
                    "claims": {"type": "array", "items": {"type": "object", "properties": container_claim}},
                },
            },
        },
    }
    return {
        "type": "object",
        "properties": {
            "containers": {"type": "array", "items": container},
            "initContainers": {"type": "array", "items": container},
            "resourceClaims": {"type": "array", "items": {"type": "object", "properties": claim}},
        },
    }


def _raycluster_crd(flat: bool) -> dict[str, Any]:
    group = {
        "type": "object",
        "properties": {
            "groupName": {"type": "string"},
            "rayStartParams": {"type": "object", "additionalProperties": {"type": "string"}},
            "template": {"type": "object", "properties": {"spec": _pod_spec_schema(flat)}},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"headGroupSpec": group, "workerGroupSpecs": {"type": "array", "items": group}},
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rayclusters.ray.io"},
        "spec": {
            "group": "ray.io",
            "names": {"kind": "RayCluster", "plural": "rayclusters"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


@pytest.fixture
def crd_file(tmp_path: Path):  # type: ignore[no-untyped-def]
    def write(flat: bool) -> Path:
        path = tmp_path / f"crds-{flat}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [_raycluster_crd(flat)]}))
        return path

    return write


def test_custom_resource_claims_name_the_operator_release_that_keeps_them() -> None:
    result = run(RAYCLUSTER)
    warnings = [f for f in result.findings if f.rule == "operator-version"]
    assert len(warnings) == 1 and "KubeRay 1.3.1" in warnings[0].message and "--crds" in warnings[0].message
    assert warnings[0].line == 2  # the object's kind
    assert claim_requests(result)  # still migrated: the rewrite is right for current operators


def test_installed_crd_that_prunes_claims_keeps_the_request(crd_file) -> None:  # type: ignore[no-untyped-def]
    result = run(RAYCLUSTER, crds=crd_file(False))
    assert rules_of(result) == ["crd-prunes-claims"]
    assert "resourceClaimTemplateName" in result.findings[0].message
    assert "KubeRay 1.3.1" in result.findings[0].message
    assert result.rewritten is None


def test_installed_crd_that_keeps_claims_is_migrated_without_a_warning(crd_file) -> None:  # type: ignore[no-untyped-def]
    result = run(RAYCLUSTER, crds=crd_file(True))
    assert "operator-version" not in rules_of(result) and "crd-prunes-claims" not in rules_of(result)
    assert claim_requests(result)


def test_crds_flag_reads_kubectl_output_and_rejects_a_file_without_crds(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dramigrate.cli import app

    manifest = tmp_path / "ray.yaml"
    manifest.write_text(RAYCLUSTER)
    crds = tmp_path / "crds.yaml"
    crds.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [_raycluster_crd(False)]}))
    out = CliRunner().invoke(app, ["lint", str(manifest), "--crds", str(crds), "--format", "json"])
    assert out.exit_code == 0, out.output  # the request is a warning now, not a fixable error
    assert '"crd-prunes-claims"' in out.stdout
    crds.write_text("apiVersion: v1\nkind: List\nitems: []  # nothing installed\n")
    bad = CliRunner().invoke(app, ["lint", str(manifest), "--crds", str(crds)])
    assert bad.exit_code == 2 and "no CustomResourceDefinition" in bad.output


# -- C7: labels and profiles -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "selector"),
    [
        ("nvidia.com/mig-1g.10gb.me", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb+me'"),
        ("nvidia.com/mig-1g.24gb.gfx", "device.attributes['gpu.nvidia.com'].profile == '1g.24gb+gfx'"),
        ("nvidia.com/mig-1g.24gb-me", "device.attributes['gpu.nvidia.com'].profile == '1g.24gb-me'"),
    ],
)
def test_mig_profiles_with_attributes_are_mapped(resource: str, selector: str) -> None:
    result = run(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: mig}}
spec:
  containers:
  - name: c
    image: c:1
    resources:
      limits: {{{resource}: 1}}
""")
    assert "unknown-resource" not in rules_of(result)
    (req,) = claim_requests(result)
    assert req["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert [s["cel"]["expression"] for s in req["exactly"]["selectors"]] == [selector]


def test_rubin_family_label_is_translated() -> None:
    result = run("""\
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  nodeSelector: {nvidia.com/gpu.family: rubin}
  containers:
  - name: c
    image: c:1
    resources:
      limits: {nvidia.com/gpu: 1}
""")
    assert "inexact-label" not in rules_of(result)
    (req,) = claim_requests(result)
    (selector,) = [s["cel"]["expression"] for s in req["exactly"]["selectors"]]
    assert selector.endswith("device.attributes['gpu.nvidia.com'].architecture == 'Rubin'")
