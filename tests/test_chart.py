"""Helm charts end to end: lint findings on templates and values, proven fix, streams and post-rendering.

Every render is real (the Helm engine embedded in helm-python-sdk); nothing is mocked.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, dramigrate_executable

from dramigrate.config import Settings
from dramigrate.helm.engine import claims_text, helper_text, wrap_source
from dramigrate.helm.locate import stream_sources
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.prove import first_difference, objects
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.rewrite import split_defines
from dramigrate.helm.run import run_chart, split_release, write_changes
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

REPO = Path(__file__).resolve().parents[1]
RULES = load_rules()
T136 = Target.parse("1.36")
ENGINE = Settings(chart_style="engine")  # these tests cover the generated-engine rewrite (--chart-style engine)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  template:
    spec:
      containers:
        - name: app
          image: app:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""


def write_chart(
    root: Path, name: str, templates: dict[str, str], values: str = "", extra: dict[str, str] | None = None
) -> Path:
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    for rel, text in {**{f"templates/{k}": v for k, v in templates.items()}, **(extra or {})}.items():
        (chart / rel).parent.mkdir(parents=True, exist_ok=True)
        (chart / rel).write_text(text)
    return chart


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def docs(chart: Path, *sets: str, values: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for m in render_chart(chart, RenderOptions(set_values=sets, values_files=values)):
        out += [d for d in yaml.safe_load_all(m.text) if isinstance(d, dict)]
    return out


def kind(items: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in items if d.get("kind") == name]


@pytest.fixture
def gpu_chart(tmp_path: Path) -> Path:
    values = "# the app's resources\nresources:\n  limits:\n    nvidia.com/gpu: 1  # one GPU\nnodeSelector: {}\n"
    return write_chart(tmp_path, "app", {"deployment.yaml": DEPLOYMENT}, values)


# --- command line -----------------------------------------------------------------------------------------------


def test_release_name_comes_first_like_helm(gpu_chart: Path) -> None:
    assert split_release(["rel", str(gpu_chart)]) == ("rel", [str(gpu_chart)])
    assert split_release([str(gpu_chart)]) == (None, [str(gpu_chart)])
    assert split_release(["missing.yaml", "other.yaml"]) == (None, ["missing.yaml", "other.yaml"])


def test_lint_chart_with_release_values_and_json(run_cli: RunCli, gpu_chart: Path, tmp_path: Path) -> None:
    (tmp_path / "two.yaml").write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    code, out, err = run_cli(["lint", "prod", str(gpu_chart), "-f", str(tmp_path / "two.yaml"), "--format", "json"])
    assert code == 1, err
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert f["name"] == "prod-app"
    assert f["file"] == f"{gpu_chart}/templates/deployment.yaml"
    assert f["line"] == 11  # the `resources:` the template writes; toYaml writes the count
    assert "template expression" in f["message"]
    assert {
        "file": str(tmp_path / "two.yaml"),
        "line": 3,
        "column": 0,
        "message": 'resources.limits["nvidia.com/gpu"]: 2 sets this device count',
    } in f["related"]


def test_a_values_file_with_a_merge_key_gets_its_device_line_not_an_internal_error(
    run_cli: RunCli, gpu_chart: Path, tmp_path: Path
) -> None:
    """A `-f` file whose resources come through a YAML merge key (`<<: *gpu`): lint names the line of the count in
    the anchored map. Was: an internal error (KeyError) and the chart left unchecked."""
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("base: &gpu\n  nvidia.com/gpu: 2\nresources:\n  limits:\n    <<: *gpu\n    cpu: 1\n")
    code, out, err = run_cli(["lint", str(gpu_chart), "-f", str(gpu), "--format", "json"])
    assert code == 1, err
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert {"file": str(gpu), "line": 2, "column": 0} == {k: v for k, v in f["related"][0].items() if k != "message"}


def test_mixed_files_and_charts_in_one_run(run_cli: RunCli, gpu_chart: Path, tmp_path: Path) -> None:
    plain = tmp_path / "manifests" / "pod.yaml"
    plain.parent.mkdir()
    plain.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: c\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    runs = [run_cli(["lint", "--format", "json", str(tmp_path)]) for _ in range(2)]
    assert runs[0] == runs[1]
    files = [f["file"] for f in json.loads(runs[0][1])["findings"] if f["rule"] == "legacy-device-request"]
    assert files == sorted(files) and {Path(f).name for f in files} == {"deployment.yaml", "pod.yaml"}


def test_diff_shows_the_proven_patch_and_writes_nothing(run_cli: RunCli, gpu_chart: Path) -> None:
    before = snapshot(gpu_chart)
    code, out, err = run_cli(["diff", "--check", "--chart-style", "engine", str(gpu_chart)])
    assert code == 1, err
    assert f"+++ {gpu_chart}/templates/dramigrate-resourceclaimtemplates.yaml" in out
    assert '+{{- define "app.dramigrate.source.templates/deployment.yaml" -}}' in out
    assert "rewrite proven on" in err
    assert snapshot(gpu_chart) == before


def test_helm_errors_exit_2_with_helms_message(run_cli: RunCli, tmp_path: Path) -> None:
    broken = write_chart(tmp_path, "broken", {"cm.yaml": "kind: ConfigMap\nname: {{ .Values.x.y.z }}\n"})
    code, out, err = run_cli(["lint", str(broken)])
    assert code == 2 and "Traceback" not in err
    assert "broken/templates/cm.yaml" in out and "nil pointer" in out  # lint's report is on stdout
    deps = write_chart(tmp_path, "deps", {"cm.yaml": "kind: ConfigMap\n"})
    with (deps / "Chart.yaml").open("a") as fh:
        fh.write("dependencies:\n  - name: redis\n    version: 1.0.0\n    repository: oci://example.com/charts\n")
    code, _, err = run_cli(["fix", "--chart-style", "engine", str(deps)])
    assert code == 2 and "helm dependency build" in err


def test_chart_flags_need_a_chart(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: ConfigMap\n")
    code, _, err = run_cli(["lint", str(tmp_path / "a.yaml"), "--set", "a=1"])
    assert code == 2 and "apply to Helm charts" in err


def test_packaged_chart_is_linted_and_not_rewritten(run_cli: RunCli, gpu_chart: Path, tmp_path: Path) -> None:
    archive = tmp_path / "app-0.1.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(gpu_chart, arcname="app")
    code, out, _ = run_cli(["lint", str(archive), "--format", "json"])
    assert code == 1 and json.loads(out)["summary"]["errors"] == 1
    before = archive.read_bytes()
    code, _, err = run_cli(["fix", "--chart-style", "engine", str(archive)])
    assert code == 1 and "packaged chart" in err and "was proven" in err
    assert archive.read_bytes() == before


# --- fix: the rewrite and its proof -------------------------------------------------------------------------------


def test_fix_rewrites_and_values_users_set_keep_working(gpu_chart: Path) -> None:
    before = snapshot(gpu_chart)
    outcome = run_chart(gpu_chart, ChartOptions(), RULES, ENGINE, T136, "fix")
    assert outcome.changes and not outcome.manual, outcome.report()
    assert "default values" in outcome.checked and any("added to every resources map" in c for c in outcome.checked)
    write_changes(outcome)
    after = snapshot(gpu_chart)
    assert {k for k in after if after[k] != before.get(k)} == {
        "templates/deployment.yaml",
        "templates/_dramigrate.tpl",
        "templates/dramigrate-resourceclaimtemplates.yaml",
    }
    assert after["values.yaml"] == before["values.yaml"]  # untouched for targets from 1.34 on
    # the user's count, another resource, and devices off
    four = docs(gpu_chart, "resources.limits.nvidia\\.com/gpu=4")
    (rct,) = kind(four, "ResourceClaimTemplate")
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    (dep,) = kind(four, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": rct["metadata"]["name"]}]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    amd = docs(gpu_chart, "resources.limits.nvidia\\.com/gpu=0", "resources.limits.amd\\.com/gpu=2")
    amd_guards = RULES.lookup("amd.com/gpu").selectors  # AMD's own whole-GPU guards (no partition, no VFIO twin)
    assert kind(amd, "ResourceClaimTemplate")[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.amd.com",
        "selectors": [{"cel": {"expression": s}} for s in amd_guards],
        "allocationMode": "ExactCount",
        "count": 2,
    }
    off = docs(gpu_chart, "resources.limits.nvidia\\.com/gpu=0")
    assert not kind(off, "ResourceClaimTemplate") and "resourceClaims" not in str(off)
    # fix again: nothing to do
    again = run_chart(gpu_chart, ChartOptions(), RULES, ENGINE, T136, "fix")
    assert not again.changes and not again.manual


def test_chart_without_devices_in_defaults_migrates_what_users_add(tmp_path: Path) -> None:
    chart = write_chart(tmp_path, "cpu", {"deployment.yaml": DEPLOYMENT}, "resources: {}\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    assert not run_chart(chart, ChartOptions(), RULES, ENGINE, T136, "fix").changes  # no GPU, no rewrite
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, ENGINE, T136, "fix")
    write_changes(outcome)
    assert not kind(docs(chart), "ResourceClaimTemplate")
    (rct,) = kind(docs(chart, "resources.limits.nvidia\\.com/mig-3g\\.40gb=2"), "ResourceClaimTemplate")
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com"


def test_api_version_from_capabilities_with_a_values_override(gpu_chart: Path) -> None:
    write_changes(run_chart(gpu_chart, ChartOptions(), RULES, ENGINE, T136, "fix"))
    (v1,) = kind(docs(gpu_chart), "ResourceClaimTemplate")
    assert v1["apiVersion"] == "resource.k8s.io/v1"  # offline, every version reads as served: v1 first
    (beta,) = kind(docs(gpu_chart, "dramigrate.resourceApiVersion=resource.k8s.io/v1beta1"), "ResourceClaimTemplate")
    assert beta["apiVersion"] == "resource.k8s.io/v1beta1"
    assert beta["spec"]["spec"]["devices"]["requests"][0] == {  # the flat v1beta1 request shape
        "name": "gpu",
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    helper = (gpu_chart / "templates" / "_dramigrate.tpl").read_text()
    assert helper.index('Has "resource.k8s.io/v1"') < helper.index('Has "resource.k8s.io/v1beta2"')
    assert helper.index('Has "resource.k8s.io/v1beta2"') < helper.index('Has "resource.k8s.io/v1beta1"')


def test_target_below_134_writes_the_version_into_values_keeping_comments(gpu_chart: Path) -> None:
    settings = Settings(kube_version="1.33", assume_dra_enabled=True, chart_style="engine")
    outcome = run_chart(gpu_chart, ChartOptions(), RULES, settings, Target.parse("1.33"), "fix")
    assert outcome.changes and not outcome.manual, outcome.report()
    write_changes(outcome)
    values = (gpu_chart / "values.yaml").read_text()
    assert values.startswith("# the app's resources\nresources:\n  limits:\n    nvidia.com/gpu: 1  # one GPU\n")
    assert yaml.safe_load(values)["dramigrate"] == {"resourceApiVersion": "resource.k8s.io/v1beta2"}
    (rct,) = kind(docs(gpu_chart), "ResourceClaimTemplate")
    assert rct["apiVersion"] == "resource.k8s.io/v1beta2"


def test_counts_from_helpers_tpl_and_files_get_are_located(tmp_path: Path) -> None:
    helpers = '{{- define "app.gpus" -}}{{ .Values.accel.count | default 1 }}{{- end -}}\n'
    templates = {
        "_helpers.tpl": helpers,
        "helper.yaml": _pod("from-helper", '          nvidia.com/gpu: {{ include "app.gpus" . }}\n'),
        "tpl.yaml": _pod("from-tpl", "          nvidia.com/gpu: {{ tpl .Values.tplCount . }}\n"),
        "files.yaml": '{{ tpl (.Files.Get "files/job.yaml") . }}\n',
    }
    files = {"files/job.yaml": _pod("from-file", "          nvidia.com/gpu: {{ .Values.fileGpus }}\n")}
    values = "accel:\n  count: 2\nperNode: 4\ntplCount: '{{ .Values.perNode }}'\nfileGpus: 3\n"
    chart = write_chart(tmp_path, "app", templates, values, files)
    outcome = run_chart(chart, ChartOptions(), RULES, ENGINE, T136, "lint")
    related = {
        f.name: [(Path(r.file).name, r.line, r.note.split(":")[0]) for r in f.related]
        for f in outcome.findings
        if f.rule == "legacy-device-request"
    }
    assert ("values.yaml", 2, "accel.count") in related["from-helper"]
    assert ("values.yaml", 3, "perNode") in related["from-tpl"]
    assert ("values.yaml", 5, "fileGpus") in related["from-file"]
    assert ("job.yaml", 12, "the text comes from this chart file (tpl/.Files.Get)") in related["from-file"]
    fixed = run_chart(chart, ChartOptions(), RULES, ENGINE, T136, "fix")
    assert fixed.changes and not fixed.manual, fixed.report()


def _pod(name: str, device_line: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n    - name: c\n      image: c\n"
        "      resources:\n        limits:\n          cpu: 1\n" + device_line
    )


def test_labels_from_values_stay_and_are_reported(tmp_path: Path) -> None:
    values = (
        "resources:\n  limits:\n    nvidia.com/gpu: 1\nnodeSelector:\n  nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
    )
    chart = write_chart(tmp_path, "app", {"deployment.yaml": DEPLOYMENT}, values)
    outcome = run_chart(chart, ChartOptions(), RULES, ENGINE, T136, "fix")
    assert outcome.changes and not outcome.manual, outcome.report()
    (note,) = [f for f in outcome.findings if f.rule == "chart-label-from-values"]
    assert "nvidia.com/gpu.product from nodeSelector" in note.message


def test_unprovable_rewrite_writes_nothing_and_shows_the_patch(run_cli: RunCli, tmp_path: Path) -> None:
    literal_label = DEPLOYMENT.replace(
        "      {{- with .Values.nodeSelector }}",
        "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n      {{- with .Values.x }}",
    )
    chart = write_chart(
        tmp_path, "app", {"deployment.yaml": literal_label}, "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
    )
    before = snapshot(chart)
    report = tmp_path / "report.json"
    code, _, err = run_cli(["fix", "--chart-style", "engine", str(chart), "--format", "json", "--output", str(report)])
    assert code == 1
    assert snapshot(chart) == before
    assert "needs manual work, nothing written" in err and "suggested patch (not proven)" in err
    assert "device labels that a template writes itself" in err
    assert f"+++ {chart}/templates/deployment.yaml" in err and "nodeSelector" in err  # names the field
    rules = {f["rule"]: f for f in json.loads(report.read_text())["findings"]}
    assert not rules["legacy-device-request"]["fixed"]
    assert "fix writes nothing for this chart" in rules["chart-rewrite-unproven"]["message"]


def test_template_defines_are_moved_out_of_the_wrapper() -> None:
    text = 'a: 1\n{{- define "x" }}{{ if . }}y{{ end }}{{- end }}\nb: {{ "}}" }}\n'
    defines, rest = split_defines(text)
    assert defines == '{{- define "x" }}{{ if . }}y{{ end }}{{- end }}\n'
    assert rest == 'a: 1\nb: {{ "}}" }}\n'


def test_comparison_ignores_what_differs_between_two_renders_of_the_original() -> None:
    a = objects("kind: Secret\nmetadata: {name: s}\ndata: {pw: x1}\n")
    b = objects("kind: Secret\nmetadata: {name: s}\ndata: {pw: x2}\n")
    assert "data.pw: expected" in first_difference(a, b)
    assert first_difference(a, b, {"('', 'Secret', '', 's')|data.pw"}) == ""


# --- the helper reproduces the core, case by case ------------------------------------------------------------------

CASES = REPO / "fixtures" / "cases"


def _case_inputs() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if (p / "input.yaml").is_file())


# Shapes the core's golden cases do not have, that a chart can render.
EXTRA_INPUTS = {
    # only generateName (a Job a CI pipeline creates again and again): the claim template named from its prefix
    "generate-name-only": """\
