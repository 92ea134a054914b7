"""Lint runs the files grep keeps in the worker pool while the walk and the kustomize scan go on (ahead.py): the
result is what the run gives without running ahead, also for the files whose job the scan changes."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_executable
from test_kustomize import STACKS

from dramigrate import engine, prefilter
from dramigrate.ahead import Ahead
from dramigrate.config import Settings
from dramigrate.rules import load_rules
from dramigrate.sources import expand
from dramigrate.versions import Target

NEAR_MISS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
spec:
  template:
    spec:
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
      containers:
      - name: app
        image: web:1
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """More files than grep's minimum: device pods, near misses, clean ConfigMaps, and kustomize graphs whose
    patches the scan leaves out and whose files it reports otherwise (a remote base)."""
    root = tmp_path_factory.mktemp("ahead") / "tree"
    for rel, text in STACKS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for i in range(prefilter.MIN_FILES + 60):
        folder = root / f"team-{i % 9}"
        folder.mkdir(parents=True, exist_ok=True)
        text = (
            ONE_GPU_POD.format(name=f"pod-{i}")
            if i % 4 == 0
            else NEAR_MISS.format(i=i)
            if i % 4 == 1
            else f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{i}\ndata:\n  a: b\n"
        )
        (folder / f"f-{i}.yaml").write_text(text)
    return root


def _lint(
    tree: Path, ahead: bool, loads_done: bool = False, grep_done: bool = False
) -> tuple[engine.RunResult, Ahead | None]:
    """loads_done: wait for the workers to load the kustomizations before the scan (so that it takes them all);
    grep_done: wait for grep to read every file before the scan (so that the scan knows what grep found in each)."""
    settings = Settings()
    rules = load_rules(settings.rules)
    target = Target.parse("1.36")
    runner = Ahead(rules, settings, target) if ahead else None
    stream = prefilter.Stream(rules, ahead=runner)
    inputs = expand([str(tree)], found=stream.add, kustomization=runner.kustomization if runner else None)
    inputs.grep = stream.finish()
    if runner is not None and loads_done:
        for future, _ in runner._loads.values():
            future.result()
    if inputs.grep is not None and grep_done:
        inputs.grep.result()
    return engine.run(inputs, rules, settings, target, False), runner


@pytest.mark.skipif(prefilter._grep() is None or shutil.which("git") is None, reason="no GNU grep with -P, or no git")
def test_lint_ahead_gives_what_lint_gives_without_it(tree: Path) -> None:
    ahead, runner = _lint(tree, True)
    alone, _ = _lint(tree, False)
    assert runner is not None and runner.taken > 200  # most files were linted ahead
    assert runner.pool is None and engine._worker is None  # and the pool is gone
    assert [r.path for r in ahead.files] == [r.path for r in alone.files]
    assert [dataclasses.asdict(f) for f in ahead.findings] == [dataclasses.asdict(f) for f in alone.findings]
    assert ahead.decisions == alone.decisions
    rules = {f.rule for f in ahead.findings}
    # the scan changed these files' jobs: a patch left to its graph, a remote base's files reported as such
    assert {"kustomize-device-patch", "kustomize-unproven", "legacy-device-request"} <= rules
    assert any("a kustomize patch: checked with its kustomization" in d for d in ahead.decisions)


def _cli_lint(tree: Path, args: list[str], path: str) -> tuple[int, str, str]:
    env = {**os.environ, "PATH": path, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.run(
        [dramigrate_executable(), "lint", str(tree), *args], capture_output=True, text=True, env=env, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_lint_without_grep_reports_what_lint_with_grep_reports(tree: Path, tmp_path: Path) -> None:
    """grep, the lint ahead and the worker pool only save time: with no grep on PATH (the Python triage then reads
    every file) the JSON report and the exit code are byte for byte the same, findings in the same order."""
    no_grep = tmp_path / "bin"  # a PATH without grep (lint of these files runs nothing else)
    no_grep.mkdir()
    with_grep = _cli_lint(tree, ["--format", "json"], os.environ["PATH"])
    without = _cli_lint(tree, ["--format", "json"], str(no_grep))
    assert with_grep[0] == without[0] == 1, without[2]
    assert with_grep[1] == without[1]
    report = json.loads(with_grep[1])
    assert report["summary"]["files"] > prefilter.MIN_FILES and len(report["findings"]) > 100
    # and grep did decide files in the first run: --verbose says which files it ruled out, and what the workers
    # decided on the files they ran (sent back only with --verbose: engine._run)
    verbose = _cli_lint(tree, ["--verbose"], os.environ["PATH"])[2]
    assert "(grep pre-filter)" in verbose
    assert "nothing to check: no pod template or quota names a device resource" in verbose
    assert "(grep pre-filter)" not in _cli_lint(tree, ["--verbose"], str(no_grep))[2]


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_kustomizations_loaded_by_the_workers_give_what_the_scan_reads_itself(tree: Path, tmp_path: Path) -> None:
    """The workers load the kustomizations the walk finds; the scan takes those loads and reads a broken one again
    for its error: the findings, errors and decisions are what the run gives without them."""
    broken = tmp_path / "tree"
    shutil.copytree(tree, broken)
    (broken / "stack" / "big" / "kustomization.yaml").write_text("resources:\n- ../base\npatches: [\n")
    for root in (tree, broken):
        ahead, runner = _lint(root, True, loads_done=True)
        alone, _ = _lint(root, False)
        assert runner is not None and runner.preloaded >= 5  # the scan took the workers' loads
        assert [dataclasses.asdict(f) for f in ahead.findings] == [dataclasses.asdict(f) for f in alone.findings]
        assert [(r.path, str(r.error)) for r in ahead.files] == [(r.path, str(r.error)) for r in alone.files]
        assert ahead.decisions == alone.decisions
    assert any("invalid kustomization" in str(r.error) for r in ahead.files)  # the broken one, said as before


SELECTOR_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeSelector:
    nvidia.com/gpu.present: 'true'
{rest}"""
# Files whose device words sit in a node selector or a toleration, each beside what lint must still report in it:
# (file name, text, the rule its report holds). A pre-filter that ruled out files holding device words only as a
# label key or a toleration value would lose the last two: such a file is parsed, and bad YAML in it is bad input.
BESIDE_SELECTORS = [
    ("request.yaml", SELECTOR_POD.format(name="a", rest=ONE_GPU_POD.split("spec:\n", 1)[1]), "legacy-device-request"),
    (
        "shared.yaml",
        SELECTOR_POD.format(name="b", rest=ONE_GPU_POD.split("spec:\n", 1)[1].replace("gpu: 1", "gpu.shared: 1")),
        "shared-device",
    ),
    (
        "flow.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec: {nodeSelector: {nvidia.com/gpu.present: 'true'},"
        " containers: [{name: app, image: 'app:1', resources: {limits: {nvidia.com/gpu: 2}}}]}\n",
        "legacy-device-request",
    ),
    (
        "pod.json",
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d"}, "spec": {"tolerations": [{"key":'
        ' "nvidia.com/gpu", "operator": "Exists"}], "containers": [{"name": "app", "image": "app:1", "resources":'
        ' {"limits": {"nvidia.com/gpu": 1}}}]}}\n',
        "legacy-device-request",
    ),
    (
        "crd.yaml",
        "apiVersion: example.org/v1\nkind: TrainingRun\nmetadata:\n  name: e\nspec:\n  worker:\n    nodeSelector:\n"
        "      nvidia.com/gpu.present: 'true'\n    template:\n      resources:\n        limits:\n"
        "          nvidia.com/gpu: 4\n",
        "unknown-kind",
    ),
    ("duplicate.yaml", SELECTOR_POD.format(name="f", rest="  nodeName: a\n  nodeName: b\n"), "bad-input"),
    ("unclosed.yaml", NEAR_MISS.format(i="g") + "      volumes: [unclosed\n", "bad-input"),
]


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_a_device_word_beside_a_selector_or_toleration_is_reported_as_without_grep(tmp_path: Path) -> None:
    """Among hundreds of files whose only device words are a node selector's label key or a toleration's key (no
    finding) and clean ConfigMaps, each file holding a request, a shared GPU, flow style, JSON, an unknown kind, a
    repeated key or bad YAML beside such words is reported: with grep and the lint ahead, as without them, byte for
    byte."""
    root = tmp_path / "tree"
    for i in range(prefilter.MIN_FILES + 10):
        folder = root / f"team-{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        text = (
            NEAR_MISS.format(i=i)
            if i % 3 == 1
            else SELECTOR_POD.format(name=f"p-{i}", rest="  containers: []\n")
            if i % 3 == 2
            else f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{i}\n"  # grep rules these out
        )
        (folder / f"near-{i}.yaml").write_text(text)
    for name, text, _ in BESIDE_SELECTORS:
        (root / "team-0" / name).write_text(text)
    no_grep = tmp_path / "bin"
    no_grep.mkdir()
    with_grep = _cli_lint(root, ["--format", "json"], os.environ["PATH"])
    assert with_grep[1] == _cli_lint(root, ["--format", "json"], str(no_grep))[1]
    report = json.loads(with_grep[1])
    rules: dict[str, set[str]] = {}
    for item in report["findings"] + report["errors"]:
        rules.setdefault(Path(item["file"]).name, set()).add(item["rule"])
    assert {name: rule in rules.get(name, set()) for name, _, rule in BESIDE_SELECTORS} == dict.fromkeys(
        (name for name, _, _ in BESIDE_SELECTORS), True
    )
    assert set(rules) == {name for name, _, _ in BESIDE_SELECTORS}  # the near misses give nothing
    assert "(grep pre-filter)" in _cli_lint(root, ["--verbose"], os.environ["PATH"])[2]  # grep did run


