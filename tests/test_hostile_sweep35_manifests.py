"""Session 35's red team on plain manifests and kustomize trees (issue 11): shapes Kubernetes reads a device request
from that dramigrate did not see, each checked against kubectl's own decoder where it can run without a cluster."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD

from dramigrate.config import Settings
from dramigrate.migrate import FileResult, Job, run_file
from dramigrate.rules import RuleSet, load_rules
from dramigrate.triage import may_matter
from dramigrate.versions import Target

KUBECTL = shutil.which("kubectl")


@cache
def _rules() -> tuple[Settings, RuleSet]:
    settings = Settings()
    return settings, load_rules(settings.rules)


def run(text: str, fix: bool = False) -> FileResult:
    settings, rules = _rules()
    return run_file(Job("bad.yaml", text.encode(), fix), rules, settings, Target.parse("1.36"))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# A key or count written as `!!binary`: go-yaml (sigs.k8s.io/yaml, kubectl's and the API server's reader) decodes it
# to its text, so `!!binary bnZpZGlhLmNvbS9ncHU=: 2` is `nvidia.com/gpu: 2`. The bytes hold no device word.
BINARY_KEYS = {
    "device": ("nvidia.com/gpu: 1", f"!!binary {b64('nvidia.com/gpu')}: 1"),
    "limits": ("limits:", f"!!binary {b64('limits')}:"),
    "verbatim": ("nvidia.com/gpu: 1", f"!<tag:yaml.org,2002:binary> {b64('nvidia.com/gpu')}: 1"),
    "escaped-tag": ("nvidia.com/gpu: 1", f"!!bin%61ry {b64('nvidia.com/gpu')}: 1"),
}


@pytest.mark.parametrize(("plain", "binary"), list(BINARY_KEYS.values()), ids=list(BINARY_KEYS))
def test_a_key_written_as_binary_is_bad_input_at_its_line(plain: str, binary: str) -> None:
    """lint said nothing (exit 0) of a pod whose `limits` or device key is written `!!binary`: the bytes name no
    device, so triage skipped the file, and ruamel reads the key as bytes no look-up by name finds. Kubernetes gives
    the pod the GPU. Such a key is now bad input at its line, as a key with any other explicit tag is."""
    text = ONE_GPU_POD.format(name="bad").replace(plain, binary)
    line = next(i for i, at in enumerate(text.splitlines(), 1) if binary in at)

    result = run(text)

    assert result.error is not None, result.findings
    assert result.error.line == line and "binary" in result.error.message, result.error


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubernetes_reads_a_binary_key_and_count_as_their_text(tmp_path: Path) -> None:
    """What the two tests here stand on: kubectl's decoder gives the pod 2 GPUs."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad").replace("nvidia.com/gpu: 1", f"!!binary {b64('nvidia.com/gpu')}: 2"))
    out = subprocess.run(
        [KUBECTL, "label", "--local", "-o", "json", "-f", str(bad), "seen=yes"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert json.loads(out)["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    bad.write_text(ONE_GPU_POD.format(name="bad").replace("nvidia.com/gpu: 1", f"nvidia.com/gpu: !!binary {b64('2')}"))
    out = subprocess.run(
        [KUBECTL, "label", "--local", "-o", "json", "-f", str(bad), "seen=yes"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert json.loads(out)["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "2"}}


def test_a_count_written_as_binary_is_the_count_kubernetes_reads() -> None:
    """`nvidia.com/gpu: !!binary Mg==` is 2 GPUs for Kubernetes (the text "2"); lint called it a placeholder, a
    warning (exit 0), and fix left it. It is now the request it is: an error, and fix migrates 2 devices."""
    text = ONE_GPU_POD.format(name="bad").replace("nvidia.com/gpu: 1", f"nvidia.com/gpu: !!binary {b64('2')}")

    lint = run(text)
    fixed = run(text, fix=True)

    assert lint.error is None
    assert [f.rule for f in lint.findings if f.severity == "error"] == ["legacy-device-request"], lint.findings
    assert fixed.rewritten is not None and "count: 2" in fixed.rewritten and "nvidia.com/gpu:" not in fixed.rewritten


def test_triage_keeps_a_file_whose_bytes_may_spell_a_binary_tag() -> None:
    """The byte check before any parse: a tag that may be `!!binary` keeps the file, as an escape does."""
    _, rules = _rules()
    for tag in ("!!binary", "!<tag:yaml.org,2002:binary>", "!!bin%61ry", "!<tag:yaml.org,2002:%62inary>"):
        assert may_matter(f"metadata:\n  {tag} bmFtZQ==: x\n".encode(), rules), tag
    assert not may_matter(b"metadata:\n  name: binary\n", rules)


@pytest.mark.parametrize(
    ("plain", "binary"),
    [("kind: Pod", f"kind: !!binary {b64('Pod')}"), ("apiVersion: v1", f"apiVersion: !!binary {b64('v1')}")],
)
def test_a_kind_written_as_binary_is_bad_input_at_its_line(plain: str, binary: str) -> None:
    """`kind: !!binary UG9k` is a Pod for Kubernetes (go-yaml decodes it to "Pod"), but dramigrate read the kind as
    bytes, a kind it does not know: an unknown-kind warning (exit 0) for a pod asking for a GPU. Now bad input."""
    text = ONE_GPU_POD.format(name="bad").replace(plain, binary)

    result = run(text)

    assert result.error is not None, result.findings
    assert result.error.line == text.splitlines().index(binary) + 1 and "binary" in result.error.message


DEVICE_OPS = (
    "- op: add\n  path: /spec/template/spec/containers/0/resources\n  value:\n    limits:\n      nvidia.com/gpu: 2\n"
)
DEVICE_SMP = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer}\n"
    "spec: {template: {spec: {containers: [{name: app, resources: {limits: {nvidia.com/gpu: 2}}}]}}}\n"
)
TARGET = "target: {kind: Deployment, name: trainer}\n"
PATCHER = "apiVersion: builtin\nkind: {kind}\nmetadata: {{name: gpus}}\n"
# each: the overlay's files besides its kustomization (which lists `../base`), and the file lint names
TRANSFORMER_PATCHES = {
    "patch-file": (
        {"t.yaml": PATCHER.format(kind="PatchTransformer") + "path: ops.yaml\n" + TARGET, "ops.yaml": DEVICE_OPS},
        "transformers:\n- t.yaml\n",
        "overlay/ops.yaml",
    ),
    "inline-config": (
        {"ops.yaml": DEVICE_OPS},
        "transformers:\n- |-\n"
        + "".join(
            f"  {line}\n"
            for line in (PATCHER.format(kind="PatchTransformer") + "path: ops.yaml\n" + TARGET).splitlines()
        ),
        "overlay/ops.yaml",
    ),
    "strategic-merge": (
        {
            "t.yaml": PATCHER.format(kind="PatchStrategicMergeTransformer") + "paths: [smp.yaml]\n",
            "smp.yaml": DEVICE_SMP,
        },
        "transformers:\n- t.yaml\n",
        "overlay/smp.yaml",
    ),
    "inline-patch": (
        {
            "t.yaml": PATCHER.format(kind="PatchTransformer")
            + "patch: |-\n"
            + "".join(f"  {x}\n" for x in DEVICE_SMP.splitlines())
        },
        "transformers:\n- t.yaml\n",
        "overlay/t.yaml",
    ),
    "label-fieldspec": (
        {
            "t.yaml": PATCHER.format(kind="LabelTransformer")
            + 'labels: {nvidia.com/gpu: "2"}\nfieldSpecs:\n'
            + "- path: spec/template/spec/containers[]/resources/limits\n  create: true\n"
        },
        "transformers:\n- t.yaml\n",
        "overlay/t.yaml",
    ),
    "folder": (
        {
            "tf/kustomization.yaml": "resources:\n- t.yaml\n",
            "tf/t.yaml": PATCHER.format(kind="PatchTransformer")
            + "patch: |-\n"
            + "".join(f"  {x}\n" for x in DEVICE_SMP.splitlines()),
        },
        "transformers:\n- tf\n",
        "overlay/tf/t.yaml",
    ),
}
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


@pytest.mark.parametrize(
    ("files", "listed", "named"), list(TRANSFORMER_PATCHES.values()), ids=list(TRANSFORMER_PATCHES)
)
def test_a_transformer_that_patches_a_device_into_a_pod_is_named(
    tmp_path: Path, files: dict[str, str], listed: str, named: str
) -> None:
    """A builtin patch transformer listed under `transformers:` (a PatchTransformer, a PatchStrategicMergeTransformer,
    inline or in a file, or built from a kustomization folder) patches the overlay's objects as `patches:` does: its
    patch adding `nvidia.com/gpu: 2` to a CPU-only base gives every built pod 2 GPUs. dramigrate never read
    `transformers:`: lint said nothing (exit 0). It is now kustomize-device-field where the field is set, and the
    graph is left as it is (fix cannot rewrite a transformer)."""
    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\n" + listed)
    for rel, text in files.items():
        (tmp_path / "overlay" / rel).parent.mkdir(exist_ok=True)
        (tmp_path / "overlay" / rel).write_text(text)
    if KUBECTL is not None:  # the built pod asks for the GPUs
        built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
        assert "nvidia.com/gpu: " in built.stdout, built.stderr
    _, rules = _rules()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    said = [f for f in found if f.rule == "kustomize-device-field"]
    assert [Path(f.file).resolve() for f in said] == [(tmp_path / named).resolve()], found


@pytest.mark.parametrize("folder", ["node_modules", "venv", ".tox"])
def test_a_kustomize_resource_in_a_folder_the_walk_skips_is_linted_as_fix_migrates_it(
    tmp_path: Path, folder: str
) -> None:
    """A kustomization listing `node_modules/pod.yaml` (or a file under `venv/`, `.tox/`, folders the walk never
    enters) builds that pod into the overlay, and diff and fix migrated it with the graph, but lint never read it:
    exit 0 for a pod asking for a GPU. Lint now checks every resource file of a device graph the walk left out."""
    from dramigrate import engine
    from dramigrate.sources import expand

    (tmp_path / "app" / folder).mkdir(parents=True)
    (tmp_path / "app" / folder / "pod.yaml").write_text(ONE_GPU_POD.format(name="hidden"))
    (tmp_path / "app" / "kustomization.yaml").write_text(f"resources:\n- {folder}/pod.yaml\n")
    settings, rules = _rules()

    result = engine.run(expand([str(tmp_path / "app")]), rules, settings, Target.parse("1.36"), False)

    errors = [(Path(f.file).name, f.rule) for r in result.files for f in r.findings if f.severity == "error"]
    assert errors == [("pod.yaml", "legacy-device-request")], errors


def test_a_kustomize_base_in_a_folder_the_walk_skips_is_linted(tmp_path: Path) -> None:
    """`resources: [node_modules/base]`: kustomize builds the base's GPU pod into the overlay, but discovery only
    loaded the kustomizations the walk found, and it never enters node_modules: the overlay's graph held no device
    (lint silent, exit 0). Bases and components the graph builds on are now loaded wherever they lie in the
    repository, and their requests checked."""
    from dramigrate import engine
    from dramigrate.sources import expand

    (tmp_path / "app" / "node_modules" / "base").mkdir(parents=True)
    (tmp_path / "app" / "node_modules" / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="hidden"))
    (tmp_path / "app" / "node_modules" / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (tmp_path / "app" / "kustomization.yaml").write_text("resources:\n- node_modules/base\n")
    settings, rules = _rules()

    result = engine.run(expand([str(tmp_path / "app")]), rules, settings, Target.parse("1.36"), False)

    errors = [(Path(f.file).name, f.rule) for r in result.files for f in r.findings if f.severity == "error"]
    assert errors == [("pod.yaml", "legacy-device-request")], errors


@pytest.mark.parametrize("where", ["limits", "resources", "item"])
def test_a_mapping_tagged_as_a_set_is_bad_input_at_its_line(where: str) -> None:
    """`limits: !!set {nvidia.com/gpu: 2}` is the map `{nvidia.com/gpu: 2}` for go-yaml (kubectl gives the pod 2
    GPUs), but a YAML set for PyYAML and ruamel: its keys without their values, no map at all, so lint saw no
    request (exit 0). A `!!set` is now bad input at its line."""
    text = ONE_GPU_POD.format(name="bad")
    if where == "limits":
        text = text.replace("limits:\n        nvidia.com/gpu: 1", "limits: !!set {nvidia.com/gpu: 2}")
    elif where == "resources":
        text = text.replace(
            "resources:\n      limits:\n        nvidia.com/gpu: 1", "resources: !!set {limits: {nvidia.com/gpu: 2}}"
        )
    else:
        text = text.replace("  - name: app", "  - !!set\n    name: app")
    line = next(i for i, at in enumerate(text.splitlines(), 1) if "!!set" in at)

    result = run(text)

    assert result.error is not None, result.findings
    assert result.error.line == line and "!!set" in result.error.message, result.error


ANCHORED_IN_FLOW = """\
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: cpu
    image: app:1
    resources: {limits: {cpu: &n 2}}
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: *n
"""


def test_a_count_that_is_an_alias_of_a_number_in_a_flow_mapping_is_read_as_that_number() -> None:
    """`nvidia.com/gpu: *n` where `&n 2` stands in a flow mapping (`{cpu: &n 2}`): 2 GPUs for Kubernetes. dramigrate
    read the count's text where the anchor stands, as far as the line's end (`2}}`), a placeholder: a warning
    (exit 0), and fix left the request in the pod. The text of a number ends where a flow collection's item ends."""
    lint = run(ANCHORED_IN_FLOW)
    fixed = run(ANCHORED_IN_FLOW, fix=True)

    assert [(f.rule, f.container) for f in lint.findings if f.severity == "error"] == [("legacy-device-request", "app")]
    assert fixed.rewritten is not None and "count: 2" in fixed.rewritten and "nvidia.com/gpu:" not in fixed.rewritten


SIDECAR_AND_APP = """\
apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  initContainers:
  - name: side
    image: app:1
    restartPolicy: {policy}
    resources:
      limits:
        nvidia.com/gpu: 2
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: 1
"""


@pytest.mark.parametrize("policy", ["!!str Always", "!Custom Always"])
def test_a_tagged_sidecar_restart_policy_keeps_the_pods_device_total(policy: str) -> None:
    """`restartPolicy: !!str Always` is a restartable sidecar for Kubernetes (go-yaml reads the text "Always"): it runs
    beside the app container, so the pod gets 2 + 1 = 3 GPUs. ruamel keeps the tagged value as a TaggedScalar, not
    equal to "Always", so fix took the sidecar for a plain init container and wrote a claim of 2 devices the sidecar
    and the app share. The sidecar's tagged policy is now read as its text."""
    fixed = run(SIDECAR_AND_APP.format(policy=policy), fix=True)

    assert fixed.rewritten is not None
    counts = [int(line.split()[-1]) for line in fixed.rewritten.splitlines() if line.strip().startswith("count:")]
    assert sum(counts) == 3, fixed.rewritten


@pytest.mark.parametrize("mode", ["!!str RawDeployment", f"!!binary {b64('RawDeployment')}"])
def test_a_tagged_deployment_mode_annotation_is_read_as_its_text(mode: str) -> None:
    """`serving.kserve.io/deploymentMode: !!str RawDeployment` is a raw deployment for KServe (the API server stores
    the text): its predictor's GPU request is one fix rewrites, an error. ruamel's TaggedScalar (or bytes, for
    `!!binary`) was no mode dramigrate knows, so the InferenceService was report-only: a warning (exit 0)."""
    text = (
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: s\n  annotations:\n"
        f"    serving.kserve.io/deploymentMode: {mode}\nspec:\n  predictor:\n    model:\n"
        "      modelFormat: {name: x}\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n"
    )

    lint = run(text)

    assert [f.rule for f in lint.findings if f.severity == "error"] == ["legacy-device-request"], lint.findings


REPLACEMENT_INTO_LIMITS = """\
- source: {kind: ConfigMap, name: gpus, fieldPath: metadata.labels}
  targets:
  - select: {kind: Deployment}
    fieldPaths:
    - spec.template.spec.containers.[name=app].resources.limits
    options: {create: true}
"""


def test_a_replacement_read_from_a_file_that_writes_into_limits_is_named(tmp_path: Path) -> None:
    """`replacements: [{path: repl.yaml}]`, whose replacement copies a ConfigMap's labels `{nvidia.com/gpu: "2"}` into
    a container's limits: every built pod asks for 2 GPUs. The same replacement written inline in the kustomization
    is kustomize-device-field, but the file form was never read: lint said nothing (exit 0)."""
    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "cm.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpus\n  labels: {nvidia.com/gpu: "2"}\n'
    )
    (tmp_path / "overlay" / "repl.yaml").write_text(REPLACEMENT_INTO_LIMITS)
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        "resources:\n- ../base\n- cm.yaml\nreplacements:\n- path: repl.yaml\n"
    )
    if KUBECTL is not None:  # the built pod asks for the GPUs
        built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
        assert 'nvidia.com/gpu: "2"' in built.stdout.split("limits:")[-1], built.stderr
    _, rules = _rules()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    assert [f.rule for f in found] == ["kustomize-device-field"], found


def test_a_configurations_file_in_a_subfolder_that_writes_into_limits_is_named(tmp_path: Path) -> None:
    """`configurations: [conf/labels.yaml]` giving commonLabels a fieldSpec into a container's limits, with
    `commonLabels: {nvidia.com/gpu: "2"}`: every built pod asks for 2 GPUs. The same file beside the kustomization is
    kustomize-device-field, but one in a subfolder (which kustomize reads as well) was skipped: lint silent."""
    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay" / "conf").mkdir(parents=True)
    (tmp_path / "overlay" / "conf" / "labels.yaml").write_text(
        "commonLabels:\n- path: spec/template/spec/containers[]/resources/limits\n  create: true\n  kind: Deployment\n"
    )
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        'resources:\n- ../base\nconfigurations:\n- conf/labels.yaml\ncommonLabels:\n  nvidia.com/gpu: "2"\n'
    )
    if KUBECTL is not None:  # the built pod asks for the GPUs
        built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "overlay")], capture_output=True, text=True)
        assert 'nvidia.com/gpu: "2"' in built.stdout.split("limits:")[-1], built.stderr
    _, rules = _rules()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    assert [(f.rule, Path(f.file).name) for f in found] == [("kustomize-device-field", "labels.yaml")], found


