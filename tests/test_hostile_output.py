"""Standard output under an operator's faults: a locale that cannot encode a file's name, a full disk. The report
is written or its failure named, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, dramigrate_executable, run_dramigrate

GPU_POD = ONE_GPU_POD.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: {{ .Values.gpus }}")
INVENTORY = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "a100-80gb.yaml"


def test_reports_name_a_non_ascii_file_when_the_locale_is_ascii(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PYTHONIOENCODING=ascii (or a C locale without UTF-8 mode) ended diff over a file named café.yaml with an
    internal error; the report is UTF-8, as its format says."""
    (tmp_path / "café.yaml").write_text(ONE_GPU_POD.format(name="cafe"))
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")

    code, out, err = run_dramigrate(["diff", ".", "--format", "json"], cwd=tmp_path)

    assert "internal error" not in err
    assert code == 0
    assert [f["file"] for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"] == ["café.yaml"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["lint"], ["fix"], ["--version"], ["lint", "--help"]])
def test_a_report_that_cannot_be_written_to_standard_output_is_named(tmp_path: Path, args: list[str]) -> None:
    """Standard output on a full disk ended the run with `internal error: OSError`, or with Python's own
    'Exception ignored' traceback when the report fit its buffer; --version exited 0 having printed nothing, and
    --help ended in a traceback."""
    (tmp_path / "a.yaml").write_text(ONE_GPU_POD.format(name="a"))
    command = args if "-" in args[-1][:1] else [*args, str(tmp_path), "--format", "json"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [dramigrate_executable(), *command],
            stdout=full,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
        )
    err = done.stderr.decode()

    assert done.returncode == 2
    assert err.splitlines()[-1] == "dramigrate: cannot write to standard output: No space left on device"
    assert "Traceback" not in err and "internal error" not in err


def test_a_config_or_inventory_error_shows_terminal_escapes_instead_of_obeying_them(tmp_path: Path) -> None:
    """A repository's .dramigrate.yaml (or a device inventory) names a key with ESC and BEL: the message that
    refuses it quotes the key, and the operator's terminal must not obey it (retitle the window, clear the screen)."""
    (tmp_path / "a.yaml").write_text(ONE_GPU_POD.format(name="a"))
    (tmp_path / ".dramigrate.yaml").write_text('"\\e]0;pwned\\a\\e[2Jbad": 1\n')
    code, _, err = run_dramigrate(["lint", "."], cwd=tmp_path)
    assert code == 2 and "unknown setting" in err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07\\x1b[2Jbad" in err
    (tmp_path / ".dramigrate.yaml").unlink()
    inventory = tmp_path / "slices.yaml"
    inventory.write_text(
        'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: "s\\e[2J"}\nspec:\n'
        "  driver: gpu.nvidia.com\n  nodeName: n\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
        "  devices:\n  - name: g\n    attributes:\n      x: {int: 1e400}\n"
    )
    code, _, err = run_dramigrate(["fit", "a.yaml", "--inventory", str(inventory)], cwd=tmp_path)
    assert code == 2 and "slices.yaml" in err and "\x1b" not in err and "s\\x1b[2J" in err


def test_a_file_whose_name_reads_as_an_option_is_linted_as_pre_commit_names_it(tmp_path: Path) -> None:
    """pre-commit appends the staged file names to the hook's command line: a file named `-ovictim.yaml` was read
    as `-o victim.yaml`, and the report overwrote victim.yaml (`--html=`, `--classes-file=` wrote there too)."""
    victim = tmp_path / "victim.yaml"
    victim.write_text(ONE_GPU_POD.format(name="victim"))
    hostile = ("-ovictim.yaml", "--html=victim.yaml", "--classes-file=victim.yaml")
    for i, name in enumerate(hostile):
        (tmp_path / name).write_text(ONE_GPU_POD.format(name=f"h{i}"))
    for command in ("lint", "diff"):
        code, out, err = run_dramigrate([command, "--format", "json", *hostile, "victim.yaml"], cwd=tmp_path)
        assert code == (1 if command == "lint" else 0), err
        assert victim.read_text() == ONE_GPU_POD.format(name="victim")
        named = {f["file"] for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"}
        assert named == {*hostile, "victim.yaml"}
    code, _, err = run_dramigrate(["fix", "-q", *hostile], cwd=tmp_path)
    assert code == 0, err
    assert victim.read_text() == ONE_GPU_POD.format(name="victim")
    assert all("resourceClaimTemplateName" in (tmp_path / name).read_text() for name in hostile)
    # the action's `dramigrate lint $PATHS --format github $ARGS`, a glob in PATHS: options after the names
    code, out, err = run_dramigrate(["lint", *hostile, "victim.yaml", "--format", "json"], cwd=tmp_path)
    assert code == 1 and victim.read_text() == ONE_GPU_POD.format(name="victim"), err
    # an option's own value keeps being its value
    code, out, err = run_dramigrate(
        ["lint", "--exclude", "-ovictim.yaml", "-ovictim.yaml", "victim.yaml"], cwd=tmp_path
    )
    assert code == 1 and "-ovictim.yaml" not in out and "victim.yaml" in out, err


def test_a_file_name_with_line_breaks_never_starts_a_line_of_its_own(tmp_path: Path) -> None:
    """GitHub Actions obeys a workflow command on any line a step prints, standard error included. A file named
    `x<newline>::error::...` (a FIFO, a symlink out of the tree, a read-only manifest, a chart's folder) was
    printed with its line breaks in the notes, the `fixed` lines, the chart lines and the bad-input lines of text
    output (and fit's), so a pull request could forge annotations or run `::add-mask::`/`::stop-commands::` even
    with --format github escaping its own."""
    forged = "::error file=README.md::forged"
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    os.mkfifo(tmp_path / f"fifo\n{forged}\n.yaml")
    (tmp_path / f"link\n{forged}\n.yaml").symlink_to("/etc/hostname")
    read_only = tmp_path / f"ro\n{forged}\n.yaml"
    read_only.write_text(ONE_GPU_POD.format(name="ro"))
    read_only.chmod(0o444)
    chart = chart_with(tmp_path, "app", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD})
    chart.rename(tmp_path / f"app\n{forged}\n")

    runs = [
        ["diff", "."],
        ["fix", "."],
        ["lint", ".", "--format", "github"],
        ["fit", ".", "--inventory", str(INVENTORY)],
    ]
    for args in runs:
        code, out, err = run_dramigrate(args, cwd=tmp_path)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
        lines = (out + err).splitlines()
        assert not [line for line in lines if line.lstrip().startswith(forged)], (args, out + err)
        if args[0] == "fix":  # the read-only file is still named, its line break shown
            assert code == 2 and "ro\\n::error" in err, err
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_an_inventory_that_is_a_device_or_not_utf8_is_named_at_once(tmp_path: Path) -> None:
    """fit read its --inventory with a plain read: a link to /dev/zero never ended, and bytes that are not UTF-8
    were an internal error. It is read as every other input file is: a regular file within the size limit."""
    (tmp_path / "a.yaml").write_text(ONE_GPU_POD.format(name="a"))
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    (tmp_path / "latin.yaml").write_bytes(INVENTORY.read_bytes().replace(b"gpu.nvidia.com", b"gpu.nvidia.com\xe9", 1))
    for name, said in (("zero.yaml", "not a regular file"), ("latin.yaml", "not UTF-8")):
        code, _, err = run_dramigrate(["fit", "a.yaml", "--inventory", name], cwd=tmp_path, timeout=30)
        assert code == 2 and name in err and said in err and "internal error" not in err, err


def test_a_file_name_that_is_not_utf8_is_named_one_way_in_each_report(tmp_path: Path) -> None:
    """A file named with bytes that are not UTF-8 (or a line break) was `bad\\udcff.yaml` in the JSON report's
    `errors` and findings but `bad?.yaml` in its `files` lists, and `bad\\xff.yaml` in the text report's lines but
    `bad?.yaml` in its `failed:` list: a script could not match a failed file to its error, nor open it. Each
    report names it one way: JSON as the name's own bytes (a lone surrogate for each byte that is not UTF-8, as
    os.fsdecode gives), text as \\xNN and \\n everywhere."""
    good = os.fsdecode(b"good\xfe.yaml")
    bad = os.fsdecode(b"bad\xff.yaml")
    broken = "broken\nline.yaml"
    (tmp_path / good).write_text(ONE_GPU_POD.format(name="good"))
    for name in (bad, broken):
        (tmp_path / name).write_text(ONE_GPU_POD.format(name="bad") + "  - [\n")

    code, out, err = run_dramigrate(["fix", ".", "--format", "json"], cwd=tmp_path)

    assert code == 2, err
    report = json.loads(out)
    assert sorted(e["file"] for e in report["errors"]) == sorted(f["file"] for f in report["files"]["failed"])
    assert sorted(f["file"] for f in report["files"]["failed"]) == sorted([bad, broken])
    assert [f["file"] for f in report["files"]["written"]] == [good]
    assert all((tmp_path / f["file"]).is_file() for f in report["files"]["failed"])  # names a script can open
    assert {e["message"] for e in report["errors"]} == {f["reason"] for f in report["files"]["failed"]}

    code, out, err = run_dramigrate(["lint", "."], cwd=tmp_path)

    assert code == 2, err
    for shown in ("bad\\xff.yaml", "broken\\nline.yaml"):
        assert f"bad input {shown}:" in out and f"\n  {shown}: invalid YAML" in out, out
    assert "?" not in out.split("failed:")[1]
