"""The workload kinds the property tests generate: every kind of the built-in rule packs (rules/workloads.yaml) whose
pod templates fix migrates, and the kinds it only reports.

Each kind is a skeleton of its object with placeholders: `{spec:i}` is the i-th pod spec (a core PodSpec, an Argo
template, or a KServe component, as `layouts[i]` says), `{template:i}` a pod template (labels and the i-th pod spec),
`{app}` the labels, `{ray:i}` the rayStartParams of a Ray group. Scalars are written as they stand (quote them here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# How the containers of one pod spec are laid out: "pod" (initContainers, containers), "argo" (an Argo template:
# container or script, initContainers, sidecars that run beside the main container), "kserve" (a KServe predictor:
# its model container, initContainers).
POD, ARGO, KSERVE = "pod", "argo", "kserve"


@dataclass(frozen=True)
class Kind:
    api: str
    body: dict[str, Any]  # the object less apiVersion, kind and metadata
    layouts: tuple[str, ...] = (POD,)
    jobs: frozenset[int] = frozenset()  # pod specs a Job runs: restartPolicy Never
    annotations: dict[str, str] = field(default_factory=dict)


def _kubeflow(api: str, key: str, first: str, second: str) -> Kind:
    replicas = {first: {"replicas": 1, "template": "{template:0}"}, second: {"replicas": 2, "template": "{template:1}"}}
    return Kind(api, {"spec": {key: replicas}}, (POD, POD))


def _ray_cluster(head: int, workers: int) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": f"{{ray:{head}}}", "template": f"{{template:{head}}}"},
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 1,
                "rayStartParams": f"{{ray:{workers}}}",
                "template": f"{{template:{workers}}}",
            }
        ],
    }


def _argo(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "entrypoint": "t0", "templates": ["{spec:0}", "{spec:1}"]}


SELECTOR = {"matchLabels": "{app}"}
SCHEDULE = '"0 * * * *"'

# Kinds fix migrates.
MIGRATED: dict[str, Kind] = {
    "Pod": Kind("v1", {"spec": "{spec:0}"}),
    "PodTemplate": Kind("v1", {"template": "{template:0}"}),
    "ReplicationController": Kind("v1", {"spec": {"replicas": 2, "selector": "{app}", "template": "{template:0}"}}),
    "Deployment": Kind("apps/v1", {"spec": {"replicas": 2, "selector": SELECTOR, "template": "{template:0}"}}),
    "ReplicaSet": Kind("apps/v1", {"spec": {"replicas": 1, "selector": SELECTOR, "template": "{template:0}"}}),
    "StatefulSet": Kind("apps/v1", {"spec": {"serviceName": "svc", "selector": SELECTOR, "template": "{template:0}"}}),
    "DaemonSet": Kind("apps/v1", {"spec": {"selector": SELECTOR, "template": "{template:0}"}}),
    "Job": Kind("batch/v1", {"spec": {"backoffLimit": 1, "template": "{template:0}"}}, jobs=frozenset({0})),
    "CronJob": Kind(
        "batch/v1",
        {"spec": {"schedule": SCHEDULE, "jobTemplate": {"spec": {"template": "{template:0}"}}}},
        jobs=frozenset({0}),
    ),
    "RayCluster": Kind("ray.io/v1", {"spec": _ray_cluster(0, 1)}, (POD, POD)),
    "RayJob": Kind(
        "ray.io/v1",
        {
            "spec": {
                "entrypoint": "python run.py",
                "rayClusterSpec": _ray_cluster(0, 1),
                "submitterPodTemplate": "{template:2}",
            }
        },
        (POD, POD, POD),
        jobs=frozenset({2}),
    ),
    "RayService": Kind("ray.io/v1", {"spec": {"rayClusterConfig": _ray_cluster(0, 1)}}, (POD, POD)),
    "PyTorchJob": _kubeflow("kubeflow.org/v1", "pytorchReplicaSpecs", "Master", "Worker"),
    "TFJob": _kubeflow("kubeflow.org/v1", "tfReplicaSpecs", "Chief", "Worker"),
    "MPIJob": _kubeflow("kubeflow.org/v2beta1", "mpiReplicaSpecs", "Launcher", "Worker"),
    "XGBoostJob": _kubeflow("kubeflow.org/v1", "xgbReplicaSpecs", "Master", "Worker"),
    "PaddleJob": _kubeflow("kubeflow.org/v1", "paddleReplicaSpecs", "Master", "Worker"),
    "JobSet": Kind(
        "jobset.x-k8s.io/v1alpha2",
        {
            "spec": {
                "replicatedJobs": [
                    {"name": name, "replicas": 1, "template": {"spec": {"template": f"{{template:{i}}}"}}}
                    for i, name in enumerate(("leader", "workers"))
                ]
            }
        },
        (POD, POD),
        jobs=frozenset({0, 1}),
    ),
    "LeaderWorkerSet": Kind(
        "leaderworkerset.x-k8s.io/v1",
        {
            "spec": {
                "leaderWorkerTemplate": {"size": 2, "leaderTemplate": "{template:0}", "workerTemplate": "{template:1}"}
            }
        },
        (POD, POD),
    ),
    "AutoscalingRunnerSet": Kind(
        "actions.github.com/v1alpha1",
        {"spec": {"githubConfigUrl": '"https://github.com/org/repo"', "template": "{template:0}"}},
    ),
    "InferenceService": Kind(
        "serving.kserve.io/v1beta1",
        {"spec": {"predictor": "{spec:0}", "transformer": "{spec:1}"}},
        (KSERVE, POD),
        annotations={"serving.kserve.io/deploymentMode": "RawDeployment"},
    ),
    "LLMInferenceService": Kind(
        "serving.kserve.io/v1alpha1",
        {"spec": {"model": {"uri": '"hf://org/model"'}, "template": "{spec:0}", "prefill": {"template": "{spec:1}"}}},
        (POD, POD),
    ),
    "Workflow": Kind("argoproj.io/v1alpha1", {"spec": _argo({})}, (ARGO, ARGO)),
    "WorkflowTemplate": Kind("argoproj.io/v1alpha1", {"spec": _argo({})}, (ARGO, ARGO)),
    "ClusterWorkflowTemplate": Kind("argoproj.io/v1alpha1", {"spec": _argo({})}, (ARGO, ARGO)),
    "CronWorkflow": Kind(
        "argoproj.io/v1alpha1", {"spec": {"schedule": SCHEDULE, "workflowSpec": _argo({})}}, (ARGO, ARGO)
    ),
}

# Kinds the packs report and never rewrite (acceptsClaims false, or KServe serverless without the annotation).
REPORTED: dict[str, Kind] = {
    "Service": Kind("serving.knative.dev/v1", {"spec": {"template": "{template:0}"}}),
    "Job": Kind(
        "batch.volcano.sh/v1alpha1", {"spec": {"tasks": [{"name": "t", "replicas": 1, "template": "{template:0}"}]}}
    ),
    "InferenceService": Kind("serving.kserve.io/v1beta1", {"spec": {"predictor": "{spec:0}"}}, (KSERVE,)),
    "ServingRuntime": Kind(
        "serving.kserve.io/v1alpha1",
        {"spec": {"supportedModelFormats": [{"name": "pytorch"}], "containers": "{containers:0}"}},
    ),
    "ClusterServingRuntime": Kind(
        "serving.kserve.io/v1alpha1",
        {"spec": {"supportedModelFormats": [{"name": "pytorch"}], "containers": "{containers:0}"}},
    ),
    "TrainingRuntime": Kind(
        "trainer.kubeflow.org/v1alpha1",
        {
            "spec": {
                "template": {
                    "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": "{template:0}"}}}]}
                }
            }
        },
        jobs=frozenset({0}),
    ),
}


def fill(node: Any, values: dict[str, Any]) -> Any:
    """The skeleton with each placeholder string replaced by its value."""
    if isinstance(node, str) and node in values:
        return values[node]
    if isinstance(node, dict):
        return {k: fill(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [fill(v, values) for v in node]
    return node


def _paths(node: Any, at: tuple[Any, ...] = ()) -> dict[str, tuple[Any, ...]]:
    if isinstance(node, str) and node.startswith("{"):
        return {node: at}
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    out: dict[str, tuple[Any, ...]] = {}
    for k, v in items:
        out.update(_paths(v, (*at, k)))
    return out


def pod_specs(kind: Kind, obj: dict[str, Any]) -> list[Any]:
    """The object's pod specs in slot order (a pod template's spec, an Argo template, a KServe component; for a
    kind with a bare container list, {"containers": that list})."""
    paths = _paths(kind.body)
    out = []
    for i in range(len(kind.layouts)):
        if f"{{containers:{i}}}" in paths:
            out.append({"containers": _at(obj, paths[f"{{containers:{i}}}"])})
            continue
        path = paths.get(f"{{spec:{i}}}") or (*paths[f"{{template:{i}}}"], "spec")
        out.append(_at(obj, path))
    return out


def ray_params(kind: Kind, obj: dict[str, Any]) -> dict[int, Any]:
    """Each Ray group's rayStartParams by the slot of its pod spec."""
    paths = _paths(kind.body)
    return {int(p[5:-1]): _at(obj, at) for p, at in paths.items() if p.startswith("{ray:")}


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj
