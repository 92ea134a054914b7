"""Packed libraries whose pods get their claims from values only through the chart's own templates, and one recorded
without any values place (rules/library-values.json). Tiny libraries of the test's own, packed in the test, in the
shapes of DND-IT's common 1.13.0 (one include renders every object, a container's resources written whole from
`container.resources`, the top-level `resources` rendered as the pod's own from Kubernetes 1.34, tolerations from
`scheduling.tolerations`), TrueCharts' common 23.0.10 (the container's resources written key by key) and gimlet's
onechart (a library's pod spec with the container's resources whole, and a values map of the chart's own merged over
it); renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import assert_second_fix_quiet, chart_with, deployment, fix_chart, packed_chart, with_original

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LOADER = """\
{{- define "common.loader.generate" -}}
{{- if ne .Values.workload.type "none" }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: x}
  template:
    {{- include "common.podTemplate" (dict "root" . "config" dict) | nindent 4 }}
{{- end }}
{{- range $name, $job := .Values.cronjobs }}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  schedule: {{ $job.schedule | quote }}
  jobTemplate:
    spec:
      template:
        {{- include "common.podTemplate" (dict "root" $ "config" $job) | nindent 8 }}
{{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  ports:
    - port: 80
{{- end -}}
"""
POD = """\
{{- define "common.podTemplate" -}}
{{- $root := .root -}}
{{- $config := .config -}}
metadata:
  labels: {app: x}
spec:
  {{- with $config.tolerations | default $root.Values.scheduling.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if and $root.Values.resources (semverCompare ">=1.34-0" $root.Capabilities.KubeVersion.Version) }}
  resources:
    {{- toYaml $root.Values.resources | nindent 4 }}
  {{- end }}
  {{- $container := ternary $root.Values $config (empty $config) }}
  containers:
    {{- include "common.container" (dict "container" $container "root" $root) | nindent 4 }}
  {{- if $config }}
  restartPolicy: OnFailure
  {{- end }}
{{- end -}}
"""
CONTAINER = """\
{{- define "common.container" -}}
{{- $container := .container -}}
{{- $root := .root -}}
{{- $pod := semverCompare ">=1.34-0" $root.Capabilities.KubeVersion.Version -}}
- name: main
  image: busybox
  {{- $top := ternary dict ($container.resources | default $root.Values.resources) $pod -}}
  {{- with (default dict $container.container).resources | default $top }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
"""
DND_VALUES = """\
workload:
  type: deployment
# Pod-level resources (Kubernetes 1.34+)
resources:
  requests:
    cpu: 100m
container:
  resources: {}
scheduling:
  tolerations: []
cronjobs: {}
"""


def _chart(root: Path, name: str, version: str, library: dict[str, str], files: dict[str, str]) -> Path:
    """A chart of `files` whose dependency `name` (a library chart of `library`'s templates) is packed in charts/."""
    chart = chart_with(root, "app", files)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\n"
        f"dependencies:\n  - name: {name}\n    version: {version}\n    repository: https://example.com/charts\n"
    )
    (chart / "charts").mkdir()
    meta = {"Chart.yaml": f"apiVersion: v2\nname: {name}\ntype: library\nversion: {version}\n"}
    (chart / f"charts/{name}-{version}.tgz").write_bytes(packed_chart(name, {**meta, **library}))
    return chart


def _dnd(root: Path) -> Path:
    library = {"templates/_loader.tpl": LOADER, "templates/_pod.tpl": POD, "templates/_container.tpl": CONTAINER}
    files = {"templates/common.yaml": '{{- include "common.loader.generate" . }}\n', "values.yaml": DND_VALUES}
    return _chart(root, "common", "1.13.0", library, files)


def _render(chart: Path, *values: Path) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=values, kube_version="1.34")
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def _pods(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each workload's pod spec by kind and name (a CronJob's under its job template)."""
    out = {}
    for d in docs:
        spec = d.get("spec") or {}
        template = (spec.get("jobTemplate") or {}).get("spec", spec).get("template")
        if template:
            out[f"{d['kind']}/{d['metadata']['name']}"] = template["spec"]
    return out


def _counts(docs: list[dict[str, Any]]) -> dict[str, int]:
    return {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_a_dnd_it_library_gets_its_loader_wrapped_and_the_toleration_in_its_scheduling_list(tmp_path: Path) -> None:
    """Was manual work ('... renders no pod resourceClaims ... the rewritten chart has none' of the toleration): the
    library renders the pod's tolerations from `scheduling.tolerations`, which the DRA values now set; the pod's
    own `resources` (cpu, from the top-level map) stays where the library renders it, the claim in the container's."""
    chart = _dnd(tmp_path)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("container:\n  resources:\n    limits:\n      memory: 1Gi\n      nvidia.com/gpu: 1\n")
    archive = (chart / "charts/common-1.13.0.tgz").read_bytes()
    before, plugin = _render(chart), _render(chart, gpu)
    fix_chart(chart, values=(gpu,))
    assert (chart / "charts/common-1.13.0.tgz").read_bytes() == archive
    assert '{{- include "common.loader.generate" . }}' in (chart / "templates/common.yaml").read_text()
    assert _render(chart) == before and _render(chart, gpu) == plugin  # the switch off: as before
    dra = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert dra["scheduling"]["tolerations"] == [GPU_TOLERATION] and "tolerations" not in dra
    docs = _render(chart, *with_original(tmp_path / "gpu-dra.yaml"))
    pod = _pods(docs)["Deployment/release-name"]
    assert list(_counts(docs).values()) == [1]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] in _counts(docs)
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert pod["resources"] == {"requests": {"cpu": "100m"}} and pod["tolerations"] == [GPU_TOLERATION]
    values = (chart / "values.yaml").read_text()
    assert "container.resources.claims\nresourceClaims: []" in values  # not the pod's `resources`
    assert_second_fix_quiet(chart, "-f", str(gpu))


def test_a_dnd_it_cronjob_gets_the_claims_under_its_job_template(tmp_path: Path) -> None:
    """The wrapped include sets resourceClaims in a CronJob's pod too (spec.jobTemplate.spec.template.spec); the
    Service it renders beside stays as it was."""
    chart = _dnd(tmp_path)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "workload:\n  type: none\ncronjobs:\n  train:\n    schedule: '0 3 * * *'\n"
        "    container:\n      resources:\n        limits:\n          nvidia.com/gpu: 2\n"
    )
    plugin = _render(chart, gpu)
    fix_chart(chart, values=(gpu,))
    docs = _render(chart, *with_original(tmp_path / "gpu-dra.yaml"))
    pod = _pods(docs)["CronJob/release-name-train"]
    assert list(_counts(docs).values()) == [2]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] in _counts(docs)
    assert pod["containers"][0]["resources"]["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
    assert [d for d in docs if d["kind"] == "Service"] == [d for d in plugin if d["kind"] == "Service"]
    assert_second_fix_quiet(chart, "-f", str(gpu))


TC_LIBRARY = {
    # a define that includes the resources define and writes `resources:`, in a file read first: not the one to copy
    "templates/class/_cluster.tpl": """\
{{- define "tc.v1.common.class.cluster" -}}
resources:
  {{- include "tc.v1.common.lib.container.resources" . | nindent 2 }}
{{- end -}}
""",
    "templates/lib/_pod.tpl": """\
{{- define "tc.v1.common.lib.workload.pod" -}}
serviceAccountName: default
containers:
  - name: main
    image: busybox
    resources:
      {{- include "tc.v1.common.lib.container.resources" . | nindent 6 }}
{{- end -}}
""",
    "templates/lib/_resources.tpl": """\
{{- define "tc.v1.common.lib.container.resources" -}}
requests:
  cpu: {{ .Values.resources.requests.cpu }}
  memory: {{ .Values.resources.requests.memory }}
limits:
  {{- range $k, $v := (omit .Values.resources.limits "cpu" "memory") }}
  {{ $k }}: {{ $v }}
  {{- end }}
{{- end -}}
""",
    "templates/_all.tpl": '{{- define "tc.v1.common.loader.all" -}}\n'
    + deployment("{{ .Release.Name }}", '      {{- include "tc.v1.common.lib.workload.pod" . | nindent 6 }}\n', "x")
    + "{{- end -}}\n",
}


def test_a_truecharts_library_is_recorded_without_a_values_place_and_the_refusal_names_its_defines(
    tmp_path: Path,
) -> None:
    """Was: '... overriding it from the chart means a define ... for tc.v1.common.class.cnpg.cluster' (the first
    define read that includes the resources define), and no record of what the library lacks."""
    values = "resources:\n  requests: {cpu: 10m, memory: 50Mi}\n  limits:\n    nvidia.com/gpu: 1\n"
    files = {"templates/common.yaml": '{{ include "tc.v1.common.loader.all" . }}\n', "values.yaml": values}
    chart = _chart(tmp_path, "common", "23.0.10", TC_LIBRARY, files)
    kube = "1.34"
    outcome = run_chart(
        chart, ChartOptions(kube_version=kube), load_rules(), Settings(kube_version=kube), Target.parse(kube), "fix"
    )
    assert not outcome.proven and not outcome.changes
    assert (
        "its define tc.v1.common.lib.workload.pod writes the pod spec from a fixed set of values, none of them "
        "resourceClaims, and takes no pod fields whole (checked in common 23.0.10, rules/library-values.json); nor "
        "resources.claims of a container: its define tc.v1.common.lib.container.resources writes only requests of "
        "cpu and memory, and limits of cpu, memory and each other key of resources.limits as a count"
    ) in outcome.manual, outcome.manual
    assert (
        "for tc.v1.common.lib.container.resources (templates/lib/_resources.tpl:1, 9 lines), "
        "tc.v1.common.lib.workload.pod (templates/lib/_pod.tpl:1, 8 lines): 17 lines copied"
    ) in outcome.manual, outcome.manual


GIMLET_LIBRARY = {
    "templates/_container.yaml": """\
{{- define "base.container.tpl" -}}
name: main
image: busybox
resources:
  {{- toYaml .Values.resources | nindent 2 }}
{{- end -}}
""",
    "templates/_podSpec.yaml": """\
{{- define "base.podSpec.tpl" -}}
containers:
  {{- $container := mergeOverwrite (include "base.container.tpl" . | fromYaml) .Values.container }}
  - {{ toYaml $container | nindent 4 }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
""",
}
GIMLET_DEPLOYMENT = deployment(
    "{{ .Release.Name }}",
    """\
      {{- $podSpecTpl := include "base.podSpec.tpl" . | fromYaml }}
      {{- $podSpec := mergeOverwrite $podSpecTpl .Values.podSpec }}
      {{- toYaml $podSpec | nindent 6 }}
""",
    "x",
)


def test_a_pod_spec_merged_from_a_values_map_takes_the_claims_where_no_template_reads_the_resources_map(
    tmp_path: Path,
) -> None:
    """Was manual work: 'the rewritten chart renders differently from the migrated original rendering: ...
    spec.template.spec.resourceClaims: expected [...], the rewritten chart has none'. The DRA values named the claims
    in a top-level `resourceClaims` beside `resources`, which no template reads (the library writes the map, the
    chart merges its `podSpec` over the pod): they go in `podSpec.resourceClaims`, found by rendering, with the
    claim templates' bare names (rendered by toYaml, not tpl), and values.yaml documents no unread key."""
    values = "resources:\n  requests:\n    cpu: 200m\ntolerations: []\ncontainer: {}\npodSpec: {}\n"
    files = {"templates/deployment.yaml": GIMLET_DEPLOYMENT, "values.yaml": values}
    chart = _chart(tmp_path, "base", "0.7.0", GIMLET_LIBRARY, files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    plugin = _render(chart, gpu)
    fix_chart(chart, values=(gpu,))
    assert _render(chart, gpu) == plugin
    dra = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert "resourceClaims" not in dra and dra["podSpec"]["resourceClaims"][0]["name"] == "gpu"
    assert "resourceClaims" not in yaml.safe_load((chart / "values.yaml").read_text())
    docs = _render(chart, *with_original(tmp_path / "gpu-dra.yaml"))
    pod = _pods(docs)["Deployment/release-name"]
    assert list(_counts(docs).values()) == [1]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] in _counts(docs)
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert GPU_TOLERATION in pod["tolerations"]
    assert_second_fix_quiet(chart, "-f", str(gpu))
