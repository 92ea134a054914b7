"""An umbrella chart (oracle's oci-gpu-scanner-plugin in shape) whose subchart takes a GPU resources map (pattern B),
whose own Job takes another map under a switch its defaults leave off (`check.enabled: false`), and whose own
DaemonSets tolerate from each item of a values list (`agents[0].tolerations`).

- A user's values file after values-dra.yaml that sets every tolerations list sets the one inside a list item by
  writing the list whole; the proof set it in its migrated render but not in the later file, so the rewrite was
  refused ("renders differently ... tolerations[0].effect"), for the defaults too.
- `--set check.enabled=true` turns on a map the chart ships: values-dra.yaml migrates it too, as for a chart
  without subcharts (was: manual, "the device request comes from values no DRA values file covers").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, dramigrate_in_process

from dramigrate.helm.render import RenderOptions, render_chart

EXPORTER = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-exporter
spec:
  selector:
    matchLabels: {app: exporter}
  template:
    metadata:
      labels: {app: exporter}
    spec:
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: exporter
          image: exporter:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
CHECK = """\
{{- if .Values.check.enabled }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-check
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: check
          image: check:1
          resources:
            {{- toYaml .Values.check.resources | nindent 12 }}
{{- end }}
"""
AGENTS = """\
{{- range .Values.agents }}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ $.Release.Name }}-{{ .name }}
spec:
  selector:
    matchLabels: {app: {{ .name }}}
  template:
    metadata:
      labels: {app: {{ .name }}}
    spec:
      tolerations:
        {{- toYaml .tolerations | nindent 8 }}
      containers:
        - name: agent
          image: agent:1
{{- end }}
"""
VALUES = """\
exporter:
  tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  resources:
    limits:
      nvidia.com/gpu: 1
check:
  enabled: false
  resources:
    limits:
      nvidia.com/gpu: 2
agents:
  - name: probe
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
"""
UMBRELLA = "apiVersion: v2\nname: scanner\nversion: 0.1.0\ndependencies:\n  - name: exporter\n    version: 0.1.0\n"


def _umbrella(root: Path) -> Path:
    files = {"values.yaml": VALUES, "templates/check.yaml": CHECK, "templates/agents.yaml": AGENTS}
    chart = chart_with(root, "scanner", files)
    (chart / "Chart.yaml").write_text(UMBRELLA)
    chart_with(
        chart / "charts", "exporter", {"values.yaml": "tolerations: []\nresources: {}\n", "templates/ds.yaml": EXPORTER}
    )
    return chart


def _objects(chart: Path, files: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    rendered = render_chart(chart, RenderOptions(values_files=files, set_values=sets, kube_version="1.34"))
    docs = [d for m in rendered for d in yaml.safe_load_all(m.text) if d]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def test_a_later_file_sets_the_tolerations_of_a_list_item(tmp_path: Path) -> None:
    chart = _umbrella(tmp_path)

    code, _, err = dramigrate_in_process(["fix", str(chart)])

    assert code == 0 and "rewrite proven" in err, err
    assert "a values file of yours after the DRA values that sets every tolerations list (DRA values" in err
    mine = tmp_path / "mine.yaml"
    mine.write_text("agents:\n  - name: probe\n    tolerations: [{key: example.com/dedicated}]\n")
    out = _objects(chart, (chart / "values-dra.yaml", mine))
    probe = out["DaemonSet/release-name-probe"]["spec"]["template"]["spec"]
    assert probe["tolerations"] == [{"key": "example.com/dedicated"}]
    exporter = out["DaemonSet/release-name-exporter"]["spec"]["template"]["spec"]
    assert exporter["resourceClaims"] and "nvidia.com/gpu" not in yaml.safe_dump(exporter["containers"])


def test_a_set_that_turns_on_a_map_of_the_umbrella_is_covered_by_values_dra(tmp_path: Path) -> None:
    chart = _umbrella(tmp_path)

    code, _, err = dramigrate_in_process(["fix", str(chart), "--set", "check.enabled=true"])

    assert code == 0 and "add -f values-dra.yaml" in err, err
    out = _objects(chart, (chart / "values-dra.yaml",), ("check.enabled=true",))
    check = out["Job/release-name-check"]["spec"]["template"]["spec"]
    assert check["containers"][0]["resources"]["claims"] and check["resourceClaims"]
    assert "nvidia.com/gpu" not in yaml.safe_dump(check["containers"])
    (claimed,) = [c["resourceClaimTemplateName"] for c in check["resourceClaims"]]
    requests = out[f"ResourceClaimTemplate/{claimed}"]["spec"]["spec"]["devices"]["requests"]
    assert [r["exactly"]["count"] for r in requests] == [2]
    assert "Job/release-name-check" not in _objects(chart, (chart / "values-dra.yaml",))  # the defaults: no Job
