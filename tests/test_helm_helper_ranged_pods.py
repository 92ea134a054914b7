"""Pattern D inside `range`: a named helper writes the device key and the workload template includes it inside a
`range` over a values map or list, one Deployment per item, each with its own count. Each item's pod gets its own
claim and ResourceClaimTemplate (named after the item's workload), the switch read where the helper reads its count.
A helper included per item of a `range` under one pod's `containers:` is reported with the include's line: the
migration gives that pod one claim with a request per container, which no helper included per item can write.
Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RESOURCES = """\
{{- define "app.resources" -}}
limits:
  memory: 1Gi
  nvidia.com/gpu: {{ .gpus }}
{{- end -}}
"""
# one Deployment per entry of a values map that is not disabled, the helper given the entry
PER_ENTRY = """\
{{- range $name, $model := .Values.models }}
{{- if not $model.disabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: server
          image: busybox
          resources:
            {{- include "app.resources" $model | nindent 12 }}
{{- end }}
{{- end }}
"""
# the same per item of a values list, the helper given the item as `.`
PER_DOT = """\
{{- range .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ .name }}
spec:
  selector:
    matchLabels: {app: {{ .name }}}
  template:
    metadata:
      labels: {app: {{ .name }}}
    spec:
      containers:
        - name: server
          image: busybox
          resources:
            {{- include "app.resources" . | nindent 12 }}
{{- end }}
"""
# a warm-up Job per entry beside its Deployment, in the same range and `if`
WARM_JOB = """\
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $.Release.Name }}-{{ $name }}-warm
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warm
          image: busybox
          resources:
            {{- include "app.resources" $model | nindent 12 }}
"""
CONTAINER = """\
{{- define "app.container" -}}
- name: {{ .spec.name }}
  image: busybox
  resources:
    limits:
      nvidia.com/gpu: {{ .spec.gpus }}
{{- end -}}
"""
# one Deployment per item of a values list, the helper given a dict that hands the chart's values on
PER_ITEM = """\
{{- range $spec := .Values.servers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $spec.name }}
spec:
  selector:
    matchLabels: {app: {{ $spec.name }}}
  template:
    metadata:
      labels: {app: {{ $spec.name }}}
    spec:
      containers:
        {{- include "app.container" (dict "spec" $spec "Values" $.Values) | nindent 8 }}
{{- end }}
"""
# one pod, one container per item of a values list (llm-d-modelservice's `containers:` then `range .`)
IN_ONE_POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        {{- range .Values.servers }}
        {{- include "app.container" (dict "spec" . "Values" $.Values) | nindent 8 }}
        {{- end }}
"""


def _render(chart: Path, values: str) -> dict[str, Any]:
    extra = chart.parent / "extra.yaml"
    extra.write_text(values)
    manifests = render_chart(chart, RenderOptions(values_files=(extra,), kube_version="1.36"))
    docs = [d for m in manifests for d in yaml.safe_load_all(m.text) if d]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    return {"pods": pods, "templates": templates}


def _claimed(render: dict[str, Any], pod: str) -> int | None:
    """The device count the pod's claim asks for (None: no claim), checking the claim is wired end to end."""
    spec = render["pods"][f"release-name-{pod}"]
    if "resourceClaims" not in spec:
        return None
    [entry] = spec["resourceClaims"]
    [container] = spec["containers"]
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
    assert container["resources"]["claims"] == [{"name": entry["name"]}]
    [request] = render["templates"][entry["resourceClaimTemplateName"]]["devices"]["requests"]
    return int(request["exactly"]["count"])


