"""The idiomatic chart rewrite (the default `--chart-style idiomatic`): a `dra.enabled` switch around the
chart's own device key, proven by rendering with the switch off (byte-identical) and on (the migration).

Renders are real (the Helm engine embedded in helm-python-sdk). One fix per module, shared by the tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ONE_GPU_POD, RunCli, chart_with, dramigrate_in_process

from dramigrate.config import Settings
from dramigrate.helm.idiomatic import values_block
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


RULES = load_rules()
T136 = Target.parse("1.36")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
  namespace: {{ .Release.Namespace }}
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: app
          image: {{ .Values.image }}
          resources:
            limits:
              memory: 1Gi
              nvidia.com/gpu: {{ .Values.numGpus }}
"""
HELPERS = '{{- define "app.fullname" -}}\n{{ .Release.Name }}-{{ .Chart.Name }}\n{{- end }}\n'
VALUES = "# -- Image\nimage: app:1\n# -- GPUs per pod\nnumGpus: 1\n# -- Tolerations\ntolerations: []\n"


def write_chart(root: Path, deployment: str = DEPLOYMENT, values: str = VALUES) -> Path:
    chart = root / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / "templates" / "_helpers.tpl").write_text(HELPERS)
    (chart / "templates" / "deployment.yaml").write_text(deployment)
    return chart


def docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    return [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]


