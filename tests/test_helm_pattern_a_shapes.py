"""Pattern A in shapes seen on real charts outside the corpus (the held-out set of issue 7): a container whose limits
and requests read two values keys for one device; a chart whose default values are placeholders a launcher fills in;
a pod whose literal tolerations list is followed by the values' list appended with toYaml; a count computed from
variables set inside nested `with` blocks. Each chart here is written for the test, with the shape of the real chart
it stands for. Renders are real."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TWO_KEYS = deployment(
    "server",
    """\
      containers:
      - name: server
        image: vllm
        resources:
          limits:
            memory: {{ .Values.resources.limits.memory | quote }}
            nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" | quote }}
          requests:
            memory: {{ .Values.resources.requests.memory | quote }}
            nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
""",
)
TWO_KEYS_VALUES = """\
resources:
  limits:
    memory: 8Gi
    nvidia.com/gpu: "2"
  requests:
    memory: 4Gi
    nvidia.com/gpu: "2"
"""


def test_limits_and_requests_from_two_keys_take_the_limit_as_the_count(tmp_path: Path) -> None:
    """Was: manual, 'nvidia.com/gpu is asked for with two counts in one pod (... two of its containers)' although
    both keys are in one container, and Kubernetes needs them equal anyway. Now the limit is the claim's count, both
    device keys leave the DRA branch, and a request that differs from its limit fails the render by name."""
    chart = chart_with(tmp_path, "two-keys", {"templates/d.yaml": TWO_KEYS, "values.yaml": TWO_KEYS_VALUES})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text('resources: {limits: {nvidia.com/gpu: "3"}, requests: {nvidia.com/gpu: "3"}}\n')
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [3]
    resources = pods["server"]["containers"][0]["resources"]
    assert resources["limits"] == {"memory": "8Gi"} and resources["requests"] == {"memory": "4Gi"}
    differ = tmp_path / "differ.yaml"
    differ.write_text('resources: {limits: {nvidia.com/gpu: "3"}, requests: {nvidia.com/gpu: "1"}}\n')
    with pytest.raises(HelmError, match="the nvidia.com/gpu request differs from its limit"):
        render_chart(chart, RenderOptions(values_files=(differ,)))


REQUEST_IN_AN_IF = deployment(
    "server",
    """\
      containers:
        - name: server
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
            {{- if .Values.setRequests }}
            requests:
              nvidia.com/gpu: {{ .Values.gpuRequest }}
            {{- end }}
""",
)


def test_a_request_inside_its_own_if_is_checked_against_its_limit_only_when_it_renders(tmp_path: Path) -> None:
    """The request under `{{- if .Values.setRequests }}`, off by default with a count of 0: the check that the
    request equals its limit ignored that `if`, failed the default render with the switch on, and the fix ended as
    manual work with its message cut (the apostrophes of "resource's ... limit's" read as a quoted value to hide).
    Now the check holds only when the request renders, and its message reads whole."""
    values = "gpus: 1\nsetRequests: false\ngpuRequest: 0\n"
    chart = chart_with(tmp_path, "twin", {"templates/d.yaml": REQUEST_IN_AN_IF, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("gpus: 2\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    assert "requests" not in pods["server"]["containers"][0]["resources"]
    on.write_text("gpus: 2\nsetRequests: true\ngpuRequest: 1\n")
    with pytest.raises(HelmError, match="needs the request of an extended resource equal to its limit, and the DRA"):
        render_chart(chart, RenderOptions(values_files=(on,)))


LAUNCHED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: trainer
        image: trainer
        args: ["--devices={{{{ .Values.{name}.gpus }}}}"]
        resources:
          limits:
            nvidia.com/gpu: {{{{ .Values.{name}.gpus }}}}
"""


def _fix_with(chart: Path, *sets: str) -> ChartOutcome:
    options = ChartOptions(kube_version="1.34", set_values=sets)
    return run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")


def test_default_values_a_launcher_fills_in_are_left_out_of_the_dra_proof(tmp_path: Path) -> None:
    """nemo-training's defaults are placeholders (`numGPUs: training.trainer.devices`): that render is not
    installable, so it cannot prove the DRA branch. Was: manual, 'with default values and the DRA switch on, the
    rewritten chart renders differently ... expected "trainer.devices"'; now the defaults are checked with the switch
    off only, said so in the report, and the user's values prove the rewrite."""
    chart = chart_with(
        tmp_path,
        "launched",
        {"templates/d.yaml": LAUNCHED.format(name="train"), "values.yaml": "train:\n  gpus: trainer.devices\n"},
    )
    outcome = _fix_with(chart, "train.gpus=4")
    assert outcome.proven, outcome.report()
    assert (
        "default values (switch off only: the original render is not installable: nvidia.com/gpu: trainer.devices"
        in (outcome.report())
    )
    assert "your values" in outcome.checked


