"""Pattern A with the device key held in a template variable: the template builds the container's limits in
`$limits` and, under a values guard, adds the key by its literal name (`{{- $limits = merge (dict "nvidia.com/gpu" 1)
(deepCopy $limits) }}` inside `if .Values.gpu.enabled`), the container writing `limits: {{ $limits | toJson }}`
(samiallani's freqtrade chart). The finding names pattern A at that line (was: B, "the values map resources when it
is set and another map when it is empty"), and the rewrite is A's: the guard takes `(not .Values.dra.enabled)`, the
container's claims, the pod's resourceClaims and toleration come under the guard and the switch, and the claim template
asks for the count the `dict` gives. Renders are real; the proofs (L) and (D) are fix's own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.patterns import classify
from dramigrate.helm.render import RenderOptions, render_chart

VALUES = """\
gpu:
  enabled: false
  tolerations: []
resources:
  requests: {cpu: 500m}
  limits: {cpu: "2"}
"""
TEMPLATE = """\
{{- $limits := .Values.resources.limits }}
{{- if .Values.gpu.enabled }}
{{- $limits = merge (dict "nvidia.com/gpu" 1) (deepCopy $limits) }}
{{- end }}
""" + deployment(
    "trader",
    """\
      {{- with .Values.gpu.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: trader
          image: example/trader
          resources:
            requests: {{ .Values.resources.requests | toJson }}
            limits: {{ $limits | toJson }}
""",
)


def _docs(chart: Path, values: str) -> list[Any]:
    given = chart.parent / "given.yaml"
    given.write_text(values)
    rendered = render_chart(chart, RenderOptions(values_files=(given,)))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def test_a_key_a_variable_holds_under_a_guard_is_switched_at_the_guard(tmp_path: Path) -> None:
    lines = TEMPLATE.splitlines()
    found = classify(TEMPLATE, lines.index("          resources:") + 1, "nvidia.com/gpu")
    assert (found.letter, found.line) == ("A", 3)  # the `dict` that names the key
    original = chart_with(tmp_path / "original", "trader", {"values.yaml": VALUES, "templates/app.yaml": TEMPLATE})
    chart = Path(shutil.copytree(original, tmp_path / "fixed" / "trader"))
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("gpu: {enabled: true}\n")
    fix_chart(chart, values=(gpu,))
    assert "{{- if and .Values.gpu.enabled (not .Values.dra.enabled) }}" in (chart / "templates/app.yaml").read_text()
    for values in ("{}", "gpu: {enabled: true}\n"):
        assert _docs(chart, values + "\ndra: {enabled: false}\n") == _docs(original, values)
    docs = _docs(chart, "gpu: {enabled: true, tolerations: [{key: dedicated, operator: Exists}]}\n")
    claim_template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {
        "claims": [{"name": "gpu"}],
        "requests": {"cpu": "500m"},
        "limits": {"cpu": "2"},
    }
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": claim_template["metadata"]["name"]}]
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    (request,) = claim_template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 1
    off = _docs(chart, "{}")  # the guard off: no device, no claim
    assert [d["kind"] for d in off] == ["Deployment"]
    assert "resourceClaims" not in off[0]["spec"]["template"]["spec"]
