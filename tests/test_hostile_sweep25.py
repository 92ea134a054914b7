"""Hostile inputs of the twenty-fifth sweep (issue 11's checker, run from outside the repo): each beside a good
file; the bad one is named and left as it was, and the good one is still migrated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

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
