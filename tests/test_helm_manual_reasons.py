"""Charts the idiomatic rewrite leaves to the user name what they saw, in terms of the chart: the values key, the
template line. Small charts shaped like the unseen ones that gave each reason; renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, deployment, dramigrate_in_process

from dramigrate.config import Settings
from dramigrate.helm import run as helm_run
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


# a Deployment taking its map of `resources:` keyed by component (huggingface/dell-helm-chart's agentic-smart-router:
# `{{ toYaml .Values.resources.embedqa | indent 12 }}`)
BY_COMPONENT = deployment(
    "embed",
    """\
      containers:
        - name: embed
          image: busybox
          resources:
{{ toYaml .Values.resources.embed | indent 12 }}
""",
)


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def test_a_resources_map_keyed_by_component_gets_claims_keyed_the_same(tmp_path: Path) -> None:
    """Was manual: first 'container embed does not take its resources whole from one values map' (it does:
    resources.embed), then 'a map keyed by component under `resources:` has no place for them'; the pod's claims
    are now keyed as its map is (resourceClaims.embed) and the rewrite is proven."""
    values = (
        "resources:\n  embed:\n    limits:\n      nvidia.com/gpu: 1\n  llm:\n    limits:\n      nvidia.com/gpu: 2\n"
    )
    outcome = _fix(chart_with(tmp_path, "router", {"templates/apps.yaml": BY_COMPONENT, "values.yaml": values}))
    assert outcome.proven, outcome.report()
    (template,) = [c.after for c in outcome.changes if c.rel == "templates/apps.yaml"]
    assert "{{- with .Values.resourceClaims.embed }}" in template, template


# pattern A whose pod selects its GPU model by a node-affinity expression the template writes itself beside another
# in one term: the migration moves it into the claim's CEL selectors, the rewrite takes a device affinity only whole
PRODUCT_AFFINITY = deployment(
    "tgi",
    """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: nvidia.com/gpu.product
                    operator: In
                    values: [NVIDIA-H100-80GB-HBM3]
                  - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      containers:
        - name: tgi
          image: tgi
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.shards }}
""",
)


def test_a_device_label_written_by_a_template_is_named(tmp_path: Path) -> None:
    """Was only 'spec.template.spec.affinity: not expected, the rewritten chart has ...'; then without the line and
    the label: now the template line that writes the label, the label and where it sits."""
    chart = chart_with(tmp_path, "tgi", {"templates/deployment.yaml": PRODUCT_AFFINITY, "values.yaml": "shards: 8\n"})
    outcome = _fix(chart)
    assert not outcome.changes
    assert "the pods select nodes by a device label that a template writes itself" in outcome.manual
    line = PRODUCT_AFFINITY.splitlines().index("                  - key: nvidia.com/gpu.product") + 1
    assert outcome.manual.startswith(f"templates/deployment.yaml:{line}: ")
    assert "nvidia.com/gpu.product in a required node affinity" in outcome.manual


# a pod tolerating by values a time-sliced GPU node's taint (OpenShift's samples: nvidia.com/gpu=Tesla-T4-SHARED) in the
# chart's defaults, its count from values: the migration of that render leaves the request as it is (shared-device),
# the DRA switch would not (a product label from values keeps it off: test_helm_left_pods)
SHARED_BY_DEFAULT = deployment(
    "infer",
    """\
      tolerations:
        - {key: nvidia.com/gpu, operator: Equal, value: {{ .Values.gpu.taint }}, effect: NoSchedule}
      containers:
        - name: infer
          image: infer
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
)