apiVersion: batch/v1
kind: Job
metadata: {generateName: train-, namespace: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: train, image: t, resources: {limits: {nvidia.com/gpu: 2}}}
""",
    "sidecar-before-init": """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: sc}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        initContainers:
        - {name: proxy, image: p, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1}}}
        - {name: warm, image: w, resources: {limits: {nvidia.com/gpu: 3}}}
        - {name: late, image: l, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1}}}
        containers:
        - {name: main, image: m, resources: {limits: {nvidia.com/gpu: 2}}}
""",
    "key-order-strings-zero": """\
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ml}
spec:
  template:
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - name: a
        image: a
        resources:
          requests: {vpc.amazonaws.com/efa: "4", nvidia.com/gpu: "2", memory: 1Gi}
          limits: {vpc.amazonaws.com/efa: "4", nvidia.com/gpu: "2"}
      - name: b
        image: b
        resources: {limits: {amd.com/gpu: 0, nvidia.com/mig-2g.20gb: 1, nvidia.com/mig-1g.10gb: 2}}
""",
}


# Cases the chart helper does not reproduce; a chart with such a pod fails the proof and is reported as manual.
# counts-invalid: the core leaves a pod with an invalid count whole (quantity.py), the engine helper migrates per
# container. many-containers, vendor-efa-gpu: more than 32 devices in a pod, which the core splits into one claim per
# device class or refuses, and the helper fails to render (test_helper_fails_past_the_claim_device_limit).
CORE_ONLY = {"many-containers", "counts-invalid", "vendor-efa-gpu"}


def test_helper_migrates_like_the_core_on_every_golden_case(tmp_path: Path) -> None:
    """Each fixtures/cases input, as a chart template, renders what the core writes for it. Node-label
    translation is the core's alone (charts report it), and so are ResourceQuotas (not pod templates)."""
    no_labels = copy.copy(RULES)
    no_labels.labels = {}
    failures = []
    inputs = {case: (CASES / case / "input.yaml").read_bytes() for case in _case_inputs()}
    inputs.update({case: text.encode() for case, text in EXTRA_INPUTS.items()})
    for case, raw in inputs.items():
        if b"{{" in raw or case in CORE_ONLY:
            continue
        chart = tmp_path / case
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
        (chart / "templates" / "w.yaml").write_text(wrap_source("c", "templates/w.yaml", raw.decode()))
        (chart / "templates" / "_dramigrate.tpl").write_text(helper_text("c", RULES, Settings()))
        (chart / "templates" / "dramigrate-resourceclaimtemplates.yaml").write_text(
            claims_text("c", ["templates/w.yaml"])
        )
        result = run_file(Job("w.yaml", raw, True), no_labels, Settings(), T136)
        expected = objects(result.rewritten or raw.decode())
        rendered = objects("".join("---\n" + m.text for m in render_chart(chart, RenderOptions())))
        for key in [k for k in expected if k[1] == "ResourceQuota"]:
            expected.pop(key), rendered.pop(key, None)
        diff = first_difference(expected, rendered)
        if diff:
            failures.append(f"{case}: {diff}")
    assert not failures, "\n".join(failures)


