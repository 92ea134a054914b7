"""Pattern D through a chain of helpers: the workload includes a helper that includes the one writing the device key
(llama-cpp-server's `podSpec` -> `containerSpec`). fix follows the chain when each helper passes its own context on:
the DRA branch at the helper that writes the key, `resourceClaims` where the pod spec is written (the workload
template or the helper that writes it), the switch read from the context the call site gives. A hop that passes
another object is reported with its line. Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RESOURCES = """\
{{- define "app.resources" -}}
limits:
  nvidia.com/gpu: {{ .Values.gpus }}
{{- end -}}
"""
CONTAINER = """\
{{- define "app.container" -}}
- name: main
  image: busybox
  resources:
    {{- include "app.resources" ARG | nindent 4 }}
{{- end -}}
"""
POD = """\
{{- define "app.pod" -}}
containers:
  {{- include "app.container" . | nindent 2 }}
{{- end -}}
"""
DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
BODY
""",
)
IN_TEMPLATE = """\
      containers:
        {{- include "app.container" . | nindent 8 }}"""
IN_HELPER = """\
      {{- include "app.pod" . | nindent 6 }}"""


def _chart(root: Path, body: str, arg: str = ".") -> Path:
    files = {
        "templates/_helpers.tpl": RESOURCES + CONTAINER.replace("ARG", arg) + POD,
        "templates/deploy.yaml": DEPLOYMENT.replace("BODY", body),
        "values.yaml": "gpus: 2\n",
    }
    return chart_with(root, "app", files)


def _fix(chart: Path) -> Any:
    settings = Settings(kube_version="1.36")
    return run_chart(chart, ChartOptions(), load_rules(), settings, Target.parse("1.36"), "fix")


