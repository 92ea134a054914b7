"""Hostile inputs of the fifteenth sweep (issue 11's checker): each beside good files, which are still migrated,
while the bad one is named with file:line and left as it was."""

from __future__ import annotations

from pathlib import Path

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
