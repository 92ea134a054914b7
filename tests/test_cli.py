"""The command line through the installed entry point: help, exit codes, streams, JSON, bad input, targets,
classes, quotas, kustomize, suppression, workload kinds and format preservation."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import RunCli

FINDING_KEYS = {
    "rule",
    "severity",
    "file",
    "line",
    "column",
    "kind",
    "namespace",
    "name",
    "podTemplatePath",
    "container",
    "resource",
    "deviceClass",
    "message",
    "fixable",
    "fixed",  # DESIGN.md "Output": fix flags the fixed ones `fixed: true`
    "wouldFix",  # diff is a dry run: what fix would fix
    "related",
}
SUMMARY_KEYS = {"files", "filesChanged", "badInput", "errors", "warnings", "infos", "fixable", "fixed"}

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      limits:
        cpu: "2"
        nvidia.com/gpu: 2
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  key: value
"""

# Invalid YAML that names a device (files that cannot hold a device request are not parsed at all).
BROKEN = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\nspec:\n"
    "  containers: [{name: a, resources: {limits: {nvidia.com/gpu: 1}}}\n  x: [\n"
)

PLACEHOLDER = """\
apiVersion: v1
kind: Pod
metadata:
  name: templated
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        nvidia.com/gpu: "$GPU_PER_NODE"
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def docs(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text.lstrip("\ufeff")) if d is not None]


def claim_templates(text: str) -> list[dict[str, Any]]:
    return [d for d in docs(text) if d.get("kind") == "ResourceClaimTemplate"]


def lint_json(run_cli: RunCli, *args: str | Path, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(["lint", "--format", "json", *args], cwd=cwd)
    assert "Traceback" not in err, err
    return code, json.loads(out)


def line_col(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first line that contains needle."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(f"{needle!r} not in text")


# -- help ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [[], ["lint"], ["diff"], ["fix"], ["rules"], ["rules", "list"], ["rules", "show"], ["rules", "validate"]],
    ids=lambda c: " ".join(c) or "dramigrate",
)
def test_help_shows_examples(run_cli: RunCli, command: list[str]) -> None:
    code, out, err = run_cli([*command, "--help"])
    assert code == 0, err
    assert "Usage" in out
    assert "Examples" in out, f"`dramigrate {' '.join(command)} --help` shows no examples:\n{out}"
    assert "dramigrate " in out.split("Examples", 1)[1], "the Examples section has no command line"


def test_rules_validate_without_files_passes_the_shipped_rules(run_cli: RunCli) -> None:
    """Was: exit 2, "rules/autoscalers.yaml: not a rules file" (a shipped data file taken for a pack)."""
    code, out, err = run_cli(["rules", "validate"])
    assert code == 0, out + err
    assert "nvidia.yaml: ok" in out and "workloads.yaml: ok" in out
    assert "autoscalers.yaml" not in out and "kube-versions.yaml" not in out


def test_version(run_cli: RunCli) -> None:
    code, out, _ = run_cli(["--version"])
    assert code == 0 and out.startswith("dramigrate ")


# -- exit codes ------------------------------------------------------------------------------------------


def test_lint_exit_codes(run_cli: RunCli, tmp_path: Path) -> None:
    clean = write(tmp_path, "clean.yaml", CONFIGMAP)
    device = write(tmp_path, "device.yaml", POD)
    warning_only = write(tmp_path, "warning.yaml", PLACEHOLDER)
    bad = write(tmp_path, "bad.yaml", BROKEN)
    assert run_cli(["lint", clean])[0] == 0
    assert run_cli(["lint", device])[0] == 1
    assert run_cli(["lint", warning_only])[0] == 0
    assert run_cli(["lint", "--fail-on", "warning", warning_only])[0] == 1
    assert run_cli(["lint", "--fail-on", "warning", clean])[0] == 0
    assert run_cli(["lint", "--fail-on", "info", clean])[0] == 0
    assert run_cli(["lint", bad])[0] == 2
    assert run_cli(["lint", bad, device])[0] == 2, "bad input wins over error findings"
    assert run_cli(["lint", tmp_path / "missing.yaml"])[0] == 2
    code, _, err = run_cli(["lint", "--fail-on", "bogus", clean])
    assert code == 2 and "Traceback" not in err


def test_fix_exit_codes(run_cli: RunCli, tmp_path: Path) -> None:
    fixable = write(tmp_path, "a/device.yaml", POD)
    assert run_cli(["fix", fixable])[0] == 0, "every error fixed: exit 0"
    assert run_cli(["fix", write(tmp_path, "b/warning.yaml", PLACEHOLDER)])[0] == 0, "warnings only: exit 0"
    dangling = """\
apiVersion: v1
kind: Pod
metadata:
  name: dangling
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
  containers:
  - name: app
    image: x
    resources:
      claims:
      - name: typo
      limits:
        nvidia.com/gpu: 1
