"""A chart that tolerates the GPU taint itself, in its pod's literal list, under a condition on one of the two knobs
that ask for the GPU (porter-dev's job chart: the user's list first, then its own items, the `nvidia.com/gpu` one
under `if` the request while the limit alone asks for the device too). With the request unset the migrated pod
tolerates the taint (the DRA toleration) and the rewrite's did not, so fix refused the chart. The DRA entry now renders
where the pod asks for the device and neither the chart's own item nor the user's list tolerates the taint: once,
as `fix -` of the original render has it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

JOB = deployment(
    "{{ .Release.Name }}-job",
    """\
      containers:
        - name: job
          image: job:1
          resources:
            requests:
              cpu: 100m
              {{- if .Values.resources.requests.gpu }}
              nvidia.com/gpu: {{ .Values.resources.requests.gpu }}
              {{- end }}
            limits:
              {{- if .Values.resources.limits.gpu }}
              nvidia.com/gpu: {{ .Values.resources.limits.gpu }}
              {{- end }}
      tolerations:
      {{- if .Values.tolerations }}
      {{- toYaml .Values.tolerations | nindent 8 }}
      {{- end }}
        - key: removable
          operator: Equal
          value: "true"
          effect: NoSchedule
      {{- if .Values.resources.requests.gpu }}
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
      {{- end }}
""",
)
VALUES = "resources:\n  requests:\n    gpu: 1\n  limits:\n    gpu: 1\ntolerations: []\n"
GPU_TOLERATED = ("tolerations[0].key=nvidia.com/gpu", "tolerations[0].operator=Exists")
VALUE_SETS = {
    "request and limit": (),
    "the limit alone": ("resources.requests.gpu=null",),
    "the limit alone, the user's list tolerating the taint": ("resources.requests.gpu=null", *GPU_TOLERATED),
    "request and limit, the user's list tolerating the taint": GPU_TOLERATED,
}


def _pod(docs: list[Any]) -> dict[str, Any]:
    (job,) = [d for d in docs if d and d.get("kind") == "Deployment"]
    return job["spec"]["template"]["spec"]


def _render(chart: Path, sets: tuple[str, ...]) -> str:
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(set_values=sets)))


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("own-toleration")
    original = chart_with(root / "original", "job", {"values.yaml": VALUES, "templates/job.yaml": JOB})
    fixed = root / "fixed" / "job"
    shutil.copytree(original, fixed)
    fix_chart(fixed)  # refused before: the limit alone gave a pod without the DRA toleration
    return original, fixed


@pytest.mark.parametrize("label", VALUE_SETS)
def test_the_dra_toleration_renders_where_the_migration_adds_it(charts: tuple[Path, Path], label: str) -> None:
    original, fixed = charts
    sets = VALUE_SETS[label]
    code, migrated, err = dramigrate_in_process(["fix", "-", "--exit-zero"], stdin=_render(original, sets))
    assert code == 0, err

    want = _pod(list(yaml.safe_load_all(migrated)))
    got = _pod(list(yaml.safe_load_all(_render(fixed, sets))))

    assert got["resourceClaims"] and "nvidia.com/gpu" not in str(got["containers"][0]["resources"]), label
    assert got["tolerations"] == want["tolerations"], label
    assert any(t.get("key") == "nvidia.com/gpu" for t in got["tolerations"]), label
