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


def test_fit_lists_every_node_of_a_fleet_of_thousands(tmp_path: Path) -> None:
    """fit on an inventory of thousands of ResourceSlices names every node the pod fits on. Its speed (20,000
    nodes took 205 s, 22 s since it no longer searches the whole inventory per node) is measured by
    benchmarks/bench_fit.py, not here."""
    nodes = 2000
    slices = "".join(
        f"- {{apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {{name: s{i}}}, spec: {{driver: "
        f"gpu.nvidia.com, nodeName: node{i}, pool: {{name: p{i}, generation: 1, resourceSliceCount: 1}}, devices: "
        f"[{{name: gpu-0, attributes: {{type: {{string: gpu}}}}}}]}}}}\n"
        for i in range(nodes)
    )
    (tmp_path / "inventory.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + slices)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))

    code, out, err = run_dramigrate(["fit", "pod.yaml", "--inventory", "inventory.yaml"], cwd=tmp_path)

    assert code == 0, err
    assert f"fits on {nodes} node(s): node0, node1, node10, " in out


def test_a_json_manifest_keeps_its_byte_order_mark_and_line_ends(tmp_path: Path) -> None:
    """A JSON manifest was written back with LF line ends whatever it had (a CRLF file: every line changed) and
    without its byte order mark (UTF-16 JSON: then written with none, in an encoding nothing could tell)."""
    import json

    import yaml

    pod = json.dumps(yaml.safe_load(ONE_GPU_POD.format(name="p")), indent=2) + "\n"
    originals = {
        "crlf.json": pod.replace("\n", "\r\n").encode(),
        "bom.json": ("\ufeff" + pod).encode(),
        "utf16.json": ("\ufeff" + pod.replace("\n", "\r\n")).encode("utf-16-le"),
    }
    for name, data in originals.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 0, err
    for name, data in originals.items():
        written = (tmp_path / name).read_bytes()
        encoding = "utf-16" if name == "utf16.json" else "utf-8"
        text = written.decode(encoding)
        assert text.startswith("\ufeff") == data.decode(encoding).startswith("\ufeff"), name
        crlf = b"\r" in data
        assert ("\r" in text) == crlf and ("\n" in text.replace("\r\n", "")) != crlf, name  # every line ends so
        pod_written = json.loads(text.removeprefix("\ufeff"))["items"][0]
        assert pod_written["spec"]["resourceClaims"][0]["resourceClaimTemplateName"].startswith("p-"), name
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert run_dramigrate(["diff", "--check", "."], cwd=tmp_path)[0] == 0


@pytest.mark.parametrize(
    ("inventory", "where", "what"),
    [
        ("items:\n  - {a: [}\n", "2:10", "invalid YAML: while parsing a flow node: did not find expected node content"),
        ('items:\n  - {a: "\x1b"}\n', "2:10", "invalid YAML: character U+001B is not allowed in YAML"),
    ],
)
def test_an_inventory_that_is_not_yaml_is_named_at_its_line(
    tmp_path: Path, inventory: str, where: str, what: str
) -> None:
    """fit's inventory reader quoted PyYAML's own message: `in "<unicode string>", line 2, column 10`, and for a
    control character a position in characters, where every other input is named as file:line:column."""
    (tmp_path / "inventory.yaml").write_text(inventory)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))

    code, _, err = run_dramigrate(["fit", "pod.yaml", "--inventory", "inventory.yaml"], cwd=tmp_path)

    assert code == 2, err
    assert f"inventory.yaml:{where}: {what}" in err
    assert "<unicode string>" not in err
