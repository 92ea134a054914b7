"""A chart whose own DRA switch leaves a device-plugin request (llm-d-modelservice's accelerator.dra with the requester
values: the prefill container keeps the nvidia.com/gpu its values set beside the claim the switch adds): the switch is
not used, and when the rewrite ends as manual work the message says what turning the switch on leaves. Real renders."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

HELPERS = """\
{{- define "app.resources" -}}
limits:
  nvidia.com/gpu: {{ .gpus }}
{{- if .dra }}
claims:
  - name: gpu
{{- end }}
{{- end -}}
{{- define "app.container" -}}
- name: main
  image: busybox
  resources:
    {{- include "app.resources" . | nindent 4 }}
{{- end -}}
"""
DEPLOYMENT = deployment(
    "app",
    """\
      {{- if .Values.draEnabled }}
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: app-gpu
      {{- end }}
      containers:
        {{- include "app.container" (dict "gpus" .Values.gpus "dra" .Values.draEnabled) | nindent 8 }}
{{- if .Values.draEnabled }}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: app-gpu
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
{{- end }}
""",
)


def test_a_switch_of_the_charts_own_that_leaves_a_request_is_named_in_the_manual_message(tmp_path: Path) -> None:
    files = {
        "templates/_helpers.tpl": HELPERS,
        "templates/deploy.yaml": DEPLOYMENT,
        "values.yaml": "gpus: 1\ndraEnabled: false\n",
    }
    chart = chart_with(tmp_path, "app", files)
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")
    assert outcome.manual and not outcome.changes
    said = (
        "the chart's own DRA switch draEnabled does not migrate these values: with it on, 1 device-plugin request(s) "
        "stay: Deployment/app container main nvidia.com/gpu beside its claim (templates/deploy.yaml:17 writes it, "
        "which the switch leaves beside the claim); nor does the rewrite take the chart: "
    )
    # what the chart's own switch leaves comes first, the user's way to DRA in this chart; then the rewrite's reason
    assert outcome.manual.startswith(said), outcome.manual
    assert outcome.manual.endswith("; fix it by hand (docs/helm.md) or run fix with --chart-style engine")
    assert any(
        f.message == f"fix writes nothing for this chart: {outcome.manual}"
        for f in outcome.findings
        if f.rule == "chart-rewrite-unproven"
    )
    # the chain deploy.yaml -> app.container -> app.resources is followed to the object the workload builds
    assert (
        "take the chart: pattern D (app.resources): templates/deploy.yaml:18: the helper app.container gets `(dict "
        in (outcome.manual)
    )


def test_what_the_charts_own_switch_leaves_is_named_where_to_change_it(corpus: Path) -> None:
    """llm-d-modelservice with its requester values: the prefill container's nvidia.com/gpu comes from the values file
    (the switch adds the claim beside it), the requester's from a template line the switch does not reach. The
    message names the values lines (limits and requests) and the map to leave the key out of, and the template line
    with the values settings that render it and set its count, none of which makes it a claim, and what to change
    there by hand (was: only 'beside its claim' and the objects; then only the limits line, and the template line
    without the settings; then without the change by hand)."""
    llmd = corpus / "llm-d-modelservice"
    values = llmd / "examples" / "values-requester.yaml"
    options = ChartOptions(values_files=(values,), kube_version="1.34")
    chart = llmd / "charts" / "llm-d-modelservice"
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    line = next(
        n
        for n, text in enumerate(values.read_text().splitlines(), 1)
        if '      nvidia.com/gpu: "1"' in text and n > values.read_text().splitlines().index("prefill:")
    )
    lines = values.read_text().splitlines()
    requests = next(n for n, text in enumerate(lines, 1) if '      nvidia.com/gpu: "1"' in text and n > line)
    said = f"{values}:{line} and :{requests} set it: leave nvidia.com/gpu out of prefill.containers[0].resources"
    assert said in outcome.manual, outcome.manual
    template = (chart / "templates" / "decode-requester-replicaset.yaml").read_text().splitlines()
    at = next(n for n, text in enumerate(template, 1) if "nvidia.com/gpu:" in text)
    enable = next(n for n, text in enumerate(lines, 1) if text == "  enable: true")
    assert f"(templates/decode-requester-replicaset.yaml:{at} writes it, which the switch does not reach; " in (
        outcome.manual
    )
    assert f"{values}:{enable} requester.enable: true keeps this device request" in outcome.manual
    assert "no values setting makes that line a claim; by hand: write that line only under `{{- if not " in (
        outcome.manual
    )
    assert "give container inference-server a claim of its own in resources.claims" in outcome.manual
    # the role's copy of the switch moves the prefill pods alone: the global one would turn the decode text too
    assert (
        "; the switch also goes per object: prefill.accelerator.dra=true renders claims in "
        "Deployment/release-name-llm-d-modelservice-prefill alone, every other object as it was; "
    ) in outcome.manual


def test_a_device_request_held_as_text_is_named_beside_what_the_switch_leaves(corpus: Path) -> None:
    """llm-d-modelservice's requester ReplicaSet holds its decode containers, nvidia.com/gpu with them, in the
    `dual-pod.llm-d.ai/server-patch` annotation, which the chart's own switch writes its claims into and the manifest
    migration leaves as text. Was: the message named only the two requests left, as if changing those would do. Now it
    names the annotation too and says the user decides what the pods made from it ask for."""
    llmd = corpus / "llm-d-modelservice"
    options = ChartOptions(values_files=(llmd / "examples" / "values-requester.yaml",), kube_version="1.34")
    chart = llmd / "charts" / "llm-d-modelservice"
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    held = "ReplicaSet/release-name-llm-d-modelservice-decode dual-pod.llm-d.ai/server-patch holds a device request"
    assert held in outcome.manual, outcome.manual
    # what the chart's switch does to that text, read from its render: it names a claim no pod entry declares
    assert (
        "which the manifest migration leaves as it is while with the switch on the chart writes claims into it "
        "(nvidia-decode-claim, which neither that text nor the pod spec around it declares in resourceClaims): keep "
        "the device-plugin requests and serve them with a DeviceClass with extendedResourceName (--strategy "
        "extended-resource, Kubernetes 1.34+), or migrate by hand, deciding what the pods made from that text should "
        "ask for; nor does the rewrite take the chart: "
    ) in outcome.manual, outcome.manual


# A chart whose own switch (`accelerator.dra`) turns the server containers it writes in `range` to claims, and a
# requester Deployment that writes its `nvidia.com/gpu` itself, which the switch does not reach (llm-d-modelservice's
# shape with values that leave the prefill key out, as its values.yaml asks with the switch on).
RANGE_HELPERS = """\
{{- define "demo.container" -}}
- name: {{ .item.name }}
  image: busybox
  resources:
    {{- if .Values.accelerator.dra }}
    claims:
      - name: gpu
    {{- else }}
    limits:
      nvidia.com/gpu: {{ .item.gpus }}
    {{- end }}
{{- end -}}
"""
SERVERS = deployment(
    "demo-servers",
    """\
      {{- if .Values.accelerator.dra }}
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: demo-gpu
      {{- end }}
      containers:
        {{- range .Values.servers }}
        {{- include "demo.container" (dict "item" . "Values" $.Values) | nindent 8 }}
        {{- end }}
{{- if .Values.accelerator.dra }}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: demo-gpu
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
{{- end }}
""",
)
# the requester also holds the servers' containers as text, a pod spec patch another controller applies (llm-d's
# `dual-pod.llm-d.ai/server-patch`), written by the same helper: the switch writes its claims there too
REQUESTER = """\
{{- if .Values.requester.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo-requester
spec:
  selector:
    matchLabels: {app: demo-requester}
  template:
    metadata:
      labels: {app: demo-requester}
      annotations:
        example.com/server-patch: |
          spec:
            containers:
              {{- range .Values.servers }}
              {{- include "demo.container" (dict "item" . "Values" $.Values) | nindent 14 }}
              {{- end }}
    spec:
      containers:
        - name: requester
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.requester.gpus }}
{{- end }}
"""
RANGE_VALUES = """\
accelerator:
  dra: false
