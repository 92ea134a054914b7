"""Chart shapes of media, home-lab and library-based charts (plexinc's plex-media-server, bjw-s common and the charts
built on it such as app-template and immich), each in a small chart built here: the idiomatic rewrite is proven where
it can be, and a chart it cannot take says why. Renders are real (the Helm engine embedded in helm-python-sdk).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, dramigrate_in_process

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


RULES = load_rules()
T136 = Target.parse("1.36")

# plex-media-server's shape: the whole `resources:` block inside `with .Values.pms.resources`, the user's limits
# written by a toYaml action line beside a flag-guarded literal device key, and plain `tolerations:`/`affinity:`
# toYaml lines whose defaults are an empty list and an empty map.
PLEX = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-pms
spec:
  serviceName: pms
  selector:
    matchLabels: {app: pms}
  template:
    metadata:
      labels: {app: pms}
    spec:
      tolerations:
        {{- toYaml .Values.tolerations | nindent 8 }}
      affinity:
        {{- toYaml .Values.affinity | nindent 8 }}
      containers:
      - name: pms
        image: plexinc/pms-docker
        {{- with .Values.pms.resources }}
        resources:
          limits:
          {{- with .limits }}
            {{ toYaml . | indent 12 | trim }}
          {{- end }}
          {{- if and $.Values.pms.gpu.nvidia.enabled (not (hasKey .limits "nvidia.com/gpu")) }}
            nvidia.com/gpu: 1
          {{- end }}
        {{- end }}
"""
PLEX_VALUES = """\
pms:
  gpu:
    nvidia:
      enabled: true
  resources:
    limits:
      memory: 4Gi
tolerations: []
affinity: {}
"""


def docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    return [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]


def pod(chart: Path, *sets: str) -> dict[str, Any]:
    (workload,) = [d for d in docs(chart, *sets) if d["kind"] == "StatefulSet"]
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


