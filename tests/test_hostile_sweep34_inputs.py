"""Session 34's red team on the inputs other than manifests and charts (issue 11): device inventories for `fit`, rule
packs and workload-kind files given with `--rules`, and suppression comments. Each attack beside good input: no
traceback, a message naming the file, a non-zero exit for bad input, and no gate turned green by what a file does not
say."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

REPO = Path(__file__).resolve().parents[1]

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {metadata}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {{name: node-a}}
  devices:
  - name: gpu-0
    attributes:
      type: {{string: gpu}}
"""


@pytest.mark.parametrize("metadata", ["[1]", "x", "7", "true"])
def test_an_inventory_slice_whose_metadata_is_no_mapping_is_named_not_an_internal_error(
    tmp_path: Path, metadata: str
) -> None:
    """A ResourceSlice whose `metadata` is a list, a string or a number ended fit in `internal error:
    AttributeError: 'list' object has no attribute 'get'` (the slice's name was read with `.get` on whatever
    metadata held): the inventory is named as bad input, exit 2."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "slices.yaml").write_text(SLICE.format(metadata=metadata))

    code, out, err = run_dramigrate(["fit", "--inventory", "slices.yaml", "pod.yaml"], cwd=tmp_path)

    assert code == 2, (out, err)
    assert "internal error" not in err
    assert "slices.yaml" in err and "metadata" in err, err


def test_a_finding_rules_file_given_as_rules_is_refused_by_name(tmp_path: Path) -> None:
    """`--rules` given a `kind: FindingRules` file (the catalogue's kind, which `rules validate` accepts) ended
    every command in `internal error: KeyError: 'kinds'`: it was loaded as a workloads file. It is refused by name
    before any work, exit 2, from the command line and from a repository's config alike."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "catalogue.yaml").write_bytes((REPO / "rules" / "findings.yaml").read_bytes())

    for args in (["lint", "--rules", "catalogue.yaml", "pod.yaml"], ["rules", "list", "--rules", "catalogue.yaml"]):
        code, out, err = run_dramigrate(args, cwd=tmp_path)
        assert code == 2, (args, out, err)
        assert "internal error" not in err
        assert "catalogue.yaml" in err and "FindingRules" in err, err