POINTER_TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: ops
data:
  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu
"""


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_the_kustomize_scan_reads_only_the_graph_files_grep_finds_a_device_in(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository's kustomize graphs list a thousand files, almost none naming a device: the scan read each of them
    again to ask, after grep had read them all. It now reads only those grep finds a device word in, or a JSON
    pointer's `~1` (`nvidia.com~1gpu` names the device as a pointer), and finds the same graphs as without grep."""
    scan_module = importlib.import_module("dramigrate.kustomize.scan")  # the package's `scan` is the function
    root = tmp_path / "tree"
    shutil.copytree(tree, root)
    plain = [f"cm-{i}.yaml" for i in range(8)]
    for folder in ("plain", "pointer"):
        (root / folder).mkdir()
        for name in plain:
            (root / folder / name).write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name[:-5]}\n")
    listed = "".join(f"- {n}\n" for n in plain)
    (root / "plain" / "kustomization.yaml").write_text("resources:\n" + listed)
    (root / "pointer" / "ops.yaml").write_text(POINTER_TEXT)
    (root / "pointer" / "kustomization.yaml").write_text("resources:\n- ops.yaml\n" + listed)
    read: list[str] = []
    real_read = scan_module._read
    monkeypatch.setattr(scan_module, "_read", lambda path: read.append(str(path)) or real_read(path))

    def graphs() -> list[list[str]]:
        result, _ = _lint(root, False, grep_done=True)
        assert result.kustomize is not None
        return sorted(sorted(os.path.relpath(f, root) for f in unit.folders) for unit in result.kustomize.units)

    with_grep, grep_read = graphs(), read[:]
    read.clear()
    monkeypatch.setattr(prefilter, "_grep", lambda: None)
    assert graphs() == with_grep
    assert ["pointer"] in with_grep  # a graph because of the pointer alone
    assert {str((root / "plain" / n).resolve()) for n in plain} <= set(read)  # Python alone reads them all
    assert not any("/plain/" in p or "/cm-" in p for p in grep_read)  # with grep, none of them
    assert str((root / "pointer" / "ops.yaml").resolve()) in grep_read