@pytest.fixture(scope="module")
def plex(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("plex")
    original = chart_with(root / "original", "pms", {"templates/statefulset.yaml": PLEX, "values.yaml": PLEX_VALUES})
    chart = shutil.copytree(original, root / "fixed" / "pms")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart, outcome


def test_claims_inside_with_read_the_switch_from_the_root(plex: tuple[Path, Path, ChartOutcome]) -> None:
    """The `claims:` added under a `resources:` that sits inside `with .Values.pms.resources` reads the switch from
    the root (was: `.Values.dra.enabled`, a nil pointer there, and the rewrite was manual): through `$dra`, which the
    pod's tolerations and claim test too, defined outside the `with`."""
    template = (plex[1] / "templates" / "statefulset.yaml").read_text()
    claims = template.index("          claims:\n")
    guard = template.rindex("{{- if ", 0, claims)
    assert template[guard:claims].startswith("{{- if $dra }}"), template
    assert template.index("{{- $dra := and .Values.dra.enabled ") < template.index("{{- with .Values.pms.resources")
    assert pod(plex[1])["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]


def test_limits_written_by_an_action_line_stay_beside_the_claim(plex: tuple[Path, Path, ChartOutcome]) -> None:
    """`{{ toYaml . | indent 12 | trim }}` under `limits:` writes the user's limits: only the device key is
    wrapped, so the memory limit stays with the switch on (was: the whole `limits:` block wrapped, the memory limit
    gone)."""
    limits = pod(plex[1])["containers"][0]["resources"]["limits"]
    assert limits == {"memory": "4Gi"}
    assert pod(plex[1], "dra.enabled=false")["containers"][0]["resources"]["limits"] == {
        "memory": "4Gi",
        "nvidia.com/gpu": 1,
    }


def test_an_empty_tolerations_list_takes_the_dra_toleration(plex: tuple[Path, Path, ChartOutcome]) -> None:
    """`tolerations:` then `{{- toYaml .Values.tolerations | nindent 8 }}` with the default `[]`: the DRA branch
    writes the list only when it has items, so the added entry is valid YAML (was: `[]` then `- key:`, a parse
    error); with the switch off the render is byte-identical."""
    original, chart, _ = plex
    assert pod(chart)["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod(chart, "tolerations[0].key=dedicated", "tolerations[0].operator=Exists")["tolerations"] == [
        {"key": "dedicated", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    off = [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=("dra.enabled=false",)))]
    assert off == [(m.source, m.text) for m in render_chart(original, RenderOptions())]


def test_migration_keeps_an_empty_affinity_it_did_not_empty(run_cli: RunCli, tmp_path: Path) -> None:
    """`affinity: {}` as written stays through the migration (was: dropped, so proof D of a chart rendering
    `affinity: {}` found an object the migrated render lacked); an affinity the migration empties still goes."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  affinity: {}\n  containers:\n  - name: c\n"
        "    image: x\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    )
    code, out, err = run_cli(["fix", str(manifest)])
    assert code == 0, err
    (migrated,) = [d for d in yaml.safe_load_all(manifest.read_text()) if d and d["kind"] == "Pod"]
    assert migrated["spec"]["affinity"] == {}
    assert migrated["spec"]["resourceClaims"]


# A library chart in the bjw-s common style: its schema has a remote `$id` (so its relative `$ref`s are remote
# too), the parent's schema is one `$ref` to that URL, and its template writes `---` before each object.
LIB_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "$id": "https://schemas.example.invalid/lib/common/values.schema.json",
    "type": "object",
    "properties": {"main": {"$ref": "schemas/container.json"}},
}
CONTAINER_SCHEMA = {"type": "object", "properties": {"resources": {"type": "object"}}, "required": ["resources"]}
LIB_TEMPLATE = """\
{{- define "lib.all" -}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: main
          image: x
          {{- with .Values.main.resources }}
          resources: {{- toYaml . | nindent 12 }}
          {{- end }}
{{- end }}
"""


def library_chart(root: Path) -> Path:
    chart = chart_with(
        root,
        "app",
        {
            "templates/common.yaml": '{{ include "lib.all" . }}\n',
            "values.yaml": "main:\n  resources:\n    limits:\n      amd.com/gpu: 1\n",
            "values.schema.json": json.dumps({"$ref": LIB_SCHEMA["$id"]}),
        },
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 1.0.0\n"
        "  repository: https://charts.example.invalid\n"
    )
    chart_with(
        chart / "charts",
        "lib",
        {
            "templates/_all.tpl": LIB_TEMPLATE,
            "values.schema.json": json.dumps(LIB_SCHEMA),
            "schemas/container.json": json.dumps(CONTAINER_SCHEMA),
        },
        version="1.0.0",
    )
    (chart / "charts" / "lib" / "Chart.yaml").write_text("apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n")
    return chart


def test_library_schema_urls_are_read_from_the_chart(tmp_path: Path) -> None:
    """The library's schema URLs name files the chart ships: Helm reads those files instead of fetching the URLs
    (was: `helm: the chart does not render`, the fetch of schemas.example.invalid failing); the schema still
    applies (a values file breaking it is refused), and the chart's own files are left as they were."""
    chart = library_chart(tmp_path)
    before = {p: p.read_bytes() for p in chart.rglob("*.json")}
    (deployment,) = [d for d in docs(chart) if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"amd.com/gpu": 1}}
    with pytest.raises(HelmError):  # required by the library's schema/container.json
        docs(chart, "main.resources=null")
    assert {p: p.read_bytes() for p in chart.rglob("*.json")} == before


def test_library_objects_after_their_own_separator_keep_their_template(run_cli: RunCli, tmp_path: Path) -> None:
    """A template whose output starts with `---` prints as `# Source:` then `---`: the device request maps to that
    template, through the include to the library line that writes it (was: no template for the object, then an
    internal error, KeyError)."""
    chart = library_chart(tmp_path)
    code, out, err = run_cli(["lint", str(chart), "--format", "json"])
    assert "internal" not in out + err, out + err
    findings = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert findings and all(f["file"].endswith("charts/lib/templates/_all.tpl") for f in findings), findings


ARC = """\
apiVersion: actions.github.com/v1alpha1
kind: AutoscalingRunnerSet
metadata:
  name: gpu-runners
spec:
  githubConfigUrl: https://github.com/example-org
  template:
    spec:
      containers:
        - name: runner
          image: ghcr.io/actions/actions-runner:latest
          resources:
            limits:
              nvidia.com/gpu: 2
"""


def test_github_runner_scale_set_is_a_workload(run_cli: RunCli, tmp_path: Path) -> None:
    """A GitHub Actions runner scale set (gha-runner-scale-set renders an AutoscalingRunnerSet) asking for GPUs is
    migrated in its pod template, with the controller release whose CRD keeps the claims named (was: not a
    workload kind, 'nothing to fix', the GPU request left as it was)."""
    manifest = tmp_path / "runners.yaml"
    manifest.write_text(ARC)
    code, out, err = run_cli(["fix", str(manifest)])
    assert code == 0, err
    runners, claim = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    spec = runners["spec"]["template"]["spec"]
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert spec["resourceClaims"][0]["resourceClaimTemplateName"] == claim["metadata"]["name"]
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "actions-runner-controller 0.11.0" in out + err


def loader_chart(root: Path) -> Path:
    """A chart whose only template includes a library's loader, and the library builds the whole object as a dict
    from values, as bjw-s common does (app-template, immich): no line of the object is in a template."""
    chart = library_chart(root)
    (chart / "charts" / "lib" / "templates" / "_all.tpl").write_text(
        '{{- define "lib.all" -}}\n---\n{{ toYaml (dict "apiVersion" "apps/v1" "kind" "Deployment" "metadata" '
        '(dict "name" .Release.Name) "spec" (dict "selector" (dict "matchLabels" (dict "app" "x")) "template" (dict '
        '"metadata" (dict "labels" (dict "app" "x")) "spec" (dict "containers" (list (merge (dict "name" "main" '
        '"image" "x") .Values.main)))))) }}\n{{- end }}\n'
    )
    return chart


def test_a_template_that_only_includes_a_library_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    """A chart whose template only includes a library's loader (app-template, immich, k8s-at-home charts) and whose
    library builds the container from values as a whole: the manual reason names the library and why it is not
    rewritten (was: 'no line of a helper in this chart writes the device key')."""
    chart = loader_chart(tmp_path)
    code, out, err = run_cli(["diff", str(chart)])
    assert "the objects are written by the library chart charts/lib" in out + err, out + err
    assert "helm dependency update" in out + err


def deployment(pod_spec: str) -> str:
    head = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-app\nspec:\n"
        "  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n"
    )
    return head + pod_spec


# geekxflood's media charts (ersatztv, jellyfin, plex, tdarr, tunarr): the device key in both branches of an
# `if ... else` under `if .Values.gpu.enabled`, the user's limits beside it written by a `range`.
BRANCHES = deployment("""\
      containers:
        - name: app
          image: x
          resources:
            {{- if .Values.gpu.enabled }}
            {{- if or .Values.resources.limits .Values.resources.requests }}
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- range $key, $value := .Values.resources.limits }}
              {{ $key }}: {{ $value }}
              {{- end }}
            {{- else }}
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
            {{- end }}
            {{- else }}
            {{- toYaml .Values.resources | nindent 12 }}
            {{- end }}
""")


def test_device_key_in_both_branches_of_an_if_else(tmp_path: Path) -> None:
    """The pod asks for the device whichever branch renders, so its claim stands under what the branches share
    (`gpu.enabled`); each key is wrapped where it is (was: manual, 'the device key is inside `if ... else`')."""
    values = "gpu:\n  enabled: true\n  count: 1\nresources: {}\n"
    original = chart_with(tmp_path / "original", "tv", {"templates/deployment.yaml": BRANCHES, "values.yaml": values})
    chart = shutil.copytree(original, tmp_path / "fixed" / "tv")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for sets in [(), ("resources.limits.memory=1Gi",)]:
        (workload,) = [d for d in docs(chart, "gpu.count=2", *sets) if d["kind"] == "Deployment"]
        resources = workload["spec"]["template"]["spec"]["containers"][0]["resources"]
        assert resources["claims"] == [{"name": "gpu"}], resources
        assert "nvidia.com/gpu" not in (resources.get("limits") or {})
        (rct,) = [d for d in docs(chart, "gpu.count=2", *sets) if d["kind"] == "ResourceClaimTemplate"]
        assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert not [d for d in docs(chart, "gpu.enabled=false") if d["kind"] == "ResourceClaimTemplate"]


# ollama's shape: an init container pulls the models on the GPU (only when models are listed), then the server
# runs on it; both ask for `gpu.count` devices.
PULL_THEN_SERVE = deployment("""\
      {{- if .Values.models }}
      initContainers:
      - name: pull
        image: x
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpu.count | quote }}
      {{- end }}
      containers:
      - name: serve
        image: x
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpu.count | quote }}
""")


def test_init_container_and_server_share_the_claim(tmp_path: Path) -> None:
    """The migration gives the init container and the server one claim with one request; the rewrite does the
    same, the pod's claim before `containers:` (not inside the init containers' `if`), and names the request
    only while both containers render (was: manual, 'the device keys sit under different conditions')."""
    values = "models: []\ngpu:\n  count: 1\n"
    files = {"templates/deployment.yaml": PULL_THEN_SERVE, "values.yaml": values}
    original = chart_with(tmp_path / "original", "llm", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "llm")
    outcome = run_chart(chart, ChartOptions(set_values=("models[0]=llama3",)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    (alone,) = [d for d in docs(chart) if d["kind"] == "Deployment"]
    assert alone["spec"]["template"]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert len(alone["spec"]["template"]["spec"]["resourceClaims"]) == 1
    (both,) = [d for d in docs(chart, "models[0]=llama3") if d["kind"] == "Deployment"]
    spec = both["spec"]["template"]["spec"]
    for container in [*spec["initContainers"], *spec["containers"]]:
        assert container["resources"] == {"claims": [{"name": "gpu", "request": "gpu"}]}, container
    (rct,) = [d for d in docs(chart, "models[0]=llama3") if d["kind"] == "ResourceClaimTemplate"]
    assert [r["name"] for r in rct["spec"]["spec"]["devices"]["requests"]] == ["gpu"]


# rffmpeg-worker's shape: one Deployment per item of `workers`, each asking for `$.Values.gpu.count` GPUs.
PER_WORKER = """\
{{- range .Values.workers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ .name }}
spec:
  selector:
    matchLabels: {app: {{ .name }}}
  template:
    metadata:
      labels: {app: {{ .name }}}
    spec:
      nodeName: {{ .node }}
      containers:
        - name: worker
          image: x
          resources:
            limits:
              nvidia.com/gpu: {{ $.Values.gpu.count }}
{{- end }}
"""


@pytest.mark.parametrize("item", ["", "$w"], ids=["dot", "variable"])
def test_one_claim_template_for_every_item_of_a_range(tmp_path: Path, item: str) -> None:
    """A Deployment per item of a values list, each with the chart-wide count: one claim template serves them all
    (each pod gets its own claim from it), named without the item; what the rewrite adds inside the `range` reads
    the root as `$` (was: manual, 'the device key is inside `range .Values.workers`'). The item as a variable
    (`range $w := ...`, `{{ $w.name }}`) likewise (was: manual, 'the device request reads `$w`')."""
    values = "workers: []\ngpu:\n  count: 1\n"
    template = (
        PER_WORKER.replace("range .Values", f"range {item} := .Values").replace("{{ .", "{{ $w.")
        if item
        else PER_WORKER
    )
    files = {"templates/deployment.yaml": template, "values.yaml": values}
    original = chart_with(tmp_path / "original", "rf", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "rf")
    two = ("workers[0].name=a", "workers[0].node=n1", "workers[1].name=b", "workers[1].node=n2")
    outcome = run_chart(chart, ChartOptions(set_values=two), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    rendered = docs(chart, *two, "gpu.count=2")
    (rct,) = [d for d in rendered if d["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "-a-" not in rct["metadata"]["name"] and "-b-" not in rct["metadata"]["name"]
    workers = [d for d in rendered if d["kind"] == "Deployment"]
    assert [w["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] for w in workers] == [
        rct["metadata"]["name"]
    ] * 2
    assert not docs(chart)  # no worker, no claim template


# kubemark-ai's shape: one benchmark Deployment per name of a values list of strings, named after the item itself
# (`{{ . }}`), each asking for the chart-wide count.
PER_TEST = PER_WORKER.replace("range .Values.workers", "range .Values.tests").replace("{{ .name }}", "{{ . }}")


def test_one_claim_template_for_a_range_over_names(tmp_path: Path) -> None:
    """The items of the `range` are the names themselves, read as `{{ . }}` in the workload's name: the one claim
    template for all of them is named without the item too (was: manual, 'the rewritten chart does not render:
    mapping values are not allowed', the chart's root printed into the claim template's name)."""
    values = "tests: [all-reduce, all-gather]\ngpu:\n  count: 1\n"
    files = {
        "templates/deployment.yaml": PER_TEST.replace("nodeName: {{ .node }}", "nodeName: n1"),
        "values.yaml": values,
    }
    original = chart_with(tmp_path / "original", "km", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "km")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    rendered = docs(chart, "gpu.count=2")
    (rct,) = [d for d in rendered if d["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "all-" not in rct["metadata"]["name"]
    tests = [d for d in rendered if d["kind"] == "Deployment"]
    assert [t["metadata"]["name"] for t in tests] == ["release-name-all-reduce", "release-name-all-gather"]
    assert {t["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] for t in tests} == {
        rct["metadata"]["name"]
    }


# mmmateusz's comfyui: the user's limits written by `with` + toYaml after the device key, inside `limits:`.
LIMITS_AFTER_KEY = deployment("""\
      containers:
        - name: app
          image: x
          resources:
            {{- if .Values.gpu.enabled }}
            limits:
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- with .Values.resources.limits }}
              {{- toYaml . | nindent 14 }}
              {{- end }}
            {{- end }}
""")
SCHEMA = """\
{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "gpu": {
      "type": "object",
      "properties": {
        "enabled": { "type": "boolean" },
        "count": { "type": ["integer", "string"] }
      }
    },
    "resources": {
      "type": "object",
      "properties": {
        "limits": {
          "type": "object"
        },
        "requests": { "type": "object" }
      }
    }
  }
}
"""


def test_limits_after_the_key_and_a_schema_written_as_the_chart_writes_it(tmp_path: Path) -> None:
    """The toYaml line after the device key writes into `limits:`, so only the key is wrapped and the memory limit
    stays with the switch on (was: the whole `limits:` wrapped, a YAML error); values.schema.json keeps
    `{ "type": "boolean" }` one-liners and the multi-line `"limits"` as they are, so its diff is the `dra` block
    alone (was: every prettier-style one-liner rewritten, 129 lines on the chart), whose keys are one-liners too
    (was: four lines each)."""
    values = "gpu:\n  enabled: true\n  count: 1\nresources:\n  limits:\n    memory: 4Gi\n"
    files = {"templates/deployment.yaml": LIMITS_AFTER_KEY, "values.yaml": values, "values.schema.json": SCHEMA}
    original = chart_with(tmp_path / "original", "ui", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "ui")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    (workload,) = [d for d in docs(chart) if d["kind"] == "Deployment"]
    assert workload["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"memory": "4Gi"}
    schema = (chart / "values.schema.json").read_text()
    assert schema.startswith(SCHEMA[: SCHEMA.rindex("    }\n  }\n}")]), schema
    assert json.loads(schema)["properties"]["dra"]["properties"]["enabled"]["type"] == "boolean"
    assert '\n        "enabled": { "type": "boolean", "default": true },\n' in schema, schema


def test_own_objects_named_by_a_library_helper_are_not_called_library_written(run_cli: RunCli, tmp_path: Path) -> None:
    """A template that writes its Deployment itself and only takes its name from a library helper (bitnami's
    `common.names.fullname`) is not 'written by the library chart': the manual reason is about its own shape
    (was: the library reason, for any include of a library define)."""
    chart = library_chart(tmp_path)
    (chart / "charts" / "lib" / "templates" / "_names.tpl").write_text(
        '{{- define "lib.fullname" -}}\n{{ .Release.Name }}-app\n{{- end }}\n'
    )
    (chart / "templates" / "_resources.tpl").write_text(  # an own helper writing the map as JSON: no rewrite takes it
        '{{- define "app.resources" -}}\n{{ .Values.main.resources | toJson }}\n{{- end }}\n'
    )
    (chart / "templates" / "common.yaml").write_text(
        deployment(
            "      containers:\n        - name: main\n          image: x\n"
            '          resources: {{ include "app.resources" . }}\n'
        ).replace("{{ .Release.Name }}-app", '{{ include "lib.fullname" . }}')
    )
    code, out, err = run_cli(["diff", str(chart)])
    assert "needs manual work" in out + err, out + err
    assert "written by the library chart" not in out + err, out + err


def test_a_schema_url_the_chart_does_not_ship_is_never_fetched(tmp_path: Path) -> None:
    """A values schema naming a URL the chart does not ship (a chart under review could name any host) renders
    without reaching the network: a local server sees no request, and the chart renders as without the schema."""
    import http.server
    import threading

    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    schema = {
        "$schema": f"{url}/meta.json",
        "$id": f"{url}/lib/values.schema.json",
        "type": "object",
        "properties": {"gpus": {"$ref": f"{url}/probe.json"}, "name": {"$ref": "name.json"}},
    }
    files = {
        "templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.name }}\n",
        "values.yaml": "gpus: 1\nname: p\n",
        "values.schema.json": json.dumps(schema),
        "name.json": json.dumps({"type": "string"}),
    }
    chart = chart_with(tmp_path, "net", files)
    try:
        (manifest,) = render_chart(chart, RenderOptions())
    finally:
        server.shutdown()
    assert asked == []
    assert "name: p" in manifest.text


def test_renders_of_one_shared_copy_localize_its_schemas_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two renders of one shared copy rewrite the library's schema URLs at the same time (the proof renders from
    several threads): both finish and the schema reads the chart's file (was: FileNotFoundError from the second
    rename, both writers having used one temp file name, which failed a proof under load)."""
    from dramigrate.helm import schemarefs

    chart = library_chart(tmp_path)
    replace = os.replace
    others: list[int] = []

    def another_render_between(src: str, dst: str) -> None:
        if not others:  # a second render of the copy runs after this one wrote its temp file, before its rename
            others.append(-1)
            others[0] = schemarefs.localize_schema_refs(chart)
        replace(src, dst)

    monkeypatch.setattr(schemarefs.os, "replace", another_render_between)
    assert schemarefs.localize_schema_refs(chart) == 2
    assert others == [2]
    assert "example.invalid" not in (chart / "charts" / "lib" / "values.schema.json").read_text()
    assert not list(chart.rglob("*.dramigrate-tmp"))
