"""Session 32's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named and left as it was, no traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate
from test_helm_chart_time import SLOW  # a chart whose every render spins


def _refused_by_fix(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """A tree of a good manifest and one fix refuses to write without --force (kind: read-only, a hard link, or
    another user's): the tree and the refused file."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad"))
    if kind == "read-only":
        bad.chmod(0o444)
    elif kind == "hard-linked":
        os.link(bad, tmp_path / "elsewhere.yaml")
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(bad, 54321, 54321)
    return tree, bad


REFUSALS = {"read-only": "read-only file", "hard-linked": "has 2 hard links", "owned": "owned by user 54321"}


def _counted_chart(tmp_path: Path) -> Path:
    """The chart c: a pod template whose GPU count is the values file's `gpus` (fix rewrites both files)."""
    return chart_with(
        tmp_path,
        "c",
        {
            "values.yaml": "gpus: 1\n",
            "templates/pod.yaml": ONE_GPU_POD.format(name="p").replace(
                "nvidia.com/gpu: 1", "nvidia.com/gpu: {{ .Values.gpus }}"
            ),
        },
    )


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_diff_says_fix_would_refuse_a_read_only_hard_linked_or_others_file(tmp_path: Path, kind: str) -> None:
    """diff shows what fix would write; a file fix refuses without --force (read-only, hard-linked, another
    user's) was shown as a patch, counted as `would change` and called `(would fix)`, exit 0, while fix then named
    it as bad input and wrote nothing to it (exit 2). diff now names it as fix does, with the way out, and shows
    no patch for it."""
    tree, bad = _refused_by_fix(tmp_path, kind)
    before = bad.read_bytes()

    code, out, err = run_dramigrate(["diff", "tree"], cwd=tmp_path)
    fix_code, _, fix_err = run_dramigrate(["fix", "tree"], cwd=tmp_path)

    assert "Traceback" not in err + fix_err
    assert REFUSALS[kind] in fix_err and fix_code == 2  # what fix does, as diff must say it
    assert code == fix_code, err
    assert "tree/good.yaml" in out, out
    assert "bad.yaml" not in out, out  # no patch fix would not apply
    said = [line for line in err.splitlines() if "bad.yaml" in line and REFUSALS[kind] in line]
    assert said and all("--force" in line for line in said), err
    assert "(would fix)" not in "".join(line for line in err.splitlines() if "bad.yaml:" in line), err
    assert bad.read_bytes() == before
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()  # fix wrote the good one


def test_diff_in_json_counts_a_file_fix_would_refuse_as_bad_input(tmp_path: Path) -> None:
    """The same in the JSON report: the refused file is bad input, not one of the files that would change."""
    tree, _ = _refused_by_fix(tmp_path, "read-only")

    code, out, err = run_dramigrate(["diff", "tree", "--format", "json"], cwd=tmp_path)

    summary = json.loads(out)["summary"]
    assert code == 2, err
    assert summary["badInput"] == 1 and summary["filesChanged"] == 1, summary


def test_diff_of_a_chart_with_a_read_only_file_fix_would_rewrite_names_it(tmp_path: Path) -> None:
    """A chart is written whole or not at all: fix refuses it for a read-only values file it would rewrite; diff
    showed the chart's patch as if fix would write it."""
    chart = _counted_chart(tmp_path)
    (chart / "values.yaml").chmod(0o444)

    code, out, err = run_dramigrate(["diff", "c"], cwd=tmp_path)
    fix_code, _, fix_err = run_dramigrate(["fix", "c"], cwd=tmp_path)

    assert "read-only file" in fix_err and fix_code == 2
    assert code == fix_code, err
    assert "values.yaml" not in out and "templates/pod.yaml" not in out, out
    assert any("c/values.yaml" in line and "read-only file" in line for line in err.splitlines()), err


def test_charts_each_rendering_up_to_the_limit_share_one_budget_for_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each chart's renders had a CPU time limit of their own (45 s), none for the run: a folder of charts each
    rendering up to that limit held fix for the limit times their number (three charts at a 3 s limit: 36 s of
    wall time; at the default, minutes each). The run's charts now share a budget for slow renders, as kustomize
    builds do: past a third of the limit each, they may take the limit once in all; then each chart gets that third,
    and a chart stopped so says why."""
    import time

    charts = 5
    for i in range(charts):
        # spin 5000: about 0.5 s of CPU a render, so the first chart spends the run's budget in a few renders; a 2 s
        # limit gives 8 s of wall time, past a cold worker's start on a busy machine (1 s, 4 s of it, was not)
        chart_with(tmp_path, f"slow{i}", {"templates/pod.yaml": SLOW, "values.yaml": "gpus: 1\nspin: 5000\n"})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    monkeypatch.setenv("DRAMIGRATE_HELM_CHART_TIMEOUT", "2")

    started = time.monotonic()
    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=300)
    took = time.monotonic() - started

    assert code == 2 and "Traceback" not in err, err
    refused = [line for line in err.splitlines() if line.startswith("bad input slow")]
    assert len(refused) == charts, err
    assert "the renders of this run's charts took 2 s of CPU in all" in refused[-1], err
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    for i in range(charts):
        assert "nvidia.com/gpu: {{ .Values.gpus }}" in (tmp_path / f"slow{i}" / "templates" / "pod.yaml").read_text()
    assert took < 300


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_fix_stopped_twice_while_writing_still_names_the_files_it_wrote(tmp_path: Path, signal_name: str) -> None:
    """A stopped fix ends the writes under way before it reports which files it wrote; a second signal while it
    waited for them (Ctrl-C pressed twice, a CI runner's SIGTERM repeated, or its SIGINT then SIGTERM) ended the run
    at once with exit 130 and no report at all, with a dozen files already rewritten on disk and none named. The
    wait now ends only when the writes under way have, whatever comes meanwhile, and the report names each file
    written."""
    import signal
    import subprocess
    import time

    from conftest import dramigrate_executable

    files = 400
    for i in range(files):
        (tmp_path / f"p{i}.yaml").write_text(ONE_GPU_POD.format(name=f"p{i}"))
    first = tmp_path / "p1.yaml"
    sig = getattr(signal, signal_name)
    process = subprocess.Popen(
        [dramigrate_executable(), "fix", ".", "--format", "json", "-q"],
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # pytest started in the background (`cmd &`) passes SIGINT on ignored, and Python then never raises it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if "resourceClaimTemplateName" in first.read_text():  # one of the first files written
            process.send_signal(sig)
            for _ in range(50):  # again and again, wherever the run is when they come
                time.sleep(0.002)
                if process.poll() is None:
                    process.send_signal(sig)
            break
        time.sleep(0.01)
    out, err = process.communicate(timeout=120)

    assert process.returncode == 128 + sig, err.decode()[-600:]
    assert b"Traceback" not in err
    report = json.loads(out)
    written = {w["file"] for w in report["files"]["written"]}
    on_disk = {p.name for p in tmp_path.glob("*.yaml") if "resourceClaimTemplateName" in p.read_text()}
    assert written == on_disk and 0 < len(written) < files
    assert not [p.name for p in tmp_path.iterdir() if not p.name.endswith(".yaml")]


@pytest.mark.parametrize("mark", ["\u200b", "\u2060", "\ufeff", "\u00ad"], ids=["zwsp", "word-joiner", "zwnbsp", "shy"])
def test_an_invisible_character_that_makes_a_device_name_invalid_is_shown(tmp_path: Path, mark: str) -> None:
    """A device key with an invisible character in it (a zero-width space pasted from a web page or chat, or planted)
    is not a name the API server takes, and lint said so: `nvidia.com/gpu is not a valid resource name ... did you
    mean nvidia.com/gpu?`, the character that is wrong shown as nothing, and the guess the same name again. The
    message now shows what is not ASCII in the name as an escape, and guesses the name without the invisible
    characters: the device the pack knows."""
    bad = ONE_GPU_POD.format(name="bad").replace("nvidia.com/gpu", f"nvidia.com/{mark}gpu")
    (tmp_path / "bad.yaml").write_text(bad)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", ".", "--format", "json"], cwd=tmp_path)

    assert "Traceback" not in err
    [finding] = [f for f in json.loads(out)["findings"] if f["file"] == "bad.yaml"]
    escaped = mark.encode("ascii", "backslashreplace").decode("ascii")
    assert finding["rule"] == "invalid-resource-name" and mark not in finding["message"], finding
    assert f"nvidia.com/{escaped}gpu is not a valid resource name" in finding["message"], finding
    assert "did you mean nvidia.com/gpu (device class gpu.nvidia.com)?" in finding["message"], finding
    fix_code, _, fix_err = run_dramigrate(["fix", "."], cwd=tmp_path)
    assert (tmp_path / "bad.yaml").read_text() == bad and fix_code == 1, fix_err
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_the_arabic_letter_mark_is_escaped_as_the_other_bidirectional_marks_are(tmp_path: Path) -> None:
    """U+061C (ARABIC LETTER MARK) is one of Unicode's bidirectional controls, as the left-to-right and right-to-left
    marks U+200E and U+200F are, and moves the neutral characters around it on screen as they do; the reports
    escaped those two and the overrides, but printed U+061C in a file name, and the diff printed it in a manifest's
    comment, as it was."""
    alm = "\u061c"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / f"gpu{alm}-1.yaml").write_text(ONE_GPU_POD.format(name="named"))
    (tree / "good.yaml").write_text(
        ONE_GPU_POD.format(name="good").replace("    resources:\n", f"    resources:  # 1 {alm}- 2\n")
    )
    markdown_report = tmp_path / "report.md"

    code, out, err = run_dramigrate(
        ["lint", "tree", "--format", "text", f"--format=markdown={markdown_report}"], cwd=tmp_path
    )
    diff_code, diff_out, diff_err = run_dramigrate(["diff", "tree"], cwd=tmp_path)

    assert code == 1 and diff_code == 0, err + diff_err
    assert "gpu\\u061c-1.yaml:11:9: error" in out and alm not in out + err
    assert alm not in markdown_report.read_text()
    assert alm not in diff_out + diff_err and "# 1 \\u061c- 2" in diff_out


# Runs dramigrate's CLI with os.replace sending the process SIGTERM right after the rename it is asked to stop at
# (the first of a name holding argv[1]): a CI job cancelled at that moment of fix.
STOP_AT_RENAME = """\
import os, signal, sys
real, at = os.replace, sys.argv.pop(1)
def replace(src, dst, *args, **kwargs):
    real(src, dst, *args, **kwargs)
    if at in str(dst) and not getattr(replace, "done", False):
        replace.done = True
        os.kill(os.getpid(), signal.SIGTERM)
os.replace = replace
from dramigrate.cli import main
sys.argv[0] = "dramigrate"
main()
"""


@pytest.mark.parametrize("at", ["templates", "good.yaml"], ids=["during-the-chart", "before-the-chart"])
def test_a_chart_fix_was_stopped_writing_is_left_whole_and_named(tmp_path: Path, at: str) -> None:
    """SIGTERM while fix wrote a chart (its templates renamed into place, its values file not yet) ended the run at
    once: the chart half written, no report. And SIGTERM while fix wrote the manifests left every chart unwritten
    but reported its requests fixed, the chart in no list. A chart is written whole or not at all, a stop included:
    what it had renamed is put back, and the chart is named as not written, its requests not fixed."""
    import subprocess
    import sys

    chart = chart_with(
        tmp_path / "tree",
        "c",
        {
            "values.yaml": "gpus: 1\n",
            "templates/pod.yaml": ONE_GPU_POD.format(name="p").replace(
                "nvidia.com/gpu: 1", "nvidia.com/gpu: {{ .Values.gpus }}"
            ),
        },
    )
    (tmp_path / "tree" / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    (tmp_path / "stop.py").write_text(STOP_AT_RENAME)

    process = subprocess.run(
        [sys.executable, tmp_path / "stop.py", at, "fix", ".", "--format", "json", "-q"],
        cwd=tmp_path / "tree",
        capture_output=True,
        timeout=300,
        check=False,
    )

    assert process.returncode == 143 and b"Traceback" not in process.stderr, process.stderr.decode()[-600:]
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    report = json.loads(process.stdout)
    assert report["files"]["written"] == [{"file": "good.yaml"}]
    [left] = report["files"]["notWritten"]
    assert left["file"] == "c" and "the run was stopped (SIGTERM)" in left["reason"], left
    assert not [f for f in report["findings"] if f["file"].startswith("c/") and f.get("fixed")], report["findings"]


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_lint_does_not_call_fixable_a_file_fix_would_refuse(tmp_path: Path, kind: str) -> None:
    """lint called the request in a read-only, hard-linked or other user's file `(fixable)` and counted it in the
    summary, so a CI gate said to run fix, and fix then refused the file. lint now says what diff says: the finding
    stays, not fixable, naming the file with fix's reason and --force. File modes are no bad input for lint: its exit
    code is what the findings make it (--exit-zero still passes, which it never does on bad input)."""
    tree, _ = _refused_by_fix(tmp_path, kind)

    code, out, err = run_dramigrate(["lint", "tree"], cwd=tmp_path)
    zero, _, _ = run_dramigrate(["lint", "tree", "--exit-zero"], cwd=tmp_path)
    fix_code, _, fix_err = run_dramigrate(["fix", "tree"], cwd=tmp_path)

    assert "Traceback" not in err + fix_err
    assert REFUSALS[kind] in fix_err and fix_code == 2  # what fix does, as lint must say it
    bad = [line for line in out.splitlines() if line.startswith("tree/bad.yaml:")]
    good = [line for line in out.splitlines() if line.startswith("tree/good.yaml:")]
    assert bad and all("(fixable)" not in line for line in bad), out
    assert all(f"fix would not write tree/bad.yaml: {REFUSALS[kind]}" in line and "--force" in line for line in bad)
    assert good and all("(fixable)" in line for line in good), out
    assert f"{len(good)} fixable with `dramigrate fix`" in out.splitlines()[-1], out
    assert code == 1 and zero == 0, err  # error findings remain; not bad input


def test_lint_reports_name_a_file_fix_would_refuse_in_every_format(tmp_path: Path) -> None:
    """Every machine format says it as the text report does: a CI gate reads these, not the text. One lint run
    writes each format to a file of its own."""
    _refused_by_fix(tmp_path, "read-only")
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "sarif", "github", "markdown", "junit")}

    code, _, err = run_dramigrate(["lint", "tree", *(f"--format={f}={p}" for f, p in reports.items())], cwd=tmp_path)

    assert code == 1, err
    for fmt, path in reports.items():
        out = path.read_text()
        assert "fix would not write tree/bad.yaml: read-only file" in out and "--force writes it anyway" in out, fmt
        if fmt == "json":
            doc = json.loads(out)
            by_file = {f["file"]: f["fixable"] for f in doc["findings"]}
            assert by_file == {"tree/bad.yaml": False, "tree/good.yaml": True}, doc["findings"]
            assert doc["summary"]["fixable"] == 1 and doc["summary"]["badInput"] == 0, doc["summary"]
        if fmt == "markdown":
            assert "1 fixable with `dramigrate fix`" in out, out


def test_diff_does_not_call_fixable_a_file_fix_would_refuse(tmp_path: Path) -> None:
    """diff named the file fix would refuse but still called its request `(fixable)` and counted it: the JSON
    report's summary said 2 fixable of which fix would resolve 1."""
    _refused_by_fix(tmp_path, "read-only")

    _, out, _ = run_dramigrate(["diff", "tree", "--format", "json"], cwd=tmp_path)

    doc = json.loads(out)
    assert {f["file"]: f["fixable"] or f["wouldFix"] for f in doc["findings"] if f["rule"] != "bad-input"} == {
        "tree/bad.yaml": False,
        "tree/good.yaml": True,
    }, doc["findings"]
    assert doc["summary"]["fixable"] == 1, doc["summary"]


@pytest.mark.parametrize("refused", ["templates/pod.yaml", "values.yaml"])
def test_lint_of_a_chart_with_a_read_only_file_fix_would_rewrite_names_it(tmp_path: Path, refused: str) -> None:
    """A chart is written whole or not at all: lint called its request fixable while fix refused the chart for a
    read-only template (or the values file holding the count) it would rewrite."""
    chart = _counted_chart(tmp_path)
    (chart / refused).chmod(0o444)

    code, out, err = run_dramigrate(["lint", "c"], cwd=tmp_path)
    fix_code, _, fix_err = run_dramigrate(["fix", "c"], cwd=tmp_path)

    assert f"c/{refused}: read-only file" in fix_err and fix_code == 2  # what fix does, as lint must say it
    request = [line for line in out.splitlines() if "[legacy-device-request]" in line]
    assert request and all("(fixable)" not in line for line in request), out
    assert all(f"fix would not write c/{refused}: read-only file" in line and "--force" in line for line in request)
    assert "fixable with" not in out and code == 1, out + err
