"""A container's resources from a values map that replaces another when it is set: a helper builds the selected
cluster profile (`deepCopy (index .Values.clusterProfiles $name)`), `with .Values.resources` replaces the profile's
`resources`, and the template reads `$profile.resources` (nvcf's multi-node chart). The defaults leave `resources`
empty, so the pod takes the profile's map, which holds the GPU. Was manual work ("the container's resources are the
values map resources when it is set and another map when it is empty"); the pass-through now puts the claims beside
the map the helper takes (`clusterProfiles.<name>.resourceClaims`), copies a top-level `resourceClaims` where the
helper copies `resources`, and joins the pod's own claim and tolerations lists. Renders are real (the Helm engine
embedded in helm-python-sdk)."""

from __future__ import annotations

import shutil
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

HELPERS = """\
{{- define "mn.profile" -}}
{{- $name := default "small" .Values.clusterProfile -}}
{{- $profile := deepCopy (index .Values.clusterProfiles $name) -}}
{{- with .Values.resources -}}
{{- $_ := set $profile "resources" . -}}
{{- end -}}
{{- toYaml $profile -}}
{{- end }}
"""
STATEFULSET = """\
{{ $profile := include "mn.profile" . | fromYaml -}}
{{ $resources := $profile.resources | default dict -}}
{{ $rdma := $profile.rdma | default dict -}}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: mn
spec:
  serviceName: mn
  selector:
    matchLabels: {app: mn}
  template:
    metadata:
      labels: {app: mn}
    spec:
      {{- if $rdma.enabled }}
      resourceClaims:
        - name: rdma
          resourceClaimTemplateName: {{ $rdma.template }}
      {{- end }}
      containers:
        - name: mn
          image: mn:1
          {{- if or $rdma.enabled (not (empty $resources)) }}
          resources:
            {{- with $resources }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- if $rdma.enabled }}
            claims:
              - name: rdma
            {{- end }}
          {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""
VALUES = """\
clusterProfile: small
clusterProfiles:
  small:
    resources:
      limits:
        nvidia.com/gpu: 2
    rdma:
      enabled: false
      template: rdma
  cpu:
    resources:
      limits:
        cpu: 1
    rdma:
      enabled: false
      template: rdma
resources: {}
tolerations: []
"""


def _texts(chart: Path, files: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=files))]


def _docs(chart: Path, files: tuple[Path, ...]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for _, text in _texts(chart, files) for d in yaml.safe_load_all(text)}


def test_the_claims_go_beside_the_profile_map_the_helper_takes_when_resources_is_empty(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/statefulset.yaml": STATEFULSET}
    original = chart_with(tmp_path / "original", "mn", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "mn")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)

    own = tmp_path / "own.yaml"  # a user's values that turn the pod's own claim on and set its tolerations
    own.write_text(
        "clusterProfiles:\n  small:\n    rdma: {enabled: true}\n"
        "tolerations:\n  - {key: dedicated, operator: Exists, effect: NoSchedule}\n"
    )
    for given in ((), (own,)):
        assert _texts(chart, given) == _texts(original, given)  # without the DRA values: byte-identical

    dra = chart / "values-dra.yaml"
    assert "clusterProfiles" in yaml.safe_load(dra.read_text())  # beside the map the defaults take, not `resources`
    for given, own_claims in (((dra,), []), ((dra, own), ["rdma"])):
        docs = _docs(chart, given)
        pod = docs["StatefulSet", "mn"]["spec"]["template"]["spec"]
        names = [c["name"] for c in pod["resourceClaims"]]
        assert sorted(names) == sorted([*own_claims, "gpu"]), pod  # one list: the pod's own claim kept
        gpu = next(c for c in pod["resourceClaims"] if c["name"] == "gpu")
        rct = docs["ResourceClaimTemplate", gpu["resourceClaimTemplateName"]]["spec"]["spec"]
        assert rct["devices"]["requests"][0]["exactly"]["count"] == 2
        resources = pod["containers"][0]["resources"]
        assert "limits" not in resources or "nvidia.com/gpu" not in resources["limits"]
        assert {c["name"] for c in resources["claims"]} == {*own_claims, "gpu"}
        keys = [t["key"] for t in pod["tolerations"]]
        assert "nvidia.com/gpu" in keys and ("dedicated" in keys) == bool(own_claims)


def test_a_profile_whose_pod_writes_a_claim_of_its_own_is_rewritten_for_it_too(tmp_path: Path) -> None:
    """The user's values pick a profile whose own RDMA claim is on: the container's resources are the profile's map
    and that claim, which the template writes itself. Was manual work (they equal no values map); the claim the
    template writes is left out of the comparison, and the DRA claim joins it."""
    files = {"values.yaml": VALUES, "templates/_helpers.tpl": HELPERS, "templates/statefulset.yaml": STATEFULSET}
    chart = chart_with(tmp_path, "mn", files)
    mine = tmp_path / "mine.yaml"
    mine.write_text("clusterProfiles:\n  small:\n    rdma: {enabled: true}\n")
    outcome = run_chart(
        chart, ChartOptions(values_files=(mine,)), load_rules(), Settings(), Target.parse("1.34"), "fix"
    )
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    # mine.yaml sets no device: the defaults' DRA values after it
    assert not (tmp_path / "mine-dra.yaml").exists()
    pod = _docs(chart, (mine, chart / "values-dra.yaml"))["StatefulSet", "mn"]["spec"]["template"]["spec"]
    assert sorted(c["name"] for c in pod["resourceClaims"]) == ["gpu", "rdma"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "rdma"}, {"name": "gpu"}]}