def test_helper_fails_past_the_claim_device_limit(tmp_path: Path) -> None:
    """8 GPUs and 32 EFA interfaces in one pod: one claim of 40 would never schedule, so the render fails and says
    why, instead of deploying a pod that waits forever."""
    chart = tmp_path / "efa"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    raw = (CASES / "vendor-efa-gpu" / "input.yaml").read_text()
    (chart / "templates" / "w.yaml").write_text(wrap_source("c", "templates/w.yaml", raw))
    (chart / "templates" / "_dramigrate.tpl").write_text(helper_text("c", RULES, Settings()))
    with pytest.raises(HelmError, match="more than 32 devices.*at most 32 to one claim"):
        render_chart(chart, RenderOptions())


# --- streams and post-rendering ---------------------------------------------------------------------------------------


def _template_output(chart: Path) -> str:
    return "".join(f"---\n# Source: {m.source}\n{m.text}" for m in render_chart(chart, RenderOptions()))


def test_stream_findings_name_the_source_template(run_cli: RunCli, gpu_chart: Path) -> None:
    code, out, _ = run_cli(["lint", "-", "--format", "json"], stdin=_template_output(gpu_chart))
    assert code == 1
    (f,) = json.loads(out)["findings"]
    assert f["file"] == "-"
    assert f["related"][0]["file"] == "app/templates/deployment.yaml"
    helm4 = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        "    postrenderer.helm.sh/postrender-filename: 'templates/pod.yaml'\n"
    )
    assert [(p.start, p.source) for p in stream_sources(helm4)] == [(1, "templates/pod.yaml")]


