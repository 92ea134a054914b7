"""Pattern A whose count is a template variable (AI-Hypercomputer/gpu-recipes: `{{ $gpusPerNode := min .Values.job.gpus
8 }}` above the workload, then `nvidia.com/gpu: {{ $gpusPerNode }}`): the new claim template must set the variable
the same way, or the rewritten chart does not render. Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = """\
{{ $nodes := div .Values.job.gpus 8 | max 1 }}
{{ $perNode := min .Values.job.gpus 8 }}
{{- $gpusPerNode := $perNode }}
{{- $name := printf "%s-serving" .Release.Name }}

apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  replicas: {{ $nodes }}
  selector:
    matchLabels: {app: serving}
  template:
    metadata:
      labels: {app: serving}
    spec:
      containers:
        - name: serving
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ $gpusPerNode }}
"""


SET_IN_PLACE = ("{{- $gpusPerNode := $perNode }}", '{{- $cfg := dict }}\n{{- $_ := set $cfg "gpus" $perNode }}')


@pytest.mark.parametrize(
    ("namespace", "count"),
    [("", ""), ("  namespace: {{ .Release.Namespace }}\n", ""), ("", "$cfg.gpus")],
    ids=["name", "namespace", "set-in-place"],
)
def test_the_claim_template_sets_the_variables_the_count_reads(tmp_path: Path, namespace: str, count: str) -> None:
    """Was: manual, 'resourceclaimtemplate.yaml:6: undefined variable "$gpusPerNode"' (the rewrite did not render);
    with a templated namespace the guard's variables were missed the same way; a dict filled by `$_ := set` reached
    the claim template empty."""
    text = DEPLOYMENT.replace("  name: {{ $name }}\n", "  name: {{ $name }}\n" + namespace)
    if count:
        text = text.replace(*SET_IN_PLACE).replace("{{ $gpusPerNode }}", "{{ $cfg.gpus }}")
    chart = chart_with(tmp_path, "recipe", {"templates/d.yaml": text, "values.yaml": "job:\n  gpus: 16\n"})
    fix_chart(chart)
    claims = (chart / "templates" / "resourceclaimtemplate.yaml").read_text()
    assert "$nodes" not in claims  # only what the count and the name read, and what those read in turn
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\njob: {gpus: 4}\n")
    docs, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [4]
    (claim_name,) = counts
    assert claim_name.startswith("release-name-serving-")  # the name's own variable, read in the claim template
    claim = pods["release-name-serving"]["resourceClaims"][0]
    assert claim["resourceClaimTemplateName"] == claim_name


def test_a_count_variable_set_inside_a_block_is_named(tmp_path: Path) -> None:
    """A variable the claim template cannot set the same way (assigned inside a `range`, once per item) is left to
    the user, named."""
    text = DEPLOYMENT.replace(
        "{{- $gpusPerNode := $perNode }}",
        "{{- $gpusPerNode := 0 }}\n{{- range .Values.job.pools }}\n{{- $gpusPerNode = $perNode }}\n{{- end }}",
    )
    chart = chart_with(
        tmp_path, "recipe", {"templates/d.yaml": text, "values.yaml": "job:\n  gpus: 16\n  pools: [a]\n"}
    )
    settings = Settings(kube_version="1.34")
    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")
    assert not outcome.changes
    assert (
        "templates/d.yaml:5: the device request reads `$gpusPerNode`, assigned inside `{{ range .Values.job.pools }}`"
        in (outcome.manual)
    )


DECLARED_IN_WITH = """\
{{- with .Values.server }}
{{- $gpus := mul .tp .pp }}
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
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ $gpus }}
{{- end }}
"""


def test_a_count_variable_declared_inside_the_block_around_the_workload_is_set_the_same_way(tmp_path: Path) -> None:
    """`{{ $gpus := ... }}` declared inside `{{ with .Values.server }}`, the block that holds the workload too (triton's
    conversion Job: `$model_gpu := 1` inside `if not $skip_conversion`): the claim template declares it at its top and
    sets it inside the same block, so the claim's count reads it. Was: manual, 'the device request reads `$gpus`,
    assigned inside `{{ with .Values.server }}`, so the claim template cannot set it the same way'."""
    values = "server:\n  tp: 2\n  pp: 1\n"
    chart = chart_with(tmp_path, "server", {"templates/d.yaml": DECLARED_IN_WITH, "values.yaml": values})
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\nserver: {tp: 2, pp: 3}\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [6]
    assert pods["server"]["resourceClaims"][0]["resourceClaimTemplateName"] in counts
    off = tmp_path / "off.yaml"
    off.write_text("server: null\n")
    assert dra_render(chart, off)[0] == []  # no server, no claim template
