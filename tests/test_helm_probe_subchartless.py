"""An umbrella's probe renders leave out the documents of subcharts the probed keys cannot reach (subchartless.py):
nebuly-platform's loki and OpenTelemetry collector were two thirds of every probe render and ask for no device.
The findings, the value sets and the rewrite are those of full renders; a subchart that asks for a device, a key that
reaches a subchart, and a pruned copy that does not render keep the full render. Renders are real."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment
from test_chart_speed import shown
from test_helm_idiomatic import RULES, T136

from dramigrate.config import Settings
from dramigrate.helm import renderpool, subchartless
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart

# the umbrella's GPU Deployment (named through the subchart's define), and its services (keys to probe); it fails
# without s0
UMBRELLA = (
    """\
{{- if not .Values.services.s0.enabled }}{{ fail "s0 must stay on" }}{{ end }}
{{- if .Values.worker.enabled }}
"""
    + deployment(
        '{{ include "logs.name" . }}-worker',
        """\
      containers:
        - name: worker
          image: worker
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.worker.gpus }}
""",
        app="worker",
    )
    + """\
{{- end }}
{{- range $name, $svc := .Values.services }}
{{- if $svc.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
spec:
  ports:
    - port: {{ $svc.port }}
{{- end }}
{{- end }}
"""
)

# the subchart's Deployment, its resources from values (a device request or not)
LOGS = deployment(
    '{{ include "logs.name" . }}',
    """\
      containers:
        - name: logs
          image: logs
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
    app="logs",
)


def umbrella(root: Path, logs_resources: str = "limits: {cpu: 1}", extra: dict[str, str] | None = None) -> Path:
    """An umbrella with a packed subchart `logs` (switched by `logs.enabled`, aliased `logging`)."""
    services = "".join(f"  s{i}:\n    enabled: true\n    port: {8000 + i}\n" for i in range(10))
    chart = chart_with(
        root,
        "platform",
        {
            "templates/all.yaml": UMBRELLA,
            "values.yaml": f"worker:\n  enabled: true\n  gpus: 1\nservices:\n{services}"
            f"logging:\n  enabled: true\n  replicas: 2\n  resources: {{{logs_resources}}}\n",
        },
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: platform\nversion: 0.1.0\ndependencies:\n"
        "- name: logs\n  version: 0.1.0\n  alias: logging\n  condition: logging.enabled\n"
    )
    logs = chart_with(
        root / "src",
        "logs",
        {
            "templates/deployment.yaml": LOGS,
            "templates/_helpers.tpl": '{{- define "logs.name" -}}logs{{- end }}\n',
            "values.yaml": "replicas: 1\nresources: {}\n",
            **(extra or {}),
        },
    )
    (chart / "charts").mkdir()
    with tarfile.open(chart / "charts" / "logs-0.1.0.tgz", "w:gz") as tar:
        tar.add(logs, arcname="logs")
    return chart


def linted(chart: Path, monkeypatch: pytest.MonkeyPatch, pruning: bool) -> tuple[ChartOutcome, list[str]]:
    """A lint run of the chart (its probe), and the folder of each render: the chart's copy or the pruned one."""
    folders: list[str] = []
    real = renderpool._render_uncached

    def counted(root: Path, options: Any) -> Any:
        folders.append(root.parent.name)
        return real(root, options)

    with monkeypatch.context() as patch:
        patch.setattr(renderpool, "_render_uncached", counted)
        if not pruning:
            patch.setattr(subchartless, "reach", lambda *args: None)
        outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "lint")
    return outcome, folders


def test_probes_of_umbrella_keys_render_without_the_subcharts_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe of the services' and worker's keys renders from the pruned copy (the subchart's Deployment left
    out, its define kept for the umbrella's pod name), and finds what full renders find: the count, the switch. A
    probe the umbrella's own `fail` refuses (s0 switched off) is not rendered again in full."""
    chart = umbrella(tmp_path)
    full, full_renders = linted(chart, monkeypatch, pruning=False)
    pruned, renders = linted(chart, monkeypatch, pruning=True)
    assert shown(pruned) == shown(full)
    assert "worker.gpus: 1 sets this device count" in shown(pruned)
    assert "worker.enabled: true keeps this device request" in shown(pruned)
    assert "subchartless" not in full_renders
    pruned_renders = renders.count("subchartless")
    assert pruned_renders >= 2, renders  # the check of the copy, and probes
    # each probe render of the copy stands for a render of the whole chart, s0's failing one too (the umbrella's
    # `fail`); the check of the copy renders the probes' values in full once more
    assert len(renders) - pruned_renders == len(full_renders) + 1 - (pruned_renders - 1), renders


def test_a_subchart_asking_for_a_device_keeps_full_probe_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subchart whose render asks for a device: a probe key could change it through a value no reach test sees
    (none here, but none is assumed), so every probe renders in full, the findings as before."""
    chart = umbrella(tmp_path, "limits: {nvidia.com/gpu: 1}")
    full, _ = linted(chart, monkeypatch, pruning=False)
    pruned, renders = linted(chart, monkeypatch, pruning=True)
    assert shown(pruned) == shown(full)
    assert "subchartless" not in renders, renders  # nor a copy made: the first render tells


def test_a_pruned_copy_that_renders_otherwise_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subchart define that includes one of the subchart's document templates by its file name (a checksum of a
    ConfigMap): the pruned copy no longer renders, so the probe renders in full."""
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: logs\ndata: {level: info}\n"
    document = "platform/charts/logging/templates/config.yaml"
    helper = (
        f'{{{{- define "logs.name" -}}}}logs-{{{{ include "{document}" . | sha256sum | trunc 6 }}}}{{{{- end }}}}\n'
    )
    chart = umbrella(tmp_path, extra={"templates/_helpers.tpl": helper, "templates/config.yaml": config})
    full, _ = linted(chart, monkeypatch, pruning=False)
    pruned, renders = linted(chart, monkeypatch, pruning=True)
    assert shown(pruned) == shown(full)
    assert renders.count("subchartless") == 1, renders


def test_keys_that_reach_a_subchart_are_not_pruned(tmp_path: Path) -> None:
    """The subchart's alias, its name, `global`, `tags` and the umbrella's condition reach the subchart; the
    umbrella's own keys do not."""
    reach = subchartless.Reach(tmp_path, frozenset({"logging", "logs", "global", "tags"}), (("logging", "enabled"),))
    merged = {"worker": {"gpus": 1}, "logging": {"enabled": True, "replicas": 2}, "global": {}, "feature": {"on": 1}}
    assert reach.allows(merged, {**merged, "worker": {"gpus": 2}})
    assert not reach.allows(merged, {**merged, "logging": {"enabled": True, "replicas": 3}})
    assert not reach.allows(merged, {**merged, "global": {"image": "x"}})
    assert not reach.allows(merged, {**merged, "tags": {"logs": False}})
    on_feature = subchartless.Reach(tmp_path, frozenset(), (("feature", "on"),))
    assert not on_feature.allows(merged, {**merged, "feature": {"on": 0}})
    assert not on_feature.allows(merged, {**merged, "feature": 3})
    assert on_feature.allows(merged, {**merged, "worker": {"gpus": 0}})
