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


R9_POD = """\
apiVersion: batch/v1
kind: Job
metadata: {name: roce}
spec:
  template:
    metadata:
      annotations:
        k8s.v1.cni.cncf.io/networks: sriov-111, sriov-112
    spec:
      restartPolicy: Never
      containers:
      - name: app
        image: app:1
        resources:
          limits: {intel.com/sriov_111: 1, intel.com/sriov_112: 1}
"""


def test_sriov_vf_opt_in_migrates_with_the_network_of_the_annotation() -> None:
    """--sriov-vf-config: the pool becomes a selector on the attribute Multus matches against the NAD's resourceName
    (the device-plugin name), and the network the pod's annotation names becomes VfConfig{netAttachDefName}; the
    annotation goes, since the driver attaches that network itself (STANDALONE mode)."""
    result = run(SRIOV_POD, sriov_vf_config=True)
    assert "driver-config-needed" not in rules_of(result)
    sriov = "sriovnetwork.k8snetworkplumbingwg.io"
    (vf,) = [r for r in claim_requests(result) if r["exactly"]["deviceClassName"] == sriov]
    (selector,) = [s["cel"]["expression"] for s in vf["exactly"]["selectors"]]
    assert "device.attributes['k8s.cni.cncf.io'].resourceName == 'intel.com/sriov_111'" in selector
    rct = next(d for d in output_docs(result) if d["kind"] == "ResourceClaimTemplate")
    (config,) = [c for c in rct["spec"]["spec"]["devices"]["config"] if c["requests"] == [vf["name"]]]
    assert config["opaque"] == {
        "driver": "sriovnetwork.k8snetworkplumbingwg.io",
        "parameters": {
            "apiVersion": "sriovnetwork.k8snetworkplumbingwg.io/v1alpha1",
            "kind": "VfConfig",
            "netAttachDefName": "sriov-111",
            "ifName": "net1",
        },
    }
    pod = output_docs(result)[0]
    assert "k8s.v1.cni.cncf.io/networks" not in (pod["metadata"].get("annotations") or {})


def test_sriov_vf_opt_in_stays_report_only_when_the_network_cannot_be_told() -> None:
    """R9: two pools and two networks: which network uses which pool is in the NADs, not in the pod."""
    result = run(R9_POD, sriov_vf_config=True)
    assert rules_of(result).count("driver-config-needed") == 2
    assert all("sriov-111, sriov-112" in f.message for f in result.findings if f.rule == "driver-config-needed")
    assert result.rewritten is None


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


@pytest.mark.parametrize("flat", [False, True])
def test_a_crd_file_written_by_hand_with_anchors_merge_keys_and_yaml_11_booleans_reads_as_kubectl_output(
    tmp_path: Path, flat: bool
) -> None:
    """The CRD file is read from libyaml's events (its PyYAML node graph took 2 s of CPU for 5 MiB): a schema shared
    through an anchor, a merge key and `storage: yes` read as the safe loader reads them."""
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [_raycluster_crd(flat)]})
    assert "&id001" in text and "items: *id001" in text  # the group's schema, written once and aliased
    text = text.replace("items: *id001", "items: {<<: *id001, description: a worker group}")
    text = text.replace("storage: true", "storage: yes")
    path = tmp_path / "crds.yaml"
    path.write_text(text)

    result = run(RAYCLUSTER, crds=path)

    if flat:
        assert "crd-prunes-claims" not in rules_of(result) and claim_requests(result)
    else:
        assert rules_of(result) == ["crd-prunes-claims"] and result.rewritten is None


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


# -- A5, C1, C4, C6, B1: the extended-resource strategy -----------------------------------------------------------

INIT_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: er}
spec:
  initContainers:
  - name: warmup
    image: w:1
    resources:
      limits: {nvidia.com/gpu: 1}
  containers:
  - name: app
    image: a:1
    resources:
      limits: {nvidia.com/gpu: 2}
