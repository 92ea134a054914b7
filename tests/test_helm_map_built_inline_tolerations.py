"""A pod whose map is built in variables (pattern F) and whose values tolerations a helper renders on the key's own
line, above the containers (bitnami-style charts: `{{- if .Values.tolerations }}` `tolerations: {{- include
"common.tplvalues.render" (dict "value" .Values.tolerations "context" .) | nindent 8 }}`). The DRA branch wrote a
second `tolerations:` key at the pod's end, and the proof refused it with a tolerations list set. The key's line is
now split in two (the same render), and the list moves after the containers with the switch on, where the map's
device is known, the DRA toleration appended unless the user's list tolerates it already."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart
from test_helm_map_built import DEPLOYMENT, VALUES, texts

from dramigrate.helm.prove import repeated_keys
from dramigrate.helm.render import RenderOptions, render_chart

AT_END = """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
INLINE = """\
      {{- if .Values.tolerations }}
      tolerations: {{- include "app.render" (dict "value" .Values.tolerations "context" .) | nindent 8 }}
      {{- end }}
      containers:
"""
HELPERS = """\
{{- define "app.render" -}}
{{- if typeIs "string" .value }}{{ tpl .value .context }}{{ else }}{{ tpl (toYaml .value) .context }}{{ end }}
{{- end -}}
"""
SPOT = ("tolerations[0].key=spot", "tolerations[0].operator=Exists")
GPU = ("tolerations[0].key=nvidia.com/gpu", "tolerations[0].operator=Exists")


def _pod(chart: Path, *sets: str) -> tuple[dict[str, Any], str]:
    stream = "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(set_values=sets)))
    (deployment,) = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"], stream


def test_a_helper_rendered_list_on_the_key_line_takes_the_dra_toleration(tmp_path: Path) -> None:
    template = DEPLOYMENT.replace(AT_END, "").replace("      containers:\n", INLINE)
    files = {"values.yaml": VALUES, "templates/deployment.yaml": template, "templates/_helpers.tpl": HELPERS}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")

    fix_chart(chart)

    for sets, keys in (((), ["nvidia.com/gpu"]), (SPOT, ["spot", "nvidia.com/gpu"]), (GPU, ["nvidia.com/gpu"])):
        pod, stream = _pod(chart, "dra.enabled=true", *sets)
        assert repeated_keys(stream) == [], sets
        assert [t["key"] for t in pod["tolerations"]] == keys, sets
        assert pod["resourceClaims"] and pod["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}
    for sets in ((), SPOT):
        assert texts(chart, sets=("dra.enabled=false", *sets)) == texts(original, sets=sets)
