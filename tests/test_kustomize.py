"""Kustomize: bases and overlays migrated together and proven with the real kustomize (`kubectl kustomize`).

One repository exercises several features at once (namePrefix with namespace and a component, nameSuffix
with an inline JSON6902 patch, an overlay with no device patch); builds are shared through module fixtures
because each kustomize build costs a fraction of a second."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import RunCli

from dramigrate.kustomize.build import find_binary

TRAIN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: app
        image: trainer:1
        resources:
          limits:
            nvidia.com/gpu: 1
"""
A100_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
      containers:
      - name: app
        resources:
          limits:
            nvidia.com/gpu: 4
"""
FILES = {
    "base/train.yaml": TRAIN,
    "base/kustomization.yaml": "resources:\n- train.yaml\n",
    "components/debug/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- target: {kind: Deployment}\n"
        "  patch: |-\n    - op: add\n      path: /spec/template/spec/containers/0/env\n"
        "      value: [{name: DEBUG, value: '1'}]\n"
    ),
    "overlays/a100/kustomization.yaml": (
        "resources:\n- ../../base\nnamePrefix: big-\nnamespace: ml\ncomponents:\n- ../../components/debug\n"
        "patches:\n- path: gpus.yaml\n"
    ),
    "overlays/a100/gpus.yaml": A100_PATCH,
    "overlays/small/kustomization.yaml": (
        "resources:\n- ../../base\nnameSuffix: -small\npatches:\n- target: {kind: Deployment, name: trainer}\n"
        "  patch: |-\n    - op: replace\n"
        "      path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n      value: 2\n"
    ),
    "overlays/plain/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: dev-\nlabels:\n- pairs: {team: ml}\n",
}


def make_repo(root: Path, files: dict[str, str] = FILES) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(scope="module")
def lint_report(tmp_path_factory: pytest.TempPathFactory, run_cli: RunCli) -> dict:
    repo = make_repo(tmp_path_factory.mktemp("lint") / "repo")
    code, out, err = run_cli(["lint", "--format", "json", "."], cwd=repo)
    assert code == 1, err
    return json.loads(out)


def test_lint_points_at_the_patch_line_and_names_the_overlay(lint_report: dict) -> None:
    by_file: dict[str, list[dict]] = {}
    for f in lint_report["findings"]:
        by_file.setdefault(f["file"], []).append(f)
    (count, label) = sorted(by_file["overlays/a100/gpus.yaml"], key=lambda f: f["line"], reverse=True)
    assert count["rule"] == "kustomize-device-patch" and count["fixable"]
    assert count["line"] == A100_PATCH.splitlines().index("            nvidia.com/gpu: 4") + 1
    assert "overlays/a100" in count["message"] and count["resource"] == "nvidia.com/gpu"
    assert label["line"] == 9 and "nvidia.com/gpu.product" in label["message"]
    (inline,) = by_file["overlays/small/kustomization.yaml"]
    assert inline["rule"] == "kustomize-device-patch" and "JSON6902" in inline["message"]
    assert inline["line"] == FILES["overlays/small/kustomization.yaml"].splitlines().index("    - op: replace") + 1
    (base,) = by_file["base/train.yaml"]
    assert base["rule"] == "legacy-device-request"
    assert all(o in base["message"] for o in ("overlays/a100", "overlays/small", "overlays/plain"))
    assert "components/debug/kustomization.yaml" not in by_file, "a component without device fields is no finding"


def test_broken_kustomization_is_bad_input_and_nothing_is_written(tmp_path: Path, run_cli: RunCli) -> None:
    repo = make_repo(
        tmp_path / "repo", {**FILES, "overlays/small/kustomization.yaml": "resources:\n- ../../base\npatches: [\n"}
    )
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    assert code == 2, err
    assert "overlays/small/kustomization.yaml:4" in err and "Traceback" not in err
    assert snapshot(repo) == before


def build(kubectl: str, folder: Path) -> list[dict]:
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory, run_cli: RunCli) -> tuple[Path, str, dict[str, list[dict]]]:
    """The repository after `fix .`, and each overlay's build with the real kustomize."""
    repo = make_repo(tmp_path_factory.mktemp("fix") / "repo")
    code, out, err = run_cli(["fix", "."], cwd=repo)
    kubectl = find_binary()[0]
    builds = {o: build(kubectl, repo / "overlays" / o) for o in ("a100", "small", "plain")}
    return repo, f"exit {code}\n{err}", builds