def rendered_text(chart: Path, *sets: str) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ChartOutcome]:
    root = tmp_path_factory.mktemp("idiomatic")
    original = write_chart(root / "original")
    chart = shutil.copytree(original, root / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart, outcome


def test_rewrite_is_small_and_readable(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, outcome = fixed
    assert sorted(c.rel for c in outcome.changes) == [
        "Chart.yaml",
        "templates/deployment.yaml",
        "templates/resourceclaimtemplate.yaml",
        "values.yaml",
    ]
    assert yaml.safe_load((chart / "Chart.yaml").read_text())["version"] == "0.1.1"  # a patch release
    template = (chart / "templates" / "deployment.yaml").read_text()
    assert "{{- if not .Values.dra.enabled }}\n              nvidia.com/gpu: {{ .Values.numGpus }}" in template
    assert "gt (int .Values.numGpus) 0" in template
    # the toleration of the DRA branch is one line, as in the DRA values files (was three, a field a line)
    assert "        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n" in template, template
    assert "_dramigrate" not in "".join(c.after for c in outcome.changes)  # no generated engine
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["dra"] == {"enabled": True, "deviceClassName": "gpu.nvidia.com", "existingClaimTemplate": ""}
    doc = (chart / "values.yaml").read_text()
    assert "# -- Request nvidia.com/gpu through a DRA ResourceClaim (Kubernetes 1.34+" in doc
    assert "\n\ndra:\n" in doc  # was: a heading over `dra:` saying again what the `enabled` line says
    added = sum(len(c.after.splitlines()) - len((c.before or "").splitlines()) for c in outcome.changes)
    assert added <= 60, added
    assert "numGpus changed to 2" in outcome.checked and "numGpus switched off with 0" in outcome.checked


def test_switch_off_renders_byte_identical(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, chart, _ = fixed
    for sets in ((), ("numGpus=4",), ("numGpus=0",), ("tolerations[0].key=x,tolerations[0].operator=Exists",)):
        assert rendered_text(chart, "dra.enabled=false", *sets) == rendered_text(original, *sets)


def test_switch_on_claims_follow_the_count_knob(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    _, chart, _ = fixed
    out = docs(chart, "numGpus=3")
    (rct,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    (dep,) = [d for d in out if d["kind"] == "Deployment"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3
    assert rct["metadata"]["name"].startswith("release-name-app-")  # the chart's own name helper + spec hash
    pod = dep["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": rct["metadata"]["name"]}]
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    # a changed count is a new claim template (its spec cannot change in place)
    assert docs(chart, "numGpus=2")[0]["metadata"]["name"] != rct["metadata"]["name"]
    # zero GPUs: no claim at all
    zero = docs(chart, "numGpus=0")
    assert not [d for d in zero if d["kind"] == "ResourceClaimTemplate"]
    assert "resourceClaims" not in zero[0]["spec"]["template"]["spec"]
    # a platform-managed claim template instead of the chart's own
    shared = docs(chart, "dra.existingClaimTemplate=team-gpus")
    assert [d["kind"] for d in shared] == ["Deployment"]
    assert shared[0]["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "team-gpus"


def test_findings_name_the_pattern(run_cli: RunCli, fixed: tuple[Path, Path, ChartOutcome]) -> None:
    original, _, _ = fixed
    code, out, _ = run_cli(["lint", str(original), "--format", "json"])
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert "pattern A" in f["message"] and f["line"] == 23


def test_opt_in_leaves_the_switch_off(run_cli: RunCli, tmp_path: Path) -> None:
    chart = write_chart(tmp_path)
    before = rendered_text(chart)
    code, _, err = run_cli(["fix", "--opt-in", str(chart)])
    assert code == 0, err
    assert yaml.safe_load((chart / "values.yaml").read_text())["dra"]["enabled"] is False
    assert rendered_text(chart) == before  # upstream users see no change until they turn it on
    assert any(d["kind"] == "ResourceClaimTemplate" for d in docs(chart, "dra.enabled=true"))
    code, _, err = run_cli(["fix", "--opt-in", str(chart)])  # again: the switch is the chart's own now, left off
    assert "set dra.enabled=true" in err and "needs manual work" not in err
    assert yaml.safe_load((chart / "values.yaml").read_text())["dra"]["enabled"] is False


def test_other_patterns_are_manual_unless_engine_is_asked(run_cli: RunCli, tmp_path: Path) -> None:
    helper = DEPLOYMENT.replace(
        "            limits:\n              memory: 1Gi\n              nvidia.com/gpu: {{ .Values.numGpus }}\n",
        '            {{- include "app.resources" . | nindent 12 }}\n',
    )
    chart = write_chart(tmp_path, helper)
    with (chart / "templates" / "_helpers.tpl").open("a") as f:
        # a helper that builds the map with toYaml: no line of it writes the device key (the helper rewrite of
        # tests/test_helm_helper.py finds none), so it stays manual work
        f.write(
            '{{- define "app.resources" -}}\n'
            '{{- toYaml (dict "limits" (dict "nvidia.com/gpu" .Values.numGpus)) }}\n{{- end }}\n'
        )
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    code, _, err = run_cli(["fix", str(chart)])
    assert "pattern D (a named helper or library include)" in err and "templates/deployment.yaml:20" in err, err
    assert "no line of a helper in this chart writes the device key" in err
    assert "--chart-style engine" in err
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    code, _, err = run_cli(["fix", "--chart-style", "engine", str(chart)])
    assert (chart / "templates" / "_dramigrate.tpl").is_file(), err


def test_chart_with_its_own_dra_switch_gets_the_setting(run_cli: RunCli, corpus: Path, tmp_path: Path) -> None:
    chart = shutil.copytree(corpus / "ollama-helm", tmp_path / "ollama")
    templates = {p: p.read_bytes() for p in (chart / "templates").rglob("*") if p.is_file()}
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("# our GPU settings\nollama:\n  gpu:\n    enabled: true\n")
    code, _, err = run_cli(["fix", str(chart), "-f", str(gpu)])
    assert "[chart-dra-switch]" in err and "set ollama.gpu.draEnabled=true" in err, err
    assert gpu.read_text() == "# our GPU settings\nollama:\n  gpu:\n    enabled: true\n    draEnabled: true\n"
    assert {p: p.read_bytes() for p in (chart / "templates").rglob("*") if p.is_file()} == templates
    out = [d for m in render_chart(chart, RenderOptions(values_files=(gpu,))) for d in yaml.safe_load_all(m.text) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"]
    assert "nvidia.com/gpu" not in json.dumps(pod["containers"]) and pod["resourceClaims"]
    assert any(d["kind"] == "ResourceClaimTemplate" for d in out)


def test_precommit_single_template_file_lints_its_chart_once(run_cli: RunCli, tmp_path: Path) -> None:
    chart = write_chart(tmp_path)
    files = [chart / "templates" / "deployment.yaml", chart / "values.yaml", chart / "templates" / "_helpers.tpl"]
    code, out, err = run_cli(["lint", "--format", "json", *map(str, files)])
    assert code == 1, err  # the changed template still requests a GPU: the hook fails
    found = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert [(f["file"], f["line"]) for f in found] == [(f"{chart}/templates/deployment.yaml", 23)]
    assert not [f for f in json.loads(out)["findings"] if f["rule"] == "templated-file"]


def test_precommit_fix_hook_on_a_template_writes_its_chart(run_cli: RunCli, tmp_path: Path) -> None:
    """The fix hook names the staged template, relative to the repository: fix takes the chart, and the chart is the
    tree it writes in (values.yaml, Chart.yaml and the new claim template sit outside the template's folder; the
    run used to prove the rewrite and then refuse every write as outside the paths named)."""
    chart = write_chart(tmp_path)
    code, out, err = run_cli(["fix", "app/templates/deployment.yaml"], cwd=tmp_path)
    assert code == 0, err
    assert "not written" not in err and "outside the paths named" not in out + err
    assert "dra:" in (chart / "values.yaml").read_text()
    assert (chart / "templates" / "resourceclaimtemplate.yaml").exists()
    assert "version: 0.1.1" in (chart / "Chart.yaml").read_text()
    code, out, err = run_cli(["lint", "app/templates/deployment.yaml"], cwd=tmp_path)
    assert code == 0, out + err  # the switch is on by default: the chart's render asks for no GPU now


def test_precommit_names_across_charts_map_each_file_to_its_own_chart(run_cli: RunCli, tmp_path: Path) -> None:
    """Thousands of names share folders, so each folder's chart is looked up once: a file beside a chart folder, or in
    a second chart named after the first, must still be taken as its own (a chart each, a manifest as a manifest)."""
    first, second = write_chart(tmp_path / "one"), write_chart(tmp_path / "two")
    loose = tmp_path / "one" / "pod.yaml"
    loose.write_text(ONE_GPU_POD.format(name="loose"))
    names = [first / "templates" / "deployment.yaml", loose, second / "values.yaml", first / "values.yaml"]
    code, out, err = run_cli(["lint", "--format", "json", *map(str, names)])
    assert code == 1, err
    found = {f["file"] for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"}
    assert found == {f"{first}/templates/deployment.yaml", f"{second}/templates/deployment.yaml", str(loose)}


def test_capped_count_gets_its_values_location(tmp_path: Path) -> None:
    capped = DEPLOYMENT.replace("{{ .Values.numGpus }}", "{{ min .Values.numGpus 8 }}")
    chart = write_chart(tmp_path, capped, VALUES.replace("numGpus: 1", "numGpus: 8"))
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "lint")
    (f,) = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    assert [(r.file, r.line) for r in f.related] == [(f"{chart}/values.yaml", 4)]  # found by one less, not one more


def test_switch_on_fails_clearly_below_kubernetes_1_34(fixed: tuple[Path, Path, ChartOutcome]) -> None:
    from dramigrate.helm.render import HelmError

    _, chart, _ = fixed
    with pytest.raises(HelmError, match=r"DRA ResourceClaims need Kubernetes 1\.34\+ .*set dra\.enabled=false"):
        render_chart(chart, RenderOptions(kube_version="1.33"))
    older = render_chart(chart, RenderOptions(kube_version="1.33", set_values=("dra.enabled=false",)))
    assert "nvidia.com/gpu: 1" in older[0].text  # the way back renders on the old cluster
    assert any("ResourceClaimTemplate" in m.text for m in render_chart(chart, RenderOptions(kube_version="1.34")))


def test_gpu_and_nic_in_one_container(tmp_path: Path) -> None:
    """Two device keys with their own counts (a GPU and an EFA NIC): one claim whose requests follow each count;
    a request whose count is 0 is left out, and the claim is named after the requests it has."""
    two = DEPLOYMENT.replace(
        "nvidia.com/gpu: {{ .Values.numGpus }}\n",
        "nvidia.com/gpu: {{ .Values.numGpus }}\n              vpc.amazonaws.com/efa: {{ .Values.numNics }}\n",
    )
    original = write_chart(tmp_path / "original", two, VALUES + "# -- EFA NICs per pod\nnumNics: 1\n")
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "numNics switched off with 0" in outcome.checked and "numGpus switched off with 0" in outcome.checked
    write_changes(outcome)
    template = (chart / "templates" / "deployment.yaml").read_text()
    assert "{{- if not .Values.dra.enabled }}\n              nvidia.com/gpu: {{ .Values.numGpus }}\n" in template
    for sets, claim, requests in (((), "gpu-efa", ["gpu", "efa"]), (("numGpus=0",), "efa", ["efa"])):
        out = docs(chart, *sets)
        (rct,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
        assert [r["name"] for r in rct["spec"]["spec"]["devices"]["requests"]] == requests
        pod = [d for d in out if d["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": claim}]
        assert pod["resourceClaims"][0]["name"] == claim
    assert rendered_text(chart, "dra.enabled=false", "numNics=3") == rendered_text(original, "numNics=3")


def test_template_body_in_a_define_of_its_own_file(tmp_path: Path) -> None:
    """A template whose whole workload is a `define` that the same file renders with the root context, bare or
    wrapped in another kind behind a values key (silogen's `define "job"` and its KaiwoJob wrapper): pattern A, the
    switch goes inside the define and stays off in the wrapper the migration leaves alone (was: manual, "pattern D:
    the device key is inside a helper")."""
    wrapped = (
        '{{- define "workload" -}}\n'
        + DEPLOYMENT
        + "{{- end -}}\n"
        + '{{- define "wrapped" -}}\napiVersion: example.com/v1\nkind: Wrapper\nmetadata:\n  name: w\nspec:\n'
        + '  deployment:\n    {{- include "workload" . | nindent 4 }}\n{{- end -}}\n'
        + '{{- if .Values.wrapped -}}\n{{- include "wrapped" . }}\n{{- else -}}\n{{- include "workload" . }}\n'
        + "{{- end -}}\n"
    )
    original = write_chart(tmp_path / "original", wrapped, VALUES + "# -- Wrap it\nwrapped: false\n")
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    pod = [d for d in docs(chart) if d["kind"] == "Deployment"][0]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}] and pod["resourceClaims"], pod
    assert rendered_text(chart, "wrapped=true") == rendered_text(original, "wrapped=true")


PAIR = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-eval
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: model
          image: vllm:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.model.gpus }}
        - name: judge
          image: vllm:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.judge.gpus }}
"""


def test_two_containers_with_their_own_counts(tmp_path: Path) -> None:
    """Two containers of one pod, each asking for the GPU with its own values count (silogen's evaluation judge:
    a model and a judge server): each container claims its own request of the pod's claim, each request only while
    its count is above 0, proven by (L) and (D) (was: manual, "asked for with two counts in one pod")."""
    values = "model:\n  # -- GPUs of the model server\n  gpus: 2\njudge:\n  # -- GPUs of the judge\n  gpus: 1\n"
    original = chart_with(tmp_path / "original", "pair", {"values.yaml": values, "templates/job.yaml": PAIR})
    chart = shutil.copytree(original, tmp_path / "fixed" / "pair")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    def claims(*sets: str) -> tuple[list[Any], list[Any], list[Any]]:
        out = docs(chart, *sets)
        pod = next(d for d in out if d["kind"] == "Job")["spec"]["template"]["spec"]
        rcts = [d["spec"]["spec"]["devices"]["requests"] for d in out if d["kind"] == "ResourceClaimTemplate"]
        requests = [(r["name"], r["exactly"]["count"]) for rct in rcts for r in rct]
        own = [(c.get("resources") or {}).get("claims") for c in pod["containers"]]
        return requests, own, pod.get("resourceClaims")

    requests, containers, pod_claims = claims()
    assert requests == [("model-gpu", 2), ("judge-gpu", 1)], requests
    assert containers == [[{"name": "gpu", "request": "model-gpu"}], [{"name": "gpu", "request": "judge-gpu"}]]
    assert [c["name"] for c in pod_claims] == ["gpu"], pod_claims
    requests, containers, _ = claims("judge.gpus=0")
    assert requests == [("gpu", 2)] and containers == [[{"name": "gpu"}], None], (requests, containers)
    assert claims("model.gpus=0", "judge.gpus=0") == ([], [None, None], None)
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


def test_containers_with_their_own_counts_under_their_own_conditions(tmp_path: Path) -> None:
    """A judge rendered only `if .Values.judge.enabled`: its request of the pod's claim is gated by its count and by
    that condition, so with the judge off the claim has the model's request alone, named as the migration names a
    single container's. Was manual work ("the device keys sit under different conditions"): each request was gated
    by its count alone, and the claim kept the judge's request while the judge was off."""
    guarded = PAIR.replace("        - name: judge", "        {{- if .Values.judge.enabled }}\n        - name: judge")
    guarded += "        {{- end }}\n"
    values = "model:\n  gpus: 2\njudge:\n  enabled: true\n  gpus: 1\n"
    chart = chart_with(tmp_path, "pair", {"values.yaml": values, "templates/job.yaml": guarded})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "judge.enabled flipped to false" in outcome.checked
    write_changes(outcome)
    out = docs(chart, "judge.enabled=false")
    templates = [d["spec"]["spec"] for d in out if d["kind"] == "ResourceClaimTemplate"]
    requests = [r for spec in templates for r in spec["devices"]["requests"]]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("gpu", 2)]
    pod = next(d for d in out if d["kind"] == "Job")["spec"]["template"]["spec"]
    assert [c["resources"] for c in pod["containers"]] == [{"claims": [{"name": "gpu"}]}]


LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: {{ .Release.Name }}-vllm
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: vllm:1
            resources:
              limits:
                nvidia.com/gpu: {{ .Values.numGpus }}
    workerTemplate:
      spec:
        containers:
          - name: worker
            image: vllm:1
            resources:
              limits:
                nvidia.com/gpu: {{ .Values.numGpus }}
"""


def test_leader_and_worker_pods_in_one_template(tmp_path: Path) -> None:
    """A LeaderWorkerSet whose leader and worker templates each ask for the chart's count (multi-node vLLM charts):
    both pods ask for the same devices, so they share one claim template, named after the workload (each pod still
    gets a claim of its own from it), and the rewrite is proven (was: manual, "the device keys are in several
    containers"; then one claim-spec block per pod, the same text twice)."""
    original = write_chart(tmp_path / "original", LWS)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    out = docs(chart, "numGpus=2")
    names = [d["metadata"]["name"] for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert [n.rsplit("-", 1)[0] for n in names] == ["release-name-vllm"], names
    lws = next(d for d in out if d["kind"] == "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        pod = lws[role]["spec"]
        assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": names[0]}], pod
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
    assert (chart / "templates" / "resourceclaimtemplate.yaml").read_text().count("define") == 2  # spec, name
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


def test_leader_and_worker_with_their_own_counts(tmp_path: Path) -> None:
    """A leader that asks for its own count: each pod gets its own claim template, named after the migration's pod
    (`leader`, `worker`)."""
    leader = LWS.replace("nvidia.com/gpu: {{ .Values.numGpus }}", "nvidia.com/gpu: {{ .Values.leaderGpus }}", 1)
    original = write_chart(tmp_path / "original", leader, VALUES + "leaderGpus: 1\n")
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    out = docs(chart, "numGpus=2")
    names = sorted(d["metadata"]["name"] for d in out if d["kind"] == "ResourceClaimTemplate")
    assert [n.rsplit("-", 1)[0] for n in names] == ["release-name-vllm-leader", "release-name-vllm-worker"], names
    lws = next(d for d in out if d["kind"] == "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    for role, name in (("leaderTemplate", names[0]), ("workerTemplate", names[1])):
        assert lws[role]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": name}]
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


def test_device_key_inside_with_of_a_values_map(tmp_path: Path) -> None:
    """`{{- with .Values.resources }}` around the container's limits, the count read as `.gpu` (silogen's lerobot
    and Megatron jobs): the key's own line reads the switch as `$.Values.dra.enabled`, the claim and the claim
    template read the count as `.Values.resources.gpu`, and `with` is a condition (was: manual, "the device key is
    inside `with`")."""
    scoped = DEPLOYMENT.replace(
        "            limits:\n              memory: 1Gi\n              nvidia.com/gpu: {{ .Values.numGpus }}\n",
        "            {{- with .Values.resources }}\n            limits:\n"
        '              memory: "{{ .memory }}"\n              nvidia.com/gpu: "{{ .gpu }}"\n            {{- end }}\n',
    )
    original = write_chart(
        tmp_path / "original", scoped, VALUES + "# -- Resources\nresources:\n  memory: 1Gi\n  gpu: 1\n"
    )
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    template = (chart / "templates" / "deployment.yaml").read_text()
    assert '{{- if not $.Values.dra.enabled }}\n              nvidia.com/gpu: "{{ .gpu }}"' in template, template
    (rct,) = [d for d in docs(chart, "resources.gpu=3") if d["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


def test_device_key_indented_deeper_than_its_guarded_sibling(tmp_path: Path) -> None:
    """A device key under its own `if`, indented three spaces deeper than the guarded `memory:` beside it (ColonyOS's
    notebook chart): YAML reads it under `limits:` whenever the render parses, so it is pattern A (was: manual,
    "pattern F: not under limits/requests")."""
    deeper = DEPLOYMENT.replace(
        "              memory: 1Gi\n              nvidia.com/gpu: {{ .Values.numGpus }}\n",
        "              {{ if .Values.memoryLimit }}\n              memory: 1Gi\n              {{ end }}\n"
        "              {{ if .Values.gpu }}\n                 nvidia.com/gpu: {{ .Values.numGpus | quote }}\n"
        "              {{ end }}\n",
    )
    values = VALUES + "# -- Memory limit\nmemoryLimit: false\n# -- GPU switch\ngpu: true\n"
    original = write_chart(tmp_path / "original", deeper, values)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    (pod,) = [d["spec"]["template"]["spec"] for d in docs(chart, "numGpus=2") if d["kind"] == "Deployment"]
    assert "nvidia.com/gpu" not in (pod["containers"][0]["resources"].get("limits") or {})
    assert pod["containers"][0]["resources"]["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
    (rct,) = [d for d in docs(chart, "numGpus=2") if d["kind"] == "ResourceClaimTemplate"]
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


def test_workload_named_with_a_random_suffix(tmp_path: Path) -> None:
    """A workload whose name ends in a random suffix drawn once per render (silogen's `release.fullname` under the
    default release name keeps `randAlphaNum 5` in `.Values.releaseSuffix`): two renders of the same values name it
    differently, so the proof pairs the objects by the rest of their name and compares them whole (was: manual,
    "the rewritten chart renders it, migrating the original rendering does not")."""
    chart = write_chart(tmp_path)
    (chart / "templates" / "_helpers.tpl").write_text(
        '{{- define "app.fullname" -}}\n{{- if not .Values.releaseSuffix -}}\n'
        '{{- $_ := set .Values "releaseSuffix" (randAlphaNum 5 | lower) -}}\n{{- end -}}\n'
        "{{ .Release.Name }}-job-{{ .Values.releaseSuffix }}\n{{- end }}\n"
    )
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    pod = next(d for d in docs(chart) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}] and pod["resourceClaims"], pod


def test_random_suffix_with_a_place_for_the_users_claims(tmp_path: Path) -> None:
    """silogen's megatron job: the random suffix of its name, and a `resources` map in its values (so the proof also
    renders it with a claim of the user's own in `resourceClaims`, a key the chart does not read). The two renders
    name the job each with its own suffix and are paired by the rest of the name (was: manual, "claims other devices
    than without the user's claims ... the DRA claim does not join the pod's own resourceClaims list")."""
    by_map = DEPLOYMENT.replace("{{ .Values.numGpus }}", "{{ .Values.resources.gpu }}")
    values = "# -- Image\nimage: app:1\n# -- Resources\nresources:\n  gpu: 1\n# -- Tolerations\ntolerations: []\n"
    chart = write_chart(tmp_path, by_map, values)
    (chart / "templates" / "_helpers.tpl").write_text(
        '{{- define "app.fullname" -}}\n{{- if not .Values.releaseSuffix -}}\n'
        '{{- $_ := set .Values "releaseSuffix" (randAlphaNum 5 | lower) -}}\n{{- end -}}\n'
        "{{ .Release.Name }}-job-{{ .Values.releaseSuffix }}\n{{- end }}\n"
    )
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert any("a claim of the user's own in each resourceClaims value" in c for c in outcome.checked), outcome.checked
    write_changes(outcome)
    pod = next(d for d in docs(chart) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}] and pod["resourceClaims"], pod


def test_container_that_writes_env_twice(tmp_path: Path) -> None:
    """leapfrogai's whisper and text-embeddings charts write `env:` from values and then their own `env:` in one
    container. Helm reads the render as non-strict YAML (sigs.k8s.io/yaml over go-yaml v2): the last `env:` wins,
    whole, and the pod it sends has only the chart's own list. The chart is rewritten and proven on the render read
    that way, and the repeat is reported at its template line (was: the chart an error, "invalid YAML: duplicate
    key: env")."""
    twice = DEPLOYMENT.replace(
        "          image: {{ .Values.image }}\n",
        "          image: {{ .Values.image }}\n"
        "          {{- with .Values.env }}\n          env:\n            {{- toYaml . | nindent 12 }}\n"
        "          {{- end }}\n          env:\n            - name: MODEL_PATH\n              value: /data\n",
    )
    original = write_chart(tmp_path / "original", twice, VALUES + "# -- Environment\nenv: [{name: LOG, value: INFO}]\n")
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    (repeat,) = [f for f in outcome.findings if f.rule == "chart-duplicate-key"]
    lines = twice.splitlines()
    assert (repeat.file, repeat.line) == (f"{chart}/templates/deployment.yaml", lines.index("          env:", 22) + 1)
    assert "`env:` is written twice in one mapping; Helm keeps this one" in repeat.message
    assert [(r.file, r.line) for r in repeat.related] == [(repeat.file, lines.index("          env:") + 1)]
    write_changes(outcome)
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)
    (dep,) = [d for d in docs(chart) if d["kind"] == "Deployment"]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "MODEL_PATH", "value": "/data"}]  # as Helm reads it
    assert container["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}


def test_a_literal_count_puts_the_claim_and_the_toleration_under_one_if(tmp_path: Path) -> None:
    """`nvidia.com/gpu: 1` in a pod that writes no tolerations (suse's ollama demo): no count can switch the claim off,
    so the pod's claim and the device toleration share one `if` instead of two with the same condition."""
    own = "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n"
    literal = DEPLOYMENT.replace("{{ .Values.numGpus }}", "1").replace(own + "      {{- end }}\n", "")
    original = write_chart(tmp_path / "original", literal)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    template = (chart / "templates" / "deployment.yaml").read_text()
    assert template.count("{{- if .Values.dra.enabled }}") == 2, template  # the pod's, and the container's claims
    pod = next(d for d in docs(chart) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], pod
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"], pod
    assert rendered_text(chart, "dra.enabled=false") == rendered_text(original)


@pytest.mark.parametrize("after", ["", "          ports:\n            - containerPort: 80\n"])
def test_device_key_alone_under_limits_behind_a_count_guard(tmp_path: Path, after: str) -> None:
    # with 0 GPUs the original renders `limits:` with nothing under it; the DRA branch renders no `resources` at all:
    # the API reads both as no resources, so the chart is proven, not left as manual work
    guarded = DEPLOYMENT.replace(
        "              memory: 1Gi\n              nvidia.com/gpu: {{ .Values.numGpus }}\n",
        "            {{- if gt (int .Values.numGpus) 0 }}\n"
        "              nvidia.com/gpu: {{ .Values.numGpus }}\n"
        "            {{- end }}\n" + after,
    )
    original = write_chart(tmp_path / "original", guarded)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "numGpus switched off with 0" in outcome.checked
    write_changes(outcome)
    for sets in ((), ("numGpus=0",)):
        assert rendered_text(chart, "dra.enabled=false", *sets) == rendered_text(original, *sets)
    (zero,) = docs(chart, "numGpus=0")
    assert "nvidia.com/gpu" not in json.dumps(zero) and "resourceClaims" not in zero["spec"]["template"]["spec"]
    (dep,) = [d for d in docs(chart, "numGpus=2") if d["kind"] == "Deployment"]
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_the_claim_joins_the_pods_own_resource_claims(tmp_path: Path) -> None:
    """A pod that renders the chart's own `resourceClaims` list (`with .Values.resourceClaims`): the DRA claim joins
    that list instead of a second `resourceClaims:` key, which with the user's list set rendered the key twice (Helm
    kept the last, dropping the user's claims); the proof renders the chart with a claim of the user's own there."""
    deployment = DEPLOYMENT.replace(
        "      containers:",
        "      {{- with .Values.resourceClaims }}\n      resourceClaims:\n"
        "        {{- toYaml . | nindent 8 }}\n      {{- end }}\n      containers:",
    )
    chart = write_chart(tmp_path, deployment, VALUES + "# -- Claims of the pod\nresourceClaims: []\n")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert any("a claim of the user's own" in c for c in outcome.checked), outcome.checked
    write_changes(outcome)
    mine = tmp_path / "claims.yaml"
    mine.write_text("resourceClaims:\n- name: shared\n  resourceClaimName: gpus\n")
    (m,) = [m for m in render_chart(chart, RenderOptions(values_files=(mine,))) if "kind: Deployment" in m.text]
    assert m.text.count("resourceClaims:") == 1, m.text
    pod = yaml.safe_load(m.text)["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["shared", "gpu"], pod


@pytest.mark.parametrize("ending", ["\n", "\n\n", ""])
def test_one_blank_line_before_the_dra_block_however_values_yaml_ends(ending: str) -> None:
    values = "numGpus: 1" + ending
    doc = values + values_block(values, "gpu.nvidia.com", "nvidia.com/gpu", True)
    assert "numGpus: 1\n\ndra:\n" in doc  # was: two blank lines when the file already ended in one
    assert yaml.safe_load(doc)["dra"]["enabled"] is True
