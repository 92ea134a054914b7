"""The helm-unittest suite the idiomatic rewrite writes when the chart has a `tests/` folder.

The plugin cannot run here, so each test case of the written suite is checked against the real render
(the Helm engine embedded in helm-python-sdk) of the rewritten chart with that case's `set` values: every
assert is evaluated on the rendered documents of its template, with helm-unittest's path syntax.
One fix per module; three renders, one per test case.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, deployment, dramigrate_in_process, fix_chart
from test_helm_idiomatic import RULES, T136, write_chart
from test_helm_passthrough import write_chart as passthrough_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


SUITE = "tests/deployment-dra_test.yaml"
_SEGMENT = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["([^"]+)"\]')
_MISSING = object()


def lookup(doc: Any, path: str) -> Any:
    """The value at a helm-unittest path (`a.b[0]["c.d/e"]`), or _MISSING."""
    pos, node = 0, doc
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        assert m, f"not a helm-unittest path: {path!r} at {pos}"
        pos = m.end()
        key: Any = int(m.group(2)) if m.group(2) is not None else (m.group(1) or m.group(3))
        if isinstance(key, int):
            if not isinstance(node, list) or key >= len(node):
                return _MISSING
        elif not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def holds(assertion: dict[str, Any], docs: list[dict[str, Any]]) -> bool:
    """One helm-unittest assertion on the documents its template rendered (all documents, as the plugin
    does without documentIndex)."""
    (kind,) = [k for k in assertion if k not in ("template", "not", "documentIndex", "documentSelector")]
    arg = assertion[kind]
    if kind == "hasDocuments":
        return len(docs) == arg["count"]
    if "documentSelector" in assertion:
        selector = assertion["documentSelector"]
        docs = [d for d in docs if lookup(d, selector["path"]) == selector["value"]]
        assert len(docs) == 1, f"documentSelector {selector} matches {len(docs)} documents"
    if not docs:
        return False  # the plugin fails an assert on a template that rendered nothing
    checks = {
        "isKind": lambda d: d.get("kind") == arg["of"],
        "exists": lambda d: lookup(d, arg["path"]) is not _MISSING,
        "notExists": lambda d: lookup(d, arg["path"]) is _MISSING,
        "equal": lambda d: lookup(d, arg["path"]) == arg["value"],
    }
    return all(checks[kind](d) for d in docs)


def set_values(sets: dict[str, Any]) -> dict[str, Any]:
    """A case's `set:` as the values helm-unittest renders with: each key a path of map keys split at its dots (a map
    under it names keys with dots), each value merged over the others as Helm merges values files."""
    from dramigrate.helm.render import _merge_maps

    out: dict[str, Any] = {}
    for path, value in sets.items():
        for key in reversed(path.split(".")):
            value = {key: value}
        out = _merge_maps(out, value)
    return out


def by_template(
    chart: Path, case: dict[str, Any], capabilities: dict[str, Any], release: str = "release-name"
) -> dict[str, list[dict[str, Any]]]:
    """The documents each template renders with the case's values (files relative to the suite, in tests/)."""
    version = f"{capabilities['majorVersion']}.{capabilities['minorVersion']}"
    files = tuple((chart / "tests" / f).resolve() for f in case.get("values", []))
    assert all(f.is_file() for f in files), files
    if case.get("set"):
        sets = chart.parent / f"{chart.name}-set.yaml"
        sets.write_text(yaml.safe_dump(set_values(case["set"])))
        files = (*files, sets)
    options = RenderOptions(values_files=files, kube_version=version, release_name=release)
    out: dict[str, list[dict[str, Any]]] = {}
    for m in render_chart(chart, options):
        rel = m.source.split("/templates/", 1)[1]
        out.setdefault(rel, []).extend(d for d in yaml.safe_load_all(m.text) if d)
    return out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[dict[str, Any]]]:
    root = tmp_path_factory.mktemp("unittest")
    chart = write_chart(root)
    (chart / "tests").mkdir()
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    body = yaml.safe_load((chart / SUITE).read_text())
    renders = [by_template(chart, case, body["capabilities"]) for case in body["tests"]]
    return chart, body, renders


