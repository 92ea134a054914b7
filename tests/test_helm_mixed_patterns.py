"""Charts whose templates reach the pod's device request in more than one way: one template passes a values
resources map through (pattern B), another writes the device key itself with a values count (pattern A). The
idiomatic rewrite gives each its own shape (resourceClaims beside the map, the dra.enabled switch around the key)
and proves them together."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, with_original

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")

POD = """\
{{{{- if eq .Values.mode "{name}" }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: app:1
          resources:
{resources}
{{{{- end }}}}
"""
# the server takes its resources map whole (pattern B); the workers write the device key (pattern A)
SERVER = POD.format(name="server", resources="            {{- toYaml .Values.server.resources | nindent 12 }}")
WORKERS = POD.format(
    name="workers",
    resources="            limits:\n              nvidia.com/gpu: {{ .Values.workers.gpus }}\n"
    "              memory: 1Gi",
)
VALUES = """\
# server or workers
mode: server
server:
  resources:
    limits:
      nvidia.com/gpu: 1
workers:
  gpus: 2
"""
WORKERS_FILE = "mode: workers\nworkers:\n  gpus: 4\n"


def fix(chart: Path, values: tuple[Path, ...]) -> ChartOutcome:
    outcome = run_chart(chart, ChartOptions(values_files=values), RULES, Settings(), T136, "fix")
    return outcome


def rendered(chart: Path, values: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    given = tuple(x for f in values for x in with_original(f))  # a DRA overlay after its file
    options = RenderOptions(values_files=given, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def texts(chart: Path, values: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=values, set_values=sets))]


def devices(docs: list[dict[str, Any]]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Per Deployment, the device-plugin keys left and the devices its claims ask for (through their templates)."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    left, claimed = {}, {}
    for d in docs:
        if d["kind"] != "Deployment":
            continue
        pod = d["spec"]["template"]["spec"]
        name = d["metadata"]["name"]
        left[name] = [k for c in pod["containers"] for k in (c["resources"].get("limits") or {}) if "/" in k]
        claimed[name] = sum(counts[rc["resourceClaimTemplateName"]] for rc in pod.get("resourceClaims") or [])
    return left, claimed


def test_a_map_passed_through_and_a_literal_key_in_one_chart(tmp_path: Path) -> None:
    """aioneks-inference's shape: the default vLLM Deployment takes `resources` whole, the LeaderWorkerSet of a
    shipped values file writes `nvidia.com/gpu` with the count knob. Both get a proven rewrite, whichever values
    the user names, and the default render is unchanged."""
    files = {"values.yaml": VALUES, "values-workers.yaml": WORKERS_FILE}
    original = chart_with(tmp_path / "original", "app", {**files, "templates/server.yaml": SERVER})
    (original / "templates" / "workers.yaml").write_text(WORKERS)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = fix(chart, (chart / "values-workers.yaml",))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    workers_file = chart / "values-workers.yaml"
    # the device-plugin values render as before, the DRA switch off (its default with --opt-in)
    off = ("dra.enabled=false",)
    assert texts(chart, sets=off) == texts(original)
    assert texts(chart, (workers_file,), off) == texts(original, (workers_file,))
    # the literal key takes the switch: each worker pod's claim asks for the knob's 4 devices
    left, claimed = devices(rendered(chart, (workers_file,), ("dra.enabled=true",)))
    assert left == {"workers": []} and claimed == {"workers": 4}
    # the map takes the pass-through: values-dra.yaml (the chart's defaults as DRA values) gives the server its claim
    left, claimed = devices(rendered(chart, (chart / "values-dra.yaml",), ("dra.enabled=true",)))
    assert left == {"server": []} and claimed == {"server": 1}
    server = (chart / "templates" / "server.yaml").read_text()
    assert ".Values.server.resourceClaims" in server and ".Values.dra.enabled" not in server
    assert ".Values.dra.enabled" in (chart / "templates" / "workers.yaml").read_text()


def test_one_template_with_both_shapes_is_named(tmp_path: Path) -> None:
    """A pod spec whose one container takes the map whole and another writes the key itself: manual work, with the
    template line of each shape."""
    sidecar = (
        "        - name: sidecar\n          image: app:1\n          resources:\n"
        "            limits:\n              nvidia.com/gpu: {{ .Values.workers.gpus }}\n"
    )
    both = SERVER.replace("{{- end }}\n", sidecar + "{{- end }}\n")
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/server.yaml": both})
    (chart / "templates" / "workers.yaml").write_text(WORKERS)
    (chart / "values-workers.yaml").write_text(WORKERS_FILE)
    outcome = fix(chart, (chart / "values-workers.yaml",))
    assert not outcome.proven
    lines = both.splitlines()
    at_map = next(n for n, line in enumerate(lines, 1) if "toYaml .Values.server.resources" in line)
    at_key = next(n for n, line in enumerate(lines, 1) if "nvidia.com/gpu" in line)
    assert f"templates/server.yaml:{at_map}: pattern B" in outcome.manual, outcome.manual
    assert f"line {at_key} writes the device key itself (pattern A)" in outcome.manual
    assert "the rewrite takes one of them per template" in outcome.manual


RAY = """\
{{- if eq .Values.mode "ray" }}
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: head
            image: ray:1
  workerGroupSpecs:
    - groupName: worker
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: worker
              image: ray:1
              resources:
                {{- toYaml .Values.worker.resources | nindent 16 }}
{{- end }}
"""
PLAIN = POD.format(name="plain", resources="            {{- toYaml .Values.worker.resources | nindent 12 }}")


def test_a_kuberay_group_that_writes_empty_ray_start_params(tmp_path: Path) -> None:
    """`rayStartParams: {}` written in the template (aioneks' RayService): the DRA values give the group its
    `num-gpus` through a sibling of the map, and with the device-plugin values the group renders `{}` as before. The
    map also feeds a plain Deployment in another values file of the chart, whose DRA values need no `num-gpus`."""
    files = {
        "values.yaml": "mode: ray\nworker:\n  resources: {}\n",
        "templates/ray.yaml": RAY,
        "templates/plain.yaml": PLAIN,
        "values-plain.yaml": "mode: plain\nworker:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n",
    }
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    gpu = tmp_path / "ray-gpu.yaml"
    gpu.write_text("worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    outcome = fix(chart, (gpu,))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert texts(chart, (gpu,)) == texts(original, (gpu,))
    docs = rendered(chart, (tmp_path / "ray-gpu-dra.yaml",))
    (ray,) = [d for d in docs if d["kind"] == "RayCluster"]
    group = ray["spec"]["workerGroupSpecs"][0]
    assert group["rayStartParams"] == {"num-gpus": "2"}
    assert ray["spec"]["headGroupSpec"]["rayStartParams"] == {}
    assert group["template"]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


KEYED = deployment(
    "server",
    """\
      containers:
        - name: server
          image: app:1
          resources:
            {{- if eq .Values.accelerator "gpu" }}
            {{- toYaml .Values.resources.gpu | nindent 12 }}
            {{- else }}
            {{- toYaml .Values.resources.neuron | nindent 12 }}
            {{- end }}
""",
)


def test_a_values_file_that_picks_another_keyed_map_than_the_defaults(tmp_path: Path) -> None:
    """The defaults ask for a GPU through `resources.gpu`, the user's file picks `resources.neuron`: given with the
    chart's values-dra.yaml, the file's DRA variant drops the GPU's claim template, which no pod names then."""
    values = (
        "accelerator: gpu\nresources:\n  gpu:\n    limits:\n      nvidia.com/gpu: 1\n"
        "  neuron:\n    limits:\n      aws.amazon.com/neuron: 1\n"
    )
    chart = chart_with(tmp_path, "app", {"values.yaml": values, "templates/server.yaml": KEYED})
    neuron = tmp_path / "neuron.yaml"
    neuron.write_text("accelerator: neuron\n")
    outcome = fix(chart, (neuron,))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    docs = rendered(chart, (chart / "values-dra.yaml", tmp_path / "neuron-dra.yaml"))
    templates = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"]
    (server,) = [d for d in docs if d["kind"] == "Deployment"]
    claims = server["spec"]["template"]["spec"]["resourceClaims"]
    assert [c["resourceClaimTemplateName"] for c in claims] == templates
    assert len(templates) == 1


def test_a_kuberay_group_that_writes_literal_ray_start_params(tmp_path: Path) -> None:
    """`rayStartParams:` with literal keys in the template (instill-model's RayService, `disable-usage-stats`): the
    DRA values give the group its `num-gpus` after them, as the manifest migration of the original render sets it
    (KubeRay cannot derive it from claims); with the device-plugin values the group renders as before (was: manual,
    "rayStartParams.num-gpus: expected "1", the rewritten chart has none")."""
    ray = RAY.replace("      rayStartParams: {}\n", '      rayStartParams:\n        disable-usage-stats: "true"\n')
    files = {"values.yaml": "mode: ray\nworker:\n  resources: {}\n", "templates/ray.yaml": ray}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    gpu = tmp_path / "ray-gpu.yaml"
    gpu.write_text("worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    outcome = fix(chart, (gpu,))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert texts(chart, (gpu,)) == texts(original, (gpu,))
    (cluster,) = [d for d in rendered(chart, (tmp_path / "ray-gpu-dra.yaml",)) if d["kind"] == "RayCluster"]
    assert cluster["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {"disable-usage-stats": "true", "num-gpus": "2"}


TWO_MAPS = deployment(
    "server",
    """\
      containers:
        {{- if .Values.engine.enabled }}
        - name: engine
          image: engine:1
          resources:
            {{- toYaml .Values.engine.resources | nindent 12 }}
        {{- end }}
        - name: app
          image: app:1
          resources:
            {{- toYaml .Values.app.resources | nindent 12 }}
""",
)


def test_a_pod_whose_containers_take_two_values_maps_gets_one_list_of_claims(tmp_path: Path) -> None:
    """The defaults give the engine container of a pod a GPU, a user's file turns the engine off and gives the app
    container of the same pod one: each render has one `resourceClaims:` with the claims of the container the
    template renders (two such keys would leave Helm only the last)."""
    gpu = "resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    values = f"engine:\n  enabled: true\n  {gpu}app:\n  resources: {{}}\n"
    chart = chart_with(tmp_path, "app", {"values.yaml": values, "templates/server.yaml": TWO_MAPS})
    off = tmp_path / "off.yaml"
    off.write_text(f"engine:\n  enabled: false\napp:\n  {gpu}")
    outcome = fix(chart, (off,))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for files, names in (((), ["engine"]), ((tmp_path / "off-dra.yaml",), ["app"])):
        docs = rendered(chart, (chart / "values-dra.yaml", *files))
        (server,) = [d for d in docs if d["kind"] == "Deployment"]
        spec = server["spec"]["template"]["spec"]
        asked = {c["name"]: [x["name"] for x in c["resources"].get("claims", [])] for c in spec["containers"]}
        assert [name for name, claims in asked.items() if claims] == names
        assert [c["name"] for c in spec["resourceClaims"]] == asked[names[0]]
