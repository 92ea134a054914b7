"""A device key whose template line ends in spaces (nvidia-playground's
`{{ .Values.x.gpu.type }}: {{ .Values.x.gpu.count }} `): the rewrite's guard around it closes with `{{- end }}` on
the next line, whose trim took those spaces, so with the switch off the chart no longer rendered byte-identical and
fix refused it, with a message that showed the same text twice ('nvidia.com/gpu: 1' became 'nvidia.com/gpu: 1').
Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.prove import same_text
from dramigrate.helm.render import RenderedManifest, RenderOptions, render_chart

DEPLOYMENT = deployment(
    "notebook",
    """\
      containers:
      - name: notebook
        image: jupyter
        resources:
          limits:
            {{ .Values.notebook.gpu.type }}: {{ .Values.notebook.gpu.count }} \n\
        volumeMounts:
        - mountPath: /model
          name: model
      volumes:
      - name: model
        emptyDir: {}
""",
)
VALUES = "notebook:\n  gpu:\n    type: nvidia.com/gpu\n    count: 1\n"


def test_the_spaces_at_a_device_line_end_stay_with_the_switch_off(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "nb", {"templates/d.yaml": DEPLOYMENT, "values.yaml": VALUES})
    original = chart_with(tmp_path / "original", "nb", {"templates/d.yaml": DEPLOYMENT, "values.yaml": VALUES})
    fix_chart(chart)  # was: not proven, "... the render is not byte-identical"
    (original / "Chart.yaml").write_text((chart / "Chart.yaml").read_text())  # the version bump aside
    off = tmp_path / "off.yaml"
    off.write_text("dra: {enabled: false}\n")
    before = [m.text for m in render_chart(original, RenderOptions())]
    assert "nvidia.com/gpu: 1 \n" in before[0]
    assert [m.text for m in render_chart(chart, RenderOptions(values_files=(off,)))] == before
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\nnotebook: {gpu: {count: 2}}\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    (container,) = pods["notebook"]["containers"]
    assert container["resources"] == {"claims": [{"name": "gpu"}]}
    assert [m["name"] for m in container["volumeMounts"]] == ["model"]


def test_a_line_that_lost_only_its_end_spaces_says_so() -> None:
    """The refusal quoted both lines stripped, so they read the same; now it shows the spaces and says where they
    went."""
    before = [RenderedManifest("nb/templates/d.yaml", "limits:\n  nvidia.com/gpu: 1 \nx: 1\n")]
    after = [RenderedManifest("nb/templates/d.yaml", "limits:\n  nvidia.com/gpu: 1\nx: 1\n")]
    message = same_text(before, before, after)
    assert message.startswith("nb/templates/d.yaml:2: 'nvidia.com/gpu: 1 ' became 'nvidia.com/gpu: 1'"), message
    assert "ends in 0 space(s) instead of 1" in message
    indented = [RenderedManifest("nb/templates/d.yaml", "limits:\n    nvidia.com/gpu: 1\nx: 1\n")]
    assert "indented by 4 spaces instead of 2" in same_text(before[:0] + after, after, indented)
