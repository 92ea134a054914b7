"""Pattern E, the device resource *name* from values (Intel's edge-ai charts: `{{ $.Values.gpu.type }}:
{{ $.Values.gpu.count }}` with the type defaulting to `gpu.intel.com/i915`; charts with `{{ .Values.gpuResourceName |
default "nvidia.com/gpu" }}`): the pattern-A rewrite, where what the migration derives from the name (the CEL
selector, the toleration key) is looked up in the claim template by the name's value, among the resources its rule
pack names; a name the lookup does not know fails the render with a clear message. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

INTEL = deployment(
    "{{ .Release.Name }}-pipeline",
    """\
      containers:
      - name: pipeline
        image: intel/pipeline:3.0
        {{- if $.Values.gpu.enabled }}
        resources:
          limits:
            {{ $.Values.gpu.type }}: {{ $.Values.gpu.count }}
        {{- end }}
""",
)
INTEL_VALUES = 'gpu:\n  enabled: true\n  type: "gpu.intel.com/i915"\n  count: 1\n'

DEFAULTED = deployment(
    "{{ .Release.Name }}-infer",
    """\
      containers:
        - name: infer
          image: infer:1
          resources:
            limits:
              cpu: {{ .Values.cpu }}
              {{ .Values.gpuResourceName | default "nvidia.com/gpu" }}: {{ .Values.gpus }}
            requests:
              cpu: {{ .Values.cpu }}
              {{ .Values.gpuResourceName | default "nvidia.com/gpu" }}: {{ .Values.gpus }}
""",
)


@pytest.fixture(scope="module")
def intel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("pattern-e")
    chart = chart_with(root, "pipeline", {"templates/pipeline.yaml": INTEL, "values.yaml": INTEL_VALUES})
    return chart, fix_chart(chart)  # was: manual, 'pattern E (a resource name from values)'


def _on(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claim's first request and the pod, rendered with the DRA switch on and `values`."""
    file = chart.parent / "on.yaml"
    file.write_text("dra: {enabled: true}\n" + values)
    docs, _, pods = dra_render(chart, file)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"], next(iter(pods.values()))


def test_the_name_changed_to_another_resource_of_its_pack_is_proven(intel: tuple[Path, Any]) -> None:
    chart, outcome = intel
    assert 'gpu.type changed to "gpu.intel.com/xe"' in outcome.checked
    request, pod = _on(chart, "gpu: {type: gpu.intel.com/xe, count: 2}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.intel.com", 2)
    assert "'xe'" in request["selectors"][0]["cel"]["expression"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]
    assert "limits" not in pod["containers"][0]["resources"]
    request, pod = _on(chart, "")
    assert "'i915'" in request["selectors"][0]["cel"]["expression"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"]


def test_a_name_the_lookup_does_not_know_fails_with_the_way_back(intel: tuple[Path, Any]) -> None:
    """A resource the migration moves to a claim of another class (amd.com/gpu on an Intel chart)."""
    chart, _ = intel
    file = chart.parent / "unknown.yaml"
    file.write_text("dra: {enabled: true}\ngpu: {type: amd.com/gpu}\n")
    with pytest.raises(HelmError) as failed:
        render_chart(chart, RenderOptions(values_files=(file,)))
    assert "gpu.type names a device resource the chart's DRA claim does not know" in str(failed.value)
    assert "gpu.intel.com/i915, gpu.intel.com/xe" in str(failed.value)
    assert "set dra.enabled=false" in str(failed.value)
    file.write_text("dra: {enabled: false}\ngpu: {type: example.org/npu}\n")
    _, _, pods = dra_render(chart, file)
    assert pods["release-name-pipeline"]["containers"][0]["resources"]["limits"] == {"example.org/npu": 1}


@pytest.mark.parametrize("name", ["example.org/npu", "nvidia.com/gpu.shared"])
def test_a_name_the_migration_leaves_alone_keeps_its_device_plugin_request(tmp_path: Path, name: str) -> None:
    """A resource no rule pack knows, or a report-only one: `fix -` leaves its request on the device plugin, and so
    does the chart with the switch on (the proof renders such a name). Was: the render failed, 'gpuResourceName names
    a device resource the chart's DRA claim does not know'."""
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": DEFAULTED, "values.yaml": "cpu: 1\ngpus: 1\n"})
    outcome = fix_chart(chart)
    assert 'gpuResourceName changed to "example.org/accelerator"' in outcome.checked
    file = tmp_path / "other.yaml"
    file.write_text(f"dra: {{enabled: true}}\ngpuResourceName: {name}\ngpus: 2\n")
    docs, counts, pods = dra_render(chart, file)
    assert not counts
    pod = pods["release-name-infer"]
    assert "resourceClaims" not in pod and "tolerations" not in pod
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 1, name: 2}, "requests": {"cpu": 1, name: 2}}
    file.write_text("dra: {enabled: true}\ngpus: 2\n")  # the default name still takes the claim
    docs, counts, pods = dra_render(chart, file)
    assert list(counts.values()) == [2]
    assert pods["release-name-infer"]["containers"][0]["resources"] == {
        "limits": {"cpu": 1},
        "requests": {"cpu": 1},
        "claims": [{"name": "gpu"}],
    }