servers:
  - name: server
    gpus: 1
requester:
  enabled: true
  gpus: 1
"""


def _range_chart(tmp_path: Path) -> Path:
    files = {
        "templates/_helpers.tpl": RANGE_HELPERS,
        "templates/servers.yaml": SERVERS,
        "templates/requester.yaml": REQUESTER,
        "values.yaml": RANGE_VALUES,
    }
    return chart_with(tmp_path, "demo", files)


def test_a_switch_that_keeps_one_request_the_migration_moves_is_not_used_however_many_it_moves(tmp_path: Path) -> None:
    """The switch moves the servers' request and keeps the requester's, one of two: it was used, fix wrote
    `accelerator.dra: true`, called the chart proven and marked the requester's request fixed (exit 0) while the
    rewritten values still render it on the device plugin. Now the chart is manual work, nothing is written, the
    message opens with the request the switch keeps and its template line, then the text it writes a claim into, and
    lint suggests no setting."""
    chart = _range_chart(tmp_path)
    mine = tmp_path / "mine.yaml"
    mine.write_text("servers:\n  - name: server\n    gpus: 1\n")
    options = ChartOptions(values_files=(mine,), kube_version="1.34")
    settings, target = Settings(kube_version="1.34"), Target.parse("1.34")
    outcome = run_chart(chart, options, load_rules(), settings, target, "fix")
    assert outcome.manual and not outcome.changes, outcome.manual
    line = next(n for n, text in enumerate(REQUESTER.splitlines(), 1) if "nvidia.com/gpu:" in text)
    said = (
        "the chart's own DRA switch accelerator.dra does not migrate these values: with it on, 1 device-plugin "
        "request(s) stay: Deployment/demo-requester container requester nvidia.com/gpu "
        f"(templates/requester.yaml:{line} writes it, which the switch does not reach"
    )
    assert outcome.manual.startswith(said), outcome.manual
    # the text the switch writes its claim into, and the claim no pod entry declares, read from its render
    text = (
        "; and Deployment/demo-requester example.com/server-patch holds a device request as text (a pod spec in a "
        "string), which the manifest migration leaves as it is while with the switch on the chart writes claims into "
        "it (gpu, which neither that text nor the pod spec around it declares in resourceClaims): keep the "
        "device-plugin requests and serve them with a DeviceClass with extendedResourceName"
    )
    assert text in outcome.manual, outcome.manual
    requests = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    assert {f.name for f in requests} == {"demo-servers", "demo-requester"}
    assert not any(f.fixed for f in outcome.findings)
    linted = run_chart(chart, options, load_rules(), settings, target, "lint")
    assert not [f for f in linted.findings if f.rule == "chart-dra-switch"]


def test_the_same_switch_is_used_when_it_moves_every_request(tmp_path: Path) -> None:
    """The control: the same chart with the requester off, every request the switch's to move: fix turns it on in the
    values file named, and the requests are fixed."""
    chart = _range_chart(tmp_path)
    mine = tmp_path / "mine.yaml"
    mine.write_text("requester:\n  enabled: false\n")
    options = ChartOptions(values_files=(mine,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.manual, outcome.manual
    assert [c.after for c in outcome.changes] == ["requester:\n  enabled: false\naccelerator:\n  dra: true\n"]
    assert all(f.fixed for f in outcome.findings if f.rule == "legacy-device-request")


# The same shape with a per-object copy of the switch (llm-d's `prefill.accelerator.dra` beside `accelerator.dra`, which
# its values.yaml documents in comments only): `servers.accelerator.dra` turns the servers alone.
ROLE_HELPERS = """\
{{- define "demo.serversDra" -}}
{{- $dra := .Values.accelerator.dra -}}
{{- with .Values.servers.accelerator }}{{ if hasKey . "dra" }}{{ $dra = .dra }}{{ end }}{{ end -}}
{{- if $dra }}true{{ end -}}
{{- end -}}
{{- define "demo.container" -}}
- name: {{ .item.name }}
  image: busybox
  resources:
    {{- if include "demo.serversDra" . }}
    claims:
      - name: gpu
    {{- else }}
    limits:
      nvidia.com/gpu: {{ .item.gpus }}
    {{- end }}
{{- end -}}
"""
ROLE_SERVERS = SERVERS.replace("if .Values.accelerator.dra", 'if include "demo.serversDra" .').replace(
    "range .Values.servers ", "range .Values.servers.containers "
)
ROLE_REQUESTER = "{{- if .Values.requester.enabled }}\n" + deployment(
    "demo-requester",
    """\
      containers:
        - name: requester
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.requester.gpus }}
{{- end }}
""",
)


def test_a_per_object_copy_of_the_switch_that_turns_some_objects_alone_is_named(tmp_path: Path) -> None:
    """The switch's path under a map that sets a device count (`servers.accelerator.dra`, in no values file) renders
    the servers' claims and leaves the requester as it was: the manual message names it, what the user can move
    today through the chart's own switch; a copy that changes nothing (`requester.accelerator.dra`) is not named."""
    files = {
        "templates/_helpers.tpl": ROLE_HELPERS,
        "templates/servers.yaml": ROLE_SERVERS,
        "templates/requester.yaml": ROLE_REQUESTER,
        "values.yaml": RANGE_VALUES.replace("servers:\n  - name: server\n    gpus: 1\n", ""),
    }
    chart = chart_with(tmp_path, "demo", files)
    mine = tmp_path / "mine.yaml"
    mine.write_text("servers:\n  containers:\n    - name: server\n      gpus: 1\n")
    options = ChartOptions(values_files=(mine,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert outcome.manual and not outcome.changes, outcome.manual
    said = (
        "; the switch also goes per object: servers.accelerator.dra=true renders claims in Deployment/demo-servers "
        "alone, every other object as it was; nor does the rewrite take the chart"
    )
    assert said in outcome.manual, outcome.manual
    assert "requester.accelerator.dra" not in outcome.manual
