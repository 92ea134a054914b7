#!/usr/bin/env python3
"""Write a deterministic, realistic-looking Kubernetes manifest repo for benchmarking dramigrate.

    python benchmarks/generate.py OUT_DIR --files 2000 --seed 1

About 90% of the files ask for no device: Services, ConfigMaps, ServiceAccounts, Ingresses, HPAs and
Deployments with only cpu/memory, with the usual qualified label and annotation keys
(app.kubernetes.io/name, prometheus.io/scrape, ...). A few of those mention a device domain without
requesting a device (a nodeSelector on nvidia.com/gpu.present, a toleration with key nvidia.com/gpu),
as real repos do, so a byte pre-filter sees some near misses. About 10% ask for devices: Deployments,
Jobs, StatefulSets and RayClusters with nvidia.com/gpu or amd.com/gpu, some MIG slices, some multi-document
files (workload + Service + ConfigMap), and a few ResourceQuotas with requests.nvidia.com/gpu.

The same --files and --seed always give byte-identical output. Needs only PyYAML.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import yaml

DEVICE_SHARE = 0.10  # share of files that ask for a device

TEAMS = ["payments", "search", "identity", "platform", "ml", "data", "growth", "infra", "media", "risk"]
WORDS = [
    "api",
    "worker",
    "gateway",
    "indexer",
    "scheduler",
    "frontend",
    "backend",
    "cache",
    "ingest",
    "exporter",
    "router",
    "billing",
    "auth",
    "events",
    "notifier",
    "reports",
    "sync",
    "catalog",
    "ledger",
    "feeds",
]
ML_WORDS = ["train", "infer", "embed", "rerank", "finetune", "eval", "vllm", "triton", "llm", "vision"]
ENVS = ["dev", "staging", "prod"]
REGISTRY = ["ghcr.io/acme", "registry.example.com/team", "123456789012.dkr.ecr.us-east-1.amazonaws.com"]
MIG = ["nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb", "nvidia.com/mig-1g.10gb"]


class _Dumper(yaml.SafeDumper):
    """Indent block sequences under their key (the kubectl/helm style most repos use)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):  # noqa: ARG002
        return super().increase_indent(flow, False)


def dump(docs: list[dict], rng: random.Random) -> str:
    header = ""
    if rng.random() < 0.3:
        header = f"# Managed by the {rng.choice(TEAMS)} team. Do not edit by hand in production.\n"
    indented = rng.random() < 0.7
    parts = []
    for doc in docs:
        parts.append(
            yaml.dump(
                doc,
                Dumper=_Dumper if indented else yaml.SafeDumper,
                sort_keys=False,
                default_flow_style=False,
                width=120,
            )
        )
    text = "---\n".join(parts)
    if len(docs) > 1 and rng.random() < 0.5:
        text = "---\n" + text
    return header + text


# ---------------------------------------------------------------- building blocks


def labels(name: str, team: str, rng: random.Random) -> dict:
    out = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": f"{name}-{rng.choice(ENVS)}",
        "app.kubernetes.io/part-of": team,
        "app.kubernetes.io/managed-by": rng.choice(["kustomize", "Helm", "argocd"]),
    }
    if rng.random() < 0.5:
        out["app.kubernetes.io/version"] = f"{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    if rng.random() < 0.3:
        out["team"] = team
    return out


def annotations(rng: random.Random, port: int) -> dict:
    out: dict = {}
    if rng.random() < 0.6:
        out["prometheus.io/scrape"] = "true"
        out["prometheus.io/port"] = str(port)
        out["prometheus.io/path"] = "/metrics"
    if rng.random() < 0.3:
        out["kubectl.kubernetes.io/default-container"] = "app"
    if rng.random() < 0.2:
        out["sidecar.istio.io/inject"] = rng.choice(["true", "false"])
    if rng.random() < 0.15:
        out["checksum/config"] = f"{rng.getrandbits(256):064x}"
    return out