def test_a_comment_only_template_keeps_its_own_part() -> None:
    """A template that renders only comments (an old worker left commented out) is followed by another template's
    `# Source:`: that next document is the other template's, not carried over to the comment-only one."""
    stream = (
        "---\n# Source: c/templates/old-worker.yaml\n# resources:\n#   limits:\n#     nvidia.com/gpu: 1\n"
        "---\n# Source: c/templates/raycluster.yaml\napiVersion: ray.io/v1\nkind: RayCluster\n"
    )
    parts = [(p.start, p.source) for p in stream_sources(stream)]
    assert parts == [(3, "c/templates/old-worker.yaml"), (8, "c/templates/raycluster.yaml")]
    # bjw-s common: `# Source:` then the template's own `---`: the object is still that template's
    bjws = "---\n# Source: c/templates/common.yaml\n---\napiVersion: v1\nkind: Service\n"
    assert [(p.start, p.source) for p in stream_sources(bjws)] == [(4, "c/templates/common.yaml")]


def test_post_renderer_script_and_plugin_manifest(gpu_chart: Path) -> None:
    import subprocess

    folder = REPO / "helm" / "post-renderer"
    plugin = yaml.safe_load((folder / "plugin.yaml").read_text())
    assert plugin["apiVersion"] == "v1" and plugin["type"] == "postrenderer/v1" and plugin["runtime"] == "subprocess"
    commands = plugin["runtimeConfig"]["platformCommand"]
    assert commands[-1] == {"command": "${HELM_PLUGIN_DIR}/dramigrate-post-renderer"}
    script = folder / "dramigrate-post-renderer"
    assert script.stat().st_mode & stat.S_IXUSR
    env = {**os.environ, "DRAMIGRATE": dramigrate_executable(), "NO_COLOR": "1"}
    done = subprocess.run(
        [str(script)], input=_template_output(gpu_chart).encode(), capture_output=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    out = list(yaml.safe_load_all(done.stdout))
    assert [d["kind"] for d in out if d] == ["Deployment", "ResourceClaimTemplate"]
    bad = subprocess.run([str(script)], input=b"a: [\n", capture_output=True, env=env, check=False)
    assert bad.returncode != 0


def test_docs_cover_both_helm_majors_and_hooks() -> None:
    text = (REPO / "docs" / "helm.md").read_text()
    for needle in ("postrenderer/v1", "--post-renderer-args", "Hooks, in Helm 3", "helm plugin install"):
        assert needle in text


def test_helm_binary_renders_instead_of_the_sdk(run_cli: RunCli, gpu_chart: Path, tmp_path: Path) -> None:
    """A stand-in `helm` that prints what `helm template` prints; its errors are Helm's messages."""
    (tmp_path / "out.yaml").write_text(_template_output(gpu_chart))
    fake = tmp_path / "helm"
    fake.write_text(f'#!/bin/sh\n[ "$1" = template ] || exit 3\ncat "{tmp_path / "out.yaml"}"\n')
    fake.chmod(0o755)
    code, out, err = run_cli(["lint", str(gpu_chart), "--helm-binary", str(fake), "--format", "json"])
    assert code == 1, err
    (f,) = [f for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"]
    assert f["file"] == f"{gpu_chart}/templates/deployment.yaml" and f["line"] == 11
    fake.write_text("#!/bin/sh\necho 'Error: INSTALLATION FAILED: boom' >&2\nexit 1\n")
    code, out, err = run_cli(["lint", str(gpu_chart), "--helm-binary", str(fake)])
    assert code == 2 and "INSTALLATION FAILED: boom" in out and "Traceback" not in err


def test_helm_binary_in_the_working_folder_is_that_file(
    run_cli: RunCli, gpu_chart: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--helm-binary ./helm-4` runs the file in the working folder. Was: the `./` was dropped and `helm-4` looked up
    on PATH ("cannot run helm-4")."""
    (tmp_path / "out.yaml").write_text(_template_output(gpu_chart))
    fake = tmp_path / "helm-4"
    fake.write_text(f'#!/bin/sh\ncat "{tmp_path / "out.yaml"}"\n')
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["lint", str(gpu_chart), "--helm-binary", "./helm-4", "--format", "json"])
    assert code == 1 and any(f["rule"] == "legacy-device-request" for f in json.loads(out)["findings"]), (out, err)


def test_existing_values_block_is_edited_in_place(gpu_chart: Path) -> None:
    values = gpu_chart / "values.yaml"
    values.write_text(values.read_text() + "dramigrate:\n  # pinned by the platform team\n  resourceApiVersion: ''\n")
    settings = Settings(kube_version="1.32", assume_dra_enabled=True, chart_style="engine")
    outcome = run_chart(gpu_chart, ChartOptions(), RULES, settings, Target.parse("1.32"), "fix")
    assert not outcome.manual, outcome.report()
    write_changes(outcome)
    text = values.read_text()
    assert "  # pinned by the platform team\n  resourceApiVersion: 'resource.k8s.io/v1beta1'\n" in text  # quoting kept
    assert text.startswith("# the app's resources\n")


def test_block_templates_are_not_wrapped() -> None:
    from dramigrate.helm.rewrite import RewriteError

    with pytest.raises(RewriteError, match="block"):
        split_defines('{{ block "x" . }}a: 1{{ end }}\n')


def test_device_request_in_a_secrets_base64_values_is_warned(run_cli: RunCli, tmp_path: Path) -> None:
    """z2jh's shape: the chart's values go base64 into a Secret, and a controller (KubeSpawner) creates the GPU
    pods from them; fix cannot reach those pods, so lint and fix say where the request sits."""
    secret = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hub\ntype: Opaque\ndata:\n"
        '  values.yaml: {{ .Values | toYaml | b64enc | quote }}\n  plain: {{ "just text" | b64enc }}\n'
    )
    values = "singleuser:\n  extraResource:\n    limits:\n      nvidia.com/gpu: 1\n"
    chart = write_chart(tmp_path, "hub", {"secret.yaml": secret}, values)
    for command in ("lint", "fix"):
        code, out, err = run_cli([command, str(chart), "--format", "json"])
        (f,) = json.loads(out)["findings"]
        assert (f["rule"], f["file"], f["line"]) == ("embedded-device-request", f"{chart}/templates/secret.yaml", 7)
        assert (f["kind"], f["name"], f["resource"]) == ("Secret", "hub", "nvidia.com/gpu")
        assert "values.yaml (base64)" in f["message"] and "keep asking the device plugin" in f["message"]
    assert snapshot(chart)["templates/secret.yaml"] == secret.encode()
