"""Resource keys a template writes from the variables of a `range` over a values map. A container that writes its
device count literally (`nvidia.com/gpu: {{ .Values.gpus }}`) and also one resource key per entry of a values map
(`range $key, $value := .Values.devices`, `{{ $key }}: {{ $value }}`), in a leader and a worker pod
(kubeflow/arena's distributed-serving): keyedmap.py takes the map's devices into the claim (test_helm_keyed_map.py);
where the key line sits in an `if` of its own inside the `range`, with values that ask for a device through that
map, fix writes nothing and says what to change by hand. A container that writes its `resources:` key by key from a
values resources map, each value whole (`{{ $key }}:` then `toYaml $val`, KubeFATE's fateflow), is that map passed
through: the pass-through rewrite takes it. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
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
        - name: {name}
          image: busybox
          resources:
            limits:
              {{{{- if gt (int .Values.{name}Gpus) 0 }}}}
              nvidia.com/gpu: {{{{ .Values.{name}Gpus }}}}
              {{{{- end }}}}
              {{{{- range $key, $value := .Values.devices }}}}
              {{{{ $key }}}}: {{{{ $value }}}}
              {{{{- end }}}}
"""
FILES = {
    "templates/pods.yaml": POD.format(name="leader") + "---\n" + POD.format(name="worker"),
    "values.yaml": "leaderGpus: 1\nworkerGpus: 1\ndevices: {}\n",
}


def test_a_device_from_the_map_is_refused_with_the_line_of_the_map(tmp_path: Path) -> None:
    guarded = {  # the key line in an `if` of its own: not the shape keyedmap.py takes
        **FILES,
        "templates/pods.yaml": FILES["templates/pods.yaml"].replace(
            "              {{ $key }}: {{ $value }}\n",
            "              {{- if $value }}\n              {{ $key }}: {{ $value }}\n              {{- end }}\n",
        ),
    }
    chart = chart_with(tmp_path, "serving", guarded)
    amd = tmp_path / "amd.yaml"
    amd.write_text('leaderGpus: 0\nworkerGpus: 0\ndevices:\n  amd.com/gpu: "1"\n')
    options = ChartOptions(values_files=(amd,), kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")
    assert not outcome.proven
    assert "`.Values.devices`" in outcome.manual and "amd.com/gpu" in outcome.manual, outcome.report()
    assert "another branch" not in outcome.manual, outcome.report()
    # what to change by hand: the device out of the map, both pods' claims (above each `containers:`), its class;
    # or no chart change with an extended-resource class (was: 'ask for it with the chart's own count', an NVIDIA one)
    lines = guarded["templates/pods.yaml"].splitlines()
    keys = [n for n, line in enumerate(lines, 1) if line.strip() == "{{ $key }}: {{ $value }}"]
    heads = [n for n, line in enumerate(lines, 1) if line.strip() == "containers:"]
    assert f"templates/pods.yaml:{keys[0]}: pattern E" in outcome.manual, outcome.report()
    assert f"(the `range` above it; line {keys[1]} too)" in outcome.manual, outcome.manual
    assert "By hand: take amd.com/gpu out of `.Values.devices`" in outcome.manual
    assert f"a `resourceClaims` list in the pod spec above lines {heads[0]}, {heads[1]} (`containers:`)" in (
        outcome.manual
    )
    assert "amd.com/gpu asks for device class gpu.amd.com" in outcome.manual
    assert "`--strategy extended-resource`" in outcome.manual
    assert "chart's own count" not in outcome.manual
    fix_chart(chart)  # with the map empty, as the chart ships it, the chart's own counts are rewritten and proven
    assert "{{- range $key, $value := .Values.devices }}" in (chart / "templates" / "pods.yaml").read_text()


def _limits(chart: Path, values: str) -> list[Any]:
    """The limits of each Deployment's container, the chart rendered for Kubernetes 1.34 with these values."""
    given = chart.parent / "given.yaml"
    given.write_text(values)
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        for d in yaml.safe_load_all(m.text)
    ]
    return [
        d["spec"]["template"]["spec"]["containers"][0]["resources"].get("limits")
        for d in docs
        if d and d["kind"] == "Deployment"
    ]


def test_a_device_the_map_adds_after_the_rewrite_fails_the_render_with_the_switch_on(tmp_path: Path) -> None:
    """The chart rewritten with its map empty: a device a user puts in the map later would stay on the device plugin
    beside the claims with the switch on (was: rendered so, without a word); now that render fails and says why and
    the way back, and with the switch off the map renders as before. A resource the migration leaves alone
    (`rdma/shared_ib`) still renders with the switch on."""
    chart = chart_with(tmp_path, "serving", FILES)
    fix_chart(chart)
    with pytest.raises(HelmError, match="does not take \\(it takes nvidia.com/gpu\\): set dra.enabled=false"):
        _limits(chart, "devices:\n  amd.com/gpu: 1\n")
    off = _limits(chart, "dra: {enabled: false}\ndevices:\n  amd.com/gpu: 1\n")
    assert off == [{"nvidia.com/gpu": 1, "amd.com/gpu": 1}] * 2, off
    assert _limits(chart, "devices:\n  rdma/shared_ib: 1\n") == [{"rdma/shared_ib": 1}] * 2


