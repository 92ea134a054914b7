"""Shapes of the pass-through rewrite (patterns B and C) seen on real charts outside the corpus: the workload's
namespace from values, the device request given with --set, and the size of the rewrite.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.prove import first_difference
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")

# a model server whose namespace is a value (`namespace: {{ .Values.namespace }}`), resources passed through whole
SERVER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-server
  namespace: {{ .Values.namespace }}
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
"""
SERVER_VALUES = "namespace: models\nresources:\n  limits:\n    cpu: 2\n"
GPU = "resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 1\n"


NAMESPACE_HELPER = '{{- define "server.namespace" -}}{{ .Values.namespace | default .Release.Namespace }}{{- end }}\n'


@pytest.mark.parametrize("expr", ["{{ .Values.namespace }}", '{{ include "server.namespace" . }}'])
def test_claim_template_goes_to_the_namespace_the_workload_takes_from_values(tmp_path: Path, expr: str) -> None:
    """The workload's namespace comes from values (directly or through a helper given the root context): the
    claim-template file renders its templates in that namespace too, so the pods find them and the rewrite is
    proven (was: `.Release.Namespace`, the claim template in another namespace than the pod, manual)."""
    files = {
        "values.yaml": SERVER_VALUES,
        "templates/server.yaml": SERVER.replace("{{ .Values.namespace }}", expr),
        "templates/_helpers.tpl": NAMESPACE_HELPER,
    }
    chart = chart_with(tmp_path, "server", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    out, counts, _ = dra_render(chart, tmp_path / "gpu-dra.yaml")
    (claim,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert claim["metadata"]["namespace"] == "models", claim["metadata"]
    assert list(counts.values()) == [1]


def test_a_claim_template_in_another_namespace_is_named_so() -> None:
    """Proof D's difference when a claim template renders in another namespace than the migration's: it says which
    namespaces (the tool's own keys), not a claim spec quoted whole (which the message hides as chart data)."""
    spec = {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}
    key = "claim-template:" + json.dumps(spec["spec"], sort_keys=True)
    claim = {"kind": "ResourceClaimTemplate", "metadata": {"name": key}, "spec": spec}
    why = first_difference(
        {("resource.k8s.io/v1", "ResourceClaimTemplate", "models", key): [claim]},
        {("resource.k8s.io/v1", "ResourceClaimTemplate", "default", key): [claim]},
    )
    assert 'namespace "models"' in why and 'namespace "default"' in why, why
    assert "request gpu" in why and "claim-template:" not in why, why


@pytest.mark.parametrize("flag", ["--set", "--set-string"])
def test_device_request_given_with_set_gets_a_values_file_in_its_place(tmp_path: Path, flag: str) -> None:
    """The chart's defaults ask for no device and the user's `--set` does (`--set resources.limits.nvidia\\.com/gpu=1`,
    as LocalAI's docs say): fix writes values-dra.yaml, the DRA request that stands for that --set (the other --set
    stays as it is), proves it by rendering with it in place of the --set, and says how to use it (was: manual, "put
    it in a values file")."""
    values = "namespace: models\nresources:\n  limits:\n    cpu: 2\n"
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": SERVER})
    device = "resources.limits.nvidia\\.com/gpu=1"
    plain, strings = ((device,), ()) if flag == "--set" else ((), (device,))
    options = ChartOptions(set_values=(*plain, "namespace=team-a"), set_string_values=strings)
    outcome = run_chart(chart, options, RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert f"-f values-dra.yaml in place of {flag} {device}" in outcome.report(), outcome.report()
    write_changes(outcome)
    text = (chart / "values-dra.yaml").read_text()
    assert f"{flag} {device}" in text.split("\n", 2)[0] + text.split("\n", 2)[1], text
    out, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 2}, "claims": [{"name": "gpu"}]}, pod
    assert list(counts.values()) == [1] and pod["resourceClaims"], out


# a web server and a worker, each passing its own resources map through
TWO_GROUPS = "\n---\n".join(
    SERVER.replace("  namespace: {{ .Values.namespace }}\n", "")
    .replace("server", group)
    .replace(".Values.resources", f".Values.{group}.resources")
    for group in ("web", "worker")
)
TWO_GROUPS_VALUES = "# -- The web server\nweb:\n  resources: {}\n# -- The worker\nworker:\n  resources: {}\n"
SCHEMA = """\
{
  "type": "object",
  "properties": {
    "web": {"type": "object"},
    "worker": {"type": "object"},
    "mode": {
      "type": "string",
      "examples": [
        "fast", "slow"
      ]
    }
  }
}
"""


def test_groups_asking_for_the_same_share_one_claim_template(tmp_path: Path) -> None:
    """Two pods that each ask for one GPU through their own values map (h2oGPT's runtime and vLLM server): the DRA
    values file holds one claim template, named after the chart, that both pods name (each still gets a claim of
    its own from it); was one template per group, the same spec twice."""
    files = {"values.yaml": TWO_GROUPS_VALUES, "templates/workloads.yaml": TWO_GROUPS}
    chart = chart_with(tmp_path, "app", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("".join(f"{g}:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n" for g in ("web", "worker")))
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    out, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    (name,) = counts
    assert name.startswith("release-name-app-gpu-"), counts
    assert [p["resourceClaims"][0]["resourceClaimTemplateName"] for p in pods.values()] == [name, name], pods


def test_rewrite_keeps_the_schema_layout_and_documents_each_key_in_one_line(tmp_path: Path) -> None:
    """A maintainer reviews what the rewrite adds, not a reformatted schema: a list the schema writes over three
    lines stays as it is (was: one item per line, lines changed that the rewrite has nothing to do with), and each
    values key the rewrite adds is documented in one comment line that states the API version."""
    files = {"values.yaml": TWO_GROUPS_VALUES, "templates/workloads.yaml": TWO_GROUPS, "values.schema.json": SCHEMA}
    chart = chart_with(tmp_path, "app", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("web:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    schema = (chart / "values.schema.json").read_text()
    assert '      "examples": [\n        "fast", "slow"\n      ]\n' in schema, schema
    assert "resourceClaimTemplates" in json.loads(schema)["properties"]
    lines = (chart / "values.yaml").read_text().splitlines()
    for key in ("  resourceClaims: []", "resourceClaimTemplates: {}"):
        at = lines.index(key)
        assert "resource.k8s.io/v1" in lines[at - 1] and not lines[at - 2].lstrip().startswith("#"), lines


# one model server for either accelerator: the resources map is picked by key under `resources:`, and the pod
# tolerates the Neuron taint itself only when it runs on Neuron
BY_ACCELERATOR = deployment(
    "{{ .Release.Name }}-model",
    """\
      containers:
        - name: model
          image: model:1
          resources:
            {{- if eq .Values.accelerator "gpu" }}
            {{- toYaml .Values.server.resources.gpu | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.server.resources.neuron | nindent 12 }}
            {{- end }}
      {{- if eq .Values.accelerator "neuron" }}
      tolerations:
        - key: aws.amazon.com/neuron
          operator: Exists
          effect: NoSchedule
      {{- end }}
""",
)
BY_ACCELERATOR_VALUES = """\
accelerator: gpu
server:
  resources:
    gpu:
      limits:
        nvidia.com/gpu: 1
    neuron:
      limits:
        aws.amazon.com/neuron: 1
"""


def test_resources_map_keyed_by_accelerator(tmp_path: Path) -> None:
    """`toYaml .Values.server.resources.gpu` or `.neuron`, picked by an `if` on the accelerator (AWS's inference
    charts): the pod's claims are keyed as the maps are (`server.resourceClaims.gpu`), the toleration the migration
    adds goes in although the pod writes `tolerations:` for the other accelerator, and the rewrite is proven (was:
    manual, "a map keyed by component under `resources:` has no place for them")."""
    files = {"values.yaml": BY_ACCELERATOR_VALUES, "templates/model.yaml": BY_ACCELERATOR}
    chart = chart_with(tmp_path, "model", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    dra = yaml.safe_load((chart / "values-dra.yaml").read_text())
    # the neuron map's claim would join the pod's own tolerations to a second `tolerations:` key: values-dra.yaml
    # migrates the defaults' map alone (`--set accelerator=neuron` is not covered)
    assert list(dra["server"]["resourceClaims"]) == ["gpu"], dra
    assert yaml.safe_load((chart / "values.yaml").read_text())["server"]["resourceClaims"] == {}
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu" and list(counts.values()) == [1], pod


# a server whose template reads the device count of the map it passes through (leapfrogai's whisper chart: the
# runtime class and an env from `index .Values.resources.limits "nvidia.com/gpu"`; a helper sets a UCX device list)
READS_COUNT = SERVER.replace(
    "    spec:\n      containers:\n        - name: server\n          image: server:1\n",
    """\
    spec:
      {{- $gpus := index .Values.resources.limits "nvidia.com/gpu" | default 0 }}
      {{- if gt (int $gpus) 0 }}
      runtimeClassName: nvidia
      {{- end }}
      containers:
        - name: server
          image: server:1
          env:
            - name: GPU_REQUEST
              value: {{ $gpus | quote }}
            - name: UCX_NET_DEVICES
              value: {{ include "server.ucx" . | quote }}
""",
)
UCX_HELPER = (
    '{{- define "server.ucx" -}}\n'
    '{{- if gt (int (index $.Values.resources.limits "nvidia.com/gpu")) 1 }}mlx5_0:1{{ else }}all{{ end }}\n'
    "{{- end }}\n"
)


def test_a_template_that_reads_the_device_count_itself_reads_it_from_the_dra_values(tmp_path: Path) -> None:
    """The deployment and a helper read the device key of the map they pass through (runtimeClassName, GPU_REQUEST,
    UCX_NET_DEVICES): the rewrite makes those reads take `deviceCounts`, which the DRA values set beside the map, so
    with gpu-dra.yaml the pod keeps its runtime class and env while the count moves to the claim (was: manual,
    "give that count a value of its own")."""
    values = "namespace: models\nresources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 0\n"
    files = {"values.yaml": values, "templates/server.yaml": READS_COUNT, "templates/_helpers.tpl": UCX_HELPER}
    chart = chart_with(tmp_path, "server", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 2\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    (pod,) = pods.values()
    assert list(counts.values()) == [2], counts
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 2}, "claims": [{"name": "gpu"}]}, pod
    assert pod.get("runtimeClassName") == "nvidia", pod
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env == {"GPU_REQUEST": "2", "UCX_NET_DEVICES": "mlx5_0:1"}, env
    _, _, plain = dra_render(chart, gpu)  # the device-plugin values render as before
    assert next(iter(plain.values()))["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2


def test_a_count_read_fix_does_not_rewrite_is_named_with_the_form_it_takes(tmp_path: Path) -> None:
    """A read by `index .Values "resources" "limits" "nvidia.com/gpu"` (not a dotted path): manual, and the message
    names the line, the form fix rewrites and the key the DRA values would set."""
    template = READS_COUNT.replace(
        'index .Values.resources.limits "nvidia.com/gpu" | default 0',
        'index .Values "resources" "limits" "nvidia.com/gpu" | default 0',
    )
    values = "namespace: models\nresources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 0\n"
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": template})
    (chart / "templates/_helpers.tpl").write_text('{{- define "server.ucx" -}}all{{- end }}\n')
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 2\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert not outcome.proven
    assert "templates/server.yaml:13 reads resources.limits" in outcome.manual, outcome.manual
    assert "deviceCounts" in outcome.manual, outcome.manual


def test_a_shipped_values_file_that_renders_another_workload_gets_its_pass_through(tmp_path: Path) -> None:
    """The defaults render a Deployment; a values file the chart ships switches to a StatefulSet template that passes
    the same map through (coreweave's vllm-basic: `hack/values-llama-small-lws.yaml` renders its LeaderWorkerSet):
    that template gets the pass-through too, so the shipped file's DRA variant renders the claims (was: manual, the
    StatefulSet's pod without `resourceClaims`)."""
    guarded = SERVER.replace("  namespace: {{ .Values.namespace }}\n", "")
    deployment = '{{- if ne .Values.kind "sts" }}\n' + guarded + "{{- end }}\n"
    statefulset = '{{- if eq .Values.kind "sts" }}\n' + guarded.replace("Deployment", "StatefulSet") + "{{- end }}\n"
    values = "kind: deploy\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"
    files = {
        "values.yaml": values,
        "templates/deployment.yaml": deployment,
        "templates/statefulset.yaml": statefulset,
        "ci/sts-values.yaml": "kind: sts\nresources:\n  limits:\n    nvidia.com/gpu: 2\n",
    }
    chart = chart_with(tmp_path, "server", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    from dramigrate.helm.render import RenderOptions, render_chart

    variant = RenderOptions(values_files=(chart / "ci/sts-values.yaml", chart / "ci/sts-values-dra.yaml"))
    out = [d for m in render_chart(chart, variant) for d in yaml.safe_load_all(m.text) if d]
    (sts,) = [d for d in out if d["kind"] == "StatefulSet"]
    assert sts["spec"]["template"]["spec"]["resourceClaims"][0]["name"] == "gpu", sts


# a chart without values.yaml: every value comes from the user's -f files (an install script's values)
BARE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
"""


def test_chart_without_values_yaml_gets_the_dra_variant_of_the_file_holding_the_device_key(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"templates/app.yaml": BARE})
    user = tmp_path / "user.yaml"
    user.write_text('replicas: 1\nimage:\n  repository: app\n  tag: "1"\n')
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    outcome = run_chart(chart, ChartOptions(values_files=(user, gpu)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()  # was: manual, 'the device request is not set in a -f values file'
    write_changes(outcome)
    assert not (tmp_path / "user-dra.yaml").exists()
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(user, tmp_path / "gpu-dra.yaml")))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    claim = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in json.dumps(pod["containers"][0]["resources"])
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == claim["metadata"]["name"]


# a server whose container takes `gpu.resources` when `gpu.enabled` is on (written at column 0 inside the `if`), the
# CPU `resources` otherwise
SWITCHED = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
{{- if .Values.gpu.enabled }}
{{ toYaml .Values.gpu.resources | nindent 12 }}
{{- else }}
{{ toYaml .Values.resources | nindent 12 }}
{{- end }}
""",
)


def test_a_set_switch_that_turns_on_default_device_keys_gets_values_dra_yaml(tmp_path: Path) -> None:
    """The chart's values.yaml ships the device keys under a switch that is off (`gpu.enabled: false`) and the user
    turns it on with `--set gpu.enabled=true`: fix writes values-dra.yaml for those defaults, proves it rendered with
    the user's --set kept, and says to add it (was: manual, "not set in a -f values file ... comes from --set or the
    chart's defaults", and before that "no `containers:` line above the resources map")."""
    values = (
        "resources:\n  limits:\n    cpu: 1\n"
        "gpu:\n  enabled: false\n  resources:\n    limits:\n      cpu: 4\n      nvidia.com/gpu: 1\n"
    )
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": SWITCHED})
    outcome = run_chart(chart, ChartOptions(set_values=("gpu.enabled=true",)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "your values (DRA values: values-dra.yaml)" in outcome.report(), outcome.report()
    assert "add -f values-dra.yaml" in outcome.report(), outcome.report()
    write_changes(outcome)
    options = RenderOptions(values_files=(chart / "values-dra.yaml",), set_values=("gpu.enabled=true",))
    out = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"]
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 4}, "claims": [{"name": "gpu"}]}, pod
    (claim,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == claim["metadata"]["name"], out


def test_a_helper_that_only_writes_the_values_resources_map_gets_the_pass_through(tmp_path: Path) -> None:
    """`resources: {{- include "server.resources" . | nindent 12 }}` with a helper whose whole body is `toYaml
    .Values.resources` (a vendor's device key passed through unchanged): the include passes the values map as a
    `toYaml` does, so fix writes the pass-through and values-dra.yaml, proven (was: manual, pattern D "no line of a
    helper in this chart writes the device key")."""
    helpers = '{{- define "server.resources" -}}\n{{- toYaml .Values.resources -}}\n{{- end }}\n'
    server = SWITCHED.split("          resources:\n")[0] + (
        '          resources: {{- include "server.resources" . | nindent 12 }}\n'
    )
    values = "resources:\n  limits:\n    cpu: 4\n    gpu.intel.com/xe: 1\n"
    files = {"values.yaml": values, "templates/_helpers.tpl": helpers, "templates/server.yaml": server}
    chart = chart_with(tmp_path, "server", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "default values (DRA values: values-dra.yaml)" in outcome.report(), outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 4}, "claims": [{"name": "gpu"}]}, pod
    assert list(counts.values()) == [1] and pod["resourceClaims"], pod


def test_a_blank_line_before_the_containers_survives_the_pass_through(tmp_path: Path) -> None:
    """The pod spec has a blank line before `containers:` (girishn's vllm chart, after its init container): the
    pass-through's `{{- with` goes above that blank line, so it chomps nothing and the render with the values as
    they were stays byte-identical (was: the line lost, 110 lines before and 109 after, manual)."""
    template = SERVER.replace("    spec:\n      containers:", "    spec:\n      hostIPC: true\n\n      containers:")
    values = "namespace: models\n" + GPU
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": template})
    before = render_chart(chart, RenderOptions())[0].text
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    after = render_chart(chart, RenderOptions())[0].text
    assert "hostIPC: true\n\n" in after
    assert after.replace("0.1.1", "0.1.0") == before


def test_the_device_toleration_joins_the_pods_literal_tolerations(tmp_path: Path) -> None:
    """The pod writes its tolerations as a literal list (dminnear's vllm chart: `dedicated=gpu`, last in the file):
    the DRA values' `tolerations` render after those items, so the DRA pod tolerates both taints as the migration
    does (was: the device's toleration missing, manual)."""
    own = "      tolerations:\n        - key: dedicated\n          value: gpu\n          effect: NoSchedule\n"
    files = {"values.yaml": "namespace: models\n" + GPU, "templates/server.yaml": SERVER + own}
    chart = chart_with(tmp_path, "server", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, _, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"], pod
    _, _, plain = dra_render(chart, chart / "values.yaml")
    assert [t["key"] for t in next(iter(plain.values()))["tolerations"]] == ["dedicated"]


def test_a_set_that_picks_another_servers_device_keys_is_not_called_proven(tmp_path: Path) -> None:
    """Two mutually exclusive servers, each passing its own values resources map through: the defaults turn `a` on,
    the user's `--set a.enabled=false --set b.enabled=true` turns `b` on and gives its map a key of its own.
    values-dra.yaml migrates the maps as the chart ships them (`a`, and `b` under its switch), so with the user's
    values `b` keeps its device-plugin request: fix must not call that proven (was: proven, the user's run never
    rendered with a DRA values file; learnwith-llm-inference's vllm and sglang, whose switches alone values-dra.yaml
    now covers: test_helm_passthrough_switched_maps.py)."""
    server = SWITCHED.split("          resources:\n")[0]
    files = {
        "values.yaml": "".join(
            f"{s}:\n  enabled: {on}\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
            for s, on in (("a", "true"), ("b", "false"))
        )
    }
    for s in "ab":
        body = server.replace("-server", f"-{s}").replace("server:1", f"{s}:1")
        files[f"templates/{s}.yaml"] = (
            f"{{{{- if .Values.{s}.enabled }}}}\n{body}          resources:\n"
            f"            {{{{- toYaml .Values.{s}.resources | nindent 12 }}}}\n{{{{- end }}}}\n"
        )
    chart = chart_with(tmp_path, "servers", files)
    sets = ("a.enabled=false", "b.enabled=true", "b.resources.limits.cpu=2")
    outcome = run_chart(chart, ChartOptions(set_values=sets), RULES, Settings(), T136, "fix")
    assert not outcome.proven, outcome.report()
    assert "with your values, the device request comes from values no DRA values file covers" in outcome.report()
    # which map the --set turns on, which one values-dra.yaml migrates, and what to do (was: neither map named)
    why = "the pods ask for devices through b.resources, which values-dra.yaml (the chart defaults' DRA values: "
    assert why + "a.resources) leaves as it is; put those --set options in a -f values file" in outcome.manual


def test_a_set_that_keeps_the_defaults_device_keys_is_proven_with_values_dra_yaml(tmp_path: Path) -> None:
    """values.yaml ships the device keys and the user's --set picks only the server flavour (goend-ark-ai's
    `--set modelConfig.current.serviceType=vllm`), which the same resources map serves: values-dra.yaml, written for
    the defaults, covers the user's run too, so fix proves it with the --set kept and says to add it (was: manual,
    "the device request comes from values no DRA values file covers")."""
    server = SERVER.replace("-server", "-{{ .Values.flavour }}").replace("server:1", "{{ .Values.flavour }}:1")
    values = "namespace: models\nflavour: ollama\n" + GPU
    chart = chart_with(tmp_path, "server", {"values.yaml": values, "templates/server.yaml": server})
    sets = ("flavour=vllm",)
    outcome = run_chart(chart, ChartOptions(set_values=sets), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "your values (DRA values: values-dra.yaml)" in outcome.report(), outcome.report()
    assert "add -f values-dra.yaml" in outcome.report(), outcome.report()
    write_changes(outcome)
    options = RenderOptions(values_files=(chart / "values-dra.yaml",), set_values=sets)
    out = [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]
    (deployment,) = [d for d in out if d["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "release-name-vllm", deployment
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 2}, "claims": [{"name": "gpu"}]}, pod
    (claim,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == claim["metadata"]["name"], out
