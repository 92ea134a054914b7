"""A GPU key and a shared RDMA HCA key (`rdma/hca`), each under a condition of its own, in one container (the shape of
kubeflow arena's PyTorchJob chart: `if gt (int $gpuCount) 0` around the GPU, `if .Values.enableRDMA` around the HCA).
The manifest migration moves the GPU to a claim and leaves the shared HCA a device-plugin request (report only in
rules/networking.yaml), so the rewrite migrates the GPU under its own condition and leaves the HCA key as the chart
writes it (was: "the device keys sit under different conditions; fix it by hand")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.render import RenderOptions, render_chart

POD = deployment(
    "{{ .Release.Name }}-train",
    """\
      containers:
        - name: train
          image: train:1
          resources:
            limits:
              {{- if gt (int .Values.gpuCount) 0 }}
              nvidia.com/gpu: {{ .Values.gpuCount | quote }}
              {{- end }}
              {{- if .Values.enableRDMA }}
              rdma/hca: "1"
              {{- end }}
""",
)
FILES = {"values.yaml": "gpuCount: 2\nenableRDMA: false\n", "templates/train.yaml": POD}


def _render(chart: Path, sets: tuple[str, ...]) -> str:
    options = RenderOptions(set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pod(stream: str) -> tuple[Any, ...]:
    """The pod's claims (name -> the requests of its ResourceClaimTemplate, without the API's defaults: the migration
    spells out `allocationMode: ExactCount`, the chart leaves it to the API), the container's claims and resources."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    specs = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    templates = {name: without_api_defaults(spec) for name, spec in specs.items()}
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    claims = {c["name"]: templates[c["resourceClaimTemplateName"]] for c in pod.get("resourceClaims", [])}
    resources = pod["containers"][0]["resources"]
    return claims, resources.get("claims"), resources.get("limits"), pod.get("tolerations")


def test_gpu_is_claimed_and_the_shared_hca_stays_a_device_plugin_request(tmp_path: Path) -> None:
    chart = chart_with(tmp_path / "fixed", "train", FILES)
    original = chart_with(tmp_path / "original", "train", FILES)
    fix_chart(chart)

    for sets in ((), ("enableRDMA=true",), ("gpuCount=0", "enableRDMA=true"), ("gpuCount=4",)):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        rewritten = _pod(_render(chart, sets))
        assert rewritten == _pod(migrated), sets
        assert ("rdma/hca" in (rewritten[2] or {})) == ("enableRDMA=true" in sets)
        assert _render(chart, (*sets, "dra.enabled=false")) == _render(original, sets)
