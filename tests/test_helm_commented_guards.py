"""Pattern A in a template whose lines carry comments: a `limits:` key with a YAML comment after it, and the `if`
lines around a literal device key each with a template comment after the action (`{{- if .Values.gpu.enabled }} {{- /*
true or false */}}`), as a chart of a research-computing batch tool writes them. Both were refused as "none of the
shapes" although the key is a literal count under `limits:`. The rewrite now takes them, keeps every comment where
the chart has it, and the renders prove it: with the switch off as before, with it on the claim. Each chart here is
written for the test; renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

COMMENTED_LIMITS = deployment(
    "renderer",
    """\
      containers:
        - name: renderer
          image: renderer:2
          resources:
            limits: # the scheduler takes these as requests when none are given
              memory: 8Gi
              {{- if .Values.gpu.enabled }}
              nvidia.com/gpu: 1 # one whole GPU
              {{- end }}
""",
)
COMMENTED_GUARDS = deployment(
    "renderer",
    """\
      containers:
        - name: renderer
          image: renderer:2
          resources:
            limits:
              memory: 8Gi
{{- if .Values.gpu.enabled }} {{- /* true or false */}}
              nvidia.com/gpu: 1
{{- end }}
""",
)
# the device key behind `or` of two values keys, in one branch of an `if` whose other branch writes a shared-GPU
# resource dramigrate does not know; no values.yaml: the values come from the command line or a file
SHARED_OR_WHOLE = deployment(
    "renderer",
    """\
      containers:
        - name: renderer
          image: renderer:2
          resources:
            limits: # requests default to these
              memory: {{ .Values.memory | quote }}
{{- if or .Values.gpu.wanted .Values.gpu.needed }} {{- /* 1 or 0 */}}
  {{- if .Values.gpu.whole }} {{- /* true: a whole GPU, false: a share of one */}}
              nvidia.com/gpu: 1 # a whole GPU
  {{- else }}
              example.com/gpu-share: {{ .Values.gpu.share | quote }} # a share of a GPU
  {{- end }}
{{- end }}
""",
)


def _texts(chart: Path, values: Path) -> list[str]:
    return [m.text for m in render_chart(chart, RenderOptions(values_files=(values,)))]


def _fixed_and_original(tmp_path: Path, template: str, values: str) -> tuple[Path, Path]:
    chart = chart_with(tmp_path, "renderer", {"templates/deployment.yaml": template, "values.yaml": values})
    original = shutil.copytree(chart, tmp_path / "original")
    return chart, original


def test_a_comment_after_the_limits_key(tmp_path: Path) -> None:
    chart, original = _fixed_and_original(tmp_path, COMMENTED_LIMITS, "gpu:\n  enabled: true\n")
    fix_chart(chart)
    text = (chart / "templates/deployment.yaml").read_text()
    assert "limits: # the scheduler takes these as requests when none are given\n" in text
    assert "nvidia.com/gpu: 1 # one whole GPU\n" in text
    off = tmp_path / "off.yaml"
    off.write_text("dra: {enabled: false}\n")
    assert _texts(chart, off) == _texts(original, off)
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\n")
    _, counts, pods = dra_render(chart, on)
    container = pods["renderer"]["containers"][0]
    assert list(counts.values()) == [1] and container["resources"]["limits"] == {"memory": "8Gi"}
    assert container["resources"]["claims"] == [{"name": pods["renderer"]["resourceClaims"][0]["name"]}]


def test_template_comments_after_the_guard_stay_on_its_line(tmp_path: Path) -> None:
    chart, original = _fixed_and_original(tmp_path, COMMENTED_GUARDS, "gpu:\n  enabled: true\n")
    fix_chart(chart)
    text = (chart / "templates/deployment.yaml").read_text()
    guard = next(line for line in text.splitlines() if "true or false" in line)
    # the chart's own `if` takes the switch (no second `if` around the key), its comment after it as before
    assert guard == "{{- if and .Values.gpu.enabled (not .Values.dra.enabled) }} {{- /* true or false */}}"
    for on in (True, False):
        given = tmp_path / "given.yaml"
        given.write_text(f"gpu: {{enabled: {str(on).lower()}}}\ndra: {{enabled: false}}\n")
        assert _texts(chart, given) == _texts(original, given)
        given.write_text(f"gpu: {{enabled: {str(on).lower()}}}\ndra: {{enabled: true}}\n")
        _, counts, pods = dra_render(chart, given)
        assert list(counts.values()) == ([1] if on else []) and ("resourceClaims" in pods["renderer"]) is on
        assert "nvidia.com/gpu" not in str(pods["renderer"]["containers"])


def test_a_whole_gpu_beside_a_shared_one_behind_or_with_commented_guards(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "renderer", {"templates/deployment.yaml": SHARED_OR_WHOLE})
    original = shutil.copytree(chart, tmp_path / "original")
    given = tmp_path / "given.yaml"
    given.write_text("memory: 16Gi\ngpu: {wanted: 1, needed: 0, whole: true, share: 0}\n")
    fix_chart(chart, values=(given,))
    assert (chart / "values.yaml").read_text().startswith("dra:\n")  # the chart had none: the switch's block
    cases = {
        "a whole GPU": ("{wanted: 0, needed: 1, whole: true, share: 0}", [1], None),
        "a share": ("{wanted: 1, needed: 0, whole: false, share: 4}", [], "4"),
        "no GPU": ("{wanted: 0, needed: 0, whole: true, share: 0}", [], None),
    }
    for label, (gpu, claimed, share) in cases.items():
        values = tmp_path / "values.yaml"
        values.write_text(f"memory: 16Gi\ngpu: {gpu}\ndra: {{enabled: false}}\n")
        assert _texts(chart, values) == _texts(original, values), label
        values.write_text(f"memory: 16Gi\ngpu: {gpu}\ndra: {{enabled: true}}\n")
        _, counts, pods = dra_render(chart, values)
        limits = pods["renderer"]["containers"][0]["resources"]["limits"]
        assert list(counts.values()) == claimed and "nvidia.com/gpu" not in limits, label
        assert limits.get("example.com/gpu-share") == share, label  # the other vendor's key as the chart writes it
