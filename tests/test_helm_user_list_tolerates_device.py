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
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

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

    code, migrated, err = dramigrate_in_process(["fix", "-", "--exit-zero"], stdin=_render(original, TOLERATING))
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
        code, migrated, err = dramigrate_in_process(["fix", "-", "--exit-zero"], stdin=_render(original, sets))
        assert code == 0, err
        assert _pod(_render(fixed, sets))["tolerations"] == _pod(migrated)["tolerations"]
    assert any(label.endswith("set to tolerate nvidia.com/gpu") for label in outcome.checked), outcome.report()


KEYED = deployment(
    "{{ .Release.Name }}-job",
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
        - name: job
          image: job:1
          resources:
            limits:
              {{- if gt (int .Values.gpuCount) 0 }}
              nvidia.com/gpu: {{ .Values.gpuCount }}
              {{- end }}
              {{- range $key, $value := .Values.devices }}
              {{ $key }}: {{ $value }}
              {{- end }}
""",
)


AMD = ("gpuCount=1", "devices.amd\\.com/gpu=1")  # arena submit --gpus 1 --device amd.com/gpu=1


def test_a_device_of_a_values_map_the_users_list_tolerates_gets_no_second_toleration(tmp_path: Path) -> None:
    """arena's charts with `--device amd.com/gpu=1` (a `range` over `.Values.devices` beside the chart's own GPU
    key, keyedmap.py): the DRA branch wrote a toleration for each device of the map, and the chart's own GPU's, without
    checking the user's list; with a list tolerating them the rewritten chart had each twice, and was refused."""
    values = "gpuCount: 0\ndevices: {}\ntolerations: []\n"
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpuCount: 1\ndevices:\n  amd.com/gpu: 1\n")
    original = chart_with(tmp_path / "original", "job", {"values.yaml": values, "templates/job.yaml": KEYED})
    fixed = tmp_path / "fixed" / "job"
    shutil.copytree(original, fixed)

    outcome = fix_chart(fixed, values=(amd,))  # was: refused ("renders differently from the migrated original")

    assert any("set to tolerate amd.com/gpu" in label for label in outcome.checked), outcome.report()
    amd_tolerated = ("tolerations[0].key=amd.com/gpu", "tolerations[0].operator=Exists")
    for sets in (TOLERATING, amd_tolerated, ()):
        code, migrated, err = dramigrate_in_process(["fix", "-", "--exit-zero"], stdin=_render(original, (*AMD, *sets)))
        assert code == 0, err
        got = _pod(_render(fixed, (*AMD, *sets)))
        assert got["resourceClaims"]
        assert got["tolerations"] == _pod(migrated)["tolerations"], sets
    keys = [t["key"] for t in _pod(_render(fixed, (*AMD, *amd_tolerated)))["tolerations"]]
    assert keys == ["amd.com/gpu", "nvidia.com/gpu"]  # the user's, then the chart's own GPU's: amd.com/gpu once