def test_the_rewrite_is_read_from_an_installable_value_set(tmp_path: Path) -> None:
    """The user's values leave one workload a placeholder count, the chart's defaults are installable: the rewrite
    is read from the defaults, so it covers both workloads, and the user's values are checked with the switch off.
    Was: manual, 'the migration adds no claim to this template's pods' (read from the user's values)."""
    chart = chart_with(
        tmp_path,
        "launched",
        {
            "templates/a.yaml": LAUNCHED.format(name="train"),
            "templates/b.yaml": LAUNCHED.format(name="evaluate"),
            "values.yaml": "train:\n  gpus: 1\nevaluate:\n  gpus: 1\n",
        },
    )
    mine = tmp_path / "mine.yaml"
    mine.write_text("train:\n  gpus: 2\nevaluate:\n  gpus: evaluator.devices\n")
    options = ChartOptions(kube_version="1.34", values_files=(mine,))
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    assert {c.rel for c in outcome.changes} >= {"templates/a.yaml", "templates/b.yaml"}
    assert any(c.startswith("your values (switch off only") for c in outcome.checked)


def test_no_installable_value_set_proves_nothing(tmp_path: Path) -> None:
    """The proof itself: a value set whose original render is not installable is left out of proof D, and when no
    other value set with device requests proves the switch, the rewrite is manual work, said why."""
    from dramigrate.helm.outcome import Variation
    from dramigrate.helm.proveswitch import prove_switch
    from dramigrate.helm.renderpool import cached_render
    from dramigrate.helm.run import write_changes

    chart = chart_with(
        tmp_path,
        "launched",
        {"templates/d.yaml": LAUNCHED.format(name="train"), "values.yaml": "train:\n  gpus: trainer.devices\n"},
    )
    original = tmp_path / "original"
    shutil.copytree(chart, original)
    write_changes(_fix_with(chart, "train.gpus=4"))
    options = ChartOptions(kube_version="1.34").render()
    render = cached_render(original, options)
    defaults = Variation(
        "default values",
        options,
        invalid="nvidia.com/gpu: trainer.devices is not an integer",
        invalid_objects=frozenset({("Deployment", "", "train")}),
    )
    outcome = ChartOutcome(original, "launched")
    prove_switch(outcome, original, [(defaults, render, render.stream, [])], _with(chart), "patch", "fix")
    assert outcome.checked == [
        "default values (switch off only: the original render is not installable: "
        "nvidia.com/gpu: trainer.devices is not an integer)"
    ]
    assert outcome.manual.startswith("no value set with device requests renders a chart Kubernetes would install")


TOLERATED = deployment(
    "train",
    """\
      {{- include "launched.tolerations" . | nindent 6 }}
      containers:
      - name: train
        image: train
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.train.gpus }}
""",
)

TOLERATIONS_HELPER = """\
{{- define "launched.tolerations" -}}
{{- with .Values.train.tolerations }}
tolerations:
{{ toYaml . }}
{{- end }}
{{- end }}
"""


def test_an_invalid_count_in_one_workload_still_proves_the_others(tmp_path: Path) -> None:
    """The user's values leave one workload a placeholder count and give another a spot toleration, which a helper
    writes (`tolerations:`). Once proven with the whole value set checked with the switch off only, because of the
    other workload's placeholder; then only the objects holding the invalid count were left out of the comparison,
    which caught the device toleration repeating the helper's key (manual work). The rewrite now appends it to the
    helper's list, so the comparison apart from the placeholder passes and the chart is proven."""
    chart = chart_with(
        tmp_path,
        "launched",
        {
            "templates/train.yaml": TOLERATED,
            "templates/_helpers.tpl": TOLERATIONS_HELPER,
            "templates/evaluate.yaml": LAUNCHED.format(name="evaluate"),
            "values.yaml": "train:\n  gpus: 1\n  tolerations: []\nevaluate:\n  gpus: 1\n",
        },
    )
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "train:\n  gpus: 2\n  tolerations:\n  - key: spot\n    operator: Exists\nevaluate:\n  gpus: evaluator.devices\n"
    )
    options = ChartOptions(kube_version="1.34", values_files=(mine,))
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    # the device toleration now joins the list the helper writes (calltolerations), so the spot toleration is kept;
    # your values are compared with the switch on apart from the placeholder's objects, and that is said
    assert outcome.proven, outcome.report()
    assert any(
        c.startswith("your values (switch off only: the original render is not installable") for c in outcome.checked
    )


