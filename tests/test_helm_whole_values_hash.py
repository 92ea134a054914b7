"""A chart that writes a hash of its whole values into an object (`checksum/values: {{ toJson .Values | sha256sum }}`,
as a runner scale set's `actions.github.com/values-hash` does, to roll its pods when any value changes): any key the
rewrite adds to values.yaml changes that hash, so the render with the values as they were would not be byte-identical
(L). values.yaml then documents the keys in comments only, and the DRA render (D) is compared with the migration of
the original render but for the fields that change with any value (the DRA values are other values). Renders are
real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HASHED = TOYAML_SERVER.replace(
    "    metadata:\n      labels: {app: server}\n",
    "    metadata:\n      labels: {app: server}\n      annotations:\n"
    "        checksum/values: {{ toJson .Values | sha256sum | trunc 63 }}\n",
)


def _render(chart: Path, *files: Path) -> str:
    return "".join(m.text for m in render_chart(chart, RenderOptions(values_files=files)))


def test_a_chart_hashing_its_values_keeps_values_yaml_and_is_proven(tmp_path: Path) -> None:
    """Was manual: 'with the default values (values as they were), the render is not byte-identical' (the hash of
    values.yaml with `resourceClaimTemplates: {}` added), then 'renders differently from the migrated original
    rendering: ...checksum/values'."""
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": HASHED, "values.yaml": values})
    before = _render(chart)
    outcome = fix_chart(chart)
    assert _render(chart) == before
    assert yaml.safe_load((chart / "values.yaml").read_text()) == yaml.safe_load(values)
    assert "# resourceClaimTemplates: {}" in (chart / "values.yaml").read_text()
    assert any("a hash of .Values" in c and "DRA values" in c for c in outcome.checked), outcome.checked
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1]
    pod = pods["release-name-server"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": pod["resourceClaims"][0]["name"]}]}


def test_a_chart_without_a_hash_of_its_values_still_gets_the_keys(tmp_path: Path) -> None:
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
    plain = HASHED.replace("{{ toJson .Values | sha256sum | trunc 63 }}", "fixed")
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": plain, "values.yaml": values})
    outcome = fix_chart(chart)
    assert yaml.safe_load((chart / "values.yaml").read_text())["resourceClaimTemplates"] == {}
    assert not any("a hash of .Values" in c for c in outcome.checked)
