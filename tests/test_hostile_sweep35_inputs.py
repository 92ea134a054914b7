"""Session 35's red team on the inputs other than manifests and charts (issue 11): device inventories and classes files
for `fit` and `fix`, rule packs given with `--rules`, suppression comments and baselines. Each break as its smallest
input, in process where the process boundary is not what is tested."""

from __future__ import annotations

from pathlib import Path

import pytest

from dramigrate.inventory import load_inventory

SLICES = """\
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: s}
  spec:
    driver: gpu.nvidia.com
    nodeName: node-a
    pool: {name: node-a}
    devices:
    - name: gpu-0
      attributes:
        type: {string: gpu}
    - name: gpu-1
      attributes:
        type: {bool: yes-please}
"""


def test_an_inventory_message_gives_the_line_of_the_value_at_fault(tmp_path: Path) -> None:
    """A bad attribute in a fleet's inventory (megabytes of ResourceSlices) was named by document, item and device
    (`slices.yaml: document 1, items[0] (ResourceSlice s): device gpu-1: ...`) but not by line: now file:line, the
    line of the attribute, as every other bad input."""
    path = tmp_path / "slices.yaml"
    path.write_text(SLICES)
    line = SLICES.splitlines().index("        type: {bool: yes-please}") + 1

    with pytest.raises(ValueError) as caught:
        load_inventory(path)

    assert str(caught.value).startswith(f"{path}:{line}: "), caught.value
    assert "device gpu-1" in str(caught.value)