"""
    path = write(tmp_path, "c/dangling.yaml", dangling)
    code, _, err = run_cli(["fix", path])
    assert code == 1, f"an error fix cannot resolve remains: exit 1\n{err}"
    assert "dangling-claim" in err
    assert "limits" not in docs(path.read_text())[0]["spec"]["containers"][0]["resources"], "the rest is fixed"
    assert run_cli(["fix", write(tmp_path, "d/bad.yaml", BROKEN)])[0] == 2


def test_diff_check_exit_codes(run_cli: RunCli, tmp_path: Path) -> None:
    device = write(tmp_path, "device.yaml", POD)
    clean = write(tmp_path, "clean.yaml", CONFIGMAP)
    assert run_cli(["diff", device])[0] == 0
    assert run_cli(["diff", "--check", device])[0] == 1
    assert run_cli(["diff", "--check", clean])[0] == 0
    assert run_cli(["diff", "--check", write(tmp_path, "warning.yaml", PLACEHOLDER)])[0] == 0
    assert run_cli(["diff", "--check", write(tmp_path, "bad.yaml", BROKEN)])[0] == 2
    assert device.read_text() == POD, "diff writes nothing"


def test_dangling_claim_without_any_pod_claims_is_reported(run_cli: RunCli, tmp_path: Path) -> None:
    """A container claim with no spec.resourceClaims at all is the plainest dangling claim (DESIGN: error)."""
    path = write(
        tmp_path,
        "dangling.yaml",
        """\
apiVersion: v1
kind: Pod
metadata:
  name: dangling
spec:
  containers:
  - name: app
    image: x
    resources:
      claims:
      - name: gpu
""",
    )
    code, report = lint_json(run_cli, path)
    assert [f["rule"] for f in report["findings"]] == ["dangling-claim"]
    assert report["findings"][0]["line"] == 11
    assert code == 1


def test_fix_exit_code_agrees_with_lint_after_fix(run_cli: RunCli, tmp_path: Path) -> None:
    """fix exits 1 only when errors remain: lint on the rewritten file must agree."""
    path = write(
        tmp_path,
        "beside.yaml",
        """\
apiVersion: v1
kind: Pod
metadata:
  name: beside
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: app
    image: x
    resources:
      claims:
      - name: gpu
      limits:
        nvidia.com/gpu: 1
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
""",
    )
    before, report = lint_json(run_cli, path)
    assert before == 1
    assert {f["rule"] for f in report["findings"]} == {"extended-resource-beside-claim", "legacy-device-request"}
    fix_code, _, fix_err = run_cli(["fix", path])
    after, report = lint_json(run_cli, path)
    remaining = [f for f in report["findings"] if f["severity"] == "error"]
    assert fix_code == (1 if remaining else 0), (
        f"fix exited {fix_code}, but lint on the fixed file finds {remaining or 'no errors'}; fix said:\n{fix_err}"
    )


# -- streams ---------------------------------------------------------------------------------------------


def test_lint_report_goes_to_stdout(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    code, out, err = run_cli(["lint", path])
    assert code == 1
    assert "legacy-device-request" in out and f"{path}:13:9" in out
    assert "legacy-device-request" not in err
    code, out, err = run_cli(["lint", "--format", "json", path])
    assert "legacy-device-request" in [f["rule"] for f in json.loads(out)["findings"]]
    report = tmp_path / "report.json"
    code, out, err = run_cli(["lint", "--format", "json", "--output", report, path])
    assert code == 1 and "legacy-device-request" not in out
    assert json.loads(report.read_text())["summary"]["errors"] == 1


def test_diff_writes_diff_to_stdout_and_summary_to_stderr(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    code, out, err = run_cli(["diff", path])
    assert code == 0
    assert out.startswith(f"--- a/{path}") or out.startswith("--- "), out
    assert "-        nvidia.com/gpu: 2" in out
    assert "+kind: ResourceClaimTemplate" in out
    assert "scanned" not in out and "legacy-device-request" not in out
    assert "scanned" in err
    assert path.read_text() == POD


def test_fix_stdin_writes_only_yaml_to_stdout(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli(["fix", "-"], stdin=POD + "---\n" + CONFIGMAP, cwd=tmp_path)
    assert code == 0, err
    objects = docs(out)  # stdout is YAML and nothing else
    assert [o["kind"] for o in objects] == ["Pod", "ResourceClaimTemplate", "ConfigMap"]
    assert "scanned" not in out and "legacy-device-request" not in out and "fixed" not in out
    assert "legacy-device-request" in err and "scanned" in err
    assert list(tmp_path.iterdir()) == [], "fix - writes no file"


def test_fix_stdin_without_changes_echoes_input(run_cli: RunCli) -> None:
    code, out, _ = run_cli(["fix", "-"], stdin=CONFIGMAP)
    assert code == 0 and out == CONFIGMAP


def test_fix_report_goes_to_stderr_or_output(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    report = tmp_path / "fix.json"
    code, out, err = run_cli(["fix", "--format", "json", "--output", report, path])
    assert code == 0 and out == ""
    data = json.loads(report.read_text())
    assert [f["fixed"] for f in data["findings"] if f["rule"] == "legacy-device-request"] == [True]
    assert data["summary"]["filesChanged"] == 1 and data["summary"]["errors"] == 0


# -- JSON shape ------------------------------------------------------------------------------------------


def test_json_shape_and_positions(run_cli: RunCli, tmp_path: Path) -> None:
    text = """\
