"""A template that reads the device count of a values resources map it passes through, reached through template
variables set to values paths and indexed by a variable naming the resource (adorsys' webank training:
`$training := .Values.training`, `$gpuResourceName := $training.gpu.resourceName`, then `index
$training.gpu.resources.limits $gpuResourceName | default 0` for a check that fails the render below 1). The DRA
values drop the device key from the map; the read now takes the count from `deviceCounts` beside it first, as it
does for a `.Values` path (`index (.Values.x.deviceCounts | default .Values.x.resources.limits) "nvidia.com/gpu"`).
Was: manual work, "reads training.gpu.resources.limits["nvidia.com/gpu"] itself ... in a form fix does not
rewrite". Proven by (L) and (D)."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_second_fix_quiet, chart_with, fix_chart, with_original

from dramigrate.helm.render import RenderOptions, render_chart

JOB = """\
{{- $training := .Values.training -}}
{{- $gpuResourceName := required "training.gpu.resourceName is required" $training.gpu.resourceName -}}
{{- $gpuLimit := index $training.gpu.resources.limits $gpuResourceName | default 0 -}}
{{- if lt (int $gpuLimit) 1 }}{{ fail (printf "limits.%s must be 1 or more" $gpuResourceName) }}{{- end }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: train:1
          env:
            - name: GPUS
              value: {{ $gpuLimit | quote }}
          resources:
            {{- toYaml $training.gpu.resources | nindent 12 }}
"""
VALUES = """\
training:
  gpu:
    resourceName: nvidia.com/gpu
    resources:
      limits: {cpu: "8", nvidia.com/gpu: 1}
"""
GPU = """\
training:
  gpu:
    resources:
      limits: {cpu: "8", nvidia.com/gpu: 2}
"""


def _job(chart: Path, files: tuple[Path, ...]) -> dict:
    import yaml

    docs = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    (job,) = [d for d in docs if d["kind"] == "Job"]
    return job["spec"]["template"]["spec"]["containers"][0]


def test_a_count_indexed_through_values_variables_reads_the_dra_values_counts(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "train", {"templates/job.yaml": JOB, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    fix_chart(chart, values=(gpu,))  # was: manual work, the read in a form fix does not rewrite

    text = (chart / "templates" / "job.yaml").read_text()
    assert (
        "index ($.Values.training.gpu.deviceCounts | default $training.gpu.resources.limits) $gpuResourceName" in text
    )
    assert _job(chart, (gpu,))["env"] == [{"name": "GPUS", "value": "2"}]
    on = _job(chart, with_original(tmp_path / "gpu-dra.yaml"))  # the check passes, the count read from deviceCounts
    assert on["env"] == [{"name": "GPUS", "value": "2"}]
    assert "nvidia.com/gpu" not in str(on["resources"]) and on["resources"]["claims"]
    assert_second_fix_quiet(chart, "-f", str(gpu))
