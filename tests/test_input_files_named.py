"""A rules file, a CRD file, a config file or an inventory that is not YAML is named at file:line:column in the
project's words, as a manifest is: rules and CRD files printed PyYAML's whole message, its `in "<unicode
string>", line 4, column 6` on a line of its own, and for a control character a position in bytes (libyaml's),
which every reader then took for characters: after `é` the column was off by one a letter."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli

BROKEN = [  # (text, line:column, what is said)
    ("schemaVersion: 1\nkind: RulePack\nname: x\n  bad: [\n", "4:6", "mapping values are not allowed in this context"),
    ("kind: List\nitems: [1,\n", "3:1", "while parsing a flow node: did not find expected node content"),
    ('kind: "ééé\x1b"\n', "1:11", "character U+001B is not allowed in YAML"),
]


def _said(out: str) -> str:
    assert "<unicode string>" not in out and "position" not in out, out
    return out


@pytest.mark.parametrize(("text", "where", "what"), BROKEN)
@pytest.mark.parametrize("use", ["--rules", "rules validate", "--crds", "--inventory", "config"])
def test_a_file_that_is_not_yaml_is_named_at_line_and_column(
    tmp_path: Path, run_cli: RunCli, use: str, text: str, where: str, what: str
) -> None:
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))
    bad = tmp_path / ("bad.yaml" if use != "config" else ".dramigrate.yaml")
    bad.write_text(text)
    args = {
        "--rules": ["lint", "pod.yaml", "--rules", bad.name],
        "rules validate": ["rules", "validate", bad.name],
        "--crds": ["lint", "pod.yaml", "--crds", bad.name],
        "--inventory": ["fit", "pod.yaml", "--inventory", bad.name],
        "config": ["lint", "pod.yaml"],
    }[use]
    code, out, err = run_cli(args, cwd=tmp_path, timeout=60)
    assert code == 2, out + err
    said = _said(out + err)
    said_what = f"invalid YAML: {what}\n" if use != "config" else "invalid YAML: "  # config: PyYAML's Python words
    assert f"{bad.name}:{where}: " in said and said_what in said, said
    assert "Traceback" not in said


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"version": 1,\n "findings": [1,\n', "base.json:3:1: the baseline is not JSON: Expecting value\n"),
        (b'\xff\xfe{"version": 1}', "base.json: the baseline is not UTF-8 text (byte 1)\n"),
    ],
)
def test_a_baseline_that_is_not_json_is_named_at_line_and_column(
    tmp_path: Path, run_cli: RunCli, data: bytes, said: str
) -> None:
    """The baseline (a file of the repository) said Python's own words: `Expecting value: line 3 column 1 (char
    32)`, or `'utf-8' codec can't decode byte 0xff in position 0`."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))
    (tmp_path / "base.json").write_bytes(data)
    code, out, err = run_cli(["lint", "pod.yaml", "--baseline", "base.json"], cwd=tmp_path, timeout=60)
    assert code == 2 and said.rstrip("\n") in out + err, out + err  # read before any work: in the report too