# a comment first, so line numbers are not document offsets
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  template:
    spec:
      containers:
        - name: main
          image: x
          resources:
            requests:
              "nvidia.com/gpu": 1
            limits:
              cpu: 1
              nvidia.com/gpu: 1
        - name: helper
          image: y
          resources:
            limits: {amd.com/gpu: 1}
"""
    path = write(tmp_path, "shape.yaml", text)
    code, report = lint_json(run_cli, path)
    assert code == 1
    assert set(report) >= {"findings", "summary"}
    assert set(report["summary"]) == SUMMARY_KEYS
    assert report["summary"]["errors"] == len(report["findings"]) == 2
    for f in report["findings"]:
        assert set(f) == FINDING_KEYS, set(f) ^ FINDING_KEYS
        assert isinstance(f["related"], list)
        assert f["file"] == str(path) and f["kind"] == "Deployment" and f["name"] == "web"
        assert f["namespace"] == "prod" and f["podTemplatePath"] == "spec.template.spec"
        assert f["severity"] == "error" and f["fixable"] is True and f["fixed"] is False
    main, helper = sorted(report["findings"], key=lambda f: f["line"])
    assert (main["container"], main["resource"]) == ("main", "nvidia.com/gpu")
    assert (main["line"], main["column"]) in (line_col(text, "nvidia.com/gpu: 1"), line_col(text, '"nvidia.com/gpu"'))
    assert (helper["container"], helper["resource"]) == ("helper", "amd.com/gpu")
    assert (helper["line"], helper["column"]) == line_col(text, "amd.com/gpu")


def test_every_finding_position_is_one_based(run_cli: RunCli, tmp_path: Path) -> None:
    """DESIGN.md: lines and columns are 1-based, for every finding (here: classes-file-needed too)."""
    path = write(
        tmp_path,
        "mig.yaml",
        POD.replace("nvidia.com/gpu: 2", "nvidia.com/mig-1g.5gb: 1"),
    )
    # No driver chart ships a class that maps nvidia.com/mig-1g.5gb by extendedResourceName: the tool writes one.
    _, report = lint_json(run_cli, path, "--strategy", "extended-resource")
    assert {f["rule"] for f in report["findings"]} == {"extended-resource", "classes-file-needed"}
    for f in report["findings"]:
        assert f["line"] >= 1 and f["column"] >= 1, f


# -- bad input -------------------------------------------------------------------------------------------

BAD_INPUTS = {
    "invalid.yaml": (
        b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n"
        b"    resources:\n      limits:\n        nvidia.com/gpu: 1\n   oops: [\n",
        11,
    ),
    "duplicate.yaml": (
        b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  name: q\nspec:\n  containers:\n  - name: a\n"
        b"    resources:\n      limits:\n        nvidia.com/gpu: 1\n",
        5,
    ),
    "latin1.yaml": (
        b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    owner: caf\xe9\nspec:\n"
        b"  containers:\n  - name: a\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n",
        6,
    ),
    "no-name.yaml": (
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels: {app: x}\nspec:\n  template:\n"
        b"    spec:\n      containers:\n      - name: a\n        image: x\n        resources:\n"
        b"          limits:\n            nvidia.com/gpu: 1\n",
        4,
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_fix_bad_input(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    raw, line = BAD_INPUTS[name]
    bad = write(tmp_path, name, raw)
    good = write(tmp_path, "zz-good.yaml", POD)
    code, out, err = run_cli(["fix", tmp_path])
    assert code == 2, err
    assert "Traceback" not in err and "Traceback" not in out
    assert f"{bad}:{line}" in err, f"no {bad}:{line} in:\n{err}"
    assert bad.read_bytes() == raw, "nothing written for the bad file"
    pod, rct = docs(good.read_text())
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "2"}, "the other file is still fixed"
    assert rct["kind"] == "ResourceClaimTemplate"


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_lint_bad_input(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    """lint and fix agree on what is bad input: lint must not call `fixable` what fix refuses (exit 2)."""
    raw, line = BAD_INPUTS[name]
    bad = write(tmp_path, name, raw)
    code, out, err = run_cli(["lint", bad])
    assert "Traceback" not in err
    assert code == 2, f"lint exit {code} on bad input {name}:\n{out}{err}"
    assert f"{bad}:{line}" in out + err
    code, report = lint_json(run_cli, bad)
    assert code == 2 and report["errors"] and report["errors"][0]["line"] == line
    assert not [f for f in report["findings"] if f["fixable"]]


def test_fix_stdin_bad_input(run_cli: RunCli) -> None:
    code, out, err = run_cli(["fix", "-"], stdin=BROKEN)
    assert code == 2 and "Traceback" not in err
    assert "-:7" in err


# -- target versions -------------------------------------------------------------------------------------


def test_kube_133_needs_assume_dra_enabled(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    code, out, err = run_cli(["fix", "--kube-version", "1.33", path])
    assert code == 2 and "Traceback" not in err
    assert "DynamicResourceAllocation" in err and "resource.k8s.io/v1beta2" in err and "--assume-dra-enabled" in err
    assert path.read_text() == POD
    code, out, err = run_cli(["fix", "--kube-version", "1.33", "--assume-dra-enabled", path])
    assert code == 0, err
    (rct,) = claim_templates(path.read_text())
    assert rct["apiVersion"] == "resource.k8s.io/v1beta2"
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    kubernetes_validate.validate(rct, "1.33", strict=True)


def test_kube_132_emits_v1beta1_flat_requests(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    assert run_cli(["fix", "--kube-version", "1.32", path])[0] == 2
    code, _, err = run_cli(["fix", "--kube-version", "1.32", "--assume-dra-enabled", path])
    assert code == 0, err
    (rct,) = claim_templates(path.read_text())
    assert rct["apiVersion"] == "resource.k8s.io/v1beta1"
    (request,) = rct["spec"]["spec"]["devices"]["requests"]
    assert "exactly" not in request
    assert request["deviceClassName"] == "gpu.nvidia.com" and request["count"] == 2
    kubernetes_validate.validate(rct, "1.32", strict=True)


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_kube_134_and_later_emit_v1(run_cli: RunCli, tmp_path: Path, version: str) -> None:
    code, out, err = run_cli(["fix", "--kube-version", version, "-"], stdin=POD)
    assert code == 0, err
    (rct,) = claim_templates(out)
    assert rct["apiVersion"] == "resource.k8s.io/v1"
    kubernetes_validate.validate(rct, version, strict=True)


def test_lint_below_134_does_not_need_the_flag(run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli(["lint", "--kube-version", "1.33", write(tmp_path, "d.yaml", POD)])
    assert code == 1 and "DynamicResourceAllocation" in err


def test_bad_kube_version(run_cli: RunCli, tmp_path: Path) -> None:
    for version in ("1.31", "banana", "1.99"):
        code, _, err = run_cli(["lint", "--kube-version", version, write(tmp_path, "d.yaml", POD)])
        assert code == 2 and "Traceback" not in err and "--kube-version" in err


# -- device classes --------------------------------------------------------------------------------------

NPU = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: netapp
spec:
  template:
    spec:
      containers:
      - name: app
        image: x
        resources:
          limits:
            acme.example/npu: 1
"""
# A user pack whose class no driver chart ships (every shipped pack's classes come with their driver charts).
NPU_PACK = """\
schemaVersion: 1
kind: RulePack
name: acme
resources:
  - {match: acme.example/npu, deviceClass: npu.acme.example, request: npu}
deviceClasses:
  - {name: npu.acme.example, driver: npu.acme.example, selectors: ["device.driver == 'npu.acme.example'"]}
"""


