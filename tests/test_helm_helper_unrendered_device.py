"""One resources helper included by two pods of one template (a server Deployment and a worker Job), the worker's
count 0 in the chart's values: the migration of the default render gives only the server a claim. Before, the
chart was manual work ("2 include(s) of the helper in 2 pod(s), the migration adds claims to 1 pod(s)"): the
claims could not be told apart. Now the rendered pods are paired with the template's pods in order, the server
wired from its claim and the worker like it (the helper's count at each call site decides, found by rendering:
the proof turns the worker's count on), each claim template named after its own workload. Real renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPER = """\
{{- define "app.resources" -}}
limits:
  cpu: "1"
  {{- if .gpus }}
  nvidia.com/gpu: {{ .gpus }}
  {{- end }}
{{- end -}}
"""
TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
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
            {{- include "app.resources" .Values.server | nindent 12 }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: worker
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: worker
          image: worker:1
          resources:
            {{- include "app.resources" .Values.worker | nindent 12 }}
"""
VALUES = "server:\n  gpus: 1\nworker:\n  gpus: 0\n"


def _objects(chart: Path, *sets: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for m in render_chart(chart, RenderOptions(set_values=sets)):
        for d in yaml.safe_load_all(m.text):
            if d:
                out.setdefault(d["kind"], []).append(d)
    return out


def _pod(objects: dict[str, list[dict[str, Any]]], kind: str) -> dict[str, Any]:
    return objects[kind][0]["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    files = {"templates/_helpers.tpl": HELPER, "templates/app.yaml": TEMPLATE, "values.yaml": VALUES}
    original = chart_with(tmp_path_factory.mktemp("original"), "app", files)
    fixed = chart_with(tmp_path_factory.mktemp("fixed"), "app", files)
    fix_chart(fixed)  # asserts the proof
    return original, fixed


def test_only_the_pod_with_devices_gets_a_claim(charts: tuple[Path, Path]) -> None:
    objects = _objects(charts[1])
    assert _pod(objects, "Deployment")["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    worker = _pod(objects, "Job")
    assert "resourceClaims" not in worker and "claims" not in worker["containers"][0]["resources"]
    assert [t["metadata"]["name"].startswith("server-") for t in objects["ResourceClaimTemplate"]] == [True]


def test_the_worker_asks_for_its_own_count_when_the_values_give_one(charts: tuple[Path, Path]) -> None:
    objects = _objects(charts[1], "worker.gpus=3")
    worker = _pod(objects, "Job")
    assert worker["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in str(worker["containers"][0]["resources"])
    (claim,) = worker["resourceClaims"]
    (template,) = [
        t for t in objects["ResourceClaimTemplate"] if t["metadata"]["name"] == claim["resourceClaimTemplateName"]
    ]
    assert template["metadata"]["name"].startswith("worker-")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3


def test_switched_off_the_chart_renders_as_before(charts: tuple[Path, Path]) -> None:
    original, fixed = charts
    for sets in ((), ("worker.gpus=3",)):
        off = ("server.dra.enabled=false", "worker.dra.enabled=false")  # the switch sits beside each count
        assert _objects(fixed, *sets, *off) == _objects(original, *sets)
