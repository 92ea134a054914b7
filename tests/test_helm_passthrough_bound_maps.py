"""A values resources map that reaches the container through one more name than `toYaml .Values.resources`: a helper
that writes it under a guard of its own (`{{- if .Values.resources }}{{- toYaml .Values.resources }}{{- end }}`,
gsampaio's llmbench vLLM chart), or a template variable bound from it at the template's top (`{{- $resources :=
.Values.resources }}`, then `{{- $resources | toYaml | nindent 12 }}`). Both pass the map through whole, so they take
the pass-through (pattern B): `claims` in the map, the pod's `resourceClaims` beside it, proven by (L) and (D)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

VALUES = """\
image: app:1
resources:
  limits:
    memory: 1Gi
"""
GPU = """\
resources:
  limits:
    nvidia.com/gpu: 2
  requests:
    nvidia.com/gpu: 2
"""


def _server(resources_line: str, top: str = "") -> str:
    return top + deployment(
        "{{ .Release.Name }}-server",
        f"""\
      containers:
        - name: server
          image: {{{{ .Values.image }}}}
          resources:
            {resources_line}
""",
        app="server",
    )


HELPER_IF = """\
{{- define "app.resources" -}}
{{- if .Values.resources }}
{{- toYaml .Values.resources }}
{{- end }}
{{- end }}
"""
HELPER_WITH = """\
{{- define "app.resources" -}}
{{- with .Values.resources }}
{{- toYaml . }}
{{- end }}
{{- end -}}
"""
INCLUDE = '{{- include "app.resources" . | nindent 12 }}'

CASES = {
    "helper guarded by if": {"templates/_helpers.tpl": HELPER_IF, "templates/server.yaml": _server(INCLUDE)},
    "helper guarded by with": {"templates/_helpers.tpl": HELPER_WITH, "templates/server.yaml": _server(INCLUDE)},
    "variable from values": {
        "templates/server.yaml": _server(
            "{{- $resources | toYaml | nindent 12 }}", "{{- $resources := .Values.resources }}\n"
        )
    },
    "variable with a default": {
        "templates/server.yaml": _server(
            "{{- toYaml $res | nindent 12 }}", "{{- $res := .Values.resources | default dict -}}\n"
        )
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_map_passed_through_a_guarded_helper_or_a_variable_gets_the_pass_through(tmp_path: Path, case: str) -> None:
    """Was, for the helper: "pattern D: no line of a helper in this chart writes the device key, nor a map from a
    variable with toYaml", nothing written; for the variable: the pod's claims read from `$.resourceClaims` (the
    variable taken for the root's field `resources`), which renders none, and the proof refused it."""
    original = chart_with(tmp_path / "original", "app", {"values.yaml": VALUES, **CASES[case]})
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    fix_chart(chart, "1.36", (gpu,))

    def render(root: Path) -> list[str]:
        return [m.text for m in render_chart(root, RenderOptions(values_files=(gpu,)))]

    assert render(chart) == render(original)  # the device-plugin values render byte-identical
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    pod = pods["release-name-server"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    (claim,) = pod["resourceClaims"]
    assert counts[claim["resourceClaimTemplateName"]] == 2
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_a_variable_changed_in_place_is_not_read_as_the_values_map(tmp_path: Path) -> None:
    """A variable bound from the values map and then given a device entry with `set` holds more than the map: the
    pass-through does not name the values map for it (the map built in variables is mapvars' rewrite, pattern F)."""
    from dramigrate.helm.mapreads import inline_bound

    bound = "{{- $res := .Values.resources }}\nx:\n  {{- toYaml $res | nindent 2 }}\n"
    assert "toYaml $.Values.resources" in inline_bound(bound)
    changed = bound.replace("x:", '{{- $_ := set $res.limits "nvidia.com/gpu" 1 }}\nx:')
    assert inline_bound(changed) == changed
    inside = "{{- range .Values.items }}\n" + bound + "{{- end }}\n"  # `.Values` there is an item's field
    assert inline_bound(inside) == inside
