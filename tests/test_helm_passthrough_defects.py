"""Defects of the pass-through rewrite (patterns B and C) seen on real charts: a values file that swaps the chart's
default device for another vendor's with a null.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, dra_render, fix_chart

SERVER = """\
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
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
NVIDIA_DEFAULT = 'resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: "1"\n'
# the chart's commented alternative as a values file: a null deletes the NVIDIA default, the AMD key takes its place
AMD = 'resources:\n  limits:\n    nvidia.com/gpu: null\n    amd.com/gpu: "2"\n'


def test_a_null_that_deletes_the_default_device_key_is_passed_through(tmp_path: Path) -> None:
    """A `-f` file sets the chart's default `nvidia.com/gpu` to null and asks for `amd.com/gpu`: Helm deletes the
    null key, so the map still reaches the pod as is and the rewrite is proven, its DRA variant asking for the two
    AMD GPUs and no NVIDIA one (was: manual, 'the values map resources is not passed through as is')."""
    chart = chart_with(tmp_path, "server", {"values.yaml": NVIDIA_DEFAULT, "templates/server.yaml": SERVER})
    amd = tmp_path / "amd.yaml"
    amd.write_text(AMD)
    fix_chart(chart, values=(amd,))
    out, counts, pods = dra_render(chart, tmp_path / "amd-dra.yaml")
    (limits,) = [c["resources"]["limits"] for c in pods["release-name-server"]["containers"]]
    assert limits == {"cpu": 2}
    (claim,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.amd.com"
    assert list(counts.values()) == [2]
