"""docs/helm.md shows what the tool prints: the before/after diffs of patterns A and B, the `--opt-in` values
line, the helm-unittest suite excerpt and the zero-diff `--strategy extended-resource` run are produced here
with the installed `dramigrate` on the same charts and compared with the documented blocks.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import RunCli
from test_helm_idiomatic import write_chart

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "helm.md").read_text()


def block(heading: str, fence: str = "diff", nth: int = 0) -> str:
    """The nth fenced block of kind `fence` after the heading."""
    section = DOC[DOC.index(heading) :]
    found = re.findall(rf"```{fence}\n(.*?)```\n", section, re.S)
    return found[nth]


@pytest.fixture(scope="module")
def pattern_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    write_chart(root)
    return root


def test_pattern_a_diff_is_the_tool_output(run_cli: RunCli, pattern_a: Path) -> None:
    code, out, err = run_cli(["diff", "app"], cwd=pattern_a)
    assert code == 0, err
    assert out == block("### Pattern A: before and after")
    code, opt_in, err = run_cli(["diff", "--opt-in", "app"], cwd=pattern_a)
    changed = [(a, b) for a, b in zip(out.splitlines(), opt_in.splitlines(), strict=True) if a != b]
    assert changed == [("+  enabled: true", "+  enabled: false")]
    assert "  enabled: false\n" in block("### The switch and `--opt-in`", "yaml")


def test_pattern_b_diff_is_the_tool_output(run_cli: RunCli, tmp_path: Path) -> None:
    shutil.copytree(REPO / "fixtures" / "charts" / "toyaml-resources" / "chart", tmp_path / "web")
    code, out, err = run_cli(["diff", "web"], cwd=tmp_path)
    assert code == 0, err
    assert out == block("### Patterns B and C: the pass-through, before and after")


def test_unittest_excerpt_and_extended_resource_run(run_cli: RunCli, pattern_a: Path, tmp_path: Path) -> None:
    chart = shutil.copytree(pattern_a / "app", tmp_path / "app")
    (chart / "tests").mkdir()
    code, out, err = run_cli(["fix", "app"], cwd=tmp_path)
    assert code == 0, err
    excerpt = block("**Chart conventions.**", "yaml").split("  # ...")[0]
    assert (chart / "tests" / "deployment-dra_test.yaml").read_text().split("\n", 1)[1].startswith(excerpt)
    code, out, err = run_cli(["diff", "--strategy", "extended-resource", "app"], cwd=pattern_a)
    assert code == 0 and out == "", err
    documented = block("### The zero-diff alternative", "").split("\n", 1)[1]
    assert err == documented
