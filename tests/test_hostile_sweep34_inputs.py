"""Session 34's red team on the inputs other than manifests and charts (issue 11): device inventories for `fit`, rule
packs and workload-kind files given with `--rules`, and suppression comments. Each attack beside good input: no
traceback, a message naming the file, a non-zero exit for bad input, and no gate turned green by what a file does not
say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

REPO = Path(__file__).resolve().parents[1]

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {metadata}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {{name: node-a}}
  devices:
  - name: gpu-0
    attributes:
      type: {{string: gpu}}
"""


@pytest.mark.parametrize("metadata", ["[1]", "x", "7", "true"])
def test_an_inventory_slice_whose_metadata_is_no_mapping_is_named_not_an_internal_error(
    tmp_path: Path, metadata: str
) -> None:
    """A ResourceSlice whose `metadata` is a list, a string or a number ended fit in `internal error:
    AttributeError: 'list' object has no attribute 'get'` (the slice's name was read with `.get` on whatever
    metadata held): the inventory is named as bad input, exit 2."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "slices.yaml").write_text(SLICE.format(metadata=metadata))

    code, out, err = run_dramigrate(["fit", "--inventory", "slices.yaml", "pod.yaml"], cwd=tmp_path)

    assert code == 2, (out, err)
    assert "internal error" not in err
    assert "slices.yaml" in err and "metadata" in err, err


def test_a_finding_rules_file_given_as_rules_is_refused_by_name(tmp_path: Path) -> None:
    """`--rules` given a `kind: FindingRules` file (the catalogue's kind, which `rules validate` accepts) ended
    every command in `internal error: KeyError: 'kinds'`: it was loaded as a workloads file. It is refused by name
    before any work, exit 2, from the command line and from a repository's config alike."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "catalogue.yaml").write_bytes((REPO / "rules" / "findings.yaml").read_bytes())

    for args in (["lint", "--rules", "catalogue.yaml", "pod.yaml"], ["rules", "list", "--rules", "catalogue.yaml"]):
        code, out, err = run_dramigrate(args, cwd=tmp_path)
        assert code == 2, (args, out, err)
        assert "internal error" not in err
        assert "catalogue.yaml" in err and "FindingRules" in err, err


@pytest.mark.parametrize(
    "comment",
    [
        "nvidia.com/gpu: 1  # dramigrate: ignore = shared-device",  # spaces around `=`, as `disable = rule` allows
        "nvidia.com/gpu: 1  # dramigrate: ignored=shared-device",
        "nvidia.com/gpu: 1  # dramigrate: ignore:shared-device",
        "nvidia.com/gpu: 1  # dramigrate: ignore-file=shared-device",
        "# dramigrate: disable-files=shared-device\n        nvidia.com/gpu: 1",
        "# dramigrate: disable:shared-device\n        nvidia.com/gpu: 1",
        "# dramigrate: disable-file=\n        nvidia.com/gpu: 1",
        "# dramigrate: disable-file=,\n        nvidia.com/gpu: 1",
    ],
    ids=["ignore-spaced", "ignored", "ignore-colon", "ignore-file", "disable-files", "disable-colon", "empty", "comma"],
)
def test_a_suppression_comment_naming_one_rule_never_silences_the_device_request(tmp_path: Path, comment: str) -> None:
    """A comment that names one rule in a spelling the directive does not take (`ignore = rule`, `ignored=rule`,
    `disable-files=rule`, `disable-file=` with an empty list) was read as the bare directive: every rule off, the
    GPU request unreported, lint exit 0. A reviewer reads it as silencing shared-device only. Such a comment
    silences nothing now, and the request is reported."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p").replace("nvidia.com/gpu: 1", comment))

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "json"], cwd=tmp_path)

    assert code == 1, (out, err)
    assert [f["rule"] for f in json.loads(out)["findings"] if f["severity"] == "error"] == ["legacy-device-request"]


@pytest.mark.parametrize(
    "comment",
    [
        "nvidia.com/gpu: 1  # dramigrate: ignore = legacy-device-request",
        "nvidia.com/gpu: 1  # dramigrate: ignore=shared-device, legacy-device-request",
        "# dramigrate: disable = legacy-device-request\n        nvidia.com/gpu: 1",
        "nvidia.com/gpu: 1  # dramigrate: ignore   (stays on the plugin until Q3)",
    ],
)
def test_a_suppression_comment_in_a_spelling_it_takes_still_suppresses(tmp_path: Path, comment: str) -> None:
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p").replace("nvidia.com/gpu: 1", comment))

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "json"], cwd=tmp_path)

    assert code == 0, (out, err)
    assert [f for f in json.loads(out)["findings"] if f["severity"] == "error"] == []


@pytest.mark.parametrize("kind", ["[RulePack]", "{RulePack: 1}", "{}"])
@pytest.mark.parametrize("command", ["lint", "validate"])
def test_a_rules_file_whose_kind_is_a_list_or_map_is_named_not_an_internal_error(
    tmp_path: Path, kind: str, command: str
) -> None:
    """`kind: [RulePack]` in a rules file ended lint and `rules validate` in `internal error: TypeError:
    unhashable type: 'list'` (the kind was looked up among the schemas as it was): named as not a rules file."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "pack.yaml").write_text(f"schemaVersion: 1\nkind: {kind}\nname: acme\n")
    args = ["lint", "--rules", "pack.yaml", "pod.yaml"] if command == "lint" else ["rules", "validate", "pack.yaml"]

    code, out, err = run_dramigrate(args, cwd=tmp_path)

    assert code == 2, (out, err)
    assert "internal error" not in err
    assert "pack.yaml" in out + err and "not a rules file" in out + err, (out, err)


def test_an_ignore_inside_a_quoted_string_is_no_comment(tmp_path: Path) -> None:
    """`# dramigrate: ignore` inside a container's argument on the line above its resources silenced the GPU
    request (lint exit 0): the line comment was matched anywhere on the line, where the block directives take
    only a `#` that starts a YAML comment. The argument is data Kubernetes passes to the container."""
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        '  - {name: a, image: a, args: ["--note", "# dramigrate: ignore me"],\n'
        "     resources: {limits: {nvidia.com/gpu: 4}}}\n"
    )

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "json"], cwd=tmp_path)

    assert code == 1, (out, err)
    assert "legacy-device-request" in [f["rule"] for f in json.loads(out)["findings"]]