def test_suite_has_the_plugin_layout(suite: tuple[Path, dict[str, Any], list[dict[str, Any]]]) -> None:
    chart, body, _ = suite
    assert set(body) >= {"suite", "templates", "tests"}
    assert body["templates"] == ["deployment.yaml", "resourceclaimtemplate.yaml"]
    assert all((chart / "templates" / t).is_file() for t in body["templates"])
    sets = [case["set"] for case in body["tests"]]
    assert sets == [{"dra.enabled": False}, {"dra.enabled": True}, {"dra.enabled": True, "numGpus": 0}]
    for case in body["tests"]:
        assert case["it"] and case["asserts"]
        for a in case["asserts"]:
            assert a["template"] in body["templates"]
            assert len([k for k in a if k != "template"]) == 1  # one assertion type per entry, as the plugin wants


def test_every_assert_holds_on_the_real_render(suite: tuple[Path, dict[str, Any], list[dict[str, Any]]]) -> None:
    _, body, renders = suite
    for case, rendered in zip(body["tests"], renders, strict=True):
        for a in case["asserts"]:
            assert holds(a, rendered.get(a["template"], [])), (case["it"], a)


def test_the_cases_pin_what_the_switch_and_count_change(
    suite: tuple[Path, dict[str, Any], list[dict[str, Any]]],
) -> None:
    """Off: the device key and no claim; on: the claim and no device key; count 0: no claim. Each case's
    asserts fail on another case's render, so the suite notices a switch that does nothing."""
    _, body, renders = suite
    off, on, zero = body["tests"]
    paths = {kind: [a[kind]["path"] for a in off["asserts"] if kind in a] for kind in ("exists", "notExists")}
    assert paths["exists"] == ['spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]']
    assert "spec.template.spec.resourceClaims" in paths["notExists"]
    assert {"equal": {"path": "spec.template.spec.resourceClaims[0].name", "value": "gpu"}} in [
        {k: v for k, v in a.items() if k != "template"} for a in on["asserts"]
    ]
    assert {"hasDocuments": {"count": 0}, "template": "resourceclaimtemplate.yaml"} in zero["asserts"]
    for i, case in enumerate(body["tests"]):
        for j, rendered in enumerate(renders):
            if i != j:
                assert not all(holds(a, rendered.get(a["template"], [])) for a in case["asserts"]), (i, j)


def test_no_suite_without_a_tests_folder(tmp_path: Path) -> None:
    chart = shutil.copytree(write_chart(tmp_path / "a"), tmp_path / "b" / "app")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven and not [c for c in outcome.changes if c.rel.startswith("tests/")]