def test_a_request_the_migration_leaves_as_it_is_names_why_and_what_to_do(tmp_path: Path) -> None:
    """Was only 'with default values and the DRA switch on, ... resources.claims: not expected, the rewritten chart
    has [{"name": "gpu"}]': now the container whose request the migration of the defaults' render leaves as it is,
    the migration's reason (a shared device) and what the maintainer can do."""
    values = "gpu:\n  taint: Tesla-T4-SHARED\ngpus: 1\n"
    chart = chart_with(tmp_path, "infer", {"templates/deployment.yaml": SHARED_BY_DEFAULT, "values.yaml": values})
    mine = tmp_path / "mine.yaml"
    mine.write_text("gpu:\n  taint: Tesla-T4\n")
    settings = Settings(kube_version="1.34")
    options = ChartOptions(values_files=(mine,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.changes
    why, _, proof = outcome.manual.partition("; with default values and the DRA switch on, ")
    assert proof, outcome.manual
    assert why.startswith("Deployment infer container infer: ")
    assert "leaves its nvidia.com/gpu request as it is (shared-device: " in why
    assert "a per-pod claim would give each pod a whole device" in why
    assert "keep the DRA switch off with such values" in why
    assert "a product that is not shared" in why
    assert "migrate it by hand as lint's shared-device finding describes" in why


# cyberun's comfyui: a resources map passed through (pattern B) and a preferred node affinity on the GPU product
# the template writes itself, its values from a values list, then any GPU node (a label with no values: not a label
# from values as a whole)
# leapfrogai's whisper chart: `env:` from values and the chart's own `env:` in one container
TWO_ENVS = deployment(
    "whisper",
    """\
      containers:
        - name: whisper
          image: whisper
          {{- with .Values.env }}
          env:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          env:
            - name: GPU_REQUEST
              value: "1"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)


def test_a_duplicate_key_in_the_render_is_read_as_helm_reads_it(tmp_path: Path, run_cli: RunCli) -> None:
    """Helm keeps the last `env:` without a word; lint reads the render so, finds the GPU and warns at the template
    line that repeats the key (was: 'its rendered output does not parse ... duplicate key: env', exit 2, and before
    that 'bad input <chart>:22: rendered output: invalid YAML: duplicate key: env')."""
    values = "env: [{name: LOG, value: INFO}]\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "whisper", {"templates/deployment.yaml": TWO_ENVS, "values.yaml": values})
    code, out, _ = run_cli(["lint", str(chart)])
    assert code == 1, out
    template = f"{chart}/templates/deployment.yaml"
    assert (
        f"{template}:19:0: warning [chart-duplicate-key] Deployment/whisper spec.template.spec.containers[0]: `env:`"
        in out
    )
    assert f"related: {template}:16: the first `env:`, which Helm drops" in out
    assert "error [legacy-device-request]" in out and "nvidia.com/gpu: 1" in out


def test_a_post_renderer_reads_a_repeated_key_as_helm_does(tmp_path: Path, run_cli: RunCli) -> None:
    """The post-renderer's input is what Helm rendered, and its output goes back to Helm: it is read as Helm reads
    it (the last `env:` wins) and migrated, the repeat a warning (was: exit 2, which aborts `helm install`). So is
    the same stream piped to `fix -` (`helm template | dramigrate fix -`: its `# Source:` lines say Helm rendered
    it), as the chart's proof reads it; without them it may be anyone's file and is still refused."""
    values = "env: [{name: LOG, value: INFO}]\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "whisper", {"templates/deployment.yaml": TWO_ENVS, "values.yaml": values})
    stream = "".join(f"---\n# Source: {m.source}\n{m.text}" for m in render_chart(chart, RenderOptions()))
    code, out, err = run_cli(["fix", "-", "--post-renderer"], stdin=stream)
    assert code == 0, err
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(out) if d["kind"] == "Deployment"]
    assert pod["containers"][0]["env"] == [{"name": "GPU_REQUEST", "value": "1"}]  # as Helm reads it
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    line = stream.splitlines().index("          env:", stream.splitlines().index("          env:") + 1) + 1
    assert f"-:{line}:0: warning [chart-duplicate-key] Deployment/whisper spec.template.spec.containers[0]" in err
    code, piped, err = run_cli(["fix", "-"], stdin=stream)
    assert code == 0 and piped == out and f"-:{line}:0: warning [chart-duplicate-key]" in err, err
    plain = "".join(f"---\n{m.text}" for m in render_chart(chart, RenderOptions()))
    code, _, err = run_cli(["fix", "-"], stdin=plain)
    line = plain.splitlines().index("          env:", plain.splitlines().index("          env:") + 1) + 1
    assert code == 2 and f"-:{line}:11: invalid YAML: duplicate key: env" in err, err


def test_a_count_a_range_of_pods_sets_again_in_an_if_of_its_own_is_set_again_per_pod(tmp_path: Path) -> None:
    """A bare Pod per item of `range $i := until (int .Values.replicaCount)` whose count is a variable the range body
    sets inside an `if` of its own (`$gpus = 2` for rank 0). Was: manual, 'the count `$gpus` reads `$gpus`, which the
    `range` sets per item' (and before that an internal error). Now the claim template sets it again with the same
    `if`: rank 0 claims 2 devices, the others 1. (A count the same for every pod: tests/test_helm_range_until.py; one
    that reads the item itself: tests/test_helm_range_items.py.)"""
    chart = chart_with(
        tmp_path,
        "pods",
        {
            "values.yaml": "replicaCount: 2\ngpus: 1\n",
            "templates/pods.yaml": (
                "{{- range $i := until (int .Values.replicaCount) }}\n{{- $gpus := 1 }}\n"
                "{{- if eq $i 0 }}{{ $gpus = 2 }}{{ end }}\n"
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: worker-{{ $i }}\nspec:\n  containers:\n"
                "  - name: main\n    image: cuda\n    resources:\n      limits:\n"
                "        nvidia.com/gpu: {{ $gpus }}\n{{- end }}\n"
            ),
        },
    )
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    helm_run.write_changes(outcome)
    rendered = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {d["metadata"]["name"]: d["spec"] for d in rendered if d["kind"] == "Pod"}
    assert {p: counts[spec["resourceClaims"][0]["resourceClaimTemplateName"]] for p, spec in pods.items()} == {
        "worker-0": 2,
        "worker-1": 1,
    }


# the render helper the two groundx-shaped charts below write a container's resources with, and their
# Deployment per service (`$entry` the service, `$rs` its resources map)
RENDER_RESOURCES = """\
{{- define "svc.renderResources" -}}
{{- if .ctx }}
{{ printf "%*s" .indent "" }}resources:{{ .ctx | toYaml | nindent (int (add .indent 2)) }}
{{- end }}
{{- end }}
"""
SERVICE_DEPLOYMENT = """\
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $entry }}
spec:
  selector:
    matchLabels: {app: {{ $entry }}}
  template:
    metadata:
      labels: {app: {{ $entry }}}
    spec:
      containers:
        - name: {{ $entry }}
          image: busybox
{{- include "svc.renderResources" (dict "ctx" $rs "indent" 10) }}
{{- end }}
"""

# one Deployment per service a helper lists; each service's settings are a dict another helper builds from values
# and the template parses, the container's resources read out of it and written by a render helper (groundx)
SETTINGS_HELPERS = (
    """\
{{- define "svc.settings" -}}
{{- $in := index .root.Values .name -}}
{{- $cfg := dict "name" .name -}}
{{- if and (hasKey $in "resources") (not (empty (get $in "resources"))) -}}
  {{- $_ := set $cfg "resources" (get $in "resources") -}}
{{- end -}}
{{- $cfg | toYaml -}}
{{- end }}
"""
    + RENDER_RESOURCES
)
SETTINGS_TEMPLATE = (
    """\
{{- range $entry := list "ranker" "layout" }}
{{- $svcData := include "svc.settings" (dict "root" $ "name" $entry) | fromYaml -}}
{{- $rs := get $svcData "resources" -}}
"""
    + SERVICE_DEPLOYMENT
)


def settings_chart(tmp_path: Path) -> Path:
    gpu = "  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    return chart_with(
        tmp_path,
        "services",
        {
            "values.yaml": f"ranker:\n{gpu}layout:\n{gpu}",
            "templates/_helpers.tpl": SETTINGS_HELPERS,
            "templates/app.yaml": SETTINGS_TEMPLATE,
        },
    )


def test_a_resources_map_read_from_a_helper_built_dict_is_manual_work_naming_that_shape(tmp_path: Path) -> None:
    """The container's resources map is read out of a settings dict a helper builds inside the range over the
    services (`$rs := get $svcData "resources"`): no line reads a values map, so the pass-through has no key to put
    `resourceClaims` beside. fix names that read, its line and the dict (was: the services' `containers:` line and
    "the idiomatic rewrite takes pattern A only")."""
    chart = settings_chart(tmp_path)
    outcome = _fix(chart)
    assert not outcome.proven
    assert "templates/app.yaml:3: pattern F" in outcome.manual, outcome.report()
    assert "the container's resources map $rs is the `resources` of $svcData, a dict a named helper builds" in (
        outcome.manual
    )


# one settings helper per service, named by a printf of the service; each copies its own values' resources into
# the dict (groundx's shape); only the ranker asks for a GPU
NAMED_SETTINGS = (
    """\
{{- define "svc.ranker.settings" -}}
{{- $in := .Values.ranker | default dict -}}
{{- $cfg := dict "name" "ranker" -}}
{{- if $in.resources -}}
  {{- $_ := set $cfg "resources" $in.resources -}}
{{- end -}}
{{- $cfg | toYaml -}}
{{- end }}

"""
    + RENDER_RESOURCES
    + """\

{{- define "svc.api.settings" -}}
{{- $in := .Values.api | default dict -}}
{{- $cfg := dict "name" "api" -}}
{{- if $in.resources -}}
  {{- $_ := set $cfg "resources" $in.resources -}}
{{- end -}}
{{- $cfg | toYaml -}}
{{- end }}
"""
)
NAMED_TEMPLATE = (
    """\
{{- range $entry := list "ranker" "api" }}
{{- $svcKey := printf "svc.%s.settings" $entry -}}
{{- $svcData := include $svcKey $ | fromYaml -}}
{{- $rs := get $svcData "resources" }}
"""
    + SERVICE_DEPLOYMENT
)


# groundx's pod tolerations: a render helper writes the dict's `tolerations`, else tolerations of the service's node
NODE_TOLERATIONS = """\
{{- define "svc.renderTolerations" -}}
{{- if .ctx }}
{{ printf "%*s" .indent "" }}tolerations:{{ .ctx | toYaml | nindent (int (add .indent 2)) }}
{{- else if .node }}
{{ printf "%*s" .indent "" }}tolerations:
{{ printf "%*s" .indent "" }}  - {key: node, value: {{ .node | quote }}, effect: NoSchedule}
{{- end }}
{{- end }}
"""
TOLERATIONS_LINE = '{{- include "svc.renderTolerations" (dict "ctx" $tl "node" "gpu-pool" "indent" 6) }}\n'
NAMED_TOLERATED = NAMED_TEMPLATE.replace(
    '{{- $rs := get $svcData "resources" }}\n',
    '{{- $rs := get $svcData "resources" }}\n{{- $tl := get $svcData "tolerations" }}\n',
).replace("      containers:\n", TOLERATIONS_LINE + "      containers:\n")
# the same tolerations written by the template itself, not by one helper call the pass-through can render again
INLINE_TOLERATIONS = """\
{{- if $tl }}
      tolerations: {{ toYaml $tl | nindent 8 }}
{{- else }}
      tolerations:
        - {key: node, value: gpu-pool, effect: NoSchedule}
{{- end }}
"""
INLINE_TOLERATED = NAMED_TOLERATED.replace(TOLERATIONS_LINE, INLINE_TOLERATIONS)


def test_a_map_read_from_a_helper_built_dict_names_the_changes_to_make_by_hand(tmp_path: Path) -> None:
    """groundx's shape, where the dict's helper is named by a printf of the service, but with the pod's tolerations
    written by the template itself (the dict's, else the node's): the pass-through through the dict would carry the
    claims but has no values key for the toleration the migration adds, so the message says why and what to change
    by hand: the helper line that copies the GPU service's map into the dict (not the CPU service's, whose map asks
    for no device), the template's `containers:` line the pod's resourceClaims go above, the values map they go beside
    and the tolerations line (was: only that the pass-through needs a values key). One helper call that writes them
    is taken (test_helm_helper_built_dict.py)."""
    values = (
        "ranker:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\napi:\n  resources:\n    limits:\n      cpu: 1\n"
    )
    assert INLINE_TOLERATED.count("tolerations:") == 2 and "$tl :=" in INLINE_TOLERATED
    chart = chart_with(
        tmp_path,
        "services",
        {"values.yaml": values, "templates/_settings.tpl": NAMED_SETTINGS, "templates/app.yaml": INLINE_TOLERATED},
    )
    outcome = _fix(chart)
    assert not outcome.proven
    lines = INLINE_TOLERATED.splitlines()
    at_tolerations = next(n for n, line in enumerate(lines, 1) if "tolerations:" in line)
    at_containers = next(n for n, line in enumerate(lines, 1) if line.strip() == "containers:")
    assert f"the pod's tolerations are written at line {at_tolerations} (" in outcome.manual, outcome.manual
    assert "not the toleration the migration adds" in outcome.manual
    assert "where the helper copies `resources` (templates/_settings.tpl:5 (" in outcome.manual
    assert "templates/_settings.tpl:20" not in outcome.manual  # the api's copy
    assert f"in templates/app.yaml above line {at_containers} (`containers:`)" in outcome.manual
    assert "sets `resourceClaims` beside ranker.resources," in outcome.manual
    assert f"and the toleration the migration adds where line {at_tolerations} writes the pod's" in outcome.manual


def test_a_chart_no_rewrite_takes_is_told_before_the_proof_renders_its_value_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which rewrite a chart takes is known from the value sets the user gives; groundx, whose templates no rewrite
    takes, still had the proof's value sets (each count changed and 0, each switch flipped, a device added to every
    map) rendered and migrated before fix said it was manual work: 5 renders and 6 migrations of its 8 s. Now only
    the user's value sets are, and the message is the same."""
    chart = settings_chart(tmp_path)
    rendered: list[str] = []
    real = helm_run._rendered

    def labelled(root: Path, variations: list[Any]) -> Any:
        rendered.extend(v.label for v in variations)
        return real(root, variations)

    monkeypatch.setattr(helm_run, "_rendered", labelled)
    outcome = _fix(chart)
    assert "templates/app.yaml:3: pattern F" in outcome.manual, outcome.report()
    assert rendered == ["default values"], rendered


