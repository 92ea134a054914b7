"""The idiomatic rewrite for patterns B and C (a container's `resources` passed through from values): a
`resourceClaims` pass-through beside the map, one template rendering `resourceClaimTemplates` from values,
and a DRA variant of each values file that asks for devices (`gpu.yaml` -> `gpu-dra.yaml`).

Renders are real (the Helm engine embedded in helm-python-sdk). One fix per module, shared by the tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import (
    TOYAML_SERVER,
    RunCli,
    assert_second_fix_quiet,
    chart_with,
    deployment,
    dra_render,
    dramigrate_in_process,
)
from test_helm_mixed_patterns import KEYED

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process (these tests are about what a run writes and says, not the process boundary)."""
    return dramigrate_in_process


# a trainer Deployment whose container takes .Values.trainer.resources (pattern C), and a launcher Job that takes
# another map (.Values.launcher.resources, pattern B): only the trainer's pod may get the claims
WORKLOADS = deployment(
    "{{ .Release.Name }}-trainer",
    """\
      {{- with .Values.trainer.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: trainer
          image: {{ .Values.image }}
          {{- with .Values.trainer.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-launcher
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: launcher
          image: {{ .Values.image }}
          resources:
            {{- toYaml .Values.launcher.resources | nindent 12 }}
""",
)
VALUES = """\
# -- Image
image: app:1
trainer:
  # -- Trainer container resources
  resources: {}
  # -- Trainer tolerations
  tolerations: []
launcher:
  # -- Launcher container resources
  resources:
    limits:
      cpu: 100m
"""
GPU = """\
# our GPU trainer
trainer:
  resources:
    limits:
      memory: 8Gi  # per pod
      nvidia.com/gpu: 2
"""


def write_chart(root: Path) -> Path:
    chart = root / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.3.0\n")
    (chart / "values.yaml").write_text(VALUES)
    (chart / "templates" / "workloads.yaml").write_text(WORKLOADS)
    return chart


def texts(chart: Path, values: tuple[Path, ...] = (), kube: str | None = None) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=values, kube_version=kube))]


