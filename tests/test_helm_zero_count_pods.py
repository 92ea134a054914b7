"""A node agent DaemonSet that writes `nvidia.com/gpu: 0  # uses no GPU compute` in its limits and picks GPU nodes
with a node label of its own (`nodeSelector: {nvidia.com/gpu: "true"}`), beside a Deployment asking for GPUs from
values (pattern A). The manifest migration drops the agent's key, gives it no claim, keeps its node label (there is no
request to move it into) and adds the toleration the ExtendedResourceToleration admission plugin gave it (the plugin
reads the names of the resources a pod asks for, whatever their count), so the agent still lands on tainted GPU
nodes. The rewrite does the same behind the switch (was: the whole chart refused, "the migration adds no claim to
this template's pods")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.server.gpuLimit | default 1 }}
""",
)
AGENT = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector:
        nvidia.com/gpu: "true"
      {{- with .Values.agent.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: agent
          image: agent:1
          resources:
            limits:
              cpu: 100m
              nvidia.com/gpu: 0     # agent uses NO GPU compute
"""
VALUES = """\
server:
  gpuLimit: 1
agent:
  tolerations: []
"""


def _render(chart: Path, sets: tuple[str, ...] = ()) -> str:
    options = RenderOptions(set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _agent(stream: str) -> dict[str, Any]:
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(stream) if d and d["kind"] == "DaemonSet"]
    return dict(pod)


def test_a_pod_asking_for_zero_devices_keeps_its_label_and_gets_the_plugins_toleration(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/server.yaml": SERVER, "templates/agent.yaml": AGENT}
    chart, original = chart_with(tmp_path / "fixed", "agent", files), chart_with(tmp_path / "original", "agent", files)
    fix_chart(chart)

    assert "nvidia.com/gpu: 0" in (chart / "templates/agent.yaml").read_text()  # kept for the device plugin
    for sets in ((), ("server.gpuLimit=2",), ("agent.tolerations[0].operator=Exists",)):
        assert _render(chart, ("dra.enabled=false", *sets)) == _render(original, sets), sets
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        assert _agent(_render(chart, sets)) == _agent(migrated), sets

    agent = _agent(_render(chart))
    assert agent["nodeSelector"] == {"nvidia.com/gpu": "true"}
    assert "resourceClaims" not in agent and agent["containers"][0]["resources"] == {"limits": {"cpu": "100m"}}
    assert agent["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # a values list that tolerates every taint already: nothing added, as the migration adds nothing
    assert _agent(_render(chart, ("agent.tolerations[0].operator=Exists",)))["tolerations"] == [{"operator": "Exists"}]
    claim_templates = [d for d in yaml.safe_load_all(_render(chart)) if d and d["kind"] == "ResourceClaimTemplate"]
    assert len(claim_templates) == 1  # the server's only


def test_a_chart_whose_only_pods_ask_for_zero_devices_is_left_as_it_is(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "agent", {"values.yaml": VALUES, "templates/agent.yaml": AGENT})
    code, out, err = dramigrate_in_process(["fix", str(chart)])
    assert code != 0 and "Traceback" not in err
    assert "templates/agent.yaml" in out + err
    assert (chart / "templates/agent.yaml").read_text() == AGENT
