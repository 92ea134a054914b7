"""Containers a template writes whole from values (NVIDIA's NVCF charts, Wikimedia's KServe charts), and a refusal
beside them.

- An init container that is an item of a values list written whole (`- {{- toYaml . | nindent 8 }}` in a `range` over
  `$app.initContainers`, inside `with`), beside a main container with its own `resources:`. Was: not proven, the
  pod's resourceClaims the DRA values put beside the item's `resources` were written into the init container as a
  field of its own. Now the item is written without those keys (`omit`), its claims join the pod's, and the pod's
  list is rendered after the `range` over the containers, not inside it.
- A container whose fields are a map variable written whole (`toYaml $container`, the variable the `merge` of an
  item's and the defaults' maps), or `toYaml .` in a `with` of a values map. Was: "another template shape" (F). Now
  the same pass-through, the variable's values paths read through `merge`, `get`, `default` and the `range` that sets
  the item; where the pod's keys are written whole too, from a map of the same item, the DRA values alone carry the
  claims (no template change); where they come from a map of another item, a list the DRA values add beside it fails
  the render with the line, not a second key.
- A container whose resources a helper takes from the selected profile's map unless `resources` is set, where two
  profiles hold that same map (which one the helper took cannot be told from the render): refused with both maps
  named and what to change (was: "not passed through as is", naming only the empty override). With one such map the
  claims go beside it (test_helm_profile_fallback.py).

Renders are real; the proofs (L) and (D) are fix's own, and the DRA renders are checked here too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

APPS = """\
{{- $top := .Values }}
{{- range $name, $app := $top.apps }}
---
""" + deployment(
    "{{ $name }}",
    """\
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
""",
)
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
    twin = "  twin:\n    resources:\n      limits:\n        nvidia.com/gpu: 4\n"
    files["values.yaml"] = PROFILE_VALUES.replace("resources: {}\n", twin + "resources: {}\n")
    manual = _manual(chart_with(tmp_path, "nodes", files))
    assert "templates/nodes.yaml:" in manual
    assert "the values map resources when it is set" in manual
    assert "(nvidia.com/gpu) come from profiles.big.resources" in manual
    assert "make the template take the container's resources from one values map" in manual


MERGED = """\
{{- range $name, $svc := .Values.services }}
---
""" + deployment(
    "{{ $name }}",
    """\
      {{- POD }}
      containers:
      - name: {{ $name }}
        image: {{ $svc.image }}
        env:
        {{- range concat ($.Values.defaults.env | default list) ($svc.env | default list) }}
        - name: {{ .name }}
          value: {{ .value | quote }}
        {{- end }}
        {{- $container := merge ($svc.container | default dict) ($.Values.defaults.container | default dict) }}
        {{- toYaml $container | nindent 8 }}
{{- end }}
""",
)
# the pod's keys: none from values, a map of the same item merged over the defaults', or one map for every pod
NO_POD = "$none := 0"
ITEM_POD = """$settings := get $svc "pod" | default dict }}
      {{- $pod := merge ($settings.options | default dict) ($.Values.defaults.options | default dict) }}
      {{- toYaml $pod | nindent 6"""
SHARED_POD = """with $.Values.podOptions }}
      {{- toYaml . | nindent 6 }}
      {{- end"""
MERGED_VALUES = """\
defaults:
  container: {}
  options: {}
  env:
    - {name: MODE, value: serve}
podOptions: {}
services:
  tone:
    image: tone:1
    container:
      resources:
        limits:
          amd.com/gpu: "1"
"""
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def _merged_chart(root: Path, pod: str, values: str = MERGED_VALUES) -> Path:
    template = MERGED.replace("POD", pod)
    return chart_with(root, "svc", {"values.yaml": values, "templates/svc.yaml": template})


def _dra_pod(chart: Path, *more: Path) -> dict:
    return _pods(chart, (chart / "values-dra.yaml", *more))["tone"]


def test_a_container_written_whole_from_a_merged_map_gets_the_pass_through(tmp_path: Path) -> None:
    chart = _merged_chart(tmp_path, NO_POD)
    before = _pods(chart)
    fix_chart(chart)
    assert 'toYaml (omit $container "resourceClaims"' in (chart / "templates/svc.yaml").read_text()
    assert _pods(chart) == before
    pod = _dra_pod(chart)
    container = pod["containers"][0]
    assert "resourceClaims" not in container and "amd.com/gpu" not in container["resources"].get("limits", {})
    assert [c["name"] for c in pod["resourceClaims"]] == [c["name"] for c in container["resources"]["claims"]]
    assert container["env"] == [{"name": "MODE", "value": "serve"}]


def test_pod_keys_from_a_map_of_the_same_item_take_the_claims_in_values_alone(tmp_path: Path) -> None:
    values = MERGED_VALUES + "    pod:\n      options:\n        tolerations:\n" + f"          - {TOLERATION}\n"
    chart = _merged_chart(tmp_path, ITEM_POD, values)
    template = (chart / "templates/svc.yaml").read_text()
    fix_chart(chart)
    assert (chart / "templates/svc.yaml").read_text() == template  # the DRA values carry it all
    pod = _dra_pod(chart)
    assert TOLERATION in pod["tolerations"] and any(t.get("key") == "amd.com/gpu" for t in pod["tolerations"])
    assert pod["resourceClaims"] and pod["containers"][0]["resources"]["claims"]


def test_a_list_the_pod_writes_from_another_map_fails_the_dra_render_at_its_line(tmp_path: Path) -> None:
    chart = _merged_chart(tmp_path, SHARED_POD)
    fix_chart(chart)
    assert _dra_pod(chart)["resourceClaims"]
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"podOptions": {"tolerations": [TOLERATION]}}))
    line = next(n for n, text in enumerate(MERGED.splitlines(), 1) if "POD" in text) + 1
    with pytest.raises(HelmError) as refused:
        _dra_pod(chart, mine)  # two `tolerations:` keys: YAML would keep one list
    assert f"templates/svc.yaml:{line} writes the pod's tolerations from $.Values.podOptions" in str(refused.value)


def test_a_container_written_whole_in_a_with_gets_the_pass_through(tmp_path: Path) -> None:
    template = deployment(
        "app",
        """\
      containers:
      - name: main
        image: main:1
        {{- with .Values.container }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
""",
    )
    values = "container:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "app", {"values.yaml": values, "templates/app.yaml": template})
    fix_chart(chart)
    pod = _pods(chart, (chart / "values-dra.yaml",))["app"]
    assert set(pod["containers"][0]) == {"name", "image", "resources"}
    assert pod["resourceClaims"]