"""


def test_extended_resource_on_1_35_needs_the_confirmation_naming_gate_and_components(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dramigrate.cli import app

    manifest = tmp_path / "p.yaml"
    manifest.write_text(INIT_POD)
    args = ["fix", str(manifest), "--strategy", "extended-resource", "--kube-version", "1.35"]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2
    for word in ("DRAExtendedResource", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        assert word in refused.output
    assert "--assume-extended-resource-enabled" in refused.output
    assert CliRunner().invoke(app, [*args, "--assume-extended-resource-enabled"]).exit_code == 0
    # On 1.36 the gate is on by default: no confirmation.
    assert CliRunner().invoke(app, [*args[:-1], "1.36"]).exit_code == 0


@pytest.mark.parametrize(("kube", "warned"), [("1.34", True), ("1.35", False), ("1.36", False)])
def test_init_container_warning_only_where_kubernetes_gives_it_its_own_device(kube: str, warned: bool) -> None:
    result = run(INIT_POD, fix=False, kube=kube, strategy="extended-resource")
    assert ("extended-resource-init" in rules_of(result)) is warned


@pytest.mark.parametrize(
    ("resource", "needle"),
    [
        ("nvidia.com/gpu", "25.12.0"),  # C4: older NVIDIA charts ship gpu.nvidia.com without extendedResourceName
        ("amd.com/gpu", "gpu.amd.com-spx"),  # C6: AutoPartition moves the mapping to gpu.amd.com-spx
    ],
)
def test_extended_resource_message_states_when_the_chart_maps_the_resource(resource: str, needle: str) -> None:
    result = run(INIT_POD.replace("nvidia.com/gpu", resource), fix=False, strategy="extended-resource")
    messages = [f.message for f in result.findings if f.rule == "extended-resource"]
    assert messages and all(needle in m for m in messages)


def test_extended_resource_class_for_efa_keeps_the_vendor_class_selector() -> None:
    result = run(INIT_POD.replace("nvidia.com/gpu", "vpc.amazonaws.com/efa"), fix=False, strategy="extended-resource")
    (cls,) = result.classes.values()
    assert cls.extended_resource_name == "vpc.amazonaws.com/efa"
    assert any("Elastic Fabric Adapter (EFA)" in s for s in cls.selectors)


# -- A4, B9: KubeRay's ray start flags ----------------------------------------------------------------------------

RAY_GROUP = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: head, image: ray:2}]
  workerGroupSpecs:
  - groupName: acc
    rayStartParams: PARAMS
    template:
      spec:
        containers:
        - name: ray-worker
          image: ray:2
          resources:
            limits: LIMITS
        - name: sidecar
          image: s:1
          resources:
            limits: {nvidia.com/gpu: 1}
"""


@pytest.mark.parametrize(
    ("limits", "params", "expected"),
    [
        # A4: KubeRay turns google.com/tpu into resources {"TPU": n}; Ray's autoscaler plans TPU groups from it.
        ("{google.com/tpu: 4}", "{}", {"resources": "'{\"TPU\":4}'"}),
        # ... merged into resources the group already declares, as KubeRay merges them.
        ("{google.com/tpu: 4}", """{resources: '{"custom": 1.5}'}""", {"resources": """'{"TPU":4,"custom":1.5}'"""}),
        # ... but not when the group already names an accelerator resource.
        ("{google.com/tpu: 4}", """{resources: '{"TPU": 8}'}""", {"resources": '{"TPU": 8}'}),
        # B9: KubeRay never counted Intel GPUs as GPUs (IsGPUResourceKey), so no num-gpus appears.
        ("{gpu.intel.com/i915: 1}", "{}", {}),
        # num-gpus comes from the Ray container alone, not from the sidecar's GPU.
        ("{nvidia.com/gpu: 2}", "{}", {"num-gpus": "2"}),
        # `rayStartParams: null` (a chart's toYaml of a null values map) gets the map the finding says was set
        ("{nvidia.com/gpu: 2}", "null", {"num-gpus": "2"}),
    ],
)
def test_ray_start_params_are_what_kuberay_derived(limits: str, params: str, expected: dict[str, str]) -> None:
    result = run(RAY_GROUP.replace("LIMITS", limits).replace("PARAMS", params))
    (cluster,) = [d for d in output_docs(result) if d["kind"] == "RayCluster"]
    assert cluster["spec"]["workerGroupSpecs"][0]["rayStartParams"] == expected


# -- A2, B2: AMD ------------------------------------------------------------------------------------------------------

AMD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: amd}
spec:
  containers:
  - name: c
    image: c:1
    resources:
      limits: {RESOURCE: 1}
