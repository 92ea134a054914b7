"""Hostile review of the chart rewrites, sixteenth session (issue 7's checker): proven rewrites rendered with value sets
the proof never tried."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

# the main container and a sidecar under its own switch take the same values map
SIDECAR = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: main
          image: app:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
        {{- if .Values.sidecar.enabled }}
        - name: side
          image: side:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
        {{- end }}
""",
)
SIDECAR_VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\nsidecar:\n  enabled: false\n"


def test_a_sidecar_switched_on_with_the_dra_values_is_proven_with_them(tmp_path: Path) -> None:
    """The pass-through proof rendered the flipped guard (`sidecar.enabled=true`) with the device-plugin values only:
    with `-f values-dra.yaml --set sidecar.enabled=true` both containers took the one claim of the main container, a
    GPU for two where the original asked for two. That value set is now rendered with values-dra.yaml as well, and the
    rewrite is not written."""
    chart = chart_with(tmp_path, "app", {"values.yaml": SIDECAR_VALUES, "templates/deployment.yaml": SIDECAR})

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")

    assert not outcome.proven
    assert "with sidecar.enabled flipped to true and the DRA values files" in outcome.manual, outcome.report()


# an init container under its own switch, written by a helper, that takes the device of the main container's map
# (charts9 gsampaio-ollama's model pull): the migration names the claim's request where both containers share the
# claim, and not where the main container has it alone
INIT_PULL = deployment(
    "{{ .Release.Name }}-app",
    """\
      initContainers:
        {{- include "app.pull" . | nindent 8 }}
      containers:
        - name: main
          image: app:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)
PULL_HELPER = """\
{{- define "app.pull" -}}
{{- if .Values.pull.enabled }}
- name: pull
  image: app:1
  resources:
    limits:
      cpu: "1"
      {{- if .Values.resources.limits }}
      {{- if index .Values.resources.limits "nvidia.com/gpu" }}
      nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" }}
      {{- end }}
      {{- end }}
{{- end }}
{{- end }}
"""
INIT_PULL_VALUES = "resources:\n  limits:\n    cpu: 2\n    nvidia.com/gpu: 1\npull:\n  enabled: true\n"


def test_a_claim_named_whole_or_by_its_one_request_is_the_same_claim(tmp_path: Path) -> None:
    """With the init container switched off, values-dra.yaml's `claims: [{name: gpu, request: gpu}]` (written for
    both containers) and the migration's `[{name: gpu}]` give the container the same device: the proof compared them
    as text and called the chart manual work."""
    files = {
        "values.yaml": INIT_PULL_VALUES,
        "templates/deployment.yaml": INIT_PULL,
        "templates/_helpers.tpl": PULL_HELPER,
    }
    chart = chart_with(tmp_path, "app", files)

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")

    assert outcome.proven, outcome.report()
    assert "pull.enabled flipped to false (DRA values: values-dra.yaml)" in outcome.report()


def test_a_chart_is_checked_for_a_private_copy_while_another_render_thread_makes_one() -> None:
    """The proof renders value sets on threads, each making a private copy of the chart: `fix` of charts15
    kse-deepseek-backend stopped with a traceback (`RuntimeError: Set changed size during iteration`) when one thread
    asked whether the chart was a private copy while another added its copy to the set of them."""
    import threading
    import time

    from dramigrate.helm import sandbox

    known = [f"/nonexistent/hostile7f-known-{i}" for i in range(20000)]  # a long set: each question reads it a while
    added = [f"/nonexistent/hostile7f-{i}" for i in range(500)]
    errors: list[BaseException] = []
    sandbox._PRIVATE.update(known)

    def add() -> None:
        for top in added:
            sandbox._PRIVATE.add(top)
            time.sleep(0)  # the other thread runs between two copies, as render threads do

    def ask() -> None:
        try:
            while adder.is_alive():
                sandbox.is_private(Path("/nonexistent/elsewhere"))
        except RuntimeError as exc:
            errors.append(exc)

    adder, asker = threading.Thread(target=add), threading.Thread(target=ask)
    try:
        adder.start()
        asker.start()
        adder.join()
        asker.join()
    finally:
        sandbox._PRIVATE.difference_update([*known, *added])
    assert not errors, errors


# the chart writes its own GPU toleration when the values ask for a GPU request (charts16 porter-web), the device key
# in both sections
OWN_TOLERATION = deployment(
    "{{ .Release.Name }}-web",
    """\
      containers:
        - name: web
          image: web:1
          resources:
            requests:
              cpu: 100m
              {{- if .Values.resources.requests.gpu }}
              nvidia.com/gpu: {{ .Values.resources.requests.gpu }}
              {{- end }}
            limits:
              {{- if .Values.resources.limits.gpu }}
              nvidia.com/gpu: {{ .Values.resources.limits.gpu }}
              {{- end }}
      tolerations:
        - key: removable
          operator: Exists
      {{- if .Values.resources.requests.gpu }}
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
      {{- end }}
