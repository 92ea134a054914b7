"""The device toleration of the pass-through rewrite (patterns B and D) joins the tolerations a pod writes itself in
two shapes that took a second `tolerations:` key beside them, which strict readers (`kubectl apply --server-side`,
Flux) refuse: a helper given the map's parent that writes the key (simstudio's `include "sim.tolerations"
.Values.ollama`), and a pod whose containers come from a `range` over a values map, each with its own resources map,
its tolerations from a list after them (NVIDIA's AI blueprint subcharts: `{{- with $topValues.tolerations }}`).

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
T136 = Target.parse("1.36")

HELPERS = """\
{{- define "app.tolerations" -}}
{{- if .tolerations }}
tolerations:
  {{- toYaml .tolerations | nindent 2 }}
{{- end }}
{{- end }}
"""
SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      {{- include "app.tolerations" .Values.server | nindent 6 }}
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.server.resources | nindent 12 }}
""",
)
# a pod without devices that renders the chart's top-level list
WEB = deployment(
    "{{ .Release.Name }}-web",
    """\
      tolerations:
        {{- toYaml .Values.tolerations | nindent 8 }}
      containers:
        - name: web
          image: web:1
""",
)
VALUES = """\
tolerations: []
server:
  tolerations:
    - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}
  resources:
    limits:
      nvidia.com/gpu: 1
"""

# the containers of a pod from a `range` over a values map, the pod's tolerations after them
CONTAINERS = """\
{{- $top := .Values }}
{{- $containers := .Values.app.containers }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      {{- range $name, $container := $containers }}
        - name: {{ $name }}
          image: {{ $container.image }}
          resources:
            {{- toYaml $container.resources | nindent 12 }}
      {{- end }}
      {{- with $top.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
CONTAINERS_VALUES = """\
tolerations: []
app:
  containers:
    main:
      image: main:1
      resources:
        limits:
          nvidia.com/gpu: 2
"""


def _fixed(tmp_path: Path, files: dict[str, str]) -> Path:
    chart = chart_with(tmp_path, "app", files)
    before = render_chart(chart, RenderOptions())[0].text
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert render_chart(chart, RenderOptions())[0].text.replace("0.1.1", "0.1.0") == before  # without DRA: as before
    return chart


def _pods(chart: Path, *files: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """Each Deployment's pod spec by name, with its document's text."""
    out = {}
    for m in render_chart(chart, RenderOptions(values_files=files)):
        for text in m.text.split("\n---"):
            doc = yaml.safe_load(text)
            if doc and doc["kind"] == "Deployment":
                out[doc["metadata"]["name"]] = (doc["spec"]["template"]["spec"], text)
    return out


def _own(tmp_path: Path, text: str) -> Path:
    own = tmp_path / "own.yaml"
    own.write_text(text)
    return own


def test_a_helper_that_writes_the_pods_tolerations_gets_them_joined(tmp_path: Path) -> None:
    """`{{- include "app.tolerations" .Values.server | nindent 6 }}` writes the GPU pod's `tolerations:`: the call
    gets the map with its list joined to the DRA values' `server.resourceTolerations`, so the pod has one
    `tolerations:` key, and a user's later values file that sets `server.tolerations` keeps the device's toleration
    (was: a second `tolerations:` key beside the call, and fix wrote nothing)."""
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "templates/web.yaml": WEB}
    chart = _fixed(tmp_path, {**files, "values.yaml": VALUES})
    pods = _pods(chart, chart / "values-dra.yaml")
    server, text = pods["release-name-server"]
    assert [t["key"] for t in server["tolerations"]] == ["sku", "nvidia.com/gpu"]
    assert text.count("tolerations:") == 1, text
    assert [c["name"] for c in server["resourceClaims"]] == ["gpu"]
    assert "tolerations" not in yaml.safe_load((chart / "values-dra.yaml").read_text())["server"]
    later = _own(tmp_path, "server:\n  tolerations:\n    - {key: dedicated, operator: Exists}\n")
    server, text = _pods(chart, chart / "values-dra.yaml", later)["release-name-server"]
    assert [t["key"] for t in server["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    assert text.count("tolerations:") == 1, text
    assert pods["release-name-web"][0] == _pods(chart)["release-name-web"][0]  # the other pod: as it was


def test_containers_of_a_range_join_their_tolerations_to_the_pods_list_after_them(tmp_path: Path) -> None:
    """Each container of a `range` over `app.containers` has its own map: the DRA tolerations gathered over the
    range join the pod's `{{- with $top.tolerations }}` after the containers, so a user's tolerations and the
    device's render under one key (was: a second `tolerations:` key before the containers, which a user's
    `tolerations` clashed with, and fix wrote nothing)."""
    chart = _fixed(tmp_path, {"templates/app.yaml": CONTAINERS, "values.yaml": CONTAINERS_VALUES})
    app, text = _pods(chart, chart / "values-dra.yaml")["release-name-app"]
    assert [t["key"] for t in app["tolerations"]] == ["nvidia.com/gpu"]
    assert [c["name"] for c in app["resourceClaims"]] == ["gpu"]
    later = _own(tmp_path, "tolerations:\n  - {key: dedicated, operator: Exists}\n")
    app, text = _pods(chart, chart / "values-dra.yaml", later)["release-name-app"]
    assert [t["key"] for t in app["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    assert text.count("tolerations:") == 1, text


def test_a_second_fix_with_a_values_file_keeps_the_helpers_list_joined(tmp_path: Path) -> None:
    """fix run again on the fixed chart with a GPU values file of the user's: the call joined before still counts as
    the pod's list, so the file's DRA variant adds the toleration under its own key, which a later file that sets
    `server.tolerations` keeps (was: the second fix read the list as joined nowhere, would have put the toleration
    in values-dra.yaml's copy of it, and refused: `values-dra.yaml exists already`)."""
    files = {"templates/_helpers.tpl": HELPERS, "templates/server.yaml": SERVER, "values.yaml": VALUES}
    chart = _fixed(tmp_path, files)
    gpu = _own(tmp_path, "server:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    outcome = run_chart(chart, ChartOptions(values_files=(gpu,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    later = tmp_path / "pool.yaml"
    later.write_text("server:\n  tolerations:\n    - {key: dedicated, operator: Exists}\n")
    server, text = _pods(chart, chart / "values-dra.yaml", tmp_path / "own-dra.yaml", later)["release-name-server"]
    assert [t["key"] for t in server["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    assert text.count("tolerations:") == 1, text
