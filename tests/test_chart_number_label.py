"""A device node label whose value a template writes from a values number (`nvidia.com/gpu.memory Gt
{{ .Values.minGpuMemory | quote }}` in a required node affinity: lightray's ray worker) is a label from values, as a
model name from values is: the rewrite keeps it on the pods and warns (chart-label-from-values) instead of refusing
the chart. Was: manual work, "translate the label by hand", since only a value with letters was paired with its
values key. A number held by two values keys is not paired (which one sets it is unknown): still manual. Synthetic
chart, real Helm renders."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, deployment, dramigrate_in_process

from dramigrate.helm.render import RenderOptions, render_chart

WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: nvidia.com/gpu.memory
                operator: Gt
                values:
                - {{ .Values.minGpuMemory | quote }}
      containers:
        - name: worker
          image: busybox
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus | quote }}
""",
)


def _chart(tmp_path: Path, values: str) -> Path:
    return chart_with(tmp_path, "ray", {"templates/worker.yaml": WORKER, "values.yaml": values})


def _pod(chart: Path) -> dict:
    docs = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    return next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_a_number_label_from_values_stays_on_the_pods_with_a_warning(tmp_path: Path) -> None:
    chart = _chart(tmp_path, 'gpus: "1"\nminGpuMemory: "15000"\n')
    before = _pod(chart)
    code, out, err = dramigrate_in_process(["fix", chart])
    assert code == 0 and "rewrite proven" in err, out + err
    assert "warning [chart-label-from-values]" in err and "nvidia.com/gpu.memory from minGpuMemory" in err, err

    pod = _pod(chart)  # the DRA switch on by default: the claim, and the pod's node selection as it was
    assert pod["affinity"] == before["affinity"]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"].get("limits", {})
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]


def test_a_number_two_values_keys_hold_is_still_manual(tmp_path: Path) -> None:
    chart = _chart(tmp_path, 'gpus: "1"\nminGpuMemory: "15000"\nshmSize: "15000"\n')
    code, out, err = dramigrate_in_process(["fix", chart])
    assert "needs manual work" in err and "nvidia.com/gpu.memory in a required node affinity" in err, err
    assert not (chart / "templates" / "resourceclaimtemplate.yaml").exists()
