"""Device requests in template shapes the idiomatic rewrite read as "another template shape" (pattern F) although they
are pattern A or B, seen on real charts outside the corpus (issue 7's held-out sets): a device resource name used as a
nodeSelector label beside the device keys, and a `resources:` block whose `if` writes some keys by hand while its
`else` passes the values map through. Each chart here is written for the test, with the shape of the real chart it
stands for. Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RunCli, chart_with, deployment, dra_render, fix_chart

LABELLED = deployment(
    "engine",
    """\
      containers:
      - name: engine
        image: engine:1
        resources:
          requests:
            cpu: "4"
            {{- if .Values.gpuCount }}
            amd.com/gpu: {{ .Values.gpuCount | quote }}
            {{- end }}
          limits:
            cpu: "8"
            {{- if .Values.gpuCount }}
            amd.com/gpu: {{ .Values.gpuCount | quote }}
            {{- end }}
      nodeSelector:
        amd.com/gpu: "true"
        kubernetes.io/os: linux
""",
)


def test_a_device_resource_named_as_a_node_label_is_not_read_as_a_device_key(tmp_path: Path) -> None:
    """yuamd's AIM engine selects nodes by the label `amd.com/gpu: "true"`: the rewrite read that line as a device key
    whose count "is not one expression" and left the chart as manual work (pattern F). Now the keys under
    limits/requests get the DRA switch; the node label stays as the chart wrote it."""
    chart = chart_with(tmp_path, "engine", {"templates/d.yaml": LABELLED, "values.yaml": "gpuCount: 1\n"})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("gpuCount: 2\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    pod = pods["engine"]
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "4"},
        "limits": {"cpu": "8"},
        "claims": [{"name": pod["resourceClaims"][0]["name"]}],
    }
    assert pod["nodeSelector"] == {"amd.com/gpu": "true", "kubernetes.io/os": "linux"}


BRANCHED = deployment(
    "server",
    """\
      containers:
        - name: server
          image: vllm
          resources:
            {{- if .Values.fractionScheduler }}
            {{- if .Values.resources.limits }}
            limits:
              {{- if .Values.resources.limits.cpu }}
              cpu: {{ .Values.resources.limits.cpu }}
              {{- end }}
              {{- if .Values.resources.limits.memory }}
              memory: {{ .Values.resources.limits.memory }}
              {{- end }}
            {{- end }}
            {{- if .Values.resources.requests }}
            requests:
              {{- if .Values.resources.requests.cpu }}
              cpu: {{ .Values.resources.requests.cpu }}
              {{- end }}
            {{- end }}
            {{- else }}
            {{- toYaml .Values.resources | nindent 12 }}
            {{- end }}
