"""Pattern A in a template whose documents write their metadata as a flow mapping (`metadata: {name: jellyfin}`,
as dseif0x's arr chart does): the rewrite names the claim template from the workload's own name in that mapping, its
template actions kept, where it used to refuse ("the workload's metadata.name is not one line"). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

TEMPLATE = """\
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: transcode-cache}
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 6Gi}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: "{{ .Release.Name }}-transcode", labels: {app: transcode}}
spec:
  selector:
    matchLabels: {app: transcode}
  template:
    metadata:
      labels: {app: transcode}
    spec:
      containers:
        - name: transcode
          image: {{ .Values.image }}
          resources:
            limits:
              memory: "1000Mi"
              amd.com/gpu: 1
      volumes:
        - {name: cache, persistentVolumeClaim: {claimName: transcode-cache}}
"""


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"templates/transcode.yaml": TEMPLATE, "values.yaml": "image: example/transcode:1\n"}
    chart = chart_with(tmp_path_factory.mktemp("flow"), "media", files)
    fix_chart(chart)  # was: manual, "templates/transcode.yaml: the workload's metadata.name is not one line"
    return chart


def _render(chart: Path, values: str) -> list[Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def test_the_claim_template_is_named_after_the_workload_in_its_flow_metadata(fixed: Path) -> None:
    docs = _render(fixed, "dra: {enabled: true}\n")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["metadata"]["name"].startswith(f"{deployment['metadata']['name']}-")  # not the claim's PVC
    assert "amd.com/gpu" not in pod["containers"][0]["resources"]["limits"]


def test_the_switch_off_keeps_the_device_plugin_request(fixed: Path) -> None:
    docs = _render(fixed, "dra: {enabled: false}\n")
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["amd.com/gpu"] == 1
    assert "resourceClaims" not in pod
    assert sorted(d["kind"] for d in docs) == ["Deployment", "PersistentVolumeClaim"]
