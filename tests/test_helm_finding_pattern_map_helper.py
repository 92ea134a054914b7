"""A container whose resources are a named helper's whole `toYaml` of a values resources map
(`include "app.resources" .`, the helper `toYaml .Values.resources`): fix takes it as the pass-through of that map
(pattern B: `resourceClaims` beside `resources` in values, a DRA values file), but lint's finding named it pattern D
(a named helper), the shape fix leaves to the helper rewrite. The finding names what fix does. Real renders."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with
from test_helm_helper import DEPLOYMENT

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPER = '{{- define "app.resources" -}}\n{{- toYaml .Values.resources }}\n{{- end }}\n'
FILES = {
    "values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n",
    "templates/_helpers.tpl": HELPER,
    "templates/app.yaml": DEPLOYMENT,  # its container's resources: `include "app.resources" .`
}


def _named(command: str, chart: Path) -> str:
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), command)
    (finding,) = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    if command == "fix":
        assert outcome.proven, outcome.report()
        write_changes(outcome)
    return finding.message


def test_a_map_helper_request_is_named_the_pattern_fix_takes_it_for(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", FILES)
    linted = _named("lint", chart)
    fixed = _named("fix", chart)
    assert "[chart pattern B (toYaml of a values resources map)]" in linted, linted
    assert "[chart pattern B" in fixed, fixed
    # what fix did is the pass-through of pattern B: the claims beside the map in values, the helper as it was
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert "resourceClaims" in values, values
    assert (chart / "templates/_helpers.tpl").read_text() == HELPER
