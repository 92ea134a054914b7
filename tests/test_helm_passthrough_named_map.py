"""A container's resources passed through whole from a values map under a name of its own (SciLifeLab's Serve app
charts: `resources:` then `{{- toYaml .Values.flavor | nindent 10 }}`, the platform setting `flavor`). fix called it
"pattern F (another template shape)" and wrote nothing; it is pattern B, rewritten as `toYaml .Values.resources` is.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.patterns import classify
from dramigrate.helm.render import RenderOptions, render_chart

LAB = deployment(
    "{{ .Release.Name }}-lab",
    """\
      containers:
        - name: lab
          image: lab:1
          resources:
            {{- toYaml .Values.flavor | nindent 12 }}
""",
)
VALUES = "flavor:\n  limits:\n    cpu: 1\n  requests:\n    cpu: 100m\n"
GPU = "flavor:\n  limits:\n    cpu: 4\n    nvidia.com/gpu: 2\n  requests:\n    cpu: 2\n    nvidia.com/gpu: 2\n"


def test_a_resources_map_named_otherwise_is_pattern_b() -> None:
    line = LAB.splitlines().index("          resources:") + 1
    assert classify(LAB, line, "nvidia.com/gpu").letter == "B"


def test_a_map_passed_whole_under_its_own_name_is_rewritten(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "lab", {"values.yaml": VALUES, "templates/lab.yaml": LAB})
    original = (chart / "templates/lab.yaml").read_text()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    fix_chart(chart, values=(gpu,))

    assert (chart / "templates/lab.yaml").read_text() != original
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    (pod,) = pods.values()
    assert list(counts.values()) == [2]
    assert pod["resourceClaims"] and pod["containers"][0]["resources"]["claims"]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    plain = [m.text for m in render_chart(chart, RenderOptions(values_files=(gpu,)))]
    assert "nvidia.com/gpu: 2" in "".join(plain) and "resourceClaims" not in "".join(plain)