def test_a_kustomize_patch_that_is_an_alias_bomb_is_named_in_seconds(tmp_path: Path) -> None:
    """A patch file of 35 lines whose aliases expand to 2^29 copies of `{nvidia.com/gpu: 1}` held lint past 60 s:
    the walk for device fields followed every alias. kustomize itself cannot build it in time; the patch is now
    named (kustomize-unproven) without expanding it, and the graph left as it is."""
    import time

    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    bomb = ["apiVersion: apps/v1", "kind: Deployment", "metadata: {name: trainer}", "x0: &a0 {nvidia.com/gpu: 1}"]
    bomb += [f"x{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    bomb += ["spec: {template: {spec: {containers: [{name: app, resources: {limits: *a0}}]}}}", "y: *a29"]
    (tmp_path / "overlay" / "bomb.yaml").write_text("\n".join(bomb) + "\n")
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\npatches:\n- path: bomb.yaml\n")
    _, rules = _rules()
    started = time.process_time()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    assert time.process_time() - started < 5
    assert [(f.rule, Path(f.file).name) for f in found] == [("kustomize-unproven", "bomb.yaml")], found


def test_a_replacements_file_that_is_an_alias_bomb_is_named_in_seconds(tmp_path: Path) -> None:
    """A 16 KB replacements file of 1,500 aliased entries, each with 1,500 aliased targets of 300 field paths, is 675
    million paths to look at: lint ran past 60 s. Such a file is now named without being expanded."""
    import time

    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(ONE_GPU_POD.format(name="trainer"))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    target = "{select: {kind: Deployment}, fieldPaths: [" + ", ".join(["a.b.c"] * 300) + "]}"
    entry = "{source: {kind: ConfigMap, name: x, fieldPath: data.n}, targets: [&t " + target + ", *t" * 1499 + "]}"
    (tmp_path / "overlay" / "repl.yaml").write_text(f"- &e {entry}\n" + "- *e\n" * 1500)
    (tmp_path / "overlay" / "kustomization.yaml").write_text(
        "resources:\n- ../base\nreplacements:\n- path: repl.yaml\n"
    )
    _, rules = _rules()
    started = time.process_time()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    assert time.process_time() - started < 5
    assert [f for f in found if "alias bomb" in f.message and f.rule == "kustomize-unproven"], found


def test_a_configurations_file_that_is_an_alias_bomb_is_named_in_seconds(tmp_path: Path) -> None:
    """A 25 KB configurations file whose 3,000 aliased nameReference entries each hold 3,000 aliased fieldSpecs into
    limits: the check for fieldSpecs that write into a resources section looked at each of the 9 million and
    searched the file's lines for each, past 100 s. Such a file is now named without being expanded."""
    import time

    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    text = "x0: &f\n  path: spec/template/spec/containers[]/resources/limits\n  create: true\n"
    text += "".join(f"  k{i}: v\n" for i in range(100))  # each alias of it decodes 200 values: a bomb at once
    text += "x1: &s\n  kind: X\n  fieldSpecs: [" + ", ".join(["*f"] * 3000) + "]\n"
    (tmp_path / "overlay" / "conf.yaml").write_text(text + "nameReference: [" + ", ".join(["*s"] * 3000) + "]\n")
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\nconfigurations:\n- conf.yaml\n")
    _, rules = _rules()
    started = time.process_time()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    assert time.process_time() - started < 5
    assert [f for f in found if "alias bomb" in f.message and f.rule == "kustomize-unproven"], found


@pytest.mark.parametrize("words", ["# nvidia.com/gpu\n", "# op\n"], ids=["device-word", "operations"])
def test_a_kustomize_patch_nested_too_deeply_is_named_and_the_run_goes_on(tmp_path: Path, words: str) -> None:
    """A patch file of 600 nested lists ended the whole run in `internal error: RecursionError` (no file named, the
    good files beside it not checked): the kustomize scan, which runs before any file, composed it whole to look for
    device fields. It is now named (not read), and the run goes on; so is one holding no device word, which could be
    JSON6902 operations copying a map into limits (whether 600 levels raised the RecursionError depended on the stack
    the run had, so the test passed alone and failed in CI: they are past the nesting limit every file has)."""
    from dramigrate.kustomize.scan import patch_findings, scan

    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "d.yaml").write_text(CPU_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- d.yaml\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "deep.yaml").write_text(words + "[" * 600 + "]" * 600 + "\n")
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\npatches:\n- path: deep.yaml\n")
    _, rules = _rules()

    found = patch_findings(scan([str(p.resolve()) for p in tmp_path.rglob("*.yaml")], rules), rules)

    said = [(f.rule, Path(f.file).name) for f in found]
    assert said == [("kustomize-unproven", "deep.yaml")], found
