"""Pattern A in a template laid out as sglang-helm's: a blank line before `containers:` (the added `{{- if }}` must
not trim it: the switch-off render stays byte-identical) and tolerations guarded by `{{- if .Values.tolerations }}`
with an empty default (the DRA branch must still add the device plugin's toleration). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

DEPLOYMENT = deployment(
    "sglang",
    """\
      {{- if .Values.tolerations }}
      tolerations: 
      {{ toYaml .Values.tolerations | nindent 8 }}
      {{- end }}
      volumes:
      - name: shm
        emptyDir: {}

      containers:
      - name: sglang
        image: sglang
        resources:
          limits:
            memory: 1Gi
            nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
          requests:
            nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
""",
)
VALUES = 'resources:\n  requests:\n    nvidia.com/gpu: "8"\ntolerations: {}\n'


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    chart = chart_with(
        tmp_path_factory.mktemp("layouts"), "sg", {"templates/d.yaml": DEPLOYMENT, "values.yaml": VALUES}
    )
    # was: manual, 'with default values and the DRA switch off, the render is not byte-identical: 22 lines before,
    # 21 after' (the blank line), then 'tolerations: expected [...], the rewritten chart has none'
    return chart, fix_chart(chart)


def test_the_blank_line_stays_and_the_toleration_is_added(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    assert "\n\n      containers:" in (chart / "templates" / "d.yaml").read_text()
    on = chart.parent / "on.yaml"
    on.write_text("dra: {enabled: true}\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [8]
    assert [t["key"] for t in pods["sglang"]["tolerations"]] == ["nvidia.com/gpu"]
    with_own = chart.parent / "own.yaml"
    with_own.write_text("dra: {enabled: true}\ntolerations: [{key: team, operator: Exists}]\n")
    assert [t["key"] for t in dra_render(chart, with_own)[2]["sglang"]["tolerations"]] == ["team", "nvidia.com/gpu"]


def test_the_check_of_the_values_tolerations_reads_as_a_chart_would_write_it(fixed: tuple[Path, Any]) -> None:
    """The DRA toleration renders only where the values list does not tolerate the taint already; that check was one
    line of about 250 characters and six actions in the reviewed template. Now a `range` over four lines, the loop
    and its test on lines of their own, and it still keeps a second toleration out."""
    chart, outcome = fixed
    (change,) = [c for c in outcome.changes if c.rel.endswith("d.yaml")]
    added = [line for line in change.after.splitlines() if line not in change.before.splitlines()]
    assert any("range .Values.tolerations" in line for line in added), added
    (check,) = [line for line in added if "range .Values.tolerations" in line or "$draTolerated :=" in line][1:]
    assert check.strip() == "{{- range .Values.tolerations }}", added
    assert max(map(len, added)) < 220, max(added, key=len)
    own = chart.parent / "tolerating.yaml"
    own.write_text("dra: {enabled: true}\ntolerations: [{key: nvidia.com/gpu, operator: Exists}]\n")
    assert [t["key"] for t in dra_render(chart, own)[2]["sglang"]["tolerations"]] == ["nvidia.com/gpu"]


def test_a_users_tolerations_render_byte_identical_with_the_switch_off(fixed: tuple[Path, Any], tmp_path: Path) -> None:
    """sglang-helm writes `tolerations: ` with a trailing blank above `{{ toYaml .Values.tolerations | nindent 8 }}`:
    the proof's values leave the list empty, but with a user's tolerations the added `{{- if .Values.tolerations }}`
    trimmed that blank, so the switch-off render was no longer byte-identical (`tolerations:`)."""
    from dramigrate.helm.render import RenderOptions, render_chart

    chart, _ = fixed
    original = chart_with(tmp_path, "sg", {"templates/d.yaml": DEPLOYMENT, "values.yaml": VALUES})
    (original / "Chart.yaml").write_text((chart / "Chart.yaml").read_text())  # the version bump aside
    mine = tmp_path / "mine.yaml"
    mine.write_text("tolerations: [{key: team, operator: Exists}]\n")
    off = tmp_path / "off.yaml"
    off.write_text("dra: {enabled: false}\n")
    before = [m.text for m in render_chart(original, RenderOptions(values_files=(mine,)))]
    assert "tolerations: \n" in before[0]
    assert [m.text for m in render_chart(chart, RenderOptions(values_files=(mine, off)))] == before
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\ntolerations: [{key: team, operator: Exists}]\n")
    assert [t["key"] for t in dra_render(chart, on)[2]["sglang"]["tolerations"]] == ["team", "nvidia.com/gpu"]
