"""Pattern A with one pod per branch of an `if`/`else` in one template (an ollama Deployment when the backend is
ollama, a vLLM one otherwise), each asking for the device with the same values count. The chart is written for the
test, with the shape of the real chart it stands for. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, dra_render, fix_chart

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: {name}
        image: {name}
        resources:
          limits:
            memory: 8Gi
{key}
"""
BRANCHES = (
    '{{- if eq .Values.backend "ollama" }}\n'
    + POD.format(
        name="ollama",
        key='            {{- if .Values.gpu.enabled }}\n            nvidia.com/gpu: "{{ .Values.gpu.count }}"\n'
        "            {{- end }}",
    )
    + "{{- else }}\n"
    + POD.format(name="vllm", key='            nvidia.com/gpu: "{{ .Values.gpu.count }}"')
    + "{{- end }}\n"
)
VALUES = "backend: vllm\ngpu:\n  enabled: true\n  count: 1\n"


def test_one_pod_per_branch_each_gets_the_claim(tmp_path: Path) -> None:
    """Was: manual, 'the device keys sit under different conditions'. Now each branch's pod takes the claim in
    place of its device key, so whichever backend is chosen the pod renders with the claim and no device key."""
    chart = chart_with(tmp_path, "branches", {"templates/model.yaml": BRANCHES, "values.yaml": VALUES})
    fix_chart(chart)
    for backend in ("vllm", "ollama"):
        on = tmp_path / f"{backend}.yaml"
        on.write_text(f"backend: {backend}\ngpu: {{enabled: true, count: 2}}\n")
        _, counts, pods = dra_render(chart, on)
        assert list(counts.values()) == [2]
        pod = pods[backend]
        assert pod["containers"][0]["resources"]["limits"] == {"memory": "8Gi"}
        assert [c["name"] for c in pod["containers"][0]["resources"]["claims"]] == [pod["resourceClaims"][0]["name"]]
    off = tmp_path / "off.yaml"
    off.write_text("backend: ollama\ngpu: {enabled: false, count: 2}\n")
    docs, counts, pods = dra_render(chart, off)
    assert counts == {} and "resourceClaims" not in pods["ollama"]