def meta(name: str, team: str, rng: random.Random, port: int = 8080, with_annotations: bool = True) -> dict:
    m: dict = {"name": name, "namespace": team, "labels": labels(name, team, rng)}
    if with_annotations:
        ann = annotations(rng, port)
        if ann:
            m["annotations"] = ann
    return m


def image(name: str, rng: random.Random, gpu: bool = False) -> str:
    tag = f"{rng.randint(1, 5)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
    if gpu and rng.random() < 0.5:
        return rng.choice(["nvcr.io/nvidia/pytorch:24.05-py3", "vllm/vllm-openai:v0.6.3", "rocm/pytorch:latest"])
    return f"{rng.choice(REGISTRY)}/{name}:{tag}"


def cpu_mem(rng: random.Random) -> dict:
    cpu = rng.choice(["100m", "250m", "500m", "1", "2", "4"])
    mem = rng.choice(["128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"])
    res: dict = {"requests": {"cpu": cpu, "memory": mem}}
    if rng.random() < 0.7:
        res["limits"] = {"memory": mem} if rng.random() < 0.5 else {"cpu": cpu, "memory": mem}
    return res


def env(rng: random.Random, team: str) -> list:
    out = [
        {"name": "LOG_LEVEL", "value": rng.choice(["info", "debug", "warn"])},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
    if rng.random() < 0.5:
        out.append({"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": f"{team}-db", "key": "url"}}})
    if rng.random() < 0.3:
        out.append({"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability:4317"})
    return out


def container(name: str, rng: random.Random, team: str, port: int, resources: dict, gpu: bool = False) -> dict:
    c: dict = {
        "name": name,
        "image": image(name, rng, gpu),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "env": env(rng, team),
        "resources": resources,
    }
    if rng.random() < 0.7:
        c["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
        c["livenessProbe"] = {"httpGet": {"path": "/livez", "port": "http"}, "initialDelaySeconds": 15}
    if rng.random() < 0.4:
        c["volumeMounts"] = [{"name": "config", "mountPath": "/etc/app", "readOnly": True}]
    if rng.random() < 0.5:
        c["securityContext"] = {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }
    return c


def pod_spec(containers: list, rng: random.Random, name: str, near_miss: str | None = None) -> dict:
    spec: dict = {"serviceAccountName": name, "containers": containers}
    if any("volumeMounts" in c for c in containers):
        spec["volumes"] = [{"name": "config", "configMap": {"name": f"{name}-config"}}]
    if rng.random() < 0.3:
        spec["terminationGracePeriodSeconds"] = rng.choice([30, 60, 120])
    if near_miss == "nodeSelector":
        spec["nodeSelector"] = {"nvidia.com/gpu.present": "true", "kubernetes.io/os": "linux"}
    elif near_miss == "toleration":
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    elif rng.random() < 0.2:
        spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
    return spec


def device_resources(rng: random.Random, kind: str) -> dict:
    """Resources with a device request: kind is nvidia, amd or mig."""
    res = cpu_mem(rng)
    res.setdefault("limits", {})
    if kind == "mig":
        for key in rng.sample(MIG, rng.choice([1, 1, 2])):
            res["limits"][key] = rng.choice([1, 1, 2])
    else:
        key = "nvidia.com/gpu" if kind == "nvidia" else "amd.com/gpu"
        n = rng.choice([1, 1, 1, 2, 4, 8])
        res["limits"][key] = n
        if rng.random() < 0.4:
            res["requests"][key] = n
    return res


def device_kind(rng: random.Random) -> str:
    return rng.choices(["nvidia", "amd", "mig"], weights=[70, 18, 12])[0]


# ---------------------------------------------------------------- clean documents


def deployment(
    name: str, team: str, rng: random.Random, resources: dict | None = None, near_miss: str | None = None
) -> dict:
    port = rng.choice([8080, 8000, 9090, 3000, 5000])
    c = container("app", rng, team, port, resources or cpu_mem(rng), gpu=resources is not None)
    containers = [c]
    if rng.random() < 0.15:
        containers.append(
            {
                "name": "log-shipper",
                "image": "fluent/fluent-bit:3.1",
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
            }
        )
    sel = {"app.kubernetes.io/name": name}
    tmeta = {"labels": {**sel, "app.kubernetes.io/part-of": team}}
    ann = annotations(rng, port)
    if ann:
        tmeta["annotations"] = ann
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, team, rng, port),
        "spec": {
            "replicas": rng.choice([1, 2, 3, 5]),
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": sel},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {"metadata": tmeta, "spec": pod_spec(containers, rng, name, near_miss)},
        },
    }