def test_classes_file_gets_classes_no_chart_ships(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "app/net.yaml", NPU)
    pack = write(tmp_path, "acme.yaml", NPU_PACK)
    classes = tmp_path / "cluster" / "deviceclasses.yaml"
    code, out, err = run_cli(["fix", "--rules", pack, "--classes-file", classes, path])
    assert code == 0, err
    objects = docs(classes.read_text())
    assert [o["kind"] for o in objects] == ["DeviceClass"]
    assert objects[0]["metadata"]["name"] == "npu.acme.example"
    for version in ("1.34", "1.36"):
        kubernetes_validate.validate(objects[0], version, strict=True)
    assert "DeviceClass" not in path.read_text(), "cluster-scoped objects never go into application files"
    assert "classes-file-needed" not in err
    # Running again adds nothing.
    before = classes.read_bytes()
    path.write_text(NPU)
    assert run_cli(["fix", "--rules", pack, "--classes-file", classes, path])[0] == 0
    assert classes.read_bytes() == before


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("classes", "from_config", "why"),
    [
        (".dramigrate.yaml", True, "is the config file"),
        ("acme.yaml", False, "is a rules file"),
        ("app/net.yaml", False, "is one of the files this run reads as input"),
        ("app/other.yaml", True, "is one of the files this run reads as input"),
        ("chart/values.yaml", False, "is inside the Helm chart"),
        ("chart/templates/classes.yaml", True, "is inside the Helm chart"),
    ],
)
def test_a_classes_file_the_run_reads_or_a_chart_holds_is_refused(
    run_cli: RunCli, tmp_path: Path, classes: str, from_config: bool, why: str
) -> None:
    """fix appended DeviceClass documents to whatever file classes-file named: with `.dramigrate.yaml` the next run
    failed on its own config, with the rules pack its pack, with an input manifest or a chart's file that file.
    Now the run stops before any work with a usage error naming it and why; nothing is written."""
    (tmp_path / ".git").mkdir()
    write(tmp_path, "acme.yaml", NPU_PACK)
    write(tmp_path, "app/net.yaml", NPU)
    write(tmp_path, "app/other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    write(tmp_path, "chart/values.yaml", "gpus: 1\n")
    config = "rules: [acme.yaml]\n" + (f"classes-file: {classes}\n" if from_config else "")
    write(tmp_path, ".dramigrate.yaml", config)
    before = _snapshot(tmp_path)
    flag = [] if from_config else ["--classes-file", classes]
    code, out, err = run_cli(["fix", "app", *flag], cwd=tmp_path)
    assert code == 2, err
    named = "the config's `classes-file`" if from_config else "--classes-file"
    assert f"{classes}: {named} {why}" in err and "fix would append DeviceClasses to it" in err, err
    assert "Traceback" not in out + err
    assert _snapshot(tmp_path) == before


def test_a_classes_file_the_walk_meets_is_kept_when_it_holds_only_device_classes(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """The documented layout: `classes-file: cluster/deviceclasses.yaml` in the repository, and `fix .` walks that
    file too once it exists. It holds DeviceClasses only: a classes file, not an app manifest; the run goes on."""
    (tmp_path / ".git").mkdir()
    write(tmp_path, "acme.yaml", NPU_PACK)
    write(tmp_path, ".dramigrate.yaml", "rules: [acme.yaml]\nclasses-file: cluster/deviceclasses.yaml\n")
    write(tmp_path, "app/net.yaml", NPU)
    assert run_cli(["fix", "."], cwd=tmp_path)[0] == 0
    write(tmp_path, "app/two.yaml", NPU.replace("netapp", "second"))
    code, out, err = run_cli(["fix", "."], cwd=tmp_path)
    assert code == 0, err
    classes = docs((tmp_path / "cluster/deviceclasses.yaml").read_text())
    assert [c["metadata"]["name"] for c in classes] == ["npu.acme.example"]


def test_classes_file_with_windows_line_ends_stays_crlf(run_cli: RunCli, tmp_path: Path) -> None:
    """A classes file kept with CRLF line ends (a Windows checkout) gets its new classes in CRLF too, not a file of
    mixed line ends."""
    path = write(tmp_path, "app/net.yaml", NPU)
    pack = write(tmp_path, "acme.yaml", NPU_PACK)
    classes = tmp_path / "deviceclasses.yaml"
    own = "# our cluster's classes\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    classes.write_bytes(own.replace("\n", "\r\n").encode())
    code, out, err = run_cli(["fix", "--rules", pack, "--classes-file", classes, path])
    assert code == 0, err
    raw = classes.read_bytes()
    assert raw.startswith(b"# our cluster's classes\r\n---\r\napiVersion: v1\r\n")
    assert b"npu.acme.example" in raw
    assert raw.count(b"\n") == raw.count(b"\r\n"), "every line ends in CRLF"


def test_without_classes_file_a_warning_says_what_is_needed(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "net.yaml", NPU)
    pack = write(tmp_path, "acme.yaml", NPU_PACK)
    code, report = lint_json(run_cli, "--rules", pack, path)
    needed = [f for f in report["findings"] if f["rule"] == "classes-file-needed"]
    assert len(needed) == 1 and needed[0]["severity"] == "warning"
    assert "npu.acme.example" in needed[0]["message"]
    code, out, err = run_cli(["fix", "--rules", pack, path])
    assert code == 0 and "classes-file-needed" in err and "--classes-file" in err


def test_classes_shipped_by_driver_charts_are_not_written(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "gpu.yaml", POD)
    classes = tmp_path / "deviceclasses.yaml"
    code, _, err = run_cli(["fix", "--classes-file", classes, path])
    assert code == 0
    assert not classes.exists() or not docs(classes.read_text())
    assert "classes-file-needed" not in err


# -- quotas ----------------------------------------------------------------------------------------------


def test_resource_quota_gains_dra_keys(run_cli: RunCli, tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 8
    requests.nvidia.com/mig-1g.5gb: 4
    requests.cpu: "64"
"""
    path = write(tmp_path, "quota.yaml", text)
    # Before 1.36 the legacy key does not limit claims; a key for one MIG profile cannot become a class key.
    code, report = lint_json(run_cli, path, "--kube-version", "1.35")
    assert code == 1 and {f["rule"] for f in report["findings"]} == {"quota-legacy-device", "quota-per-profile"}
    code, _, err = run_cli(["fix", "--kube-version", "1.35", path])
    assert code == 0, err
    (quota,) = docs(path.read_text())
    hard = quota["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == 8 and hard["requests.nvidia.com/mig-1g.5gb"] == 4, "legacy keys stay"
    assert int(hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"]) == 8
    assert "mig.nvidia.com.deviceclass.resource.k8s.io/devices" not in hard
    kubernetes_validate.validate(quota, "1.35", strict=True)
    assert path.read_text().startswith(text), "existing lines are kept; the DRA keys are added"


def test_resource_quota_mig_profiles_are_not_merged_into_one_key(run_cli: RunCli) -> None:
    text = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: mig
spec:
  hard:
    requests.nvidia.com/mig-1g.5gb: 4
    requests.nvidia.com/mig-2g.10gb: "2"
    requests.nvidia.com/mig-3g.20gb: 1
"""
    code, out, err = run_cli(["fix", "-"], stdin=text)
    assert code == 0, err
    # "4 of 1g.5gb, 2 of 2g.10gb, 1 of 3g.20gb" is not "7 of any profile": each key is reported, none merged.
    assert out == text and err.count("quota-per-profile") == 3


def test_drop_legacy_quota(run_cli: RunCli) -> None:
    text = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n  hard:\n    requests.nvidia.com/gpu: 8\n"
    code, out, _ = run_cli(["fix", "--drop-legacy-quota", "-"], stdin=text)
    assert code == 0
    assert docs(out)[0]["spec"]["hard"] == {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 8}


def test_scheduler_quota_names_the_resource(run_cli: RunCli, tmp_path: Path) -> None:
    text = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cq
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 8
"""
    code, report = lint_json(run_cli, write(tmp_path, "cq.yaml", text))
    found = [f for f in report["findings"] if f["rule"] == "scheduler-quota"]
    assert found and code == 0
    for f in found:
        assert f["resource"] == "nvidia.com/gpu", f
        assert "sets 0" not in f["message"], f["message"]


# -- kustomize -------------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_kustomize_base_with_an_overlay_outside_the_paths_is_reported_and_untouched(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    base_text = POD
    base = write(repo, "base/pod.yaml", base_text)
    write(repo, "base/kustomization.yaml", "resources:\n- pod.yaml\n")
    write(repo, "overlays/prod/kustomization.yaml", "resources:\n- ../../base\npatches:\n- path: gpus.yaml\n")
    patch_text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer\n  namespace: ml\nspec:\n  containers:\n"
        "  - name: app\n    resources:\n      limits:\n        nvidia.com/gpu: 4\n"
    )
    patch = write(repo, "overlays/prod/gpus.yaml", patch_text)
    unrelated = write(repo, "apps/other.yaml", POD.replace("trainer", "other"))
    # lint of the changed file alone (the pre-commit hook) fails as lint of the repository does: the request is an
    # error fix migrates once given the graph, and the overlay outside the paths is named
    code, report = lint_json(run_cli, "base/pod.yaml", cwd=repo)
    assert code == 1, report
    (finding,) = [f for f in report["findings"] if f["file"] == "base/pod.yaml" and f["rule"] != "topology-lost"]
    assert finding["rule"] == "legacy-device-request" and finding["severity"] == "error"
    (outside,) = [f for f in report["findings"] if f["rule"] == "kustomize-unproven"]
    assert "overlays/prod" in outside["message"] and "outside the given paths" in outside["message"]
    assert finding["resource"] == "nvidia.com/gpu"
    code, out, err = run_cli(["fix", "base", "apps"], cwd=repo)  # the overlay is not given: the base stays
    assert code == 0, err
    assert base.read_text() == base_text
    assert patch.read_text() == patch_text
    assert "ResourceClaimTemplate" in unrelated.read_text(), "files no overlay patches are still fixed"
    assert "kustomize-unproven" in err and "overlays/prod" in err


# -- suppression -----------------------------------------------------------------------------------------


def test_ignore_comment_and_annotation(run_cli: RunCli, tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: by-comment
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1  # dramigrate: ignore
---
apiVersion: v1
kind: Pod
metadata:
  name: by-rule-comment
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        # dramigrate: ignore=legacy-device-request
        nvidia.com/gpu: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: by-annotation
  annotations:
    dramigrate.io/ignore: "vendor image needs the device plugin"
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: other-rule
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1  # dramigrate: ignore=unknown-resource
"""
    path = write(tmp_path, "ignore.yaml", text)
    code, report = lint_json(run_cli, path)
    assert [(f["name"], f["rule"]) for f in report["findings"]] == [("other-rule", "legacy-device-request")]
    assert code == 1
    assert run_cli(["fix", path])[0] == 0
    fixed = docs(path.read_text())
    by_name = {d["metadata"]["name"]: d for d in fixed}
    for name in ("by-comment", "by-rule-comment", "by-annotation"):
        assert by_name[name]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
        assert "resourceClaims" not in by_name[name]["spec"]
    assert "resourceClaims" in by_name["other-rule"]["spec"]
    assert path.read_text().split("name: other-rule")[0] == text.split("name: other-rule")[0]


# -- workload kinds --------------------------------------------------------------------------------------


def test_raycluster_worker_gets_num_gpus(run_cli: RunCli) -> None:
    text = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: head
          image: rayproject/ray:2.9.0
  workerGroupSpecs:
  - groupName: gpu-workers
    replicas: 2
    rayStartParams:
      block: "true"
    template:
      spec:
        containers:
        - name: worker
          image: rayproject/ray:2.9.0
          resources:
            limits:
              nvidia.com/gpu: 4
"""
    code, out, err = run_cli(["fix", "-"], stdin=text)
    assert code == 0, err
    ray, rct = docs(out)
    worker = ray["spec"]["workerGroupSpecs"][0]
    assert str(worker["rayStartParams"]["num-gpus"]) == "4"
    assert worker["rayStartParams"]["block"] == "true"
    assert "num-gpus" not in ray["spec"]["headGroupSpec"]["rayStartParams"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    claim = worker["template"]["spec"]["resourceClaims"][0]
    assert claim["resourceClaimTemplateName"] == rct["metadata"]["name"]
    assert "count-from-limits" in err


def test_raycluster_keeps_existing_num_gpus(run_cli: RunCli) -> None:
    text = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: head
          image: rayproject/ray:2.9.0
  workerGroupSpecs:
  - groupName: g
    rayStartParams:
      num-gpus: "2"
    template:
      spec:
        containers:
        - name: worker
          image: rayproject/ray:2.9.0
          resources:
            limits:
              nvidia.com/gpu: 4
"""
    code, out, _ = run_cli(["fix", "-"], stdin=text)
    assert code == 0
    assert docs(out)[0]["spec"]["workerGroupSpecs"][0]["rayStartParams"]["num-gpus"] == "2"


KSERVE = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: llm
{annotations}spec:
  predictor:
    model:
      modelFormat:
        name: huggingface
      resources:
        limits:
          nvidia.com/gpu: "1"
"""


@pytest.mark.parametrize("mode", ["RawDeployment", "Standard"])
def test_kserve_rewritten_in_raw_deployment_mode(run_cli: RunCli, mode: str) -> None:
    text = KSERVE.format(annotations=f"  annotations:\n    serving.kserve.io/deploymentMode: {mode}\n")
    code, out, err = run_cli(["fix", "-"], stdin=text)
    assert code == 0, err
    isvc, rct = docs(out)
    predictor = isvc["spec"]["predictor"]
    assert "limits" not in predictor["model"]["resources"]
    assert predictor["model"]["resources"]["claims"] == [{"name": predictor["resourceClaims"][0]["name"]}]
    assert predictor["resourceClaims"][0]["resourceClaimTemplateName"] == rct["metadata"]["name"]
    kubernetes_validate.validate(rct, "1.36", strict=True)


def test_kserve_serverless_is_reported_not_rewritten(run_cli: RunCli, tmp_path: Path) -> None:
    text = KSERVE.format(annotations="")
    path = write(tmp_path, "isvc.yaml", text)
    code, report = lint_json(run_cli, path)
    assert code == 0
    assert [(f["rule"], f["severity"], f["line"]) for f in report["findings"]] == [("report-only-kind", "warning", 12)]
    assert run_cli(["fix", path])[0] == 0
    assert path.read_text() == text


REPORT_ONLY = {
    "knative": """\
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: kn
spec:
  template:
    spec:
      containers:
      - image: x
        resources:
          limits:
            nvidia.com/gpu: 1
""",
    "volcano": """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vcjob
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: train
    replicas: 1
    template:
      spec:
        containers:
        - name: c
          image: x
          resources:
            limits:
              nvidia.com/gpu: 1
""",
}


@pytest.mark.parametrize("name", sorted(REPORT_ONLY))
def test_report_only_kinds(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    text = REPORT_ONLY[name]
    path = write(tmp_path, f"{name}.yaml", text)
    code, report = lint_json(run_cli, path)
    assert code == 0
    (finding,) = report["findings"]
    assert finding["rule"] == "report-only-kind" and finding["resource"] == "nvidia.com/gpu"
    assert finding["line"] == len(text.splitlines())
    code, _, _ = run_cli(["fix", path])
    assert code == 0 and path.read_text() == text


def test_batch_job_is_still_rewritten(run_cli: RunCli) -> None:
    """The batch/v1 Job shares its kind name with Volcano's: the group decides."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                }
            }
        },
    }
    code, out, err = run_cli(["fix", "-"], stdin=yaml.safe_dump(job, sort_keys=False))
    assert code == 0, err
    assert [d["kind"] for d in docs(out)] == ["Job", "ResourceClaimTemplate"]


