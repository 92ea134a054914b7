"""A device name spelled with an escape is a device request: the byte pre-checks (Python's triage and the grep
pre-filter of a large tree) let the file through to the parse, which decodes it as the API server does.

Before, `"nvidia.com\\x2Fgpu": 1` in a container's limits held no device word in its bytes: lint said nothing and
exited 0, and a CI gate passed a pod Kubernetes gives a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dramigrate import prefilter

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: busybox
    resources:
      limits:
{limits}
"""

# file name -> (the file's text, the rule lint must report for it)
CASES = {
    "hex.yaml": (POD.format(name="hex", limits='        "nvidia.com\\x2Fgpu": 1'), "legacy-device-request"),
    "unicode.yaml": (POD.format(name="uni", limits='        "\\u006evidia.com/gpu": 1'), "legacy-device-request"),
    "slash.yaml": (POD.format(name="slash", limits='        "amd.com\\/gpu": 2'), "legacy-device-request"),
    "joined.yaml": (POD.format(name="joined", limits='        ? "nvidia\\\n          .com/gpu"\n        : 1'), None),
    "crlf.yaml": (
        POD.format(name="crlf", limits='        ? "nvidia\\\n          .com/gpu"\n        : 1').replace("\n", "\r\n"),
        None,
    ),
    "pod.json": (
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "json"},
                "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            }
        ).replace("/gpu", "\\/gpu"),
        "legacy-device-request",
    ),
    "embedded.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: launcher\ndata:\n  pod.json: |\n"
        '    {"kind": "Pod", "spec": {"containers": [{"name": "a", "resources": '
        '{"limits": {"nvidia.com\\u002fgpu": 1}}}]}}\n',
        "embedded-device-request",
    ),
}


def _findings(folder: Path) -> list[dict[str, Any]]:
    """The findings of lint's JSON report."""
    proc = subprocess.run(
        [sys.executable, "-m", "dramigrate", "lint", str(folder), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["findings"]


def _lint(folder: Path) -> dict[str, set[str]]:
    """The rules lint reports, by file name."""
    out: dict[str, set[str]] = {}
    for f in _findings(folder):
        out.setdefault(Path(f["file"]).name, set()).add(f["rule"])
    return out


def _write_cases(folder: Path) -> None:
    for name, (text, _) in CASES.items():
        (folder / name).write_bytes(text.encode())


def _expected(name: str) -> str:
    return CASES[name][1] or "legacy-device-request"


def test_a_device_name_spelled_with_an_escape_is_reported(tmp_path: Path) -> None:
    _write_cases(tmp_path)
    found = _lint(tmp_path)
    assert {name: _expected(name) in found.get(name, set()) for name in CASES} == dict.fromkeys(CASES, True)


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P: the grep pre-filter does not run")
def test_the_grep_prefilter_of_a_large_tree_keeps_them(tmp_path: Path) -> None:
    """Past prefilter.MIN_FILES files grep decides which files Python reads."""
    _write_cases(tmp_path)
    for i in range(prefilter.MIN_FILES):
        (tmp_path / f"s{i}.yaml").write_text(f'apiVersion: v1\nkind: Service\nmetadata:\n  name: "s\\t{i}"\n')
    found = _lint(tmp_path)
    assert {name: _expected(name) in found.get(name, set()) for name in CASES} == dict.fromkeys(CASES, True)
    assert not any(name.startswith("s") and name[1].isdigit() for name in found)  # the others ask for nothing


BASE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: train
spec:
  template:
    spec:
      containers:
      - name: app
        image: busybox
"""


@pytest.mark.parametrize("key", ['"nvidia.com\\x2Fgpu"', '"\\u006evidia.com/gpu"', '"nvidia.com\\/gpu"'])
def test_a_kustomize_patch_with_an_escaped_device_name_is_reported_as_a_patch(tmp_path: Path, key: str) -> None:
    """A strategic-merge patch whose device key is spelled with an escape is what it is, a kustomize patch (fix
    migrates it with its base and proves the build), at its own file:line: the cheap byte test of the kustomize
    scan read the escape literally, found no device name, and the patch fell through to the per-file check as a
    plain manifest (a Deployment with no image, and a fix that would edit the patch alone)."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "deploy.yaml").write_text(BASE_DEPLOYMENT)
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
    (tmp_path / "kustomization.yaml").write_text("resources:\n- base\npatches:\n- path: gpu.yaml\n")
    limits = f"        resources:\n          limits:\n            {key}: 1\n"
    patch = BASE_DEPLOYMENT.replace("        image: busybox\n", limits)
    (tmp_path / "gpu.yaml").write_text(patch)
    found = [(Path(f["file"]).name, f["line"], f["rule"]) for f in _findings(tmp_path)]
    assert found == [("gpu.yaml", patch.splitlines().index(f"            {key}: 1") + 1, "kustomize-device-patch")]
