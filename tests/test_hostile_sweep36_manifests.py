"""Session 36's red team on plain manifests and kustomize trees (issue 11): shapes Kubernetes (kubectl's decoder,
kustomize's build) reads a device request from that dramigrate did not see, each checked against kubectl where it
can run without a cluster."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD

from dramigrate.config import Settings
from dramigrate.findings import InputError
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import RuleSet, load_rules
from dramigrate.versions import Target

KUBECTL = shutil.which("kubectl")


@cache
def _rules() -> tuple[Settings, RuleSet]:
    settings = Settings()
    return settings, load_rules(settings.rules)


def run(text: str, fix: bool = False) -> FileResult:
    settings, rules = _rules()
    return run_file(Job("bad.yaml", text.encode(), fix), rules, settings, Target.parse("1.36"))


def tree(root: Path, files: dict[str, str]) -> list[str]:
    """Writes files under root; the resolved paths of the .yaml ones (the scan's inputs)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sorted(str(p.resolve()) for p in root.rglob("*.yaml"))


def built(folder: Path) -> str:
    """kubectl's kustomize build of folder (what the cluster is given)."""
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# An object that asks for a GPU under a kind nothing runs (`Podx`: dramigrate says unknown-kind, a warning), and
# overlay kustomizations that make a Pod of it in their build. (files, the file and line named)
PODX = ONE_GPU_POD.format(name="p").replace("kind: Pod", "kind: Podx")
KIND_WRITES = {
    "json6902-kind": (
        "resources: [../base]\npatches:\n- target: {kind: Podx, name: p}\n  patch: |\n"
        "    - op: replace\n      path: /kind\n      value: Pod\n",
        {},
        ("overlay/kustomization.yaml", 5),
    ),
    "json6902-apiversion-file": (
        "resources: [../base]\npatches:\n- path: ops.yaml\n  target: {kind: Podx, name: p}\n",
        {"overlay/ops.yaml": "- op: test\n  path: /kind\n  value: Podx\n- op: add\n  path: /apiVersion\n  value: v1\n"},
        ("overlay/ops.yaml", 4),
    ),
    "replacement": (
        "resources: [../base]\nconfigMapGenerator:\n- name: k\n  literals: [kind=Pod]\nreplacements:\n"
        "- source: {kind: ConfigMap, name: k, fieldPath: data.kind}\n  targets:\n"
        "  - select: {kind: Podx}\n    fieldPaths: [kind]\n",
        {},
        ("overlay/kustomization.yaml", 5),
    ),
    "allow-kind-change": (
        "resources: [../base]\npatches:\n- target: {kind: Podx, name: p}\n  options: {allowKindChange: true}\n"
        "  patch: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: p}\n",
        {},
        ("overlay/kustomization.yaml", 3),
    ),
    "name-prefix-fieldspec": (
        "resources: [../base]\nnamePrefix: P\nconfigurations: [c.yaml]\n",
        {"overlay/c.yaml": "namePrefix:\n- path: kind\n", "base/pod.yaml": PODX.replace("kind: Podx", "kind: od")},
        ("overlay/c.yaml", 2),
    ),
}


@pytest.mark.parametrize(("overlay", "files", "named"), list(KIND_WRITES.values()), ids=list(KIND_WRITES))
def test_a_kustomization_that_writes_the_kind_of_an_object_asking_for_a_device_is_bad_input(
    tmp_path: Path, overlay: str, files: dict[str, str], named: tuple[str, int]
) -> None:
    """A JSON6902 `replace /kind` (or an `add /apiVersion`, a replacement into `kind`, a strategic-merge patch with
    `allowKindChange`, a namePrefix fieldSpec on `kind`) turns `kind: Podx` asking for a GPU into a Pod in the
    overlay's build, and kustomize builds it: the pod gets the GPU. lint said only `unknown-kind` (a warning, exit
    0), as it reads each object as the kind its file gives. Such a write in a graph that holds a device is now bad
    input at its line (exit 2), and nothing of the graph is written."""
    from dramigrate.kustomize.scan import scan

    paths = tree(
        tmp_path,
        {"base/pod.yaml": PODX, "base/kustomization.yaml": "resources: [pod.yaml]\n", **files}
        | {"overlay/kustomization.yaml": overlay},
    )
    if KUBECTL is not None and named[0] == "overlay/kustomization.yaml":  # what the cluster is given: a Pod
        assert "kind: Pod\n" in built(tmp_path / "overlay")
    _, rules = _rules()

    found = scan(paths, rules)

    refused = [(Path(str(e.file)).resolve(), e.line) for _, e in found.errors if isinstance(e, InputError)]
    assert refused == [((tmp_path / named[0]).resolve(), named[1])], found.errors
    assert not found.units[0].migratable


@pytest.mark.parametrize("gpu", [False, True], ids=["no-device", "device-elsewhere"])
def test_a_kind_write_on_objects_that_ask_for_no_device_is_left_alone(tmp_path: Path, gpu: bool) -> None:
    """The refusal above is for writes that may reach an object asking for a device: an overlay moving an HPA to
    autoscaling/v2 is no business of dramigrate's, in a graph without a device or beside a pod asking for one."""
    from dramigrate.kustomize.scan import scan

    hpa = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"
    overlay = (
        "resources: [../base]\npatches:\n- target: {kind: HorizontalPodAutoscaler}\n  patch: |\n"
        "    - op: replace\n      path: /apiVersion\n      value: autoscaling/v2\n"
    )
    files = {
        "base/h.yaml": hpa,
        "base/kustomization.yaml": "resources: [h.yaml]\n",
        "overlay/kustomization.yaml": overlay,
    }
    if gpu:
        files |= {
            "base/p.yaml": ONE_GPU_POD.format(name="p"),
            "base/kustomization.yaml": "resources: [h.yaml, p.yaml]\n",
        }
    paths = tree(tmp_path, files)
    _, rules = _rules()

    found = scan(paths, rules)

    assert found.errors == [] and all(u.migratable for u in found.units), (found.errors, found.units)


CPU_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  selector: {matchLabels: {app: t}}
  template:
    metadata: {labels: {app: t}}
    spec:
      containers:
      - name: app
        image: x
"""


def test_a_transformer_folder_that_patches_its_own_configurations_is_named(tmp_path: Path) -> None:
    """`transformers: [tf]` builds the folder tf and uses what it builds as transformer configurations. Its
    LabelTransformer writes a label `nvidia.com/gpu: "2"` into metadata only, but tf's own kustomization patches a
    fieldSpec into it that writes the label into every container's limits: the built pods ask for 2 GPUs. The scan
    read the folder's resource files, not what its build does to them: lint, diff and fix said nothing (exit 0).
    A transformer folder whose build changes its configurations is now kustomize-device-field at its key."""
    from dramigrate.kustomize.scan import patch_findings, scan

    fieldspec = "path: spec/template/spec/containers[]/resources/limits\n        create: true\n"
    paths = tree(
        tmp_path,
        {
            "base/d.yaml": CPU_DEPLOYMENT,
            "base/kustomization.yaml": "resources: [d.yaml]\n",
            "overlay/kustomization.yaml": "resources: [../base]\ntransformers: [tf]\n",
            "overlay/tf/t.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\n"
            'labels: {nvidia.com/gpu: "2"}\nfieldSpecs:\n- path: metadata/labels\n  create: true\n',
            "overlay/tf/kustomization.yaml": "resources: [t.yaml]\npatches:\n- target: {kind: LabelTransformer}\n"
            f"  patch: |-\n    - op: add\n      path: /fieldSpecs/-\n      value:\n        {fieldspec}",
        },
    )
    if KUBECTL is not None:  # the built pod asks for the GPUs
        assert 'nvidia.com/gpu: "2"' in built(tmp_path / "overlay").split("limits:")[1]
    _, rules = _rules()

    found = patch_findings(scan(paths, rules), rules)

    said = [(Path(f.file).resolve(), f.line) for f in found if f.rule == "kustomize-device-field"]
    assert said == [((tmp_path / "overlay/tf/kustomization.yaml").resolve(), 2)], found


ARGO_DEFAULTS = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: w
spec:
  entrypoint: main
  templateDefaults:
    container:
      resources:
        limits:
          nvidia.com/gpu: 1
  templates:
  - name: main
    container:
      image: busybox
      resources:
        limits:
          nvidia.com/gpu: 1
"""


def test_a_pod_beside_a_device_request_its_controller_merges_in_is_left_whole() -> None:
    """Argo merges `spec.templateDefaults` into every template, key by key: the template's container above runs with
    limits {nvidia.com/gpu: 1}, one GPU. fix moved the template's own GPU into a claim and left the default's
    `nvidia.com/gpu: 1`, which Argo then merged back in: a claim and a device-plugin GPU, two GPUs, with only an
    unknown-kind warning on the default. The pods of an object that also asks for a device outside the pod specs
    dramigrate knows are now left whole, each request an error fix leaves."""
    result = run(ARGO_DEFAULTS, fix=True)

    assert result.rewritten is None or "resourceClaims" not in result.rewritten, result.rewritten
    errors = [(f.rule, f.line, f.fixable) for f in result.findings if f.severity == "error"]
    assert errors == [("legacy-device-request", 18, False)], result.findings


def b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


GPU_PATH = "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"
GPU_OPS = f"- op: add\n  path: {GPU_PATH}\n  value: 2\n"
OVERLAY_PATCH = "resources: [../base]\npatches:\n- target: {{kind: Deployment}}\n  patch: {patch}\n"
# an overlay adding 2 GPUs to a CPU-only base, with the device hidden from a text search: (kustomization, rule, line)
HIDDEN_OPS = {
    "binary-path": (
        OVERLAY_PATCH.format(patch=f"|-\n    - op: add\n      path: !!binary {b64(GPU_PATH)}\n      value: 2"),
        "bad-input",
        6,
    ),
    "binary-patch": (OVERLAY_PATCH.format(patch=f"!!binary {b64(GPU_OPS)}"), "bad-input", 4),
    "escaped-op": (
        OVERLAY_PATCH.format(
            patch='|-\n    [{"\\u006fp": "move", "from": "/metadata/annotations", '
            '"path": "/spec/template/spec/containers/0/resources/limits"}]'
        ),
        "kustomize-device-field",
        5,
    ),
}


@pytest.mark.parametrize(("overlay", "rule", "line"), list(HIDDEN_OPS.values()), ids=list(HIDDEN_OPS))
def test_a_patch_that_hides_its_device_from_a_text_search_is_named(
    tmp_path: Path, overlay: str, rule: str, line: int
) -> None:
    """kustomize reads a JSON6902 patch through YAML: `path: !!binary L3NwZW...` is the path it encodes, a whole
    `patch: !!binary ...` the operations, and `"\\u006fp": move` the key `op`. Each gives the CPU-only base's pod
    nvidia.com/gpu: 2 (or moves a map of the object into its limits), and lint, diff and fix said nothing: the
    scan looked for a device name or the word `op` in the text. A !!binary value is now bad input at its line, and
    an escaped operation is read (kustomize-device-field, as an unescaped move is)."""
    from dramigrate.kustomize.scan import patch_findings, scan

    deployment = CPU_DEPLOYMENT.replace("  name: trainer\n", '  name: trainer\n  annotations: {nvidia.com/gpu: "2"}\n')
    deployment += "        resources: {limits: {cpu: 1}}\n"
    paths = tree(
        tmp_path,
        {"base/d.yaml": deployment, "base/kustomization.yaml": "resources: [d.yaml]\n"}
        | {"overlay/kustomization.yaml": overlay},
    )
    if KUBECTL is not None and rule == "bad-input":
        assert "nvidia.com/gpu: 2" in built(tmp_path / "overlay")
    _, rules = _rules()

    found = scan(paths, rules)

    said = [(e.rule, e.line) for _, e in found.errors if isinstance(e, InputError)]
    said += [(f.rule, f.line) for f in patch_findings(found, rules)]
    assert (rule, line) in said, (found.errors, patch_findings(found, rules))


def test_a_template_fix_appends_to_a_file_of_cr_line_ends_is_a_document_kubectl_reads(tmp_path: Path) -> None:
    """A manifest whose lines end in CR alone (old Mac) is read by kubectl whole, as one document: its reader splits
    documents at `---` lines ended by LF. fix wrote the ResourceClaimTemplate after a `---\\r`, which kubectl never
    splits at, so it read the migrated pod alone: a claim on a template that does not exist, the pod's GPUs gone.
    The separator fix appends there now ends in LF."""
    pod = ONE_GPU_POD.format(name="p").replace("\n", "\r")

    result = run(pod, fix=True)

    assert result.rewritten is not None and "ResourceClaimTemplate" in result.rewritten
    assert "\n---\n" in result.rewritten, repr(result.rewritten[-300:])
    if KUBECTL is not None:
        (tmp_path / "p.yaml").write_text(result.rewritten, newline="")
        out = subprocess.run(
            [KUBECTL, "label", "--local", "-o", "name", "-f", str(tmp_path / "p.yaml"), "seen=yes"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        kinds = [name.split("/")[0] for name in out.stdout.split()]
        assert kinds == ["pod", "resourceclaimtemplate.resource.k8s.io"], out
    assert run(result.rewritten, fix=True).rewritten is None  # fix twice changes nothing the second time


def test_a_pod_one_of_whose_requests_is_suppressed_is_left_whole() -> None:
    """`# dramigrate: ignore` on the app container's request kept it on the device plugin, and fix moved the
    sidecar's GPU into a claim: a pod asking for GPUs through both, which no node serves (the cutover plan takes the
    device plugin off a node before the DRA driver goes on). The pod is now left whole, and the request fix leaves
    is an error that says why."""
    pod = ONE_GPU_POD.format(name="p").replace(
        "  containers:\n",
        "  initContainers:\n  - name: side\n    image: x\n"
        "    restartPolicy: Always\n    resources: {limits: {nvidia.com/gpu: 1}}\n  containers:\n",
    )
    pod = pod.replace("nvidia.com/gpu: 1\n", "nvidia.com/gpu: 1  # dramigrate: ignore\n")

    result = run(pod, fix=True)

    assert result.rewritten is None, result.rewritten
    errors = [(f.rule, f.line, f.fixable) for f in result.findings if f.severity == "error"]
    assert errors == [("legacy-device-request", 10, False)], result.findings


def test_lint_of_a_changed_kustomize_file_alone_fails_as_lint_of_the_repository_does(tmp_path: Path) -> None:
    """The pre-commit hook runs `dramigrate lint` on the changed files. A pod asking for a GPU in a kustomize base
    (or an overlay's patch setting one), linted without its kustomizations, was a kustomize-patch warning (exit 0:
    the graph has kustomizations outside the given paths, so fix writes nothing of it), while lint of the repository
    fails on the same request. Lint now reports it as the error it is when given the whole graph."""
    from dramigrate import engine
    from dramigrate.sources import expand

    tree(
        tmp_path,
        {
            "base/pod.yaml": ONE_GPU_POD.format(name="p"),
            "base/kustomization.yaml": "resources: [pod.yaml]\n",
            "ov/kustomization.yaml": "resources: [../base]\npatches:\n- path: gpus.yaml\n",
            "ov/gpus.yaml": ONE_GPU_POD.format(name="p").replace("gpu: 1", "gpu: 4"),
        },
    )
    settings, rules = _rules()

    given = [str(tmp_path / "base" / "pod.yaml"), str(tmp_path / "ov" / "gpus.yaml")]
    result = engine.run(expand(given), rules, settings, Target.parse("1.36"), False)

    errors = sorted((Path(f.file).name, f.rule) for f in result.findings if f.severity == "error")
    assert errors == [("gpus.yaml", "kustomize-device-patch"), ("pod.yaml", "legacy-device-request")], errors


def test_a_move_of_a_field_kubernetes_drops_into_the_containers_is_named(tmp_path: Path) -> None:
    """`spec.spare` is no field of a Pod (the API server drops it), so its container asking for 2 GPUs runs nowhere:
    dramigrate says unknown-kind, a warning. An overlay's JSON6902 `move` from /spec/spare to /spec/containers
    builds a pod that gets the 2 GPUs, and the move itself had no finding (only a copy or move into limits,
    requests or resources was named). Any copy or move into a container, a container list, a pod spec or template
    is now kustomize-device-field, as those are."""
    from dramigrate.kustomize.scan import patch_findings, scan

    pod = ONE_GPU_POD.format(name="p").replace("  containers:\n", "  spare:\n")
    pod += "  containers:\n  - name: app\n    image: app:1\n"
    overlay = (
        "resources: [../base]\npatches:\n- target: {kind: Pod, name: p}\n  patch: |\n"
        "    - op: move\n      from: /spec/spare\n      path: /spec/containers\n"
    )
    paths = tree(
        tmp_path,
        {
            "base/pod.yaml": pod,
            "base/kustomization.yaml": "resources: [pod.yaml]\n",
            "overlay/kustomization.yaml": overlay,
        },
    )
    if KUBECTL is not None:  # the built pod asks for the GPU
        assert "nvidia.com/gpu: 1" in built(tmp_path / "overlay").split("containers:")[1]
    _, rules = _rules()

    found = patch_findings(scan(paths, rules), rules)

    said = [(Path(f.file).name, f.line) for f in found if f.rule == "kustomize-device-field"]
    assert said == [("kustomization.yaml", 5)], found