TPL_TEMPLATE = deployment(
    "f",
    """\
      containers:
        - name: f
          image: f:1
          resources:
            {{- tpl .Values.extra . | nindent 12 }}
""",
)


def test_a_shape_no_rewrite_takes_is_named_with_what_the_rewrites_take(tmp_path: Path) -> None:
    """A resources block rendered with `tpl` from a values string (pattern F): manual work at the template line, and
    the reason says which shapes the idiomatic rewrite does take. Was: 'the idiomatic rewrite takes pattern A only',
    untrue since the pass-through (B, C), the name lookup (E) and the helper rewrite (D)."""
    values = "extra: |\n  limits:\n    nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "fch", {"templates/d.yaml": TPL_TEMPLATE, "values.yaml": values})
    outcome = _fix(chart)
    assert not outcome.proven and "templates/d.yaml:15: pattern F" in outcome.manual, outcome.report()
    assert "pattern A only" not in outcome.manual and "a values resources map (B, C)" in outcome.manual


# a device key named by a variable that a vendor helper sets (the helper picks `nvidia.com/gpu` or `amd.com/gpu`)
VENDOR_HELPER = """\
{{- define "app.gpuResource" -}}
{{- if eq .Values.gpu.vendor "amd" }}amd.com/gpu{{ else }}nvidia.com/gpu{{ end }}
{{- end }}
"""
VENDOR_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
    - name: app
      image: busybox
      resources:
        limits:
          {{- $gpuResource := include "app.gpuResource" . }}
          {{ $gpuResource }}: {{ .Values.gpu.count }}
