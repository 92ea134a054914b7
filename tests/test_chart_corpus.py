"""Every Helm chart of ../shared/corpus that renders offline, with its GPU values (corpus/INDEX.md section 2).

For each chart and values set: lint finds every device request of the rendered output (an independent
scan of the rendered objects), and fix either proves and writes a rewrite, after which the chart renders
with no legacy device request left and still renders with its defaults, or reports manual work and
writes nothing. The charts are copied first (the corpus is read-only). Charts whose remote dependencies
are not vendored get them removed from the copy's Chart.yaml (they are optional monitoring/CRD charts);
runai-cli's local `file://` dependency is copied into charts/, as `helm dependency build` would.

The summary (charts rendered, device requests found, rewritten and proven, manual with reasons) is printed
by the last test; run with `-s` to see it.
"""

from __future__ import annotations

import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
RULES = load_rules()
RAY_GPU = """\
worker:
  resources:
    limits: {cpu: "4", nvidia.com/gpu: 2}
    requests: {cpu: "4", nvidia.com/gpu: 2}
additionalWorkerGroups:
  big:
    disabled: false
    replicas: 1
    minReplicas: 1
    maxReplicas: 2
    resources:
      limits: {nvidia.com/gpu: 4}
"""
VLLM = "vllm-production-stack/tutorials/assets"
LLMD = "llm-d-modelservice/examples"
RUNAI = "gpuInt=2,gitSync.sync=false,image=ubuntu"


@dataclass(frozen=True)
class Run:
    chart: str  # corpus path of the chart
    label: str
    values: tuple[str, ...] = ()  # corpus paths, or "@ray" for RAY_GPU
    sets: tuple[str, ...] = ()
    kube: str | None = None


RUNS = [
    Run("ollama-helm", "nvidia", sets=("ollama.gpu.enabled=true",)),
    Run("ollama-helm", "amd, 2 GPUs", sets=("ollama.gpu.enabled=true,ollama.gpu.type=amd,ollama.gpu.number=2",)),
    Run(
        "ollama-helm",
        "MIG",
        sets=("ollama.gpu.enabled=true,ollama.gpu.mig.enabled=true,ollama.gpu.mig.devices.1g\\.10gb=1",),
    ),
    Run("ollama-helm", "ci/test-values.yaml", values=("ollama-helm/ci/test-values.yaml",)),
    Run("kuberay/helm-chart/ray-cluster", "worker GPUs", values=("@ray",)),
    Run("llm-d-modelservice/charts/llm-d-modelservice", "pd", values=(f"{LLMD}/values-pd.yaml",)),
    Run("llm-d-modelservice/charts/llm-d-modelservice", "gaudi", values=(f"{LLMD}/values-gaudi.yaml",)),
    Run("llm-d-modelservice/charts/llm-d-modelservice", "requester", values=(f"{LLMD}/values-requester.yaml",)),
    Run("vllm-production-stack/helm", "minimal", values=(f"{VLLM}/values-01-minimal-example.yaml",)),
    Run("vllm-production-stack/helm", "amd", values=(f"{VLLM}/values-01-minimal-amd-example.yaml",)),
    Run(
        "vllm-production-stack/helm",
        "raycluster",
        values=(f"{VLLM}/values-15-a-minimal-pipeline-parallel-example-raycluster.yaml",),
    ),
    Run("runai-cli/charts/runai", "job", sets=(RUNAI + ",isRunaiJob=false",)),
    Run("runai-cli/charts/mpijob", "mpijob", sets=(RUNAI,)),
    Run("kubeflow-trainer/charts/kubeflow-trainer", "runtimes", sets=("runtimes.defaultEnabled=true",)),
    Run(
        "zero-to-jupyterhub-k8s/jupyterhub",
        "ai-on-eks GPU values",
        values=("ai-on-eks/infra/base/terraform/helm-values/jupyterhub-values.yaml",),
        kube="1.34",
    ),
]


@dataclass
class Summary:
    rendered: set[str] = field(default_factory=set)
    requests: int = 0
    proven: dict[str, list[str]] = field(default_factory=dict)  # chart -> labels
    manual: dict[str, str] = field(default_factory=dict)  # "chart (label)" -> reason
    nothing: list[str] = field(default_factory=list)  # runs with nothing to fix


SUMMARY = Summary()


