"""Baselines: a baseline survives unrelated edits (matched by object, container, resource and rule, not line),
catches a new GPU request, and reports entries fixed since as stale."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import dramigrate_executable

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  template:
    spec:
      containers:
      - name: server
        image: server
        resources:
          limits:
            nvidia.com/gpu: 1
      - name: sidecar
        image: sidecar
"""


def run(args: list[Any], cwd: Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [dramigrate_executable(), *map(str, args)],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def test_baseline_survives_unrelated_edits_and_catches_new_requests(tmp_path: Path) -> None:
    manifest = tmp_path / "k8s" / "web.yaml"
    manifest.parent.mkdir()
    manifest.write_text(DEPLOY)
    code, _, err = run(["lint", "k8s", "--write-baseline", ".dramigrate/baseline.json"], tmp_path)
    assert code == 1, err  # writing the baseline does not hide today's findings
    entries = json.loads((tmp_path / ".dramigrate" / "baseline.json").read_text())["findings"]
    assert [(e["file"], e["name"], e["container"], e["rule"]) for e in entries] == [
        ("k8s/web.yaml", "web", "server", "legacy-device-request")
    ]
    assert "line" not in entries[0]

    # an unrelated edit moves every line: still green
    manifest.write_text("# owned by team ml\n# see the runbook\n" + DEPLOY.replace("image: server", "image: server:2"))
    code, out, err = run(["lint", "k8s", "--baseline", ".dramigrate/baseline.json"], tmp_path)
    assert code == 0, out + err
    assert "legacy-device-request" not in out and "1 finding(s) in the baseline" in err

    # a new GPU request in another container is new: red, and only it is reported
    manifest.write_text(
        DEPLOY.replace(
            "image: sidecar", "image: sidecar\n        resources:\n          limits:\n            amd.com/gpu: 1"
        )
    )
    code, out, _ = run(["lint", "k8s", "--baseline", ".dramigrate/baseline.json", "--format", "json"], tmp_path)
    findings = json.loads(out)["findings"]
    assert code == 1 and [(f["container"], f["resource"]) for f in findings] == [("sidecar", "amd.com/gpu")]

    # the baselined request fixed by hand: its entry is stale
    manifest.write_text(DEPLOY.replace("            nvidia.com/gpu: 1\n", "            cpu: 1\n"))
    code, out, err = run(["lint", "k8s", "--baseline", ".dramigrate/baseline.json", "--format", "json"], tmp_path)
    doc = json.loads(out)
    assert code == 0 and "stale" in err and "Deployment/web container server" in err
    assert [e["container"] for e in doc["baseline"]["stale"]] == ["server"]


def test_a_bad_baseline_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(DEPLOY)
    (tmp_path / "b.json").write_text("{not json")
    code, _, err = run(["lint", "web.yaml", "--baseline", "b.json"], tmp_path)
    assert code == 2 and "b.json" in err and "Traceback" not in err


def test_a_baseline_of_a_pull_request_that_is_a_device_or_holds_odd_counts_is_bad_input_at_once(
    tmp_path: Path,
) -> None:
    """The baseline is a file of the repository, so a pull request can change it: linked to /dev/zero, lint read
    it forever; a count that is not a whole number (text, 1e400, a list) was an internal error. Each is bad input
    naming the baseline, at once."""
    (tmp_path / "deploy.yaml").write_text(DEPLOY)
    entry = {"file": "deploy.yaml", "kind": "Deployment", "namespace": "prod", "name": "web"}
    entry |= {"container": "server", "resource": "nvidia.com/gpu", "rule": "legacy-device-request"}
    baselines = {"device": tmp_path / "zero.json"}
    baselines["device"].symlink_to("/dev/zero")
    for name, count in {"text": '"x"', "huge": "1e400", "list": "[1]", "negative": "-1", "boolean": "true"}.items():
        baselines[name] = tmp_path / f"{name}.json"
        found = json.dumps({**entry, "count": 0})
        baselines[name].write_text(f'{{"version": 1, "findings": [{found.replace(": 0}", f": {count}}}")}]}}')
    for name, path in baselines.items():
        proc = subprocess.run(
            [dramigrate_executable(), "lint", "deploy.yaml", "--baseline", path.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 2, (name, proc.stderr)
        assert path.name in proc.stderr and "internal error" not in proc.stderr, (name, proc.stderr)