"""


def _selects(selectors: list[str], attributes: dict[str, str]) -> bool:
    """Evaluate the emitted CEL on a device with these gpu.amd.com attributes."""
    from dramigrate.cel import compile_selector

    return all(compile_selector(s).matches("gpu.amd.com", {"gpu.amd.com": attributes}, {}) for s in selectors)


@pytest.mark.parametrize(
    ("resource", "device", "chosen"),
    [
        # A2: a static (DCM) partition, the device plugin's layout, and an AutoPartition device both match.
        ("amd.com/cpx_nps4", {"type": "amdgpu-partition", "partitionProfile": "cpx_nps4"}, True),
        ("amd.com/cpx_nps4", {"type": "amdgpu-partition", "computePartition": "cpx", "memoryPartition": "nps4"}, True),
        ("amd.com/cpx_nps4", {"type": "amdgpu-partition", "partitionProfile": "dpx_nps2"}, False),
        ("amd.com/cpx_nps4", {"type": "vfio", "partitionProfile": "cpx_nps4"}, False),
        # B2: a whole-GPU request never gets an AutoPartition fraction or a VFIO twin.
        ("amd.com/gpu", {"type": "amdgpu"}, True),
        ("amd.com/gpu", {"type": "amdgpu", "computePartition": "spx", "memoryPartition": "nps1"}, True),
        ("amd.com/gpu", {"type": "amdgpu-partition", "computePartition": "cpx", "memoryPartition": "nps4"}, False),
        ("amd.com/gpu", {"type": "vfio"}, False),
    ],
)
def test_amd_requests_select_what_the_device_plugin_gave(resource: str, device: dict[str, str], chosen: bool) -> None:
    result = run(AMD_POD.replace("RESOURCE", resource))
    (req,) = claim_requests(result)
    selectors = [s["cel"]["expression"] for s in req["exactly"]["selectors"]]
    assert _selects(selectors, device) is chosen
    assert ("mapping-caution" in rules_of(result)) is (resource != "amd.com/gpu")


# -- B10, C2, C5: quotas ------------------------------------------------------------------------------------------

QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: ml}
spec:
  hard:
    requests.nvidia.com/gpu: 8
    requests.nvidia.com/mig-1g.5gb: 8
    requests.nvidia.com/mig-3g.20gb: 2
"""


def _hard(result: FileResult) -> dict[str, Any]:
    (quota,) = output_docs(result)
    return quota["spec"]["hard"]


def test_per_profile_mig_quotas_are_not_merged_into_one_class_key() -> None:
    result = run(QUOTA)
    per_profile = [f for f in result.findings if f.rule == "quota-per-profile"]
    assert sorted(f.resource for f in per_profile) == [
        "requests.nvidia.com/mig-1g.5gb",
        "requests.nvidia.com/mig-3g.20gb",
    ]
    assert "mig.nvidia.com.deviceclass.resource.k8s.io/devices" not in _hard(result)
    assert _hard(result)["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == 8


@pytest.mark.parametrize(("kube", "rule"), [("1.35", "quota-legacy-device"), ("1.36", "quota-legacy-covered")])
def test_legacy_gpu_quota_message_follows_the_target_version(kube: str, rule: str) -> None:
    result = run(QUOTA, fix=False, kube=kube)
    (finding,) = [f for f in result.findings if f.resource == "requests.nvidia.com/gpu"]
    assert finding.rule == rule
    if rule == "quota-legacy-covered":  # 1.36 charges claims on a class with extendedResourceName to the old key
        assert "25.12.0" in finding.message and finding.severity.value == "info"


def test_extended_resource_strategy_leaves_quotas_to_the_legacy_keys() -> None:
    result = run(QUOTA, strategy="extended-resource")
    assert result.rewritten is None
    assert not [f for f in result.findings if f.rule.startswith("quota")]


# -- B4: TPU hosts are allocated whole ------------------------------------------------------------------------------

TPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: tpu}}
spec:
  nodeSelector:
    cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
{selector}
  containers:
  - name: jax
    image: jax:1
    resources:
      limits: {{google.com/tpu: {count}}}
