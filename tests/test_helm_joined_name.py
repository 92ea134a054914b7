"""Pattern E with the device resource name joined from one values key and literal text (mindalpha-predict:
`{{ .Values.gpu.corporation }}/gpu: {{ .Values.gpu.count }}`, the key holding `nvidia.com` or `amd.com`). Was manual
("this line is none of them"); the name is now the Go expression `printf "%s/gpu" .Values.gpu.corporation`, looked up
like a name one values key holds whole, so each vendor's name gets its own device class. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TEMPLATE = deployment(
    "{{ .Release.Name }}-predict",
    """\
      containers:
        - name: predict
          image: predict:1
          resources:
            limits:
              cpu: 1
              {{- if .Values.gpu.enabled }}
              {{ .Values.gpu.corporation }}/gpu: {{ .Values.gpu.count }}
              {{- end }}
""",
)
VALUES = "gpu:\n  enabled: true\n  corporation: nvidia.com\n  count: 1\n"


def _on(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claim's request and the pod's container resources, rendered with `values` (the DRA switch on by default)."""
    file = chart.parent / "on.yaml"
    file.write_text(values or "{}\n")
    docs, _, pods = dra_render(chart, file)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"], next(iter(pods.values()))["containers"][0]


def test_a_name_joined_from_a_vendor_key_gets_each_vendors_device_class(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "predict", {"templates/deployment.yaml": TEMPLATE, "values.yaml": VALUES})
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpu:\n  corporation: amd.com\n")

    outcome = run_chart(chart, ChartOptions(values_files=(amd,)), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    for values, device_class in (("gpu:\n  corporation: amd.com\n", "gpu.amd.com"), ("", "gpu.nvidia.com")):
        request, container = _on(chart, values)
        assert (request["deviceClassName"], request["count"]) == (device_class, 1)
        assert container["resources"]["limits"] == {"cpu": 1}, container
    (chart.parent / "on.yaml").write_text("gpu:\n  corporation: example.com\n")
    docs, _, pods = dra_render(chart, chart.parent / "on.yaml")  # a name no rule pack migrates: the device plugin's
    assert next(iter(pods.values()))["containers"][0]["resources"]["limits"] == {"cpu": 1, "example.com/gpu": 1}
    assert not [d for d in docs if d["kind"] == "ResourceClaimTemplate"]


def test_a_vendor_the_lookup_does_not_know_fails_naming_the_joined_name(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "predict", {"templates/deployment.yaml": TEMPLATE, "values.yaml": VALUES})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    amd = tmp_path / "amd.yaml"
    amd.write_text("gpu:\n  corporation: amd.com\n")
    with pytest.raises(HelmError, match="<gpu.corporation>/gpu names a device resource the chart's DRA claim does not"):
        render_chart(chart, RenderOptions(values_files=(amd,)))
