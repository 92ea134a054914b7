"""Session 28's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named, nothing from outside the tree in any output, no traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, base_and_overlay, dramigrate_executable, run_dramigrate

SECRET = "OUTSIDE-SECRET-28"

OUTSIDE_PATCH = f"""\
apiVersion: v1
kind: Pod
metadata:
  name: pod
spec:
  containers:
  - name: {SECRET}
    resources:
      limits:
        nvidia.com/gpu: 2
"""


ENTRIES = {"dotdot": "path: ../../../outside.yaml", "absolute": "path: {outside}", "link": "path: link.yaml"}


def test_a_patch_file_outside_the_kustomization_is_never_read_into_a_report(tmp_path: Path) -> None:
    """kustomize refuses a patch file outside the kustomization's folder (its load restrictor), and dramigrate said
    so, but read the file anyway to look for device requests: a patch elsewhere on the machine (named by `../`, by
    an absolute path, or through a link in the overlay) holding a device request had its container name and count
    quoted in every report, at its own path outside the tree. One tree holds an overlay of each kind, each named;
    each command writes each format in one run."""
    repo = tmp_path / "repo"
    outside = tmp_path / "outside.yaml"
    outside.write_text(OUTSIDE_PATCH)
    for name, entry in ENTRIES.items():
        overlay = base_and_overlay(repo / name, f"resources:\n- ../base\npatches:\n- {entry.format(outside=outside)}\n")
        (overlay / "link.yaml").symlink_to(outside)
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    for command in ("lint", "diff", "fix"):
        formats = {fmt: tmp_path / f"{command}.{fmt}" for fmt in ("json", "github")}
        args = [command, ".", "--format", "text", *(f"--format={fmt}={path}" for fmt, path in formats.items())]
        code, out, err = run_dramigrate(args, cwd=repo, timeout=60)
        assert "Traceback" not in err
        for fmt, said in {"text": out + err, **{fmt: path.read_text() for fmt, path in formats.items()}}.items():
            assert SECRET not in said and f"{outside}:" not in said, (command, fmt, said)
            for name in ENTRIES:
                assert f"{name}/overlay/kustomization.yaml" in said, (command, fmt, name, said)
            assert said.count("outside its own folder") >= len(ENTRIES), (command, fmt, said)
    assert outside.read_text() == OUTSIDE_PATCH
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()


@pytest.mark.parametrize(
    ("command", "code"), [(["lint", "--format", "json"], 1), (["diff"], 0), (["diff", "--check"], 1)]
)
def test_a_reader_that_stops_early_leaves_the_exit_code_and_no_traceback(
    tmp_path: Path, command: list[str], code: int
) -> None:
    """`dramigrate lint --format json . | head` exited 0 with errors in the tree (a gate under `set -o pipefail`
    went green), and `dramigrate diff . | head` printed Python's 'Exception ignored ... BrokenPipeError'
    traceback and exited 120. The reader leaving now drops the rest of the output, and the run ends as it would."""
    for i in range(200):  # a report and a diff larger than a pipe's buffer
        (tmp_path / f"pod{i}.yaml").write_text(ONE_GPU_POD.format(name=f"pod{i}"))
    line = " ".join([dramigrate_executable(), *command, "."]) + ' | head -c 10 >/dev/null; echo "${PIPESTATUS[0]}"'
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert proc.stdout.strip() == str(code), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_reading_a_small_file_for_its_comments_or_encoding_takes_little_memory(tmp_path: Path) -> None:
    """fix under `ulimit -v 300000` wrote every file and then ended in `internal error: MemoryError`: looking for
    suppression comments read each file with `read(64 MiB)`, which takes the whole 64 MiB first (and the chart
    check for text that is not UTF-8 took 32 MiB per file the same way)."""
    import tracemalloc

    from dramigrate.helm.run import _undecodable
    from dramigrate.suppress import FileSuppressions

    pod = tmp_path / "pod.yaml"
    pod.write_text(ONE_GPU_POD.format(name="pod") + "# dramigrate: disable-file\n")
    tracemalloc.start()
    try:
        assert FileSuppressions().of(str(pod)).whole_file
        assert _undecodable(str(pod)) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # a read of at most one 1 MiB chunk at a time, not 64 MiB


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the worker pool needs two cores")
@pytest.mark.parametrize("command", ["lint", "diff"])
def test_workers_that_cannot_start_leave_the_files_to_the_run_itself(tmp_path: Path, command: str) -> None:
    """Under a low limit on open files (ulimit -n 14) the worker pool could not open the pipes of its second
    worker: the run ended in `internal error: OSError: [Errno 24] Too many open files`, and then never exited,
    waiting for the worker that had started. The files are now checked in the run's own process."""
    import resource

    for i in range(250):  # enough files for the worker pool
        (tmp_path / f"pod{i}.yaml").write_text(ONE_GPU_POD.format(name=f"pod{i}"))

    def few_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (14, 14))

    proc = subprocess.run(
        [dramigrate_executable(), command, "--check", "."]
        if command == "diff"
        else [dramigrate_executable(), command, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=few_files,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "internal error" not in proc.stdout + proc.stderr
    assert "pod249.yaml" in proc.stdout + proc.stderr


def test_a_config_exclude_too_long_to_compile_in_time_is_named_at_once(tmp_path: Path) -> None:
    """fnmatch compiles a glob in time that grows with the square of its length: a pull request's
    .dramigrate.yaml with one exclude of 20,000 `[` kept lint 49 s and fix past a minute before any file was
    read (a 1 MiB config: hours). Such a pattern is now refused at once, by the config's name."""
    import time

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / ".dramigrate.yaml").write_text('exclude:\n- "' + "[" * 20_000 + '"\n')
    start = time.monotonic()
    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=60)
    assert time.monotonic() - start < 20
    assert code == 2 and ".dramigrate.yaml" in err and "20,000 characters" in err, err
    (tmp_path / ".dramigrate.yaml").write_text("exclude:\n- 'vendor/**'\n")
    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=60)
    assert code == 0 and "resourceClaimTemplateName" in (tmp_path / "pod.yaml").read_text(), err


