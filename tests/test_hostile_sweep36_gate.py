"""Session 36's red team on what a CI gate and a reviewer read (issue 11): report formats, baselines, suppression
comments, explain and fit. Each break as its smallest input, in process where the process boundary is not what is
tested."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import dramigrate_in_process

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1
"""


def test_an_escaped_quote_does_not_turn_a_string_into_a_suppression_comment(tmp_path: Path) -> None:
    """`x: "\\" # dramigrate: disable-file "` is one string (a ConfigMap's value): counting the quotes before the `#`
    (two) read its text as a comment, which silenced the GPU request of every document of the file (lint exit 0)."""
    (tmp_path / "a.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  x: "\\" # dramigrate: disable-file "\n---\n'
        + POD
    )

    code, out, _ = dramigrate_in_process(["lint", "--format", "json", "a.yaml"], cwd=tmp_path)

    assert code == 1, out
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["legacy-device-request"]


KUSTOMIZE_BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
spec:
  template:
    spec:
      containers:
      - {name: c, image: x}
      - {name: d, image: x}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  template:
    spec:
      containers:
      - {name: c, image: x}
"""

SMP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: {container}
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def test_a_baselined_kustomize_patch_retargeted_is_a_new_finding(tmp_path: Path) -> None:
    """A device patch's finding carried no kind, name or container, so its baseline entry was (file, resource, rule):
    the same patch moved to another Deployment or another container of the file stayed "known" (lint exit 0), where
    a plain manifest's request moved so is new."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [deploy.yaml]\n")
    (tmp_path / "base" / "deploy.yaml").write_text(KUSTOMIZE_BASE)
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources: [../base]\npatches:\n- path: gpu.yaml\n")
    patch = tmp_path / "overlay" / "gpu.yaml"
    patch.write_text(SMP.format(name="a", container="c"))
    code, _, err = dramigrate_in_process(["lint", "--write-baseline", "bl.json", "."], cwd=tmp_path)
    assert code == 1, err

    for name, container in (("b", "c"), ("a", "d")):
        patch.write_text(SMP.format(name=name, container=container))
        code, out, _ = dramigrate_in_process(["lint", "--baseline", "bl.json", "--format", "json", "."], cwd=tmp_path)

        assert code == 1, (name, container, out)
        (new,) = json.loads(out)["findings"]
        assert (new["rule"], new["kind"], new["name"], new["container"]) == (
            "kustomize-device-patch",
            "Deployment",
            name,
            container,
        )


FABRIC = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpus}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {name: node-a}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric}
spec:
  driver: dra.net
  allNodes: true
  pool: {name: fabric}
  devices:
  - name: efa-0
    attributes:
      pciDevice: {string: Elastic Fabric Adapter (EFA)}
"""


def test_fit_counts_a_device_for_every_node_on_each_node(tmp_path: Path) -> None:
    """A ResourceSlice with `allNodes: true` (a network-attached device) was grouped under a node named "None": a
    pod asking for a node's GPU and such a NIC "fits nowhere" (exit 1), where the scheduler gives it both."""
    (tmp_path / "slices.yaml").write_text(FABRIC)
    (tmp_path / "pod.yaml").write_text(
        POD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 1\n        vpc.amazonaws.com/efa: 1")
    )

    code, out, err = dramigrate_in_process(
        ["fit", "--inventory", "slices.yaml", "--format", "json", "pod.yaml"], cwd=tmp_path
    )

    assert code == 0, out + err
    (claim,) = json.loads(out)["claims"]
    assert claim["nodes"] == ["node-a"]
    assert "None" not in {node for q in claim["requests"] for node in q["matches"]}


def _obeyed(line: str) -> bool:
    """Whether the GitHub Actions runner takes a line of a job's log as a workflow command (its ActionCommand.cs):
    `::` starting the line once trimmed, or the older `##[` anywhere in it."""
    return line.lstrip().startswith("::") or "##[" in line