def _with(chart: Path) -> Callable[[Any, bool], Any]:
    from dramigrate.helm.outcome import _with_switch
    from dramigrate.helm.renderpool import cached_render

    return lambda options, on: cached_render(chart, _with_switch(options, on))


LISTED_TOLERATIONS = deployment(
    "server",
    """\
      containers:
      - name: server
        image: triton
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpuPerNode }}
      tolerations:
      - effect: NoSchedule
        key: dedicated
        operator: Exists
  {{-   with .Values.kubernetes }}
  {{-     with .tolerations }}
  {{        toYaml . | indent 4 }}
  {{-     end }}
  {{-   end }}
      volumes:
      - name: shm
        emptyDir: {}
""",
)


def test_a_literal_tolerations_list_with_the_values_list_appended_gets_the_device_toleration(tmp_path: Path) -> None:
    """triton's LWS chart writes its own tolerations, then appends the values' list with `{{ toYaml . | indent 6 }}`
    inside two `with` blocks. Was: manual, 'pattern F (another template shape): the pod's tolerations have a shape
    the rewrite does not merge into'; now the DRA branch appends the device plugin's toleration at the list's end."""
    values = "gpuPerNode: 4\nkubernetes:\n  tolerations: []\n"
    chart = chart_with(tmp_path, "listed", {"templates/d.yaml": LISTED_TOLERATIONS, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("kubernetes:\n  tolerations: [{operator: Exists}]\n")  # one line each: the chart indents no more
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [4]
    assert [t.get("key") for t in pods["server"]["tolerations"]] == ["dedicated", None, "nvidia.com/gpu"]


PARALLELISM = """\
{{- $pp := 1 }}
{{- $tp := 1 }}
{{- with $.Values.model }}
{{-   with .parallelism }}
{{-     with .pipeline }}
{{-       $pp = (int .) }}
{{-     end }}
{{-     with .tensor }}
{{-       $tp = (int .) }}
{{-     end }}
{{-   end }}
{{- else }}
{{-   fail "Property '.model' is required." }}
{{- end }}
{{- $gpus := mul $pp $tp }}
{{- if .Values.gated }}
{{-   $gpus = 0 }}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
      - name: server
        image: triton
        resources:
          limits:
            nvidia.com/gpu: {{ $gpus }}
"""


def test_a_count_computed_from_variables_set_in_nested_with_blocks(tmp_path: Path) -> None:
    """triton's TensorRT-LLM chart: `$model_gpus := mul $model_pp $model_tp`, each set three `with` blocks deep
    (`with .Values.model`, `with .parallelism`, `with .tensor`). Was: manual, 'the device request reads `$tp`,
    assigned inside `{{ with .tensor }}`'; now the claim template sets the variables inside the same blocks, and an
    `if` block's assignment is carried the same way."""
    values = "gated: false\nmodel:\n  parallelism:\n    tensor: 2\n"
    chart = chart_with(tmp_path, "parallel", {"templates/d.yaml": PARALLELISM, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("model:\n  parallelism:\n    tensor: 4\n    pipeline: 2\n")
    assert list(dra_render(chart, on)[1].values()) == [8]
    on.write_text("model:\n  parallelism:\n    pipeline: 3\n")
    assert list(dra_render(chart, on)[1].values()) == [6]  # the chart's default tensor 2
    on.write_text("gated: true\n")
    _, counts, pods = dra_render(chart, on)
    assert not counts and "resourceClaims" not in pods["server"]


PINNED_FROM_VALUES = deployment(
    "server",
    """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: nvidia.com/gpu.product
                operator: In
                values:
                - {{ required "gpu is required" .Values.gpu }}
      containers:
      - name: server
        image: triton
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpuPerNode }}
""",
)


def test_a_product_label_the_template_selects_from_values_stays_on_the_pod(tmp_path: Path) -> None:
    """triton's charts write the label key in their node affinity and take its value from values
    (`nvidia.com/gpu.product In [{{ .Values.gpu }}]`): a label hack from values, which stays on the pods with a
    chart-label-from-values warning, as for a nodeSelector from values. Was: manual, 'the pods select nodes by a
    device label that a template writes itself'."""
    values = "gpu: NVIDIA-A10G\ngpuPerNode: 2\n"
    chart = chart_with(tmp_path, "pinned", {"templates/d.yaml": PINNED_FROM_VALUES, "values.yaml": values})
    outcome = fix_chart(chart)
    assert any(f.rule == "chart-label-from-values" and "nvidia.com/gpu.product" in f.message for f in outcome.findings)
    on = tmp_path / "on.yaml"
    on.write_text("gpu: NVIDIA-L4\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    terms = pods["server"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["NVIDIA-L4"]


GUARDED_TOLERATIONS = deployment(
    "server",
    """\
      {{- if .Values.spot }}
      tolerations:
        - key: spot
          operator: Exists
        {{- with .Values.tolerations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      containers:
        - name: server
          image: triton
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
)
OTHERWISE = "      {{- else }}\n      tolerations:\n        - key: reserved\n          operator: Exists\n"


def test_a_literal_tolerations_list_inside_an_if_else_is_left_to_the_user(tmp_path: Path) -> None:
    """A literal list in each branch of `{{- if .Values.spot }} ... {{- else }}`: the device toleration appended at
    the list's end went inside the first branch, so with spot=false the pod had its claim and no toleration, where
    the manifest migration of that render adds one, and the proof did not flip `spot` (it flips only keys the device
    requests follow). Now the shape is refused, named."""
    end = "      {{- end }}\n      containers:"
    text = GUARDED_TOLERATIONS.replace(end, OTHERWISE + end)
    values = "gpus: 1\nspot: true\ntolerations: []\n"
    chart = chart_with(tmp_path, "spot", {"templates/d.yaml": text, "values.yaml": values})
    outcome = _fix_with(chart)
    assert not outcome.changes
    assert "templates/d.yaml:13: pattern F (another template shape): the pod's tolerations have a shape" in (
        outcome.manual
    )


RANGED_TOLERATIONS = deployment(
    "server",
    """\
      {{- if ne (len .Values.tolerations) 0 }}
      tolerations:
      {{- range $t := .Values.tolerations }}
      - {{- if $t.key }}
        key: "{{ $t.key }}"
        {{- end }}
        {{- if $t.operator }}
        operator: "{{ $t.operator }}"
        {{- end }}
      {{- end }}
      {{- end }}
      containers:
        - name: server
          image: triton
          resources:
            limits:
              memory: 8Gi
              {{- if gt (int .Values.gpus) 0 }}
              nvidia.com/gpu: {{ .Values.gpus }}
              {{- end }}
""",
)


@pytest.mark.parametrize(
    ("template", "own"),
    [(RANGED_TOLERATIONS, []), (GUARDED_TOLERATIONS, ["spot"])],
    ids=["range-fields", "literal-list"],
)
def test_a_tolerations_list_inside_its_own_if_gets_the_device_toleration(
    tmp_path: Path, template: str, own: list[str]
) -> None:
    """arena's serving charts write `tolerations:` only when the values list is not empty, each item's fields
    through a `range` with an `if` per field; a literal list may sit inside `{{- if .Values.spot }}` the same way.
    Was: manual, 'pattern F (another template shape): the pod's tolerations have a shape the rewrite does not merge
    into'; now the key is written when the chart's `if` or the DRA branch holds, the chart's items under their own
    `if`, the device toleration after them, so a pod with no tolerations of its own still gets it."""
    values = "gpus: 1\nspot: false\ntolerations: []\n"
    chart = chart_with(tmp_path, "guarded", {"templates/d.yaml": template, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("gpus: 2\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    assert [t.get("key") for t in pods["server"]["tolerations"]] == ["nvidia.com/gpu"]
    on.write_text("gpus: 2\nspot: true\ntolerations: [{key: user, operator: Exists}]\n")
    keys = [t.get("key") for t in dra_render(chart, on)[2]["server"]["tolerations"]]
    assert keys == [*own, "user", "nvidia.com/gpu"]


PRESET_HELPER = """\
{{- define "emb.values" -}}
{{- mergeOverwrite (index .Values.presets .Values.platform | deepCopy) (deepCopy .Values) | toYaml -}}
{{- end -}}
"""
PRESET_CONTEXT = """\
{{- $pv := include "emb.values" . | fromYaml -}}
{{- $ctx := merge (dict "Values" $pv) (omit . "Values") -}}
{{- with $ctx -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-server
spec:
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      containers:
      - name: server
        image: emb
        resources:
          limits:
            {{- toYaml .Values.resources.limits | nindent 12 }}
            {{- if .Values.gpus }}
            amd.com/gpu: "{{ .Values.gpus }}"
            {{- end }}
{{- end -}}
"""


def test_a_device_key_inside_with_a_context_the_template_builds(tmp_path: Path) -> None:
    """AMD's AIM charts merge a per-platform preset into the values (`$ctx := merge (dict "Values" $pv) ...`,
    `with $ctx`), and the count comes from the preset. Was: manual, 'the device key is inside `with $ctx`'; now the
    DRA branch and the claim template read the count through `$ctx`, which the claim template assigns the same way."""
    values = "platform: big\npresets:\n  big: {gpus: 2}\n  small: {gpus: 1}\n  cpu: {gpus: 0}\n"
    values += "resources:\n  limits:\n    memory: 8Gi\n"
    files = {"templates/_helpers.tpl": PRESET_HELPER, "templates/d.yaml": PRESET_CONTEXT, "values.yaml": values}
    chart = chart_with(tmp_path, "preset", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    for given, want in (("platform: small\n", [1]), ("gpus: 4\n", [4]), ("platform: cpu\n", [])):
        on.write_text(given)
        _, counts, pods = dra_render(chart, on)
        assert list(counts.values()) == want
        limits = pods["release-name-server"]["containers"][0]["resources"]["limits"]
        assert limits == {"memory": "8Gi"}
        assert ("resourceClaims" in pods["release-name-server"]) == bool(want)


WITH_COUNT = TWO_KEYS.replace(
    """          limits:
            memory: {{ .Values.resources.limits.memory | quote }}
            nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" | quote }}
          requests:
            memory: {{ .Values.resources.requests.memory | quote }}
            nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
""",
    """          limits:
            memory: 8Gi
            {{- with .Values.gpus }}
            nvidia.com/gpu: {{ . }}
            {{- end }}
""",
)


def test_a_count_written_as_the_dot_of_its_with_block(tmp_path: Path) -> None:
    """`{{- with .Values.gpus }}` then `nvidia.com/gpu: {{ . }}`: the count is the value the `with` reads, so the
    claim template counts `.Values.gpus` (was: the claim template read `.` at the chart's root, and the rewrite was
    not proven)."""
    chart = chart_with(tmp_path, "server", {"templates/d.yaml": WITH_COUNT, "values.yaml": "gpus: 2\n"})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("gpus: 3\n")
    assert list(dra_render(chart, on)[1].values()) == [3]
    on.write_text("gpus: 0\n")
    _, counts, pods = dra_render(chart, on)
    assert not counts and "resourceClaims" not in pods["server"]


MODE_CHAIN = deployment(
    "trainer",
    """\
      containers:
        - name: trainer
          image: wmlce
          resources:
            limits:
            {{- if .Values.ddl.enabled }}
              nvidia.com/gpu: {{ .Values.ddl.gpuPerHost }}
            {{- else if .Values.distributed.mode }}
              nvidia.com/gpu: {{ .Values.distributed.gpuPerHost }}
            {{- else }}
              nvidia.com/gpu: {{ .Values.resources.gpu }}
            {{- end }}
""",
)
MODE_CHAIN_VALUES = """\
resources:
  gpu: 1
ddl:
  enabled: false
  gpuPerHost: 4
distributed:
  mode: false
  gpuPerHost: 2
"""


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("resources: {gpu: 3}", 3),
        ("ddl: {enabled: true, gpuPerHost: 8}", 8),
        ("distributed: {mode: true, gpuPerHost: 6}", 6),
        ("ddl: {enabled: true, gpuPerHost: 0}", 0),
        ("distributed: {mode: true, gpuPerHost: null}", 0),
    ],
)
def test_a_count_chosen_by_the_charts_own_branches_is_the_claims_count(
    tmp_path: Path, mode: str, expected: int
) -> None:
    """Was: manual, 'nvidia.com/gpu is asked for with two counts in one pod' for IBM's wmlce chart, whose `if`/`else
    if`/`else` chain writes the one device key with the count of the chart's mode. Now the claim asks for the count
    of the branch the values pick, and none (nor the toleration of a set count) where that count is 0 or null."""
    chart = chart_with(tmp_path, "modes", {"templates/d.yaml": MODE_CHAIN, "values.yaml": MODE_CHAIN_VALUES})
    fix_chart(chart)
    values = tmp_path / "mode.yaml"
    values.write_text(mode + "\n")
    _, counts, pods = dra_render(chart, values)
    assert list(counts.values()) == ([expected] if expected else [])
    pod = pods["trainer"]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    assert bool(pod.get("resourceClaims")) == bool(expected)
    assert bool(pod.get("tolerations")) == ("null" not in mode)
