"""values.schema.json of a chart that writes every object over several lines: the `dra` entry the idiomatic rewrite
adds wrote each of its three keys' plain objects over four lines (18 added lines for three booleans and strings);
they are now one line each, `"enabled": {"type": "boolean", "default": true}`, and the chart's own lines stay."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

from conftest import GPU_POD_TEMPLATE, chart_with, fix_chart

SCHEMA = json.dumps({"type": "object", "properties": {"gpus": {"type": "integer", "default": 1}}}, indent=2) + "\n"


def test_the_dra_keys_are_one_line_each_in_a_multi_line_schema(tmp_path: Path) -> None:
    files = {"values.yaml": "gpus: 1\n", "templates/app.yaml": GPU_POD_TEMPLATE, "values.schema.json": SCHEMA}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")

    fix_chart(chart)

    after = (chart / "values.schema.json").read_text()
    diff = list(difflib.unified_diff(SCHEMA.splitlines(), after.splitlines(), lineterm="", n=0))[2:]
    added = [line[1:].strip() for line in diff if line.startswith("+")]
    assert '"enabled": {"type": "boolean", "default": true},' in added, added
    assert '"existingClaimTemplate": {"type": "string", "default": ""}' in added, added
    assert len(added) <= 10, added
    dra = json.loads(after)["properties"]["dra"]["properties"]
    assert dra["enabled"] == {"type": "boolean", "default": True}
    assert json.loads(after)["properties"]["gpus"] == {"type": "integer", "default": 1}


SPACED = """\
{
  "type" : "object",
  "properties" : {
    "gpus" : {
      "type" : "integer",
      "default" : 1
    },
    "imagePullSecrets" : {
      "type" : "array",
      "items" : {
        "type" : "string"
      }
    }
  }
}
"""


def test_a_schema_that_spaces_its_colons_keeps_every_line_of_its_own(tmp_path: Path) -> None:
    """gimlet's onechart writes `"key" : value`: the rewrite wrote its keys back as `"key": ` and put an unchanged
    `items` object on one line, lines the maintainer never touched; now no line of the file changes, and the added
    `dra` lines space their colons as the file does."""
    files = {"values.yaml": "gpus: 1\n", "templates/app.yaml": GPU_POD_TEMPLATE, "values.schema.json": SPACED}
    chart = chart_with(tmp_path, "app", files)

    fix_chart(chart)

    after = (chart / "values.schema.json").read_text()
    diff = list(difflib.unified_diff(SPACED.splitlines(), after.splitlines(), lineterm="", n=0))[2:]
    assert not [line for line in diff if line.startswith("-")], diff
    assert '+        "enabled" : {"type" : "boolean", "default" : true},' in diff, diff  # in the file's own spacing
    assert json.loads(after)["properties"]["imagePullSecrets"] == json.loads(SPACED)["properties"]["imagePullSecrets"]
    assert "dra" in json.loads(after)["properties"]