RULE_PACK_WITH_CLASS = """\
schemaVersion: 1
kind: RulePack
name: acme
description: a repository's pack whose class selector Kubernetes would stop at its cost limit
resources:
  - match: nvidia.com/gpu
    deviceClass: gpu.acme.example
    request: gpu
deviceClasses:
  - name: gpu.acme.example
    driver: gpu.nvidia.com
    selectors: [{selector}]
"""

GROW = ".replace('a', 'aaaaaaaaaa')"
TEN = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"


@pytest.mark.parametrize(
    "selector",
    [
        f"\"'aaaaaaaaaa'{GROW * 9}.size() > 0\"",  # ten gigabytes of string, built one replace at a time
        f'"{TEN}.all(a, {TEN}.all(b, {TEN}.all(c, {TEN}.all(d, {TEN}.all(e, {TEN}.all(f, {TEN}.all(g, true)))))))"',
    ],
    ids=["string-growth", "nested-loops"],
)
def test_a_class_selector_past_kubernetes_cost_limit_stops_fit_in_seconds(tmp_path: Path, selector: str) -> None:
    """A rule pack's class selector that Kubernetes stops at its runtime cost limit (1,000,000) was evaluated in
    full on every device: `'a'.replace('a', 'aaaaaaaaaa')` nine times over took gigabytes per device (a MemoryError
    under a 3 GB limit after 27 s for four devices, the machine's memory without one), seven nested `all` over ten
    items hours. The selector fails as Kubernetes fails it, with a message saying why, and fit ends in seconds."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "pack.yaml").write_text(RULE_PACK_WITH_CLASS.format(selector=selector))
    devices = "".join(f"  - name: gpu-{i}\n    attributes:\n      type: {{string: gpu}}\n" for i in range(20))
    (tmp_path / "slices.yaml").write_text(
        SLICE.format(metadata="{name: s}").split("  devices:")[0] + "  devices:\n" + devices
    )

    code, out, err = run_dramigrate(
        ["fit", "--rules", "pack.yaml", "--inventory", "slices.yaml", "pod.yaml"], cwd=tmp_path, timeout=30
    )

    assert code == 1, (out, err)
    assert "FITS NOWHERE" in out
    assert "cost limit" in out, out


def test_an_inventory_whose_aliases_repeat_a_slice_thousands_of_times_is_refused_at_once(tmp_path: Path) -> None:
    """An 80 KB inventory whose List named one slice of 1,000 devices 5,000 times (`items: [*s, *s, ...]`) was
    five million devices: fit ran past a minute (killed at 100 s). kubectl writes no aliases: an inventory whose
    aliases multiply it more than tenfold is refused by name at once, exit 2; one that shares attribute maps
    between its devices still fits."""
    devices = "".join(f"    - name: gpu-{i}\n      attributes: {{type: {{string: gpu}}}}\n" for i in range(1000))
    slice_ = (
        "- &s\n  apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {name: s}\n  spec:\n"
        "    driver: gpu.nvidia.com\n    nodeName: n\n    pool: {name: p}\n    devices:\n" + devices
    )
    (tmp_path / "bomb.yaml").write_text(
        "apiVersion: v1\nkind: List\nslices:\n" + slice_ + "items: [" + ", ".join(["*s"] * 5000) + "]\n"
    )
    shared = "".join(
        f"- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {{name: s{n}}}\n  spec:\n"
        f"    driver: gpu.nvidia.com\n    nodeName: node-{n}\n    pool: {{name: node-{n}}}\n    devices:\n"
        + "".join(
            f"    - name: gpu-{i}\n      attributes: "
            + ("&gpu {type: {string: gpu}, brand: {string: Nvidia}}\n" if n == i == 0 else "*gpu\n")
            for i in range(8)
        )
        for n in range(20)
    )
    (tmp_path / "shared.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + shared)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fit", "--inventory", "bomb.yaml", "pod.yaml"], cwd=tmp_path, timeout=30)
    assert code == 2, (out, err)
    assert "bomb.yaml" in err and "aliases" in err, err

    code, out, err = run_dramigrate(["fit", "--inventory", "shared.yaml", "pod.yaml"], cwd=tmp_path, timeout=30)
    assert code == 0, (out, err)
    assert "fits on 20 node(s)" in out, out


def test_a_rule_pack_regex_just_under_its_timeout_on_every_name_stops_lint_in_seconds(tmp_path: Path) -> None:
    """A pack regex the static check passes, `acme\\.example/(a|aa)+x`, takes 0.2 to 0.45 s on
    `acme.example/` and 28 a's: under the 0.5 s a match may take, so each of 100 pods asking for that resource paid
    it again and lint ran 53 s (300 pods: minutes). One regex may spend 2 s in all in slow matches over a run; then
    the files left are named as bad input, exit 2, in seconds."""
    (tmp_path / "pack.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\ndescription: d\nresources:\n"
        "  - regex: 'acme\\.example/(a|aa)+x'\n    deviceClass: npu.acme.example\n    request: npu\n"
        "deviceClasses:\n  - name: npu.acme.example\n    driver: npu.acme.example\n"
    )
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{}}}\nspec:\n  containers:\n  - name: c\n    image: a\n"
    pod += "    resources: {{limits: {{acme.example/" + "a" * 28 + ": 1}}}}\n"
    (tmp_path / "pods.yaml").write_text("---\n".join(pod.format(i) for i in range(100)))

    code, out, err = run_dramigrate(["lint", "--rules", "pack.yaml", "pods.yaml"], cwd=tmp_path, timeout=40)

    assert code == 2, (out, err)
    assert "pods.yaml" in out + err and "catastrophic backtracking" in out + err, (out, err)


CONFIG_MAP_SCRIPT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: setup
data:
  setup.sh: |
    #!/bin/sh
    # dramigrate: disable-file
    echo ready
---
"""

