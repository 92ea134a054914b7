"""A literal device key written under an `if` of its own line (`{{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}`, as a
Nebius docker-deployment chart writes each container's requests and limits): pattern A, its inline `if` one of the
key's conditions. Inside a `range` over a values list that writes one container per item, each with its own count,
the rewrite refuses and names that shape. Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart, write_changes
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


def test_a_key_of_each_container_of_a_values_list_is_refused_naming_the_shape(tmp_path: Path) -> None:
    """Was: 'pattern E (a resource name from values) ... this line is none of them', a key whose name is literal. Now
    pattern A, refused at its line with the shape named: the `range` writes a container per item, each its own count,
    and the migration gives the pod one claim with a request per such container."""
    values = "containers:\n  - name: vllm\n    image: vllm:1\n    resources:\n      limits: {cpu: 4, gpu: 1}\n"
    chart = chart_with(tmp_path, "runner", {"templates/runner.yaml": LISTED, "values.yaml": values})
    outcome = _fix(chart)
    assert not outcome.proven
    assert "templates/runner.yaml:21: pattern A (a literal device key with a values count)" in outcome.manual
    assert "a container that `range .Values.containers` writes, each item a container with its own count" in (
        outcome.manual
    )
    assert "the pod gets one claim, `gpu`" in outcome.manual


def test_the_refusal_names_the_line_the_values_render(tmp_path: Path) -> None:
    """Init containers of the same shape come first in the template, their list empty in the values: the refusal
    names the containers' line, which the values render (was: the first key of the template, the init containers')."""
    init = LISTED.replace("      containers:\n", "      initContainers:\n", 1).replace(
        ".Values.containers", ".Values.inits"
    )
    template = init + LISTED.split("    spec:\n", 1)[1]
    values = "inits: []\ncontainers:\n  - name: vllm\n    image: vllm:1\n    resources:\n      limits: {gpu: 1}\n"
    chart = chart_with(tmp_path, "runner", {"templates/runner.yaml": template, "values.yaml": values})
    outcome = _fix(chart)
    assert "templates/runner.yaml:34: pattern A" in outcome.manual, outcome.manual
    assert "a container that `range .Values.containers` writes" in outcome.manual


def test_containers_with_random_names_are_refused_saying_why_their_requests_cannot_be_named(tmp_path: Path) -> None:
    """The Nebius chart's containers end their names in `randAlphaNum` (a new name each render). Was: the refusal
    told to name each container's request after its container, which that chart cannot. Now it says the names are
    random and what to name the requests after instead."""
    random = LISTED.replace("- name: {{ .name }}", "- name: {{ .name }}{{ randAlphaNum 4 | lower }}")
    values = "containers:\n  - name: vllm\n    image: vllm:1\n    resources:\n      limits: {cpu: 4, gpu: 1}\n"
    chart = chart_with(tmp_path, "runner", {"templates/runner.yaml": random, "values.yaml": values})
    outcome = _fix(chart)
    assert not outcome.proven
    assert "container names are random" in outcome.manual and "randAlphaNum 4" in outcome.manual
    assert "`gpu-{{ $i }}`" in outcome.manual
    plain = chart_with(tmp_path / "plain", "runner", {"templates/runner.yaml": LISTED, "values.yaml": values})
    assert "random" not in _fix(plain).manual