def test_a_helmignore_rule_that_backtracks_leaves_the_run_in_seconds(tmp_path: Path) -> None:
    """A chart's .helmignore rule `*a*a...*ab` was compiled to a regex, whose match of a file named `aaa...a`
    (200 characters) backtracked for ever: lint and fix of the folder never ended, good files beside it unwritten.
    Rules are matched part by part as Go's filepath.Match reads them, in time the length of the name."""
    import time

    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "files").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("gpus: 1\n")
    (chart / "templates" / "pod.yaml").write_text(
        ONE_GPU_POD.format(name="p").replace(": 1\n", ": {{ .Values.gpus }}\n")
    )
    (chart / ".helmignore").write_text("*a" * 12 + "b\n*.bak\n")
    (chart / "files" / ("a" * 200)).write_text("x")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    start = time.monotonic()
    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=60)
    assert time.monotonic() - start < 30
    assert code == 0, err
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert "resourceClaimTemplateName" in (chart / "templates" / "pod.yaml").read_text()


@pytest.mark.parametrize("where", ["sharing", "wholeHost"])
@pytest.mark.parametrize("pattern", ["^(a+)+$", "("])
def test_a_rule_packs_label_pattern_is_checked_when_the_pack_loads(tmp_path: Path, where: str, pattern: str) -> None:
    """A resource's `sharing.sharedValuePattern` and `wholeHost` label patterns were compiled only when a pod
    pinned the label, and never checked as a resource regex is: a repository's pack with `^(a+)+$` kept lint and
    fix for ever on a pod whose node selector holds `aaa...!`, and one that does not compile was an internal error
    on each such file. Both are now refused by the pack's name when it loads, before any file is read."""
    import time

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    sharing, whole = ("'" + pattern + "'", "x") if where == "sharing" else ("x", "'" + pattern + "'")
    (tmp_path / "pack.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\ndescription: x\ndomains: [acme.io]\nresources:\n"
        "  - match: acme.io/gpu\n    deviceClass: gpu.acme.io\n    request: gpu\n"
        f"    sharing: {{setting: acme.io/gpu, nodeLabel: acme.io/product, sharedValuePattern: {sharing}}}\n"
        f"    wholeHost: {{labels: [{{key: acme.io/count, pattern: {whole}}}], reason: x}}\n"
        "deviceClasses:\n  - {name: gpu.acme.io, driver: gpu.acme.io}\n"
    )
    (tmp_path / ".dramigrate.yaml").write_text("rules: [pack.yaml]\n")
    pinned = f"  nodeSelector: {{acme.io/product: '{'a' * 40}!', acme.io/count: '{'a' * 40}!'}}\n  containers:"
    (tmp_path / "acme.yaml").write_text(
        ONE_GPU_POD.format(name="acme").replace("nvidia.com/gpu", "acme.io/gpu").replace("  containers:", pinned)
    )
    start = time.monotonic()
    code, out, err = run_dramigrate(["lint", "."], cwd=tmp_path, timeout=60)
    assert time.monotonic() - start < 30
    named = "sharing.sharedValuePattern" if where == "sharing" else "wholeHost.labels.0.pattern"
    assert code == 2 and "pack.yaml" in out + err and named in out + err, out + err
    assert "internal error" not in out + err
    code, out, err = run_dramigrate(["rules", "validate", "pack.yaml"], cwd=tmp_path, timeout=60)
    assert code == 2 and f"pack.yaml: resources.0.{named}" in out + err
