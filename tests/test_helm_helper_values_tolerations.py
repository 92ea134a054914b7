"""A helper that adds the GPU to a container's resources (pattern D, jellyfin's shape), in a chart whose shipped
GPU values file tolerates the device plugin's taint itself through the pod's `{{- with .Values.tolerations }}` list.
The proof renders that file too: there the migration adds no toleration (the pod tolerates the taint already), while
the DRA branch added a second, identical one, so the chart was left manual. The DRA toleration now renders only when
the values list does not tolerate the taint (the check the map rewrite makes, one shared define)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.prove import repeated_keys
from dramigrate.helm.render import RenderOptions, render_chart

HELPERS = """\
{{- define "app.resources" -}}
{{- $resources := .Values.resources | deepCopy -}}
{{- if .Values.transcode.nvidia -}}
{{- if not $resources.limits -}}
{{- $_ := set $resources "limits" dict -}}
{{- end -}}
{{- $_ := set $resources.limits "nvidia.com/gpu" "1" -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: "media:1.0"
          resources:
            {{- include "app.resources" . | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
VALUES = "transcode:\n  nvidia: false\nresources:\n  limits:\n    memory: 1Gi\ntolerations: []\n"
# the chart's own example: the GPU on, and the taint tolerated with a spot one
SHIPPED = """\
transcode:
  nvidia: true
tolerations:
  - key: spot
    operator: Exists
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
"""


def _pod(chart: Path, values: tuple[Path, ...]) -> tuple[dict[str, Any], str]:
    options = RenderOptions(values_files=values, set_values=("dra.enabled=true",))
    stream = "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))
    (deployment,) = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"], stream


def test_no_second_gpu_toleration_where_the_shipped_values_tolerate_it(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "values-example.yaml": SHIPPED}
    chart = chart_with(tmp_path, "app", {**files, "templates/_helpers.tpl": HELPERS, "templates/app.yaml": DEPLOYMENT})
    mine = tmp_path / "nvidia.yaml"
    mine.write_text("transcode:\n  nvidia: true\n")

    fix_chart(chart, values=(mine,))  # the proof renders values-example.yaml too; it was left manual

    for values, keys in (((mine,), ["nvidia.com/gpu"]), ((chart / "values-example.yaml",), ["spot", "nvidia.com/gpu"])):
        pod, stream = _pod(chart, values)
        assert repeated_keys(stream) == [], values
        assert [t["key"] for t in pod["tolerations"]] == keys, values
        assert pod["resourceClaims"] and "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]


def test_the_dra_toleration_is_one_if_and_the_chart_own_nested_ifs_stay(tmp_path: Path) -> None:
    """The DRA toleration sat in two `if`s, the helper's DRA branch and then `if not` the values list tolerating the
    taint (four lines of actions); now one `if and` of both. A pair of nested `if`s the chart wrote itself is left
    as it was."""
    own = "      {{- if .Values.host.enabled }}\n      {{- if .Values.host.network }}\n      hostNetwork: true\n"
    own += "      {{- end }}\n      {{- end }}\n"
    deployment = DEPLOYMENT.replace("      containers:\n", own + "      containers:\n")
    files = {"values.yaml": VALUES + "host:\n  enabled: true\n  network: true\n", "values-example.yaml": SHIPPED}
    chart = chart_with(tmp_path, "app", {**files, "templates/_helpers.tpl": HELPERS, "templates/app.yaml": deployment})
    mine = tmp_path / "nvidia.yaml"
    mine.write_text("transcode:\n  nvidia: true\n")
    fix_chart(chart, values=(mine,))
    written = (chart / "templates/app.yaml").read_text()
    assert own in written
    (check,) = [line.strip() for line in written.splitlines() if "draTolerated" in line]
    assert check.startswith('{{- if and (include "app.resources.dra" .) (not (include "app.resources.draTolerated"'), (
        check
    )
    for values, keys in (((mine,), ["nvidia.com/gpu"]), ((chart / "values-example.yaml",), ["spot", "nvidia.com/gpu"])):
        pod, _ = _pod(chart, values)
        assert [t["key"] for t in pod["tolerations"]] == keys, values
        assert pod["hostNetwork"] is True
