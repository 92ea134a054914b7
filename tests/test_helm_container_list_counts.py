"""Containers written by a `range` over a values list, each with its own device count (loft's component chart:
`with $container.resources.limits`, then `nvidia.com/gpu: {{ .gpu | quote }}`, a container's name defaulting to its
index). The idiomatic rewrite (nested.py) gives the pod the claim the migration gives it: the one container asking
takes it whole, several each take a request named after the container."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

TEMPLATE = deployment(
    "{{ .Release.Name }}",
    """\
      containers:
        {{- range $i, $container := .Values.containers }}
        - name: {{ $container.name | default (printf "c-%d" $i) }}
          image: {{ $container.image }}
          {{- if $container.resources }}
          resources:
            {{- with $container.resources.limits }}
            limits:
              {{- if .gpu }}
              nvidia.com/gpu: {{ .gpu | quote }}
              {{- end }}
            {{- end }}
          {{- end }}
        {{- end }}
""",
    app="c",
)
VALUES = """\
containers:
  - image: app:1
    resources: {limits: {gpu: 1}}
  - image: side:1
"""


def test_containers_of_a_values_list_with_their_own_counts_get_the_pods_claim(tmp_path: Path) -> None:
    """Was: manual, "the device key is inside `with $container.resources.limits` of a container that `range $i,
    $container := .Values.containers` writes, each item a container with its own count". Now proven: the container
    that asks (named `c-0` by its index) takes the pod's claim whole; with a second container asking each takes a
    request named after it, with its own count."""
    chart = chart_with(tmp_path, "c", {"values.yaml": VALUES, "templates/c.yaml": TEMPLATE})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    docs, counts, pods = dra_render(chart, chart / "values.yaml")
    (pod,) = pods.values()
    assert [c["resources"].get("claims") if c.get("resources") else None for c in pod["containers"]] == [
        [{"name": "gpu"}],
        None,
    ]
    assert list(counts.values()) == [1]
    two = tmp_path / "two.yaml"
    two.write_text(VALUES.replace("image: side:1", "image: side:1\n    resources: {limits: {gpu: 2}}"))
    docs, _, pods = dra_render(chart, two)
    (pod,) = pods.values()
    assert [c["resources"]["claims"] for c in pod["containers"]] == [
        [{"name": "gpu", "request": "c-0-gpu"}],
        [{"name": "gpu", "request": "c-1-gpu"}],
    ]
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("c-0-gpu", 1), ("c-1-gpu", 2)]


# loft's component chart as it stands: the document once for a non-empty list (a `range` over the containers with `if
# eq $i 0`), a container's name from its item or else from its index, a `range` over its ports that unsets a field,
# the pod's own tolerations list from values
WHOLE = """\
{{- range $i, $unused := .Values.containers }}
{{- if eq $i 0 }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name | quote }}
spec:
  selector:
    matchLabels: {app: c}
  template:
    metadata:
      labels: {app: c}
    spec:
      tolerations:
{{ toYaml $.Values.tolerations | indent 8 }}
      containers:
        {{- range $containerIndex, $container := $.Values.containers }}
        - image: {{ $container.image | quote }}
          {{- if $container.name }}
          name: {{ $container.name | quote }}
          {{- else }}
          name: "container-{{ $containerIndex }}"
          {{- end }}
          ports:
          {{- range $portIndex, $port := $container.ports }}
            - name: "port-{{ $portIndex }}"
            {{- $_ := unset $port "name" }}
{{ toYaml $port | indent 14 }}
          {{- end }}
          {{- if $container.resources }}
          resources:
            {{- with $container.resources.limits }}
            limits:
              {{- if .gpu }}
              nvidia.com/gpu: {{ .gpu | quote }}
              {{- end }}
            {{- end }}
          {{- end }}
        {{- end }}
      volumes: []
{{- end }}
{{- end }}
"""
WHOLE_VALUES = """\
containers:
  - image: app:1
    ports: [{containerPort: 80, name: http}]
    resources: {limits: {gpu: 1}}
"""


def test_loft_component_chart_as_it_stands_gets_a_request_per_named_container(tmp_path: Path) -> None:
    """Was: manual (the containers' `range` inside the document's own `range`; a port's `unset` among the containers'
    lines; the pod's own tolerations). Now proven: the gather leaves out the ports' `range` (no name or count in it),
    the device's toleration joins the pod's list, and a container named in its item takes its request by that name,
    one named by its index by that (the gather read only the last `name:` line of the item)."""
    chart = chart_with(tmp_path, "c", {"values.yaml": WHOLE_VALUES, "templates/c.yaml": WHOLE})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, chart / "values.yaml")
    (pod,) = pods.values()
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    assert [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu"]
    assert list(counts.values()) == [1]
    two = tmp_path / "two.yaml"
    two.write_text(
        "containers:\n  - {name: api, image: api:1, resources: {limits: {gpu: 2}}}\n"
        "  - {image: side:1, resources: {limits: {gpu: 1}}}\n"
        "  - {name: web, image: web:1, resources: {limits: {gpu: 3}}}\n"
        "tolerations: [{key: dedicated, operator: Exists}]\n"
    )
    docs, _, pods = dra_render(chart, two)
    (pod,) = pods.values()
    assert [c["resources"]["claims"] for c in pod["containers"]] == [
        [{"name": "gpu", "request": "api-gpu"}],
        [{"name": "gpu", "request": "container-1-gpu"}],
        [{"name": "gpu", "request": "web-gpu"}],
    ]
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("api-gpu", 2),
        ("container-1-gpu", 1),
        ("web-gpu", 3),
    ]