def test_a_helper_included_in_a_range_over_a_values_map_gives_each_entrys_pod_its_own_claim(tmp_path: Path) -> None:
    """Was manual: '1 include(s) of app.resources in 1 pod(s), the migration adds claims to 2 of the 2 pod(s) these
    values render'. The switch sits in each entry (`models.<name>.dra.enabled`), beside the count the helper reads."""
    files = {
        "templates/_helpers.tpl": RESOURCES,
        "templates/deploy.yaml": PER_ENTRY,
        "values.yaml": "models:\n  small: {gpus: 1}\n  spare: {gpus: 2, disabled: true}\n  big: {gpus: 4}\n",
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    on = _render(chart, "models: {big: {gpus: 3}}\n")
    assert (_claimed(on, "small"), _claimed(on, "big")) == (1, 3) and "release-name-spare" not in on["pods"]
    assert len(on["templates"]) == 2  # one claim template per entry, each named after its own workload
    spare = _render(chart, "models: {spare: {disabled: false}}\n")
    assert _claimed(spare, "spare") == 2 and len(spare["templates"]) == 3
    one_off = _render(chart, "models: {big: {dra: {enabled: false}}}\n")
    assert _claimed(one_off, "small") == 1 and _claimed(one_off, "big") is None
    big = one_off["pods"]["release-name-big"]["containers"][0]["resources"]["limits"]
    assert big == {"memory": "1Gi", "nvidia.com/gpu": 4}
    none = _render(chart, "models: {small: {gpus: 0}}\n")
    assert _claimed(none, "small") is None and _claimed(none, "big") == 4


def test_two_workloads_per_entry_each_get_their_entrys_claim(tmp_path: Path) -> None:
    """A Deployment and a warm-up Job per entry, both including the helper: the renders come in rounds of two."""
    template = PER_ENTRY.replace("{{- end }}\n{{- end }}\n", WARM_JOB + "{{- end }}\n{{- end }}\n")
    values = "models:\n  small: {gpus: 1}\n  big: {gpus: 4}\n"
    files = {"templates/_helpers.tpl": RESOURCES, "templates/deploy.yaml": template, "values.yaml": values}
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    manifests = render_chart(chart, RenderOptions(kube_version="1.36"))
    docs = [d for m in manifests for d in yaml.safe_load_all(m.text) if d]
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    counts = {}
    for doc in (d for d in docs if d["kind"] in ("Deployment", "Job")):
        [entry] = doc["spec"]["template"]["spec"]["resourceClaims"]
        [request] = templates[entry["resourceClaimTemplateName"]]["devices"]["requests"]
        counts[doc["metadata"]["name"]] = request["exactly"]["count"]
    want = {"release-name-small": 1, "release-name-small-warm": 1, "release-name-big": 4, "release-name-big-warm": 4}
    assert counts == want


def test_a_helper_given_the_item_of_a_range_over_a_values_list_is_switched_in_each_item(tmp_path: Path) -> None:
    """Was manual: 'the helper app.resources gets `.` inside `range .Values.models`, which need not be the chart's
    root': inside `range .Values.models`, `.` is an item of that list, which holds the count and the switch."""
    models = "models:\n  - name: small\n    gpus: 1\n  - name: big\n    gpus: 4\n"
    files = {"templates/_helpers.tpl": RESOURCES, "templates/deploy.yaml": PER_DOT, "values.yaml": models}
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    assert "`dra.enabled: true` in each models[]" in (chart / "values.yaml").read_text()
    on = _render(chart, "")
    assert (_claimed(on, "small"), _claimed(on, "big")) == (1, 4)
    one_off = _render(chart, models.replace("gpus: 4", "gpus: 4\n    dra: {enabled: false}"))
    assert _claimed(one_off, "small") == 1 and _claimed(one_off, "big") is None
    assert len(one_off["templates"]) == 1


def test_a_container_helper_included_in_a_range_over_a_values_list_is_switched_in_values_yaml(tmp_path: Path) -> None:
    files = {
        "templates/_helpers.tpl": CONTAINER,
        "templates/deploy.yaml": PER_ITEM,
        "values.yaml": "servers:\n  - name: serve\n    gpus: 2\n  - name: embed\n    gpus: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    on = _render(chart, "")
    assert (_claimed(on, "serve"), _claimed(on, "embed")) == (2, 1)
    off = _render(chart, "dra: {enabled: false}\n")
    assert not off["templates"] and all("resourceClaims" not in pod for pod in off["pods"].values())


def test_a_helper_included_per_item_under_one_pods_containers_is_reported_with_its_line(tmp_path: Path) -> None:
    """The migration gives the one pod one claim with a request for each item's container (`serve-gpu`,
    `embed-gpu`); the message names the include's line and the range, not only the template."""
    files = {
        "templates/_helpers.tpl": CONTAINER,
        "templates/deploy.yaml": IN_ONE_POD,
        "values.yaml": "servers:\n  - name: serve\n    gpus: 2\n  - name: embed\n    gpus: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(kube_version="1.36"), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    want = "pattern D (app.container): templates/deploy.yaml:14: the helper is included inside `range .Values.servers`"
    assert want in outcome.manual, outcome.manual
    assert "one container of the pod per item" in outcome.manual


def test_the_per_item_refusal_names_a_pod_the_values_render_not_text_or_an_unrendered_template(tmp_path: Path) -> None:
    """llm-d-modelservice's requester values: its decode Deployment (first by name) does not render, and its
    ReplicaSet holds the decode containers as text in an annotation (`server-patch: |`); the message named the
    Deployment's include, a line the user's render does not have. It names the rendered pod's include now."""
    unrendered = "{{- if .Values.legacy }}\n" + IN_ONE_POD.replace("-app\n", "-legacy\n") + "{{- end }}\n"
    held = IN_ONE_POD.replace(
        "  template:\n    metadata:\n      labels: {app: app}\n",
        "  template:\n    metadata:\n      labels: {app: app}\n      annotations:\n        patch: |\n"
        "          containers:\n            {{- range .Values.servers }}\n"
        '            {{- include "app.container" (dict "spec" . "Values" $.Values) | nindent 12 }}\n'
        "            {{- end }}\n",
    )
    files = {
        "templates/_helpers.tpl": CONTAINER,
        "templates/a-legacy.yaml": unrendered,
        "templates/deploy.yaml": held,
        "values.yaml": "legacy: false\nservers:\n  - name: serve\n    gpus: 2\n  - name: embed\n    gpus: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(kube_version="1.36"), Target.parse("1.36"), "fix")
    assert not outcome.proven and not outcome.changes
    want = "pattern D (app.container): templates/deploy.yaml:20: the helper is included inside `range .Values.servers`"
    assert want in outcome.manual, outcome.manual
