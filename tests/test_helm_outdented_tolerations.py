"""A CronJob template copied from a Deployment keeps `{{- toYaml . | nindent 8 }}` under a `tolerations:` key that sits
at column 10: any list a user sets renders outside the key, a YAML parse error. The DRA values add the device
plugin's toleration to that list (pattern B), as does the DRA branch of a literal device key (pattern A), so fix
refused the chart ("the rewritten chart does not render"). Both rewrites now indent the list under its key; with the
list empty (every render that worked before) the chart renders as it did, and with a list set the rewritten chart
(switch off) renders what the original renders with only that line indented."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ .Release.Name }}-job
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: job
              image: batch
              resources:
                {{- toYaml .Values.resources | nindent 16 }}
          {{- with .Values.tolerations }}
          tolerations:
            {{- toYaml . | nindent 8 }}
          {{- end }}
"""
VALUES = "resources: {}\ntolerations: []\n"
GPU = "resources:\n  limits:\n    nvidia.com/gpu: 2\n"


def _pod(chart: Path, files: tuple[Path, ...]) -> dict[str, Any]:
    (job,) = [
        d
        for m in render_chart(chart, RenderOptions(values_files=files))
        for d in yaml.safe_load_all(m.text)
        if d and d["kind"] == "CronJob"
    ]
    return job["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def test_a_tolerations_list_written_outside_its_key_is_indented_and_proven(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "cron", {"templates/cronjob.yaml": CRONJOB, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    before = _pod(chart, (gpu,))

    fix_chart(chart, values=(gpu,))  # was: refused, the DRA values' toleration did not parse

    template = (chart / "templates/cronjob.yaml").read_text()
    assert "tolerations:\n            {{- toYaml . | nindent 12 }}" in template
    assert _pod(chart, (gpu,)) == before  # the user's values alone: as before
    pod = _pod(chart, (gpu, tmp_path / "gpu-dra.yaml"))
    assert pod["resourceClaims"] and "nvidia.com/gpu" not in str(pod["containers"][0].get("resources"))
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_a_list_indented_at_its_keys_column_is_left_as_written(tmp_path: Path) -> None:
    valid = CRONJOB.replace("nindent 8", "nindent 10")  # items at the key's own column: valid YAML for a list
    chart = chart_with(tmp_path, "cron", {"templates/cronjob.yaml": valid, "values.yaml": VALUES})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)

    fix_chart(chart, values=(gpu,))

    assert "{{- toYaml . | nindent 10 }}" in (chart / "templates/cronjob.yaml").read_text()


def test_a_literal_device_key_beside_an_outdented_list_is_switched_and_proven(tmp_path: Path) -> None:
    literal = CRONJOB.replace(
        "{{- toYaml .Values.resources | nindent 16 }}", "limits:\n                  nvidia.com/gpu: {{ .Values.gpus }}"
    )
    chart = chart_with(
        tmp_path, "cron", {"templates/cronjob.yaml": literal, "values.yaml": "gpus: 1\ntolerations: []\n"}
    )
    before = _pod(chart, ())

    fix_chart(chart)  # pattern A: was refused, the DRA branch's toleration did not parse

    template = (chart / "templates/cronjob.yaml").read_text()
    assert "nindent 8" not in template
    off = tmp_path / "off.yaml"
    off.write_text("dra:\n  enabled: false\n")
    assert _pod(chart, (off,)) == before
    pod = _pod(chart, ())
    assert pod["resourceClaims"] and "limits" not in pod["containers"][0]["resources"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
