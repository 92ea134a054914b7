"""Hostile inputs of the nineteenth sweep (issue 11's checker): each beside good files, which are still migrated,
while the bad one is named and left as it was, and nothing outside the tree decides what a run says."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

GPU_POD_TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-NAME
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
"""
REFUSES_A_COUNT = '{"type": "string"}'  # a schema that, read, refuses the chart's `gpus: 1`


def _packed(files: dict[str, str | bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, text in files.items():
            raw = text.encode() if isinstance(text, str) else text
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return data.getvalue()


def _lint_json(tmp_path: Path, *paths: str | Path) -> tuple[int, dict[str, object], str]:
    code, out, err = run_dramigrate(["lint", *map(str, paths), "--format", "json"], cwd=tmp_path)
    assert "Traceback" not in out + err
    return code, json.loads(out), err


@pytest.mark.parametrize("nested", [False, True], ids=["packed", "packed in packed"])
def test_a_packed_subcharts_schema_never_reads_a_file_outside_the_chart(tmp_path: Path, nested: bool) -> None:
    """Helm reads a packed subchart (`charts/sub-0.1.0.tgz`) from its archive and validates its values against the
    archive's values.schema.json, whose `$ref` it loads from wherever it leads: `file:///...` made whether the chart
    rendered say something of any file on the machine. The folder charts' references were confined; a packed
    subchart's were not. Now no reference of a packed schema is loaded: the chart renders, the subchart's device
    request is found, and the archive in the chart is untouched."""
    outside = tmp_path / "outside.json"
    outside.write_text(REFUSES_A_COUNT)
    sub = _packed(
        {
            "sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            "sub/values.yaml": "gpus: 1\n",
            "sub/values.schema.json": json.dumps({"properties": {"gpus": {"$ref": outside.as_uri()}}}),
            "sub/templates/pod.yaml": GPU_POD_TEMPLATE.replace("NAME", "sub"),
        }
    )
    chart = chart_with(
        tmp_path,
        "parent",
        {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE.replace("NAME", "own")},
    )
    (chart / "charts").mkdir()
    if nested:  # the leaky subchart packed inside another packed subchart
        mid = {
            "mid/Chart.yaml": "apiVersion: v2\nname: mid\nversion: 0.1.0\n",
            "mid/values.yaml": "sub:\n  gpus: 1\n",
            "mid/charts/sub-0.1.0.tgz": sub,
        }
        (chart / "charts" / "mid-0.1.0.tgz").write_bytes(_packed(mid))
    else:
        (chart / "charts" / "sub-0.1.0.tgz").write_bytes(sub)
    before = {p: p.read_bytes() for p in (chart / "charts").iterdir()}
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, report, _ = _lint_json(tmp_path, "parent", "good.yaml")

    assert report["errors"] == [], report["errors"]
    pods = {f["name"] for f in report["findings"] if f["rule"] == "legacy-device-request"}  # type: ignore[index]
    assert pods == {"release-name-own", "release-name-sub", "good"}, report
    assert code == 1
    assert {p: p.read_bytes() for p in (chart / "charts").iterdir()} == before


@pytest.mark.parametrize(
    "schema",
    [
        '{"properties": {"gpus": {"\\u0024ref": "URL"}}}',
        '{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"gpus": {"$dynamicRef": "URL"}}}',
        '{"$schema": "https://json-schema.org/draft/2019-09/schema", "properties": {"gpus": {"$recursiveRef": "URL"}}}',
    ],
    ids=["escaped $ref", "$dynamicRef", "$recursiveRef"],
)
def test_every_spelling_of_a_schema_reference_stays_in_the_chart(tmp_path: Path, schema: str) -> None:
    """A values schema's `$ref` to a file outside the chart is dropped, but the check looked for the text `"$ref"`:
    the same key written with a JSON escape (`"\\u0024ref"`), and the other keywords Helm's validator loads a URL
    from (`$dynamicRef`, `$recursiveRef`), still made Helm read the file, and whether the chart rendered told of it."""
    outside = tmp_path / "outside.json"
    outside.write_text(REFUSES_A_COUNT)
    chart_with(
        tmp_path,
        "leaky",
        {
            "values.yaml": "gpus: 1\n",
            "values.schema.json": schema.replace("URL", outside.as_uri()),
            "templates/pod.yaml": GPU_POD_TEMPLATE.replace("NAME", "leaky"),
        },
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, report, _ = _lint_json(tmp_path, "leaky", "good.yaml")

    assert report["errors"] == [], report["errors"]
    pods = {f["name"] for f in report["findings"] if f["rule"] == "legacy-device-request"}  # type: ignore[index]
    assert (code, pods) == (1, {"release-name-leaky", "good"}), report


@pytest.mark.parametrize("named", ["chart", "template"])
def test_a_chart_yaml_linked_out_of_the_chart_is_not_read(tmp_path: Path, named: str) -> None:
    """A Chart.yaml that is a symlink out of its chart was read for `type: library` before the chart was refused: a
    file elsewhere saying `type: library` made `dramigrate lint chart/templates/pod.yaml` (as pre-commit runs it)
    say "nothing to check" and exit 0, so what a file outside the tree held turned the gate green. The chart is now
    refused by name, as with any link out of it."""
    (tmp_path / "elsewhere.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\ntype: library\n")
    chart = chart_with(tmp_path, "c", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / "Chart.yaml").unlink()
    (chart / "Chart.yaml").symlink_to("../elsewhere.yaml")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, report, _ = _lint_json(tmp_path, "c" if named == "chart" else "c/templates/pod.yaml", "good.yaml")

    assert code == 2
    assert [(e["file"], e["rule"]) for e in report["errors"]] == [("c", "chart-symlink-outside")]  # type: ignore[index]
    assert [f["name"] for f in report["findings"]] == ["good"]  # type: ignore[index]


def test_a_values_file_linked_out_of_the_chart_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A chart's values.yaml linked to a file outside the chart was read (and its values counted) before the chart's
    links were checked: a large file elsewhere gave "this values file holds more than 20,000 values", a small one
    the symlink refusal, so the message told how large the file was. The link is refused first, whatever it names."""
    (tmp_path / "elsewhere.yaml").write_text("x: [" + ",".join(["1"] * 30_000) + "]\n")
    chart = chart_with(tmp_path, "c", {"templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / "values.yaml").symlink_to("../elsewhere.yaml")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, report, _ = _lint_json(tmp_path, "c", "good.yaml")

    assert code == 2
    assert [(e["file"], e["rule"]) for e in report["errors"]] == [("c", "chart-symlink-outside")]  # type: ignore[index]
    assert "values" not in report["errors"][0]["message"].split("leave the chart:")[0]  # type: ignore[index]
    assert [f["name"] for f in report["findings"]] == ["good"]  # type: ignore[index]


def test_a_bug_on_one_file_is_counted_once_not_as_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug met on one file was an `internal-error` finding and also counted as bad input: the summary said
    "1 error(s) ... 1 file(s) with bad input" for the one file, and `summary.badInput` (the length of `errors`, as
    documented) did not match `errors`. It is now one error finding; the file is failed and the exit code 2."""
    from dramigrate import commands
    from dramigrate.commands import Options
    from dramigrate.detect import Detector

    real = Detector.analyze

    def analyze(self: Detector, doc: object) -> object:
        if self.path.endswith("buggy.yaml"):
            raise KeyError("spec")
        return real(self, doc)  # type: ignore[arg-type]

    monkeypatch.setattr(Detector, "analyze", analyze)
    for name in ("buggy", "good"):
        (tmp_path / f"{name}.yaml").write_text(ONE_GPU_POD.format(name=name))
    report = tmp_path / "r.json"
    formats = ["json", f"text={tmp_path / 'r.txt'}"]

    code = commands.do_lint(Options([str(tmp_path)], format=formats, output=report), None)

    doc = json.loads(report.read_text())
    assert code == 2
    assert doc["errors"] == [] and doc["summary"]["badInput"] == 0
    bugs = [f for f in doc["findings"] if f["rule"] == "internal-error"]
    assert [Path(f["file"]).name for f in bugs] == ["buggy.yaml"] and doc["summary"]["errors"] == 2
    assert [Path(f["file"]).name for f in doc["files"]["failed"]] == ["buggy.yaml"]
    assert "bad input" not in (tmp_path / "r.txt").read_text()


def test_a_workload_of_a_million_comment_lines_is_refused_quickly(tmp_path: Path) -> None:
    """Comments and block-scalar lines are no values, so the bound on values let a 4 MB pod of two million `#` lines
    through: ruamel's scanner took some 50 µs a line, and diff and fix each ran past 90 s (lint, which does not
    read it round trip, took a second and called it fixable). Such a document is now bad input at its line for lint
    and fix alike, before the round-trip reader sees it; the good files beside it are migrated."""
    bad = tmp_path / "comments.yaml"
    text = ONE_GPU_POD.format(name="comments") + "#\n" * 150_000
    bad.write_text(text)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    said = "comments.yaml:1: this document has more than 100,000 lines"

    for command in ("lint", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path, timeout=60)
        assert code == 2 and said in out + err and "Traceback" not in out + err, (command, out, err)

    assert bad.read_text() == text
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_a_line_break_in_a_yaml_key_never_starts_a_workflow_command(tmp_path: Path) -> None:
    """A duplicate key is named in the bad-input message, and the text report (the default format, printed in CI
    logs) kept that key's line breaks: a key `"x\\n::error file=a.yaml::..."` written twice printed a line of its own
    that GitHub Actions obeyed as a workflow command (an annotation on any file, with any message). So did an
    unknown setting of a repository's `.dramigrate.yaml`. Both are now shown on one line, the break as `\\n`."""
    key = '"x\\n::error file=a.yaml::forged"'
    pod = ONE_GPU_POD.format(name="dup").replace("spec:\n", f"  labels:\n    {key}: a\n    {key}: b\nspec:\n", 1)
    (tmp_path / "dup.yaml").write_text(pod)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in (["lint", "."], ["diff", "."]):
        code, out, err = run_dramigrate(command, cwd=tmp_path)
        assert code == 2 and "dup.yaml:7:5: invalid YAML: duplicate key: x\\n::error file=a.yaml::forged" in out + err
        assert not [line for line in (out + err).splitlines() if line.startswith("::")], out + err

    (tmp_path / ".dramigrate.yaml").write_text(f"{key}: 1\n")
    code, out, err = run_dramigrate(["lint", "good.yaml"], cwd=tmp_path)
    assert code == 2 and "unknown setting `x\\n::error file=a.yaml::forged`" in err, err
    assert not [line for line in (out + err).splitlines() if line.startswith("::")], err


def test_packed_subcharts_nested_past_the_bound_are_refused(tmp_path: Path) -> None:
    """Helm loads a packed subchart's own packed subcharts at any depth; the schema references of the archives were
    confined three deep, so a leaky schema seven archives down was still read. Past five archives the chart is
    refused by name; the good file beside it is migrated."""
    outside = tmp_path / "outside.json"
    outside.write_text(REFUSES_A_COUNT)
    archive = _packed(
        {
            "l7/Chart.yaml": "apiVersion: v2\nname: l7\nversion: 0.1.0\n",
            "l7/values.schema.json": json.dumps({"properties": {"gpus": {"$ref": outside.as_uri()}}}),
            "l7/values.yaml": "gpus: 1\n",
        }
    )
    for level in range(6, 0, -1):
        archive = _packed(
            {
                f"l{level}/Chart.yaml": f"apiVersion: v2\nname: l{level}\nversion: 0.1.0\n",
                f"l{level}/charts/x.tgz": archive,
            }
        )
    chart = chart_with(tmp_path, "deep", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (chart / "charts").mkdir()
    (chart / "charts" / "l1-0.1.0.tgz").write_bytes(archive)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, report, _ = _lint_json(tmp_path, "deep", "good.yaml")

    assert code == 2
    assert [(e["file"], e["rule"]) for e in report["errors"]] == [("deep", "chart-archive-limit")]  # type: ignore[index]
    assert "nested more than 5 deep" in report["errors"][0]["message"]  # type: ignore[index]
    assert [f["name"] for f in report["findings"]] == ["good"]  # type: ignore[index]


def test_a_values_schema_helm_reads_is_confined_however_it_is_written(tmp_path: Path) -> None:
    """Helm reads a chart file with a UTF-8 byte-order mark (it drops it), Go's JSON reader takes bytes that are not
    UTF-8, and a chart file may have up to 5 MiB; dramigrate's check of a values schema's references skipped all
    three (a JSON error, a decoding error, a 4 MiB bound), so Helm read the `file://` reference and what the run
    said depended on that file. The run now says the same whatever the file outside holds. A chart for each way
    of writing the schema, in one tree: what any of them says must not change."""
    outside = tmp_path / "outside.json"
    plain = json.dumps({"properties": {"gpus": {"$ref": outside.as_uri()}}}).encode()
    schemas = {
        "bom": b"\xef\xbb\xbf" + plain,
        "latin": plain.replace(b'{"properties"', b'{"description": "caf\xe9", "properties"'),
        "large": plain.replace(b'{"properties"', b'{"description": "' + b"x" * (9 << 19) + b'", "properties"'),
    }
    for name, schema in schemas.items():
        chart = chart_with(tmp_path, name, {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
        (chart / "values.schema.json").write_bytes(schema)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    said = []
    for accepted in ("integer", "string"):
        outside.write_text(f'{{"type": "{accepted}"}}')
        code, report, err = _lint_json(tmp_path, *schemas, "good.yaml")
        progress = " charts checked ("  # how far a slow run got, said on a busy machine: no part of the outcome
        said.append((code, report, [line for line in err.splitlines() if progress not in line]))

    assert said[0] == said[1]
    assert "good" in [f["name"] for f in said[0][1]["findings"]]  # type: ignore[index]
    for name, schema in schemas.items():
        assert (tmp_path / name / "values.schema.json").read_bytes() == schema
