"""The device toleration of the pass-through rewrite (pattern B) in a pod that writes its own literal tolerations list
only inside an `if` of its own, items with values expressions (smartx's h2pc agents tolerate their bind taints
unless a scheduler of another kind places them). The DRA toleration goes at that list's end where the `if` renders
it, and into a list of its own where it does not: never a second `tolerations:` key (was: one after the containers
and the pod's own after it, which the proof refused, and fix wrote nothing).

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()

AGENT = deployment(
    "{{ .Release.Name }}-agent",
    """\
      initContainers:
{{- if .Values.ollama.enabled }}
        - name: ollama
          image: ollama:1
          resources:
{{- .Values.ollama.resources | default dict | toYaml | nindent 12 }}
          restartPolicy: Always
{{- end }}
      containers:
        - name: agent
          image: agent:1
{{- if not .Values.vine.enabled }}
      tolerations:
        - key: {{ .Values.bindKey | quote }}
          operator: Exists
          effect: NoExecute
{{- end }}
      volumes:
        - name: data
          emptyDir: {}
""",
)
VALUES = """\
bindKey: example.org/bind
vine:
  enabled: false
ollama:
  enabled: true
  resources:
    limits:
      nvidia.com/gpu: "1"
"""


def _pod(chart: Path, *files: Path) -> tuple[dict[str, Any], str]:
    """The Deployment's pod spec and its document's text."""
    text = render_chart(chart, RenderOptions(values_files=files))[0].text
    return yaml.safe_load(text)["spec"]["template"]["spec"], text


def test_the_toleration_joins_the_pods_list_inside_its_if_and_stands_alone_outside(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "agent", {"templates/agent.yaml": AGENT, "values.yaml": VALUES})
    before = _pod(chart)[1]
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _pod(chart)[1].replace("0.1.1", "0.1.0") == before  # without the DRA values: as before
    dra = chart / "values-dra.yaml"
    pod, text = _pod(chart, dra)
    assert text.count("tolerations:") == 1, text
    assert [t["key"] for t in pod["tolerations"]] == ["example.org/bind", "nvidia.com/gpu"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert "nvidia.com/gpu" not in str(pod["initContainers"][0]["resources"].get("limits"))
    vine = tmp_path / "vine.yaml"
    vine.write_text("vine:\n  enabled: true\n")
    pod, text = _pod(chart, dra, vine)  # the pod's own list off: the device's toleration alone
    assert text.count("tolerations:") == 1, text
    assert [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu"]
    off = tmp_path / "off.yaml"
    off.write_text("ollama:\n  enabled: false\n")
    pod, text = _pod(chart, dra, off)  # no device container: the pod's own list only
    assert [t["key"] for t in pod["tolerations"]] == ["example.org/bind"]
    assert "resourceClaims" not in pod