def service(name: str, team: str, rng: random.Random) -> dict:
    port = rng.choice([80, 8080, 443])
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(name, team, rng, port),
        "spec": {
            "type": rng.choice(["ClusterIP", "ClusterIP", "ClusterIP", "NodePort"]),
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def configmap(name: str, team: str, rng: random.Random) -> dict:
    data = {
        "LOG_FORMAT": "json",
        "FEATURE_FLAGS": ",".join(rng.sample(WORDS, 4)),
        "app.yaml": "\n".join(
            [
                f"server:\n  port: {rng.choice([8080, 9090])}",
                f"  timeout: {rng.randint(1, 60)}s",
                "cache:",
                f"  size: {rng.randint(64, 4096)}",
            ]
        )
        + "\n",
    }
    if rng.random() < 0.03:  # the odd big one: dashboards, rules, lookup tables
        data["lookup.csv"] = "".join(
            f"{i},{rng.getrandbits(64):016x},{rng.choice(WORDS)}\n" for i in range(rng.randint(2000, 8000))
        )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(f"{name}-config", team, rng, with_annotations=False),
        "data": data,
    }


def service_account(name: str, team: str, rng: random.Random) -> dict:
    m = meta(name, team, rng, with_annotations=False)
    if rng.random() < 0.4:
        m["annotations"] = {"eks.amazonaws.com/role-arn": f"arn:aws:iam::123456789012:role/{team}-{name}"}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": m}


def ingress(name: str, team: str, rng: random.Random) -> dict:
    m = meta(name, team, rng, with_annotations=False)
    m["annotations"] = {
        "cert-manager.io/cluster-issuer": "letsencrypt",
        "nginx.ingress.kubernetes.io/proxy-body-size": f"{rng.choice([1, 8, 64])}m",
    }
    host = f"{name}.{team}.example.com"
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": m,
        "spec": {
            "ingressClassName": "nginx",
            "tls": [{"hosts": [host], "secretName": f"{name}-tls"}],
            "rules": [
                {
                    "host": host,
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": name, "port": {"name": "http"}}},
                            }
                        ]
                    },
                }
            ],
        },
    }


def hpa(name: str, team: str, rng: random.Random) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta(name, team, rng, with_annotations=False),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 2,
            "maxReplicas": rng.choice([5, 10, 20]),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
        },
    }


def pdb(name: str, team: str, rng: random.Random) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(name, team, rng, with_annotations=False),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}}},
    }


def kustomization(name: str, rng: random.Random, resources: list[str]) -> dict:
    k: dict = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}
    if rng.random() < 0.5:
        k["commonLabels"] = {"app.kubernetes.io/part-of": name}
    return k


# ---------------------------------------------------------------- device documents


def job(name: str, team: str, rng: random.Random) -> dict:
    c = container("trainer", rng, team, 8080, device_resources(rng, device_kind(rng)), gpu=True)
    c["command"] = ["python", "-m", "train", "--epochs", str(rng.randint(1, 50))]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(name, team, rng),
        "spec": {
            "backoffLimit": 2,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": name}},
                "spec": {**pod_spec([c], rng, name), "restartPolicy": "Never"},
            },
        },
    }


