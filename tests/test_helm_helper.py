"""Pattern D: the device key is written by a named helper (`include "chart.resources" $modelSpec`).

vLLM production-stack's engine Deployment takes its GPU from `chart.resources`, a helper in `_helpers.tpl` that
writes `{{ $gpuType }}: {{ ... $modelSpec.requestGPU ... }}`. fix rewrites the helper's `define` (the key in the
non-DRA branch, the container's claims in the DRA branch, a `dra.enabled` switch in each modelSpec entry) and
wires the pod at the call site. The chart is a copy of the corpus chart; skipped when ../shared is absent.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS, CORPUS_MISSING, chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VLLM_VALUES = "vllm-production-stack/tutorials/assets/values-01-minimal-example.yaml"


def _copy_chart(chart: str, dest: Path) -> Path:
    """The corpus chart, its remote (monitoring) dependencies dropped as tests/test_chart_corpus.py does."""
    root = dest / Path(chart).name
    shutil.copytree(CORPUS / chart, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # the corpus is read-only
    meta = yaml.safe_load((root / "Chart.yaml").read_text())
    meta.pop("dependencies", None)
    (root / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    (root / "Chart.lock").unlink(missing_ok=True)
    return root


def _render(root: Path, values: Path, extra: dict[str, Any] | None = None, tmp: Path | None = None) -> str:
    files: tuple[Path, ...] = (values,)
    if extra is not None and tmp is not None:
        data = yaml.safe_load(values.read_text())
        for spec in data["servingEngineSpec"]["modelSpec"]:
            spec.update(extra)
        changed = tmp / f"values-{len(list(tmp.iterdir()))}.yaml"
        changed.write_text(yaml.safe_dump(data))
        files = (changed,)
    manifests = render_chart(root, RenderOptions(values_files=files))
    return "".join(f"---\n# Source: {m.source}\n{m.text}" for m in manifests)


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    tmp = tmp_path_factory.mktemp("vllm-helper")
    original = _copy_chart("vllm-production-stack/helm", tmp / "original")
    root = _copy_chart("vllm-production-stack/helm", tmp / "fixed")
    values = tmp / "values.yaml"
    values.write_bytes((CORPUS / VLLM_VALUES).read_bytes())
    settings = Settings(kube_version="1.36")
    outcome = run_chart(root, ChartOptions(values_files=(values,)), load_rules(), settings, Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    scratch = tmp / "scratch"
    scratch.mkdir()
    return {"outcome": outcome, "root": root, "original": original, "values": values, "tmp": scratch}


def _objects(stream: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(stream) if isinstance(d, dict)]


def test_the_rewrite_stays_in_the_helper_and_its_call_sites(vllm: dict[str, Any]) -> None:
    changed = {c.rel for c in vllm["outcome"].changes}
    assert {"templates/_helpers.tpl", "templates/deployment-vllm-multi.yaml", "values.yaml"} <= changed
    assert not any(rel.endswith("_dramigrate.tpl") for rel in changed)  # no generated engine
    helpers = (vllm["root"] / "templates/_helpers.tpl").read_text()
    assert '{{- define "chart.resources.draCount" -}}' in helpers
    assert '(dig "dra" "enabled" true $)' in helpers  # the switch is read inside the helper, on by default


def test_switch_on_renders_the_claim_instead_of_the_gpu(vllm: dict[str, Any]) -> None:
    docs = _objects(_render(vllm["root"], vllm["values"]))
    deployment = next(d for d in docs if d["kind"] == "Deployment" and "vllm" in d["metadata"]["name"])
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert container["resources"]["claims"] == [{"name": "gpu"}]
    (claim,) = pod["resourceClaims"]
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    request = templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 1)
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    # the count stays the chart's knob: two GPUs give a claim for two, zero none at all
    two = _objects(_render(vllm["root"], vllm["values"], {"requestGPU": 2}, vllm["tmp"]))
    assert [
        d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in two
        if d["kind"] == "ResourceClaimTemplate"
    ] == [2]
    none = _render(vllm["root"], vllm["values"], {"requestGPU": 0}, vllm["tmp"])
    assert "resourceClaims" not in none and "ResourceClaimTemplate" not in none


def test_switch_off_renders_byte_identical(vllm: dict[str, Any]) -> None:
    off = _render(vllm["root"], vllm["values"], {"dra": {"enabled": False}}, vllm["tmp"])
    before = _render(vllm["original"], vllm["values"], {"dra": {"enabled": False}}, vllm["tmp"])
    assert off == before
    assert "nvidia.com/gpu" in off


RAY_VALUES = "vllm-production-stack/tutorials/assets/values-15-a-minimal-pipeline-parallel-example-raycluster.yaml"


def test_ray_groups_get_claims_and_num_gpus(vllm: dict[str, Any]) -> None:
    """The helper's other call sites (the RayCluster head and workers) are wired too: KubeRay reads num-gpus from the
    limits the claim replaces, so the DRA branch sets rayStartParams.num-gpus as the manifest migration does."""
    values = vllm["tmp"].parent / "ray.yaml"
    values.write_bytes((CORPUS / RAY_VALUES).read_bytes())
    (ray,) = [d for d in _objects(_render(vllm["root"], values)) if d["kind"] == "RayCluster"]
    groups = [ray["spec"]["headGroupSpec"], *ray["spec"]["workerGroupSpecs"]]
    for group in groups:
        pod = group["template"]["spec"]
        assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
        assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
        assert group["rayStartParams"]["num-gpus"] == "1"
    off = {
        "dra": {"enabled": False},
        "raySpec": {
            "enabled": True,
            "headNode": {"requestCPU": 1, "requestMemory": "20Gi", "requestGPU": 1, "dra": {"enabled": False}},
        },
    }
    assert _render(vllm["root"], values, off, vllm["tmp"]) == _render(vllm["original"], values, off, vllm["tmp"])


HELPERS = """\
{{- define "app.unused" -}}
limits:
  nvidia.com/gpu: {{ .Values.numGpus }}
{{- end }}
{{- define "app.resources" -}}
requests:
  memory: 1Gi