""",
)
OWN_TOLERATION_VALUES = "resources:\n  requests:\n    gpu: 1\n  limits:\n    gpu: 1\n"


def test_a_device_asked_by_its_limit_alone_is_proven(tmp_path: Path) -> None:
    """Kubernetes takes an extended resource's request from its limit: with `--set resources.requests.gpu=null` the
    original pod still asks for the GPU and, migrated, tolerates its taint; the rewrite claimed it by the limit but
    kept the chart's own toleration, written only with the request, so the pod lost it (unschedulable on tainted GPU
    nodes). The proof changed limit and request together only; it now tries the limit alone, and the rewrite's DRA
    toleration renders where the chart's own one does not (owntolerations.py)."""
    files = {"values.yaml": OWN_TOLERATION_VALUES, "templates/deployment.yaml": OWN_TOLERATION}
    chart = chart_with(tmp_path, "web", files)

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")

    assert outcome.proven, outcome.report()
    assert "resources.requests.gpu unset (the limit alone asks for the device)" in outcome.checked


UMBRELLA = "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - {name: sub, version: 0.1.0, repository: file://charts/sub}\n"
SUB_DEPLOYMENT = deployment(
    "{{ .Release.Name }}-sub",
    """\
      containers:
        - name: sub
          image: sub:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)


def test_a_users_null_for_the_request_renders_as_before_with_the_switch_off(tmp_path: Path) -> None:
    """An umbrella whose values ask for the subchart's GPU in both sections, the subchart's own values.yaml setting no
    request: the rewrite deletes null keys of the map (Helm keeps the DRA values' null there), and did so with the
    device-plugin values too, so `--set sub.resources.requests.nvidia\\.com/gpu=null` (the limit alone asks for the
    device) rendered a line fewer than the original chart (charts7 hpe-ai-virtual-assistant's nemollm-embedding)."""
    from dramigrate.helm.render import RenderOptions, render_chart
    from dramigrate.helm.run import write_changes

    files = {
        "Chart.yaml": UMBRELLA,
        "values.yaml": "sub:\n  resources:\n    limits: {nvidia.com/gpu: 1}\n    requests: {nvidia.com/gpu: 1}\n",
        "charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        "charts/sub/values.yaml": "resources:\n  limits:\n    cpu: 1\n",
        "charts/sub/templates/deployment.yaml": SUB_DEPLOYMENT,
    }
    original = chart_with(tmp_path / "original", "app", files)
    chart = chart_with(tmp_path / "fixed", "app", files)

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")

    assert outcome.proven, outcome.report()
    write_changes(outcome)
    alone = RenderOptions(set_values=("sub.resources.requests.nvidia\\.com/gpu=null",))
    assert [m.text for m in render_chart(chart, alone)] == [m.text for m in render_chart(original, alone)]