""",
)


def test_a_values_map_passed_through_in_the_else_of_a_hand_written_branch_gets_the_pass_through(
    tmp_path: Path,
) -> None:
    """ardge's vLLM chart writes cpu and memory by hand under `limits:` when a fractional-GPU scheduler is on and
    passes `.Values.resources` through otherwise: the rendered `limits:` was traced to the hand-written one, and the
    chart ended as manual work (pattern F at that line). Now the device key is traced to the map passed through and
    the chart gets the pass-through rewrite, with a DRA variant of the user's values file."""
    chart = chart_with(tmp_path, "server", {"templates/d.yaml": BRANCHED, "values.yaml": "resources: {}\n"})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text('resources:\n  limits:\n    cpu: 4\n    nvidia.com/gpu: "2"\n  requests:\n    cpu: 2\n')
    fix_chart(chart, values=(gpu,))
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert list(counts.values()) == [2]
    resources = pods["server"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": 4} and resources["claims"] == [{"name": "gpu"}]


NAMED_IN_QUOTES = """\
{{- with .Values.docling }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: docling
spec:
  selector:
    matchLabels: {app: docling}
  template:
    metadata:
      labels: {app: docling}
    spec:
      containers:
        - name: docling
          image: docling
          resources:
            limits:
              memory: {{ .memory }}
              {{ .gpu.resourceName }}: "{{ .gpu.count }}"
{{- end }}
"""


def test_a_device_key_written_as_a_quoted_action_is_found_at_its_own_line(tmp_path: Path, run_cli: RunCli) -> None:
    """Jamaibase writes `{{ .gpu.resourceName }}: "{{ .gpu.count }}"`: the line was never matched against the render
    (its quick check looked for `""`, which the rendered `"1"` does not hold), so lint gave the finding at the line of
    `limits:`, or of the container when an edit elsewhere moved the alignment. Now it is the key's own line."""
    values = "docling:\n  memory: 1Gi\n  gpu: {resourceName: nvidia.com/gpu, count: 1}\n"
    chart = chart_with(tmp_path, "docling", {"templates/d.yaml": NAMED_IN_QUOTES, "values.yaml": values})
    code, out, _ = run_cli(["lint", str(chart)])
    assert code == 1, out
    assert f"{chart}/templates/d.yaml:19:15: error [legacy-device-request]" in out, out


CATALOG_HELPERS = """\
{{- define "app.modelSpec" -}}
{{- index .Values.catalog .Values.model | toYaml -}}
{{- end }}
{{- define "app.modelGpu" -}}
{{- $spec := include "app.modelSpec" . | fromYaml -}}
{{ $spec.gpu }}
{{- end }}
"""
CATALOG_VALUES = """\
model: small
catalog:
  small: {gpu: "1"}
  large: {gpu: "4"}
  cpu-only: {gpu: "0"}
"""
CATALOG = deployment(
    "server",
    """\
      containers:
        - name: server
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ include "app.modelGpu" . | quote }}
""",
)


def test_a_count_a_helper_computes_from_the_root_is_the_claims_count(tmp_path: Path) -> None:
    """justinb's RHOAI charts look the model up in a catalog and write `nvidia.com/gpu: {{ include "x.modelGpu" . |
    quote }}`: "the count is not one expression", manual work. Now the helper call is the claim's count, as the
    chart wrote it: another model gives another count, and a model with no GPU renders no claim."""
    files = {"templates/d.yaml": CATALOG, "templates/_helpers.tpl": CATALOG_HELPERS, "values.yaml": CATALOG_VALUES}
    chart = chart_with(tmp_path, "catalog", files)
    fix_chart(chart)
    assert 'nvidia.com/gpu: {{ include "app.modelGpu" . | quote }}' in (chart / "templates/d.yaml").read_text()
    on = tmp_path / "on.yaml"
    on.write_text("model: large\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [4]
    assert pods["server"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    on.write_text("model: cpu-only\n")
    _, counts, pods = dra_render(chart, on)
    assert counts == {} and "resourceClaims" not in pods["server"]


SCOPED_HELPER = '{{- define "app.gpus" -}}\n{{ .gpus | default 1 }}\n{{- end }}\n'
SCOPED = """\
{{- %s }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
spec:
  selector:
    matchLabels: {app: {{ .name }}}
  template:
    metadata:
      labels: {app: {{ .name }}}
    spec:
      containers:
        - name: server
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ include "app.gpus" . | quote }}
{{- end }}
"""


@pytest.mark.parametrize(
    ("block", "values", "gpus"),
    [
        ("with .Values.server", "server: {name: a, gpus: 2}\n", {"a": 3}),
        ("range .Values.servers", "servers: [{name: a, gpus: 2}, {name: b}]\n", {"a": 3, "b": 1}),
    ],
)
def test_a_helper_count_given_the_scope_of_with_or_range_reads_the_same_scope_in_the_claim(
    tmp_path: Path, block: str, values: str, gpus: dict[str, int]
) -> None:
    """A helper given `.` inside `with .Values.server` (or a `range` of servers) computes the count from that scope:
    the claim template, rendered from the chart's root, gives the helper the same map (or item)."""
    files = {"templates/d.yaml": SCOPED % block, "templates/_helpers.tpl": SCOPED_HELPER, "values.yaml": values}
    chart = chart_with(tmp_path, "scoped", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text(values.replace("gpus: 2", "gpus: 3"))
    _, counts, pods = dra_render(chart, on)
    by_pod = {name: counts[pod["resourceClaims"][0]["resourceClaimTemplateName"]] for name, pod in pods.items()}
    assert by_pod == gpus


LISTED_CONTAINERS = deployment(
    "app",
    """\
      containers:
        {{- range $i, $container := .Values.containers }}
        - name: {{ $container.name | default (printf "container-%d" $i) }}
          image: {{ $container.image }}
          {{- if $container.resources }}
          resources:
            {{- with $container.resources.limits }}
            limits:
              {{- if .gpu }}
              nvidia.com/gpu: {{ .gpu | quote }}
              {{- end }}
            {{- end }}
          {{- end }}
        {{- end }}
""",
)


def test_a_device_key_of_each_container_of_a_values_list_takes_the_pods_claim(tmp_path: Path) -> None:
    """loft's component chart writes one container per item of `.Values.containers`, each with its own GPU count
    under `with $container.resources.limits`. Was: manual, naming the range that writes the containers. Now the
    container asking takes the pod's claim whole, with its count, and the device key stays with the switch off."""
    values = "containers:\n- name: api\n  image: api\n  resources: {limits: {gpu: 1}}\n"
    chart = chart_with(tmp_path, "component", {"templates/d.yaml": LISTED_CONTAINERS, "values.yaml": values})
    outcome = fix_chart(chart)
    assert outcome.proven, outcome.report()
    _, counts, pods = dra_render(chart, chart / "values.yaml")
    resources = pods["app"]["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "gpu"}] and not resources["limits"]
    assert list(counts.values()) == [1]


COUNT_UNDER_RESOURCES = deployment(
    "app",
    """\
      containers:
      - name: app
        image: app:1
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpu.resources.limits }}
""",
)


def test_a_count_under_a_values_key_named_resources_is_a_count_not_a_resources_map(tmp_path: Path) -> None:
    """Devtron's reference chart keeps its GPU count as `gpu.resources.limits: 1`: the pass-through probe took that
    key for a container's resources map and stopped fix with an internal error ('int' object is not iterable). A map
    whose limits or requests is a count is not a resources map; the count is pattern A."""
    values = "gpu:\n  resources:\n    limits: 1\n"
    chart = chart_with(tmp_path, "app", {"templates/d.yaml": COUNT_UNDER_RESOURCES, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("gpu:\n  resources:\n    limits: 3\n")
    _, counts, _ = dra_render(chart, on)
    assert list(counts.values()) == [3]
