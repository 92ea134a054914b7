"""Hostile inputs found by trying issue 11's acceptance check from outside the repo: each case is one bad item in a
folder of good files (or a race against the run), and what a user would notice when it goes wrong."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli, chart_with, dramigrate_executable, processes_left

from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.sandbox import ChartRefused

SECRET = "s3cr3t-token-4b1d"
READS_A_FILE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: token
data:
  token: {{ .Files.Get "files/token" | quote }}
"""


def _chart(root: Path, name: str, templates: dict[str, str]) -> Path:
    chart = chart_with(
        root, name, {"values.yaml": "gpus: 1\n"} | {f"templates/{rel}": t for rel, t in templates.items()}
    )
    (chart / "files").mkdir()
    return chart


def test_a_link_swapped_in_after_the_check_never_reaches_helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart is checked, then an attacker replaces files/token by a link to a secret before Helm reads it."""
    import dramigrate.helm.sandbox as sandbox

    (tmp_path / "secret").write_text(SECRET)
    chart = _chart(tmp_path, "racy", {"cm.yaml": READS_A_FILE})
    token = chart / "files" / "token"
    token.write_text("harmless")
    checked = sandbox.outside_links

    def check_then_swap(root: Path) -> list[str]:
        found = checked(root)
        if Path(root) == chart:  # right after the check of the chart itself
            token.unlink()
            token.symlink_to(tmp_path / "secret")
        return found

    monkeypatch.setattr(sandbox, "outside_links", check_then_swap)
    try:
        rendered = "".join(m.text for m in render_chart(chart, RenderOptions()))
    except ChartRefused as refused:
        rendered = refused.message
    assert SECRET not in rendered


def test_hard_links_and_fifos_in_a_chart_are_refused_by_name(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "secret").write_text(SECRET)
    linked = _chart(tmp_path, "linked", {"cm.yaml": READS_A_FILE})
    os.link(tmp_path / "secret", linked / "files" / "token")
    piped = _chart(tmp_path, "piped", {"cm.yaml": READS_A_FILE})
    os.mkfifo(piped / "files" / "token")  # Helm's loader would block on it for the whole render time limit
    good = tmp_path / "good.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_cli(["lint", linked, piped, good], timeout=60)

    assert code == 2 and SECRET not in out + err
    assert "files/token (hard-linked to a file outside the chart)" in out + err
    assert "files/token (a FIFO, device or socket" in out + err
    assert f"{good}:11:" in out  # the good file is still checked


def test_a_file_named_twice_through_a_symlink_is_fixed_once(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "alias.yaml").symlink_to("pod.yaml")

    code, out, err = run_cli(["fix", tmp_path])

    assert code == 0, err
    assert "resourceClaims" in (tmp_path / "pod.yaml").read_text()
    assert (tmp_path / "alias.yaml").is_symlink()


def test_fix_parses_round_trip_only_the_documents_it_can_edit(tmp_path: Path) -> None:
    """A 30 MB ConfigMap beside one Deployment took minutes in ruamel's pure-Python parser; it is not edited, so
    only libyaml reads it."""
    from dramigrate import documents
    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    big = tmp_path / "big.yaml"
    lines = "".join(f"  k{i}: v{i}\n" for i in range(2000))
    big.write_text(
        ONE_GPU_POD.format(name="pod") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n" + lines
    )
    loaded: list[str] = []
    real = documents._load  # ruamel's round-trip data of one document (from libyaml's events or ruamel's parser)

    def counting(body: str, helm_render: bool = False, comments: bool = True) -> object:
        loaded.append(body)
        return real(body, helm_render, comments)

    settings = Settings()
    documents._load = counting  # type: ignore[assignment]
    try:
        result = run_file(Job(str(big), None, True), load_rules(settings.rules), settings, Target.parse("1.36"))
    finally:
        documents._load = real  # type: ignore[assignment]
    assert result.rewritten is not None and "resourceClaims" in result.rewritten
    assert lines in result.rewritten  # the ConfigMap is kept byte for byte
    assert any("kind: Pod" in text for text in loaded)
    assert not any("kind: ConfigMap" in text for text in loaded)


def test_kill_9_leaves_no_process_and_no_temporary_folder(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    slow = _chart(
        tmp_path, "slow", {"loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"}
    )
    env = {**os.environ, "TMPDIR": str(tmp), "DRAMIGRATE_HELM_TIMEOUT": "120"}
    parent = subprocess.Popen(
        [dramigrate_executable(), "fix", str(slow)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(300):  # the render has started: its temporary folders exist
            time.sleep(0.1)
            if any(p.name.startswith("dramigrate-") for p in tmp.iterdir()):
                break
        else:
            pytest.fail("no temporary folder was made")
        time.sleep(0.5)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert processes_left(str(tmp)) == []
    for _ in range(100):
        left = [p.name for p in tmp.iterdir() if p.name.startswith("dramigrate-")]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def test_a_failed_proof_names_the_line_but_never_quotes_a_chart_file(tmp_path: Path, run_cli: RunCli) -> None:
    """The rewrite adds a values key, so `len .Values` differs and the proof fails on a value built from files/token:
    the message must point at the template line without printing the file's content."""
    value = '{{ printf "%s-%d" (.Files.Get "files/token" | trim) (len .Values) | quote }}'
    env = f"    env:\n    - name: T\n      value: {value}\n"
    pod = ONE_GPU_POD.format(name="gpu").replace("    image: app:1\n", "    image: app:1\n" + env)
    chart = _chart(tmp_path, "leaky", {"pod.yaml": pod.replace("gpu: 1", "gpu: {{ .Values.gpus }}")})
    (chart / "files" / "token").write_text(SECRET + "\n")

    code, out, err = run_cli(["diff", chart])

    assert "chart-rewrite-unproven" in out + err and "leaky/templates/pod.yaml:11" in out + err
    assert SECRET not in out + err