@pytest.fixture(scope="module")
def passthrough(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Pattern C with a GPU in the chart's defaults: the switch is values-dra.yaml; the template renders a
    Deployment and a Job, so the suite picks the Deployment by kind."""
    chart = passthrough_chart(tmp_path_factory.mktemp("passthrough"))
    values = (chart / "values.yaml").read_text()
    (chart / "values.yaml").write_text(
        values.replace("  resources: {}\n", "  resources:\n    limits:\n      nvidia.com/gpu: 1\n", 1)
    )
    (chart / "tests").mkdir()
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    body = yaml.safe_load((chart / "tests" / "workloads-dra_test.yaml").read_text())
    return body, [by_template(chart, case, body["capabilities"]) for case in body["tests"]]


def test_passthrough_suite_switches_with_the_dra_values_file(
    passthrough: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    body, renders = passthrough
    assert [case.get("values", []) for case in body["tests"]] == [[], ["../values-dra.yaml"]]
    for case, rendered in zip(body["tests"], renders, strict=True):
        assert all(a.get("documentSelector", {}).get("value") in (None, "Deployment") for a in case["asserts"])
        for a in case["asserts"]:
            assert holds(a, rendered.get(a["template"], [])), (case["it"], a)
    plugin, dra = body["tests"]
    assert not all(holds(a, renders[1].get(a["template"], [])) for a in plugin["asserts"])
    assert not all(holds(a, renders[0].get(a["template"], [])) for a in dra["asserts"])


def test_umbrella_leaf_gets_its_suite_in_its_own_keys(tmp_path: Path) -> None:
    """The umbrella's leaf (pattern A, from file://../app) keeps unit tests: its source and its charts/ copy get
    the suite, whose `set` keys are the leaf's own (dra.enabled, not trainer.dra.enabled)."""
    from test_chart_umbrella import write_umbrella

    umbrella = write_umbrella(tmp_path)
    for leaf in (tmp_path / "app", umbrella / "charts" / "app"):
        (leaf / "tests").mkdir()
    outcome = run_chart(umbrella, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    leaf = tmp_path / "app"
    assert (leaf / SUITE).read_text() == (umbrella / "charts" / "app" / SUITE).read_text()
    body = yaml.safe_load((leaf / SUITE).read_text())
    for case in body["tests"]:
        rendered = by_template(leaf, case, body["capabilities"])
        assert all(holds(a, rendered.get(a["template"], [])) for a in case["asserts"]), case["it"]


def test_passthrough_suite_when_the_values_file_is_outside_the_chart(run_cli: RunCli, tmp_path: Path) -> None:
    """The GPU values file the user names lives outside the chart (a suite names its values files relative to
    itself): the suite sets the file's values itself (`set:`) and its asserts hold on the real renders (was: no
    suite); fix lists the DRA variant where it wrote it."""
    chart = passthrough_chart(tmp_path / "c")
    (chart / "tests").mkdir()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("trainer:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    code, out, err = run_cli(["fix", str(chart), "-f", str(gpu)])
    assert code == 0, err
    assert f"\n  {tmp_path / 'gpu-dra.yaml'}\n" in out + err
    body = yaml.safe_load((chart / "tests" / "workloads-dra_test.yaml").read_text())
    assert [set_values(case["set"])["trainer"]["resources"] for case in body["tests"]] == [
        {"limits": {"nvidia.com/gpu": 2}},
        {"limits": None, "claims": [{"name": "gpu"}]},  # the file's values, then its DRA overlay's
    ]
    for i, case in enumerate(body["tests"]):
        values = tmp_path / f"case{i}.yaml"
        values.write_text(yaml.safe_dump(set_values(case["set"])))
        rendered = by_template(chart, {"values": [str(values)]}, body["capabilities"])
        assert all(holds(a, rendered.get(a["template"], [])) for a in case["asserts"]), case["it"]


def assert_cases_hold(chart: Path, body: dict[str, Any], at: Path) -> None:
    """Each case's asserts hold on the real render of the chart with the case's values (`set:` written to a file in
    `at`, its values files named relative to the suite)."""
    for i, case in enumerate(body["tests"]):
        values = [str((chart / "tests" / f).resolve()) for f in case.get("values", [])]
        if case.get("set"):
            (at / f"case{i}.yaml").write_text(yaml.safe_dump(set_values(case["set"])))
            values.append(str(at / f"case{i}.yaml"))
        rendered = by_template(chart, {"values": values}, body["capabilities"])
        for a in case["asserts"]:  # an assert names its template when the suite lists two
            assert holds(a, rendered.get(a.get("template", body["templates"][0]), [])), (case["it"], a)


# a values file of a user's, outside the chart: the GPU map among many settings no device request reads
BIG = "image: trainer:2\n" + "".join(f"setting{i}:\n  name: value-{i}\n  port: {8000 + i}\n" for i in range(40))
BIG += "trainer:\n  resources:\n    limits:\n      memory: 8Gi\n      nvidia.com/gpu: 2\n"


def test_suite_sets_only_the_device_keys_of_a_big_values_file_outside_the_chart(tmp_path: Path) -> None:
    """The user's values file (outside the chart: a suite names only files beside it) holds 120 lines of settings no
    device request reads: each case sets the device map's keys alone, which the real renders show to give the same
    request and claim (was: the whole file in each case, twice the file's length in the suite)."""
    chart = passthrough_chart(tmp_path / "c")
    (chart / "tests").mkdir()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(BIG)
    fix_chart(chart, values=(gpu,))
    text = (chart / "tests" / "workloads-dra_test.yaml").read_text()
    assert "setting" not in text and "image" not in text, text
    assert len(text.splitlines()) < len(BIG.splitlines()), text
    body = yaml.safe_load(text)
    assert [sorted(set_values(case["set"])) for case in body["tests"]] == [
        ["trainer"],
        ["resourceClaimTemplates", "trainer"],
    ]
    assert "gpu.yaml" in body["tests"][0]["it"] and "gpu-dra.yaml" in body["tests"][1]["it"]
    assert_cases_hold(chart, body, tmp_path)


def test_suite_names_a_values_file_inside_the_chart_instead_of_copying_it(tmp_path: Path) -> None:
    """The GPU values file is the chart's own (ci/gpu-values.yaml, given with -f): the suite names it and its DRA
    variant with `values:` (relative to the suite file, as helm-unittest reads them) and copies none of its keys."""
    chart = passthrough_chart(tmp_path / "c")
    (chart / "tests").mkdir()
    (chart / "ci").mkdir()
    (chart / "ci" / "gpu-values.yaml").write_text(BIG)
    fix_chart(chart, values=(chart / "ci" / "gpu-values.yaml",))
    text = (chart / "tests" / "workloads-dra_test.yaml").read_text()
    assert "setting" not in text and "set:" not in text, text
    body = yaml.safe_load(text)
    assert [case["values"] for case in body["tests"]] == [
        ["../ci/gpu-values.yaml"],
        ["../ci/gpu-values.yaml", "../ci/gpu-values-dra.yaml"],
    ]
    assert_cases_hold(chart, body, tmp_path)


def test_suite_keeps_a_value_the_chart_requires_and_drops_the_device_keys_siblings(tmp_path: Path) -> None:
    """The chart renders only with a `schedule` (`required`, no default), which the user's file sets beside settings
    no template reads and a memory limit beside the device key: each case sets the schedule, which the render check
    found the workload needs, and not the settings or the memory limit, which the device request does not."""
    from test_helm_passthrough import VALUES, WORKLOADS

    required = (
        '    metadata:\n      annotations:\n        schedule: {{ required "a schedule" .Values.schedule | quote }}\n'
    )
    template = WORKLOADS.replace("  template:\n", "  template:\n" + required, 1)
    chart = chart_with(tmp_path / "c", "app", {"values.yaml": VALUES, "templates/workloads.yaml": template})
    (chart / "tests").mkdir()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(BIG.replace("image: trainer:2\n", "schedule: 0 3 * * *\n"))
    fix_chart(chart, values=(gpu,))
    body = yaml.safe_load((chart / "tests" / "workloads-dra_test.yaml").read_text())
    plugin, dra = (set_values(case["set"]) for case in body["tests"])
    assert plugin == {"schedule": "0 3 * * *", "trainer": {"resources": {"limits": {"nvidia.com/gpu": 2}}}}
    assert dra["schedule"] == "0 3 * * *" and sorted(dra) == ["resourceClaimTemplates", "schedule", "trainer"]
    assert_cases_hold(chart, body, tmp_path)


def test_suite_sets_the_whole_file_when_a_trimmed_one_renders_another_request(tmp_path: Path) -> None:
    """The GPU workloads render only with `secret.name` set, a key away from the device map: without it neither the
    request nor the claim renders, so the render check keeps the whole file in each case, and the suite writes each
    case whole (no YAML anchor `&id001` in the first and `*id001` in the second, which a reader cannot follow)."""
    from test_helm_passthrough import VALUES, WORKLOADS

    guarded = "{{- if .Values.secret.name }}\n" + WORKLOADS + "{{- end }}\n"
    chart = chart_with(tmp_path / "c", "app", {"values.yaml": VALUES, "templates/workloads.yaml": guarded})
    (chart / "tests").mkdir()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "image: trainer:2\nsecret: {name: token}\ntrainer:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    )
    fix_chart(chart, values=(gpu,))
    text = (chart / "tests" / "workloads-dra_test.yaml").read_text()
    assert "&id" not in text and "*id" not in text, text
    body = yaml.safe_load(text)
    assert [set_values(case["set"])["secret"] for case in body["tests"]] == [{"name": "token"}] * 2
    assert_cases_hold(chart, body, tmp_path)


# one template, three documents: a Deployment without a device, a Service named as the GPU Deployment, the GPU
# Deployment (pattern A: a literal key with a values count; pattern B: a toYaml of a values resources map)
SERVED = deployment(
    "{{ .Release.Name }}-router",
    """\
      containers:
        - name: main
          image: nginx:1.27
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-server
spec:
  selector: {app: server}
  ports:
    - port: 8000
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
        - name: main
          image: vllm/vllm-openai:v0.6.0
          resources:
            REQUEST
""",
)
SHAPES = {
    "A": ("numGpus: 1\n", "limits:\n              nvidia.com/gpu: {{ .Values.numGpus }}"),
    "B": ("resources:\n  limits:\n    nvidia.com/gpu: 1\n", "{{- toYaml .Values.resources | nindent 12 }}"),
}


def assert_suite_holds(chart: Path, rel: str) -> dict[str, Any]:
    """Every assert of the suite holds on the real render of its case (the plugin's release name when it names
    one), and each assert that picks a document picks exactly one."""
    body = yaml.safe_load((chart / rel).read_text())
    release = body.get("release", {}).get("name", "release-name")
    for case in body["tests"]:
        rendered = by_template(chart, case, body["capabilities"], release)
        for a in case["asserts"]:
            assert holds(a, rendered.get(a["template"], [])), (case["it"], a)
    return body


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_suite_picks_the_gpu_workload_of_a_template_of_several_documents(tmp_path: Path, shape: str) -> None:
    """The template renders two Deployments and a Service named as the GPU one: neither kind nor name tells the GPU
    Deployment, its pod's label does (was: the asserts ran on every document of the template, and the router and
    the Service have no device key)."""
    values, request = SHAPES[shape]
    chart = chart_with(
        tmp_path, "app", {"values.yaml": values, "templates/serving.yaml": SERVED.replace("REQUEST", request)}
    )
    (chart / "tests").mkdir()
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    body = assert_suite_holds(chart, "tests/serving-dra_test.yaml")
    selectors = [a.get("documentSelector") for case in body["tests"] for a in case["asserts"]]
    assert {"path": "spec.template.metadata.labels.app", "value": "server"} in selectors


def test_bjws_library_chart_gets_its_suite_with_the_controller_picked_by_name(tmp_path: Path) -> None:
    """bjw-s common renders every controller from templates/common.yaml (two Deployments here): the values-only
    rewrite writes the suite of that template (was: none), the GPU controller's Deployment picked by its name, which
    the release name builds (the suite names the release the proof rendered)."""
    from test_helm_library_values import _app

    chart = _app(tmp_path)
    (chart / "tests").mkdir()
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    body = assert_suite_holds(chart, "tests/common-dra_test.yaml")
    assert body["release"] == {"name": "release-name"}
    assert [case.get("values", []) for case in body["tests"]] == [[], ["../values-dra.yaml"]]
    workload = [a for a in body["tests"][1]["asserts"] if a["template"] == "common.yaml"]
    assert workload and all(
        a["documentSelector"] == {"path": "metadata.name", "value": "release-name-main"} for a in workload
    )


RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
  workerGroupSpecs:
    - groupName: small
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              {{- with .Values.small.resources }}
              resources:
                {{- toYaml . | nindent 16 }}
              {{- end }}
    - groupName: big
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              {{- with .Values.big.resources }}
              resources:
                {{- toYaml . | nindent 16 }}
              {{- end }}
"""


def test_passthrough_suite_for_a_template_whose_document_holds_several_gpu_pods(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """KubeRay's ray-cluster shape (the corpus chart keeps tests/): one RayCluster whose two worker groups each take
    their own resources map, both asking for GPUs. Each group's pod gets its claim; the suite pins both groups and its
    asserts hold on the real renders. Was: no suite, since the suite took one device container a template."""
    files = {"templates/raycluster.yaml": RAY, "values.yaml": "small:\n  resources: {}\nbig:\n  resources: {}\n"}
    chart = chart_with(tmp_path / "c", "ray", files)
    (chart / "tests").mkdir()
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(
        "small:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
        "big:\n  resources:\n    limits:\n      nvidia.com/gpu: 4\n"
    )
    code, _, err = run_cli(["fix", str(chart), "-f", str(gpu)])
    assert code == 0, err
    body = yaml.safe_load((chart / "tests" / "raycluster-dra_test.yaml").read_text())
    paths = [a[k]["path"] for a in body["tests"][1]["asserts"] for k in a if k in ("equal", "notExists")]
    for group in (0, 1):  # both worker groups pinned
        assert f"spec.workerGroupSpecs[{group}].template.spec.resourceClaims[0].name" in paths
    for i, case in enumerate(body["tests"]):
        values = tmp_path / f"case{i}.yaml"
        values.write_text(yaml.safe_dump(set_values(case["set"])))
        rendered = by_template(chart, {"values": [str(values)]}, body["capabilities"])
        assert all(holds(a, rendered.get(a["template"], [])) for a in case["asserts"]), case["it"]
