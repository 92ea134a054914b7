"""Defects of the pass-through rewrite (patterns B and C) seen on real charts: a values file that swaps the chart's
default device for another vendor's with a null, a pod spec written by a helper the workload includes, and a chart
whose own check reads the device count.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

NVIDIA_DEFAULT = 'resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: "1"\n'
# the chart's commented alternative as a values file: a null deletes the NVIDIA default, the AMD key takes its place
AMD = 'resources:\n  limits:\n    nvidia.com/gpu: null\n    amd.com/gpu: "2"\n'


def test_a_null_that_deletes_the_default_device_key_is_passed_through(tmp_path: Path) -> None:
    """A `-f` file sets the chart's default `nvidia.com/gpu` to null and asks for `amd.com/gpu`: Helm deletes the
    null key, so the map still reaches the pod as is and the rewrite is proven, its DRA variant asking for the two
    AMD GPUs and no NVIDIA one (was: manual, 'the values map resources is not passed through as is')."""
    chart = chart_with(tmp_path, "server", {"values.yaml": NVIDIA_DEFAULT, "templates/server.yaml": TOYAML_SERVER})
    amd = tmp_path / "amd.yaml"
    amd.write_text(AMD)
    fix_chart(chart, values=(amd,))
    out, counts, pods = dra_render(chart, tmp_path / "amd-dra.yaml")
    (limits,) = [c["resources"]["limits"] for c in pods["release-name-server"]["containers"]]
    assert limits == {"cpu": 2}
    (claim,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.amd.com"
    assert list(counts.values()) == [2]


# a pod-spec helper shared by the chart's workloads: given the root, the item and its profile (looked up by name in
# values), it writes the containers with the item's own resources, else the profile's
POD_HELPER = """\
{{- define "batch.podSpec" -}}
{{- $root := .root -}}
{{- $obj := .obj -}}
{{- $profile := .profile -}}
serviceAccountName: {{ $root.Release.Name }}
{{- with $obj.initContainers }}
initContainers:
{{ toYaml . | indent 2 }}
{{- end }}

containers:
  - name: {{ $obj.name }}
    image: {{ $obj.image }}
{{- if $obj.resources }}
    resources:
{{ toYaml $obj.resources | indent 6 }}
{{- else if $profile.resources }}
    resources:
{{ toYaml $profile.resources | indent 6 }}
{{- end }}
{{- end -}}
"""
CRONJOB = """\
{{- $root := . -}}
{{- range $idx, $task := .Values.tasks }}
{{- $profile := index $root.Values.profiles $task.profile }}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ $root.Release.Name }}-{{ $task.name }}
spec:
  schedule: {{ quote $task.schedule }}
  jobTemplate:
    spec:
      template:
        metadata:
          labels:
{{ toYaml $task.labels | indent 12 }}
        spec:
{{ include "batch.podSpec" (dict "root" $root "obj" $task "profile" $profile) | indent 10 }}
{{- end }}
"""
PROFILES = """\
tasks: []
profiles:
  small:
    resources:
      limits:
        cpu: "1"
  gpu:
    resources:
      limits:
        cpu: "4"
        nvidia.com/gpu: 1
"""
NIGHTLY = """\
tasks:
  - name: nightly
    image: batch:1
    profile: gpu
    schedule: '0 1 * * *'
    labels: {app: nightly}
