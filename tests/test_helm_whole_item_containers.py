"""Containers a template writes whole from values, and a refusal beside them (NVIDIA NVCF charts).

- An init container that is an item of a values list written whole (`- {{- toYaml . | nindent 8 }}` in a `range` over
  `$app.initContainers`, inside `with`), beside a main container with its own `resources:`. Was: not proven, the
  pod's resourceClaims the DRA values put beside the item's `resources` were written into the init container as a
  field of its own. Now the item is written without those keys (`omit`), its claims join the pod's, and the pod's
  list is rendered after the `range` over the containers, not inside it. Proven, and the DRA render is checked here.
- A container whose resources a helper takes from the selected profile's map unless `resources` is set: refused with
  both maps named and what to change (was: "not passed through as is", naming only the empty override)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

APPS = """\
{{- $top := .Values }}
{{- range $name, $app := $top.apps }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      {{- with $app.initContainers }}
      initContainers:
      {{- range $app.initContainers }}
      - {{- toYaml . | nindent 8 }}
        volumeMounts:
          - {name: data, mountPath: /data}
      {{- end }}
      {{- end }}
      containers:
      {{- range $cname, $c := $app.containers }}
        - name: {{ $cname }}
          image: {{ $c.image }}
          {{- if $c.resources }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          {{- end }}
      {{- end }}
      volumes:
        - {name: data, emptyDir: {}}
      {{- with $top.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
"""
APPS_VALUES = """\
apps:
  seg:
    containers:
      main:
        image: main:1
        resources:
          limits:
            nvidia.com/gpu: 1
    initContainers:
    - name: warmup
      image: warmup:1
      resources:
        limits:
          nvidia.com/gpu: 1
tolerations: []
"""


def _pods(chart: Path, values: tuple[Path, ...] = ()) -> dict[str, dict]:
    docs = [d for m in render_chart(chart, RenderOptions(values_files=values)) for d in yaml.safe_load_all(m.text) if d]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


def test_an_init_container_written_whole_from_a_values_item_gets_its_claim_in_the_pod(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "apps", {"values.yaml": APPS_VALUES, "templates/apps.yaml": APPS})
    before = _pods(chart)
    fix_chart(chart)
    template = (chart / "templates/apps.yaml").read_text()
    assert "toYaml (omit . " in template  # the item without the pod's keys
    assert _pods(chart) == before  # the switch is the values file: without it, as before
    pod = _pods(chart, (chart / "values-dra.yaml",))["seg"]
    init, main = pod["initContainers"][0], pod["containers"][0]
    assert set(init) == {"name", "image", "resources", "volumeMounts"}  # no resourceClaims field in the container
    for container in (init, main):
        assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
        assert [c["name"] for c in container["resources"]["claims"]]
    named = {c["name"] for c in pod["resourceClaims"]}
    assert {c["name"] for c in init["resources"]["claims"] + main["resources"]["claims"]} <= named


PROFILE_HELPERS = """\
{{- define "nodes.profile" -}}
{{- $profile := deepCopy (index .Values.profiles .Values.profile) -}}
{{- with .Values.resources -}}
{{- $_ := set $profile "resources" . -}}
{{- end -}}
{{- toYaml $profile -}}
{{- end }}
"""
PROFILE_TEMPLATE = """\
{{ $profile := include "nodes.profile" . | fromYaml -}}
{{ $resources := $profile.resources | default dict -}}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: nodes
spec:
  serviceName: nodes
  selector:
    matchLabels: {app: nodes}
  template:
    metadata:
      labels: {app: nodes}
    spec:
      containers:
        - name: nodes
          image: nodes:1
          {{- if not (empty $resources) }}
          resources:
            {{- with $resources }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
"""
PROFILE_VALUES = """\
profile: big
profiles:
  big:
    resources:
      limits:
        nvidia.com/gpu: 4
resources: {}
"""


def _manual(chart: Path) -> str:
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    return outcome.manual or ""


def test_resources_a_helper_picks_from_a_profile_or_an_override_are_refused_with_both_maps(tmp_path: Path) -> None:
    files = {
        "values.yaml": PROFILE_VALUES,
        "templates/_helpers.tpl": PROFILE_HELPERS,
        "templates/nodes.yaml": PROFILE_TEMPLATE,
    }
    manual = _manual(chart_with(tmp_path, "nodes", files))
    assert "templates/nodes.yaml:" in manual
    assert "the values map resources when it is set" in manual
    assert "(nvidia.com/gpu) come from profiles.big.resources" in manual
    assert "make the template take the container's resources from one values map" in manual
