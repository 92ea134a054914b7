"""Pattern A in a chart with one template per serving profile, each under its own `if .Values.<profile>.enabled`
(crusoe's KServe example: basic on NVIDIA, its AMD twin off). The proof flips the other profile's switch, so the
template the values leave off is rewritten too, each with the claim its migration gives: an AMD profile beside an
NVIDIA one gets its own device class. The user's values may turn on the profile the chart's defaults leave off (the
AMD run): the template the defaults render is read from that render. Was: manual (the flipped profile's claim
template missing; 'the migration adds no claim to this template's pods'). Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

PROFILE = """\
{{{{- if .Values.{key}.enabled }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {key}-llm
spec:
  selector:
    matchLabels: {{app: {key}}}
  template:
    metadata:
      labels: {{app: {key}}}
    spec:
      containers:
        - name: main
          image: example/vllm
          resources:
            limits:
              {resource}: {{{{ .Values.{key}.gpu | quote }}}}
{{{{- end }}}}
"""
VALUES = "basic:\n  enabled: true\n  gpu: 1\nother:\n  enabled: false\n  gpu: 2\n"


def _chart(root: Path, other: str) -> Path:
    files = {
        "templates/basic.yaml": PROFILE.format(key="basic", resource="nvidia.com/gpu"),
        "templates/other.yaml": PROFILE.format(key="other", resource=other),
        "values.yaml": VALUES,
    }
    return chart_with(root, "profiles", files)


def _render(chart: Path, values: str) -> list[Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def _classes(docs: list[Any]) -> dict[str, str]:
    """Each Deployment's claim template's device class."""
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    out = {}
    for d in docs:
        if d["kind"] == "Deployment":
            (claim,) = d["spec"]["template"]["spec"]["resourceClaims"]
            spec = templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]
            out[d["metadata"]["name"]] = spec["devices"]["requests"][0]["exactly"]["deviceClassName"]
    return out


@pytest.mark.parametrize(
    ("other", "other_class"), [("nvidia.com/gpu", "gpu.nvidia.com"), ("amd.com/gpu", "gpu.amd.com")]
)
def test_a_profile_the_values_leave_off_gets_its_own_claim(tmp_path: Path, other: str, other_class: str) -> None:
    chart = _chart(tmp_path, other)
    fix_chart(chart)  # proven: the other profile's switch is flipped among the value sets
    docs = _render(chart, "other: {enabled: true}\ndra: {enabled: true}\n")
    assert _classes(docs) == {"basic-llm": "gpu.nvidia.com", "other-llm": other_class}
    off = _render(chart, "other: {enabled: true}\ndra: {enabled: false}\n")
    limits = [d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] for d in off]
    assert limits == [{"nvidia.com/gpu": "1"}, {other: "2"}]


def test_the_users_values_turn_on_the_profile_the_defaults_leave_off(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "amd.com/gpu")
    given = tmp_path / "amd.yaml"
    given.write_text("basic: {enabled: false}\nother: {enabled: true}\n")
    fix_chart(chart, values=(given,))  # the basic template, rendered by the chart's defaults only, is read there
    docs = _render(chart, "basic: {enabled: false}\nother: {enabled: true}\n")
    assert _classes(docs) == {"other-llm": "gpu.amd.com"}
    assert _classes(_render(chart, "{}")) == {"basic-llm": "gpu.nvidia.com"}


def test_a_class_set_in_the_values_is_every_profiles_class(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "amd.com/gpu")
    fix_chart(chart)
    docs = _render(chart, "other: {enabled: true}\ndra: {enabled: true, deviceClassName: gpu.example.com}\n")
    assert _classes(docs) == {"basic-llm": "gpu.example.com", "other-llm": "gpu.example.com"}


def test_more_profiles_than_the_proof_flips_one_by_one_are_each_rewritten(tmp_path: Path) -> None:
    """Eight profiles (basic on, seven off), each with more numbers in its values than the lint probes (crusoe's
    cpu, memory and GPU counts): the proof flips the switches one at a time up to MAX_FLIPS, then turns the rest on
    together in one more value set, so the last profiles are rewritten and proven too (was: left on the device
    plugin with the DRA switch on while the chart said proven)."""
    keys = ["basic", *(f"p{k}" for k in range(1, 8))]
    sizes = "resources: {limits: {cpu: 4, gpuMemory: 8}, requests: {cpu: 2, gpuMemory: 8}}"
    files = {f"templates/{key}.yaml": PROFILE.format(key=key, resource="nvidia.com/gpu") for key in keys}
    files["values.yaml"] = "".join(f"{k}: {{enabled: {str(k == 'basic').lower()}, gpu: 1, {sizes}}}\n" for k in keys)
    chart = chart_with(tmp_path, "profiles", files)
    fix_chart(chart)
    docs = _render(chart, "".join(f"{k}: {{enabled: true}}\n" for k in keys))
    assert _classes(docs) == {f"{key}-llm": "gpu.nvidia.com" for key in keys}


MAP_PROFILE = """\
{{- if .Values.other.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: other-llm
spec:
  selector:
    matchLabels: {app: other}
  template:
    metadata:
      labels: {app: other}
    spec:
      containers:
        - name: main
          image: example/vllm
          resources:
            {{- toYaml .Values.other.resources | nindent 12 }}
{{- end }}
"""


def test_a_profile_of_another_pattern_under_its_own_switch_is_named(tmp_path: Path) -> None:
    """A profile that passes a values map through (pattern B) beside one with a literal key: the A rewrite does not
    take it (vLLM production-stack's Deployment beside its RayCluster stays out of another rewrite), and the manual
    message names its line, pattern and the value set that turns it on (was: the proof's first difference only)."""
    files = {
        "templates/basic.yaml": PROFILE.format(key="basic", resource="nvidia.com/gpu"),
        "templates/other.yaml": MAP_PROFILE,
        "values.yaml": VALUES.replace("  gpu: 2\n", "  resources: {limits: {nvidia.com/gpu: 2}}\n"),
    }
    chart = chart_with(tmp_path, "profiles", files)
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "templates/other.yaml:17: pattern B" in outcome.manual
    assert "with other.enabled flipped to true" in outcome.manual


def test_profiles_asking_for_the_same_devices_share_one_claim_spec_per_class(tmp_path: Path) -> None:
    """Three profiles, two on NVIDIA and one on AMD, each with its own count: the claim template file writes the
    claim spec once per device class, each profile's define passing it the profile's count (was: the spec written
    once per profile, crusoe's eight KServe profiles +466 lines), and each pod still claims its own count."""
    resources = {"basic": "nvidia.com/gpu", "large": "nvidia.com/gpu", "other": "amd.com/gpu"}
    files = {f"templates/{k}.yaml": PROFILE.format(key=k, resource=r) for k, r in resources.items()}
    files["values.yaml"] = (
        "basic: {enabled: true, gpu: 1}\nlarge: {enabled: false, gpu: 4}\nother: {enabled: false, gpu: 2}\n"
    )
    chart = chart_with(tmp_path, "profiles", files)
    fix_chart(chart)
    written = (chart / "templates/resourceclaimtemplate.yaml").read_text()
    assert written.count("devices:") == len(set(resources.values()))
    docs = _render(chart, "large: {enabled: true}\nother: {enabled: true}\n")
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    counts = {}
    for d in docs:
        if d["kind"] == "Deployment":
            (claim,) = d["spec"]["template"]["spec"]["resourceClaims"]
            counts[d["metadata"]["name"]] = templates[claim["resourceClaimTemplateName"]]["devices"]["requests"][0]
    assert {name: r["exactly"]["count"] for name, r in counts.items()} == {
        "basic-llm": 1,
        "large-llm": 4,
        "other-llm": 2,
    }
    assert _classes(docs) == {"basic-llm": "gpu.nvidia.com", "large-llm": "gpu.nvidia.com", "other-llm": "gpu.amd.com"}
