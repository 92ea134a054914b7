"""Pattern A inside `range` with a device count per item: a chart that deploys a list (or map) of models, each with its
own `gpus`, one Deployment per model (a vLLM models chart's `range .Values.models` with `nvidia.com/gpu: {{
.gpuRequestCount }}`). The claim template file runs the same `range`: one ResourceClaimTemplate per item whose count
is above 0, named after the item as its workload is, and each pod's claim comes from its own item's template. Renders
are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T134 = Target.parse("1.34")

# one Deployment per item of a values list, each with its own count under requests and limits
PER_MODEL = """\
{{- range .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-{{ .name }}
spec:
  selector:
    matchLabels:
      app: vllm-{{ .name }}
  template:
    metadata:
      labels:
        app: vllm-{{ .name }}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
        args: ["--tensor-parallel-size", "{{ .gpus }}"]
        resources:
          requests:
            nvidia.com/gpu: {{ .gpus }}
          limits:
            nvidia.com/gpu: {{ .gpus }}
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
{{- end }}
"""
PER_MODEL_VALUES = "models:\n  - name: small\n    gpus: 1\n  - name: big\n    gpus: 2\n"

# a map of models, each under its own switch, read through the range's variables and the chart's `$root`
PER_KEY = """\
{{- $root := . }}
{{- range $key, $model := .Values.models }}
{{- if $model.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "models.fullname" $root }}-{{ $key }}
spec:
  selector:
    matchLabels: {app: {{ $key }}}
  template:
    metadata:
      labels: {app: {{ $key }}}
    spec:
      containers:
        - name: server
          image: {{ $root.Values.image }}
          resources:
            limits:
              memory: 8Gi
              nvidia.com/gpu: {{ $model.gpus | default 1 }}
{{- end }}
{{- end }}
"""
PER_KEY_VALUES = (
    "image: vllm:1\nmodels:\n  llama:\n    enabled: true\n    gpus: 4\n  guard:\n    enabled: true\n"
    "  qwen:\n    enabled: false\n    gpus: 2\n"
)
HELPERS = '{{- define "models.fullname" -}}{{ .Release.Name }}-models{{- end }}\n'


def fixed(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """The chart before and after `fix` (which must be proven)."""
    original = chart_with(tmp_path / "original", "models", files)
    chart = chart_with(tmp_path / "fixed", "models", files)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T134, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return original, chart


def docs(chart: Path, *sets: str, values: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    rendered = render_chart(chart, RenderOptions(values_files=values, set_values=sets))
    return [d for m in rendered for d in yaml.safe_load_all(m.text) if d]


def texts(chart: Path, *sets: str, values: tuple[Path, ...] = ()) -> dict[str, str]:
    """Each template's rendered text, by template (those that render something)."""
    rendered = render_chart(chart, RenderOptions(values_files=values, set_values=sets))
    return {m.source: m.text for m in rendered if m.text.strip()}


def claims(rendered: list[dict[str, Any]]) -> dict[str, tuple[str | None, int | None]]:
    """Each Deployment's claim template and the device count that template asks for (None: no claim)."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }
    out: dict[str, tuple[str | None, int | None]] = {}
    for d in rendered:
        if d["kind"] == "Deployment":
            spec = d["spec"]["template"]["spec"]
            assert all("nvidia.com/gpu" not in (c["resources"] or {}).get("limits", {}) for c in spec["containers"])
            name = spec["resourceClaims"][0]["resourceClaimTemplateName"] if "resourceClaims" in spec else None
            out[d["metadata"]["name"]] = (name, counts.pop(name) if name else None)
    assert not counts, f"claim templates no pod uses: {counts}"
    return out


def test_each_item_gets_a_claim_template_with_its_own_count(tmp_path: Path) -> None:
    """Was: manual, 'the count `.gpus` reads the `range` item: one count per item'. Now each model's pod claims its
    own count from its own ResourceClaimTemplate, named after the model; the device-plugin keys are gone with the
    switch on."""
    _, chart = fixed(tmp_path, {"templates/models.yaml": PER_MODEL, "values.yaml": PER_MODEL_VALUES})
    got = claims(docs(chart))
    assert {pod: count for pod, (_, count) in got.items()} == {"vllm-small": 1, "vllm-big": 2}
    assert all(name and name.startswith(f"{pod}-") for pod, (name, _) in got.items())
    for d in docs(chart):
        if d["kind"] == "Deployment":
            assert d["spec"]["template"]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_a_zero_count_renders_no_claim_for_that_item_and_the_switch_off_renders_as_before(tmp_path: Path) -> None:
    """An item whose count is 0 gets neither a claim nor a claim template (the other items keep theirs); with
    `dra.enabled=false` every template renders byte-identical to the chart before the fix."""
    original, chart = fixed(tmp_path, {"templates/models.yaml": PER_MODEL, "values.yaml": PER_MODEL_VALUES})
    zero = tmp_path / "zero.yaml"  # a list item is set by a values file (`--set models[0]...` replaces the list)
    zero.write_text(PER_MODEL_VALUES.replace("gpus: 1", "gpus: 0"), encoding="utf-8")
    got = claims(docs(chart, values=(zero,)))
    assert got["vllm-small"] == (None, None) and got["vllm-big"][1] == 2
    for values in ((), (zero,)):
        assert texts(chart, "dra.enabled=false", values=values) == texts(original, values=values)


def test_a_map_of_models_read_through_the_range_variables(tmp_path: Path) -> None:
    """`range $key, $model := .Values.models` under `if $model.enabled`, named with the chart's name helper and the
    key, the count `$model.gpus | default 1`: a claim template for each enabled model, with its own count (a model
    with no `gpus` its default, 1), none for a disabled one."""
    files = {"templates/models.yaml": PER_KEY, "templates/_helpers.tpl": HELPERS, "values.yaml": PER_KEY_VALUES}
    original, chart = fixed(tmp_path, files)
    got = claims(docs(chart))
    assert {pod: count for pod, (_, count) in got.items()} == {
        "release-name-models-guard": 1,
        "release-name-models-llama": 4,
    }
    assert all(name and name.startswith(f"{pod}-") for pod, (name, _) in got.items())
    on = claims(docs(chart, "models.qwen.enabled=true", "models.llama.enabled=false"))
    assert {pod: count for pod, (_, count) in on.items()} == {
        "release-name-models-guard": 1,
        "release-name-models-qwen": 2,
    }
    assert texts(chart, "dra.enabled=false") == texts(original)


def test_a_count_per_rank_of_until(tmp_path: Path) -> None:
    """A bare Pod per rank of `range $i := until (int .Values.replicaCount)` whose count reads the rank (`add $i 1`):
    each rank's pod claims its own count from its rank's claim template (was: manual, 'the count `add $i 1` reads
    `$i`, which the `range` sets per item')."""
    template = (
        "{{- range $i := until (int .Values.replicaCount) }}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n"
        "  name: worker-{{ $i }}\nspec:\n  containers:\n  - name: main\n    image: cuda\n    resources:\n"
        "      limits:\n        nvidia.com/gpu: {{ add $i 1 }}\n{{- end }}\n"
    )
    _, chart = fixed(tmp_path, {"templates/pods.yaml": template, "values.yaml": "replicaCount: 2\n"})
    rendered = docs(chart, "replicaCount=3")
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {
        d["metadata"]["name"]: d["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
        for d in rendered
        if d["kind"] == "Pod"
    }
    assert {pod: counts.get(name) for pod, name in pods.items()} == {
        "worker-0": 1,
        "worker-1": 2,
        "worker-2": 3,
    }


# the count in a variable the range body sets from the item
PER_KEY_LOCAL = """\
{{- range $name, $cfg := .Values.models }}
{{- $gpus := $cfg.gpus | default 1 }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  containers:
    - name: server
      image: vllm
      args: ["--tensor-parallel-size", "{{ $gpus }}"]
      resources:
        limits:
          nvidia.com/gpu: {{ $gpus }}
{{- end }}
"""


def test_a_count_in_a_variable_the_range_body_sets(tmp_path: Path) -> None:
    """`$gpus := $cfg.gpus | default 1` at the range's own level, then `nvidia.com/gpu: {{ $gpus }}`: the claim
    template file sets `$gpus` again inside its range and each model's pod gets its own count (was: manual, 'the
    count `$gpus` reads `$gpus`, which the `range` sets per item')."""
    values = "models:\n  a:\n    gpus: 2\n  b: {}\n"
    _, chart = fixed(tmp_path, {"templates/pods.yaml": PER_KEY_LOCAL, "values.yaml": values})
    rendered = docs(chart)
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {d["metadata"]["name"]: d["spec"] for d in rendered if d["kind"] == "Pod"}
    assert {pod: counts[spec["resourceClaims"][0]["resourceClaimTemplateName"]] for pod, spec in pods.items()} == {
        "release-name-a": 2,
        "release-name-b": 1,
    }


def test_requests_and_limits_of_device_keys_only_share_one_switch(tmp_path: Path) -> None:
    """A container whose `requests:` and `limits:` hold only the device key keeps both under one `if not
    $.Values.dra.enabled` (was: one `if`/`end` pair each, two lines more in the pull request), the `else if` of the
    container's claims right above them."""
    _, chart = fixed(tmp_path, {"templates/models.yaml": PER_MODEL, "values.yaml": PER_MODEL_VALUES})
    text = (chart / "templates" / "models.yaml").read_text(encoding="utf-8")
    assert text.count("if not $.Values.dra.enabled }}") == 1
    assert "{{- else if not $.Values.dra.enabled }}\n          requests:" in text


# a models chart's engine filter around the whole Deployment, the count set inside it from the item's `resources`
# (default 1), the device key, the pod's toleration and the tensor-parallel flag under the chart's own `gt` test
PER_ENGINE = """\
{{- range $idx, $model := .Values.models }}
{{- if eq (default "vllm" $model.engine) "vllm" }}
{{- $resources := default dict $model.resources }}
{{- $gpu := ternary (int $resources.gpu) 1 (hasKey $resources "gpu") }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-{{ $model.name }}
spec:
  selector:
    matchLabels: {app: {{ $model.name }}}
  template:
    metadata:
      labels: {app: {{ $model.name }}}
    spec:
      containers:
        - name: vllm
          image: vllm
          resources:
            limits:
              memory: 1Gi
              {{- if gt (int $gpu) 0 }}
              nvidia.com/gpu: {{ $gpu | quote }}
              {{- end }}
      {{- if gt (int $gpu) 0 }}
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
      {{- end }}
{{- end }}
{{- end }}
"""
PER_ENGINE_VALUES = (
    "models:\n  - name: small\n  - name: big\n    resources: {gpu: 2}\n  - name: embed\n    engine: tei\n"
    "    resources: {gpu: 4}\n"
)


def test_a_count_set_inside_an_if_of_the_range(tmp_path: Path) -> None:
    """`$gpu` set inside the range's `if eq $model.engine "vllm"`, around the device key (was: manual, 'the count
    `$gpu` reads `$gpu`, which the `range` sets per item'): the claim template file sets it again inside the same
    `if`, one claim template per vLLM model with its own count, none for the other engine's; changing one model's
    count changes its own claim template only; with the switch off the chart renders as before."""
    original, chart = fixed(tmp_path, {"templates/models.yaml": PER_ENGINE, "values.yaml": PER_ENGINE_VALUES})
    got = claims(docs(chart))
    assert {pod: count for pod, (_, count) in got.items()} == {"vllm-small": 1, "vllm-big": 2}
    more = tmp_path / "more.yaml"
    more.write_text(PER_ENGINE_VALUES.replace("gpu: 2", "gpu: 3"), encoding="utf-8")
    changed = claims(docs(chart, values=(more,)))
    assert changed["vllm-small"] == got["vllm-small"] and changed["vllm-big"][1] == 3
    assert changed["vllm-big"][0] != got["vllm-big"][0]  # a new spec, a new name (the spec cannot change in place)
    for values in ((), (more,)):
        assert texts(chart, "dra.enabled=false", values=values) == texts(original, values=values)


def test_a_toleration_under_the_count_test_stays_as_the_chart_wrote_it(tmp_path: Path) -> None:
    """The pod tolerates the GPU taint under `if gt (int $gpu) 0`, which holds wherever the claim renders: the
    chart's toleration lines stay as they are (was: the list's `if` widened with an `or`, and a second entry added
    under a condition that never holds: eight lines more, one changed)."""
    engine = '{{- if eq (default "vllm" $model.engine) "vllm" }}\n'
    template = PER_ENGINE.replace(engine, "").replace("---\n", engine + "---\n")  # the count set at the range's level
    _, chart = fixed(tmp_path, {"templates/models.yaml": template, "values.yaml": PER_ENGINE_VALUES})
    text = (chart / "templates" / "models.yaml").read_text(encoding="utf-8")
    assert text.endswith(PER_ENGINE[PER_ENGINE.index("      {{- if gt (int $gpu) 0 }}\n      tolerations:") :])


def test_a_device_key_alone_in_its_own_if_gets_the_switch_in_that_if(tmp_path: Path) -> None:
    """A device key alone inside its own `{{- if gt (int $gpu) 0 }}` ... `{{- end }}`: that `if` takes the switch
    (`if and (gt (int $gpu) 0) (not $.Values.dra.enabled)`), one line changed (was: an `if not` pair inside it, two
    lines added per key); with the switch off the chart renders as before."""
    engine = '{{- if eq (default "vllm" $model.engine) "vllm" }}\n'
    template = PER_ENGINE.replace(engine, "").replace("---\n", engine + "---\n")
    original, chart = fixed(tmp_path, {"templates/models.yaml": template, "values.yaml": PER_ENGINE_VALUES})
    text = (chart / "templates" / "models.yaml").read_text(encoding="utf-8")
    assert "              {{- if and (gt (int $gpu) 0) (not $.Values.dra.enabled) }}\n              nvidia.com" in text
    assert "if not $.Values.dra.enabled" not in text
    assert texts(chart, "dra.enabled=false") == texts(original)
