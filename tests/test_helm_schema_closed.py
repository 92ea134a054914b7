"""values.schema.json with `additionalProperties: false` around the values objects the idiomatic rewrite extends.

Helm checks the values against the schema on every render, so a key the rewrite adds (`worker.resourceClaims`
beside a resources map, `claims` in it, `dra.enabled` in each object a helper gets) must be declared where the
object forbids unknown keys, or the chart no longer renders with them; where fix cannot tell where to declare one,
it says so. Small charts modelled on llm-d's schema (closed `requester.resources`) and vLLM's helper.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.helm.values import schema_with
from dramigrate.rules import load_rules
from dramigrate.versions import Target

CLOSED = {"type": "object", "additionalProperties": False}
PASS_THROUGH = {
    "templates/deployment.yaml": deployment(
        "{{ .Release.Name }}-worker",
        """\
      containers:
        - name: worker
          image: wk:1
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
""",
        app="wk",
    ),
    "values.yaml": "worker:\n  # -- Worker resources\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n",
    "values.schema.json": json.dumps(
        {
            "type": "object",
            "properties": {
                "worker": {
                    **CLOSED,
                    "description": "Worker pods — GPUs",
                    "properties": {
                        "resources": {**CLOSED, "properties": {"limits": {"type": "object"}}},
                    },
                }
            },
        },
        indent=2,
        ensure_ascii=False,
    ),
}
HELPER = {
    "templates/_helpers.tpl": """\
{{- define "app.resources" -}}
limits:
  nvidia.com/gpu: {{ .gpus }}
{{- end }}
""",
    "templates/deployment.yaml": """\
{{- range $m := .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $m.name }}
spec:
  selector:
    matchLabels: {app: m}
  template:
    metadata:
      labels: {app: m}
    spec:
      containers:
        - name: model
          image: m:1
          resources:
            {{- include "app.resources" $m | nindent 12 }}
{{- end }}
""",
    "values.yaml": "models:\n  - name: a\n    gpus: 1\n",
    "values.schema.json": json.dumps(
        {
            "type": "object",
            "properties": {
                "models": {
                    "type": "array",
                    "items": {**CLOSED, "properties": {"name": {"type": "string"}, "gpus": {"type": "integer"}}},
                }
            },
        },
        indent=2,
    ),
}


def _fixed(root: Path, files: dict[str, str]) -> tuple[Path, Path, ChartOutcome]:
    original = chart_with(root / "original", "app", files)
    chart = shutil.copytree(original, root / "fixed" / "app")
    outcome = fix_chart(chart)
    return original, chart, outcome


def _render(chart: Path, values: Path | None = None) -> list[tuple[str, str]]:
    options = RenderOptions(values_files=(values,) if values else (), kube_version="1.34")
    return [(m.source, m.text) for m in render_chart(chart, options)]


def _pods(chart: Path, values: Path | None = None) -> list[dict[str, Any]]:
    docs = [d for _, text in _render(chart, values) for d in yaml.safe_load_all(text) if d]
    return [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]


def test_pass_through_keys_are_declared_in_the_closed_objects(tmp_path: Path) -> None:
    original, chart, _ = _fixed(tmp_path, PASS_THROUGH)
    schema = (chart / "values.schema.json").read_text()
    assert "Worker pods — GPUs" in schema  # the chart's own text stays as written, not \u-escaped
    worker = json.loads(schema)["properties"]["worker"]
    assert {"resources", "resourceClaims"} <= set(worker["properties"])
    assert "claims" in worker["properties"]["resources"]["properties"]
    assert _render(chart) == _render(original)
    [pod] = _pods(chart, chart / "values-dra.yaml")  # Helm validates these values against the schema
    claim = pod["containers"][0]["resources"]["claims"][0]["name"]
    assert [c["name"] for c in pod["resourceClaims"]] == [claim]


def test_a_helper_switch_is_declared_in_each_object_it_reads(tmp_path: Path) -> None:
    original, chart, _ = _fixed(tmp_path, HELPER)
    items = json.loads((chart / "values.schema.json").read_text())["properties"]["models"]["items"]
    assert items["properties"]["dra"]["properties"]["enabled"]["type"] == "boolean"
    off = tmp_path / "off.yaml"
    off.write_text("models:\n  - name: a\n    gpus: 1\n    dra:\n      enabled: false\n")
    assert _render(chart, off) == _render(original)  # the way back to the device plugin validates
    assert "claims" in _pods(chart)[0]["containers"][0]["resources"]


def test_a_closed_object_fix_cannot_reach_is_named() -> None:
    schema = {"type": "object", **CLOSED, "properties": {"w": {"anyOf": [CLOSED, {"type": "null"}]}}}
    changed, unplaced = schema_with(schema, [(("w",), "resourceClaims", {"type": "array"})])
    assert (changed, unplaced) == (False, ["w.resourceClaims"])
    ref = {"definitions": {"W": CLOSED}, "properties": {"w": {"$ref": "#/definitions/W"}}}
    assert schema_with(ref, [(("w",), "resourceClaims", {"type": "array"})]) == (True, [])
    assert "resourceClaims" in ref["definitions"]["W"]["properties"]


def test_schema_keeps_its_one_line_lists(tmp_path: Path) -> None:
    """A schema that writes its short lists on one line (`"type": ["integer", "null"]`, `"required": [...]`, as
    silogen's charts do): the rewrite adds its keys and leaves every other line as written (was: every such list
    re-dumped one item a line, 130 changed lines on llm-inference-vllm's schema)."""
    import difflib

    schema = HELPER["values.schema.json"].replace('"type": "integer"', '"type": ["integer", "null"]')
    schema = schema.replace(
        '\n        "properties": {', '\n        "required": ["name", "gpus"],\n        "properties": {'
    )
    original, chart, outcome = _fixed(tmp_path, {**HELPER, "values.schema.json": schema})
    after = (chart / "values.schema.json").read_text()
    diff = list(difflib.unified_diff(schema.splitlines(), after.splitlines(), lineterm="", n=0))[2:]
    removed = [line[1:] for line in diff if line.startswith("-")]
    added = [line[1:] for line in diff if line.startswith("+")]
    assert all(f"{line}," in added for line in removed), diff  # at most a comma before the keys added
    assert '"required": ["name", "gpus"],' in after and '"type": ["integer", "null"]' in after


def test_a_closed_object_fix_cannot_reach_refuses_the_chart_with_its_reason(tmp_path: Path) -> None:
    """The object the rewrite extends is closed inside an anyOf: fix cannot tell where to declare its keys, so the
    chart is left alone with that reason (was: internal-error, a TypeError raising the refusal)."""
    worker = {**CLOSED, "properties": {"resources": {"type": "object"}}}
    closed_in_any_of = {"worker": {"anyOf": [worker, {"type": "null"}]}}
    files = {**PASS_THROUGH, "values.schema.json": json.dumps({"type": "object", "properties": closed_in_any_of})}
    chart = chart_with(tmp_path / "app", "app", files)
    before = {p: p.read_text() for p in chart.rglob("*") if p.is_file()}
    settings = Settings(kube_version="1.34")
    options = ChartOptions(kube_version="1.34")
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert outcome.error is None and not outcome.proven
    assert "values.schema.json forbids unknown keys around worker.resourceClaims" in outcome.manual
    assert {p: p.read_text() for p in chart.rglob("*") if p.is_file()} == before