def _pod_and_templates(objects: list[dict]) -> tuple[dict, dict[str, dict]]:
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    templates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaimTemplate"}
    return deploy, templates


@pytest.mark.parametrize(
    ("overlay", "name", "count", "namespace"),
    [("a100", "big-trainer", 4, "ml"), ("small", "trainer-small", 2, None), ("plain", "dev-trainer", 1, None)],
)
def test_every_overlay_builds_migrated_with_pods_pointing_at_their_templates(
    fixed: tuple[Path, str, dict[str, list[dict]]], overlay: str, name: str, count: int, namespace: str | None
) -> None:
    repo, log, builds = fixed
    assert log.startswith("exit 0"), log
    deploy, templates = _pod_and_templates(builds[overlay])
    assert deploy["metadata"]["name"] == name and deploy["metadata"].get("namespace") == namespace
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "nvidia.com/gpu" not in json.dumps(container.get("resources", {})), "no legacy request left"
    (claim,) = pod["resourceClaims"]
    template = templates[claim["resourceClaimTemplateName"]]  # prefix/suffix renamed both sides
    assert len(templates) == 1, f"the base's template is replaced, not left beside the overlay's: {list(templates)}"
    assert template["metadata"].get("namespace") == namespace
    exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["count"] == count
    assert ("selectors" in exactly) == (overlay == "a100"), "the node-label hack became a CEL selector"
    assert "nvidia.com/gpu.product" not in json.dumps(pod.get("nodeSelector", {}))
    if overlay == "a100":
        assert container["env"] == [{"name": "DEBUG", "value": "1"}], "the component's patch still applies"


def test_fix_reports_what_it_proved_and_names_each_patch(fixed: tuple[Path, str, dict[str, list[dict]]]) -> None:
    repo, log, _ = fixed
    assert "kustomize-device-patch] (fixed)" in log and "overlays/small/kustomization.yaml:7" in log
    assert (repo / "base/dramigrate-claim-template-names.yaml").is_file()
    assert "configurations:" in (repo / "base/kustomization.yaml").read_text()
    assert "nvidia.com/gpu: 4" not in (repo / "overlays/a100/gpus.yaml").read_text()


def test_overlay_outside_the_paths_is_reported_and_nothing_is_written(tmp_path: Path, run_cli: RunCli) -> None:
    repo = make_repo(tmp_path / "repo")
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "base", "overlays/a100", "overlays/small", "components"], cwd=repo)
    assert code == 0, err
    assert "kustomize-unproven" in err and "overlays/plain" in err
    assert snapshot(repo) == before


def test_component_patching_a_device_is_reported_with_the_field(tmp_path: Path, run_cli: RunCli) -> None:
    component = FILES["components/debug/kustomization.yaml"].replace(
        "/spec/template/spec/containers/0/env\n      value: [{name: DEBUG, value: '1'}]",
        "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n      value: 8",
    )
    repo = make_repo(tmp_path / "repo", {**FILES, "components/debug/kustomization.yaml": component})
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    assert "kustomize-device-field" in err, err
    assert "spec.template.spec.containers.0.resources.limits.nvidia.com/gpu" in err
    assert snapshot(repo) == before


def test_patch_fix_cannot_express_is_reported_and_nothing_is_written(tmp_path: Path, run_cli: RunCli) -> None:
    by_label = FILES["overlays/small/kustomization.yaml"].replace(
        "{kind: Deployment, name: trainer}", "{kind: Deployment, labelSelector: app=trainer}"
    )
    repo = make_repo(tmp_path / "repo", {**FILES, "overlays/small/kustomization.yaml": by_label})
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    assert "kustomize-device-field" in err and "overlays/small/kustomization.yaml" in err, err
    assert "on a target without a kind and a name" in err
    assert snapshot(repo) == before, "nothing of the base's graph is written, not even the overlays that proved"