"""


def test_a_device_name_from_a_vendor_helper_names_the_helper(tmp_path: Path) -> None:
    """Was: 'this line is none of them', which leaves the user to find what the line does. Now the reason names the
    variable and the helper that sets it."""
    chart = chart_with(
        tmp_path,
        "vendor",
        {
            "templates/_helpers.tpl": VENDOR_HELPER,
            "templates/pod.yaml": VENDOR_POD,
            "values.yaml": "gpu: {vendor: nvidia, count: 1}\n",
        },
    )
    report = _fix(chart).report()
    assert "`$gpuResource` comes from the helper `app.gpuResource`" in report


# a GPU switch writing the device key from its own values, and in its `else` the values' resources map whole
# (clusterjellyfin's workers); the values name the device in that map too
SWITCHED = deployment(
    "worker",
    """\
      containers:
        - name: worker
          image: busybox
          {{- if .Values.gpu.enabled }}
          resources:
            requests:
              {{- toYaml .Values.resources.requests | nindent 14 }}
              {{ .Values.gpu.resource }}: {{ .Values.gpu.count }}
            limits:
              {{- toYaml .Values.resources.limits | nindent 14 }}
              {{ .Values.gpu.resource }}: {{ .Values.gpu.count }}
          {{- else }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          {{- end }}
""",
)


def test_a_device_the_switch_leaves_on_the_device_plugin_is_named_where_it_stays(tmp_path: Path) -> None:
    gpu = {"enabled": False, "resource": "nvidia.com/gpu", "count": 1}
    values = yaml.safe_dump({"gpu": gpu, "resources": {"requests": {"cpu": 1}, "limits": {"cpu": 1}}})
    chart = chart_with(tmp_path, "worker", {"values.yaml": values, "templates/worker.yaml": SWITCHED})
    given = tmp_path / "gpu.yaml"  # the README's example: the switch on, and the device in the map as well
    given.write_text("gpu:\n  enabled: true\nresources:\n  limits:\n    nvidia.com/gpu: 1\n")
    options = ChartOptions(values_files=(given,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    # with the GPU switch off, the map's nvidia.com/gpu stays a device-plugin request under the DRA switch
    assert "gpu.enabled flipped to false and the DRA switch on" in outcome.manual
    assert "still asks the device plugin for nvidia.com/gpu at Deployment worker" in outcome.manual
    assert "spec.template.spec.containers[0].resources.limits" in outcome.manual


def test_a_chart_name_that_would_become_template_code_is_left_to_the_user(run_cli: RunCli, tmp_path: Path) -> None:
    """The rewrite writes the chart's name into template strings (`include "NAME.draClaimSpec"`): a name with a quote
    and braces gave a patch that did not parse and a render error as the reason; now fix names Chart.yaml and writes
    nothing."""
    template = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: i\n"
        "    resources:\n      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n"
    )
    chart = chart_with(tmp_path, "gpu", {"templates/pod.yaml": template, "values.yaml": "gpus: 1\n"})
    (chart / "Chart.yaml").write_text('apiVersion: v2\nname: "gpu\\"}}{{ fail \\"x\\" }}"\nversion: 0.1.0\n')
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    code, out, err = run_cli(["fix", chart])
    assert code != 0, out
    assert "Chart.yaml: the chart name" in err and "rename the chart" in err, err
    assert "suggested patch" not in err
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