def test_no_report_line_is_a_workflow_command_a_job_would_obey(tmp_path: Path) -> None:
    """The runner obeys `##[command]data` anywhere in a line and `::command::data` at its start (after whitespace):
    a Pod named `##[add-mask]error` masked every later `error` of the job's log (and `##[stop-commands]x` ignores
    every later annotation of the step) from the text, JSON, SARIF and JUnit reports; a file named `::error::x.yaml`
    started a line of the text report. Each report still names them (JSON and SARIF readers get the same text)."""
    (tmp_path / "::error::x.yaml").write_text(POD.replace("name: p", "name: '##[add-mask]error'"))
    formats = ["text", "json", "sarif", "junit", "markdown"]
    args = [a for f in formats for a in ("--format", f"{f}={f}.out")]

    code, out, err = dramigrate_in_process(["lint", *args, "::error::x.yaml"], cwd=tmp_path)

    assert code == 1, out + err
    for f in formats:
        text = (tmp_path / f"{f}.out").read_text()
        assert "x.yaml" in text, (f, text)
        assert not [line for line in text.splitlines() if _obeyed(line)], (f, text)
    (finding,) = json.loads((tmp_path / "json.out").read_text())["findings"]
    assert (finding["file"], finding["name"]) == ("::error::x.yaml", "##[add-mask]error")
    (result,) = json.loads((tmp_path / "sarif.out").read_text())["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "%3A%3Aerror%3A%3Ax.yaml"


def test_markdown_report_does_not_typeset_math_from_input(tmp_path: Path) -> None:
    """GitHub renders `$...$` in Markdown as math: a Pod named `$\\huge{\\text{ok}}$` was typeset, in any size and
    colour, in the pull-request comment a job posts from the Markdown report. Every `$` of input is escaped."""
    (tmp_path / "$a$.yaml").write_text(POD.replace("name: p", "name: '$\\huge{\\text{ok}}$'"))

    code, out, _ = dramigrate_in_process(["lint", "--format", "markdown", "."], cwd=tmp_path)

    assert code == 1, out
    rows = [line for line in out.splitlines() if line.startswith("| error ")]
    assert rows and "huge" in rows[0]
    assert not re.search(r"(?<!\\)\$", rows[0]), rows[0]


GENERATIONS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: old}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: new}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {name: node-a, generation: 2, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
"""


def test_fit_counts_a_device_once_whatever_its_pool_lists(tmp_path: Path) -> None:
    """A node's one GPU in two generations of its pool (a driver republishing its slices), or in one slice listed
    twice, was two devices: a claim of two GPUs "fitted" the node, exit 0. The scheduler allocates only from each
    pool's newest generation, a device once; a pool whose newest slices name a device twice is bad input."""
    (tmp_path / "pod.yaml").write_text(POD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 2"))
    twice = GENERATIONS.split("---\n")[1]
    inventories = {"generations": GENERATIONS, "listed twice": f"{twice}---\n{twice}"}
    for what, text in inventories.items():
        (tmp_path / "slices.yaml").write_text(text)

        code, out, err = dramigrate_in_process(
            ["fit", "--inventory", "slices.yaml", "--format", "json", "pod.yaml"], cwd=tmp_path
        )

        assert code == 1, (what, out, err)
        (claim,) = json.loads(out)["claims"]
        assert not claim["fits"] and claim["requests"][0]["matches"] == {"node-a": ["gpu-0"]}, (what, claim)
    (tmp_path / "slices.yaml").write_text(GENERATIONS.replace("generation: 2", "generation: 1"))
    code, out, err = dramigrate_in_process(["fit", "--inventory", "slices.yaml", "pod.yaml"], cwd=tmp_path)
    assert code == 2 and "device gpu-0 of pool node-a" in err, out + err


def test_a_report_is_never_written_over_a_manifest_the_run_reads(tmp_path: Path) -> None:
    """`lint --format json=k8s/pod.yaml k8s/` (or -o, --write-baseline, --html naming it) wrote the report over the
    manifest it linted: lint writes nothing but its reports. Refused (exit 2), the manifest kept; a report of an
    earlier run that the walk of the tree meets is still written again."""
    (tmp_path / "pod.yaml").write_text(POD)
    for args in (
        ["--format", "json=pod.yaml"],
        ["-o", "pod.yaml", "--format", "sarif"],
        ["--write-baseline", "pod.yaml"],
    ):
        code, out, err = dramigrate_in_process(["lint", *args, "."], cwd=tmp_path)

        assert code == 2 and "pod.yaml" in err, (args, out, err)
        assert (tmp_path / "pod.yaml").read_text() == POD, args
    for _ in range(2):
        code, out, err = dramigrate_in_process(["lint", "--format", "json=report.json", "."], cwd=tmp_path)
        assert code == 1, out + err
    assert json.loads((tmp_path / "report.json").read_text())["findings"]


def _separated(line: str) -> str:
    """POD with five U+2028 (LINE SEPARATOR, shown as a space or nothing) in an annotation, and line 9 replaced."""
    head, tail = POD.split("spec:\n", 1)
    body = tail.replace("    image: x\n", line + "\n    env: []\n    args: []\n")
    return head + '  annotations: {note: "a\u2028b\u2028c\u2028d\u2028e\u2028f"}\nspec:\n' + body


def test_line_separators_in_a_value_do_not_move_comments_or_counts(tmp_path: Path) -> None:
    """str.splitlines() breaks lines at U+2028 where YAML 1.2 and the positions of findings do not: five of them in
    an annotation made `# dramigrate: ignore` on line 9 silence the GPU request on line 14 (lint exit 0), and the
    count of `nvidia.com/gpu: 1` be read from line 9: `4` (fix wrote count: 4) or text (an invalid-count warning,
    lint exit 0)."""
    cases = {
        "ignored.yaml": _separated("    image: x # dramigrate: ignore"),
        "four.yaml": _separated("    image: " + "r" * 12 + " 4"),
        "text.yaml": _separated('    image: "imagename:x  abc"'),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)

    code, out, err = dramigrate_in_process(["lint", "--format", "json", *cases], cwd=tmp_path)

    assert code == 1, out + err
    found = {f["file"]: (f["rule"], f["line"], f["message"].split(" is ")[0]) for f in json.loads(out)["findings"]}
    assert found == {name: ("legacy-device-request", 14, "nvidia.com/gpu: 1") for name in cases}, found


RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rc
spec:
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray
          image: x
{head}  workerGroupSpecs:
  - groupName: w
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray
          image: x
{worker}"""
GPU = "          resources:\n            limits:\n              nvidia.com/gpu: 1\n"


def test_a_baselined_request_moved_to_another_pod_template_of_the_object_is_new(tmp_path: Path) -> None:
    """A RayCluster's head and worker group both name their container `ray`: the baseline's key (file, object,
    container, resource, rule) was the same for both, so the worker's baselined GPU moved to the head stayed known
    (lint exit 0). An entry of a baseline written before entries had a pod template still matches as it did."""
    ray = tmp_path / "rc.yaml"
    ray.write_text(RAY.format(head="", worker=GPU))
    code, _, err = dramigrate_in_process(["lint", "--write-baseline", "bl.json", "rc.yaml"], cwd=tmp_path)
    assert code == 1, err
    doc = json.loads((tmp_path / "bl.json").read_text())
    for entry in doc["findings"]:
        entry.pop("podTemplate", None)
    (tmp_path / "old.json").write_text(json.dumps(doc))

    ray.write_text(RAY.format(head=GPU, worker=""))
    runs = {
        b: dramigrate_in_process(["lint", "--baseline", b, "--format", "json", "rc.yaml"], cwd=tmp_path)
        for b in ("bl.json", "old.json")
    }

    code, out, _ = runs["bl.json"]
    assert code == 1, out
    (new,) = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert new["podTemplatePath"].startswith("spec.headGroupSpec")
    assert runs["old.json"][0] == 0, runs["old.json"]


COUNTERS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpus}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  sharedCounters:
  - name: gpu-0
    counters:
      memory: {value: MEMORY}
  devices:
  - name: gpu-0-half-a
    consumesCounters:
    - counterSet: gpu-0
      counters: {memory: {value: 40Gi}}
    attributes:
      type: {string: gpu}
  - name: gpu-0-half-b
    consumesCounters:
    - counterSet: gpu-0
      counters: {memory: {value: 40Gi}}
    attributes:
      type: {string: gpu}
"""


def test_fit_keeps_devices_within_the_counters_they_share(tmp_path: Path) -> None:
    """Partitionable devices (a GPU published as partitions that consume its counters) were counted as if each were
    whole: two partitions that together need more memory than their GPU's counter holds "fitted" a claim of two
    (exit 0), which the scheduler never allocates. With room for both, they still fit."""
    (tmp_path / "pod.yaml").write_text(POD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 2"))
    for memory, fits in (("40Gi", False), ("80Gi", True)):
        (tmp_path / "slices.yaml").write_text(COUNTERS.replace("MEMORY", memory))

        code, out, err = dramigrate_in_process(
            ["fit", "--inventory", "slices.yaml", "--format", "json", "pod.yaml"], cwd=tmp_path
        )

        (claim,) = json.loads(out)["claims"]
        assert (code, claim["fits"]) == (0 if fits else 1, fits), (memory, out, err)
