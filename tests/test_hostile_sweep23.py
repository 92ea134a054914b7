"""Hostile inputs of the twenty-third sweep (issue 11's checker, run from outside the repo): each beside a good
file; the bad one is named, in every report format asked for, and nothing is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("disable: [legacy-device-request, no-such-rule]", "no finding rule no-such-rule"),
        ("enable: 'legacy-device-request,no-such-rule'", "no finding rule no-such-rule"),
        ("kube-version: '1.20'", "`kube-version` 1.20"),
        ("kube-version: latest", "`kube-version` must look like"),
    ],
)
def test_a_config_setting_that_names_nothing_known_is_reported_at_its_line(
    tmp_path: Path, setting: str, said: str
) -> None:
    """A repository's config whose `disable`/`enable` names an unknown rule, or whose `kube-version` is unknown, was
    checked after the config loaded: the run stopped with a line on standard error (blaming a `--kube-version` flag
    nobody gave) and `--format json` or `github` printed nothing, so the consumer and the pull request saw no error.
    Now the config is named at the setting's line, in the report asked for, and nothing is checked or written."""
    (tmp_path / ".dramigrate.yaml").write_text(f"fail-on: error\n{setting}\n")
    good = tmp_path / "good.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", ".", "--format", "json"], cwd=tmp_path)
    report = json.loads(out)
    assert code == 2
    assert [(e["file"], e["line"]) for e in report["errors"]] == [(".dramigrate.yaml", 2)]
    assert said in report["errors"][0]["message"]
    assert "--kube-version" not in out + err

    code, out, _ = run_dramigrate(["fix", ".", "--format", "github"], cwd=tmp_path)
    assert code == 2
    assert out.startswith("::error file=.dramigrate.yaml,line=2,")
    assert good.read_text() == ONE_GPU_POD.format(name="good")


def test_a_config_setting_written_twice_is_refused_at_its_second_place(tmp_path: Path) -> None:
    """A pull request adding a second `exclude:` far down the repository's config (PyYAML keeps the last one
    silently) excluded every file while the review read the first: lint exited 0 with nothing checked. Now the
    config is bad input at the second key, and the good file is not skipped unnoticed."""
    (tmp_path / ".dramigrate.yaml").write_text("exclude: [vendor/**]\nfail-on: error\nexclude: ['**']\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, _ = run_dramigrate(["lint", ".", "--format", "json"], cwd=tmp_path)

    report = json.loads(out)
    assert code == 2
    assert [(e["file"], e["line"]) for e in report["errors"]] == [(".dramigrate.yaml", 3)]
    assert "`exclude` is set twice" in report["errors"][0]["message"]


def test_anchors_and_merge_keys_in_a_config_are_not_taken_for_a_setting_written_twice(tmp_path: Path) -> None:
    """The duplicate check reads keys as written: a merge key and an alias reused are no second setting."""
    (tmp_path / ".dramigrate.yaml").write_text(
        "exclude: &skip [vendor/**]\nremoved-taints: *skip\n"
        "sharing:\n  <<: {nvidia.com/gpu: none}\n  amd.com/gpu: none\n"
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", "."], cwd=tmp_path)

    assert code == 1, out + err
    assert "good.yaml" in out


def test_a_baseline_nested_past_the_stack_is_bad_input_named_not_an_internal_error(tmp_path: Path) -> None:
    """The baseline is a file of the repository a pull request can change: one holding `[[[[...` a hundred thousand
    levels deep stopped lint with `internal error: RecursionError` and no report. Now the baseline is named as
    bad input in the report asked for, and nothing else is read."""
    (tmp_path / "baseline.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", ".", "--baseline", "baseline.json", "--format", "json"], cwd=tmp_path)

    assert "internal error" not in out + err and "Traceback" not in out + err
    report = json.loads(out)
    assert code == 2
    assert [e["file"] for e in report["errors"]] == ["baseline.json"]
    assert "nests too deeply" in report["errors"][0]["message"]


def test_a_baseline_that_is_not_one_is_named_in_the_report_asked_for(tmp_path: Path) -> None:
    """A baseline that does not load was read only after the whole lint: the run then stopped with a line on
    standard error and `--format github` printed nothing, so the pull request that broke it got no annotation."""
    (tmp_path / "baseline.json").write_text('{"version": 1, "findings": "all of them"}\n')
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, _ = run_dramigrate(["lint", ".", "--baseline", "baseline.json", "--format", "github"], cwd=tmp_path)

    assert code == 2
    assert out.startswith("::error file=baseline.json,")
    assert "not a dramigrate baseline" in out


def test_a_values_file_that_is_a_link_out_or_a_fifo_is_named_in_the_report_asked_for(tmp_path: Path) -> None:
    """A -f values file refused before any work (a FIFO, a folder, a link out of the tree) stopped the run with a
    line on standard error only: `--format json` printed nothing, while a missing -f file was a report's error.
    Now each is bad input in the report, and nothing is written."""
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("gpus: 1\n")
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "outside.yaml").symlink_to("/proc/self/environ")

    for values in ("fifo.yaml", "outside.yaml"):
        code, out, _ = run_dramigrate(["lint", "chart", "-f", values, "--format", "json"], cwd=tmp_path, timeout=60)

        report = json.loads(out)
        assert code == 2
        assert [e["file"] for e in report["errors"]] == [values]


