"""Session 34's red team on plain manifests and kustomize trees (issue 11, "How it will be checked"): each attack in
a folder of good files, the good files still migrated, the bad one named at its line and left as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

KUBECTL = shutil.which("kubectl")


def kubernetes_reads(manifest: Path) -> dict[str, object]:
    """The first container's resources as kubectl decodes the file (sigs.k8s.io/yaml over go-yaml v2, the reader
    of the API server too), without a cluster."""
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "label", "--local", "-o", "json", "-f", str(manifest), "seen=yes"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    resources: dict[str, object] = json.loads(out)["spec"]["containers"][0]["resources"]
    return resources


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    ("resources", "kubernetes", "line"),
    [
        # lint said nothing (exit 0): YAML 1.1 keeps `limits: {cpu: 1}`, go-yaml takes the merged limits
        ("limits: {cpu: 1}\n      <<: {limits: {nvidia.com/gpu: 2}}", {"limits": {"nvidia.com/gpu": 2}}, 10),
        # fix wrote a claim of 1 device where Kubernetes gives 4
        ("limits:\n        nvidia.com/gpu: 1\n        <<: {nvidia.com/gpu: 4}", {"limits": {"nvidia.com/gpu": 4}}, 11),
        # fix removed the request as a zero count where Kubernetes gives 4
        ("limits:\n        nvidia.com/gpu: 0\n        <<: {nvidia.com/gpu: 4}", {"limits": {"nvidia.com/gpu": 4}}, 11),
    ],
    ids=["limits", "count", "zero"],
)
def test_a_key_a_later_merge_key_sets_again_is_bad_input_at_its_line(
    tmp_path: Path, resources: str, kubernetes: dict[str, object], line: int
) -> None:
    """go-yaml v2 (sigs.k8s.io/yaml, which kubectl and the API server read manifests with) applies a merge key `<<`
    where it stands: a key written before it is replaced by the merged value, where YAML 1.1 (PyYAML, ruamel) keeps
    the mapping's own key. dramigrate read the YAML way: a GPU request that only Kubernetes sees passed the gate,
    and fix rewrote the count Kubernetes does not give. Such a mapping is now bad input at the key it replaces."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad").replace("limits:\n        nvidia.com/gpu: 1", resources))
    before = bad.read_bytes()
    assert kubernetes_reads(bad) == kubernetes  # what the API server would be given

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, ".", "--format", "json"], cwd=tree)
        report = json.loads(out)
        assert code == 2, (command, out, err)
        [error] = [e for e in report["errors"] if e["file"] == "bad.yaml"]
        assert error["line"] == line and "merge key" in error["message"], error
        assert [f for f in report["findings"] if f["file"] == "bad.yaml"] == []
    assert bad.read_bytes() == before
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("where", ["manifest", "annotation"])
def test_a_device_request_merged_from_a_list_of_mappings_is_seen(tmp_path: Path, where: str) -> None:
    """`<<: [{limits: {nvidia.com/gpu: 2}}, {limits: {cpu: 1}}]`: the first mapping of a merged list gives a key
    (YAML, go-yaml, ruamel), so Kubernetes runs the container with 2 GPUs. lint said nothing (exit 0): its first
    look reads with PyYAML, whose merge (6.0.3+) tells merged keys apart by the identity of their text, so both
    `limits` stayed and the last won. The same in a manifest held as text (an annotation, Argo's podSpecPatch)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    merged = "resources:\n      <<: [{limits: {nvidia.com/gpu: 2}}, {limits: {cpu: 1}}]"
    pod = ONE_GPU_POD.format(name="bad").replace("resources:\n      limits:\n        nvidia.com/gpu: 1", merged)
    bad = tree / "bad.yaml"
    if where == "manifest":
        bad.write_text(pod)
        assert kubernetes_reads(bad) == {"limits": {"nvidia.com/gpu": 2}}
    else:
        (tree / "pod.yaml").write_text(pod)
        assert kubernetes_reads(tree / "pod.yaml") == {"limits": {"nvidia.com/gpu": 2}}
        (tree / "pod.yaml").unlink()
        bad.write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  annotations:\n    pod: |\n"
            + "".join(f"      {line}\n" for line in pod.splitlines())
        )

    code, out, _ = run_dramigrate(["lint", "bad.yaml", "--format", "json"], cwd=tree)

    said = {f["rule"] for f in json.loads(out)["findings"]}
    if where == "manifest":
        assert code == 1 and "legacy-device-request" in said, out
    else:  # a request held as text is a warning, as designed
        assert "embedded-device-request" in said, out


def kubernetes_objects(manifest: Path) -> list[dict[str, object]]:
    """The objects kubectl reads in a file (a list flattened into its items), without a cluster."""
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "label", "--local", "-o", "json", "-f", str(manifest), "seen=yes"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    decoder, objects, at = json.JSONDecoder(), [], 0
    while out[at:].strip():
        obj, at = decoder.raw_decode(out, len(out) - len(out[at:].lstrip()))
        objects.append(obj)
    return objects


GPU_POD_ITEM = (
    "- metadata: {name: p}\n  spec: {containers: [{name: a, image: b, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    "head",
    [
        "apiVersion: v1\nkind: PodList\n",  # a typed list, its items without kind: kubectl makes them Pods
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",  # any object holding items
        "json",  # the same PodList as JSON: the templates join its items (kubectl refuses a list inside a list)
    ],
    ids=["pod-list", "items-of-a-config-map", "pod-list-json"],
)
def test_an_object_kubectl_reads_as_a_list_has_its_items_checked(tmp_path: Path, head: str) -> None:
    """kubectl (apimachinery's unstructured decoder) reads any object with an `items` list as a list and applies
    its items, an item with neither kind nor apiVersion taking the list's kind less `List` and its apiVersion:
    `kind: PodList` with a GPU pod among its items creates the pod. lint took only `kind: List` for a list and
    warned `unknown-kind` (exit 0): a gate bypass. The items are now the objects checked and migrated."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / ("bad.json" if head == "json" else "bad.yaml")
    if head == "json":
        item = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "b"}]}}
        item["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}  # type: ignore[index]
        bad.write_text(json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [item]}, indent=2))
    elif "PodList" in head:
        bad.write_text(head + "items:\n" + GPU_POD_ITEM)
    else:
        bad.write_text(
            head + "items:\n" + GPU_POD_ITEM.replace("- metadata", "- apiVersion: v1\n  kind: Pod\n  metadata")
        )
    [pod] = kubernetes_objects(bad)
    assert pod["kind"] == "Pod" and "nvidia.com/gpu" in json.dumps(pod)

    code, out, _ = run_dramigrate(["lint", bad.name, "--format", "json"], cwd=tree)
    assert code == 1, out
    assert "legacy-device-request" in {f["rule"] for f in json.loads(out)["findings"]}

    code, out, _ = run_dramigrate(["fix", "."], cwd=tree)
    assert code == 0, out
    objects = kubernetes_objects(bad)
    [pod] = [o for o in objects if o["kind"] == "Pod"]
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}  # type: ignore[index]
    [template] = [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    assert json.dumps(template).count('"count": 1') == 1
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def test_a_kustomize_resource_not_named_as_yaml_is_linted_as_fix_migrates_it(tmp_path: Path) -> None:
    """kustomize reads a resource whatever its file is called: a base listing `pod.txt` (a GPU pod) builds into
    every overlay's pods, and fix migrated it with its graph, but lint read only .yaml, .yml and .json files and
    said nothing (exit 0): a gate bypass. lint now checks the resources of a device graph the walk left out."""
    tree = tmp_path / "tree"
    (tree / "base").mkdir(parents=True)
    (tree / "overlay").mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "base" / "pod.txt").write_text(ONE_GPU_POD.format(name="based"))
    (tree / "base" / "kustomization.yaml").write_text("resources:\n- pod.txt\n")
    (tree / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\n")

    code, out, _ = run_dramigrate(["lint", "base", "overlay", "--format", "json"], cwd=tree)

    assert code == 1, out
    [finding] = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert (finding["file"], finding["line"]) == ("base/pod.txt", 11)
    code, out, _ = run_dramigrate(["fix", "."], cwd=tree)
    assert code == 0, out
    assert "resourceClaimTemplateName" in (tree / "base" / "pod.txt").read_text()


PINNED_BASE_POD = ONE_GPU_POD.format(name="app").replace("nvidia.com/gpu: 1", 'cpu: "1"')
COPIES = {
    # a replacement whose target names the device key in brackets, kustomize's spelling of a key holding dots
    "replacement-bracket": "replacements:\n- source: {kind: ConfigMap, name: cfg, fieldPath: data.count}\n"
    "  targets:\n  - select: {kind: Pod, name: app}\n"
    "    fieldPaths: ['spec.containers.0.resources.limits.[nvidia.com/gpu]']\n    options: {create: true}\n",
    # a replacement, a JSON6902 copy and a move of a map holding the device key into a container's limits
    "replacement-map": "replacements:\n- source: {kind: ConfigMap, name: cfg, fieldPath: data}\n"
    "  targets:\n  - select: {kind: Pod, name: app}\n    fieldPaths: [spec.containers.0.resources.limits]\n",
    "json6902-copy": "patches:\n- target: {kind: Pod, name: app}\n  patch: |\n    - op: copy\n"
    "      from: /metadata/labels\n      path: /spec/containers/0/resources/limits\n",
    "json6902-move": "patches:\n- target: {kind: Pod, name: app}\n  patch: |\n    - op: move\n"
    "      from: /metadata/labels\n      path: /spec/containers/0/resources/requests\n",
}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize("overlay", list(COPIES.values()), ids=list(COPIES))
def test_a_kustomize_entry_that_copies_a_device_request_into_a_pod_is_named(tmp_path: Path, overlay: str) -> None:
    """lint builds nothing and reads the device fields a patch or a replacement sets from their text: a device key
    that reaches the build from elsewhere (a ConfigMap's `data` or the pod's own labels `{nvidia.com/gpu: "2"}`
    copied whole into `limits`, or a target path spelling the key in brackets) was not seen at all, though the
    overlay's pod asks for the GPU: lint said nothing (exit 0) and fix left the graph without a word. It is now
    named as any replacement reaching a device field is (kustomize-device-field), and the graph left as it is."""
    tree = tmp_path / "tree"
    (tree / "base").mkdir(parents=True)
    (tree / "overlay").mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    pod = PINNED_BASE_POD.replace("  name: app\n", '  name: app\n  labels: {nvidia.com/gpu: "2"}\n')
    (tree / "base" / "pod.yaml").write_text(pod)
    config = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {"nvidia.com/gpu": "2"}\n'
    (tree / "base" / "cm.yaml").write_text(
        config.replace('{"nvidia.com/gpu": "2"}', "{count: '2'}", "count" in overlay)
    )
    (tree / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n- cm.yaml\n")
    (tree / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\n" + overlay)
    built = subprocess.run([KUBECTL, "kustomize", str(tree / "overlay")], capture_output=True, text=True, check=True)
    [limits] = [d for d in built.stdout.split("---\n") if "kind: Pod" in d]
    assert "nvidia.com/gpu: " in limits.split("resources:")[1]  # the built pod asks for the GPU
    before = {p: p.read_bytes() for p in (tree / "base").iterdir()} | {tree / "overlay" / "kustomization.yaml": b""}
    before[tree / "overlay" / "kustomization.yaml"] = (tree / "overlay" / "kustomization.yaml").read_bytes()

    code, out, _ = run_dramigrate(["lint", "overlay", "base", "--format", "json"], cwd=tree)

    assert [f["file"] for f in json.loads(out)["findings"] if f["rule"] == "kustomize-device-field"] == [
        "overlay/kustomization.yaml"
    ], out
    code, out, _ = run_dramigrate(["fix", "."], cwd=tree)
    assert {p: p.read_bytes() for p in before} == before
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


LABEL_INTO_LIMITS = "- path: spec/containers[]/resources/limits\n  kind: Pod\n  create: true\n"
TRANSFORMERS = {
    # a labels entry whose own fieldSpecs put the label in the containers' limits
    "labels-fields": (
        "overlay/kustomization.yaml",
        {
            "overlay/kustomization.yaml": 'labels:\n- pairs: {nvidia.com/gpu: "1"}\n  fields:\n'
            + "".join(f"  {line}\n" for line in LABEL_INTO_LIMITS.splitlines())
        },
    ),
    # commonAnnotations, with a configurations file adding that path to the annotations' fieldSpecs
    "annotations-configuration": (
        "overlay/conf.yaml",
        {
            "overlay/kustomization.yaml": 'commonAnnotations: {nvidia.com/gpu: "1"}\nconfigurations:\n- conf.yaml\n',
            "overlay/conf.yaml": "commonAnnotations:\n" + LABEL_INTO_LIMITS,
        },
    ),
    # the replicas count, with a configurations file adding a device key's path (its slash escaped) to its fieldSpecs
    "replicas-configuration": (
        "overlay/conf.yaml",
        {
            "overlay/kustomization.yaml": "replicas:\n- {name: app, count: 3}\nconfigurations:\n- conf.yaml\n",
            "overlay/conf.yaml": "replicas:\n- path: 'spec/containers[]/resources/limits/nvidia.com\\/gpu'\n"
            "  kind: Pod\n  create: true\n",
        },
    ),
    # the same labels entry in a component
    "component-labels": (
        "comp/kustomization.yaml",
        {
            "overlay/kustomization.yaml": "components:\n- ../comp\n",
            "comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            'labels:\n- pairs: {nvidia.com/gpu: "1"}\n  fields:\n'
            + "".join(f"  {line}\n" for line in LABEL_INTO_LIMITS.splitlines()),
        },
    ),
}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(("named", "files"), list(TRANSFORMERS.values()), ids=list(TRANSFORMERS))
def test_a_field_kustomize_writes_into_a_pods_limits_is_named(
    tmp_path: Path, named: str, files: dict[str, str]
) -> None:
    """kustomize writes a label or an annotation wherever its fieldSpecs say, creating the field: a label
    `nvidia.com/gpu: "1"` written into `spec/containers[]/resources/limits` is a GPU request in every pod of the
    overlay. lint said nothing (exit 0) and fix left the graph without a word; it is now kustomize-device-field
    where the fieldSpec is written, and the graph is left as it is."""
    tree = tmp_path / "tree"
    (tree / "base").mkdir(parents=True)
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "base" / "pod.yaml").write_text(PINNED_BASE_POD)
    (tree / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    for rel, text in files.items():
        (tree / rel).parent.mkdir(exist_ok=True)
        (tree / rel).write_text(("resources:\n- ../base\n" if rel == "overlay/kustomization.yaml" else "") + text)
    built = subprocess.run([KUBECTL, "kustomize", str(tree / "overlay")], capture_output=True, text=True, check=True)
    assert "nvidia.com/gpu: " in built.stdout.split("resources:")[1]  # the built pod asks for the GPU
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file() and p.name != "good.yaml"}

    code, out, _ = run_dramigrate(["lint", ".", "--format", "json"], cwd=tree)

    said = [f["file"] for f in json.loads(out)["findings"] if f["rule"] == "kustomize-device-field"]
    assert said == [named], out
    run_dramigrate(["fix", "."], cwd=tree)
    assert {p: p.read_bytes() for p in before} == before
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def test_a_pod_of_containers_merging_one_anchored_container_is_read_in_seconds() -> None:
    """`- &c {name: a0, ...GPU...}` then 3,000 containers `- {<<: *c, name: aN}` (90 KB) took lint 14 s of CPU, and
    4,000 (refused at the limit on values only once read) 60 s on this machine: ruamel remembers each mapping that
    merges another and compared the new one with each remembered one whole. They are told apart by identity now
    (0.8 s)."""
    import time

    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    containers = 3000
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: wide}\nspec:\n  containers:\n" + "  - &c {name: a0, image: b, "
    text += "resources: {limits: {nvidia.com/gpu: 1}}}\n" + "".join(
        f"  - {{<<: *c, name: a{i}}}\n" for i in range(1, containers)
    )
    settings = Settings()
    rules = load_rules(settings.rules)
    started = time.process_time()
    result = run_file(Job("wide.yaml", text.encode(), False), rules, settings, Target.parse("1.36"))
    took = time.process_time() - started

    assert result.error is None
    assert sum(f.rule == "legacy-device-request" for f in result.findings) == containers
    assert took < 4, f"{took:.1f} s of CPU"