def _copy(chart: str, dest: Path) -> Path:
    src = CORPUS / chart
    root = dest / Path(chart).name
    shutil.copytree(src, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    meta = yaml.safe_load((root / "Chart.yaml").read_text())
    deps = meta.get("dependencies") or []
    remote = [d for d in deps if not str(d.get("repository", "")).startswith("file://")]
    for dep in deps:
        repo = str(dep.get("repository", ""))
        if repo.startswith("file://"):  # helm dependency build for a local chart
            shutil.copytree((src / repo.removeprefix("file://")).resolve(), root / "charts" / dep["name"])
    if remote:
        kept = [d for d in deps if d not in remote]
        if kept:
            meta["dependencies"] = kept
        else:
            meta.pop("dependencies")
        (root / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        (root / "Chart.lock").unlink(missing_ok=True)
    return root


def _values(run: Run, tmp: Path) -> tuple[Path, ...]:
    out = []
    for v in run.values:
        if v == "@ray":
            (tmp / "ray-gpu.yaml").write_text(RAY_GPU)
            out.append(tmp / "ray-gpu.yaml")
        else:  # a copy: fix writes a chart's own DRA switch into the last -f file, never into the corpus
            copy = tmp / "values" / v
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes((CORPUS / v).read_bytes())
            out.append(copy)
    return tuple(out)


def device_requests(root: Path, options: RenderOptions) -> set[tuple[str, str, str]]:
    """(kind, name, resource) of every extended resource a known pack maps, in any resources map."""
    found: set[tuple[str, str, str]] = set()

    def walk(node: Any, ident: tuple[str, str]) -> None:
        if isinstance(node, dict):
            res = node.get("resources")
            if isinstance(res, dict):
                for section in ("limits", "requests"):
                    for key in (res.get(section) or {}) if isinstance(res.get(section), dict) else {}:
                        if RULES.is_device_candidate(str(key)) and RULES.lookup(str(key)) is not None:
                            found.add((*ident, str(key)))
            for v in node.values():
                walk(v, ident)
        elif isinstance(node, list):
            for v in node:
                walk(v, ident)

    for m in render_chart(root, options):
        for doc in yaml.safe_load_all(m.text):
            if isinstance(doc, dict):
                walk(doc, (str(doc.get("kind")), str((doc.get("metadata") or {}).get("name"))))
    return found


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not beside the repo (it exists only in the dramigrate workspace and CI)")
    return CORPUS


def _setup(run: Run, tmp_path: Path) -> tuple[Path, ChartOptions, Settings, Target]:
    """A writable copy of the run's chart and the options, settings and target the run is fixed with."""
    root = _copy(run.chart, tmp_path)
    options = ChartOptions(values_files=_values(run, tmp_path), set_values=run.sets, kube_version=run.kube)
    settings = Settings(kube_version=run.kube or "1.36", chart_style="engine")
    return root, options, settings, Target.parse(settings.kube_version)


def _key(run: Run) -> str:
    return f"{Path(run.chart).name} ({run.label})"


def _record(run: Run, fixed: Any) -> str:
    """The run's fix outcome in SUMMARY: manual, nothing (to fix) or proven."""
    if fixed.manual:
        SUMMARY.manual[_key(run)] = fixed.manual
        return "manual"
    if not fixed.changes:
        SUMMARY.nothing.append(_key(run))
        return "nothing"
    SUMMARY.proven.setdefault(run.chart, []).append(run.label)
    return "proven"


@pytest.mark.parametrize("run", RUNS, ids=[f"{Path(r.chart).name}:{r.label}" for r in RUNS])
def test_corpus_chart(run: Run, corpus: Path, tmp_path: Path) -> None:
    root, options, settings, target = _setup(run, tmp_path)
    wanted = device_requests(root, options.render())
    SUMMARY.rendered.add(run.chart)
    SUMMARY.requests += len(wanted)

    lint = run_chart(root, options, RULES, settings, target, "lint")
    assert lint.error is None, lint.error
    reported = {(f.kind, f.name, f.resource) for f in lint.findings if f.resource}
    assert wanted <= reported, f"lint missed {sorted(wanted - reported)}"
    for f in lint.findings:  # findings name the template file that wrote the object
        assert f.file.startswith(str(root)) and (f.line > 0 or f.rule.startswith("chart-"))

    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    defaults = ChartOptions(kube_version=run.kube).render((), sets=False)
    defaults_render = _renders(root, defaults)
    fixed = run_chart(root, options, RULES, settings, target, "fix")
    assert fixed.error is None, fixed.error
    state = _record(run, fixed)
    if state == "manual":
        assert not fixed.changes
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before  # never writes unproven
        return
    if state == "nothing":
        assert not [f for f in fixed.findings if f.rule == "legacy-device-request"]
        return
    write_changes(fixed)
    # the rewritten chart: no legacy request left with these values, and it renders with its defaults
    assert not {w for w in device_requests(root, options.render()) if w[2] in {r for _, _, r in wanted}}
    again = run_chart(root, options, RULES, settings, target, "lint")
    assert not [f for f in again.findings if f.rule == "legacy-device-request"]
    if defaults_render:  # a chart that rendered with its defaults still does
        assert _renders(root, defaults)


def _renders(root: Path, options: RenderOptions) -> bool:
    from dramigrate.helm.render import HelmError

    try:
        render_chart(root, options)
    except HelmError:
        return False
    return True


def test_corpus_summary(corpus: Path, tmp_path: Path) -> None:
    for i, run in enumerate(RUNS):  # a run another xdist worker took: its fix outcome is found here
        if _key(run) not in {*SUMMARY.manual, *SUMMARY.nothing} and run.label not in SUMMARY.proven.get(run.chart, []):
            root, options, settings, target = _setup(run, tmp_path / str(i))
            _record(run, run_chart(root, options, RULES, settings, target, "fix"))
    gpu_runs = [r for r in RUNS if r.chart != "kubeflow-trainer/charts/kubeflow-trainer"]
    proven_runs = sum(len(v) for v in SUMMARY.proven.values())
    print(
        f"\ncorpus charts rendered: {len(SUMMARY.rendered)}; device requests found: {SUMMARY.requests}; "
        f"runs rewritten and proven: {proven_runs} of {len(RUNS)} "
        f"({len(SUMMARY.proven)} charts: {', '.join(sorted(Path(c).name for c in SUMMARY.proven))}); "
        f"nothing to fix: {', '.join(SUMMARY.nothing) or 'none'}"
    )
    for key, reason in sorted(SUMMARY.manual.items()):
        print(f"  manual: {key}: {reason}")
    assert proven_runs >= 0.8 * len(gpu_runs)