DEVICE_PACK = """\
schemaVersion: 1
kind: RulePack
name: y
description: a device whose class no driver chart ships
domains: [y.example.com]
resources:
  - regex: 'y\\.example\\.com/dev'
    deviceClass: y.example.com
    request: dev
deviceClasses:
  - name: y.example.com
    driver: y.example.com
"""


def test_a_classes_file_that_is_not_utf8_is_named_not_an_internal_error(tmp_path: Path) -> None:
    """fix --classes-file naming a file that is not UTF-8 (a Latin-1 file an editor saved, or a binary one) stopped
    with `internal error: UnicodeDecodeError` for it; now it is bad input named with its reason, and left as is.
    (UTF-16/32 with a byte-order mark is read, as a manifest is: test_hostile_sweep35_inputs.)"""
    (tmp_path / "pack.yaml").write_text(DEVICE_PACK)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod").replace("nvidia.com/gpu", "y.example.com/dev"))
    classes = tmp_path / "classes.yaml"
    classes.write_bytes("# DeviceClasses for the caf\xe9\n".encode("latin-1"))
    before = classes.read_bytes()

    code, out, err = run_dramigrate(
        ["fix", "pod.yaml", "--rules", "pack.yaml", "--classes-file", "classes.yaml", "--format", "json"], cwd=tmp_path
    )

    assert "internal" not in out + err
    report = json.loads(out)
    assert code == 2
    assert [(e["file"], e["rule"]) for e in report["errors"]] == [("classes.yaml", "bad-input")]
    assert "not UTF-8" in report["errors"][0]["message"]
    assert classes.read_bytes() == before


@pytest.mark.parametrize("regex", ["y{100000}\\.example\\.com/dev", "((y{20}){20})\\.example\\.com/dev"])
def test_a_rule_pack_regex_with_a_count_past_any_resource_name_is_refused_when_the_pack_loads(
    tmp_path: Path, regex: str
) -> None:
    """The regex engine unrolls a counted repeat when it compiles: a repository's rule pack with `y{1000000000}`
    made lint, diff and fix take every byte of memory until the kernel killed them (no report, minutes lost). No
    resource name is longer than MAX_RESOURCE_NAME characters, so a count past it (nested counts multiplied) is
    refused with the pack named, before any compile; `rules validate` says the same."""
    (tmp_path / "pack.yaml").write_text(DEVICE_PACK.replace("y\\.example\\.com/dev", regex))
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, _ = run_dramigrate(["lint", ".", "--rules", "pack.yaml", "--format", "json"], cwd=tmp_path)

    report = json.loads(out)
    assert code == 2
    assert [e["file"] for e in report["errors"]] == ["pack.yaml"]
    assert "unrolls it in memory" in report["errors"][0]["message"]
    code, out, err = run_dramigrate(["rules", "validate", "pack.yaml"], cwd=tmp_path)
    assert code != 0
    assert "unrolls it in memory" in out + err


def test_a_rule_pack_regex_with_counts_a_name_can_hold_still_loads(tmp_path: Path) -> None:
    """Counts a resource name can use (a DNS label's 63 characters) stay accepted."""
    pack = DEVICE_PACK.replace("y\\.example\\.com/dev", "[a-z0-9]{1,63}\\.example\\.com/dev")
    (tmp_path / "pack.yaml").write_text(pack)
    pod = ONE_GPU_POD.format(name="pod").replace("nvidia.com/gpu", "y.example.com/dev")
    (tmp_path / "pod.yaml").write_text(pod)

    code, out, err = run_dramigrate(["lint", "pod.yaml", "--rules", "pack.yaml"], cwd=tmp_path)

    assert code == 1, out + err
    assert "y.example.com/dev" in out and "legacy-device-request" in out


def test_a_rule_pack_alias_bomb_is_refused_before_its_values_are_quoted(tmp_path: Path) -> None:
    """A 600-byte rule pack of nested aliases (`b: [*a, *a, ...]`, seven levels) passed the event count (aliases are
    one event each), and the schema's message quoted the expanded value: lint printed 75 MB. The pack is now refused
    by its expanded size, named, in a short message; a schema message quoting a long value is cut."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 7)]
    (tmp_path / "pack.yaml").write_text("schemaVersion: 1\nkind: RulePack\nname: p\n" + "\n".join(levels) + "\n")
    (tmp_path / "long.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: q\ndomains: x\nresources: {"
        + ", ".join(f"k{i}: v" for i in range(5000))
        + "}\n"
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", "good.yaml", "--rules", "pack.yaml"], cwd=tmp_path)
    assert code == 2
    assert "pack.yaml: rules file expands to more than" in out + err
    assert len(out + err) < 5000

    code, out, err = run_dramigrate(["rules", "validate", "long.yaml"], cwd=tmp_path)
    assert code == 2
    assert "resources:" in out + err
    assert len(out + err) < 2000