def test_a_pod_full_of_equal_comment_lines_is_fixed_in_seconds(tmp_path: Path) -> None:
    """20,000 equal comment lines inside a pod spec: the line matching of the minimal merge compared every pair of
    equal lines and took minutes (a run past any CI limit). The comments are all kept."""
    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    comments = "    # keep\n" * 20_000
    text = ONE_GPU_POD.format(name="pod").replace("  containers:\n", "  containers:\n" + comments)
    settings = Settings()
    started = time.monotonic()
    result = run_file(Job("pod.yaml", text.encode(), True), load_rules(settings.rules), settings, Target.parse("1.36"))
    assert time.monotonic() - started < 30  # minutes before
    assert result.rewritten is not None and "resourceClaims" in result.rewritten
    assert result.rewritten.count("# keep\n") == 20_000


def test_a_backtracking_regex_the_static_check_misses_fails_its_file_not_the_run(
    tmp_path: Path, run_cli: RunCli
) -> None:
    pattern = r"(a|aa)+\.com/y"  # exponential on a run of a's; regex_problem does not see it
    pack = tmp_path / "evil.yaml"
    pack.write_text(
        "schemaVersion: 1\nkind: RulePack\nname: evil\ndescription: evil\nresources:\n"
        f"  - regex: '{pattern}'\n    deviceClass: gpu.nvidia.com\n    request: gpu\n"
    )
    # a name holding the regex's literal `.com/y`, so the regex is tried on it (ruleindex.py), and backtracks
    bad = ONE_GPU_POD.format(name="bad").replace("nvidia.com/gpu", "a" * 300 + ".com/yz")
    (tmp_path / "bad.yaml").write_text(bad)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_cli(["lint", "--rules", pack, tmp_path / "bad.yaml", tmp_path / "good.yaml"], timeout=60)

    assert code == 2, err
    assert "bad.yaml: the rule-pack regex" in out + err and "catastrophic backtracking" in out + err
    assert "good.yaml:11:" in out  # the other file is still checked


def test_a_killed_process_leaves_no_temporary_folder_or_temp_file(tmp_path: Path) -> None:
    """What the janitor is for: a kill -9 between creating the temp file and the rename of an atomic write (or a chart
    render) runs no cleanup code in dramigrate itself."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    half_written = tmp_path / ".pod.yaml.1234.x.dramigrate"
    script = (
        "import os, signal, sys\n"
        "from dramigrate.lifetime import make_folder, watch\n"
        "folder = make_folder('dramigrate-chart-')\n"
        "(folder / 'values.json').write_text('{}')\n"
        f"open({str(half_written)!r}, 'w').write('half')\n"
        f"watch({str(half_written)!r})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp)}, check=False)
    assert killed.returncode == -signal.SIGKILL
    for _ in range(100):
        if not any(tmp.iterdir()) and not half_written.exists():
            break
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []
    assert not half_written.exists()
