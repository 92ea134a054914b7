"""Pattern A/E inside `range` with a count the range body sets per item and overrides per item: an engines chart
(deepgram's self-hosted chart does this) ranges over engine types, a list it builds in an `if`/`else` at the top of
the template, sets `$gpuRequest`/`$gpuLimit` inside each container from the chart's defaults, overrides them inside
`if` blocks from the type's own entry, and writes the device key under a resource name from values. The claim
template file builds the same list, runs the same `range`, sets the counts again with the same `if` blocks, and
renders one ResourceClaimTemplate per type whose count is above 0; the pod's claim and toleration, which sit above
the container, read the counts set once more at the top of the pod spec. Renders are real (the Helm engine embedded
in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, claimed_counts

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T134 = Target.parse("1.34")

ENGINES = """\
{{- $types := list }}
{{- if .Values.agent.enabled }}
{{- $types = list "stt" "tts" }}
{{- else }}
{{- $types = list "" }}
{{- end }}
{{- range $type := $types }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: engine{{- if $type }}-{{ $type }}{{- end }}
spec:
  selector:
    matchLabels:
      app: engine
  template:
    metadata:
      labels:
        app: engine
    spec:
      tolerations:
        {{- toYaml $.Values.engine.tolerations | nindent 8 }}
      containers:
      - name: engine
        image: engine:1
        {{- $gpuRequest := int $.Values.engine.requests.gpu }}
        {{- $gpuLimit := int $.Values.engine.limits.gpu }}
        {{- if and $type $.Values.engine.overrides }}
        {{- $own := index $.Values.engine.overrides $type | default dict }}
        {{- if and $own.requests (hasKey $own.requests "gpu") }}
        {{- $gpuRequest = int $own.requests.gpu }}
        {{- end }}
        {{- if and $own.limits (hasKey $own.limits "gpu") }}
        {{- $gpuLimit = int $own.limits.gpu }}
        {{- end }}
        {{- end }}
        resources:
          requests:
            memory: 1Gi
            {{- if gt $gpuRequest 0 }}
            {{ $.Values.engine.gpuResourceName }}: {{ $gpuRequest }}
            {{- end }}
          limits:
            {{- if gt $gpuLimit 0 }}
            {{ $.Values.engine.gpuResourceName }}: {{ $gpuLimit }}
            {{- end }}
{{- end }}
"""
VALUES = """\
agent:
  enabled: false
engine:
  gpuResourceName: nvidia.com/gpu
  tolerations: []
  requests:
    gpu: 1
  limits:
    gpu: 1
  overrides:
    tts:
      requests:
        gpu: 2
      limits:
        gpu: 2
"""


def fixed(tmp_path: Path, *sets: str) -> tuple[Path, Path]:
    """The chart before and after `fix` with these values (which must be proven)."""
    files = {"templates/engines.yaml": ENGINES, "values.yaml": VALUES}
    original = chart_with(tmp_path / "original", "engines", files)
    chart = chart_with(tmp_path / "fixed", "engines", files)
    outcome = run_chart(chart, ChartOptions(set_values=sets), RULES, Settings(), T134, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart


def docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    rendered = render_chart(chart, RenderOptions(set_values=sets))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def texts(chart: Path, *sets: str) -> dict[str, str]:
    return {m.source: m.text for m in render_chart(chart, RenderOptions(set_values=sets)) if m.text.strip()}


def test_each_type_claims_its_own_overridden_count(tmp_path: Path) -> None:
    """Was: manual, 'the count `$gpuRequest` reads `$gpuRequest`, which the `range` sets per item'. Now each type's
    pod claims the count its own override sets (tts 2), the others the chart's default (stt 1), each from a claim
    template of its own, and tolerates the device's taint."""
    _, chart = fixed(tmp_path, "agent.enabled=true")
    rendered = docs(chart, "agent.enabled=true")
    assert claimed_counts(rendered) == {"engine-stt": 1, "engine-tts": 2}
    for d in rendered:
        if d["kind"] == "Deployment":
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in d["spec"]["template"][
                "spec"
            ]["tolerations"]
    assert claimed_counts(docs(chart)) == {"engine": 1}  # the `else` of the list: one engine, no type


def test_a_zero_override_renders_no_claim_and_the_switch_off_renders_as_before(tmp_path: Path) -> None:
    """A type whose override is 0 gets neither a claim nor a claim template; with `dra.enabled=false` every render
    is byte-identical to the chart before the fix, for both branches of the list."""
    original, chart = fixed(tmp_path, "agent.enabled=true")
    zero = ("agent.enabled=true", "engine.overrides.tts.requests.gpu=0", "engine.overrides.tts.limits.gpu=0")
    assert claimed_counts(docs(chart, *zero)) == {"engine-stt": 1, "engine-tts": None}
    for sets in ((), ("agent.enabled=true",), zero):
        assert texts(chart, "dra.enabled=false", *sets) == texts(original, *sets)


def test_a_mig_profile_named_in_values_gets_the_claim_the_migration_names_after_it(tmp_path: Path) -> None:
    """Was: manual, 'the migration gives the pod a claim of another shape when .Values.engine.gpuResourceName is
    nvidia.com/gpu' (a MIG profile's claim is `mig`, a GPU's `gpu`). Now the pod's claim is named after the device
    the values name, as the migration names it, and each type's claim asks for its own count of that profile."""
    mig = "engine.gpuResourceName=nvidia.com/mig-4g.40gb"
    _, chart = fixed(tmp_path, mig, "agent.enabled=true")
    rendered = docs(chart, mig, "agent.enabled=true")
    assert claimed_counts(rendered) == {"engine-stt": 1, "engine-tts": 2}
    for d in rendered:
        if d["kind"] == "Deployment":
            spec = d["spec"]["template"]["spec"]
            assert [c["name"] for c in spec["resourceClaims"]] == ["mig"]
            assert spec["containers"][0]["resources"]["claims"] == [{"name": "mig"}]
        if d["kind"] == "ResourceClaimTemplate":
            assert d["spec"]["spec"]["devices"]["requests"][0]["name"] == "mig"
    gpu = docs(chart, "agent.enabled=true")  # the chart's default name: the GPU's claim
    assert {
        c["name"] for d in gpu if d["kind"] == "Deployment" for c in d["spec"]["template"]["spec"]["resourceClaims"]
    } == {"gpu"}
