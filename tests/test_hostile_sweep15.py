"""Hostile inputs of the fifteenth sweep (issue 11's checker): each beside good files, which are still migrated,
while the bad one is named with file:line and left as it was."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


def test_a_control_character_is_named_at_its_line_and_column(tmp_path: Path) -> None:
    """YAML refuses ESC, BEL and other control characters: the message named the first line of the document (or no
    line, for the config) and went on to a second line, `in "<unicode string>", position 147`."""
    pod = ONE_GPU_POD.format(name="esc").replace("gpu: 1", "gpu: 1  # \x1b]0;title\x07")
    (tmp_path / "esc.yaml").write_text("kind: ConfigMap\n---\n" + pod)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / ".dramigrate.yaml").write_text("fail-on: error\nexclude: [\x1bx]\n")

    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2 and ".dramigrate.yaml:2:11: invalid YAML: character U+001B is not allowed in YAML" in err, err
    (tmp_path / ".dramigrate.yaml").unlink()
    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2 and "bad input esc.yaml:13:30: invalid YAML: character U+001B is not allowed in YAML\n" in err
    assert "position" not in err and "unicode string" not in err
    assert (tmp_path / "esc.yaml").read_text() == "kind: ConfigMap\n---\n" + pod
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def _aliases(uses: int, size: int) -> str:
    """A kustomization whose `x-uses` holds `uses` aliases of one map of `size` entries."""
    anchor = "x-defs:\n  d: &d {" + ", ".join(f"k{i}: v" for i in range(size)) + "}\n"
    return "resources:\n- pod.yaml\n" + anchor + "x-uses:\n" + "".join(f"  u{i}: *d\n" for i in range(uses))


def test_lint_names_a_kustomization_alias_bomb_as_fix_does(tmp_path: Path) -> None:
    """kustomize refuses a kustomization whose aliases expand to nearly all it holds (`document contains excessive
    aliasing`): fix left the pod with a warning and exit 0, while lint called it fixable (exit 1) and named no bad
    file. Both now name the kustomization as bad input."""
    (tmp_path / "kk").mkdir()
    (tmp_path / "kk" / "kustomization.yaml").write_text(_aliases(1000, 150))
    (tmp_path / "kk" / "pod.yaml").write_text(ONE_GPU_POD.format(name="kb"))
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    refused = "bad input kk/kustomization.yaml:1: reading the kustomization: invalid kustomization: its aliases expand"

    code, out, _ = run_dramigrate(["lint", "."], cwd=tmp_path)

    assert code == 2 and refused in out and "(fixable) Pod/kb" not in out, out
    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)
    assert code == 2 and refused in err, err
    assert (tmp_path / "kk" / "pod.yaml").read_text() == ONE_GPU_POD.format(name="kb")
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")
@pytest.mark.parametrize(("uses", "size"), [(1000, 105), (1000, 110), (300, 120), (2000, 101)])
def test_a_kustomization_is_refused_for_its_aliases_exactly_when_kustomize_refuses_it(
    tmp_path: Path, uses: int, size: int
) -> None:
    """The share of values decoded through aliases that kustomize's YAML decoder allows, either side of the line."""
    (tmp_path / "kustomization.yaml").write_text(_aliases(uses, size))
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))
    built = subprocess.run(["kubectl", "kustomize", tmp_path], capture_output=True, text=True, timeout=60)

    _, out, _ = run_dramigrate(["lint", "."], cwd=tmp_path)

    assert ("excessive aliasing" in out) == ("excessive aliasing" in built.stderr), (out, built.stderr)
