"""A chart that writes the user's tolerations field by field in a `range` under `if ne (len .Values.tolerations) 0`
(kubeflow arena's charts): where the user's list tolerates the GPU taint itself (GPU values often do), the migration
adds no toleration, while the rewrite's DRA branch added a second one; the proof never tried such a list (only one
of another key), so the rewrite was called proven. The proof now also sets every tolerations list of the values to
tolerate the devices' taints (and, with several devices, the first one's alone), and each DRA entry renders only where
the user's list does not tolerate its own taint (one tolerating the GPU's does not tolerate an EFA NIC's)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart, run_dramigrate

from dramigrate.helm.render import RenderOptions, render_chart

ARENA = deployment(
    "{{ .Release.Name }}-serve",
    """\
      {{- if ne (len .Values.tolerations) 0 }}
      tolerations:
      {{- range $t := .Values.tolerations }}
      - {{- if $t.key }}
        key: "{{ $t.key }}"
        {{- end }}
        {{- if $t.operator }}
        operator: "{{ $t.operator }}"
        {{- end }}
      {{- end }}
      {{- end }}
      containers:
        - name: serve
          image: serve:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpuCount }}
""",
)
VALUES = "gpuCount: 1\ntolerations: []\n"
TOLERATING = ("tolerations[0].key=nvidia.com/gpu", "tolerations[0].operator=Exists")


def _pod(stream: str) -> dict[str, Any]:
    (serve,) = [d for d in yaml.safe_load_all(stream) if d and d.get("kind") == "Deployment"]
    return serve["spec"]["template"]["spec"]


def _render(chart: Path, sets: tuple[str, ...]) -> str:
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(set_values=sets)))


def test_no_second_gpu_toleration_where_the_users_list_tolerates_it(tmp_path: Path) -> None:
    original = chart_with(tmp_path / "original", "serve", {"values.yaml": VALUES, "templates/serve.yaml": ARENA})
    fixed = tmp_path / "fixed" / "serve"
    shutil.copytree(original, fixed)

    outcome = fix_chart(fixed)

    code, migrated, err = run_dramigrate(["fix", "-", "--exit-zero"], stdin=_render(original, TOLERATING))
    assert code == 0, err
    got = _pod(_render(fixed, TOLERATING))
    assert got["resourceClaims"]
    assert got["tolerations"] == _pod(migrated)["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert any("set to tolerate nvidia.com/gpu" in label for label in outcome.checked), outcome.report()


TWO_DEVICES = deployment(
    "{{ .Release.Name }}-train",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: train
          image: train:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
              vpc.amazonaws.com/efa: {{ .Values.nics }}
""",
)


def test_each_device_taint_is_checked_on_its_own(tmp_path: Path) -> None:
    """A pod asking for a GPU and an EFA NIC, where the user's list tolerates the GPU's taint only: the migration
    adds the EFA toleration alone, and so does the rewritten chart (it added both: a second GPU toleration)."""
    values = "gpus: 1\nnics: 1\ntolerations: []\n"
    original = chart_with(tmp_path / "original", "train", {"values.yaml": values, "templates/train.yaml": TWO_DEVICES})
    fixed = tmp_path / "fixed" / "train"
    shutil.copytree(original, fixed)

    outcome = fix_chart(fixed)

    keys = [t["key"] for t in _pod(_render(fixed, TOLERATING))["tolerations"]]
    assert keys == ["nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    for sets in (TOLERATING, ()):
        code, migrated, err = run_dramigrate(["fix", "-", "--exit-zero"], stdin=_render(original, sets))
        assert code == 0, err
        assert _pod(_render(fixed, sets))["tolerations"] == _pod(migrated)["tolerations"]
    assert any(label.endswith("set to tolerate nvidia.com/gpu") for label in outcome.checked), outcome.report()
