"""A stop (SIGTERM, Ctrl-C) while fix writes a chart puts back what the chart had renamed: a chart is written whole
or not at all. When putting back failed too (a folder made read-only meanwhile, a full disk), the stop was lost: it
became the chart's write failure ('not written: ; the files renamed before it could not all be put back'), the run
went on to write the next charts and ended with exit 2, the rewritten file listed under `not written`. The stop now
wins: exit 128 + the signal, the next charts not started, the files that stay rewritten listed as written, and the
chart named as left half written, with what of it stays rewritten and what is as it was."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with

# Runs dramigrate's CLI with os.replace sending the process a signal right after the first rename into a path
# holding argv[2] (argv[1]: SIGTERM or SIGINT); every rename after it fails (EACCES), as in a folder made read-only
# at that moment: putting back what the chart had renamed fails.
STOP_AND_STICK = """\
import os, signal, sys
real, sig, at = os.replace, getattr(signal, sys.argv.pop(1)), sys.argv.pop(1)
def failing(src, dst, *args, **kwargs):
    raise PermissionError(13, "Permission denied", str(dst))
def replace(src, dst, *args, **kwargs):
    real(src, dst, *args, **kwargs)
    if at in str(dst):
        os.replace = failing
        os.kill(os.getpid(), sig)
os.replace = replace
from dramigrate.cli import main
sys.argv[0] = "dramigrate"
main()
"""


def _chart(root: Path, name: str) -> Path:
    """A chart whose GPU count is the values file's `gpus`: fix rewrites its template and its values file."""
    return chart_with(
        root,
        name,
        {
            "values.yaml": "gpus: 1\n",
            "templates/pod.yaml": ONE_GPU_POD.format(name="p").replace(
                "nvidia.com/gpu: 1", "nvidia.com/gpu: {{ .Values.gpus }}"
            ),
        },
    )


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_stop_wins_when_a_chart_cannot_be_put_back(tmp_path: Path, signal_name: str) -> None:
    tree = tmp_path / "tree"
    first, second = _chart(tree, "c1"), _chart(tree, "c2")
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    second_before = {p: p.read_bytes() for p in second.rglob("*") if p.is_file()}
    values_before = (first / "values.yaml").read_bytes()
    (tmp_path / "stop.py").write_text(STOP_AND_STICK)

    process = subprocess.run(
        [sys.executable, tmp_path / "stop.py", signal_name, "c1/templates", "fix", ".", "--format", "json", "-q"],
        cwd=tree,
        capture_output=True,
        timeout=300,
        check=False,
    )

    err = process.stderr.decode()
    assert process.returncode == 128 + getattr(signal, signal_name), err[-800:]
    assert "Traceback" not in err
    report = json.loads(process.stdout)
    # what is on disk, as the report says it
    assert "resourceClaimTemplateName" in (first / "templates" / "pod.yaml").read_text()
    assert (first / "values.yaml").read_bytes() == values_before
    assert {p: p.read_bytes() for p in second.rglob("*") if p.is_file()} == second_before  # never started
    assert {w["file"] for w in report["files"]["written"]} == {"good.yaml", "c1/templates/pod.yaml"}, report["files"]
    left = {w["file"]: w["reason"] for w in report["files"]["notWritten"]}
    assert set(left) == {"c1", "c2"}, left
    shown = "SIGTERM" if signal_name == "SIGTERM" else "Ctrl-C"
    assert f"the run was stopped ({shown})" in left["c1"] and "half written" in left["c1"], left
    assert "c1/templates/pod.yaml" in left["c1"] and "c1/values.yaml" in left["c1"], left
    assert f"the run was stopped ({shown}) before its write began" in left["c2"], left
    assert not report["errors"], report["errors"]  # a stop, not bad input
    assert not [f for f in report["findings"] if f["file"].startswith(("c1/", "c2/")) and f["fixed"]]
    request = [f for f in report["findings"] if f["file"] == "c1/templates/pod.yaml" and f["resource"]]
    assert request and not any(f["fixable"] for f in request), request  # not until its files are restored
    assert all("half written" in f["message"] for f in request), request
    assert "c1 is left half written" in err, err
