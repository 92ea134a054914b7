"""Session 34's red team on Helm charts (issue 11 item 3, the Helm sandbox): each hostile chart beside good charts and
manifests, run through lint, diff and fix in every report format as the issue's checker runs them. The good ones are
still migrated, the bad one named and left as it was, and nothing from outside the chart reaches any output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import GPU_POD_TEMPLATE, ONE_GPU_POD, chart_with, run_dramigrate

TOKEN = "Z2hzX3MzY3IzdHRva2Vu"  # stands in for the CI checkout token actions/checkout keeps in .git/config
FORMATS = ["text", "json", "github", "sarif"]


def _git_with_token(folder: Path) -> None:
    """folder as a git checkout whose .git/config holds a token, as actions/checkout leaves it."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(
        ["git", "-C", str(folder), "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}"],
        check=True,
    )


# a pod named after the token and a count that quotes it: each reaches a finding's message when rendered
READS_GIT_CONFIG = ONE_GPU_POD.format(
    name='{{ regexFind "basic [A-Za-z0-9=]+" (.Files.Get ".git/config") | replace " " "-" | lower }}'
) + (
    "  - name: quoted\n    image: app:1\n    resources:\n      limits:\n"
    '        nvidia.com/gpu: {{ regexFind "basic [A-Za-z0-9=]+" (.Files.Get ".git/config") | quote }}\n'
)


@pytest.mark.parametrize("form", FORMATS)
def test_a_chart_at_the_root_of_a_checkout_never_shows_its_git_config(tmp_path: Path, form: str) -> None:
    """A repository whose root is a chart (Chart.yaml at the top, no .helmignore) had its .git folder loaded into
    the chart's files, as Helm loads every file of a chart folder: a template naming a pod or writing a device count
    from `.Files.Get ".git/config"` put the checkout token into lint's findings (`Pod/basic-z2hz...`, `nvidia.com/gpu:
    "basic Z2hz..." is not an integer device count`), in the GitHub annotations of a public CI log. dramigrate
    never reads a .git folder as input; Helm no longer sees one either."""
    chart = chart_with(tmp_path, "repo", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": READS_GIT_CONFIG})
    _git_with_token(chart)

    code, out, err = run_dramigrate(["lint", ".", "--format", form], cwd=chart)

    assert TOKEN.lower() not in (out + err).lower()
    assert "Traceback" not in err
    assert "legacy-device-request" in out + err  # the chart is still checked


def test_a_vendored_chart_holding_a_clones_git_folder_never_shows_it(tmp_path: Path) -> None:
    """The same through a chart cloned into the tree (a clone's .git/config keeps the token of a URL it was cloned
    with), beside a good chart and a good manifest, which fix still migrates."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    chart_with(tree, "goodchart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    bad = chart_with(tree, "vendored", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": READS_GIT_CONFIG})
    _git_with_token(bad)

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, ".", "--format", "json"], cwd=tree)
        assert TOKEN.lower() not in (out + err).lower(), command
        assert "Traceback" not in err
        json.loads(out)
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    assert "dra" in (tree / "goodchart" / "values.yaml").read_text()