def test_a_suppressed_device_patch_is_hidden_and_its_graph_left_alone(tmp_path: Path, run_cli: RunCli) -> None:
    block = "      # dramigrate: disable=kustomize-device-patch\n      containers:"
    patch = A100_PATCH.replace("      containers:", block)
    repo = make_repo(tmp_path / "repo", {**FILES, "overlays/a100/gpus.yaml": patch})
    code, out, err = run_cli(["lint", "--format", "json", "."], cwd=repo)
    lines = {(f["file"], f["line"]) for f in json.loads(out)["findings"]}
    count_line = patch.splitlines().index("            nvidia.com/gpu: 4") + 1
    assert ("overlays/a100/gpus.yaml", 9) in lines, "the label line above the block is still reported"
    assert ("overlays/a100/gpus.yaml", count_line) not in lines
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    assert code == 1 and snapshot(repo) == before, err
    assert f"not migrated: [kustomize-device-patch] at overlays/a100/gpus.yaml:{count_line} is suppressed" in err
    (summary,) = [line for line in err.splitlines() if "file(s) scanned" in line]
    assert "fixable" not in summary, "fix does not count what it leaves alone as fixable"


def _gpus(count: int) -> str:
    """A strategic-merge patch of the trainer's device count."""
    return A100_PATCH.replace(
        "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n", ""
    ).replace("nvidia.com/gpu: 4", f"nvidia.com/gpu: {count}")


DEVICE_OP = "- op: replace\n  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n  value: 3\n"
STACKS = {
    # a base that patches its own count, an overlay, an overlay of that overlay, and a deprecated patchesJson6902
    "stack/base/train.yaml": TRAIN,
    "stack/base/kustomization.yaml": "resources:\n- train.yaml\npatches:\n- path: gpus.yaml\n",
    "stack/base/gpus.yaml": _gpus(2),
    "stack/big/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: gpus.yaml\n",
    "stack/big/gpus.yaml": _gpus(4),
    "stack/huge/kustomization.yaml": "resources:\n- ../big\nnameSuffix: -x\npatches:\n- path: gpus.yaml\n",
    "stack/huge/gpus.yaml": _gpus(8),
    "stack/small/kustomization.yaml": (
        "resources:\n- ../base\npatchesJson6902:\n- target: {group: apps, version: v1, kind: Deployment, "
        "name: trainer}\n  path: ops.yaml\n"
    ),
    "stack/small/ops.yaml": DEVICE_OP,
    # a CPU overlay removes the base's device: its build has no claim, while the rewritten base brings one
    "cpu/base/train.yaml": TRAIN,
    "cpu/base/kustomization.yaml": "resources:\n- train.yaml\n",
    "cpu/gpu/kustomization.yaml": "resources:\n- ../base\n",
    "cpu/cpu/kustomization.yaml": (
        "resources:\n- ../base\npatches:\n- target: {kind: Deployment, name: trainer}\n  patch: |-\n"
        "    - op: remove\n      path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n"
    ),
    # a base whose workload names its namespace: the overlay's delete patch of the base's template names it too
    "ns/base/train.yaml": TRAIN.replace("  name: trainer\n", "  name: trainer\n  namespace: ml\n", 1),
    "ns/base/kustomization.yaml": "resources:\n- train.yaml\n",
    "ns/big/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: gpus.yaml\n",
    "ns/big/gpus.yaml": _gpus(4).replace("  name: trainer\n", "  name: trainer\n  namespace: ml\n", 1),
    # an overlay on a remote base
    "remote/base/train.yaml": TRAIN,
    "remote/base/kustomization.yaml": "resources:\n- train.yaml\n",
    "remote/big/kustomization.yaml": (
        "resources:\n- ../base\n- github.com/example/gpu-base//deploy?ref=v1\npatches:\n- path: gpus.yaml\n"
    ),
    "remote/big/gpus.yaml": _gpus(4),
}


@pytest.fixture(scope="module")
def stacked(tmp_path_factory: pytest.TempPathFactory, run_cli: RunCli) -> tuple[Path, dict, str, dict]:
    """One `fix .` over three graphs; the migratable graph's builds with the real kustomize."""
    repo = make_repo(tmp_path_factory.mktemp("stacked") / "repo", STACKS)
    before = snapshot(repo)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    kubectl = find_binary()[0]
    builds = {o: build(kubectl, repo / o) for o in ("stack/base", "stack/big", "stack/huge", "stack/small", "ns/big")}
    return repo, before, f"exit {code}\n{err}", builds


