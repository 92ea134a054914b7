"""Session 31's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named and left as it was, no file content from outside the tree in any output, no
traceback."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


def test_a_pod_of_thousands_of_device_containers_is_fixed_in_seconds() -> None:
    """A pod of 3,000 containers of one GPU each (under the limit on values) took more than a minute to fix: a pod
    of more than 32 devices gets a claim for each 32, and each claim's plan validated the whole rewritten spec
    again, looked through every finding of the file for each request, and summed every claim so far to place the
    next request. Each spec is now validated once and each request placed and marked fixed by one look-up. Here 2,000
    containers, timed by the CPU time of the run (not the wall clock of a loaded machine): 3 s now, 14 s before."""
    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    containers = 2000
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wide\nspec:\n  containers:\n" + "".join(
        f"  - name: c{i}\n    image: app:1\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
        for i in range(containers)
    )
    settings = Settings()
    started = time.process_time()
    result = run_file(Job("wide.yaml", text.encode(), True), load_rules(settings.rules), settings, Target.parse("1.36"))
    took = time.process_time() - started

    assert result.error is None and result.rewritten is not None
    assert "nvidia.com/gpu: 1" not in result.rewritten
    assert result.rewritten.count("resourceClaimTemplateName:") == -(-containers // 32)
    assert sum(f.fixed for f in result.findings) == containers
    assert took < 7, f"{took:.1f} s of CPU"


@pytest.mark.parametrize("key", ["~", "1", "true", "1.5", "2001-12-14"])
def test_a_config_setting_named_by_a_number_null_or_date_is_named_at_its_line(tmp_path: Path, key: str) -> None:
    """A key YAML does not read as text (`~:`, `1:`, `true:`, a date) at the top of .dramigrate.yaml stopped the
    run with `internal error: AttributeError` and no file name: every report came out empty and the reviewer was
    asked to report a bug. It is now the config's bad input at its line, as an unknown setting is."""
    (tmp_path / ".dramigrate.yaml").write_text(f"<<: {{exclude: []}}\n{key}: x\n")  # a merge key before it, too
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for fmt in ("text", "json"):
        code, out, err = run_dramigrate(["lint", ".", "--format", fmt], cwd=tmp_path)

        assert code == 2 and "internal error" not in out + err and "Traceback" not in err, out + err
        assert ".dramigrate.yaml:2:1: a setting's name must be text" in err
    code, out, err = run_dramigrate(["lint", ".", "--format", "json"], cwd=tmp_path)
    [error] = json.loads(out)["errors"]
    assert (error["file"], error["line"]) == (".dramigrate.yaml", 2)


REFUSED_KUSTOMIZATIONS = {  # a base each: its kustomization, and where and how it is named
    "nul": ('resources:\n- pod.yaml\nnamePrefix: "a\x00b"\n', "kustomization.yaml:3:15: reading the kustomization: "),
    "escape": (
        'resources:\n- pod.yaml\nnamePrefix: "a\x1b[2Jb"\n',
        "kustomization.yaml:3:15: reading the kustomization: ",
    ),
    "key-twice": (
        "resources:\n- pod.yaml\nresources:\n- pod.yaml\n",
        "kustomization.yaml:3:1: reading the kustomization: ",
    ),
    "nested-key-twice": (
        "resources:\n- pod.yaml\nlabels:\n- pairs: {a: b, a: c}\n",
        "kustomization.yaml:4:17: reading the ",
    ),
}


def test_a_kustomization_yaml_refuses_is_named_at_its_line_by_lint_as_by_fix(tmp_path: Path) -> None:
    """A NUL or an escape character in a kustomization was an internal error (PyYAML's reader refused the text
    before the parse that names the line), and a key written twice was called fixable by lint while fix refused the
    whole graph (its round-trip parser refuses duplicate keys). Each is now the kustomization's bad input at its
    line, in lint, diff and fix alike; its base is left alone and the good file beside it is migrated. A base of
    each kind in one tree, one run of each command."""
    for name, (kustomization, _) in REFUSED_KUSTOMIZATIONS.items():
        base = tmp_path / name
        base.mkdir()
        (base / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
        (base / "kustomization.yaml").write_text(kustomization)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path)

        assert code == 2 and "internal" not in out + err and "Traceback" not in err, out + err
        for name, (_, said) in REFUSED_KUSTOMIZATIONS.items():
            assert f"bad input {name}/{said}" in out + err, (command, name, out + err)
    for name, (kustomization, _) in REFUSED_KUSTOMIZATIONS.items():
        assert (tmp_path / name / "pod.yaml").read_text() == ONE_GPU_POD.format(name="pod")
        assert (tmp_path / name / "kustomization.yaml").read_text() == kustomization
    assert "nvidia.com/gpu: 1" not in (tmp_path / "good.yaml").read_text()


