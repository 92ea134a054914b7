"""Spellings real charts use for one read of a values resources map (patterns B and C): each gets the pass-through
rewrite, proven, whose DRA values render the device as a claim.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()

# RESOURCES: what follows the container's `resources:` key
WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
        - name: worker
          image: worker:1
          resources:RESOURCES
""",
)
VALUES = (
    "defaults:\n  resources:\n    requests:\n      cpu: 1\n"
    "worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n"
)


def fixed_worker(tmp_path: Path, resources: str, values: str = VALUES, template: str = WORKER) -> dict[str, Any]:
    """The worker chart with this text after its container's `resources:` key, fixed (proven); its pod rendered with
    the DRA values, which ask for the two devices through one claim template."""
    template = template.replace("RESOURCES", resources)
    chart = chart_with(tmp_path, "worker", {"values.yaml": values, "templates/worker.yaml": template})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [2], counts
    pod = pods["release-name-worker"]
    assert pod["resourceClaims"][0]["name"] == "gpu", pod
    assert "nvidia.com/gpu" not in str(pod.get("initContainers")) + str(pod["containers"]), pod
    return pod


@pytest.mark.parametrize(
    "resources",
    [
        "\n            {{- .Values.worker.resources | toYaml | nindent 12 }}",
        "\n            {{- toYaml (default dict .Values.worker.resources) | nindent 12 }}",
        "\n            {{- .Values.worker.resources | default dict | toYaml | nindent 12 }}",
        '\n            {{- toYaml (index .Values "worker" "resources") | nindent 12 }}',
        "\n            {{- toYaml (mergeOverwrite (deepCopy .Values.defaults.resources) .Values.worker.resources)"
        " | nindent 12 }}",
        "\n            {{- toYaml (default .Values.defaults.resources .Values.worker.resources) | nindent 12 }}",
        " {{ toJson .Values.worker.resources }}",
    ],
    ids=["pipe", "default-dict", "pipe-default-dict", "index", "merge-deepcopy", "default-map", "toJson"],
)
def test_a_map_serialised_in_another_spelling_is_passed_through(tmp_path: Path, resources: str) -> None:
    """`.Values.x.resources | toYaml`, `toYaml (default dict ...)`, `toYaml (index .Values "x" "resources")`, a merge
    of a deep copy, `default` of two maps, `resources: {{ toJson ... }}` on one line: the same read of the map as
    `toYaml .Values.x.resources`, so the same pass-through, proven (was: pattern F, manual)."""
    pod = fixed_worker(tmp_path, resources)
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], pod


SECTIONS_VALUES = "worker:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n    requests:\n      cpu: 1\n"


@pytest.mark.parametrize(
    "resources",
    [
        "\n            limits:\n              {{- toYaml .Values.worker.resources.limits | nindent 14 }}"
        "\n            requests:\n              {{- toYaml .Values.worker.resources.requests | nindent 14 }}",
        "\n            {{- if .Values.worker.resources.limits }}\n            limits:"
        "\n              {{- toYaml .Values.worker.resources.limits | nindent 14 }}\n            {{- end }}"
        "\n            {{- with .Values.worker.resources.requests }}\n            requests:"
        "\n              {{- toYaml . | nindent 14 }}\n            {{- end }}",
        "\n            limits: {{ toYaml .Values.worker.resources.limits | nindent 14 }}"
        "\n            requests: {{ toYaml .Values.worker.resources.requests | nindent 14 }}",
        "\n            limits:\n            {{- range $key, $value := .Values.worker.resources.limits }}"
        "\n              {{ $key }}: {{ $value | quote }}\n            {{- end }}"
        "\n            requests:\n            {{- range $key, $value := .Values.worker.resources.requests }}"
        "\n              {{ $key }}: {{ $value }}\n            {{- end }}",
    ],
    ids=["toYaml", "if-with", "same-line", "range"],
)
def test_a_map_written_section_by_section_gets_its_claims(tmp_path: Path, resources: str) -> None:
    """`limits:` and `requests:` each written from their section of the map (a toYaml, or a range writing `{{ $key }}:
    {{ $value }}`): the template also writes the map's `claims`, which the DRA values add, and the rewrite is proven
    (was: manual, the claims the migration adds were not rendered; the range read as pattern E)."""
    written = fixed_worker(tmp_path, resources, SECTIONS_VALUES)["containers"][0]["resources"]
    assert written["claims"] == [{"name": "gpu"}], written
    assert str(written["requests"]["cpu"]) == "1" and not written.get("limits"), written  # `limits: null`: none


BRANCHES = """\
          {{- if .Values.worker.resources }}
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
          {{- else if (include "worker.resources" .) }}
          resources:
            {{- include "worker.resources" . | nindent 12 }}
          {{- end }}
"""
HELPER = """\
{{- define "worker.resources" -}}
{{- if .Values.gpus }}
limits:
  nvidia.com/gpu: {{ .Values.gpus }}
{{- end }}
{{- end }}
"""


def test_a_map_read_in_the_branch_not_taken_is_not_the_pattern(tmp_path: Path) -> None:
    """The device count comes from `gpus` through a helper in the `else` branch, and the finding's line is the
    `resources:` of the `if` branch, which reads a map without it (z2jh's user placeholder): the request is not
    pattern B, the helper rewrite takes it and it is proven (was: pattern B, and the pass-through manual)."""
    template = WORKER.replace("          resources:RESOURCES\n", BRANCHES)
    files = {"values.yaml": "worker:\n  resources: {}\ngpus: 2\n", "templates/worker.yaml": template}
    chart = chart_with(tmp_path, "worker", {**files, "templates/_helpers.tpl": HELPER})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    (finding,) = [f for f in outcome.findings if f.resource]
    assert "pattern B" not in finding.message, finding.message


def test_an_init_container_map_is_passed_through(tmp_path: Path) -> None:
    """The device map is an init container's (`initContainers:` above `containers:`): the pod-level keys go before
    `initContainers:` and the rewrite is proven (was: manual, "no `containers:` line above the resources map")."""
    init = "      initContainers:\n        - name: warmup\n          image: warmup:1\n          resources:RESOURCES\n"
    template = WORKER.replace("          resources:RESOURCES\n", "").replace(
        "      containers:\n", init + "      containers:\n"
    )
    pod = fixed_worker(tmp_path, "\n            {{- toYaml .Values.worker.resources | nindent 12 }}", VALUES, template)
    assert pod["initContainers"][0]["resources"]["claims"] == [{"name": "gpu"}], pod