def _pod(chart: Path, values: str) -> dict[str, Any]:
    extra = chart.parent / "extra.yaml"
    extra.write_text(values)
    manifests = render_chart(chart, RenderOptions(values_files=(extra,), kube_version="1.36"))
    docs = [d for m in manifests for d in yaml.safe_load_all(m.text) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    claims = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    return {"spec": deployment["spec"]["template"]["spec"], "templates": claims}


def _assert_switch_turns(chart: Path) -> None:
    off = _pod(chart, "dra: {enabled: false}\n")
    assert off["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "resourceClaims" not in off["spec"] and not off["templates"]
    on = _pod(chart, "gpus: 2\n")
    container = on["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
    claim = container["resources"]["claims"][0]["name"]
    [entry] = on["spec"]["resourceClaims"]
    [template] = on["templates"]
    assert entry["name"] == claim and entry["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2


@pytest.mark.parametrize(
    "body",
    [
        IN_TEMPLATE,
        '      containers:\n      {{- include "app.container" . | nindent 6 }}',
        '      containers:\n{{ include "app.container" . | indent 6 }}',
    ],
    ids=["deeper", "nindent-at-the-key", "indent-from-column-0"],
)
def test_a_two_helper_chain_under_the_workloads_containers_is_rewritten_and_proven(tmp_path: Path, body: str) -> None:
    """Also where the include line sits at the column of `containers:` or at column 0 and its `nindent`/`indent` puts
    the list at the key's column (YAML reads a list there as the key's): was 'no `containers:` above the helper's
    call site or its chain'."""
    chart = _chart(tmp_path, body)
    outcome = _fix(chart)
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    _assert_switch_turns(chart)
    helpers = (chart / "templates/_helpers.tpl").read_text()
    assert 'define "app.resources.dra"' in helpers  # the DRA branch sits at the helper that writes the key


def test_a_pod_spec_written_by_a_helper_gets_its_resource_claims_there(tmp_path: Path) -> None:
    chart = _chart(tmp_path, IN_HELPER)
    outcome = _fix(chart)
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    _assert_switch_turns(chart)
    pod_helper = (chart / "templates/_helpers.tpl").read_text().split('define "app.pod"')[1]
    assert "resourceClaims:" in pod_helper.split("{{- end -}}")[0]  # the entry is written where the pod spec is


def test_a_chain_that_passes_another_object_is_reported_at_that_include(tmp_path: Path) -> None:
    """A dict that hands on values of its own making as `Values` (not the chart's): no switch in values.yaml reaches
    the helper through it."""
    arg = '(dict "Values" (dict "gpus" .Values.gpus))'
    chart = _chart(tmp_path, IN_TEMPLATE, arg=arg)
    outcome = _fix(chart)
    assert not outcome.proven and not outcome.changes
    want = (
        f"templates/_helpers.tpl:9: the helper app.container includes app.resources with `{arg}`, not its own context"
    )
    assert want in outcome.manual, outcome.manual


# llm-d-modelservice's shape: the workload includes a container helper with a dict of its role's values, which includes
# the resources helper with another dict, each handing the chart's values on as `Values`
DICT_RESOURCES = """\
{{- define "app.resources" -}}
resources:
  limits:
    memory: 1Gi
    nvidia.com/gpu: {{ .gpus }}
{{- end -}}
"""
DICT_CONTAINER = """\
{{- define "app.container" -}}
- name: {{ .role }}
  image: busybox
  {{- include "app.resources" (dict "gpus" .spec.gpus "Values" .Values) | nindent 2 }}
{{- end -}}
"""
DICT_SITE = """\
      containers:
        {{- include "app.container" (dict "role" "decode" "spec" .Values.decode "Values" .Values) | nindent 8 }}"""


def test_a_chain_of_helpers_given_dicts_reads_the_count_through_each_dict(tmp_path: Path) -> None:
    """Was manual: 'the helper app.container includes app.resources with `(dict "gpus" .spec.gpus "Values" .Values)`,
    not its own context'. The switch is the chart's dra.enabled (each dict hands the values on), and the pod's claim
    reads the count the way the helper does: decode.gpus through both dicts."""
    files = {
        "templates/_helpers.tpl": DICT_RESOURCES + DICT_CONTAINER,
        "templates/deploy.yaml": DEPLOYMENT.replace("BODY", DICT_SITE),
        "values.yaml": "decode:\n  gpus: 2\n",
    }
    chart = chart_with(tmp_path, "app", files)
    outcome = _fix(chart)
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    off = _pod(chart, "dra: {enabled: false}\n")
    assert off["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1Gi", "nvidia.com/gpu": 2}
    assert "resourceClaims" not in off["spec"] and not off["templates"]
    on = _pod(chart, "decode: {gpus: 3}\n")
    container = on["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"memory": "1Gi"}
    [entry] = on["spec"]["resourceClaims"]
    [template] = on["templates"]
    assert entry["name"] == container["resources"]["claims"][0]["name"]
    assert entry["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 3
    none = _pod(chart, "decode: {gpus: 0}\n")
    assert "resourceClaims" not in none["spec"] and not none["templates"]


def test_the_old_cluster_message_of_a_chart_helper_given_the_root_names_values_yaml(tmp_path: Path) -> None:
    """The call site passes the chart's root (`.`): the render that fails on a cluster without DRA says where the
    switch is (`dra.enabled=false (in values.yaml)`), not the call site's argument (was: `dra.enabled=false (.)`)."""
    chart = _chart(tmp_path, IN_TEMPLATE)
    outcome = _fix(chart)
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    with pytest.raises(HelmError) as failed:
        render_chart(chart, RenderOptions(kube_version="1.31"))
    assert "on an older cluster, set dra.enabled=false (in values.yaml)" in str(failed.value)


ENGINE = """\
{{- define "app.engine" }}
- name: engine
  image: engine:1
  resources:
    limits:
      nvidia.com/gpu: {{ .device.gpus }}
{{- end }}
"""
# each pod helper in a template file of its own, included by the one workload template (bud-runtime-container)
SINGLE = """\
{{- define "app.single" }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .node.name }}
spec:
  selector:
    matchLabels: {app: engine}
  template:
    metadata:
      labels: {app: engine}
    spec:
      containers:
      {{- include "app.engine" (dict "Values" $.Values "device" .node) | nindent 6 }}
{{- end }}
"""
FLEET = """\
{{- define "app.multi" }}
apiVersion: orchestration.aibrix.ai/v1alpha1
kind: RayClusterFleet
metadata:
  name: {{ .node.name }}
spec:
  template:
    spec:
      headGroupSpec:
        template:
          spec:
            containers:
            {{- include "app.engine" (dict "Values" $.Values "device" .node) | nindent 12 }}
{{- end }}
"""
NODES = """\
{{- range .Values.nodes }}
{{- if gt (.pp | int) 1 }}
{{- include "app.multi" (dict "Values" $.Values "node" .) }}
{{- else }}
{{- include "app.single" (dict "Values" $.Values "node" .) }}
{{- end }}
---
{{- end }}
"""


def test_a_container_helper_two_pod_helpers_include_is_reported_with_the_pods_they_write(tmp_path: Path) -> None:
    """The container helper that writes the device key is included by two pod helpers, each defined in a template
    file of its own and included by the workload template in a `range` (bud-runtime-container's single-node.yaml and
    multi-node.yaml): fix names both and what they write, one a kind the migration leaves on its device plugin (was:
    'the migration adds no claim to a pod that includes app.engine', read off the pod helper's own file, which
    renders nothing: its include was taken for a workload's call site)."""
    files = {
        "values.yaml": "nodes:\n  - name: one\n    gpus: 1\n",
        "templates/_engine.yaml": ENGINE,
        "templates/single-node.yaml": SINGLE,
        "templates/multi-node.yaml": FLEET,
        "templates/deployment.yaml": NODES,
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    assert not outcome.proven
    assert "no template includes app.engine, and several helpers include it (app.multi, app.single)" in outcome.manual
    kinds = "app.multi writes a RayClusterFleet, a kind the migration leaves on its device plugin; app.single writes"
    assert kinds in outcome.manual, outcome.manual
