"""Hostile content in a folder of good files, from the sixth sweep (inputs not in the repo): each one is migrated
exactly or named, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_dramigrate


def test_a_json_manifest_holding_a_lone_surrogate_escape_is_migrated_and_keeps_it(tmp_path: Path) -> None:
    """A JSON manifest with "\\ud800" in an annotation (valid JSON, no UTF-8 form) was an internal error when fix
    wrote it back; the escape stays as it was written."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"a": "\ud800"}},
        "spec": {"containers": [{"name": "a", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod))

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert "internal error" not in err
    assert code == 0
    written = json.loads(path.read_text())
    migrated = written["items"][0]
    assert migrated["metadata"]["annotations"] == {"a": "\ud800"}
    assert "\\ud800" in path.read_text()
    assert migrated["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
