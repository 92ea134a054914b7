"""A chart whose values.yaml has a top-level `dra:` of its own that does not move the GPUs to claims (Azure's
nccl-test: `dra.enabled` adds a ComputeDomain's IMEX channel claim to the workers, the GPUs stay device-plugin
requests). Was: manual work, 'values.yaml already has a top-level `dra:` key'. Now the rewrite's switch is
`draDevices.enabled`: the chart's `dra` keeps its meaning, and the GPU claim joins the chart's own claim in the pod's
and the container's lists. Renders are real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.render import RenderOptions, render_chart

WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
      - name: worker
        image: worker:1
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpusPerNode }}
          {{- if .Values.dra.enabled }}
          claims:
          - name: {{ .Values.dra.claimTemplateName }}
          {{- end }}
      {{- if .Values.dra.enabled }}
      resourceClaims:
      - name: {{ .Values.dra.claimTemplateName }}
        resourceClaimTemplateName: {{ .Values.dra.claimTemplateName }}
      {{- end }}
""",
)
OWN_DRA = "dra:\n  enabled: false\n  claimTemplateName: channel\n"
FILES = {"values.yaml": "gpusPerNode: 4\n" + OWN_DRA, "templates/worker.yaml": WORKER}


def _render(chart: Path, sets: tuple[str, ...]) -> str:
    options = RenderOptions(set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


def _pod(stream: str) -> tuple[Any, ...]:
    """The pod's claims (name -> the spec of its ResourceClaimTemplate, without the API's defaults, or the name of a
    template the chart does not render), the container's claims and limits."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    specs = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    claims = {
        c["name"]: without_api_defaults(specs[name]) if (name := c["resourceClaimTemplateName"]) in specs else name
        for c in pod.get("resourceClaims", [])
    }
    resources = pod["containers"][0]["resources"]
    return claims, resources.get("claims"), resources.get("limits")


def test_the_switch_takes_another_name_and_the_claims_join_the_charts_own(tmp_path: Path) -> None:
    chart = chart_with(tmp_path / "fixed", "nccl", FILES)
    original = chart_with(tmp_path / "original", "nccl", FILES)
    outcome = fix_chart(chart)
    assert "draDevices.enabled" in outcome.usage

    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["dra"] == yaml.safe_load(OWN_DRA)["dra"]  # the chart's own key as it was
    assert values["draDevices"]["enabled"] is True
    for sets in ((), ("dra.enabled=true",), ("dra.enabled=true", "gpusPerNode=8")):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        rewritten = _pod(_render(chart, sets))
        assert rewritten == _pod(migrated), sets
        assert ("channel" in rewritten[0]) == ("dra.enabled=true" in sets)
        assert rewritten[2] is None  # no GPU left on the device plugin
        assert _render(chart, (*sets, "draDevices.enabled=false")) == _render(original, sets)


def test_a_second_opt_in_run_reports_the_switch_to_set(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "nccl", FILES)
    code, _, err = dramigrate_in_process(["fix", "--opt-in", chart])
    assert code == 0, err
    written = (chart / "values.yaml").read_text()
    code, _, err = dramigrate_in_process(["fix", "--opt-in", chart])
    assert "set draDevices.enabled=true" in err
    assert (chart / "values.yaml").read_text() == written


def test_a_chart_with_both_names_taken_is_told_so(tmp_path: Path) -> None:
    files = {**FILES, "values.yaml": FILES["values.yaml"] + "draDevices: {}\n"}
    chart = chart_with(tmp_path, "nccl", files)
    code, _, err = dramigrate_in_process(["fix", chart])
    assert "already has top-level `dra:` and `draDevices:` keys" in err
    assert (chart / "values.yaml").read_text() == files["values.yaml"]


SCHEMA = """\
{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "gpusPerNode": { "type": "integer" },
    "dra": {
      "type": "object",
      "properties": {
        "enabled": { "type": "boolean" },
        "claimTemplateName": { "type": "string" }
      }
    }
  }
}
"""


def test_a_closed_schema_declares_the_switch_beside_the_charts_own_key(tmp_path: Path) -> None:
    """values.schema.json forbids unknown top-level keys and declares the chart's `dra`: the rewrite's `draDevices`
    is declared beside it (else Helm refuses the values), the chart's entry as it was."""
    chart = chart_with(tmp_path, "nccl", {**FILES, "values.schema.json": SCHEMA})
    fix_chart(chart)
    schema = json.loads((chart / "values.schema.json").read_text())["properties"]
    assert schema["dra"] == json.loads(SCHEMA)["properties"]["dra"]
    assert schema["draDevices"]["properties"]["enabled"]["default"] is True
    assert _pod(_render(chart, ()))[2] is None  # Helm takes the values the schema now declares: the GPU claimed


