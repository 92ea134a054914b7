"""Session 33's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named and left as it was, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


@pytest.mark.parametrize(
    ("written", "tagged"),
    [
        ("nvidia.com/gpu: 1", "nvidia.com/gpu: !!float 1e"),  # a float tag on a count ending in its exponent's letter
        ("nvidia.com/gpu: 1", "nvidia.com/gpu: !!int 0x"),  # a hexadecimal prefix with no digit
        ("  name: bad\n", "  name: bad\n  labels: {!!float role: x}\n"),  # on a key, as a mutation fuzzer placed it
    ],
    ids=["float-count", "int-count", "float-key"],
)
@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_tagged_value_ruamel_cannot_read_is_bad_input_named_at_its_file(
    tmp_path: Path, written: str, tagged: str, command: str
) -> None:
    """`!!float 1e` and `!!int 0x` (a value does not fit its tag: the API server refuses the object) ended the file
    in `internal error: IndexError` asking for a bug report: ruamel's float and int constructors index past the end
    of such a value, and only ValueError, TypeError, KeyError and AttributeError were taken for a value that does
    not fit its tag. The file is named as bad input, as `!!int abc` is, and the good file beside it migrated."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad").replace(written, tagged))
    before = bad.read_bytes()

    code, out, _ = run_dramigrate([command, ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2
    assert [f for f in report["findings"] if f["rule"] == "internal-error"] == []
    [error] = [e for e in report["errors"] if e["file"] == "bad.yaml"]
    assert "does not fit its tag" in error["message"], error
    assert bad.read_bytes() == before
    if command == "fix":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
