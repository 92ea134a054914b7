"""A values resources map that reaches the container through one more name than `toYaml .Values.resources`: a helper
that writes it under a guard of its own (`{{- if .Values.resources }}{{- toYaml .Values.resources }}{{- end }}`,
gsampaio's llmbench vLLM chart), or with the `resources:` key itself (`resources:` then `toYaml .Values.resources |
nindent 2`), or a define that writes the whole container (`- name: server`, ..., `resources:` and the map's
`toYaml`), or a template variable bound from it at the template's top (`{{- $resources :=
.Values.resources }}`, then `{{- $resources | toYaml | nindent 12 }}`) or by a `with` (`{{- with $res :=
.Values.resources }}`, aliyun's langchain-chatchat chart). Both pass the map through whole, so they take the
pass-through (pattern B): `claims` in the map, the pod's `resourceClaims` beside it, proven by (L) and (D)."""

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
HELPER_KEY = """\
{{- define "app.resources" -}}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
{{- end }}
"""
HELPER_WITH_KEY = """\
{{- define "app.resources" -}}
{{- with .Values.resources -}}
resources:
{{ toYaml . | indent 2 }}
{{- end -}}
{{- end -}}
"""
KEY_INCLUDE = '{{- include "app.resources" . | nindent 10 }}'


CONTAINER = """\
{{- define "app.container" -}}
- name: server
  image: {{ .Values.image }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
{{- end }}
"""
CONTAINER_WITH = """\
{{- define "app.container" -}}
- name: server
  image: {{ .Values.image }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
"""
GPU_FILE = "gpu.yaml"  # a case's own GPU values file (beside the chart, not in it)
CONTAINER_ARG = """\
{{- define "app.container" -}}
- name: server
  image: {{ .image }}
  resources:
    {{- toYaml .resources | nindent 4 }}
{{- end }}
"""
CONTAINER_SERVER = deployment(
    "{{ .Release.Name }}-server",
    '      containers:\n        {{- include "app.container" . | nindent 8 }}\n',
    app="server",
)


def _keyed_server() -> str:
    """The server whose helper writes the `resources:` key itself (the include at the container's keys)."""
    return _server(INCLUDE).replace("          resources:\n            " + INCLUDE, "          " + KEY_INCLUDE)


CASES = {
    "helper guarded by if": {"templates/_helpers.tpl": HELPER_IF, "templates/server.yaml": _server(INCLUDE)},
    "helper guarded by with": {"templates/_helpers.tpl": HELPER_WITH, "templates/server.yaml": _server(INCLUDE)},
    "helper writing the key": {"templates/_helpers.tpl": HELPER_KEY, "templates/server.yaml": _keyed_server()},
    "helper writing the key under with": {
        "templates/_helpers.tpl": HELPER_WITH_KEY,
        "templates/server.yaml": _keyed_server(),
    },
    "container helper": {"templates/_helpers.tpl": CONTAINER, "templates/server.yaml": CONTAINER_SERVER},
    "container helper with the map": {
        "templates/_helpers.tpl": CONTAINER_WITH,
        "templates/server.yaml": CONTAINER_SERVER,
    },
    "container helper given the values": {
        "templates/_helpers.tpl": CONTAINER_ARG,
        "templates/server.yaml": CONTAINER_SERVER.replace('"app.container" .', '"app.container" .Values.server'),
        "values.yaml": "server:\n" + "".join(f"  {line}\n" for line in VALUES.splitlines()),
        GPU_FILE: "server:\n" + "".join(f"  {line}\n" for line in GPU.splitlines()),
    },
    "variable from values": {
        "templates/server.yaml": _server(
            "{{- $resources | toYaml | nindent 12 }}", "{{- $resources := .Values.resources }}\n"
        )
    },
    "variable bound by with": {  # aliyun's langchain-chatchat chart: the variable exists inside the `with` only
        "templates/server.yaml": _server("{{- toYaml $res | nindent 12 }}").replace(
            "          resources:\n            {{- toYaml $res | nindent 12 }}\n",
            "          {{- with $res := .Values.resources }}\n          resources:\n"
            "            {{- toYaml $res | nindent 12 }}\n          {{- end }}\n",
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
    """Was, for the helpers: "pattern D: no line of a helper in this chart writes the device key, nor a map from a
    variable with toYaml", nothing written; for the variable: the pod's claims read from `$.resourceClaims` (the
    variable taken for the root's field `resources`), which renders none, and the proof refused it."""
    files = {"values.yaml": VALUES, **CASES[case]}
    gpu = tmp_path / GPU_FILE
    gpu.write_text(files.pop(GPU_FILE, GPU))
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")

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