# -- format preservation ---------------------------------------------------------------------------------

FORMATTED = (
    "\ufeff# Deployment for the trainer, keep this comment\r\n"
    'apiVersion: "apps/v1"\r\n'
    "kind: Deployment\r\n"
    "metadata:\r\n"
    '    name: "trainer"   # quoted on purpose\r\n'
    "    labels:\r\n"
    "        app: 'trainer'\r\n"
    "spec:\r\n"
    "    replicas: 2\r\n"
    "    template:\r\n"
    "        spec:\r\n"
    "            containers:\r\n"
    "            - name: app  # the main container\r\n"
    '              image: "registry.example/app:1"\r\n'
    "              args: [\"--tp\", '2']\r\n"
    "              resources:\r\n"
    "                  limits:\r\n"
    '                      memory: "8Gi"\r\n'
    "                      nvidia.com/gpu: 2\r\n"
    "---\r\n"
    "# second document: untouched\r\n"
    "apiVersion: v1\r\n"
    "kind: ConfigMap\r\n"
    "metadata:\r\n"
    "    name: 'cfg'\r\n"
    "data:\r\n"
    '    key: "value"   # tail comment\r\n'
)


def test_format_preservation(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "fmt.yaml", FORMATTED)
    code, _, err = run_cli(["fix", path])
    assert code == 0, err
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "the BOM survives"
    assert raw.count(b"\n") == raw.count(b"\r\n"), "every line ends in CRLF"
    text = raw.decode("utf-8-sig")
    before = FORMATTED.lstrip("\ufeff").splitlines(keepends=True)
    after = text.splitlines(keepends=True)
    removed = []
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(before[i1:i2])
    assert removed == ["                      nvidia.com/gpu: 2\r\n"], f"lines changed besides the request: {removed}"
    assert text.endswith(FORMATTED.split("---\r\n")[1]), "the untouched document is byte-identical"
    # New lines follow the file's own style: 4-space mappings, flush sequences.
    assert "                  claims:\r\n                  - name: gpu\r\n" in text
    assert "            resourceClaims:\r\n            - name: gpu\r\n" in text
    assert "            tolerations:\r\n            - key: nvidia.com/gpu\r\n" in text
    rct = text.split("---\r\n")[1]
    assert rct.startswith("apiVersion: resource.k8s.io/v1\r\nkind: ResourceClaimTemplate\r\nmetadata:\r\n    name: ")
    objects = docs(text)
    assert [o["kind"] for o in objects] == ["Deployment", "ResourceClaimTemplate", "ConfigMap"]
    assert objects[0]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"memory": "8Gi"}
    # and fix twice changes nothing
    assert run_cli(["fix", path])[0] == 0
    assert path.read_bytes() == raw


