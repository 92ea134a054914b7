"""A container's resources passed whole from a values map keyed `*Resources` with `limits`/`requests` sections
(`resources:` then `{{- toYaml .Values.worker.mainResources | nindent 12 }}`, a sidecar taking `sideResources`), also
inside a define that writes the whole object and reads values through the root it is given in a dict
(`{{- $root := .root -}}`, `toYaml $root.Values.worker.mainResources`, a RayCluster manifest helper's shape). fix said
"does not take its resources whole from one values map" and wrote nothing: no values map was marked for such a key
(only `resources`, flat `*Resources` maps and maps of maps were), and in the define the pass-through neither read
`$root.Values` as a values path nor wrote the pod's keys with `$root`. Both are now the pass-through rewrite, proven.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

POD = """\
    spec:
      containers:
        - name: side
          image: {{ ROOT.Values.worker.image }}
          resources:
            {{- toYaml ROOT.Values.worker.sideResources | nindent 12 }}
        - name: main
          image: {{ ROOT.Values.worker.image }}
          resources:
            {{- toYaml ROOT.Values.worker.mainResources | nindent 12 }}
"""
HEAD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
spec:
  selector:
    matchLabels: {app: lab}
  template:
    metadata:
      labels: {app: lab}
"""
VALUES = """\
worker:
  image: w:1
  sideResources:
    limits:
      cpu: 1
  mainResources:
    requests:
      cpu: 2
      nvidia.com/gpu: "2"
    limits:
      cpu: 4
      nvidia.com/gpu: "2"
"""
PLAIN = {"templates/lab.yaml": HEAD.replace("NAME", "{{ .Release.Name }}-lab") + POD.replace("ROOT", "")}
IN_DEFINE = {
    "templates/_helpers.tpl": '{{- define "lab.worker" -}}\n{{- $root := .root -}}\n'
    + HEAD.replace("NAME", "{{ .name }}")
    + POD.replace("ROOT", "$root")
    + "{{- end -}}\n",
    "templates/lab.yaml": '{{ include "lab.worker" (dict "root" . "name" (printf "%s-lab" .Release.Name)) }}\n',
}


@pytest.mark.parametrize("templates", [PLAIN, IN_DEFINE], ids=["template", "define-given-root"])
def test_a_sectioned_map_keyed_star_resources_is_passed_through(tmp_path: Path, templates: dict[str, str]) -> None:
    chart = chart_with(tmp_path, "lab", {"values.yaml": VALUES, **templates})
    before = [m.text for m in render_chart(chart, RenderOptions())]

    fix_chart(chart)

    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    side, main = pod["containers"]
    assert list(counts.values()) == [2]
    assert [c["name"] for c in pod["resourceClaims"]] == [c["name"] for c in main["resources"]["claims"]]
    assert "nvidia.com/gpu" not in str(main["resources"]) and main["resources"]["limits"]["cpu"] == 4
    assert side["resources"] == {"limits": {"cpu": 1}}  # the sidecar's map is not the device's
    assert [m.text for m in render_chart(chart, RenderOptions())] == before  # without the DRA values: as it was