POD_ARG_TEXT = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    note: "first line
      # dramigrate: disable-file
      last line"
spec:
  containers:
  - name: app
    image: app:1
    args:
    - |
      # dramigrate: ignore
    resources: {limits: {nvidia.com/gpu: 4}}
"""


@pytest.mark.parametrize(
    "text",
    [CONFIG_MAP_SCRIPT + ONE_GPU_POD.format(name="p"), POD_ARG_TEXT],
    ids=["config-map-script", "quoted-and-block-text"],
)
def test_a_suppression_written_inside_a_strings_text_silences_nothing(tmp_path: Path, text: str) -> None:
    """A line `# dramigrate: disable-file` of a ConfigMap's script (a block scalar) silenced the GPU request of the
    Pod beside it, lint exit 0; so did that line inside a quoted annotation spanning lines, and `# dramigrate:
    ignore` as the text of a container argument on the line above its resources. Each is a string Kubernetes
    stores, no YAML comment: the request is reported. A comment after a block scalar's `|` still counts."""
    (tmp_path / "pod.yaml").write_text(text)

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "json"], cwd=tmp_path)

    assert code == 1, (out, err)
    assert "legacy-device-request" in [f["rule"] for f in json.loads(out)["findings"]]

    (tmp_path / "pod.yaml").write_text(text.replace("setup.sh: |", "setup.sh: |  # dramigrate: disable-file"))
    code, out, err = run_dramigrate(["lint", "pod.yaml", "--format", "json"], cwd=tmp_path)
    assert (code == 0) == ("setup.sh" in text), (out, err)


NPU_PACK = """\
schemaVersion: 1
kind: RulePack
name: acme
description: d
resources:
  - {match: acme.example/npu, deviceClass: npu.acme.example, request: npu}
deviceClasses:
  - {name: npu.acme.example, driver: npu.acme.example}
"""


