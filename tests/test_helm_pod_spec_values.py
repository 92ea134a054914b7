"""A chart that renders a pod spec from a values map key by key and each container whole (an Actions runner scale
set's `template.spec`: `range $key, $val := .Values.template.spec` writes every key but the containers, which a
helper writes key by key from the values list), the device request in a container's `resources` in that list. No
template line writes the device key, so the helper rewrite refused ('the helper is not included as a container's
`resources:`'); the values carry the whole pod, so the DRA values do: the container's `resources.claims` and the
pod's `resourceClaims` in the values' pod spec, the ResourceClaimTemplate from `resourceClaimTemplates` by the
pass-through's one new template. Renders are real."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

HELPERS = """\
{{- define "runners.containers" -}}
{{- range $i, $container := .Values.template.spec.containers }}
- name: {{ $container.name }}
  {{- range $key, $val := $container }}
    {{- if ne $key "name" }}
  {{ $key }}: {{ $val | toYaml | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}
"""
RUNNERS = deployment(
    "{{ .Release.Name }}-runners",
    """\
      {{- range $key, $val := .Values.template.spec }}
        {{- if ne $key "containers" }}
      {{ $key }}: {{ $val | toYaml | nindent 8 }}
        {{- end }}
      {{- end }}
      containers:
      {{- include "runners.containers" . | nindent 6 }}
""",
)
VALUES = """\
template:
  spec:
    containers:
      - name: runner
        image: runner:2
"""
GPU = """\
template:
  spec:
    containers:
      - name: runner
        image: runner:2
        resources:
          limits:
            nvidia.com/gpu: 2
"""


def test_a_pod_spec_from_values_takes_the_claims_in_the_values(tmp_path: Path) -> None:
    files = {"templates/runners.yaml": RUNNERS, "templates/_helpers.tpl": HELPERS, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "runners", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    before = "".join(m.text for m in render_chart(chart, RenderOptions(values_files=(gpu,))))
    fix_chart(chart, values=(gpu,))  # was: manual, 'the helper is not included as a container's `resources:`'
    assert (chart / "templates/runners.yaml").read_text() == RUNNERS  # the templates pass it all through already
    assert "".join(m.text for m in render_chart(chart, RenderOptions(values_files=(gpu,)))) == before
    dra = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert dra["template"]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert list(counts.values()) == [2]
    pod = pods["release-name-runners"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": next(iter(counts))}]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_a_pod_spec_whose_other_keys_are_not_passed_through_stays_manual(tmp_path: Path) -> None:
    """The pod's resourceClaims would be dropped (only `nodeSelector` is written from the pod spec values): the proof
    refuses the values-only rewrite, the chart's other rewrite is tried as before (the pass-through of the container's
    resources, which puts the claims beside the map, into the container) and its reason stands."""
    only = RUNNERS.replace('{{- if ne $key "containers" }}', '{{- if eq $key "nodeSelector" }}')
    files = {"templates/runners.yaml": only, "templates/_helpers.tpl": HELPERS, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "runners", files)
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(GPU)
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    options = ChartOptions(values_files=(gpu,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven and not outcome.changes
    assert "containers[0].resourceClaims: not expected" in outcome.manual, outcome.manual
