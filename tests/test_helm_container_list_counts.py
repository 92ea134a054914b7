"""Containers written by a `range` over a values list, each with its own device count (loft's component chart:
`with $container.resources.limits`, then `nvidia.com/gpu: {{ .gpu | quote }}`, a container's name defaulting to its
index). The idiomatic rewrite (nested.py) gives the pod the claim the migration gives it: the one container asking
takes it whole, several each take a request named after the container."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.run import ChartOptions, run_chart, write_changes
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