def test_mixed_sequence_styles_stay_valid_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    """A document with flush `containers` and indented `tolerations` (common in real repos, e.g. the corpus'
    ai-on-eks llama3-405b LeaderWorkerSet): the added toleration must land in valid YAML."""
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: mixed
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:
        nvidia.com/gpu: 1
  tolerations:
    - key: dedicated
      operator: Exists
  volumes:
  - name: scratch
    emptyDir: {}
"""
    path = write(tmp_path, "mixed.yaml", text)
    code, _, err = run_cli(["fix", path])
    out = path.read_text()
    try:
        objects = docs(out)
    except yaml.YAMLError as exc:
        pytest.fail(f"fix (exit {code}) wrote invalid YAML: {exc}\n{out}")
    pod = objects[0]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
    assert {"key": "dedicated", "operator": "Exists"} in pod["spec"]["tolerations"]
    assert "    - key: dedicated\n      operator: Exists\n" in out, "untouched lines keep their indentation"


def test_comments_on_removed_requests_survive(run_cli: RunCli) -> None:
    """DESIGN.md: comments survive. A comment that explains a device request must not vanish with it."""
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: commented
spec:
  containers:
  - name: app
    image: x
    resources:
      limits:  # set by the platform team
        # two GPUs: tensor parallelism 2
        nvidia.com/gpu: 2  # TP=2
"""
    code, out, err = run_cli(["fix", "-"], stdin=text)
    assert code == 0, err
    lost = [c for c in ("# set by the platform team", "# two GPUs: tensor parallelism 2", "# TP=2") if c not in out]
    assert not lost, f"comments lost: {lost}\n{out}"


