"""A container's `limits:` and `requests:` each written from a variable of its own (pattern F, devtron's reference
charts): the device entry `dict <gpu.provider> <gpu.resources.limits>` merged into `$limits` and `$requests`, both
written under `if or $limits $requests`, which closes before the pod spec does; the pod's values tolerations come
before the containers. The dra.enabled rewrite takes the device out of both sections, moves the tolerations after
the map is built, and is proven."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import chart_with, deployment
from test_helm_map_built import TOLERATION, pod_and_claim, rendered, texts

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SECTIONS = deployment(
    "{{ .Release.Name }}-app",
    """\
  {{- if .Values.tolerations }}
      tolerations:
{{ toYaml .Values.tolerations | indent 8 }}
  {{- end }}
      containers:
        - name: app
          image: app:1
{{- $resources := .Values.resources | default dict }}
{{- $gpu := .Values.gpu | default dict }}
{{- $gpuLimits := dict }}
{{- $gpuRequests := dict }}
{{- if $gpu.enabled }}
  {{- $gpuLimits = dict $gpu.provider ($gpu.resources.limits | default 0) }}
  {{- $gpuRequests = dict $gpu.provider ($gpu.resources.requests | default 0) }}
{{- end }}
{{- $limits := merge (get $resources "limits" | default dict) $gpuLimits }}
{{- $requests := merge (get $resources "requests" | default dict) $gpuRequests }}
{{- if or $limits $requests }}
          resources:
{{- if $limits }}
            limits:
{{ toYaml $limits | indent 14 }}
{{- end }}
{{- if $requests }}
            requests:
{{ toYaml $requests | indent 14 }}
{{- end }}
{{- end }}
      volumes:
        - name: data
          emptyDir: {}
{{- if .Values.service.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-app
spec:
  selector: {app: app}
  ports: [{port: 80}]
{{- end }}
""",
)
VALUES = """\
resources:
  limits:
    memory: 1Gi
gpu:
  enabled: false
  provider: nvidia.com/gpu
  resources:
    limits: 1
    requests: 1
tolerations: []
service:
  enabled: false
"""


def test_limits_and_requests_built_in_variables_of_their_own_get_the_switch(tmp_path: Path) -> None:
    """Was: manual, "the pod spec ends inside a block the map's variable is not set in" (and past that, `requests:`
    kept its nvidia.com/gpu, the pod's early tolerations stopped the rewrite, and the claim template went into the
    Service's `if`). Now: with dra.enabled=false every render is the original's; on, the container asks for the claim
    in place of both sections' device key, the pod tolerates the device beside the values' tolerations, and the
    claim template renders with the Deployment."""
    files = {"values.yaml": VALUES, "templates/deployment.yaml": SECTIONS}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    on = ("gpu.enabled=true",)
    outcome = run_chart(chart, ChartOptions(set_values=on), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    given = ("tolerations[0].key=dedicated", "tolerations[0].operator=Exists")
    for sets in ((), on, (*on, *given), (*on, "service.enabled=true")):
        assert texts(chart, (), (*sets, "dra.enabled=false")) == texts(original, (), sets)
    pod, request = pod_and_claim(rendered(chart, sets=(*on, "gpu.resources.limits=2", "gpu.resources.requests=2")))
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 2)
    assert pod["tolerations"] == [TOLERATION]
    pod, _ = pod_and_claim(rendered(chart, sets=(*on, *given)))
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Exists"}, TOLERATION]
    # without the GPU, the values' tolerations as before and no claim
    docs = rendered(chart, sets=given)
    assert [d["spec"]["template"]["spec"]["tolerations"] for d in docs if d["kind"] == "Deployment"] == [
        [{"key": "dedicated", "operator": "Exists"}]
    ]
    assert not [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
