"""Pattern A whose pod selects its GPU model with a nodeSelector label the template writes itself (huggingface's
dell chart: `nvidia.com/gpu.product: {{ include "getNodeSelector" . | quote }}`, mapped from the instance name):
the DRA branch drops the label, as the migration does, and the claim's CEL selector reads the same expression, so
another instance name selects its own product. Proven by (L) and (D); renders are real; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

HELPERS = """\
{{- define "product" -}}
{{- if eq .Values.instance "h100" }}NVIDIA-H100-80GB-HBM3{{ else }}NVIDIA-L40S{{ end -}}
{{- end }}
"""
DEPLOYMENT = deployment(
    "tgi",
    """\
      nodeSelector:
        nvidia.com/gpu.product: {{ include "product" . | quote }}
      containers:
        - name: tgi
          image: tgi
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.shards }}
""",
)


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    files = {"templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": DEPLOYMENT}
    files["values.yaml"] = "instance: h100\nshards: 8\n"
    chart = chart_with(tmp_path_factory.mktemp("template-labels"), "tgi", files)
    # was: manual, 'spec.template.spec.nodeSelector: not expected, the rewritten chart has {"nvidia.com/gpu.product"..'
    return chart, fix_chart(chart)


def _selector(chart: Path, values: str) -> tuple[str, dict[str, Any]]:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    docs, _, pods = dra_render(chart, file)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"], pods[
        "tgi"
    ]


def test_the_label_moves_into_the_claim_and_follows_the_template(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    cel, pod = _selector(chart, "dra: {enabled: true}\n")
    assert cel.endswith("== 'NVIDIA-H100-80GB-HBM3'") and "nodeSelector" not in pod
    cel, _ = _selector(chart, "dra: {enabled: true}\ninstance: l40s\n")
    assert cel.endswith("== 'NVIDIA-L40S'")
    off = chart.parent / "off.yaml"
    off.write_text("dra: {enabled: false}\n")
    assert dra_render(chart, off)[2]["tgi"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}


def test_a_label_the_migration_maps_stays_manual(tmp_path: Path) -> None:
    """nvidia.com/gpu.family is mapped (ampere -> 'Ampere') into the CEL, so the template's value is not in it: a
    claim fixed to today's family would select the wrong one for another instance; manual, with the reason."""
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    family = HELPERS.replace('"product"', '"family"').replace("NVIDIA-H100-80GB-HBM3", "hopper")
    files = {
        "templates/_helpers.tpl": family.replace("NVIDIA-L40S", "ampere"),
        "templates/deployment.yaml": DEPLOYMENT.replace("gpu.product", "gpu.family").replace('"product"', '"family"'),
        "values.yaml": "instance: a100\nshards: 8\n",
    }
    chart = chart_with(tmp_path, "tgi", files)
    outcome = run_chart(
        chart,
        ChartOptions(kube_version="1.34"),
        load_rules(),
        Settings(kube_version="1.34"),
        Target.parse("1.34"),
        "fix",
    )
    assert not outcome.proven
    assert "is not in the claim's CEL selector as written" in outcome.report()


def test_a_literal_label_is_not_taken_for_a_values_one_that_merely_spells_it(tmp_path: Path) -> None:
    """tuwien-speaches' shape: the template writes `nvidia.com/gpu.product: NVIDIA-A40` itself, and values.yaml holds
    an affinity block (`key: nvidia.com/gpu.product`) that no template reads. The label does not come from values, so
    the DRA branch moves it into the claim's selector as the migration does. It stayed on the pod beside a claim with
    no selector, with a warning that blamed the unused values key."""
    literal = DEPLOYMENT.replace('{{ include "product" . | quote }}', "NVIDIA-A40")
    values = (
        "shards: 1\n"
        "nodeSelector:\n"
        "  nodeSelectorTerms:\n"
        "    - matchExpressions:\n"
        '        - key: "nvidia.com/gpu.product"\n'
        "          operator: In\n"
        '          values: ["NVIDIA-A40"]\n'
    )
    chart = chart_with(tmp_path, "tgi", {"templates/deployment.yaml": literal, "values.yaml": values})
    outcome = fix_chart(chart)
    assert not [f for f in outcome.findings if f.rule == "chart-label-from-values"]
    cel, pod = _selector(chart, "dra: {enabled: true}\n")
    assert cel.endswith("== 'NVIDIA-A40'") and "nodeSelector" not in pod


VENDORS = deployment(
    "tgi",
    """\
      containers:
        - name: tgi
          image: tgi
          resources:
            limits:
              {{- if eq .Values.vendor "nvidia" }}
              nvidia.com/gpu: {{ .Values.shards }}
              {{- else }}
              amd.com/gpu: {{ .Values.shards }}
              {{- end }}
      {{- if eq .Values.vendor "nvidia" }}
      nodeSelector:
        nvidia.com/gpu.product: {{ include "product" . | quote }}
      {{- end }}
""",
)


def test_a_label_of_the_vendor_branch_the_users_values_leave_off_moves_too(tmp_path: Path) -> None:
    """dell's amd-instance shape: the defaults pick the NVIDIA branch, which writes the product label; the user's
    values pick AMD, which writes none. The proof renders the defaults too, where the migration moves the label into
    the claim; the NVIDIA branch's claim was read from the AMD render with the device renamed (no label there), so
    the label stayed on the pod and the chart was manual work ("spec.template.spec.nodeSelector: not expected")."""
    files = {"templates/_helpers.tpl": HELPERS, "templates/deployment.yaml": VENDORS}
    files["values.yaml"] = "vendor: nvidia\ninstance: h100\nshards: 8\n"
    chart = chart_with(tmp_path, "tgi", files)
    amd = tmp_path / "amd.yaml"
    amd.write_text("vendor: amd\nshards: 4\n")
    fix_chart(chart, values=(amd,))
    cel, pod = _selector(chart, "dra: {enabled: true}\ninstance: l40s\n")
    assert cel.endswith("== 'NVIDIA-L40S'") and "nodeSelector" not in pod
    docs, _, pods = dra_render(chart, amd)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.amd.com"
    assert "nodeSelector" not in pods["tgi"]
    off = tmp_path / "off.yaml"
    off.write_text("dra: {enabled: false}\n")
    assert dra_render(chart, off)[2]["tgi"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