@pytest.mark.parametrize("metadata", ["[1]", '"x"', "7"])
def test_a_classes_file_deviceclass_whose_metadata_is_no_mapping_is_bad_input_not_an_internal_error(
    tmp_path: Path, metadata: str
) -> None:
    """fix with a classes file holding a DeviceClass whose `metadata` is a list, a string or a number ended the
    classes file in `internal error: AttributeError: 'CommentedSeq' object has no attribute 'get'`, asking for a
    bug report: named as bad input at its line, left as it was; the manifest is still migrated."""
    (tmp_path / "acme.yaml").write_text(NPU_PACK)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p").replace("nvidia.com/gpu", "acme.example/npu"))
    classes = tmp_path / "classes.yaml"
    classes.write_text(f"apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {metadata}\nspec: {{}}\n")
    before = classes.read_bytes()

    code, out, err = run_dramigrate(
        ["fix", "--rules", "acme.yaml", "--classes-file", "classes.yaml", "pod.yaml", "--format", "json"],
        cwd=tmp_path,
    )

    report = json.loads(out)
    assert code == 2, (out, err)
    assert [f for f in report["findings"] if f["rule"] == "internal-error"] == []
    [error] = [e for e in report["errors"] if e["file"] == "classes.yaml"]
    assert "metadata" in error["message"] and error["line"] == 1, error
    assert classes.read_bytes() == before
    assert "resourceClaimTemplateName" in (tmp_path / "pod.yaml").read_text()


@pytest.mark.parametrize("where", ["regex", "sharedValuePattern"])
@pytest.mark.parametrize("command", ["lint", "validate"])
def test_a_rule_pack_regex_of_groups_nested_a_thousand_deep_is_named_not_an_internal_error(
    tmp_path: Path, where: str, command: str
) -> None:
    """A pack regex of 1,000 nested groups (8 KB) ended `rules validate` and every command given the pack in
    `internal error: RecursionError` (Python's regex parser recurses per group, and the pack's regexes were
    compiled before they were checked): named at its key, exit 2."""
    nested = "(" * 1000 + "a" + ")" * 1000
    entry = (
        f"  - regex: 'acme\\.example/{nested}'\n    deviceClass: npu.acme.example\n    request: npu\n"
        if where == "regex"
        else "  - match: acme.example/npu\n    deviceClass: npu.acme.example\n    request: npu\n"
        f"    sharing: {{setting: acme.example/npu, nodeLabel: acme.example/p, sharedValuePattern: '{nested}'}}\n"
    )
    (tmp_path / "pack.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\ndescription: d\nresources:\n" + entry
    )
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    args = ["lint", "--rules", "pack.yaml", "pod.yaml"] if command == "lint" else ["rules", "validate", "pack.yaml"]

    code, out, err = run_dramigrate(args, cwd=tmp_path)

    assert code == 2, (out, err)
    assert "internal error" not in err
    assert "pack.yaml" in out + err and "nested too deeply" in out + err, (out, err)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("device.attributes['acme.example'].model == {value} && {nope}", "{nope} is not one of"),
        ("device.attributes['acme.example'].model == {value:>999999999}", "is not one of"),
        ("device.attributes['acme.example'].model == {value} ||", "compilation failed"),
    ],
    ids=["unknown-field", "format-spec", "not-cel"],
)
def test_a_rule_packs_label_cel_template_is_checked_when_the_pack_loads(
    tmp_path: Path, template: str, why: str
) -> None:
    """A label's `cel` template was checked by nothing: `rules validate` said ok, lint called the pod fixable, and a
    `{nope}` in it ended each file whose pod pins the label in `internal error: KeyError: 'nope'` (Python's format
    fills it, which also took `{value:>999999999}`); CEL that does not compile made every such rewrite invalid.
    The pack is refused when it loads, naming the label, exit 2."""
    (tmp_path / "pack.yaml").write_text(
        NPU_PACK
        + "labels:\n  - key: acme.example/model\n    role: feature\n    classes: [npu.acme.example]\n"
        + f'    cel: {{eq: "{template}"}}\n'
    )
    (tmp_path / "pod.yaml").write_text(
        ONE_GPU_POD.format(name="p")
        .replace("nvidia.com/gpu", "acme.example/npu")
        .replace("spec:\n  containers:", "spec:\n  nodeSelector: {acme.example/model: x2}\n  containers:")
    )

    for args in (["rules", "validate", "pack.yaml"], ["lint", "--rules", "pack.yaml", "pod.yaml"]):
        code, out, err = run_dramigrate(args, cwd=tmp_path)
        assert code == 2, (args, out, err)
        assert "internal error" not in out + err
        assert "labels.0.cel.eq" in out + err and why in out + err, (out, err)
