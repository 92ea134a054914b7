"""values-dra.yaml of a pass-through chart (pattern B) migrates every device map the chart ships, those under a switch
the defaults leave off too, so a `--set` of the chart's own switches is covered (charts15 archana: `configs.int8` and
`configs.fp8` off, `configs.fp16` on, one Deployment per enabled entry of a `range`)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")

# one Deployment per enabled variant, each passing its own map through
VARIANTS = """\
{{- range $name, $cfg := .Values.configs }}
{{- if $cfg.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server-{{ $name }}
spec:
  selector:
    matchLabels: {app: server, config: {{ $name }}}
  template:
    metadata:
      labels: {app: server, config: {{ $name }}}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml $cfg.resources | nindent 12 }}
{{- end }}
{{- end }}
"""
# fp16 on by default with one GPU; int8 off with two (its claim template differs: not shared with fp16's)
VARIANTS_VALUES = """\
# one Deployment per variant
configs:
  fp16:
    enabled: true
    resources:
      limits:
        nvidia.com/gpu: 1
  int8:
    enabled: false
    resources:
      limits:
        cpu: 2
        nvidia.com/gpu: 2

service:
  port: 8000
"""


def _render(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...]) -> list[dict]:
    options = RenderOptions(values_files=files, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def test_a_set_that_turns_on_a_map_the_defaults_leave_off_is_proven_with_values_dra_yaml(tmp_path: Path) -> None:
    """`--set configs.int8.enabled=true` turns on a map the chart ships with two GPUs: values-dra.yaml migrates it
    too, so fix proves the user's run with it and says to add it; rendered so, the int8 pod claims its two GPUs
    through a template of its own and no device-plugin request is left (was: manual, "the device request comes from
    values no DRA values file covers ... configs.int8.resources, which values-dra.yaml ... leaves as it is")."""
    chart = chart_with(tmp_path, "server", {"values.yaml": VARIANTS_VALUES, "templates/server.yaml": VARIANTS})
    sets = ("configs.int8.enabled=true",)
    outcome = run_chart(chart, ChartOptions(set_values=sets), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "your values (DRA values: values-dra.yaml)" in outcome.report(), outcome.report()
    assert "add -f values-dra.yaml" in outcome.report(), outcome.report()
    write_changes(outcome)
    out = _render(chart, (chart / "values-dra.yaml",), sets)
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"}
    templates = {d["metadata"]["name"]: d["spec"] for d in out if d["kind"] == "ResourceClaimTemplate"}
    assert sorted(pods) == ["server-fp16", "server-int8"], pods
    for name, count, rest in (("server-fp16", 1, {}), ("server-int8", 2, {"limits": {"cpu": 2}})):
        pod = pods[name]
        assert pod["containers"][0]["resources"] == {**rest, "claims": [{"name": "gpu"}]}, pod
        (claim,) = pod["resourceClaims"]
        spec = templates[claim["resourceClaimTemplateName"]]
        assert spec["spec"]["devices"]["requests"][0]["exactly"]["count"] == count, spec


def test_the_defaults_values_dra_yaml_holds_the_switched_off_maps_and_still_proves(tmp_path: Path) -> None:
    """Fixed with its defaults, the chart's values-dra.yaml migrates int8's map as well, says so in its head, and the
    defaults render with it proven (int8's claim template renders unnamed there: no pod, no claim); values.yaml
    documents the `resourceClaims` of both maps right below each, with no blank line the chart does not part its
    keys with (was: values-dra.yaml for fp16 alone)."""
    chart = chart_with(tmp_path, "server", {"values.yaml": VARIANTS_VALUES, "templates/server.yaml": VARIANTS})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "configs.int8.enabled flipped to true (DRA values: values-dra.yaml)" in outcome.report(), outcome.report()
    write_changes(outcome)
    text = (chart / "values-dra.yaml").read_text()
    assert "and of those the chart's switches turn on" in text.splitlines()[0], text
    dra = yaml.safe_load(text)
    assert dra["configs"]["int8"]["resources"] == {"limits": {"nvidia.com/gpu": None}, "claims": [{"name": "gpu"}]}
    values = (chart / "values.yaml").read_text()
    assert "        nvidia.com/gpu: 2\n    # DRA ResourceClaims" in values, values
    assert "    resourceClaims: []\n\nservice:" in values, values
    out = _render(chart, (chart / "values-dra.yaml",), ())
    (pod,) = [d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, pod