def test_a_name_the_lookup_does_not_know_may_use_an_existing_claim_template(intel: tuple[Path, Any]) -> None:
    """The user's own claim template (dra.existingClaimTemplate) may request any device: was, the render failed
    'gpu.type names a device resource the chart's DRA claim does not know' although the chart's claim is not used."""
    chart, _ = intel
    file = chart.parent / "mine.yaml"
    file.write_text("dra: {enabled: true, existingClaimTemplate: mine}\ngpu: {type: example.org/npu}\n")
    docs, _, pods = dra_render(chart, file)
    assert not [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    pod = pods["release-name-pipeline"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == "mine"
    assert [t["key"] for t in pod["tolerations"]] == ["example.org/npu"]


def test_a_node_label_key_from_values_is_no_device_key(tmp_path: Path) -> None:
    """A nodeSelector label whose key is a values key (`{{ .Values.node.labelKey }}: ...`) beside the device key of
    the same shape: was manual, 'the pod's device keys are not all the one resource name from values'; only a key
    directly under `limits:` or `requests:` is a device key."""
    label = "{{ .Values.node.labelKey }}: {{ .Values.node.labelValue | quote }}"
    selector = f"    spec:\n      nodeSelector:\n        {label}\n"
    text = INTEL.replace("    spec:\n", selector, 1)
    values = INTEL_VALUES + 'node:\n  labelKey: "example.com/pool"\n  labelValue: "gpu"\n'
    chart = chart_with(tmp_path, "pipeline", {"templates/pipeline.yaml": text, "values.yaml": values})
    fix_chart(chart)
    request, pod = _on(chart, "gpu: {type: gpu.intel.com/xe, count: 2}\n")
    assert "'xe'" in request["selectors"][0]["cel"]["expression"]
    assert pod["nodeSelector"] == {"example.com/pool": "gpu"}
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]


def test_a_defaulted_name_in_limits_and_requests_beside_cpu(tmp_path: Path) -> None:
    values = "cpu: 2\ngpus: 1\n"
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": DEFAULTED, "values.yaml": values})
    outcome = fix_chart(chart)  # was: manual, pattern E
    assert any("gpus" in c for c in outcome.checked)
    request, pod = _on(chart, "gpus: 3\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 3)
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": 2}
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": 2}
    # the lookup of the one name the rule packs know with its class is one line (was two, the `dict` on its own)
    claims = (chart / "templates/resourceclaimtemplate.yaml").read_text()
    assert '{{- $draKnown := dict "nvidia.com/gpu" (dict) -}}\n' in claims, claims
    file = tmp_path / "mig.yaml"
    file.write_text("dra: {enabled: true}\ngpuResourceName: nvidia.com/mig-1g.5gb\n")
    with pytest.raises(HelmError, match="gpuResourceName names a device resource"):
        render_chart(chart, RenderOptions(values_files=(file,)))


def test_a_crlf_template_keeps_its_line_ends(tmp_path: Path) -> None:
    crlf = INTEL.replace("\n", "\r\n")
    chart = chart_with(tmp_path, "pipeline", {"values.yaml": INTEL_VALUES})
    (chart / "templates" / "pipeline.yaml").write_bytes(crlf.encode())
    fix_chart(chart)  # was: manual; once E was taken, "file changed since it was read" (read with LF line ends)
    data = (chart / "templates" / "pipeline.yaml").read_bytes()
    assert b"resourceClaims:\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


@pytest.mark.parametrize("end", ["\r", "mixed"])
def test_a_template_of_cr_or_mixed_line_ends_keeps_them(tmp_path: Path, end: str) -> None:
    """Old-Mac CR line ends (was: "file changed since it was read"), or CRLF on the first lines and LF below (was:
    every line written with CRLF): each line fix keeps ends as it did."""
    lines = INTEL.splitlines(keepends=True)
    text = (
        INTEL.replace("\n", "\r")
        if end == "\r"
        else "".join(x.replace("\n", "\r\n") for x in lines[:3]) + "".join(lines[3:])
    )
    chart = chart_with(tmp_path, "pipeline", {"values.yaml": INTEL_VALUES})
    (chart / "templates" / "pipeline.yaml").write_bytes(text.encode())
    fix_chart(chart)
    data = (chart / "templates" / "pipeline.yaml").read_bytes().decode()
    assert "resourceClaims:" in data and data.startswith(text[: len("".join(lines[:4]))]), data
    assert data.count("\r\n") == (0 if end == "\r" else 3) and ("\n" in data) == (end != "\r"), data


EXPORTER = """\
{{- if .Values.exporter.enabled }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-exporter
spec:
  selector:
    matchLabels: {app: exporter}
  template:
    metadata:
      labels: {app: exporter}
    spec:
      containers:
        - name: exporter
          image: exporter:3
          resources:
            limits:
              {{ .Values.resource }}: {{ .Values.exporter.gpus }}
{{- end }}
"""
JOBS = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-burnin
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: burnin
          image: burnin:1
          resources:
            limits:
              {{ .Values.resource }}: {{ .Values.burnin.gpus }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-smoke
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: smoke
          image: burnin:1
          resources:
            limits:
              {{ .Values.resource }}: 1
"""


def test_three_claim_templates_in_one_file_render_nothing_with_the_switch_off(tmp_path: Path) -> None:
    values = "resource: nvidia.com/gpu\nexporter: {enabled: true, gpus: 1}\nburnin: {gpus: 4}\n"
    files = {"templates/exporter.yaml": EXPORTER, "templates/jobs.yaml": JOBS, "values.yaml": values}
    chart = chart_with(tmp_path, "ops", files)
    outcome = fix_chart(chart)  # was: manual; with A keys, "the templates rendered differ" (a bare `---` rendered)
    assert "exporter.enabled flipped to false" in outcome.checked
    file = tmp_path / "off.yaml"
    file.write_text("dra: {enabled: false}\n")
    rendered = {m.source for m in render_chart(chart, RenderOptions(values_files=(file,))) if m.text.strip()}
    assert "ops/templates/resourceclaimtemplate.yaml" not in rendered
    file.write_text("dra: {enabled: true}\nexporter: {enabled: false}\n")
    docs, counts, _ = dra_render(chart, file)
    assert sorted(counts.values()) == [1, 4]


# the name held in a template variable: assigned from values, perhaps through a map read from values in turn
HELD = """\
{{- $node := (.Values.node | default dict).accel | default dict -}}
{{- $accel := $node.resourceName | default "" -}}
{{- $accelCount := $node.count | default 0 -}}
{{- $wantAccel := and (ne $accel "") (gt (int $accelCount) 0) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-lab
spec:
  selector:
    matchLabels: {app: lab}
  template:
    metadata:
      labels: {app: lab}
    spec:
      containers:
        - name: lab
          image: lab:2
          resources:
            limits:
              memory: 1Gi
              {{- if $wantAccel }}
              {{ $accel }}: {{ $accelCount }}
              {{- end }}
"""
HELD_VALUES = "node:\n  accel:\n    resourceName: gpu.intel.com/i915\n    count: 1\n"


def test_a_name_held_in_a_variable_read_through_another_is_looked_up(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "lab", {"templates/lab.yaml": HELD, "values.yaml": HELD_VALUES})
    outcome = fix_chart(chart)  # was: manual, 'pattern E (a resource name from values)'
    assert 'node.accel.resourceName changed to "gpu.intel.com/xe"' in outcome.checked
    request, pod = _on(chart, "node: {accel: {resourceName: gpu.intel.com/xe, count: 2}}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.intel.com", 2)
    assert "'xe'" in request["selectors"][0]["cel"]["expression"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}
    file = tmp_path / "npu.yaml"
    file.write_text("dra: {enabled: true}\nnode: {accel: {resourceName: amd.com/gpu}}\n")
    with pytest.raises(HelmError, match="node.accel.resourceName names a device resource"):
        render_chart(chart, RenderOptions(values_files=(file,)))


KEYED = """\
{{- $gpuKey := .Values.gpuResourceKey | default "nvidia.com/gpu" }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-serve
spec:
  selector:
    matchLabels: {app: serve}
  template:
    metadata:
      labels: {app: serve}
    spec:
      containers:
        - name: serve
          image: serve:1
          resources:
            limits:
              {{ $gpuKey }}: {{ .Values.gpuCount | quote }}
"""


def test_a_defaulted_name_held_in_a_variable(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "serve", {"templates/serve.yaml": KEYED, "values.yaml": "gpuCount: 1\n"})
    outcome = fix_chart(chart)  # was: manual, 'pattern E (a resource name from values)'
    assert any("gpuCount" in c for c in outcome.checked)
    request, pod = _on(chart, "gpuCount: 4\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 4)
    assert "limits" not in pod["containers"][0]["resources"]
    file = tmp_path / "amd.yaml"
    file.write_text("dra: {enabled: true}\ngpuResourceKey: amd.com/gpu\n")
    with pytest.raises(HelmError, match="gpuResourceKey names a device resource"):
        render_chart(chart, RenderOptions(values_files=(file,)))


def test_a_name_read_inside_with_of_a_values_map(tmp_path: Path) -> None:
    """The name, count and condition relative to `with .Values.pipe` (`{{ .gpu.type }}: "{{ .gpu.count }}"`, a
    certified chart's docling Deployment): read as `.Values.pipe.gpu.type`, the rewrite is the pattern-E one, and the
    proof sets the name to the other names of its rule pack. Was: manual, 'this line is none of them'."""
    scoped = INTEL.replace("$.Values.gpu", ".gpu").replace(".Release", "$.Release")
    template = (
        "{{- with .Values.pipe }}\n" + scoped.replace(": {{ .gpu.count }}", ': "{{ .gpu.count }}"') + "{{- end }}\n"
    )
    values = "pipe:\n  gpu:\n    enabled: true\n    type: gpu.intel.com/i915\n    count: 1\n"
    chart = chart_with(tmp_path, "pipeline", {"templates/pipeline.yaml": template, "values.yaml": values})
    outcome = fix_chart(chart)
    assert 'pipe.gpu.type changed to "gpu.intel.com/xe"' in outcome.checked
    request, pod = _on(chart, "pipe: {gpu: {type: gpu.intel.com/xe, count: 2}}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.intel.com", 2)
    assert "'xe'" in request["selectors"][0]["cel"]["expression"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]
    assert "limits" not in pod["containers"][0]["resources"]


def test_a_name_the_users_values_file_changes_is_looked_up_beside_the_default(tmp_path: Path) -> None:
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart, write_changes
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    template = KEYED.replace(' | default "nvidia.com/gpu"', "")
    values = "gpuResourceKey: nvidia.com/gpu\ngpuCount: 1\n"
    chart = chart_with(tmp_path, "serve", {"templates/serve.yaml": template, "values.yaml": values})
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpuResourceKey: amd.com/gpu\n")
    options = ChartOptions(values_files=(amd,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()  # was: manual, 'gpuResourceKey names a device resource ... amd.com/gpu'
    write_changes(outcome)
    request, pod = _on(chart, "gpuResourceKey: amd.com/gpu\n")
    assert request["deviceClassName"] == "gpu.amd.com"
    assert "limits" not in pod["containers"][0]["resources"]
    request, pod = _on(chart, "")
    assert request["deviceClassName"] == "gpu.nvidia.com"
    assert "limits" not in pod["containers"][0]["resources"]
    file = tmp_path / "npu.yaml"
    file.write_text("dra: {enabled: true}\ngpuResourceKey: gpu.intel.com/i915\n")
    with pytest.raises(HelmError, match="gpuResourceKey names a device resource"):
        render_chart(chart, RenderOptions(values_files=(file,)))


# the name from values beside a `toYaml` of the values' own section, whose example values hold the device too
BESIDE_MAP = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-workers
spec:
  selector:
    matchLabels: {app: workers}
  template:
    metadata:
      labels: {app: workers}
    spec:
      containers:
      - name: worker
        image: worker:1
        {{- if .Values.workers.gpu.enabled }}
        resources:
          limits:
            {{- toYaml .Values.workers.resources.limits | nindent 12 }}
            {{ .Values.workers.gpu.resource }}: {{ .Values.workers.gpu.limit }}
        {{- else }}
        resources:
          {{- toYaml .Values.workers.resources | nindent 10 }}
        {{- end }}
"""
BESIDE_MAP_VALUES = """\
workers:
  resources:
    limits:
      memory: 1Gi
      nvidia.com/gpu: 1
  gpu:
    enabled: true
    resource: nvidia.com/gpu
    limit: 1
"""


def test_a_name_from_values_beside_a_values_section_it_may_repeat(tmp_path: Path) -> None:
    """Was: manual, 'the values map workers.resources is not passed through as is' (the `limits:` line read as
    pattern B for its toYaml); then proven on the branch the values pick. The proof now renders the `else` too
    (workers.gpu.enabled off), where the example values ask for the device through `toYaml .Values.workers.resources`,
    which the rewrite leaves a device-plugin request: manual, naming that value set, and nothing written."""
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    files = {"templates/workers.yaml": BESIDE_MAP, "values.yaml": BESIDE_MAP_VALUES}
    chart = chart_with(tmp_path / "fixed", "workers", files)
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "with workers.gpu.enabled flipped to false and the DRA switch on" in outcome.report()


# the name from values beside the values' limits and requests, each written inside `with` (a Whisper chart's shape):
# the DRA branch's `omit` of the name from the map runs where `.` is the map
WITH_SIBLINGS = deployment(
    "{{ .Release.Name }}-asr",
    """\
      containers:
      - name: asr
        image: asr:1
        resources:
          {{- if .Values.gpu.enabled }}
          limits:
            {{ .Values.gpu.type }}: {{ .Values.gpu.count }}
            {{- with .Values.resources.limits }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          requests:
            {{ .Values.gpu.type }}: {{ .Values.gpu.count }}
            {{- with .Values.resources.requests }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- else }}
          {{- toYaml .Values.resources | nindent 10 }}
          {{- end }}
""",
)
WITH_SIBLINGS_VALUES = """\
gpu: {enabled: false, type: nvidia.com/gpu, count: 1}
resources:
  limits: {memory: 6Gi}
  requests: {memory: 2Gi}
"""


def test_a_name_from_values_beside_maps_written_inside_with(tmp_path: Path) -> None:
    """Was manual: 'with your values and the DRA switch off, the rewritten chart does not render: ... nil pointer
    evaluating interface {}.dra' (the switch read as `.Values.dra.enabled` where `with` made `.` the limits map)."""
    files = {"templates/asr.yaml": WITH_SIBLINGS, "values.yaml": WITH_SIBLINGS_VALUES}
    chart = chart_with(tmp_path, "asr", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("gpu: {enabled: true, type: amd.com/gpu, count: 2}\n")
    fix_chart(chart, values=(gpu,))
    request, pod = _on(chart, "gpu: {enabled: true, type: amd.com/gpu, count: 2}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.amd.com", 2)
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "6Gi"}
    assert pod["containers"][0]["resources"]["requests"] == {"memory": "2Gi"}
    file = chart.parent / "off.yaml"
    file.write_text("dra: {enabled: false}\ngpu: {enabled: true}\n")
    _, _, pods = dra_render(chart, file)
    assert pods["release-name-asr"]["containers"][0]["resources"]["limits"] == {"memory": "6Gi", "nvidia.com/gpu": 1}


# the name from a helper that maps a vendor key to a device resource, with an override (the shape of comfyui charts),
# set in a variable inside the container's resources, where its `if` reads it too
VENDOR_HELPER = """\
{{- define "studio.gpuResource" -}}
{{- if .Values.gpu.resourceName }}
{{- .Values.gpu.resourceName }}
{{- else }}
{{- $vendor := .Values.gpu.vendor | lower }}
{{- if eq $vendor "nvidia" }}
{{- printf "nvidia.com/gpu" }}
{{- else if eq $vendor "amd" }}
{{- printf "amd.com/gpu" }}
{{- else }}
{{- "" }}
{{- end }}
{{- end }}
{{- end }}
"""
VENDOR_TEMPLATE = deployment(
    "{{ .Release.Name }}-studio",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: studio
          image: studio:1
          resources:
            limits:
              memory: 4Gi
              {{- $gpuResource := include "studio.gpuResource" . }}
              {{- if and $gpuResource (gt (.Values.gpu.count | int) 0) }}
              {{ $gpuResource }}: {{ .Values.gpu.count }}
              {{- end }}
""",
)
VENDOR_VALUES = 'gpu:\n  vendor: nvidia\n  count: 1\n  resourceName: ""\ntolerations: []\n'


def test_a_name_a_helper_maps_from_a_vendor_key(tmp_path: Path) -> None:
    """Was manual: 'the device resource name `$gpuResource` comes from the helper `studio.gpuResource`, which the
    idiomatic rewrites do not read as one values key'. The claim template looks up the helper's output among the
    names the helper writes, each vendor the helper compares is a value set of the proof, and the pod's claim and
    toleration (above the variable's assignment) read the helper itself."""
    files = {
        "templates/studio.yaml": VENDOR_TEMPLATE,
        "templates/_helpers.tpl": VENDOR_HELPER,
        "values.yaml": VENDOR_VALUES,
    }
    chart = chart_with(tmp_path, "studio", files)
    outcome = fix_chart(chart)
    assert 'gpu.vendor changed to "amd"' in outcome.checked
    request, pod = _on(chart, "gpu: {vendor: amd, count: 2}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.amd.com", 2)
    assert [t["key"] for t in pod["tolerations"]] == ["amd.com/gpu"]
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "4Gi"}
    request, pod = _on(chart, "")
    assert request["deviceClassName"] == "gpu.nvidia.com"
    assert pod["resourceClaims"][0]["name"] == pod["containers"][0]["resources"]["claims"][0]["name"]
    file = chart.parent / "off.yaml"
    file.write_text("dra: {enabled: false}\ngpu: {vendor: amd}\n")
    _, _, pods = dra_render(chart, file)
    assert pods["release-name-studio"]["containers"][0]["resources"]["limits"] == {"memory": "4Gi", "amd.com/gpu": 1}


def test_a_name_a_helper_reads_from_one_values_key_with_a_default(tmp_path: Path) -> None:
    """A helper that writes one values key or its literal default (`{{ .Values.gpu.resourceName | default
    "gpu.intel.com/i915" }}`), held in a variable: was manual (the name comes from a helper). The proof sets the key
    to the other names of the default's rule pack, as for a name read in the template itself."""
    helper = '{{- define "pipe.gpuKey" -}}\n{{ .Values.gpu.resourceName | default "gpu.intel.com/i915" }}\n{{- end }}\n'
    template = INTEL.replace("        {{- if $.Values.gpu.enabled }}", '        {{- $key := include "pipe.gpuKey" . }}')
    template = template.replace("{{ $.Values.gpu.type }}", "{{ $key }}").replace("        {{- end }}\n", "")
    files = {"templates/pipe.yaml": template, "templates/_helpers.tpl": helper, "values.yaml": "gpu:\n  count: 1\n"}
    chart = chart_with(tmp_path, "pipeline", files)
    outcome = fix_chart(chart)
    assert 'gpu.resourceName changed to "gpu.intel.com/xe"' in outcome.checked
    request, pod = _on(chart, "gpu: {resourceName: gpu.intel.com/xe, count: 2}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.intel.com", 2)
    assert "'xe'" in request["selectors"][0]["cel"]["expression"]
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]


def test_a_name_the_key_line_includes_from_a_helper(tmp_path: Path) -> None:
    """The key line includes the name helper itself (`{{ include "studio.gpuResource" . }}: N`): was manual, 'the
    idiomatic rewrites take a literal device key, its name a literal or one values key'."""
    template = VENDOR_TEMPLATE.replace('              {{- $gpuResource := include "studio.gpuResource" . }}\n', "")
    template = template.replace("$gpuResource", 'include "studio.gpuResource" .')
    template = template.replace('if and include "studio.gpuResource" .', 'if and (include "studio.gpuResource" .)')
    files = {"templates/studio.yaml": template, "templates/_helpers.tpl": VENDOR_HELPER, "values.yaml": VENDOR_VALUES}
    chart = chart_with(tmp_path, "studio", files)
    outcome = fix_chart(chart)
    assert 'gpu.vendor changed to "amd"' in outcome.checked
    request, pod = _on(chart, "gpu: {vendor: amd, count: 2}\n")
    assert (request["deviceClassName"], request["count"]) == ("gpu.amd.com", 2)
    assert [t["key"] for t in pod["tolerations"]] == ["amd.com/gpu"]
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "4Gi"}


def test_a_users_tolerations_of_the_looked_up_name_get_no_second_one(tmp_path: Path) -> None:
    """The pod renders the values' tolerations (`with .Values.tolerations`, empty by default) and the DRA branch adds
    the toleration of the looked-up name: a user whose tolerations hold it already (as GPU values files often do) got
    it twice; now the DRA one renders only where the list does not tolerate the name's taint, as with a literal key."""
    tolerations = "    spec:\n      {{- with .Values.tolerations }}\n      tolerations:\n"
    tolerations += "        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"
    template = INTEL.replace("    spec:\n", tolerations)
    chart = chart_with(
        tmp_path, "pipeline", {"values.yaml": INTEL_VALUES + "tolerations: []\n", "templates/x.yaml": template}
    )
    fix_chart(chart)
    # the DRA toleration is one line, as with a literal key (was three, a field a line)
    text = (chart / "templates/x.yaml").read_text()
    assert "        - {key: {{ .Values.gpu.type }}, operator: Exists, effect: NoSchedule}\n" in text, text
    mine = tmp_path / "tolerated.yaml"
    mine.write_text("tolerations:\n- key: gpu.intel.com/i915\n  operator: Exists\n  effect: NoSchedule\n")
    out, _, pods = dra_render(chart, mine)
    (pod,) = pods.values()
    assert pod["tolerations"] == [{"key": "gpu.intel.com/i915", "operator": "Exists", "effect": "NoSchedule"}], pod
    assert pod["resourceClaims"], out