# The chart's own `dra:` beside a device key a named helper writes (pattern D, the helper reads `.Values`) or a
# resources map built in template variables (pattern F): was manual work, 'values.yaml already has a top-level `dra:`
# key', where the other rewrites took `draDevices`; a helper given a dict its call site builds (pattern D too) had the
# chart's own `dra` passed in as its switch, and failed the proof.
HELPER = '{{- define "nccl.resources" -}}\nlimits:\n  nvidia.com/gpu: {{ .Values.gpusPerNode }}\n{{- end -}}\n'
OWN_ENV = """\
          {{- if .Values.dra.enabled }}
          env:
            - name: CHANNEL
              value: {{ .Values.dra.claimTemplateName }}
          {{- end }}
"""
HELPER_WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
      - name: worker
        image: worker:1
        resources:
          {{- include "nccl.resources" . | nindent 10 }}
"""
    + OWN_ENV,
)
# the helper gets a dict the call site builds, which the rewrite passes the switch's values key in (rootswitch)
ARG_HELPER = HELPER.replace(".Values.gpusPerNode", ".gpus")
ARG_WORKER = HELPER_WORKER.replace('"nccl.resources" .', '"nccl.resources" (dict "gpus" .Values.gpusPerNode)')
MAP_WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
      - name: worker
        image: worker:1
        resources:
          {{- $resources := dict "limits" (dict "memory" "1Gi") }}
          {{- $gpu := dict "nvidia.com/gpu" .Values.gpusPerNode }}
          {{- $resources = merge $resources (dict "limits" (merge $resources.limits $gpu)) }}
          {{- toYaml $resources | nindent 10 }}
"""
    + OWN_ENV,
)
SHAPES = {
    "helper": {"templates/_helpers.tpl": HELPER, "templates/worker.yaml": HELPER_WORKER},
    "helper-argument": {"templates/_helpers.tpl": ARG_HELPER, "templates/worker.yaml": ARG_WORKER},
    "map-built": {"templates/worker.yaml": MAP_WORKER},
}


@pytest.mark.parametrize("opt_in", [False, True], ids=["on-by-default", "opt-in"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_helper_or_map_built_request_takes_the_switch_beside_the_charts_own(
    tmp_path: Path, shape: str, opt_in: bool
) -> None:
    files = {"values.yaml": "gpusPerNode: 4\n" + OWN_DRA, **SHAPES[shape]}
    chart = chart_with(tmp_path / "fixed", "nccl", files)
    original = chart_with(tmp_path / "original", "nccl", files)
    args = ["fix", *(["--opt-in"] if opt_in else []), str(chart)]
    code, _, err = dramigrate_in_process(args)
    assert code == 0, err
    assert "draDevices.enabled" in err, err
    assert yaml.safe_load((chart / "values.yaml").read_text())["dra"] == yaml.safe_load(OWN_DRA)["dra"]
    on, off = (("draDevices.enabled=true",), ()) if opt_in else ((), ("draDevices.enabled=false",))
    for sets in ((), ("dra.enabled=true",), ("dra.enabled=true", "gpusPerNode=8")):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        claimed = _render(chart, (*sets, *on))
        assert _pod(claimed) == _pod(migrated), sets
        assert "nvidia.com/gpu" not in (_pod(claimed)[2] or {})  # no GPU left on the device plugin
        assert ("CHANNEL" in claimed) == ("dra.enabled=true" in sets)  # the chart's own key keeps its meaning
        assert _render(chart, (*sets, *off)) == _render(original, sets)


def test_the_helpers_unit_suite_turns_the_switch_it_took(tmp_path: Path) -> None:
    """A chart with helm-unittest suites: the one written for the helper's call site turns `draDevices`, not the
    chart's own `dra` (which would test the chart's IMEX channel, not the GPU claim)."""
    files = {"values.yaml": "gpusPerNode: 4\n" + OWN_DRA, "tests/.keep": "", **SHAPES["helper"]}
    chart = chart_with(tmp_path, "nccl", files)
    fix_chart(chart)
    (suite,) = (chart / "tests").glob("*_test.yaml")
    from test_helm_unittest_suite import set_values

    sets = [set_values(t["set"]) for t in yaml.safe_load(suite.read_text())["tests"]]
    assert [s["draDevices"]["enabled"] for s in sets] == [False, True]
    assert not any("dra" in s for s in sets), sets