@pytest.mark.parametrize(
    ("overlay", "name", "count"),
    [
        ("stack/base", "trainer", 2),
        ("stack/big", "trainer", 4),
        ("stack/huge", "trainer-x", 8),
        ("stack/small", "trainer", 3),
        ("ns/big", "trainer", 4),
    ],
)
def test_overlays_of_overlays_and_patches_json6902_build_migrated(
    stacked: tuple[Path, dict, str, dict], overlay: str, name: str, count: int
) -> None:
    repo, _, log, builds = stacked
    deploy, templates = _pod_and_templates(builds[overlay])
    assert deploy["metadata"]["name"] == name, log
    pod = deploy["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in json.dumps(pod["containers"][0].get("resources", {})), log
    (claim,) = pod["resourceClaims"]
    assert list(templates) == [claim["resourceClaimTemplateName"]], "each template replaced, none left beside"
    assert (
        templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        == count
    )
    if overlay == "stack/small":
        assert "patchesJson6902" not in (repo / "stack/small/kustomization.yaml").read_text()


def test_a_proof_mismatch_or_a_remote_base_writes_nothing_of_that_graph(stacked: tuple[Path, dict, str, dict]) -> None:
    repo, before, log, _ = stacked
    after = snapshot(repo)
    for graph in ("cpu/", "remote/"):
        assert {p: t for p, t in after.items() if p.startswith(graph)} == {
            p: t for p, t in before.items() if p.startswith(graph)
        }, graph
    # the overlay whose rewritten build differs from the migration of its original build is named, with the field
    assert "cpu/cpu/kustomization.yaml:1:1: warning [kustomize-unproven]" in log, log
    assert "the rewritten cpu/cpu builds differently: Deployment trainer: spec.template.spec.containers[0]" in log
    assert "(because cpu/cpu/kustomization.yaml:6 removes nvidia.com/gpu: the overlay takes away a device" in log
    assert "remote/big/kustomization.yaml builds on a remote base (github.com/example/gpu-base//deploy?ref=v1)" in log
    assert "neither fetches nor rewrites" in log


def test_builds_run_go_s_collector_less_often_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build allocates much and keeps little: kustomize runs with GOGC=400 (a sixth less CPU a build), bounded by
    GOMEMLIMIT at half the build's memory limit; a GOGC or GOMEMLIMIT the user set is kept."""
    from conftest import base_and_overlay

    from dramigrate.kustomize.build import Builder

    overlay = base_and_overlay(tmp_path / "tree", "resources:\n- ../base\nnamePrefix: big-\n")
    seen = tmp_path / "env"
    kubectl = tmp_path / "kubectl-recording"  # the real kubectl, started through a script that keeps its environment
    kubectl.write_text(f'#!/bin/sh\nenv > "{seen}"\nexec "{find_binary()[0]}" "$@"\n')
    kubectl.chmod(0o755)

    def build_env() -> dict[str, str]:
        build = Builder([str(kubectl), "kustomize"]).build_one(overlay)
        assert build.ok and "name: big-pod" in build.text
        return dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)

    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_MEMORY_MB", "1536")
    env = build_env()
    assert (env.get("GOGC"), env.get("GOMEMLIMIT")) == ("400", "768MiB")
    monkeypatch.setenv("GOGC", "100")
    monkeypatch.setenv("GOMEMLIMIT", "3GiB")
    env = build_env()
    assert (env.get("GOGC"), env.get("GOMEMLIMIT")) == ("100", "3GiB")


# a container asking for two MIG profiles, its keys not in name order
MIG_POD = TRAIN.replace("nvidia.com/gpu: 1", "nvidia.com/mig-2g.10gb: 1\n            nvidia.com/mig-1g.5gb: 1")


def test_device_keys_out_of_name_order_prove_though_the_build_sorts_them(tmp_path: Path, run_cli: RunCli) -> None:
    """A container asking for two MIG profiles, its keys not in name order: `kustomize build` sorts them, so the
    migration of the build lists the claim's requests and the pod's tolerations the other way round from the
    migration of the file. Was: kustomize-unproven ("...resourceClaimTemplateName: expected content-..."), nothing
    written."""
    files = {
        "base/trainer.yaml": MIG_POD,
        "base/kustomization.yaml": "resources:\n- trainer.yaml\n",
        "overlays/dev/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: dev-\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    code, out, err = run_cli(["fix", "."], cwd=repo)
    assert code == 0 and "kustomize-unproven" not in err, err
    docs = [d for d in yaml.safe_load_all((repo / "base" / "trainer.yaml").read_text()) if d]
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert "limits" not in pod["containers"][0]["resources"] and len(pod["resourceClaims"]) == 1, pod
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [r["name"] for r in requests] == ["mig-2g-10gb", "mig-1g-5gb"], requests  # the file's order, as written