def statefulset(name: str, team: str, rng: random.Random) -> dict:
    c = container("server", rng, team, 8000, device_resources(rng, device_kind(rng)), gpu=True)
    sel = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta(name, team, rng, 8000),
        "spec": {
            "serviceName": name,
            "replicas": rng.choice([1, 2, 3]),
            "selector": {"matchLabels": sel},
            "template": {"metadata": {"labels": sel}, "spec": pod_spec([c], rng, name)},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "models"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "200Gi"}}},
                }
            ],
        },
    }


def raycluster(name: str, team: str, rng: random.Random) -> dict:
    kind = device_kind(rng)
    head = {"name": "ray-head", "image": "rayproject/ray:2.9.0", "resources": cpu_mem(rng)}
    groups = []
    for i in range(rng.choice([1, 1, 2])):
        worker = {"name": "ray-worker", "image": "rayproject/ray:2.9.0-gpu", "resources": device_resources(rng, kind)}
        groups.append(
            {
                "groupName": f"gpu-group-{i}",
                "replicas": rng.choice([1, 2, 4]),
                "minReplicas": 0,
                "maxReplicas": 8,
                "rayStartParams": {},
                "template": {"spec": {"containers": [worker]}},
            }
        )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": meta(name, team, rng, 8265),
        "spec": {
            "rayVersion": "2.9.0",
            "headGroupSpec": {
                "rayStartParams": {"dashboard-host": "0.0.0.0"},
                "template": {"spec": {"containers": [head]}},
            },
            "workerGroupSpecs": groups,
        },
    }


def quota(team: str, rng: random.Random) -> dict:
    hard = {"requests.cpu": str(rng.choice([64, 128, 256])), "requests.memory": f"{rng.choice([256, 512, 1024])}Gi"}
    hard["requests.nvidia.com/gpu"] = str(rng.choice([8, 16, 32]))
    if rng.random() < 0.4:
        hard["requests.amd.com/gpu"] = str(rng.choice([4, 8]))
    if rng.random() < 0.3:
        hard[f"requests.{rng.choice(MIG)}"] = str(rng.choice([4, 8]))
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": f"{team}-gpu-quota", "namespace": team},
        "spec": {"hard": hard},
    }


# ---------------------------------------------------------------- the repo


def clean_file(name: str, team: str, rng: random.Random) -> tuple[str, list[dict]]:
    kind = rng.choices(
        ["deployment", "service", "configmap", "serviceaccount", "ingress", "hpa", "pdb", "kustomization", "app"],
        weights=[30, 20, 15, 8, 7, 6, 4, 5, 5],
    )[0]
    if kind == "deployment":
        near = rng.choices([None, "nodeSelector", "toleration"], weights=[94, 3, 3])[0]
        return "deployment", [deployment(name, team, rng, near_miss=near)]
    if kind == "app":  # one file with the whole app, no devices
        return "app", [deployment(name, team, rng), service(name, team, rng), configmap(name, team, rng)]
    if kind == "kustomization":  # its resources are filled in by generate, once the folder's files are known
        return "kustomization", [kustomization(name, rng, [])]
    make = {
        "service": service,
        "configmap": configmap,
        "serviceaccount": service_account,
        "ingress": ingress,
        "hpa": hpa,
        "pdb": pdb,
    }[kind]
    return kind, [make(name, team, rng)]


def device_file(name: str, team: str, rng: random.Random) -> tuple[str, list[dict]]:
    kind = rng.choices(
        ["deployment", "job", "statefulset", "raycluster", "multi", "quota"], weights=[30, 20, 12, 12, 20, 6]
    )[0]
    if kind == "deployment":
        return "deployment", [deployment(name, team, rng, resources=device_resources(rng, device_kind(rng)))]
    if kind == "job":
        return "job", [job(name, team, rng)]
    if kind == "statefulset":
        return "statefulset", [statefulset(name, team, rng)]
    if kind == "raycluster":
        return "raycluster", [raycluster(name, team, rng)]
    if kind == "quota":
        return "resourcequota", [quota(team, rng)]
    workload = (
        deployment(name, team, rng, resources=device_resources(rng, device_kind(rng)))
        if rng.random() < 0.6
        else job(name, team, rng)
    )
    return "app", [configmap(name, team, rng), workload, service(name, team, rng)]