KEY_BY_KEY = deployment(
    "flow",
    """\
      containers:
        - name: flow
          image: busybox
          {{- if .Values.flow.resources }}
          resources:
          {{- range $key, $val := .Values.flow.resources }}
            {{ $key }}:
{{ toYaml $val | indent 14 }}
          {{- end }}
          {{- end }}
""",
)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", ""),
        (
            "            {{ $key }}:\n{{ toYaml $val | indent 14 }}",
            "            {{ $key }}: {{- $val | toYaml | nindent 14 }}",
        ),
        ("if .Values.flow.resources }}", "with .Values.flow.resources }}"),
    ],
    ids=["next-line", "same-line", "range-dot-in-with"],
)
def test_a_resources_map_written_key_by_key_is_passed_through(tmp_path: Path, before: str, after: str) -> None:
    """Each key of the map, then its value whole, is the map written as `toYaml` writes it, `claims` too: the pod
    gets `flow.resourceClaims` passed through, and the DRA values ask for the GPU by a claim (was: manual work,
    pattern E, 'the key `$key` (with `$val` its content) is each key of the map'). So is a `range` over `.` inside
    `with` the map."""
    values = "flow:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n    requests:\n      cpu: 1\n"
    template = KEY_BY_KEY.replace(before, after)
    if after.startswith("with"):
        template = template.replace(":= .Values.flow.resources }}", ":= . }}")
    chart = chart_with(tmp_path, "flow", {"templates/flow.yaml": template, "values.yaml": values})
    fix_chart(chart)
    text = (chart / "templates" / "flow.yaml").read_text()
    assert "{{- with .Values.flow.resourceClaims }}" in text
    assert [line for line in text.splitlines() if line in template.splitlines()] == template.splitlines()
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    pod = pods["flow"]
    assert list(counts.values()) == [1], counts
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "requests": {"cpu": 1}}, pod
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"], pod


def test_a_gpu_file_for_a_map_written_key_by_key_gets_its_dra_variant(tmp_path: Path) -> None:
    """KubeFATE's shape: values.yaml leaves the map out, a `-f` file sets it with the GPU; the file's DRA variant
    renders the claim, and without it the chart renders as before."""
    chart = chart_with(tmp_path, "flow", {"templates/flow.yaml": KEY_BY_KEY, "values.yaml": "flow: {}\n"})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("flow:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n")
    fix_chart(chart, values=(gpu,))
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert list(counts.values()) == [2] and pods["flow"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    _, counts, pods = dra_render(chart, gpu)
    assert not counts and pods["flow"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}


def test_a_map_not_named_resources_written_key_by_key_names_the_range_and_the_map(tmp_path: Path) -> None:
    """The pass-through names its siblings after a map named `resources`; a range over another map stays manual work,
    and the reason names the range and the shapes that are taken."""
    values = "flow:\n  res:\n    limits:\n      nvidia.com/gpu: 1\n"
    template = KEY_BY_KEY.replace(".Values.flow.resources", ".Values.flow.res")
    chart = chart_with(tmp_path, "flow", {"templates/flow.yaml": template, "values.yaml": values})
    outcome = run_chart(
        chart,
        ChartOptions(kube_version="1.34"),
        load_rules(),
        Settings(kube_version="1.34"),
        Target.parse("1.34"),
        "fix",
    )
    assert not outcome.proven
    assert "templates/flow.yaml:18: pattern E" in outcome.manual, outcome.report()
    assert "the map `.Values.flow.res`, written key by key by the `range` at line 17" in outcome.manual
    assert "or key by key with each value written whole (`$key:`, then `toYaml $val`" in outcome.manual


FLAT = deployment(
    "flat",
    """\
      containers:
        - name: flat
          image: busybox
          resources:
            limits:
              {{- range $name, $count := .Values.gpuResources }}
              {{ $name }}: {{ $count }}
              {{- end }}
""",
)


@pytest.mark.parametrize(
    "section",
    [
        "",
        "              memory: 1Gi\n",
    ],
    ids=["alone", "beside-memory"],
)
def test_a_flat_resources_map_written_entry_by_entry_as_a_section_is_passed_through(
    tmp_path: Path, section: str
) -> None:
    """A map of quantities by resource name (`gpuResources: {nvidia.com/gpu: 1}`) that a `range` writes entry by entry
    as the container's `limits:` is that section's content, as `toYaml` of it would be: the section-content
    pass-through takes it, proven (was: manual work, pattern E, the name each key of the map). So it does beside keys
    the template writes itself (`memory: 1Gi`, which the DRA render keeps; was: 'the values map gpuResources is not
    passed through as is')."""
    template = FLAT.replace("            limits:\n", "            limits:\n" + section)
    chart = chart_with(
        tmp_path, "flat", {"templates/flat.yaml": template, "values.yaml": "gpuResources:\n  nvidia.com/gpu: 1\n"}
    )
    fix_chart(chart)
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1], counts
    assert pods["flat"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], pods
    limits = pods["flat"]["containers"][0]["resources"].get("limits")
    assert limits == ({"memory": "1Gi"} if section else None), pods