"""

MACHINE = "node.kubernetes.io/instance-type"


@pytest.mark.parametrize(
    ("selector", "count", "rule", "migrated"),
    [
        pytest.param(f"    {MACHINE}: ct5lp-hightpu-4t", 1, "tpu-partial-host", False, id="1-of-4"),
        pytest.param("    cloud.google.com/gke-accelerator-count: '8'", 4, "tpu-partial-host", False, id="4-of-8"),
        pytest.param(f"    {MACHINE}: ct5lp-hightpu-4t", 4, None, True, id="whole-host"),
        pytest.param("", 4, "tpu-host-chips", True, id="host-unknown"),
    ],
)
def test_tpu_partial_host_requests_are_not_migrated(
    selector: str, count: int, rule: str | None, migrated: bool
) -> None:
    """The TPU DRA driver prepares a claim only for all of a host's chips (ValidateTpuRequest: "you must request all
    N chips on this node together") and sets libtpu's environment for all of them."""
    result = run(TPU_POD.format(selector=selector, count=count))
    tpu = [f for f in result.findings if f.rule in ("tpu-partial-host", "tpu-host-chips")]
    assert [f.rule for f in tpu] == ([rule] if rule else [])
    if rule == "tpu-partial-host":
        assert f"{count} of" in tpu[0].message and tpu[0].severity.value == "warning"
    assert (result.rewritten is not None and bool(claim_requests(result))) is migrated


# -- C8: the ExtendedResourceToleration toleration is a setting -----------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_extended_resource_toleration_follows_the_setting(enabled: bool) -> None:
    """The admission plugin is not in the default set (GKE enables it): the toleration that stands in for it is
    written by default and names the setting that leaves it out; without the plugin it only widens placement."""
    result = run(INIT_POD, extended_resource_toleration=enabled)
    pod = output_docs(result)[0]
    wanted = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert (pod["spec"].get("tolerations") == [wanted]) is enabled
    if enabled:
        (change,) = [c for c in result.changes if "added toleration" in c]
        assert "--no-extended-resource-toleration" in change
    else:
        assert claim_requests(result), "the pod is still migrated"


def test_the_chart_helper_follows_the_extended_resource_toleration_setting(tmp_path: Path) -> None:
    """A chart rewritten with the setting off renders no toleration, as `fix` writes none."""
    from dramigrate.helm.engine import claims_text, helper_text, wrap_source
    from dramigrate.helm.prove import first_difference, objects
    from dramigrate.helm.render import RenderOptions, render_chart

    settings = Settings(extended_resource_toleration=False)
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "w.yaml").write_text(wrap_source("c", "templates/w.yaml", INIT_POD))
    (chart / "templates" / "_dramigrate.tpl").write_text(helper_text("c", RULES, settings))
    (chart / "templates" / "dramigrate-resourceclaimtemplates.yaml").write_text(claims_text("c", ["templates/w.yaml"]))
    core = run(INIT_POD, extended_resource_toleration=False)
    rendered = "".join("---\n" + m.text for m in render_chart(chart, RenderOptions()))
    assert "tolerations" not in rendered
    assert first_difference(objects(core.rewritten or ""), objects(rendered)) == ""


CRON_WORKFLOW = """\
apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata:
  name: nightly
spec:
  schedule: "0 2 * * *"
  workflowSpec:
    entrypoint: train
    templates:
    - name: train
      container:
        image: trainer:1
        resources:
          limits:
            nvidia.com/gpu: 4
"""


def _argo_minimal_crd() -> dict[str, Any]:
    """Argo's install CRDs keep every field (x-kubernetes-preserve-unknown-fields), so none of them tells whether
    the running controller knows resourceClaims."""
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "cronworkflows.argoproj.io"},
        "spec": {
            "group": "argoproj.io",
            "names": {"kind": "CronWorkflow", "plural": "cronworkflows"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def test_argo_templates_get_their_claims_and_the_release_that_passes_them_on(tmp_path: Path) -> None:
    """An Argo CronWorkflow's template is its pod: the claim goes on the template (Argo Workflows 4.1.0+), the
    container names it, and the warning stays even when the installed CRD keeps every field, since it is an older
    controller that drops them."""
    crds = tmp_path / "crds.yaml"
    crds.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [_argo_minimal_crd()]}))
    for result in (run(CRON_WORKFLOW), run(CRON_WORKFLOW, crds=crds)):
        template = output_docs(result)[0]["spec"]["workflowSpec"]["templates"][0]
        assert template["container"]["resources"] == {"claims": [{"name": "gpu"}]}
        assert [c["name"] for c in template["resourceClaims"]] == ["gpu"]
        assert [r["exactly"]["count"] for r in claim_requests(result)] == [4]
        warnings = [f for f in result.findings if f.rule == "operator-version"]
        assert len(warnings) == 1 and "Argo Workflows 4.1.0" in warnings[0].message
        assert "older controller drops them" in warnings[0].message