def test_a_control_character_in_a_charts_values_file_is_named_at_its_line(tmp_path: Path) -> None:
    """A NUL (or another control character YAML does not allow) in a chart's values.yaml was named as the chart
    alone, with Helm's `yaml: control characters are not allowed` and no file or line, so a reviewer had to hunt
    for it. It is now the values file's bad input at its line and column, before any render; the chart is left as it
    was and the good file beside it is migrated. A chart for each character, in one tree."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    characters = {f"c{i}": character for i, character in enumerate(["\x00", "\x1b", "\x7f"])}
    for name, character in characters.items():
        chart = chart_with(tmp_path, name, {"templates/pod.yaml": GPU_POD_TEMPLATE})
        (chart / "values.yaml").write_text(f'gpus: 1\nname: "a{character}b"\n')
    before = {p: p.read_bytes() for name in characters for p in (tmp_path / name).rglob("*") if p.is_file()}
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path)

        assert code == 2 and "Traceback" not in err, out + err
        for name, character in characters.items():
            said = (
                f"bad input {name}/values.yaml:2:9: this values file holds the control character U+{ord(character):04X}"
            )
            assert said in out + err, (command, out + err)
    assert {p: p.read_bytes() for name in characters for p in (tmp_path / name).rglob("*") if p.is_file()} == before
    assert "nvidia.com/gpu: 1" not in (tmp_path / "good.yaml").read_text()


def test_a_helmignore_rule_helm_refuses_is_named_at_its_line(tmp_path: Path) -> None:
    """A .helmignore rule Go's filepath.Match refuses (a `[` left open, a trailing backslash) made Helm fail with
    `syntax error in pattern`, which the report gave as the chart's error with no file or line: the chart has many
    files and patterns. It is now the .helmignore's bad input at the rule's line; the good file is migrated. A chart
    for each rule, in one tree."""
    from conftest import GPU_POD_TEMPLATE, chart_with

    rules = {f"c{i}": rule for i, rule in enumerate(["[", "templates/[a-", "*.bak\\"])}
    for name, rule in rules.items():
        chart = chart_with(tmp_path, name, {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
        (chart / ".helmignore").write_text(f"# patterns\n*.tmp\n{rule}\n.git/\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path)

        assert code == 2 and "Traceback" not in err, out + err
        for name in rules:
            assert f"bad input {name}/.helmignore:3: Helm refuses this .helmignore pattern" in out + err, (name, err)
    for name in rules:
        assert (tmp_path / name / "templates" / "pod.yaml").read_text() == GPU_POD_TEMPLATE
    assert "nvidia.com/gpu: 1" not in (tmp_path / "good.yaml").read_text()


def test_each_reason_a_file_is_not_written_says_so_once(tmp_path: Path) -> None:
    """The summary's `not written:` list and each file's bad input said it twice in one reason: "not written:
    read-only file; not written (--force writes it anyway)", "not written: has 2 hard links; a rewrite would split
    them, so it is not written". Each reason now says it once, in every report."""
    for name in ("ro", "linked", "good"):
        (tmp_path / f"{name}.yaml").write_text(ONE_GPU_POD.format(name=name))
    (tmp_path / "ro.yaml").chmod(0o444)
    os.link(tmp_path / "linked.yaml", tmp_path / "other.yaml")
    text_report = tmp_path.with_name(tmp_path.name + "-report.txt")
    code, out, err = run_dramigrate(["fix", ".", "--format", "json", "--format", f"text={text_report}"], cwd=tmp_path)

    report = json.loads(out)
    reasons = [w["reason"] for w in report["files"]["notWritten"]] + [e["message"] for e in report["errors"]]
    assert len(reasons) == 4, report["files"]
    text = text_report.read_text()
    listed = text.split("\nnot written: ", 1)[1].splitlines()[1:]
    lines = [line for line in text.splitlines() if line.startswith("bad input")] + listed
    assert len(lines) == 4, text
    for said in reasons + lines:
        assert said.count("not written") + said.count("not overwritten") == 1, said


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or (os.geteuid() == 0 and shutil.which("setpriv") is None),
    reason="needs a plain user, or setpriv to drop root's file-reading overrides",
)
def test_a_folder_nobody_may_read_is_named_as_the_files_beside_it_are(tmp_path: Path) -> None:
    """`lint .` named the files it found `good.yaml` but a folder it could not read `./noread`, in every report and
    in the JSON report's `errors` and `files.failed`: one tree, two spellings, so a script matching names missed it.
    The folder is now `noread`, as the files are named."""
    from test_hostile_sweep25 import _run_without_root_overrides

    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "noread").mkdir()
    os.chown(tmp_path / "noread", 65534, 65534)
    os.chmod(tmp_path / "noread", 0)
    try:
        code, out = _run_without_root_overrides(["lint", ".", "--format", "json"], tmp_path)
    finally:
        os.chmod(tmp_path / "noread", 0o755)

    report = json.loads(out)
    assert code == 2
    assert [e["file"] for e in report["errors"]] == [f["file"] for f in report["files"]["failed"]] == ["noread"]
    assert [f["file"] for f in report["findings"]] == ["good.yaml"]