def test_the_kustomize_scan_asks_the_system_nothing_about_the_files_the_walk_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk lists each kustomization and each file a kustomization names as a regular file; the scan asked the
    system again for each (a stat and an lstat per kustomization, a stat per resource: 3,000 calls on a repository of
    a thousand kustomizations). It now asks only about what the walk did not list, and finds the same graph."""
    from dramigrate.kustomize.graph import discover, load_many
    from dramigrate.sources import resolve_paths

    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"
    for folder, names in (("base", ["a", "b", "c"]), ("overlay", ["d"])):
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / f"{name}.yaml").write_text(cm.format(name))
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n- a.yaml\n- b.yaml\n- c.yaml\n")
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\n- d.yaml\n")
    inputs = expand([str(tmp_path)])
    listed = set(resolve_paths(inputs.files, inputs.resolved))
    kustomizations = [str(k) for w in inputs.walked for k in w.kustomizations]
    loads = dict(zip(kustomizations, load_many(kustomizations), strict=True))  # as the workers load them
    asked: list[str] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda p, *a, real=real, **k: asked.append(os.fspath(p)) or real(p, *a, **k))
    graph = discover(sorted(listed), walked=inputs.walked, preloaded=loads.get)
    monkeypatch.undo()
    base, overlay = (tmp_path / "base").resolve(), (tmp_path / "overlay").resolve()
    assert sorted(graph.nodes) == [base, overlay]
    assert graph.nodes[overlay].children == [base]
    assert sorted(f.name for f in graph.nodes[base].files) == ["a.yaml", "b.yaml", "c.yaml"]
    assert listed & set(asked) == set()


def test_the_walk_runs_no_garbage_collection_and_a_worker_forked_during_it_collects(tree: Path) -> None:
    """The folder walk makes no reference cycles, yet the lists and tuples of a large tree's listings set off a
    collection every few hundred (5% of the walk's time): the collector is paused while it walks. The workers lint
    ahead are forked during the walk: they turn it on again (a worker linting a large manifest makes cycles)."""
    import gc

    settings = Settings()
    rules = load_rules(settings.rules)
    runner = Ahead(rules, settings, Target.parse("1.36"))
    stream = prefilter.Stream(rules, ahead=runner)
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()  # none is due as the walk starts
    gc.callbacks.append(count)
    try:
        inputs = expand([str(tree)], found=stream.add, kustomization=runner.kustomization)
    finally:
        gc.callbacks.remove(count)
    inputs.grep = stream.finish()
    assert len(inputs.files) > prefilter.MIN_FILES
    assert len(collections) <= 1  # the one due as the walk ends and the collector is on again
    assert gc.isenabled()
    try:
        assert runner.pool is not None  # forked during the walk
        assert runner.pool.submit(gc.isenabled).result()
    finally:
        inputs.grep.result()
        runner.close()


def test_a_lint_of_one_small_file_loads_no_worker_pool_or_helm_render_code(tmp_path: Path) -> None:
    """pre-commit lints a handful of files per run: their lint starts no worker and renders no chart, so it imports
    neither multiprocessing nor the Helm render sandbox (10 ms of the 0.12 s of CPU a small lint takes)."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(ONE_GPU_POD)
    unwanted = {"multiprocessing", "dramigrate.helm.sandbox"}
    code = (  # the CLI ends the process itself once the exit handlers ran
        f"import atexit, sys; atexit.register(lambda: print({unwanted!r} & set(sys.modules), file=sys.stderr))\n"
        "from dramigrate.cli import main; sys.argv[1:] = ['lint', sys.argv[1], '--format', 'json']; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(pod)], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}
    )
    assert '"legacy-device-request"' in proc.stdout, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "set()", proc.stderr


WORKER_IMPORTS = """\
import sys
from dramigrate import engine
from dramigrate.ahead import Ahead
from dramigrate.config import Settings
from dramigrate.migrate import Job
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def imported_to_lint(path):
    before = set(sys.modules)
    engine._run(Job(path, None, False))
    return sorted(set(sys.modules) - before)


settings = Settings()
runner = Ahead(load_rules(settings.rules), settings, Target.parse("1.36"))
assert runner.start()
try:
    print(runner.pool.submit(imported_to_lint, sys.argv[1]).result())
finally:
    runner.close()
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the worker pool needs two cores")
def test_a_worker_forked_to_lint_ahead_loads_nothing_to_lint_a_device_file(tmp_path: Path) -> None:
    """The workers are forked with what linting a device file loads (ruamel's string classes, the rule catalogue,
    the topology check): each worker loaded them again at its first device file (20 ms of CPU apiece on the core
    the walk and grep share), as they were loaded only after the fork."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(ONE_GPU_POD.format(name="pod"))
    proc = subprocess.run(
        [sys.executable, "-c", WORKER_IMPORTS, str(pod)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