"""


def test_a_map_passed_into_a_pod_spec_helper_gets_its_claims_in_the_helper(tmp_path: Path) -> None:
    """The CronJob's pod spec is written by a helper that takes the map of a profile the task names: the pod's
    `resourceClaims` go into that helper, beside its containers, read from the profile the container's resources
    come from and rendered with the helper's root context (was: manual, the proof found the CronJob without its
    resourceClaims)."""
    files = {"values.yaml": PROFILES, "templates/cronjob.yaml": CRONJOB, "templates/_pod.tpl": POD_HELPER}
    chart = chart_with(tmp_path, "batch", files)
    nightly = tmp_path / "nightly.yaml"
    nightly.write_text(NIGHTLY)
    fix_chart(chart, values=(nightly,))
    helper = (chart / "templates/_pod.tpl").read_text()
    assert "$obj.resourceClaims" not in helper  # the task's own map asks for no device: only the profile's counts
    out, counts, _ = dra_render(chart, tmp_path / "nightly-dra.yaml")
    (job,) = [d for d in out if d["kind"] == "CronJob"]
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] in counts
    assert list(counts.values()) == [1]


# a chart that checks the per-node GPU count is set (read through `with`s of the map) before it renders its pods
CHECKED = """\
{{- define "engine.validate" -}}
{{- $gpu := "" -}}
READ
{{- if not $gpu -}}
{{- fail "multi-node needs resources.limits.\\"nvidia.com/gpu\\" set to the GPUs of each node" -}}
{{- end -}}
{{- end }}
"""
WITHS = "{{- with .Values.resources -}}{{- with .limits -}}"
ASSIGNED = WITHS + '{{- $gpu = index . "nvidia.com/gpu" | default "" -}}{{- end -}}{{- end -}}'
TESTED = WITHS + '{{- if hasKey . "nvidia.com/gpu" -}}{{- $gpu = "set" -}}{{- end -}}{{- end -}}{{- end -}}'
NODES = "multiNode: true\nresources:\n  limits:\n    nvidia.com/gpu: 8\n"


def _checked_chart(root: Path, read: str) -> tuple[Path, Path]:
    files = {
        "values.yaml": "resources: {}\n",
        "templates/server.yaml": (
            '{{- if .Values.multiNode }}{{ include "engine.validate" . }}{{ end }}\n' + TOYAML_SERVER
        ),
        "templates/_helpers.tpl": CHECKED.replace("READ", read),
    }
    nodes = root / "nodes.yaml"
    nodes.write_text(NODES)
    return chart_with(root, "engine", files), nodes


def test_a_count_assigned_inside_withs_of_the_map_reads_the_dra_counts(tmp_path: Path) -> None:
    """The chart's own check assigns the device count inside `with`s of the map and its section and fails without
    it: the rewrite assigns it again from `deviceCounts`, which the DRA values set to the count the claim asks for,
    so the chart renders with them and the check still fails with neither (was: manual, the rewritten chart did not
    render)."""
    chart, nodes = _checked_chart(tmp_path, ASSIGNED)
    fix_chart(chart, values=(nodes,))
    _, counts, pods = dra_render(chart, tmp_path / "nodes-dra.yaml")
    assert list(counts.values()) == [8]
    assert "nvidia.com/gpu" not in pods["release-name-server"]["containers"][0]["resources"].get("limits", {})
    with pytest.raises(HelmError, match="set to the GPUs of each node"):
        render_chart(chart, RenderOptions(set_values=("multiNode=true",)))


def test_a_check_that_reads_the_device_key_through_with_is_named_with_its_message(tmp_path: Path) -> None:
    """A check that tests the device key inside `with`s of the map (no assignment fix can repeat): the DRA values,
    which move the count into a claim, cannot satisfy it. The manual message names the helper line that reads the
    key and shows the chart's `fail` message, whose quotes the template escapes (was: 'Helm's message is not shown',
    the line never named)."""
    chart, nodes = _checked_chart(tmp_path, TESTED)
    outcome = run_chart(
        chart, ChartOptions(values_files=(nodes,)), load_rules(), Settings(), Target.parse("1.36"), "fix"
    )
    assert not outcome.proven
    assert outcome.manual.startswith('templates/_helpers.tpl:3 reads resources.limits["nvidia.com/gpu"] itself')
    assert 'multi-node needs resources.limits."nvidia.com/gpu" set to the GPUs of each node' in outcome.manual


# the container takes the map whole; the chart also digs the device key out of it to set a sidecar's env
DUG = """\
{{- $res := .Values.resources | default dict }}
{{- $gpu := dig "limits" "nvidia.com/gpu" "" $res }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
        - name: telemetry
          image: telemetry:1
          {{- if $gpu }}
          env:
            - {name: NVIDIA_VISIBLE_DEVICES, value: all}
          {{- end }}
"""


def test_a_device_key_dug_out_of_the_map_reads_the_count_kept_beside_it(tmp_path: Path) -> None:
    """A template that reads the device key with `dig "limits" "<key>"` of a variable holding the map (a sidecar's
    env) would render differently once the DRA values drop the key: the read takes the count the DRA values keep in
    `deviceCounts` first (was: manual work naming that line, "reads resources.limits["nvidia.com/gpu"] itself")."""
    chart = chart_with(tmp_path, "server", {"values.yaml": "resources: {}\n", "templates/server.yaml": DUG})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(NODES.replace("multiNode: true\n", ""))
    fix_chart(chart, "1.36", (gpu,))
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    server, telemetry = pods["release-name-server"]["containers"]
    assert telemetry["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    assert server["resources"] == {"claims": [{"name": "gpu"}]} and list(counts.values()) == [8]


def test_the_pods_claims_render_when_the_map_s_first_container_is_an_init_container_under_an_if(
    tmp_path: Path,
) -> None:
    """The map goes into an init container the chart renders only `if .Values.models` (a model puller) and into the
    main container: the pod's `resourceClaims` go before the main `containers:`, outside that `if`, so they render
    with no models too (was: manual, 'the rewritten chart renders differently ...: resourceClaims ... the rewritten
    chart has none')."""
    puller = """\
      {{- if .Values.models }}
      # pulls the models before the server starts
      initContainers:
        - name: pull
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- end }}
"""
    template = TOYAML_SERVER.replace("      containers:\n", puller + "      containers:\n", 1)
    values = "models: []\nresources:\n  limits:\n    cpu: 1\n"
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": template})
    (tmp_path / "gpu.yaml").write_text('resources:\n  limits:\n    nvidia.com/gpu: "1"\n')
    outcome = fix_chart(chart, values=(tmp_path / "gpu.yaml",))
    assert outcome.proven, outcome.report()
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert list(counts.values()) == [1]
    claims = pods["release-name-server"]["resourceClaims"]
    assert [c["name"] for c in claims] == ["gpu"] and "initContainers" not in pods["release-name-server"]
    assert pods["release-name-server"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
