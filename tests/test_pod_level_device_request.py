"""A device asked for in a pod's own resources (pod-level, `spec.template.spec.resources`): Kubernetes takes only
cpu, memory and hugepages there. A chart's library may render a values map there from Kubernetes 1.34 (DND-IT's
common, its top-level `resources`), so a user's GPU values end up in it. Was: 'spec.template.spec.resources is not a
pod spec dramigrate knows in Deployment; add the kind to a workloads file (--rules)', advice that cannot help."""

from __future__ import annotations

from conftest import deployment, run_dramigrate

POD_LEVEL = deployment(
    "worker",
    """\
      resources:
        limits:
          memory: 1Gi
          nvidia.com/gpu: 1
      containers:
        - name: main
          image: busybox
""",
)


def test_a_device_in_the_pods_own_resources_is_named_as_such_and_left_alone() -> None:
    code, out, err = run_dramigrate(["fix", "-"], stdin=POD_LEVEL)
    assert code == 0 and out == POD_LEVEL  # nothing to migrate: the request is not a container's
    assert (
        "nvidia.com/gpu at spec.template.spec.resources: this is the pod's own resources (pod-level), which take only "
        "cpu, memory and hugepages, so the API server refuses a device there; ask for it in a container's resources"
    ) in err, err
    assert "add the kind to a workloads file" not in err
