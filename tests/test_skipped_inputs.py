"""Every file a run skips without reading it (a symlink out of the tree, a dangling link, a FIFO, a device, a socket)
is bad input named in every report format, as a file over the size limit is: a CI gate reading the JSON or SARIF
saw nothing of them (only a note on standard error), and a device request behind such a link passed the gate."""

from __future__ import annotations

import json
import os
import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli

SECRET = "hunter2-outside-the-tree"
SKIPPED = {
    "out.yaml": "a symlink that leaves",
    "zero.yaml": "a symlink that leaves",
    "gone.yaml": "a symlink that cannot be followed",
    "pipe.yaml": "a FIFO (named pipe), not a regular file",
    "sock.yaml": "a socket, not a regular file",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder of two good files beside every kind of file the walk does not read; the link out of the tree points
    to a file holding a device request and a secret."""
    outside = tmp_path / "outside.yaml"
    outside.write_text(ONE_GPU_POD.format(name="outside") + f"# token: {SECRET}\n")
    top = tmp_path / "repo"
    top.mkdir()
    for name in ("good", "also-good"):
        (top / f"{name}.yaml").write_text(ONE_GPU_POD.format(name=name))
    (top / "out.yaml").symlink_to(outside)
    (top / "zero.yaml").symlink_to("/dev/zero")
    (top / "gone.yaml").symlink_to("nowhere.yaml")
    os.mkfifo(top / "pipe.yaml")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(top / "sock.yaml"))
    return top


def _named(fmt: str, out: str) -> dict[str, str]:
    """file name -> message of each bad input the report in this format names."""
    if fmt == "json":
        return {Path(e["file"]).name: e["message"] for e in json.loads(out)["errors"]}
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        return {
            Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name: r["message"]["text"]
            for r in results
            if r["ruleId"] == "bad-input"
        }
    if fmt == "github":
        found = re.findall(r"^::error file=([^,]*),line=1,title=dramigrate bad-input::(.*)$", out, re.M)
        return {Path(f).name: m for f, m in found}
    if fmt == "junit":
        cases = ET.fromstring(out).iter("testcase")
        return {Path(c.get("name", "")).name: e.get("message", "") for c in cases for e in c.iter("error")}
    rows = re.findall(r"^\| error \| `bad-input` \| ([^|]*) \|  \| (.*) \|$", out, re.M)  # markdown
    return {Path(w.strip()).name: m for w, m in rows}


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "junit", "markdown"])
def test_every_skipped_file_is_bad_input_in_every_format(repo: Path, run_cli: RunCli, fmt: str) -> None:
    code, out, err = run_cli(["lint", repo, "--format", fmt], timeout=60)
    assert code == 2, err
    named = _named(fmt, out)
    for name, why in SKIPPED.items():
        assert why in named.get(name, ""), (name, named)
    assert SECRET not in out + err
    assert "Traceback" not in err and "internal error" not in err


def test_fix_migrates_the_good_files_and_lists_the_skipped_ones_as_failed(repo: Path, run_cli: RunCli) -> None:
    outside = (repo.parent / "outside.yaml").read_text()
    code, out, err = run_cli(["fix", repo, "--format", "json"], timeout=60)
    assert code == 2, err
    for name in ("good", "also-good"):
        assert "resourceClaims" in (repo / f"{name}.yaml").read_text()
    assert (repo.parent / "outside.yaml").read_text() == outside
    assert (repo / "out.yaml").is_symlink()
    failed = {Path(f["file"]).name for f in json.loads(out)["files"]["failed"]}
    assert failed == set(SKIPPED)
    assert SECRET not in out + err


def test_a_fifo_named_on_the_command_line_is_bad_input_too(repo: Path, run_cli: RunCli) -> None:
    code, out, err = run_cli(["lint", repo / "pipe.yaml", repo / "good.yaml", "--format", "json"], timeout=60)
    assert code == 2, err
    report = json.loads(out)
    assert [Path(e["file"]).name for e in report["errors"]] == ["pipe.yaml"]
    assert [f["name"] for f in report["findings"] if f["rule"] == "legacy-device-request"] == ["good"]


def test_a_kustomization_listing_a_fifo_or_a_device_names_what_it_is(tmp_path: Path, run_cli: RunCli) -> None:
    """`resources: [pipe.yaml]` or `[/dev/zero]` said `no such file or kustomization folder` of files that exist:
    the entry is named for what it is, never read (kustomize would block on the FIFO or read the device for ever)."""
    for name, listed in (("a", "pipe.yaml"), ("b", "/dev/zero")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pod.yaml").write_text(ONE_GPU_POD.format(name=name))
        (tmp_path / name / "kustomization.yaml").write_text(f"resources:\n- pod.yaml\n- {listed}\n")
    os.mkfifo(tmp_path / "a" / "pipe.yaml")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    code, _, err = run_cli(["fix", ".", "--format", "json=report.json"], cwd=tmp_path, timeout=60)
    assert code == 2, err
    said = {e["file"]: e["message"] for e in json.loads((tmp_path / "report.json").read_text())["errors"]}
    assert said["a/kustomization.yaml"].endswith("entry pipe.yaml: a FIFO (named pipe), not a regular file; never read")
    assert said["b/kustomization.yaml"].endswith("entry /dev/zero: a character device, not a regular file; never read")
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_fit_json_lists_the_files_it_did_not_check(repo: Path, run_cli: RunCli) -> None:
    """fit --format json had claims only: a file it skipped or could not read was said on standard error alone."""
    inventory = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "a100-80gb.yaml"
    code, out, err = run_cli(["fit", repo, "--inventory", inventory, "--format", "json"], timeout=60)
    assert code == 2, err
    report = json.loads(out)
    assert {Path(e["file"]).name: e["message"] for e in report["errors"]}.keys() == SKIPPED.keys()
    assert {Path(c["file"]).name for c in report["claims"]} == {"good.yaml", "also-good.yaml"}
    assert SECRET not in out + err