def docs(chart: Path, values: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    out = [d for m in render_chart(chart, RenderOptions(values_files=values)) for d in yaml.safe_load_all(m.text) if d]
    return {d["kind"]: d for d in out}


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("passthrough")
    original = write_chart(root / "original")
    chart = shutil.copytree(original, root / "fixed" / "app")
    gpu = root / "gpu.yaml"
    gpu.write_text(GPU)
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart, gpu, outcome


def test_rewrite_passes_claims_through_beside_the_map(fixed: tuple[Path, Path, Path, ChartOutcome]) -> None:
    _, chart, gpu, outcome = fixed
    assert sorted(Path(c.rel).name for c in outcome.changes) == [
        "Chart.yaml",
        "gpu-dra.yaml",
        "resourceclaimtemplates.yaml",
        "values.yaml",
        "workloads.yaml",
    ]
    template = (chart / "templates" / "workloads.yaml").read_text()
    # only the trainer's pod (the one whose container takes trainer.resources) gets the pass-through
    assert template.count("resourceClaims") == 2
    assert "      {{- with .Values.trainer.resourceClaims }}\n      resourceClaims:\n" in template
    assert "launcher.resourceClaims" not in template
    assert gpu.read_text() == GPU  # the user's file stays: -f gpu.yaml is the way back
    values = (chart / "values.yaml").read_text()
    assert yaml.safe_load(values)["resourceClaimTemplates"] == {}
    # the pass-through's key documented beside its map, in the chart's comment style (helm-docs here)
    assert "  resources: {}\n  # -- DRA ResourceClaims of the pod (resource.k8s.io/v1" in values
    assert yaml.safe_load(values)["trainer"]["resourceClaims"] == []
    assert "resourceClaims" not in yaml.safe_load(values)["launcher"]
    added = sum(len(c.after.splitlines()) - len((c.before or "").splitlines()) for c in outcome.changes)
    assert added <= 60, added


def test_dra_values_file_is_an_overlay_of_what_dra_changes(fixed: tuple[Path, Path, Path, ChartOutcome]) -> None:
    """gpu-dra.yaml holds only what DRA changes, given after gpu.yaml (was: a copy of the whole file with the device
    key replaced in it): the device key nulled, the claims, the pod's keys, the claim template; a header says how."""
    _, _, gpu, _ = fixed
    dra = (gpu.parent / "gpu-dra.yaml").read_text()
    assert "`-f gpu.yaml -f gpu-dra.yaml`" in "".join(dra.splitlines(True)[:2]), dra
    values = yaml.safe_load(dra)
    assert values["trainer"]["resources"]["limits"] == {"nvidia.com/gpu": None}  # memory: 8Gi stays gpu.yaml's
    assert values["trainer"]["resources"]["claims"] == [{"name": "gpu"}]
    (claim,) = values["trainer"]["resourceClaims"]
    name = claim["resourceClaimTemplateName"].removeprefix("{{ .Release.Name }}-")  # rendered with tpl
    spec = values["resourceClaimTemplates"][name]["spec"]
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2


def test_original_values_render_byte_identical(fixed: tuple[Path, Path, Path, ChartOutcome]) -> None:
    original, chart, gpu, _ = fixed
    assert texts(chart) == texts(original)
    assert texts(chart, (gpu,)) == texts(original, (gpu,))


def test_dra_values_render_the_claims(fixed: tuple[Path, Path, Path, ChartOutcome]) -> None:
    _, chart, gpu, _ = fixed
    out = docs(chart, (gpu, gpu.parent / "gpu-dra.yaml"))
    pod = out["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "gpu"}]}
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == out["ResourceClaimTemplate"]["metadata"]["name"]
    # two releases in one namespace get a claim template each, each pod naming its own
    names = set()
    for release in ("blue", "green"):
        rendered = [
            d
            for m in render_chart(
                chart, RenderOptions(release_name=release, values_files=(gpu, gpu.parent / "gpu-dra.yaml"))
            )
            for d in yaml.safe_load_all(m.text)
            if d
        ]
        by_kind = {d["kind"]: d for d in rendered}
        name = by_kind["ResourceClaimTemplate"]["metadata"]["name"]
        claims = by_kind["Deployment"]["spec"]["template"]["spec"]["resourceClaims"]
        assert name.startswith(f"{release}-") and claims[0]["resourceClaimTemplateName"] == name
        names.add(name)
    assert len(names) == 2
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "resourceClaims" not in out["Job"]["spec"]["template"]["spec"]
    assert out["ResourceClaimTemplate"]["apiVersion"] == "resource.k8s.io/v1"
    with pytest.raises(HelmError, match=r"need Kubernetes 1\.34\+"):
        texts(chart, (gpu, gpu.parent / "gpu-dra.yaml"), kube="1.33")
    assert texts(chart, (gpu,), kube="1.33")  # the device-plugin values still render on an older cluster


def test_chart_defaults_get_a_values_dra_overlay(run_cli: RunCli, tmp_path: Path) -> None:
    """A GPU in the chart's own values.yaml: `values-dra.yaml` beside it nulls the default device key (Helm deletes a
    chart-default key set to null) and adds the claims; the chart's default render stays as it was."""
    chart = write_chart(tmp_path)
    (chart / "values.yaml").write_text(
        VALUES.replace("  resources: {}\n", "  resources:\n    limits:\n      nvidia.com/gpu: 1\n")
    )
    (chart / "ci").mkdir()  # a values file the chart ships: it overrides the default count
    (chart / "ci" / "two-gpus.yaml").write_text("trainer:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    before = texts(chart)
    code, _, err = run_cli(["fix", str(chart)])
    assert code == 0 and "default values (DRA values: values-dra.yaml)" in err, err
    assert "two-gpus.yaml (DRA values: two-gpus.yaml, two-gpus-dra.yaml)" in err, err  # each its own DRA file
    assert texts(chart) == before
    overlay = yaml.safe_load((chart / "values-dra.yaml").read_text())
    assert overlay["trainer"]["resources"] == {"limits": None, "claims": [{"name": "gpu"}]}
    pod = docs(chart, (chart / "values-dra.yaml",))["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]} and pod["resourceClaims"]
    # the shipped file's overlay, after it: its key set to null, else the chart's default 1 would come back
    shipped = yaml.safe_load((chart / "ci" / "two-gpus-dra.yaml").read_text())
    assert shipped["trainer"]["resources"] == {"limits": None, "claims": [{"name": "gpu"}]}
    out = docs(chart, (chart / "ci" / "two-gpus.yaml", chart / "ci" / "two-gpus-dra.yaml"))
    assert "limits" not in out["Deployment"]["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert out["ResourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


def test_a_shipped_values_file_named_from_outside_the_chart_gets_its_variant_beside_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """`fix app -f app/gpu.yaml` run from the chart's parent folder writes app/gpu-dra.yaml beside the file. Was:
    app/app/gpu-dra.yaml, the -f path (relative to the working directory) read again from the chart root."""
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/workloads.yaml": WORKLOADS, "gpu.yaml": GPU})
    code, _, err = run_cli(["fix", "app", "-f", "app/gpu.yaml"], cwd=tmp_path)
    assert code == 0, err
    assert not (chart / "app").exists()
    pod = docs(chart, (chart / "gpu.yaml", chart / "gpu-dra.yaml"))["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}] and pod["resourceClaims"]


def test_a_values_file_with_a_device_count_of_zero_gets_its_variant(run_cli: RunCli, tmp_path: Path) -> None:
    """A values file that gives one container a GPU and another `nvidia.com/gpu: 0` and nothing else (the migration
    drops the zero key, and that container's resources with it): its DRA variant claims for the first alone. Was: an
    internal error (KeyError: 'resources') and nothing written."""
    chart = write_chart(tmp_path)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "trainer:\n  resources:\n    limits:\n      nvidia.com/gpu: 0\n"
        "launcher:\n  resources:\n    limits:\n      cpu: 100m\n      nvidia.com/gpu: 1\n"
    )
    code, _, err = run_cli(["fix", str(chart), "-f", str(gpu)])
    assert code == 0, err
    out = docs(chart, (gpu, tmp_path / "gpu-dra.yaml"))
    trainer = out["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert not (trainer.get("resources") or {}).get("limits"), trainer  # `limits: null`: the overlay's, kept
    job = out["Job"]["spec"]["template"]["spec"]
    assert job["containers"][0]["resources"] == {"limits": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}
    assert out["ResourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_device_request_only_from_set_gets_values_dra_yaml(run_cli: RunCli, tmp_path: Path) -> None:
    """fix on the command line says how to use the values file it wrote for a device --set (was: manual work,
    "not set in a -f values file")."""
    chart = write_chart(tmp_path)
    device = "trainer.resources.limits.nvidia\\.com/gpu=1"
    code, out, err = run_cli(["fix", str(chart), "--set", device])
    assert code == 0 and f"use -f values-dra.yaml in place of --set {device}" in err, err
    assert (chart / "values-dra.yaml").is_file()


def test_ray_cluster_from_the_corpus(corpus: Path, tmp_path: Path) -> None:
    """KubeRay's chart renders `worker.resourceClaims` already: no pass-through of the claims, only the claim-template
    file, and the DRA values file carries the claims, the toleration and rayStartParams num-gpus for each group; the
    template joins that toleration to the group's own list and checks the map (test_helm_passthrough_later_files)."""
    chart = shutil.copytree(corpus / "kuberay/helm-chart/ray-cluster", tmp_path / "ray-cluster")
    for path in [chart, *chart.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)  # the corpus is read-only
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("worker:\n  resources:\n    limits: {cpu: '4', nvidia.com/gpu: 2}\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    (template,) = [c for c in outcome.changes if c.rel == "templates/raycluster-cluster.yaml"]
    added = set(template.after.splitlines()) - set((template.before or "").splitlines())
    assert added and not any("resourceClaims" in line for line in added), added
    write_changes(outcome)
    values = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert values["worker"]["rayStartParams"] == {"num-gpus": "2"}
    (ray,) = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(tmp_path / "gpu-dra.yaml",)))
        for d in yaml.safe_load_all(m.text)
        if d and d["kind"] == "RayCluster"
    ]
    assert "nvidia.com/gpu" not in json.dumps(ray["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"])


# Shapes from real public charts (not copied): a range over extra init containers that pass their own `.resources`
# through, before the main container's `.Values.resources`; and a chart that ships one values file per accelerator
# vendor (NVIDIA, Intel Gaudi).
VENDOR_TEMPLATE = deployment(
    "{{ .Release.Name }}-server",
    """\
      initContainers:
        {{- range .Values.initContainers }}
        - name: {{ .name }}
          image: {{ .image }}
          {{- if .resources }}
          resources:
            {{- toYaml .resources | nindent 12 }}
          {{- end }}
        {{- end }}
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)
VENDOR_VALUES = "initContainers: []\nresources:\n  requests:\n    cpu: 100m\n"
VENDOR_FILES = {
    "nv-values.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n",
    "gaudi-values.yaml": "resources:\n  limits:\n    habana.ai/gaudi: 2\n",
}


def test_vendor_values_files_and_a_range_of_init_containers(tmp_path: Path) -> None:
    """Each shipped vendor file gets its own DRA variant with its own device class (was: manual, "several device
    classes"), and `.resources` inside a range is not taken for `.Values.resources` (was: manual, "no
    `containers:` line above the resources map")."""
    chart = tmp_path / "server"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: server\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text(VENDOR_VALUES)
    (chart / "templates" / "deployment.yaml").write_text(VENDOR_TEMPLATE)
    for name, text in VENDOR_FILES.items():
        (chart / name).write_text(text)
    original = shutil.copytree(chart, tmp_path / "original")
    nv = chart / "nv-values.yaml"
    outcome = run_chart(chart, ChartOptions(values_files=(nv,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    # the device count comes from nv-values.yaml as values, not pulled in with .Files.Get
    assert not [r for f in outcome.findings for r in f.related if "Files.Get" in r.note], outcome.report()
    write_changes(outcome)
    template = (chart / "templates" / "deployment.yaml").read_text()
    assert template.count("{{- with .Values.resourceClaims }}") == 1
    classes = {}
    for name in VENDOR_FILES:
        assert texts(chart, (chart / name,)) == texts(original, (original / name,))
        out = docs(chart, (chart / name.replace(".yaml", "-dra.yaml"),))
        pod = out["Deployment"]["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["claims"] and "limits" not in pod["containers"][0]["resources"]
        request = out["ResourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        classes[name] = (request["deviceClassName"], request["count"])
    assert classes["nv-values.yaml"] == ("gpu.nvidia.com", 1)
    assert classes["gaudi-values.yaml"][1] == 2 and classes["gaudi-values.yaml"][0] != "gpu.nvidia.com"


INLINE_TEMPLATE = deployment(
    "{{ .Release.Name }}-api",
    """\
      containers:
      - name: api
        image: api:1
        {{- with .Values.resources }}
        resources: {{- toYaml . | nindent 10 }}
        {{- end }}
""",
)


def test_resources_key_and_its_toyaml_on_one_line(tmp_path: Path) -> None:
    """`resources: {{- toYaml . | nindent 10 }}` (key and action on one line, a shape real charts use): the finding
    points at that line as pattern C and the pass-through is proven (was: the container's first line, pattern F,
    manual)."""
    files = {"values.yaml": "resources: {}\n", "templates/deployment.yaml": INLINE_TEMPLATE}
    chart = chart_with(tmp_path, "api", files, version="1.0.0")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    lint = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "lint")
    (finding,) = [f for f in lint.findings if f.resource]
    assert finding.line == 16 and "pattern C" in finding.message, (finding.line, finding.message)
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()


INDEX_TEMPLATE = """\
{{- $module := index .Values "modules" "text-gen" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-text-gen
spec:
  selector:
    matchLabels: {app: text-gen}
  template:
    metadata:
      labels: {app: text-gen}
    spec:
      containers:
      - name: text-gen
        image: text-gen:1
        resources:
{{ index $module "resources" | toYaml | indent 10 }}
"""


def test_resources_map_read_with_index_from_a_variable(tmp_path: Path) -> None:
    """A values key with a dash read through `index` and a variable (`$module := index .Values "modules"
    "text-gen"`, then `index $module "resources" | toYaml` at column 0): pattern B, and the pass-through reads the
    sibling the same way (was: pattern F, manual)."""
    files = {"values.yaml": "modules:\n  text-gen:\n    resources: {}\n", "templates/text-gen.yaml": INDEX_TEMPLATE}
    chart = chart_with(tmp_path, "search", files, version="1.0.0")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("modules:\n  text-gen:\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert '{{- with index $module "resourceClaims" }}' in (chart / "templates" / "text-gen.yaml").read_text()
    assert yaml.safe_load((chart / "values.yaml").read_text())["modules"]["text-gen"]["resourceClaims"] == []
    pod = docs(chart, (tmp_path / "gpu-dra.yaml",))["Deployment"]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] and pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_with_block_piping_dot_into_toyaml(tmp_path: Path) -> None:
    """`{{- with .Values.worker.resources }}` then `{{- . | toYaml | nindent 12 }}` (Dask's worker): pattern C and
    proven (was: pattern F, manual)."""
    chart = tmp_path / "workers"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: workers\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("worker:\n  resources: {}\n")
    template = WORKLOADS.split("---\n")[0].replace(".Values.trainer.", ".Values.worker.")
    (chart / "templates" / "worker.yaml").write_text(template.replace("toYaml . |", ". | toYaml |"))
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert any("pattern C" in f.message for f in outcome.findings if f.resource)


REQUIRED_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ required "model is required" .Values.model }}
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
            {{- toYaml .Values.deploy.resources | nindent 12 }}
"""


def test_values_file_that_leaves_the_device_map_to_the_chart_defaults(tmp_path: Path) -> None:
    """The chart's defaults ask for the device (Intel's tensorflow-serving chart: `deploy.resources.limits` with
    gpu.intel.com/i915) but do not render alone (a `required` value), and the user's -f file sets only that value:
    its DRA variant carries the defaults' edit (the device key nulled, the claims added) and the rewrite is proven
    (was: manual, "does not set deploy.resources (it sets the device key elsewhere)")."""
    values = "model: ''\ndeploy:\n  resources:\n    limits:\n      cpu: 2\n      gpu.intel.com/i915: 1\n"
    chart = chart_with(tmp_path, "serve", {"values.yaml": values, "templates/deploy.yaml": REQUIRED_TEMPLATE})
    mine = tmp_path / "mine.yaml"
    mine.write_text("model: resnet  # the model to serve\n")
    outcome = run_chart(chart, ChartOptions(values_files=(mine,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    variant = yaml.safe_load((tmp_path / "mine-dra.yaml").read_text())
    assert variant["deploy"]["resources"]["limits"] == {"gpu.intel.com/i915": None} and "model" not in variant
    pod = docs(chart, (mine, tmp_path / "mine-dra.yaml"))["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"cpu": 2}, "claims": [{"name": "gpu"}]}, pod
    assert pod["resourceClaims"], pod


def test_chart_with_its_own_schema_error_is_proven(tmp_path: Path) -> None:
    """A chart whose render is not strict-valid before any rewrite (Intel's tensorflow-serving chart misspells
    `initialDelaySeconds` as `initialDelay` in its probe): the same error after the rewrite is the chart's, not
    the rewrite's, so the pass-through is proven (was: manual, "the render is not valid: ... 'initialDelay' was
    unexpected")."""
    template = REQUIRED_TEMPLATE.replace(
        "          resources:\n", "          readinessProbe:\n            initialDelay: 15\n          resources:\n"
    )
    values = "model: resnet\ndeploy:\n  resources: {}\n"
    chart = chart_with(tmp_path, "serve", {"values.yaml": values, "templates/deploy.yaml": template})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("deploy:\n  resources:\n    limits:\n      gpu.intel.com/i915: 1\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()


ISVC_TEMPLATE = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: {{ .Release.Name }}-detector
  annotations:
    serving.kserve.io/deploymentMode: RawDeployment
spec:
  predictor:
    minReplicas: 1
    model:
      modelFormat:
        name: huggingface
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      storageUri: hf://detector
"""


def test_kserve_single_container_takes_the_map(tmp_path: Path) -> None:
    """A KServe InferenceService whose predictor's one container (`model:`, no `containers:` list) takes the values
    resources map (Red Hat's guardrails detector chart): the pod-level `resourceClaims` pass-through goes into the
    predictor, before `model:`, and the rewrite is proven (was: manual, "the migration changes no values resources
    map")."""
    values = "resources:\n  limits:\n    cpu: '2'\n    nvidia.com/gpu: '1'\n"
    chart = chart_with(tmp_path, "detector", {"values.yaml": values, "templates/isvc.yaml": ISVC_TEMPLATE})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert (
        "    {{- with .Values.resourceClaims }}\n    resourceClaims:\n" in (chart / "templates/isvc.yaml").read_text()
    )
    predictor = docs(chart, (chart / "values-dra.yaml",))["InferenceService"]["spec"]["predictor"]
    assert predictor["resourceClaims"][0]["name"] == "gpu", predictor
    assert predictor["model"]["resources"] == {"limits": {"cpu": "2"}, "claims": [{"name": "gpu"}]}, predictor


def test_shipped_example_our_yaml_parser_refuses_gets_its_overlay(tmp_path: Path) -> None:
    """A values file the chart ships that Helm reads but our YAML parser refuses (substratus' vllm examples repeat
    `replicaCount:`): its DRA overlay is written from Helm's reading of it and proven after it (was: proven with its
    values as they are and left without a DRA variant, "invalid YAML: duplicate key", as a copy needed the file
    parsed)."""
    template = REQUIRED_TEMPLATE.replace('{{ required "model is required" .Values.model }}', "serve")
    files = {"values.yaml": "deploy:\n  resources: {}\n", "templates/deploy.yaml": template}
    dup = "replicaCount: 1\ndeploy:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\nreplicaCount: 2\n"
    chart = chart_with(tmp_path, "serve", {**files, "examples/two-gpus.yaml": dup})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("deploy:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "two-gpus.yaml (DRA values: two-gpus.yaml, two-gpus-dra.yaml)" in outcome.report()
    write_changes(outcome)
    assert (tmp_path / "gpu-dra.yaml").is_file() and (chart / "examples" / "two-gpus-dra.yaml").is_file()


def test_template_that_reads_the_device_key_itself_reads_the_dra_count(tmp_path: Path) -> None:
    """A template that also reads the device key from the map by name (substratus' TGI chart sets NUM_SHARD from
    `index .Values.deploy.resources.limits "nvidia.com/gpu"`), the request in the chart's defaults: that read takes
    `deploy.deviceCounts`, which values-dra.yaml sets, so NUM_SHARD stays 1 with the DRA values (was: manual, "give
    that count a value of its own")."""
    template = REQUIRED_TEMPLATE.replace('{{ required "model is required" .Values.model }}', "serve").replace(
        "          image: serve:1\n",
        "          image: serve:1\n          env:\n            - name: NUM_SHARD\n"
        '              value: {{ index .Values.deploy.resources.limits "nvidia.com/gpu" | quote }}\n',
    )
    values = "deploy:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "serve", {"values.yaml": values, "templates/deploy.yaml": template})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    container = docs(chart, (chart / "values-dra.yaml",))["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "NUM_SHARD", "value": "1"}], container
    assert "nvidia.com/gpu" not in json.dumps(container["resources"]), container


RANGE_TEMPLATE = """\
{{- range .Values.models }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .shortName }}
spec:
  selector:
    matchLabels: {app: {{ .shortName }}}
  template:
    metadata:
      labels: {app: {{ .shortName }}}
    spec:
      containers:
      - name: tgi
        image: tgi:1
        resources: \n{{ toYaml .resources | indent 10 }}
---
{{- end }}
"""


def test_resources_of_each_item_of_a_values_list(tmp_path: Path) -> None:
    """One Deployment per item of a values list (`range .Values.models`, `.resources` of each item, TGI's chart by
    louis030195, whose `resources: ` line ends in a blank): the finding is at that line as pattern B, and each item's
    pod passes its own `.resourceClaims` through (was: the container's first line, pattern F, manual)."""
    chart = chart_with(tmp_path, "tgi", {"values.yaml": "models: []\n", "templates/deployment.yaml": RANGE_TEMPLATE})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "models:\n  - shortName: a\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
        "  - shortName: b\n    resources:\n      limits:\n        nvidia.com/gpu: 2\n"
    )
    lint = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "lint")
    assert {(f.line, "pattern B" in f.message) for f in lint.findings if f.resource} == {(16, True)}
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert "      {{- with .resourceClaims }}\n" in (chart / "templates" / "deployment.yaml").read_text()
    out, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert sorted(counts.values()) == [1, 2] and all(p["resourceClaims"] for p in pods.values()), out
    # was: a second fix added the device check again, as `{{- ... }}` below the first's `{{ ... -}}`, and refused
    assert_second_fix_quiet(chart, "-f", str(gpu))


# one Deployment per user of a list, each taking the top-level resources map (Uppsala pharmbio's ml-container shape)
PER_USER = """\
{{- range .Values.users }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "{{ $.Release.Name }}-{{ . }}"
spec:
  selector:
    matchLabels: {app: "{{ . }}"}
  template:
    metadata:
      labels: {app: "{{ . }}"}
    spec:
      containers:
      - name: "{{ . }}"
        image: lab:1
        resources:
          {{- toYaml $.Values.resources | nindent 12 }}
{{- end }}
"""


def test_device_key_commented_out_at_column_zero_inside_the_map(tmp_path: Path) -> None:
    """values.yaml comments the device key out at column 0 between `limits` and `requests` of the map: the
    `resourceClaims` sibling goes after the whole map, not inside it (was: written before `requests`, which broke
    the values file, so the rewrite was manual work "one chart renders and the other does not")."""
    values = (
        'resources:\n  limits:\n    cpu: "4"\n#    nvidia.com/gpu: "1"\n  requests:\n    cpu: "1"\n'
        '#    nvidia.com/gpu: "1"\n\nimage: lab\n'
    )
    chart = chart_with(tmp_path, "lab", {"values.yaml": values, "templates/deploy.yaml": PER_USER})
    mine = tmp_path / "mine.yaml"
    mine.write_text('users: [ann, bob]\nresources:\n  limits:\n    nvidia.com/gpu: "1"\n')
    outcome = run_chart(chart, ChartOptions(values_files=(mine,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    shipped = yaml.safe_load((chart / "values.yaml").read_text())
    assert shipped["resources"] == {"limits": {"cpu": "4"}, "requests": {"cpu": "1"}}, shipped
    assert shipped["resourceClaims"] == [], shipped


def test_a_hidden_message_keeps_its_apostrophes() -> None:
    """Masking quoted chart data must not read an apostrophe as a quote and cut a word in the middle (was:
    "Helm<not shown: may come from a chart file>s templates")."""
    from dramigrate.helm.sandbox import HIDDEN, NOT_SHOWN, hide_chart_data

    message = f"the chart does not render; {HIDDEN}: got 'secret-from-a-file'"
    assert hide_chart_data(message, Path("/nonexistent")) == (f"the chart does not render; {HIDDEN}: got {NOT_SHOWN}")


def test_a_difference_in_the_migrations_own_toleration_is_shown(tmp_path: Path) -> None:
    """The toleration the migration adds is dramigrate's text, not the chart's: a proof's difference quoting it is
    shown (was `[{<not shown: ...>: <not shown: ...>, <not shown: ...>: "nvidia.com/gpu", ...}]`); chart data is not."""
    from dramigrate.helm.sandbox import NOT_SHOWN, hide_chart_data

    chart = chart_with(tmp_path, "tol", {"templates/pod.yaml": "nvidia.com/gpu: {{ .Values.gpu }}\n"})
    toleration = '[{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]'
    message = (
        f"spec.template.spec.tolerations: expected {toleration}, the rewritten chart has none; "
        'resources: not expected, the rewritten chart has {"claims": [{"name": "gpu"}]}; got \'from-a-file\''
    )
    assert hide_chart_data(message, chart) == message.replace("'from-a-file'", NOT_SHOWN)


# kompose output: the toYaml action on the `resources:` key's own line, split over two lines
SPLIT_ACTION = deployment(
    "{{ .Release.Name }}",
    """\
      containers:
      - env:
        - name: ARGS
          value: {{ quote .Values.sd.args
            }}
        image: sd:1
        name: sd
        resources: {{- toYaml .Values.sd.resources |
          nindent 10 }}
""",
    app="sd",
)


def test_toyaml_split_over_two_lines_on_the_keys_own_line(tmp_path: Path) -> None:
    """`resources: {{- toYaml .Values.sd.resources |` then `nindent 10 }}` on the next line is pattern B and is
    passed through (was: the device line mapped to the container's `- env:` line, "pattern F ... takes pattern A
    only", manual work)."""
    values = 'sd:\n  args: "--x"\n  resources:\n    limits:\n      amd.com/gpu: "1"\n'
    chart = chart_with(tmp_path, "sd", {"values.yaml": values, "templates/deploy.yaml": SPLIT_ACTION})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()


def test_diff_names_a_values_file_outside_the_chart_as_the_chart_files_are(run_cli: RunCli, tmp_path: Path) -> None:
    """`diff app -f gpu.yaml` names gpu-dra.yaml as it names the chart's files (a/..., b/..., from the working
    directory), so the patch applies with `patch -p1` (or `git apply`) and writes what fix writes. Was: the absolute
    path, which `patch -p1` reads as tmp/.../gpu-dra.yaml under the working directory."""
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/workloads.yaml": WORKLOADS})
    (tmp_path / "gpu.yaml").write_text(GPU)
    code, patch, err = run_cli(["diff", "app", "-f", "gpu.yaml"], cwd=tmp_path)
    assert code == 0, err
    assert "+++ b/gpu-dra.yaml\n" in patch, patch
    applied = tmp_path / "applied"
    shutil.copytree(chart, applied / "app")
    shutil.copy(tmp_path / "gpu.yaml", applied / "gpu.yaml")
    subprocess.run(["patch", "-s", "-p1"], input=patch, text=True, cwd=applied, check=True)
    assert run_cli(["fix", "app", "-f", "gpu.yaml"], cwd=tmp_path)[0] == 0
    assert (applied / "gpu-dra.yaml").read_text() == (tmp_path / "gpu-dra.yaml").read_text()
    assert (applied / "app" / "templates" / "workloads.yaml").read_text() == (
        chart / "templates" / "workloads.yaml"
    ).read_text()


def test_a_second_fix_of_a_rewritten_chart_is_quiet(run_cli: RunCli, tmp_path: Path) -> None:
    """fix run again on a pass-through chart it rewrote (a pre-commit fix hook on the next commit) changes nothing and
    says nothing is left to do, with the first run's exit code. Was: 'needs manual work, nothing written:
    values-dra.yaml exists already: move it away and run fix again', a chart-rewrite-unproven warning and exit 1,
    although the DRA values files fix had written are the ones it would write again."""
    files = {"values.yaml": VALUES.replace("  resources: {}\n", "  resources:\n    limits:\n      nvidia.com/gpu: 1\n")}
    chart = chart_with(tmp_path, "app", {**files, "templates/workloads.yaml": WORKLOADS})
    (tmp_path / "gpu.yaml").write_text(GPU)
    first, _, err = run_cli(["fix", "app", "-f", "gpu.yaml"], cwd=tmp_path)
    assert (chart / "values-dra.yaml").is_file() and (tmp_path / "gpu-dra.yaml").is_file(), err
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    again, out, err = run_cli(["fix", "app", "-f", "gpu.yaml"], cwd=tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert again == first and "manual" not in err and "exists already" not in err, err
    assert run_cli(["diff", "--check", "app", "-f", "gpu.yaml"], cwd=tmp_path)[0] == 0
    (chart / "values-dra.yaml").write_text("# mine\n")  # a file of the user's own there: kept, and said so
    code, _, err = run_cli(["fix", "app", "-f", "gpu.yaml"], cwd=tmp_path)
    assert (chart / "values-dra.yaml").read_text() == "# mine\n" and "exists already" in err, err


@pytest.mark.parametrize("shape", ["defaults", "values file", "umbrella"])
def test_a_second_fix_of_a_pod_that_had_no_tolerations_is_quiet(run_cli: RunCli, tmp_path: Path, shape: str) -> None:
    """The pod wrote no tolerations: the first fix adds `{{- with .Values.tolerations }}` after the claims it passes
    through, and the DRA values carry the list. The second fix took that block for the chart's own list and would
    join the toleration to it (`resourceTolerations`): 'values-dra.yaml exists already', nothing written, exit 1."""
    gpu = "resources:\n  limits:\n    nvidia.com/gpu: 2\n"
    files = {
        "templates/server.yaml": TOYAML_SERVER,
        "values.yaml": "resources: {}\n" if shape == "values file" else gpu,
    }
    if shape == "umbrella":
        chart_with(tmp_path / "app" / "charts", "leaf", files)
        chart_with(tmp_path, "app", {"values.yaml": "leaf:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n"})
    else:
        chart_with(tmp_path, "app", files)
    (tmp_path / "gpu.yaml").write_text(gpu)
    args = ["fix", "app", *(["-f", "gpu.yaml"] if shape == "values file" else [])]
    first, _, err = run_cli(args, cwd=tmp_path)
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert first == 0 and any(p.name.endswith("-dra.yaml") for p in written), err
    assert any(b"tolerations:" in text for p, text in written.items() if p.name.endswith("-dra.yaml"))
    again, _, err = run_cli(args, cwd=tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == written, err
    assert again == first and "exists already" not in err, err


OWN_TOLERATIONS = TOYAML_SERVER.replace(
    "      containers:\n",
    "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"
    "      containers:\n",
)
GPU_DEFAULTS = "resources:\n  limits:\n    nvidia.com/gpu: 2\ntolerations: []\n"
# the template reads the device key itself: the first fix has it read the counts the DRA values keep beside the map
READS_KEY = OWN_TOLERATIONS.replace(
    "          image: server:1\n",
    '          image: server:1\n          {{- if hasKey .Values.resources.limits "nvidia.com/gpu" }}\n'
    "          args: [--gpus]\n          {{- end }}\n",
)
# horovod's and weaviate's `{{ toYaml .Values.resources | indent 12 }}` at column 0 under `resources:`
COLUMN_ZERO = OWN_TOLERATIONS.replace(
    "            {{- toYaml .Values.resources | nindent 12 }}\n", "{{ toYaml .Values.resources | indent 12 }}\n"
)
# KubeRay's: the pod renders `resourceClaims` from values itself, with toYaml: the claim templates keep their names
OWN_CLAIMS = OWN_TOLERATIONS.replace(
    "      containers:\n",
    "      {{- with .Values.resourceClaims }}\n      resourceClaims:\n        {{- toYaml . | nindent 8 }}\n"
    "      {{- end }}\n      containers:\n",
).replace(
    "  name: {{ .Release.Name }}-server\n",
    "  name: {{ .Release.Name }}-server\n  namespace: {{ .Release.Namespace }}\n",
)
# aoe-inference's: the container takes one of two maps (KEYED); with a values file of each, the pod gathers both
# maps' claims
PICKED_VALUES = "accelerator: gpu\nresources:\n  gpu:\n    limits:\n      nvidia.com/gpu: 2\n  neuron:\n    limits:\n"
PICKED_VALUES += "      aws.amazon.com/neuron: 1\n"


@pytest.mark.parametrize(
    ("template", "values", "args"),
    [
        pytest.param(READS_KEY, GPU_DEFAULTS, [], id="template reads the device key"),
        pytest.param(COLUMN_ZERO, GPU_DEFAULTS, [], id="map written at column 0"),
        pytest.param(KEYED, PICKED_VALUES, ["-f", "app/values-neuron.yaml"], id="one of two maps"),
        pytest.param(OWN_CLAIMS, GPU_DEFAULTS + "resourceClaims: []\n", [], id="claims of the chart's own"),
    ],
)
def test_a_second_fix_changes_nothing_in_these_shapes(
    run_cli: RunCli, tmp_path: Path, template: str, values: str, args: list[str]
) -> None:
    """Shapes of the dev sets where a second fix differed: it dropped the `deviceCounts` a line the first fix
    rewrote reads (ollama-intel), found no `containers:` above a map written at column 0 below the first fix's device
    check (helm-horovod, weaviate: exit 1), wrote that check again below the claims' `concat` (aoe-inference), and
    named the claim templates after the release where the chart's own `resourceClaims` render the names as they are
    (ray-cluster: the first fix's `{{ $.Release.Namespace }}` read as `.Release.Name`; the proof failed, exit 1)."""
    files = {"templates/server.yaml": template, "values.yaml": values, "values-neuron.yaml": "accelerator: neuron\n"}
    chart_with(tmp_path, "app", files)
    first, _, err = run_cli(["fix", "app", *args], cwd=tmp_path)
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert first == 0 and (tmp_path / "app" / "templates" / "resourceclaimtemplates.yaml").is_file(), err
    again, _, err = run_cli(["fix", "app", *args], cwd=tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == written, err
    assert again == first and "manual" not in err, err


NFD_TEMPLATE = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: plex
spec:
  selector:
    matchLabels: {app: plex}
  template:
    metadata:
      labels: {app: plex}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: intel.feature.node.kubernetes.io/gpu
                operator: In
                values:
                - "true"
      containers:
        - name: plex
          image: plex
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""


def test_a_second_fix_leaves_the_node_affinity_it_put_under_the_claims_alone(run_cli: RunCli, tmp_path: Path) -> None:
    """nwallace-plex's shape: the template writes the NFD GPU affinity itself, which the first fix puts under `if not
    .Values.resourceClaims`. A second fix found the affinity again and wrapped it in a second `if`."""
    values = 'resources:\n  limits:\n    gpu.intel.com/i915: "1"\n'
    chart = chart_with(tmp_path, "plex", {"templates/sts.yaml": NFD_TEMPLATE, "values.yaml": values})
    assert run_cli(["fix", "plex"], cwd=tmp_path)[0] == 0
    once = (chart / "templates" / "sts.yaml").read_text()
    assert once.count("{{- if not .Values.resourceClaims }}") == 1, once
    code, _, err = run_cli(["fix", "plex"], cwd=tmp_path)
    assert (chart / "templates" / "sts.yaml").read_text() == once, err


def test_defaults_asking_zero_devices_are_rewritten(run_cli: RunCli, tmp_path: Path) -> None:
    """A chart whose defaults ask for `nvidia.com/gpu: 0` (IBM's autopilot DaemonSet): the DRA values drop the zero
    keys and render no claim, and a values file set after them with the keys again cannot ask for a device twice (no
    claim in that map), so fix writes the rewrite and says so. Was: manual work, "renders a container that asks for a
    device through the device plugin and its DRA claim" (it asked for 0 devices and had no claim)."""
    values = "resources:\n  limits:\n    nvidia.com/gpu: 0\n  requests:\n    nvidia.com/gpu: 0\n"
    chart = chart_with(tmp_path, "app", {"values.yaml": values, "templates/server.yaml": TOYAML_SERVER})
    before = texts(chart)
    code, _, err = run_cli(["fix", str(chart)])
    assert code == 0 and "nothing can be asked twice" in err, err
    assert texts(chart) == before
    assert "The defaults ask for no device (a count of 0)" in (chart / "values-dra.yaml").read_text()
    out = docs(chart, (chart / "values-dra.yaml",))
    assert "ResourceClaimTemplate" not in out
    pod = out["Deployment"]["spec"]["template"]["spec"]
    assert "resourceClaims" not in pod and not pod["containers"][0].get("resources"), pod
    # a count set again after the DRA values stays a device-plugin request, which lint reports
    again = tmp_path / "again.yaml"
    again.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    code, out_text, _ = run_cli(["lint", str(chart), "-f", str(chart / "values-dra.yaml"), "-f", str(again)])
    assert code == 1 and "legacy-device-request" in out_text, out_text


PREFERRED_MODEL = deployment(
    "{{ .Release.Name }}-ui",
    """\
      containers:
        - name: ui
          image: ui:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- if .Values.gpus }}
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              preference:
                matchExpressions:
                  - key: nvidia.com/gpu.product
                    operator: In
                    values:
                      {{- toYaml .Values.gpus | nindent 22 }}
            - weight: 50
              preference:
                matchExpressions:
                  - key: nvidia.com/gpu.present
                    operator: Exists
      {{- end }}
""",
)


def test_preferred_model_from_values_stays_a_preference(run_cli: RunCli, tmp_path: Path) -> None:
    """A template that writes a preferred node affinity on `nvidia.com/gpu.product` from `.Values.gpus`, then on any
    `nvidia.com/gpu.present` node (cyberun's comfyui): the rewrite migrates the request and keeps the preference,
    which only ranks nodes, as it keeps other label hacks from values, and says how to move it into the claim. Was:
    manual work ("the pods select nodes by a device label that a template writes itself")."""
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\ngpus: []\n"
    chart = chart_with(tmp_path, "ui", {"values.yaml": values, "templates/ui.yaml": PREFERRED_MODEL})
    model = "gpus[0]=NVIDIA-A100-SXM4-80GB"
    before = [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=(model,)))]
    code, out, err = run_cli(["fix", str(chart), "--set", model])
    assert code == 0, err
    assert "they are preferred node affinity only" in out + err, out + err
    assert [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=(model,)))] == before
    dra = RenderOptions(values_files=(chart / "values-dra.yaml",), set_values=(model,))
    rendered = [d for m in render_chart(chart, dra) for d in yaml.safe_load_all(m.text) if d]
    pod = next(d for d in rendered if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    preferred = pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["preference"]["matchExpressions"][0]["values"] == ["NVIDIA-A100-SXM4-80GB"]
    template = next(d for d in rendered if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
