"""lint's "(fixable)" on a chart it does not try to rewrite (lintverdict.py) matches what fix then does: a request
rendered from a packaged subchart of a chart repository is manual work with the reason fix gives (was: "(fixable)",
then fix refused the chart), a request of a pattern whose rewrite only a try decides (D, E, F) is not promised and
names `dramigrate diff`, and a literal device key (A), a values map passed through (B) or a key named by one values
key (E) stays fixable. Synthetic charts, real Helm renders."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, chart_with, dramigrate_in_process
from test_helm_manual_not_fixable import LITERAL, NAMED_BY_DEFINE  # a literal key (A); one a define names (E)

# the container's resources whole from a helper that writes the device key itself (pattern D)
HELPER_WRITTEN = LITERAL.replace(
    "resources:\n            limits:\n              nvidia.com/gpu: {{ .Values.gpus }}",
    'resources:\n            {{- include "app.resources" . | nindent 12 }}',
)
KEY_HELPER = '{{- define "app.gpuKey" -}}\nnvidia.com/gpu\n{{- end -}}\n'
HELPERS = '{{- define "app.resources" -}}\nlimits:\n  nvidia.com/gpu: {{ .Values.gpus }}\n{{- end -}}\n'
VALUES_NAMED = "gpus: 1\ngpuResource: nvidia.com/gpu\n"
REPOSITORY = "https://charts.example.com"


def _lint(chart: Path) -> str:
    code, out, err = dramigrate_in_process(["lint", chart])
    assert code == 1 and "legacy-device-request" in out, out + err
    return out


def _umbrella(tmp_path: Path) -> Path:
    """A chart whose only device request is in a subchart packed from a chart repository (milvus' tei)."""
    store = chart_with(tmp_path / "src", "store", {"templates/deploy.yaml": TOYAML_SERVER, "values.yaml": "{}\n"})
    chart = chart_with(tmp_path, "app", {"values.yaml": "store:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"})
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n"
        f"- name: store\n  version: 0.1.0\n  repository: {REPOSITORY}\n"
    )
    (chart / "charts").mkdir()
    with tarfile.open(chart / "charts" / "store-0.1.0.tgz", "w:gz") as tar:
        tar.add(store, arcname="store")
    return chart


def test_a_request_from_a_repository_subchart_is_manual_in_lint_as_in_fix(tmp_path: Path) -> None:
    chart = _umbrella(tmp_path)
    linted = _lint(chart)
    assert "(fixable)" not in linted and "fixable with" not in linted, linted
    reason = f"comes from the packaged subchart store, charts/store-0.1.0.tgz, a dependency from {REPOSITORY}"
    assert f"fix leaves this chart as it is: app/charts/store/templates/deploy.yaml {reason}" in linted, linted

    code, out, err = dramigrate_in_process(["fix", chart])
    assert code == 1 and "needs manual work" in err and reason in err, err
    assert not (chart / "charts" / "store").exists() and not (chart / "values-dra.yaml").exists()


@pytest.mark.parametrize(
    ("pattern", "files", "tried"),
    [
        ("D", {"templates/_helpers.tpl": HELPERS, "templates/deploy.yaml": HELPER_WRITTEN}, "rewrite proven"),
        ("E", {"templates/_helpers.tpl": KEY_HELPER, "templates/deploy.yaml": NAMED_BY_DEFINE}, "needs manual work"),
    ],
)
def test_a_pattern_only_a_try_decides_is_not_promised(
    tmp_path: Path, pattern: str, files: dict[str, str], tried: str
) -> None:
    """The same words whichever way the try goes: the helper rewrite proves the first chart and refuses the second
    (a device key named by a define), which lint called fixable."""
    chart = chart_with(tmp_path, "app", {**files, "values.yaml": "gpus: 1\n"})
    linted = _lint(chart)
    assert f"[chart pattern {pattern} " in linted, linted
    assert "(fixable)" not in linted and "fixable with" not in linted, linted
    assert f"fix tries the rewrite of pattern {pattern} and may leave this chart to you: `dramigrate diff`" in linted

    code, _, err = dramigrate_in_process(["diff", chart])
    assert tried in err, err
    assert "dra:" not in (chart / "values.yaml").read_text()


def test_literal_keys_maps_passed_through_and_names_from_values_stay_fixable(tmp_path: Path) -> None:
    named = LITERAL.replace("nvidia.com/gpu:", "{{ .Values.gpuResource }}:")  # pattern E at one values key
    charts = [
        chart_with(tmp_path, "named", {"templates/deploy.yaml": named, "values.yaml": VALUES_NAMED}),
        chart_with(tmp_path, "literal", {"templates/deploy.yaml": LITERAL, "values.yaml": "gpus: 1\n"}),
        chart_with(
            tmp_path,
            "passed",
            {"templates/deploy.yaml": TOYAML_SERVER, "values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n"},
        ),
    ]
    for chart in charts:
        linted = _lint(chart)
        assert "(fixable)" in linted and "1 fixable with `dramigrate fix`" in linted, linted
        code, _, err = dramigrate_in_process(["fix", chart])
        assert code == 0 and "needs manual work" not in err, err
