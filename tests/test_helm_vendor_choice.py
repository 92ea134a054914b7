"""Pattern A where an `if`/`else` picks the vendor's device key (azimuth-llm: `gpu.intel.com/i915` when
`api.intelXPUsEnabled`, else `nvidia.com/gpu`; huggingface's dell chart: NVIDIA or AMD by instance name): the DRA
branch asks, in each branch, for what the migration asks for when the pod requests that branch's device. Proven by
(L) and (D) on every value set, the flipped vendor switch included. Renders are real; one fix for the module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

DEPLOYMENT = deployment(
    "{{ .Release.Name }}-api",
    """\
      containers:
        - name: api
          image: vllm
          resources:
            limits:
              {{- if .Values.intel }}
              gpu.intel.com/i915: {{ .Values.gpus | int }}
              {{- else }}
              nvidia.com/gpu: {{ .Values.gpus | int }}
              {{- end }}
""",
)


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("vendor-choice")
    chart = chart_with(root, "llm", {"templates/api.yaml": DEPLOYMENT, "values.yaml": "gpus: 2\nintel: false\n"})
    return chart, fix_chart(chart)  # was: manual, 'the device key is inside `if .Values.intel ... else`'


def _claim(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any]]:
    file = chart.parent / "on.yaml"
    file.write_text(values)
    docs, _, pods = dra_render(chart, file)
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    return template["spec"]["spec"]["devices"]["requests"][0]["exactly"], pods["release-name-api"]


def test_each_branch_asks_for_its_vendor(fixed: tuple[Path, Any]) -> None:
    chart, outcome = fixed
    assert any("intel flipped to true" in c for c in outcome.checked)
    nvidia, pod = _claim(chart, "dra: {enabled: true}\n")
    assert (nvidia["deviceClassName"], nvidia["count"]) == ("gpu.nvidia.com", 2)
    assert "limits" not in pod["containers"][0]["resources"]
    intel, pod = _claim(chart, "dra: {enabled: true}\nintel: true\n")
    assert (intel["deviceClassName"], intel["count"]) == ("gpu.intel.com", 2)
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"]


VENDOR_BY_TYPE = deployment(
    "{{ .Release.Name }}-ui",
    """\
      containers:
      - name: ui
        image: ui
        resources:
          requests:
            cpu: 100m
            {{- if .Values.gpu.enabled }}
            {{- if eq .Values.gpu.type "nvidia" }}
            nvidia.com/gpu: {{ .Values.gpu.count }}
            {{- else if eq .Values.gpu.type "amd" }}
            amd.com/gpu: {{ .Values.gpu.count }}
            {{- end }}
            {{- end }}
          limits:
            {{- if .Values.gpu.enabled }}
            {{- if eq .Values.gpu.type "nvidia" }}
            nvidia.com/gpu: {{ .Values.gpu.count }}
            {{- else if eq .Values.gpu.type "amd" }}
            amd.com/gpu: {{ .Values.gpu.count }}
            {{- end }}
            {{- end }}
""",
)


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_the_same_vendor_chain_under_requests_and_limits(tmp_path: Path, vendor: str) -> None:
    """The vendor chosen by `eq` on one values key, the chain written once under `requests:` and once under `limits:`
    (a home-lab ComfyUI chart): one claim whose class follows the key, proven for each vendor the chain names."""
    values = f"gpu:\n  enabled: true\n  type: {vendor}\n  count: 1\n"
    chart = chart_with(tmp_path, "ui", {"templates/ui.yaml": VENDOR_BY_TYPE, "values.yaml": values})
    outcome = fix_chart(chart)  # was: manual, 'the device keys sit under different conditions'
    other = "amd" if vendor == "nvidia" else "nvidia"
    assert any(f'gpu.type changed to "{other}"' in c for c in outcome.checked)
    for name, cls in (("nvidia", "gpu.nvidia.com"), ("amd", "gpu.amd.com")):
        file = tmp_path / "on.yaml"
        file.write_text(f"dra: {{enabled: true}}\ngpu: {{enabled: true, type: {name}, count: 2}}\n")
        docs, counts, pods = dra_render(chart, file)
        (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == cls
        assert list(counts.values()) == [2]
        container = pods["release-name-ui"]["containers"][0]
        assert container["resources"]["claims"] == [{"name": pods["release-name-ui"]["resourceClaims"][0]["name"]}]
        assert "limits" not in container["resources"] and set(container["resources"]["requests"]) == {"cpu"}


VENDOR_IFS = deployment(
    "{{ .Release.Name }}-llm",
    """\
      containers:
        - name: llm
          image: vllm
          resources:
            limits:
              memory: 8Gi
              {{- if eq .Values.gpu.vendor "amd" }}
              amd.com/gpu: {{ .Values.gpu.limit | quote }}
              {{- end }}
              {{- if eq .Values.gpu.vendor "nvidia" }}
              nvidia.com/gpu: {{ .Values.gpu.limit | quote }}
              {{- end }}