limits:
  memory: 1Gi
  nvidia.com/gpu: {{ .Values.numGpus }}
{{- end }}
"""
DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: app
          image: app:1
          resources:
            {{- include "app.resources" . | nindent 12 }}
""",
    app="x",
)


def test_the_helper_is_the_one_that_renders_the_key(tmp_path: Path) -> None:
    """Two defines hold the same device key line; only the one the workload includes is rewritten (found by
    rendering a marker, not by reading the templates)."""
    chart = tmp_path / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("numGpus: 1\n")
    (chart / "templates" / "_helpers.tpl").write_text(HELPERS)
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    settings = Settings(kube_version="1.36")
    outcome = run_chart(chart, ChartOptions(), load_rules(), settings, Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.manual
    (helpers,) = [c.after for c in outcome.changes if c.rel == "templates/_helpers.tpl"]
    assert helpers.startswith(HELPERS.split('{{- define "app.resources"')[0])  # app.unused is untouched
    assert '"app.resources.draCount"' in helpers and '"app.unused.draCount"' not in helpers
    write_changes(outcome)
    (deployment,) = [d for d in _objects(_render_plain(chart)) if d["kind"] == "Deployment"]
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}


SETTINGS = "".join(f"setting{i}:\n  name: value-{i}\n" for i in range(30))


