"""A container whose resources are the item's own values map when it has one (pattern B) and the template's literal
GPU otherwise (pattern A), in the branches of `if hasKey $model "resources"` (a models chart's InferenceServices, one
per enabled model). Both branches get their rewrite in one fix, proven together: the key's branch behind dra.enabled,
the map's branch passing `resourceClaims` through with values-dra.yaml migrating the maps the chart ships."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

MODELS = """\
{{- $root := . }}
{{- range $key, $model := .Values.models }}
{{- if $model.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $key }}
spec:
  selector:
    matchLabels: {app: {{ $key }}}
  template:
    metadata:
      labels: {app: {{ $key }}}
    spec:
      containers:
        - name: server
          image: vllm
          resources:
          {{- if hasKey $model "resources" }}
          {{- toYaml $model.resources | nindent 12 }}
          {{- else }}
          {{- if eq $root.Values.device "gpu" }}
            limits:
              cpu: "2"
              nvidia.com/gpu: "1"
          {{- end }}
          {{- end }}
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
{{- end }}
{{- end }}
"""
# the map of the big model holds the literal branch's very key and count as well as its own
VALUES = """\
device: gpu
models:
  small:
    enabled: false
  big:
    enabled: false
    resources:
      limits:
        nvidia.com/gpu: "4"
  medium:
    enabled: false
    resources:
      limits:
        nvidia.com/gpu: "1"
"""


def _docs(chart: Path, files: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=files, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def _texts(chart: Path, files: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=files, set_values=sets))]


def _claimed(docs: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], int]]:
    """Each Deployment's container resources and the devices its pod's claims ask for (through their templates)."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    out = {}
    for d in docs:
        if d["kind"] == "Deployment":
            pod = d["spec"]["template"]["spec"]
            claims = pod.get("resourceClaims") or []
            out[d["metadata"]["name"]] = (
                pod["containers"][0]["resources"],
                sum(counts[c["resourceClaimTemplateName"]] for c in claims),
            )
    return out


@pytest.mark.parametrize("user", ["small", "big"])
def test_the_key_branch_and_the_map_branch_of_one_container_both_migrate(tmp_path: Path, user: str) -> None:
    """Was manual work ("the container's resources are `toYaml $model.resources` (pattern B, line 21) in another
    branch of `if hasKey $model "resources"`, which holds this key"), nothing written, whichever model the user's
    values turn on."""
    original = chart_with(tmp_path / "original", "models", {"values.yaml": VALUES, "templates/models.yaml": MODELS})
    chart = shutil.copytree(original, tmp_path / "fixed" / "models")
    mine = tmp_path / f"{user}.yaml"
    mine.write_text(f"models:\n  {user}:\n    enabled: true\n")
    outcome = run_chart(
        chart, ChartOptions(values_files=(mine,)), load_rules(), Settings(), Target.parse("1.36"), "fix"
    )
    assert outcome.proven, outcome.report()
    at_map = next(n for n, line in enumerate(MODELS.splitlines(), 1) if "toYaml $model.resources" in line)
    assert (
        f"the resources map of the other branch (templates/models.yaml:{at_map}) takes the DRA values" in outcome.usage
    )
    write_changes(outcome)
    every = ("models.small.enabled=true", "models.big.enabled=true", "models.medium.enabled=true")
    # the switch off: byte-identical, for the user's values and with every model on
    off = ("dra.enabled=false",)
    assert _texts(chart, (mine,), off) == _texts(original, (mine,))
    assert _texts(chart, (), every + off) == _texts(original, (), every)
    dra_files = (chart / "values-dra.yaml", *([tmp_path / "big-dra.yaml"] if user == "big" else []))
    # the switch on and the DRA values: each model's pod claims its devices, none asks the device plugin
    claimed = _claimed(_docs(chart, dra_files, every))
    assert claimed == {
        "small": ({"limits": {"cpu": "2"}, "claims": [{"name": "gpu"}]}, 1),
        "big": ({"claims": [{"name": "gpu"}]}, 4),
        "medium": ({"claims": [{"name": "gpu"}]}, 1),
    }
    # the user's own run: the switch alone migrates the key's branch, the DRA values the map's
    assert _claimed(_docs(chart, (mine,)))[user][1] == (1 if user == "small" else 0)
    assert _claimed(_docs(chart, (chart / "values-dra.yaml", mine)))[user][1] == (1 if user == "small" else 4)


def test_a_users_claims_beside_the_key_branch_join_its_claim(tmp_path: Path) -> None:
    """The pod passes its model's `resourceClaims` through (for the map's branch) and the key's branch adds the DRA
    claim: a user who gives the small model (no map) a claim of their own with the switch on got `resourceClaims:`
    twice in one mapping, and Helm kept the DRA list alone, dropping the user's claim without a word. Now the DRA
    claim joins the list, and the proof renders a claim of the user's own in each such value."""
    chart = chart_with(tmp_path, "models", {"values.yaml": VALUES, "templates/models.yaml": MODELS})
    mine = tmp_path / "small.yaml"
    mine.write_text("models:\n  small:\n    enabled: true\n")
    outcome = run_chart(
        chart, ChartOptions(values_files=(mine,)), load_rules(), Settings(), Target.parse("1.36"), "fix"
    )
    assert outcome.proven, outcome.report()
    assert any("a claim of the user's own in each resourceClaims value" in c for c in outcome.checked), outcome.checked
    write_changes(outcome)
    shared = ("models.small.resourceClaims[0].name=shared", "models.small.resourceClaims[0].resourceClaimName=gpus")
    (text,) = [t for _, t in _texts(chart, (mine,), shared) if "kind: Deployment" in t]
    assert text.count("resourceClaims:") == 1, text
    (pod,) = [d["spec"]["template"]["spec"] for d in _docs(chart, (mine,), shared) if d["kind"] == "Deployment"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["shared", "gpu"], pod