""",
)


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_each_vendor_in_an_if_of_its_own(tmp_path: Path, vendor: str) -> None:
    """The vendor chosen by two `if eq` on one values key, each around its own device key (a vLLM chart's
    `gpu.vendor`), rather than one `if`/`else if` chain: the same choice, one claim whose class follows the key, and
    a vendor no `if` names renders no claim. Was manual work: "the device keys sit under different conditions" (and
    "the migration asks for several device classes" for the vendor of the second `if`)."""
    values = f"gpu:\n  vendor: {vendor}\n  limit: 1\n"
    chart = chart_with(tmp_path, "llm", {"templates/llm.yaml": VENDOR_IFS, "values.yaml": values})
    fix_chart(chart)
    file = tmp_path / "on.yaml"
    for name, cls in (("nvidia", "gpu.nvidia.com"), ("amd", "gpu.amd.com"), ("none", None)):
        file.write_text(f"dra: {{enabled: true}}\ngpu: {{vendor: {name}, limit: 2}}\n")
        docs, counts, pods = dra_render(chart, file)
        classes = [
            t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
            for t in docs
            if t["kind"] == "ResourceClaimTemplate"
        ]
        assert classes == ([cls] if cls else []) and list(counts.values()) == ([2] if cls else [])
        assert pods["release-name-llm"]["containers"][0]["resources"]["limits"] == {"memory": "8Gi"}
        assert ("resourceClaims" in pods["release-name-llm"]) is bool(cls)


def test_the_vendor_chain_reads_as_written(tmp_path: Path) -> None:
    """What a maintainer reviews in the rewritten comfyui-shaped chart: the `else if eq .Values.gpu.type "amd"`
    branch is tested as `eq .Values.gpu.type "amd"` (not also `not (eq ... "nvidia")`, which that test implies), and
    every branch of the claim reads dra.deviceClassName (empty in values.yaml: each vendor's own class), so a class
    set there is used for AMD too; the switch and the vendor choice, which the claim, the container's claims and the
    toleration all test, are one variable. Was: the AMD claim wrote gpu.amd.com whatever the values said, and the
    long condition was written three times in the template (four in comfyui's, whose pod has GPU tolerations)."""
    values = "gpu:\n  enabled: true\n  type: nvidia\n  count: 1\n"
    chart = chart_with(tmp_path, "ui", {"templates/ui.yaml": VENDOR_BY_TYPE, "values.yaml": values})
    outcome = fix_chart(chart)
    assert any('gpu.type changed to "amd"' in c for c in outcome.checked)
    written = (chart / "templates/ui.yaml").read_text() + (chart / "templates/resourceclaimtemplate.yaml").read_text()
    assert "not (eq .Values.gpu.type" not in written
    assert '(eq .Values.gpu.type "nvidia") (eq .Values.gpu.type "amd")' in written
    assert 'deviceClassName: {{ .Values.dra.deviceClassName | default "gpu.amd.com" }}' in written
    assert 'deviceClassName: ""' in (chart / "values.yaml").read_text()
    # each CEL selector of the AMD claim on one line, as the DRA values files write it (was two lines each)
    claims = (chart / "templates/resourceclaimtemplate.yaml").read_text()
    assert claims.count("          - cel: {expression: '!has(device.attributes[''gpu.amd.com'']") == 2, claims
    # the pod's claim, its container's and the toleration test the switch with the vendor choice: written once
    template = (chart / "templates/ui.yaml").read_text()
    assert template.count("(or (eq .Values.gpu.type") == 1
    assert "{{- if and $dra (gt (int .Values.gpu.count) 0) }}" in template
    for name in ("nvidia", "amd"):
        file = tmp_path / "on.yaml"
        file.write_text(f"dra: {{enabled: true, deviceClassName: mine}}\ngpu: {{enabled: true, type: {name}}}\n")
        (template,) = [d for d in dra_render(chart, file)[0] if d["kind"] == "ResourceClaimTemplate"]
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mine"


VENDOR_TOLERATED = deployment(
    "{{ .Release.Name }}-ui",
    """\
      {{- if .Values.gpu.tolerations }}
      tolerations:
        {{- toYaml .Values.gpu.tolerations | nindent 8 }}
      {{- end }}
      containers:
      - name: ui
        image: ui
        resources:
          limits:
            {{- if eq .Values.gpu.type "nvidia" }}
            nvidia.com/gpu: {{ .Values.gpu.count }}
            {{- else if eq .Values.gpu.type "amd" }}
            amd.com/gpu: {{ .Values.gpu.count }}
            {{- end }}
""",
)


def test_a_vendor_whose_taint_the_values_tolerate_gets_the_toleration_where_they_do_not(tmp_path: Path) -> None:
    """The values pick amd and list the amd.com/gpu toleration themselves (a ComfyUI chart's README values): the
    migration adds none; with that list emptied it adds it, and the DRA branch must too. Was manual work: "with
    gpu.tolerations changed to null ... expected [amd.com/gpu toleration]"."""
    listed = "  tolerations:\n  - {key: amd.com/gpu, operator: Exists, effect: NoSchedule}\n"
    amd = f"gpu:\n  type: amd\n  count: 1\n{listed}"
    chart = chart_with(tmp_path, "ui", {"templates/ui.yaml": VENDOR_TOLERATED, "values.yaml": amd})
    fix_chart(chart)
    # one line for the toleration of each vendor's key (was three, a field a line)
    text = (chart / "templates/ui.yaml").read_text()
    assert "        - {key: {{ $draKey }}, operator: Exists, effect: NoSchedule}\n" in text, text
    file = tmp_path / "on.yaml"
    for vendor, listed in (("amd", "null"), ("amd", "[{key: amd.com/gpu, operator: Exists}]"), ("nvidia", "null")):
        file.write_text(f"dra: {{enabled: true}}\ngpu: {{type: {vendor}, count: 1, tolerations: {listed}}}\n")
        _, _, pods = dra_render(chart, file)
        keys = [t["key"] for t in pods["release-name-ui"]["tolerations"]]
        assert keys == [f"{vendor}.com/gpu"]  # the values' own, or the one the DRA branch adds: never two
