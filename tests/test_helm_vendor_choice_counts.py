"""Pattern A with a vendor choice whose branches ask for counts of their own (a transcription worker's chart:
`if eq .Values.gpu.type "nvidia"` writes `nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" |
default 1 }}`, `else if ... "amd"` the same read of `amd.com/gpu`, under `requests:` and again under `limits:`, each
section reading its own map). Each branch's claim asks for that branch's count (the limit's); was manual work:
'the branches of the device choice ask for different counts'. Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import HelmError, RenderOptions, render_chart

WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      {{- if .Values.gpu.enabled }}
      nodeSelector:
        {{- toYaml .Values.gpu.nodeSelector | nindent 8 }}
      tolerations:
        {{- toYaml .Values.gpu.tolerations | nindent 8 }}
      {{- end }}
      containers:
      - name: worker
        image: worker
        resources:
          requests:
            cpu: {{ .Values.resources.requests.cpu }}
            {{- if .Values.gpu.enabled }}
            {{- if eq .Values.gpu.type "nvidia" }}
            nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | default 1 }}
            {{- else if eq .Values.gpu.type "amd" }}
            amd.com/gpu: {{ index .Values.resources.requests "amd.com/gpu" | default 1 }}
            {{- end }}
            {{- end }}
          limits:
            cpu: {{ .Values.resources.limits.cpu }}
            {{- if .Values.gpu.enabled }}
            {{- if eq .Values.gpu.type "nvidia" }}
            nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" | default 1 }}
            {{- else if eq .Values.gpu.type "amd" }}
            amd.com/gpu: {{ index .Values.resources.limits "amd.com/gpu" | default 1 }}
            {{- end }}
            {{- end }}
""",
)
VALUES = """\
gpu:
  enabled: true
  # amd or nvidia
  type: amd
  nodeSelector:
    pool: gpu
  tolerations:
    - key: amd.com/gpu
      operator: Exists
      effect: NoSchedule
resources:
  requests:
    cpu: 1
    amd.com/gpu: 1
  limits:
    cpu: 2
"""
NVIDIA = """\
gpu:
  type: nvidia
resources:
  requests:
    nvidia.com/gpu: 2
  limits:
    nvidia.com/gpu: 2
"""


def _texts(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=values, set_values=sets))]


def _docs(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [d for _, text in _texts(chart, values, sets) for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("choice-counts")
    original = chart_with(root / "original", "worker", {"templates/worker.yaml": WORKER, "values.yaml": VALUES})
    nvidia = root / "nvidia.yaml"
    nvidia.write_text(NVIDIA)
    chart = shutil.copytree(original, root / "fixed" / "worker")
    # was: manual, 'the branches of the device choice ask for different counts'
    outcome = fix_chart(chart, values=(nvidia,))
    assert any('gpu.type changed to "amd"' in c for c in outcome.checked)
    return original, chart, nvidia


def test_switch_off_renders_as_before(charts: tuple[Path, Path, Path]) -> None:
    original, chart, nvidia = charts
    for values in ((), (nvidia,)):
        assert _texts(chart, values, ("dra.enabled=false",)) == _texts(original, values)


@pytest.mark.parametrize(("values", "cls", "count"), [((), "gpu.amd.com", 1), (("nvidia",), "gpu.nvidia.com", 2)])
def test_each_branch_claims_its_own_count(
    charts: tuple[Path, Path, Path], values: tuple[str, ...], cls: str, count: int
) -> None:
    _, chart, nvidia = charts
    docs = _docs(chart, (nvidia,) if values else ())
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == (cls, count)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
    resources = pod["containers"][0]["resources"]
    assert resources["claims"] == [{"name": pod["resourceClaims"][0]["name"]}]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu"}  # no device-plugin key left
    # the pod's list tolerates the AMD taint already: the NVIDIA branch adds its own toleration, the AMD one none
    assert [t["key"] for t in pod["tolerations"]] == ["amd.com/gpu", "nvidia.com/gpu"][: 1 + bool(values)]


def test_a_request_unlike_its_limit_fails_with_the_switch_on(charts: tuple[Path, Path, Path]) -> None:
    _, chart, nvidia = charts
    with pytest.raises(HelmError, match="nvidia.com/gpu request differs from its limit"):
        _docs(chart, (nvidia,), ("resources.limits.nvidia\\.com/gpu=4",))


def test_the_vendors_tolerations_are_written_once_for_both_keys(charts: tuple[Path, Path, Path]) -> None:
    """The branches' DRA tolerations differ only in their key: one `range` over the keys, each under its branch's
    condition, writes them (was: one eleven-line block per vendor); the renders above show each branch's own."""
    _, chart, _ = charts
    written = (chart / "templates/worker.yaml").read_text()
    assert written.count("effect: NoSchedule") == 1
    assert written.count("$draTolerated := false") == 1


def test_the_claim_spec_writes_what_the_vendors_share_once(charts: tuple[Path, Path, Path]) -> None:
    """The branches' claim specs start alike (`devices:` ... `exactly:`): those lines are written once, the `if` on
    the vendor picking only the class, its selectors and the count (was: each branch's whole spec)."""
    _, chart, _ = charts
    written = (chart / "templates/resourceclaimtemplate.yaml").read_text()
    assert written.count("devices:") == written.count("exactly:") == 1