def generate(out: Path, files: int, seed: int, device_share: float = DEVICE_SHARE) -> dict:
    rng = random.Random(seed)
    n_device = round(files * device_share)
    device_slots = set(rng.sample(range(files), n_device))
    used: set[Path] = set()
    in_folder: dict[Path, list[str]] = {}  # folder -> the manifests written in it
    open_folders: list[Path] = []  # folders with manifests and no kustomization, in the order they were made
    kustomizations: dict[Path, tuple[dict, str]] = {}  # folder -> (its kustomization, the dump's header/indent seed)
    stats = {"files": 0, "device_files": 0, "bytes": 0}
    for i in range(files):
        team = rng.choice(TEAMS)
        is_device = i in device_slots
        name = f"{rng.choice(ML_WORDS if is_device else WORDS)}-{rng.choice(WORDS)}"
        folder = Path(rng.choice(["apps", "services", "platform", "clusters"])) / team / name
        layout = rng.random()
        if layout < 0.4:
            folder = folder / "base"
        elif layout < 0.8:
            folder = folder / "overlays" / rng.choice(ENVS)
        stem, docs = (device_file if is_device else clean_file)(name, team, rng)
        suffix = ".yml" if rng.random() < 0.1 else ".yaml"
        if stem == "kustomization":
            # kustomize reads only kustomization.yaml/.yml, one per folder: it goes to a folder that has manifests
            # and no kustomization yet, and lists that folder's manifests once every file is written (so every
            # entry exists)
            where = open_folders.pop(rng.randrange(len(open_folders))) if open_folders else out / folder
            if where not in kustomizations:
                kustomizations[where] = (docs[0], suffix)
                stats["files"] += 1
                continue
            stem, docs = "configmap", [configmap(name, team, rng)]  # no folder left for it: a ConfigMap instead
        path = out / folder / f"{stem}{suffix}"
        n = 1
        while path in used:
            n += 1
            path = out / folder / f"{stem}-{n}{suffix}"
        used.add(path)
        if path.parent not in in_folder and path.parent not in kustomizations:
            open_folders.append(path.parent)
        in_folder.setdefault(path.parent, []).append(path.name)
        text = dump(docs, rng)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        stats["files"] += 1
        stats["device_files"] += is_device
        stats["bytes"] += len(text.encode())
    for folder in sorted(kustomizations):
        doc, suffix = kustomizations[folder]
        listed = sorted(in_folder.get(folder, []))
        base = folder.parent.parent / "base"
        if folder.parent.name == "overlays" and base in kustomizations:
            listed.insert(0, "../../base")  # an overlay builds on its app's base, as kustomize repos do
        doc["resources"] = listed
        text = dump([doc], rng)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"kustomization{suffix}").write_text(text, encoding="utf-8", newline="\n")
        stats["bytes"] += len(text.encode())
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--files", type=int, default=2000, help="number of YAML files (default 2000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument(
        "--device-share",
        type=float,
        default=DEVICE_SHARE,
        help=f"share of files asking for devices (default {DEVICE_SHARE})",
    )
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.files < 1:
        ap.error("--files must be at least 1")
    if args.out_dir.exists() and any(args.out_dir.iterdir()):
        ap.error(f"{args.out_dir} is not empty")
    stats = generate(args.out_dir, args.files, args.seed, args.device_share)
    if not args.quiet:
        print(
            f"wrote {stats['files']} files ({stats['device_files']} with device requests, "
            f"{stats['bytes'] / 2**20:.1f} MiB) to {args.out_dir}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
