"""Pattern A inside `range $i := until N`: one bare Pod or one workload per rank (a GPU proof-of-concept chart's
`range $i := until (int .Values.replicaCount)`, triton's multi-node chart with its leader for rank 0 and a worker for
every other rank). Every pod of the range gets its own claim from the one claim template of its pod in the template.
Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T134 = Target.parse("1.34")

# one bare Pod per rank: `.` is the rank inside the range, so values are read through `$root`; the pod's name reads a
# variable the range sets per rank
PER_RANK = """\
{{- $root := . -}}
{{- $replicaCount := .Values.replicaCount -}}
{{- range $i := until (int $replicaCount) }}
{{- $rank := add $i 1 }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ $root.Release.Name }}-{{ $rank }}
spec:
  containers:
    - name: main
      image: cuda
      resources:
        limits:
          nvidia.com/gpu: {{ index $root.Values.resources.limits "nvidia.com/gpu" }}
{{- end }}
"""
PER_RANK_VALUES = "replicaCount: 2\nresources:\n  limits:\n    nvidia.com/gpu: 4\n"

# a Deployment for rank 0 (the leader) and one for every other rank (the workers), each with one GPU
LEADER_AND_WORKERS = """\
{{- $pods := mul .Values.model.pp .Values.model.tp }}
{{- range $i := until (int $pods) }}
{{- if eq $i 0 }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-leader
spec:
  selector:
    matchLabels: {rank: {{ $i | quote }}}
  template:
    metadata:
      labels: {rank: {{ $i | quote }}}
    spec:
      containers:
      - name: leader
        image: triton
        resources:
          limits:
            nvidia.com/gpu: 1
{{- else }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-worker{{ $i }}
spec:
  selector:
    matchLabels: {rank: {{ $i | quote }}}
  template:
    metadata:
      labels: {rank: {{ $i | quote }}}
    spec:
      containers:
      - name: worker-{{ $i }}
        image: triton
        resources:
          limits:
            nvidia.com/gpu: 1
{{- end }}
{{- end }}
"""
LEADER_VALUES = "model:\n  pp: 1\n  tp: 4\n"


def fixed(tmp_path: Path, template: str, values: str, *sets: str) -> tuple[Path, ChartOutcome]:
    chart = chart_with(tmp_path, "ranks", {"templates/pods.yaml": template, "values.yaml": values})
    outcome = run_chart(chart, ChartOptions(set_values=sets), RULES, Settings(), T134, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return chart, outcome


def docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    return [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]


def pods(rendered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each pod spec of a render by its object's name."""
    return {
        d["metadata"]["name"]: d["spec"] if d["kind"] == "Pod" else d["spec"]["template"]["spec"]
        for d in rendered
        if d["kind"] in ("Pod", "Deployment")
    }


def claim_templates(rendered: list[dict[str, Any]]) -> dict[str, int]:
    """Each ResourceClaimTemplate's device count by name."""
    return {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }


def test_a_pod_per_rank_gets_its_claim_from_one_claim_template(tmp_path: Path) -> None:
    """Was: manual, 'the device key is inside `range $i := until (int $replicaCount)`'. Now every rank's pod asks
    for the chart's count through its own claim from the one claim template (named without the rank), no rank keeps
    the device-plugin request, and no rank, no claim template."""
    chart, _ = fixed(tmp_path, PER_RANK, PER_RANK_VALUES)
    rendered = docs(chart, "replicaCount=3", "resources.limits.nvidia\\.com/gpu=2")
    ((name, count),) = claim_templates(rendered).items()
    assert count == 2 and name.startswith("release-name-") and not name.startswith("release-name-1-")
    by_name = pods(rendered)
    assert sorted(by_name) == ["release-name-1", "release-name-2", "release-name-3"]
    for spec in by_name.values():
        assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": name}]
        assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert docs(chart, "replicaCount=0") == []  # no rank, no claim template
    off = pods(docs(chart, "dra.enabled=false"))
    assert [spec["containers"][0]["resources"] for spec in off.values()] == [{"limits": {"nvidia.com/gpu": 4}}] * 2


def test_the_leader_and_the_workers_of_a_range_share_their_claim_template(tmp_path: Path) -> None:
    """The leader (`if eq $i 0`) and the workers (its `else`) of one range, each with one GPU: each pod gets a claim,
    all from one claim template (`-leader-worker`), which renders when the range renders a pod (one rank: the leader
    alone; no rank, none). Was: manual, 'the device key is inside `range $i := until (int $pods)`'; then two claim
    templates of the same spec, each with its own defines and its own replay of the range (+26 lines)."""
    chart, _ = fixed(tmp_path, LEADER_AND_WORKERS, LEADER_VALUES)
    rendered = docs(chart)
    ((name, count),) = claim_templates(rendered).items()
    assert count == 1 and name.startswith("release-name-leader-worker-")
    by_name = pods(rendered)
    assert sorted(by_name) == [
        "release-name-leader",
        "release-name-worker1",
        "release-name-worker2",
        "release-name-worker3",
    ]
    for spec in by_name.values():
        assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": name}]
        assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    text = (chart / "templates" / "resourceclaimtemplate.yaml").read_text()
    assert text.count("$pods := ") == 1 and text.count("kind: ResourceClaimTemplate") == 1
    assert text.count('.draClaimSpec" -}}') == 1 and "range" not in text  # one spec; no replay of the ranks
    alone = docs(chart, "model.tp=1")
    assert sorted(d["kind"] for d in alone) == ["Deployment", "ResourceClaimTemplate"]
    assert docs(chart, "model.pp=0") == []  # no rank, no claim template


def test_pods_of_a_range_under_conditions_that_are_not_each_others_negation_keep_their_claim_templates(
    tmp_path: Path,
) -> None:
    """The workers under their own `if` (rank above 0, and only while `.Values.workers` is on), not the `else` of the
    leader's: one claim template would render for values where neither pod does; each keeps its own, which renders
    when the range renders its pod."""
    template = LEADER_AND_WORKERS.replace("{{- else }}", "{{- end }}\n{{- if and (gt $i 0) $.Values.workers }}")
    chart, _ = fixed(tmp_path, template, LEADER_VALUES + "workers: true\n")
    templates = claim_templates(docs(chart))
    assert sorted(templates.values()) == [1, 1]
    alone = docs(chart, "workers=false")
    assert sorted(d["kind"] for d in alone) == ["Deployment", "ResourceClaimTemplate"]  # no worker, no worker template
    assert docs(chart, "model.pp=0") == []


def test_a_pod_under_a_condition_on_a_variable_set_in_the_range_is_manual_work_named(tmp_path: Path) -> None:
    """The claim template replays the range to learn whether it renders the pod; a condition on a variable the range
    body sets (`$rank := add $i 1`, then `if gt $rank 1`) is not replayed: manual, named."""
    template = PER_RANK.replace("---\n", "{{- if gt $rank 1 }}\n---\n").replace(
        "{{- end }}\n", "{{- end }}\n{{- end }}\n"
    )
    chart = chart_with(tmp_path, "ranks", {"templates/pods.yaml": template, "values.yaml": PER_RANK_VALUES})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T134, "fix")
    assert not outcome.changes
    assert "reads `$rank`, set inside the `range` for each item" in outcome.manual, outcome.report()


# pattern B inside the range: the user's resources map, read from the root (`.` is the rank there)
PER_RANK_MAP = """\
{{- $root := . -}}
{{- range $i := until (int .Values.replicaCount) }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ $.Release.Name }}-{{ $i }}
spec:
  containers:
    - name: main
      image: cuda
      resources:
        {{- toYaml $root.Values.resources | nindent 8 }}
{{- end }}
"""


@pytest.mark.parametrize("root", ["$root", "$"])
def test_a_pod_per_rank_takes_the_resource_claims_beside_its_resources_map(tmp_path: Path, root: str) -> None:
    """`toYaml $.Values.resources` (or through the chart's `$root := .`) inside `range $i := until N`: every rank's
    pod takes the `resourceClaims` the DRA values file sets beside `resources`. Was: manual, the rewritten chart's
    pods had no claims (the map read from `$` was not known as the values map `resources`)."""
    template = PER_RANK_MAP.replace("$root.Values", f"{root}.Values")
    chart, outcome = fixed(tmp_path, template, PER_RANK_VALUES)
    assert (chart / "values-dra.yaml").is_file()
    rendered = [
        d
        for m in render_chart(
            chart, RenderOptions(values_files=(chart / "values-dra.yaml",), set_values=("replicaCount=3",))
        )
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    ((name, count),) = claim_templates(rendered).items()
    assert count == 4
    by_name = pods(rendered)
    assert sorted(by_name) == ["release-name-0", "release-name-1", "release-name-2"]
    for spec in by_name.values():
        assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": name}]
        assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


# one container per step of the range, in one pod (a job executor's `range untilStep 0 (int .Values.executors) 1`);
# the GPU count is read through a variable set after `containers:`
PER_STEP = deployment(
    "executors",
    """\
      containers:
        {{- $gpus := .Values.gpus }}
        {{- range untilStep 0 (int .Values.executors) 1 }}
      - name: executor-{{ . }}
        image: cuda
        resources:
          limits:
            {{- if $.Values.gpu }}
            nvidia.com/gpu: {{ $gpus }}
            {{- end }}
        {{- end }}
""",
    app="x",
)


@pytest.mark.parametrize("steps", ["untilStep 0 (int .Values.executors) 1", "until (int .Values.executors)"])
def test_a_container_per_step_gets_its_own_request_of_the_pod_claim(tmp_path: Path, steps: str) -> None:
    """Was: manual, 'the device key is inside `range untilStep ...`, one container per step'. Now the claim
    template's requests come from the same range: one container alone asks for the whole claim, several each name
    their own request (as the migration names them), no container no claim, and the proof renders the number of
    containers changed and set to 0."""
    template = PER_STEP.replace("untilStep 0 (int .Values.executors) 1", steps)
    chart = chart_with(
        tmp_path,
        "executors",
        {"templates/deployment.yaml": template, "values.yaml": "executors: 1\ngpu: true\ngpus: 1\n"},
    )
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T134, "fix")
    assert outcome.proven, outcome.report()
    assert {"executors changed to 2", "executors flipped to 0"} <= set(outcome.checked)
    write_changes(outcome)
    three = docs(chart, "executors=3", "gpus=2")
    (template_doc,) = [d for d in three if d["kind"] == "ResourceClaimTemplate"]
    requests = template_doc["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [(f"executor-{k}-gpu", 2) for k in range(3)]
    spec = pods(three)["executors"]
    assert [c["resources"] for c in spec["containers"]] == [
        {"claims": [{"name": "gpu", "request": f"executor-{k}-gpu"}]} for k in range(3)
    ]
    one = docs(chart)
    assert pods(one)["executors"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert [d["kind"] for d in docs(chart, "executors=0")] == ["Deployment"]
    off = pods(docs(chart, "dra.enabled=false", "executors=2"))["executors"]
    assert [c["resources"] for c in off["containers"]] == [{"limits": {"nvidia.com/gpu": 1}}] * 2


@pytest.mark.parametrize("width", [60, 62])
def test_a_long_container_name_per_step_names_its_request_as_the_migration_does(tmp_path: Path, width: int) -> None:
    """Was: a container named with 60 or more characters asked for the request `<name>-gpu`, past the 63 characters a
    request name may have: the claim template was invalid and differed from the manifest migration, which cuts the
    name there. Now the template cuts it the same way, and the proof over the steps holds."""
    long_name = "executor-".ljust(width - 2, "x")  # `width` characters with `-<step>`; 62: the cut ends with a `-`
    template = PER_STEP.replace("name: executor-{{ . }}", f"name: {long_name}-{{{{ . }}}}")
    chart = chart_with(
        tmp_path,
        "executors",
        {"templates/deployment.yaml": template, "values.yaml": "executors: 2\ngpu: true\ngpus: 1\n"},
    )
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T134, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    rendered = docs(chart, "executors=3")
    (template_doc,) = [d for d in rendered if d["kind"] == "ResourceClaimTemplate"]
    names = [r["name"] for r in template_doc["spec"]["spec"]["devices"]["requests"]]
    assert names == [f"{long_name}-{k}-gpu"[:63].rstrip("-") for k in range(3)]
    claims = [c["resources"]["claims"][0]["request"] for c in pods(rendered)["executors"]["containers"]]
    assert claims == names
