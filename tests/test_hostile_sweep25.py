"""Hostile inputs of the twenty-fifth sweep (issue 11's checker, run from outside the repo): each beside a good
file; the bad one is named and left as it was, and the good one is still migrated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, TOYAML_SERVER, dramigrate_executable, run_dramigrate

# The device request is in the first `spec:`; a second `spec:` below it has none.
_HIDDEN_BY_A_SECOND_KEY = ONE_GPU_POD.format(name="bad") + "spec:\n  containers: []\n"


@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_manifest_whose_device_request_sits_under_a_repeated_key_is_named(tmp_path: Path, command: str) -> None:
    """A manifest writing `spec:` twice, the device request under the first, passed lint with exit 0 and nothing
    said: the quick check that picks the files worth a full read kept the last `spec:` (as PyYAML does), saw no
    device there and never read the file again, while the same repeat of `metadata:` was refused as invalid YAML.
    Now the repeat is bad input at its line whichever of the two holds the device, and the good file still moves."""
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text(_HIDDEN_BY_A_SECOND_KEY)
    good.write_text(ONE_GPU_POD.format(name="good"))

    code, out, _ = run_dramigrate([command, ".", "--format", "json"], cwd=tmp_path)

    report = json.loads(out)
    assert code == 2
    assert [(e["file"], e["line"]) for e in report["errors"]] == [("bad.yaml", 12)]
    assert "duplicate key: spec" in report["errors"][0]["message"]
    assert bad.read_text() == _HIDDEN_BY_A_SECOND_KEY
    assert ("resourceClaims" in good.read_text()) is (command == "fix")


def _run_without_root_overrides(args: list[str], cwd: Path) -> tuple[int, str]:
    """dramigrate as the user it runs as, but without root's power to read any file (CI runs it as a plain user)."""
    caps = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    proc = subprocess.run([*caps, dramigrate_executable(), *args], cwd=cwd, capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or (os.geteuid() == 0 and shutil.which("setpriv") is None),
    reason="needs a plain user, or setpriv to drop root's file-reading overrides",
)
@pytest.mark.parametrize("unreadable", ["templates/deployment.yaml", "templates/gpu"])
def test_a_chart_file_or_folder_nobody_may_read_is_named_and_the_chart_left_alone(
    tmp_path: Path, unreadable: str
) -> None:
    """A chart folder this user may not read was skipped without a word when the chart was copied for rendering
    (os.fwalk drops what it cannot list): fix said the rewrite was proven and rewrote the chart while the GPU
    Deployment in that folder kept its device-plugin request, a chart Helm itself cannot load. A file it may not
    read stopped the chart with `Permission denied` and no file named. Now either is the chart's bad input naming
    the path in the chart, nothing of the chart is written, and the good manifest beside it is still migrated."""
    chart = tmp_path / "chart"
    (chart / "templates/gpu").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    (chart / "templates/deployment.yaml").write_text(TOYAML_SERVER.replace("server", "one"))
    (chart / "templates/gpu/deployment.yaml").write_text(TOYAML_SERVER.replace("server", "two"))
    good = tmp_path / "good.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))
    before = _files(chart)
    os.chown(chart / unreadable, 65534, 65534)
    os.chmod(chart / unreadable, 0)
    try:
        code, out = _run_without_root_overrides(["fix", ".", "--format", "json"], tmp_path)
    finally:
        os.chmod(chart / unreadable, 0o755)

    report = json.loads(out)
    assert code == 2
    assert [e["file"] for e in report["errors"]] == ["chart"]
    assert unreadable in report["errors"][0]["message"]
    assert "Permission denied" in report["errors"][0]["message"]
    assert _files(chart) == before
    assert "resourceClaims" in good.read_text()
