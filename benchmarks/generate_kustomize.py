#!/usr/bin/env python3
"""Write a deterministic kustomize repository with thousands of device files, for timing fix and diff at scale.

    python benchmarks/generate_kustomize.py OUT_DIR --device-files 3000 --seed 1

Teams of apps (`apps/<team>/<app>/`). Each app has a base of --per-base device workloads (Deployments, Jobs,
StatefulSets and multi-document files asking for nvidia.com/gpu, amd.com/gpu or MIG slices, made by generate.py)
beside a Service and a ConfigMap; the base's main Deployment asks for one nvidia.com/gpu. Four overlays share
each base:

  dev       namePrefix and a strategic-merge patch file that sets the main Deployment's GPU count
  staging   nameSuffix and an inline JSON6902 patch that sets the same count
  prod      a node-label patch (the GPU model) and the team's Component (a label and an annotation)
  canary    namePrefix only

and each team has `apps/<team>/clusters/prod`, an overlay of all its apps' prod overlays. A team is one kustomize
graph (its apps share the Component and the cluster overlay). The same arguments always give byte-identical files.
Needs only PyYAML.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
import generate as g  # noqa: E402

APPS_PER_TEAM = 5


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _kustomization(data: dict) -> str:
    return yaml.dump(data, Dumper=g._Dumper, sort_keys=False, default_flow_style=False, width=120)


def _device_workload(name: str, team: str, rng: random.Random) -> list[dict]:
    kind = rng.choices(["deployment", "job", "statefulset", "multi"], weights=[35, 25, 15, 25])[0]
    if kind == "deployment":
        return [g.deployment(name, team, rng, resources=g.device_resources(rng, g.device_kind(rng)))]
    if kind == "job":
        return [g.job(name, team, rng)]
    if kind == "statefulset":
        return [g.statefulset(name, team, rng)]
    workload = g.deployment(name, team, rng, resources=g.device_resources(rng, g.device_kind(rng)))
    return [g.configmap(name, team, rng), workload]


def _main_deployment(app: str, team: str, rng: random.Random) -> dict:
    res = g.cpu_mem(rng)
    res.setdefault("limits", {})["nvidia.com/gpu"] = 1
    return g.deployment(app, team, rng, resources=res)


def _app(root: Path, team: str, app: str, per_base: int, rng: random.Random) -> int:
    base = root / "base"
    resources = ["main.yaml", "service.yaml", "config.yaml"]
    _write(base / "main.yaml", g.dump([_main_deployment(app, team, rng)], rng))
    _write(base / "service.yaml", g.dump([g.service(app, team, rng)], rng))
    _write(base / "config.yaml", g.dump([g.configmap(app, team, rng)], rng))
    for i in range(1, per_base):
        name = f"{app}-{rng.choice(g.ML_WORDS)}-{i}"
        _write(base / f"{name}.yaml", g.dump(_device_workload(name, team, rng), rng))
        resources.append(f"{name}.yaml")
    _write(base / "kustomization.yaml", _kustomization({"resources": resources}))
    n = rng.choice([2, 4, 8])
    container = "app"
    smp = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": team},
        "spec": {
            "template": {"spec": {"containers": [{"name": container, "resources": {"limits": {"nvidia.com/gpu": n}}}]}}
        },
    }
    overlays = root / "overlays"
    _write(overlays / "dev" / "gpus.yaml", yaml.dump(smp, sort_keys=False))
    _write(
        overlays / "dev" / "kustomization.yaml",
        _kustomization({"resources": ["../../base"], "namePrefix": "dev-", "patches": [{"path": "gpus.yaml"}]}),
    )
    ops = (
        "- op: replace\n"
        "  path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\n"
        f"  value: {n // 2 or 1}\n"
    )
    _write(
        overlays / "staging" / "kustomization.yaml",
        "resources:\n- ../../base\nnameSuffix: -staging\npatches:\n"
        f"- target:\n    kind: Deployment\n    name: {app}\n    namespace: {team}\n  patch: |-\n"
        + "".join(f"    {line}\n" for line in ops.splitlines()),
    )
    label = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": team},
        "spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}},
    }
    _write(overlays / "prod" / "model.yaml", yaml.dump(label, sort_keys=False))
    _write(
        overlays / "prod" / "kustomization.yaml",
        _kustomization(
            {
                "resources": ["../../base"],
                "namespace": f"{team}-prod",
                "components": ["../../../components/monitoring"],
                "patches": [{"path": "model.yaml"}],
            }
        ),
    )
    _write(
        overlays / "canary" / "kustomization.yaml",
        _kustomization({"resources": ["../../base"], "namePrefix": "canary-"}),
    )
    return per_base


def _component(root: Path, team: str) -> None:
    _write(
        root / "kustomization.yaml",
        _kustomization(
            {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "labels": [{"pairs": {"monitoring.example.com/team": team}}],
                "commonAnnotations": {"monitoring.example.com/scrape": "true"},
            }
        ),
    )


def generate(out: Path, device_files: int, seed: int = 1, per_base: int = 10) -> dict[str, int]:
    """Write the repository; returns counts (device files, apps, teams, kustomizations)."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(out)], check=True)
    apps = max(1, -(-device_files // per_base))
    teams = -(-apps // APPS_PER_TEAM)
    written = kustomizations = 0
    for t in range(teams):
        team = f"{g.TEAMS[t % len(g.TEAMS)]}{t // len(g.TEAMS) or ''}"
        top = out / "apps" / team
        _component(top / "components" / "monitoring", team)
        names = []
        for a in range(APPS_PER_TEAM):
            if written >= device_files:
                break
            app = f"{rng.choice(g.WORDS)}{t}x{a}"
            written += _app(top / app, team, app, min(per_base, device_files - written), rng)
            names.append(app)
            kustomizations += 5
        _write(
            top / "clusters" / "prod" / "kustomization.yaml",
            _kustomization({"resources": [f"../../{a}/overlays/prod" for a in names]}),
        )
        kustomizations += 2
    return {"device files": written, "apps": apps, "teams": teams, "kustomizations": kustomizations}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--device-files", type=int, default=1000)
    ap.add_argument("--per-base", type=int, default=10, help="device files in each app's base (default 10)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    counts = generate(args.out_dir, args.device_files, args.seed, args.per_base)
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
