"""What a chart maintainer reads in the pull request `fix` makes: no generated-looking noise in the helper
rewrite of pattern D (the shape of frigate's chart: a `resources` helper that merges an NVIDIA limit into the
values map with mergeOverwrite, then writes it with toYaml). Real renders, one fix for the module."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import HelmError

HELPERS = """\
{{- define "app.resources" -}}
{{- $resources := .Values.resources | default dict -}}
{{- $nvidia := dict "limits" (dict "nvidia.com/gpu" 1) -}}
{{- if .Values.gpu.nvidia.enabled -}}
{{- $resources := mergeOverwrite $resources $nvidia -}}
{{- end -}}
{{ $resources | toYaml }}
{{- end -}}
"""
SERVER = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server
          resources:
            {{- include "app.resources" . | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = "gpu:\n  nvidia:\n    enabled: true\nresources: {}\ntolerations: []\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = chart_with(tmp_path_factory.mktemp("review"), "app", files)
    return chart, fix_chart(chart)


def _render(chart: Path, *sets: str) -> dict[str, Any]:
    from dramigrate.helm.render import RenderOptions, render_chart

    docs = [
        d
        for m in render_chart(chart, RenderOptions(set_values=sets, kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
    ]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs if d}


def test_the_guard_against_other_devices_names_each_vendor_domain_once_and_no_demo_resource(
    fixed: tuple[Path, Any],
) -> None:
    """Was: the guard's regular expression listed every rule pack's resource in full, nvidia\\.com/ four times, and
    the demo pack's made-up example.com/gpu (which no chart asks for) in the chart's helper, five lines of it."""
    chart, outcome = fixed
    assert outcome.proven
    helper = (chart / "templates" / "_helpers.tpl").read_text()
    (guard,) = re.findall(r"regexMatch \(print ((?:\"[^\"\n]*\"\s*)+)\)", helper)
    assert "example" not in helper
    assert guard.count("nvidia\\\\.com/") == 1 and guard.count("amd\\\\.com/") == 1
    assert len(guard.splitlines()) < 5


@pytest.mark.parametrize("device", ["amd.com/gpu", "nvidia.com/mig-1g.5gb", "gpu.intel.com/xe"])
def test_another_device_the_migration_takes_still_fails_the_render_with_the_switch_on(
    fixed: tuple[Path, Any], device: str
) -> None:
    """The shorter expression still matches each name the rule packs migrate (grouped under its domain)."""
    chart, _ = fixed
    with pytest.raises(HelmError, match="ask for a device resource the DRA claim of the chart does not take"):
        _render(chart, "dra.enabled=true", "resources.limits." + device.replace(".", "\\.") + "=1")
    on = _render(chart, "dra.enabled=true")["Deployment/server"]["spec"]["template"]["spec"]
    assert on["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


@pytest.mark.parametrize("style", ["# plain comment\nx: 1\n", "# -- helm-docs\nx: 1\n"])
def test_the_values_documentation_cuts_its_lines_at_spaces_only(style: str) -> None:
    """Was: a chart with two devices read `...false: the device-\\n  # plugin resource)` in values.yaml (cut at the
    hyphen); now each comment line ends at a word."""
    from dramigrate.helm.idiomatic import values_block

    block = values_block(style, '""', "nvidia.com/gpu or gpu.intel.com/i915", False)
    comments = [line.strip() for line in block.splitlines() if line.strip().startswith("#")]
    assert "device-plugin" in " ".join(comments)
    assert [line for line in comments if line.endswith("-")] == []


def test_the_call_site_writes_no_parentheses_a_maintainer_would_delete(fixed: tuple[Path, Any]) -> None:
    """Was: `{{- if (eq (include "app.resources.dra" .) "claim") }}` and `if or .Values.tolerations ((include ...))`
    at the call site: an `if` wrapped whole in parentheses, a group in two."""
    chart, _ = fixed
    text = (chart / "templates" / "server.yaml").read_text() + (chart / "templates" / "_helpers.tpl").read_text()
    assert "dra" in text
    assert re.findall(r"\{\{-? if \(|\(\(", text) == []


NESTED_IFS = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            requests:
              cpu: 1
              {{- if .Values.gpu.requests }}
              {{- if .Values.gpu.requests.count }}
              nvidia.com/gpu: {{ .Values.gpu.requests.count }}
              {{- end }}
              {{- end }}
            limits:
              {{- if .Values.gpu.limits.count }}
              nvidia.com/gpu: {{ .Values.gpu.limits.count }}
              {{- end }}
""",
)
NESTED_VALUES = "gpu:\n  requests:\n    count: 1\n  limits:\n    count: 1\n"


