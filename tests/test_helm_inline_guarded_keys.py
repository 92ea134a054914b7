"""A literal device key written under an `if` of its own line (`{{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}`, as a
Nebius docker-deployment chart writes each container's requests and limits): pattern A, its inline `if` one of the
key's conditions. Inside a `range` over a values list that writes one container per item, each with its own count,
values where one container asks get the rewrite of listed.py; values where several ask, that of nested.py (the
migration names each container's request after it). Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

INLINE = deployment(
    "infer",
    """\
      containers:
        - name: infer
          image: infer:1
          resources:
            limits:
              cpu: 1
              {{ if .Values.gpus }}nvidia.com/gpu: {{ .Values.gpus }}{{ end }}
""",
)

# one container per item of a values list, its resources read through `with` and each key under its own `if`
LISTED = deployment(
    "runner",
    """\
      containers:
        {{- range .Values.containers }}
        - name: {{ .name }}
          image: {{ .image }}
          {{- with .resources }}
          resources:
            {{- with .limits }}
            limits:
              {{ if .cpu }}cpu: {{ .cpu }}{{ end }}
              {{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}
            {{- end }}
          {{- end }}
        {{- end }}
""",
)


# two containers of the list asking for the device: the migration names a request after each
TWO = (
    "containers:\n  - name: vllm\n    image: vllm:1\n    resources:\n      limits: {cpu: 4, gpu: 1}\n"
    "  - name: judge\n    image: judge:1\n    resources:\n      limits: {gpu: 1}\n"
)


def _fix(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def test_a_key_under_its_own_inline_if_is_pattern_a_and_proven(tmp_path: Path) -> None:
    """Was manual: 'pattern E (a resource name from values) ... this line is none of them' (the line starts with
    `{{`). Now the inline `if` guards the claim as a block `if` would: no count, no claim."""
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": INLINE, "values.yaml": "gpus: 1\n"})
    outcome = _fix(chart)
    assert outcome.proven, outcome.report()
    assert "gpus set to null" in outcome.checked
    write_changes(outcome)
    on = tmp_path / "on.yaml"
    on.write_text("gpus: 2\n")
    docs, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    assert pods["infer"]["containers"][0]["resources"] == {"limits": {"cpu": 1}, "claims": [{"name": "gpu"}]}
    on.write_text("gpus: null\n")
    docs, counts, pods = dra_render(chart, on)
    assert not counts and "resourceClaims" not in pods["infer"]


def test_several_containers_of_a_values_list_each_take_a_request_named_after_it(tmp_path: Path) -> None:
    """Was: manual, refused at the key's line with the shape named (the migration gives the pod one claim with a
    request per container, named after it). Now (nested.py) each container asking takes the request named after it,
    with its own count, as the migration of the render names them; with the switch off the render is unchanged."""
    files = {"templates/runner.yaml": LISTED, "values.yaml": TWO}
    original = chart_with(tmp_path / "original", "runner", files)
    chart = chart_with(tmp_path, "runner", files)
    outcome = _fix(chart)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    docs, _, pods = dra_render(chart, chart / "values.yaml")
    claims = {c["name"]: c["resources"].get("claims") for c in pods["runner"]["containers"]}
    assert claims == {
        "vllm": [{"name": "gpu", "request": "vllm-gpu"}],
        "judge": [{"name": "gpu", "request": "judge-gpu"}],
    }
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("vllm-gpu", 1), ("judge-gpu", 1)]
    assert pods["runner"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    off = RenderOptions(values_files=(chart / "values.yaml",), set_values=("dra.enabled=false",))
    assert _texts(chart, off) == _texts(original, RenderOptions(values_files=(original / "values.yaml",)))


def test_init_containers_and_containers_of_values_lists_each_claim_when_they_alone_ask(tmp_path: Path) -> None:
    """Init containers of the same shape come first in the template. Was: manual, 'the device key is inside `with
    .resources` of a container that `range .Values.containers` writes'. Now, with one container of either list asking
    for the device, that container takes the pod's one claim whole, with its own count; with the switch off every
    render is byte-identical to the chart before; with two asking and the switch on, the render fails by name."""
    init = LISTED.replace("      containers:\n", "      initContainers:\n", 1).replace(
        ".Values.containers", ".Values.inits"
    )
    template = init + LISTED.split("    spec:\n", 1)[1]
    values = "inits: []\ncontainers:\n  - name: vllm\n    image: vllm:1\n    resources:\n      limits: {gpu: 2}\n"
    files = {"templates/runner.yaml": template, "values.yaml": values}
    original = chart_with(tmp_path / "original", "runner", files)
    chart = chart_with(tmp_path, "runner", files)
    outcome = _fix(chart)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, chart / "values.yaml")
    assert list(counts.values()) == [2]
    assert pods["runner"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert not pods["runner"]["containers"][0]["resources"]["limits"]  # the device key is gone
    as_init = tmp_path / "init.yaml"
    as_init.write_text(
        "containers: []\ninits:\n  - name: pull\n    image: pull:1\n    resources:\n      limits: {gpu: 1}\n"
    )
    _, counts, pods = dra_render(chart, as_init)
    assert list(counts.values()) == [1] and pods["runner"]["initContainers"][0]["resources"]["claims"] == [
        {"name": "gpu"}
    ]
    two = tmp_path / "two.yaml"
    two.write_text("inits: []\n" + TWO)
    for values_file in (chart / "values.yaml", as_init, two):
        off = RenderOptions(values_files=(values_file,), set_values=("dra.enabled=false",))
        assert _texts(chart, off) == _texts(original, RenderOptions(values_files=(values_file,)))
    with pytest.raises(HelmError, match="several containers of templates/runner.yaml ask for nvidia.com/gpu"):
        render_chart(chart, RenderOptions(values_files=(two,)))


def _texts(chart: Path, options: RenderOptions) -> dict[str, str]:
    """Each template's rendered text, by template (those that render something)."""
    return {m.source: m.text for m in render_chart(chart, options) if m.text.strip()}


def test_containers_with_random_names_are_refused_saying_why_their_requests_cannot_be_named(tmp_path: Path) -> None:
    """The Nebius chart's containers end their names in `randAlphaNum` (a new name each render). Was: the refusal
    told to name each container's request after its container, which that chart cannot. Now it says the names are
    random and what to name the requests after instead."""
    random = LISTED.replace("- name: {{ .name }}", "- name: {{ .name }}{{ randAlphaNum 4 | lower }}")
    chart = chart_with(tmp_path, "runner", {"templates/runner.yaml": random, "values.yaml": TWO})
    outcome = _fix(chart)
    assert not outcome.proven
    assert "container names are random" in outcome.manual and "randAlphaNum 4" in outcome.manual
    assert "`gpu-{{ $i }}`" in outcome.manual
    plain = chart_with(tmp_path / "plain", "runner", {"templates/runner.yaml": LISTED, "values.yaml": TWO})
    assert "random" not in _fix(plain).manual
