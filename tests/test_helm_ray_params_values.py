"""KubeRay groups whose rayStartParams come from values (`toYaml .Values.head.rayStartParams`): the migration sets
`num-gpus` only where the map has none, so the DRA branch of the idiomatic rewrite does too; a user who sets num-gpus
in the values must not get it twice (a repeated key in the pod's YAML). Renders are real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.prove import repeated_keys
from dramigrate.helm.render import RenderOptions, render_chart

RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams:
      {{- toYaml .Values.head.rayStartParams | nindent 6 }}
    template:
      spec:
        containers:
          - name: head
            image: ray:1
            resources:
              limits:
                nvidia.com/gpu: {{ .Values.head.gpus }}
"""
VALUES = 'head:\n  gpus: 1\n  rayStartParams:\n    dashboard-host: "0.0.0.0"\n'


def _ray(chart: Path, values: str) -> str:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    (text,) = [m.text for m in render_chart(chart, RenderOptions(values_files=(file,))) if "RayCluster" in m.text]
    return text


def test_num_gpus_the_values_set_is_not_set_again(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": RAY, "values.yaml": VALUES})
    fix_chart(chart)
    text = _ray(chart, "dra: {enabled: true}\nhead: {gpus: 2, rayStartParams: {num-gpus: '0'}}\n")
    assert not repeated_keys(text), text  # was num-gpus: "2" and num-gpus: "0" in one map
    assert text.count("num-gpus") == 1 and 'num-gpus: "0"' in text
    text = _ray(chart, "dra: {enabled: true}\nhead: {gpus: 2}\n")
    assert 'num-gpus: "2"' in text and "dashboard-host" in text  # the migration's num-gpus where the map has none


def test_an_empty_or_null_params_map_renders_the_num_gpus_the_migration_sets(tmp_path: Path) -> None:
    """`toYaml` of a null map renders `null`, of an empty one `{}`: after the DRA branch's num-gpus line the group
    no longer parsed (a YAML error on dra.enabled=true), where the migration of the original render writes the map."""
    empty = "head:\n  gpus: 1\n  rayStartParams: {}\n"
    for name, values, user in (("null", VALUES, "head: {rayStartParams: null}\n"), ("empty", empty, "")):
        chart = chart_with(tmp_path / name, "ray", {"templates/ray.yaml": RAY, "values.yaml": values})
        fix_chart(chart)
        group = yaml.safe_load(_ray(chart, f"dra: {{enabled: true}}\n{user}"))["spec"]["headGroupSpec"]
        assert group["rayStartParams"] == {"num-gpus": "1"}, name
        assert group["template"]["spec"]["resourceClaims"], name
        off = yaml.safe_load(_ray(chart, f"dra: {{enabled: false}}\n{user}"))["spec"]["headGroupSpec"]
        assert off["rayStartParams"] in (None, {}), name  # as the original renders it
