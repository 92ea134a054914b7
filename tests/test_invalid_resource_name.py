"""A resource name Kubernetes rejects is said, never passed in silence nor guessed at.

A domain-prefixed resource name is a qualified name whose prefix is a lowercase DNS subdomain (apimachinery's
IsQualifiedName: `a.b/C` is valid, `A.b/C` is not), so the API server refuses a pod asking for `NVIDIA.com/gpu`.
Before, the byte pre-check read only lowercase keys: lint said nothing, exited 0, and fix left the key as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

from dramigrate import prefilter

WRONG = ONE_GPU_POD.format(name="upper").replace("nvidia.com/gpu", "NVIDIA.com/gpu")
LINE = WRONG.splitlines().index("        NVIDIA.com/gpu: 1") + 1


def _findings(out: str) -> list[tuple[str, int, str, str]]:
    return [(Path(f["file"]).name, f["line"], f["rule"], f["message"]) for f in json.loads(out)["findings"]]


@pytest.mark.parametrize("filler", [0, prefilter.MIN_FILES], ids=["python-triage", "grep-prefilter"])
def test_lint_names_an_invalid_resource_name_and_what_it_meant(tmp_path: Path, filler: int) -> None:
    (tmp_path / "upper.yaml").write_text(WRONG)
    for i in range(filler):  # past MIN_FILES files, grep decides which files Python reads
        (tmp_path / f"s{i}.yaml").write_text(f"apiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}\n")
    code, out, err = run_dramigrate(["lint", tmp_path, "--format", "json"])
    assert "Traceback" not in err
    found = _findings(out)
    assert [f[:3] for f in found] == [("upper.yaml", LINE, "invalid-resource-name")], found
    assert "NVIDIA.com/gpu" in found[0][3] and "nvidia.com/gpu" in found[0][3]
    assert code == 1


def test_fix_refuses_to_guess_and_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "upper.yaml"
    path.write_text(WRONG)
    code, _out, err = run_dramigrate(["fix", path])
    assert path.read_text() == WRONG
    assert code == 1 and f"upper.yaml:{LINE}:" in err and "invalid-resource-name" in err, err

    code, out, err = run_dramigrate(["fix", "-"], stdin=WRONG)
    assert out == WRONG and code == 1 and "invalid-resource-name" in err, err