@pytest.mark.parametrize("inside", [False, True], ids=["outside", "inside"])
def test_helper_suite_names_or_trims_the_values_file(tmp_path: Path, inside: bool) -> None:
    """The run's values file sets the helper's count among settings no device request reads. A file inside the
    chart (ci/gpu.yaml) is named (`values:`, relative to the suite) and `set:` holds only the switch; a file outside
    it (which a suite cannot name) is trimmed to the count and the switch, which the real renders show to give the
    same request and claim (was: the whole file under `set:` in each of the three cases)."""
    from test_helm_unittest_suite import assert_cases_hold, set_values

    chart = chart_with(
        tmp_path,
        "app",
        {"values.yaml": "numGpus: 1\n", "templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT},
    )
    (chart / "tests").mkdir()
    gpu = chart / "ci" / "gpu.yaml" if inside else tmp_path / "gpu.yaml"
    gpu.parent.mkdir(exist_ok=True)
    gpu.write_text(SETTINGS + "numGpus: 2\n")
    fix_chart(chart, kube="1.36", values=(gpu,))
    text = (chart / "tests" / "deployment-dra_test.yaml").read_text()
    assert "setting" not in text, text
    body = yaml.safe_load(text)
    sets = [set_values(case["set"]) for case in body["tests"]]
    if inside:
        assert [case["values"] for case in body["tests"]] == [["../ci/gpu.yaml"]] * 2
        assert sets == [{"dra": {"enabled": False}}, {"dra": {"enabled": True}}]
    else:
        assert [case.get("values") for case in body["tests"]] == [None, None]
        assert sets == [{"dra": {"enabled": False}, "numGpus": 2}, {"dra": {"enabled": True}, "numGpus": 2}]
    assert_cases_hold(chart, body, tmp_path)


def _render_plain(root: Path) -> str:
    return "".join(f"---\n{m.text}" for m in render_chart(root, RenderOptions()))


def test_unittest_suite_pins_the_switch_on_the_real_render(vllm: dict[str, Any]) -> None:
    """The chart keeps helm-unittest suites in tests/, so fix writes one for the helper's call site: each case's
    asserts hold on the rewritten chart's real render with that case's values (switch off, on, count 0)."""
    from test_helm_unittest_suite import holds, set_values

    body = yaml.safe_load((vllm["root"] / "tests" / "deployment-vllm-multi-dra_test.yaml").read_text())
    assert body["templates"] == ["deployment-vllm-multi.yaml"]
    assert [case.get("values") for case in body["tests"]] == [None, None, None]
    for n, case in enumerate(body["tests"]):
        values = vllm["tmp"] / f"case-{n}.yaml"
        values.write_text(yaml.safe_dump(set_values(case["set"])))
        rendered = render_chart(vllm["root"], RenderOptions(values_files=(values,), kube_version="1.34"))
        docs: dict[str, list[dict[str, Any]]] = {}
        for m in rendered:
            docs.setdefault(m.source.split("/templates/", 1)[1], []).extend(d for d in yaml.safe_load_all(m.text) if d)
        for assertion in case["asserts"]:
            assert "template" not in assertion  # the suite's one template: named once, in `templates`
            assert "isKind" not in assertion or assertion.get("documentSelector", {}).get("path") != "kind"
            assert holds(assertion, docs.get(body["templates"][0], [])), (case["it"], assertion)


def test_helper_switch_stays_off_where_the_chart_wraps_its_workload_in_another_kind(tmp_path: Path) -> None:
    """The workload is a define the template renders bare, or wrapped in a kind the migration leaves on its device
    plugin behind a values key (silogen's llm-inference-vllm: `kaiwo.enabled` wraps the Deployment in a KaiwoService):
    the helper's switch carries the guard, so with the wrapper the chart renders as before, and the claim template
    never lands inside the wrapper (was: manual, the rewritten chart did not render with the wrapper and the switch
    on)."""
    template = (
        '{{- define "workload" -}}\n' + DEPLOYMENT + "{{- end -}}\n"
        '{{- define "wrapped" -}}\napiVersion: example.com/v1\nkind: Wrapper\nmetadata:\n  name: w\nspec:\n'
        '  deployment:\n    {{- include "workload" . | nindent 4 }}\n{{- end -}}\n'
        '{{- if .Values.wrapped -}}\n{{- include "wrapped" . }}\n{{- else -}}\n{{- include "workload" . }}\n'
        "{{- end -}}\n"
    )
    files = {"values.yaml": "numGpus: 1\nwrapped: false\n", "templates/_helpers.tpl": HELPERS}
    original = chart_with(tmp_path / "original", "app", {**files, "templates/deployment.yaml": template})
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(kube_version="1.36"), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.manual
    assert any("wrapped flipped to true: the chart renders Wrapper" in c for c in outcome.checked), outcome.checked
    write_changes(outcome)
    wrapped = RenderOptions(set_values=("wrapped=true",))
    assert [m.text for m in render_chart(chart, wrapped)] == [m.text for m in render_chart(original, wrapped)]
    (deployment,) = [d for d in _objects(_render_plain(chart)) if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