def test_a_count_under_two_ifs_is_not_written_twice_in_the_conditions(tmp_path: Path) -> None:
    """Was: `(and .Values.gpu.requests .Values.gpu.requests.count .Values.gpu.requests.count)` in each DRA condition
    of a request under `if .Values.gpu.requests` then `if .Values.gpu.requests.count` (porter's web chart): the count
    said twice."""
    chart = chart_with(tmp_path, "server", {"values.yaml": NESTED_VALUES, "templates/server.yaml": NESTED_IFS})
    assert fix_chart(chart).proven
    text = "".join(p.read_text() for p in (chart / "templates").iterdir())
    assert "dra.enabled" in text
    assert ".Values.gpu.requests.count .Values.gpu.requests.count" not in text


def test_the_claim_spec_count_is_no_pipeline_in_parentheses(fixed: tuple[Path, Any]) -> None:
    """Was: `count: {{ (include "app.resources.draCount" . | trimAll ... | int) }}` in the helper's claim spec."""
    chart, _ = fixed
    (count,) = [
        line.strip() for line in (chart / "templates" / "_helpers.tpl").read_text().splitlines() if "count:" in line
    ]
    assert count.startswith('count: {{ include "app.resources.draCount" .')


def test_the_values_documentation_of_the_helper_switch_reads_as_written_by_hand(fixed: tuple[Path, Any]) -> None:
    """Was: "`dra.enabled` in values.yaml requests nvidia.com/gpu ... Not set, it is on:" appended to values.yaml
    itself; now the comment says what true and false do, then shows the default."""
    chart, _ = fixed
    values = (chart / "values.yaml").read_text()
    doc = values[values.index("# DRA") :]
    assert "values.yaml" not in doc and "Not set" not in doc
    assert "`dra.enabled: true` requests nvidia.com/gpu" in doc.replace("\n# ", " ")
    assert doc.endswith("Default:\n# dra:\n#   enabled: true\n")


def test_a_chartpress_placeholder_version_is_not_bumped(tmp_path: Path) -> None:
    """Was: dask's `version: 0.0.1-set.by.chartpress` came out `0.0.2-set.by.chartpress`, a placeholder the chart's
    release tool replaces (and no semver successor of a pre-release); a plain version still gets its patch bump."""
    files = {"values.yaml": NESTED_VALUES, "templates/server.yaml": NESTED_IFS}
    placeholder = chart_with(tmp_path / "a", "server", files, version="0.0.1-set.by.chartpress")
    plain = chart_with(tmp_path / "b", "server", files, version="0.3.9")
    before = (placeholder / "Chart.yaml").read_text()
    assert fix_chart(placeholder).proven and fix_chart(plain).proven
    assert (placeholder / "Chart.yaml").read_text() == before
    assert "version: 0.3.10" in (plain / "Chart.yaml").read_text()


CHANGES = """\
annotations:
  artifacthub.io/changes: |-
    - kind: changed
      description: Upgraded the common chart
"""


def test_the_changelog_annotation_gets_a_users_line_also_in_a_stripped_block(tmp_path: Path) -> None:
    """Was: an `artifacthub.io/changes: |-` list (k8s-at-home plex, johanneskastl jellyfin) was left without the
    change, and the helper rewrite's entry read "... switch read by app.resources" (a define name in a changelog)."""
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "app", files)
    (chart / "Chart.yaml").write_text((chart / "Chart.yaml").read_text() + CHANGES)
    assert fix_chart(chart).proven
    entries = yaml.safe_load(
        yaml.safe_load((chart / "Chart.yaml").read_text())["annotations"]["artifacthub.io/changes"]
    )
    assert entries == [
        {"kind": "changed", "description": "Upgraded the common chart"},
        {"kind": "added", "description": "DRA ResourceClaims behind the dra.enabled switch"},
    ]


def test_the_map_rewrite_leaves_the_allocation_mode_to_the_api(tmp_path: Path) -> None:
    """Was: each vendor's branch of the claim spec of a resources map built in variables (pattern F: rh-ai-quickstart
    llm-service, helix) wrote `allocationMode: ExactCount`, the API's default, which the other rewrites leave out."""
    from test_helm_map_built import DEPLOYMENT
    from test_helm_map_built import VALUES as MAP_VALUES

    chart = chart_with(tmp_path, "app", {"values.yaml": MAP_VALUES, "templates/deployment.yaml": DEPLOYMENT})
    assert fix_chart(chart).proven
    text = "".join(p.read_text() for p in (chart / "templates").iterdir())
    assert "draClaimSpec" in text and "allocationMode" not in text