def test_nothing_to_fix_is_not_rewritten(run_cli: RunCli, tmp_path: Path) -> None:
    files = [
        write(tmp_path, "configmap.yaml", CONFIGMAP),
        write(tmp_path, "placeholder.yaml", PLACEHOLDER),
        write(tmp_path, "unknown.yaml", POD.replace("nvidia.com/gpu", "example.com/widget")),
    ]
    old = 1_000_000_000
    for f in files:
        os.utime(f, ns=(old, old))
    code, _, err = run_cli(["fix", tmp_path])
    assert code == 0, err
    for f in files:
        assert f.stat().st_mtime_ns == old, f"{f.name} was rewritten"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in files), "no temp files left"


def test_fix_keeps_file_mode(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path, "device.yaml", POD)
    path.chmod(0o640)
    assert run_cli(["fix", path])[0] == 0
    assert path.stat().st_mode & 0o777 == 0o640


def test_untouched_document_and_neighbours_are_byte_identical(run_cli: RunCli, tmp_path: Path) -> None:
    first = "# leading comment\n" + CONFIGMAP.replace("key: value", "key:   'spaced'   # keep")
    text = first + "---\n" + POD + "---  # marker comment\n" + CONFIGMAP.replace("settings", "other")
    path = write(tmp_path, "multi.yaml", text)
    assert run_cli(["fix", path])[0] == 0
    out = path.read_text()
    assert out.startswith(first + "---\n")
    assert out.endswith("---  # marker comment\n" + CONFIGMAP.replace("settings", "other"))
