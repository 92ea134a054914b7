"""Hostile items and faults of the fifth sweep (issue 11's acceptance check run from outside the repo), each one a
thing a user would notice: a process left running after a kill -9, a metadata change on rewrite, a secret in a
message, a good file left unmigrated because of its neighbour."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import (
    ONE_GPU_POD,
    base_and_overlay,
    chart_with,
    dramigrate_executable,
    processes_left,
    repository_with_config,
)


def _kustomize_tree(root: Path) -> Path:
    base_and_overlay(root, "resources:\n- ../base\nnamePrefix: o-\n")
    return root


def _chart(root: Path) -> Path:
    pod = ONE_GPU_POD.format(name="pod").replace("gpu: 1", "gpu: {{ .Values.gpus }}")
    return chart_with(root, "chart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": pod})


@pytest.mark.parametrize("flag", ["--kustomize-binary", "--helm-binary"])
def test_a_kill_9_of_dramigrate_also_ends_the_programs_it_runs(tmp_path: Path, flag: str) -> None:
    """`kubectl kustomize` and a `--helm-binary` (with whatever they start: helm plugins, kustomize's helm) used to
    run on after a kill -9 of dramigrate, until their own time limit of minutes."""
    started = tmp_path / "started"
    program = tmp_path / ("kustomize" if flag == "--kustomize-binary" else "helm")
    program.write_text(f"#!/bin/sh\ntouch {started}\nsleep 300 &\nwait\n")  # a child of its own, like a plugin
    program.chmod(0o755)
    tree = _kustomize_tree(tmp_path / "tree") if flag == "--kustomize-binary" else _chart(tmp_path)
    marker = f"DRAMIGRATE_TEST_MARK={tmp_path}"
    env = {**os.environ, "DRAMIGRATE_TEST_MARK": str(tmp_path)}
    parent = subprocess.Popen(
        [dramigrate_executable(), "diff", str(tree), flag, str(program)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            if started.exists():
                break
            time.sleep(0.05)
        else:
            pytest.fail("the program was never started")
        time.sleep(0.2)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert processes_left(marker) == []


def _acl(*entries: tuple[int, int, int]) -> bytes:
    """A POSIX ACL as the kernel keeps it in system.posix_acl_* (version 2, then tag, permissions, id)."""
    import struct

    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in entries)


USER_OBJ, USER, GROUP_OBJ, MASK, OTHER, NOBODY = 0x01, 0x02, 0x04, 0x10, 0x20, 0xFFFFFFFF


def test_a_rewrite_keeps_the_files_acl_and_takes_none_from_its_folder(tmp_path: Path) -> None:
    """The temp file of a rewrite was made in the folder with the folder's default ACL: a file without an ACL came
    back with one (a named user and wider group bits) the user never gave it. A file's own ACL is kept as it was."""
    from conftest import run_dramigrate

    plain, with_acl = tmp_path / "plain", tmp_path / "acl"
    plain.mkdir()
    with_acl.mkdir()
    for folder in (plain, with_acl):
        (folder / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
        (folder / "pod.yaml").chmod(0o640)
    own = _acl((USER_OBJ, 6, NOBODY), (USER, 4, 1234), (GROUP_OBJ, 4, NOBODY), (MASK, 4, NOBODY), (OTHER, 0, NOBODY))
    try:
        os.setxattr(with_acl / "pod.yaml", "system.posix_acl_access", own)
        default = _acl(
            (USER_OBJ, 7, NOBODY), (USER, 7, 4321), (GROUP_OBJ, 5, NOBODY), (MASK, 7, NOBODY), (OTHER, 0, NOBODY)
        )
        os.setxattr(plain, "system.posix_acl_default", default)  # set after the file was made: it has no ACL
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs on this file system: {exc.strerror}")
    kept = os.getxattr(with_acl / "pod.yaml", "system.posix_acl_access")

    code, _, err = run_dramigrate(["fix", plain, with_acl])

    assert code == 0, err
    assert "resourceClaims" in (plain / "pod.yaml").read_text()
    assert "system.posix_acl_access" not in os.listxattr(plain / "pod.yaml")
    assert (plain / "pod.yaml").stat().st_mode & 0o777 == 0o640
    assert os.getxattr(with_acl / "pod.yaml", "system.posix_acl_access") == kept
    assert (with_acl / "pod.yaml").stat().st_mode & 0o777 == 0o640


def test_a_chart_rendering_thousands_of_objects_is_refused_at_once(tmp_path: Path) -> None:
    """A `range until` of tiny ConfigMaps: every render of the proof parsed each of them, and 150,000 of them ran
    past any CI limit (lint 40 s, diff and fix minutes). The good file beside is still checked."""
    from conftest import run_dramigrate

    chart = _chart(tmp_path)
    loop = '{{ range until 6000 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "c{{ . }}"}\n{{ end }}'
    (chart / "templates" / "many.yaml").write_text(loop)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["lint", chart, tmp_path / "good.yaml"])

    assert code == 2, err
    assert "chart-render-limit" in out and "more than 5,000 documents" in out
    assert f"{tmp_path / 'good.yaml'}:11:" in out


def test_a_file_with_a_long_name_is_rewritten(tmp_path: Path) -> None:
    """A 250-byte file name (NAME_MAX is 255): the temp file beside it, `.NAME.PID.RANDOM.dramigrate`, could not be
    made, so the file was never migrated ("File name too long")."""
    from dramigrate.writer import write_atomic

    path = tmp_path / ("L" * 245 + ".yaml")
    path.write_text("a: 1\n")

    write_atomic(path, "a: 2\n", expected=b"a: 1\n")

    assert path.read_text() == "a: 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_config_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    """600 bytes of .dramigrate.yaml whose `disable` list expands to billions of strings: the run printed nothing
    and ran past 60 s."""
    from conftest import run_dramigrate

    bomb = "disable: [&a0 [x,x,x,x,x,x,x,x,x]" + "".join(
        f", &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)
    )
    repo = repository_with_config(tmp_path, bomb + "]\n")

    code, out, err = run_dramigrate(["lint", "."], cwd=repo, timeout=30)

    assert code == 2
    assert ".dramigrate.yaml:1: config expands to more than 10,000 values (YAML alias bomb?)" in out + err


def test_a_config_setting_of_the_wrong_type_is_named_not_an_internal_error(tmp_path: Path) -> None:
    from conftest import run_dramigrate

    repo = repository_with_config(tmp_path, "rules: [1, {a: b}]\n")

    code, out, err = run_dramigrate(["lint", "."], cwd=repo)

    assert code == 2
    assert "internal error" not in out + err
    assert ".dramigrate.yaml:1:1: `rules` must be a list of strings" in out + err


def test_a_repository_config_may_not_read_a_crd_file_outside_it_nor_a_fifo(tmp_path: Path) -> None:
    """`crds:` was neither confined like the rule packs and classes file (a CI run read any file of the machine
    and quoted its YAML errors) nor checked for FIFOs (the run blocked for ever)."""
    from conftest import run_dramigrate

    outside = tmp_path / "crds.yaml"
    outside.write_text("kind: List\nitems: [{kind: CustomResourceDefinition}]\n")
    repo = repository_with_config(tmp_path, f"crds: {outside}\n")

    code, out, err = run_dramigrate(["lint", "."], cwd=repo)  # untrusted: no --trust-config

    assert code == 2
    assert f"`crds` names {outside}, outside the repository" in out + err
    assert "pod.yaml:11:" in out  # every other file is still checked

    os.mkfifo(repo / "crds.fifo")
    (repo / ".dramigrate.yaml").write_text("crds: crds.fifo\n")
    code, out, err = run_dramigrate(["lint", "."], cwd=repo, timeout=30)
    assert code == 2
    assert "crds.fifo: cannot read the CRD file: a FIFO" in out + err


def test_a_kustomize_build_that_runs_for_minutes_is_cut_off_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize itself ran for minutes on an overlay patch holding a YAML alias bomb, and dramigrate waited 120 s
    per build: diff and fix of a folder of good files passed any CI limit. The limit is now 30 s, here 3."""
    from conftest import overlay_with_alias_bomb, run_dramigrate

    tree = overlay_with_alias_bomb(tmp_path / "tree")
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_TIMEOUT", "3")
    monkeypatch.setenv("DRAMIGRATE_KUSTOMIZE_MEMORY_MB", "65536")  # the time limit, not the memory limit, stops it
    started = time.monotonic()

    code, out, err = run_dramigrate(["fix", tree], timeout=60)

    assert time.monotonic() - started < 45
    assert "overlay does not build with kustomize: kustomize build did not finish in 3 s" in err
    assert "resourceClaims" in (tree / "good.yaml").read_text()


def test_a_config_linked_to_a_file_outside_the_repository_is_not_read_nor_quoted(tmp_path: Path) -> None:
    """.dramigrate.yaml -> a file elsewhere on the machine: its YAML error printed the offending line of that file."""
    from conftest import run_dramigrate

    secret = tmp_path / "secret.txt"
    secret.write_text("token: s3cr3t-token-4b1d : [\n")
    repo = repository_with_config(tmp_path, "")
    (repo / ".dramigrate.yaml").unlink()
    (repo / ".dramigrate.yaml").symlink_to(secret)

    code, out, err = run_dramigrate(["lint", "."], cwd=repo)

    assert code == 2
    assert "s3cr3t" not in out + err
    assert ".dramigrate.yaml: a link to a file outside the repository; not read" in out + err

    (repo / ".dramigrate.yaml").unlink()  # a config of its own with the same error: named by line, not quoted
    (repo / ".dramigrate.yaml").write_text(secret.read_text())
    code, out, err = run_dramigrate(["lint", "."], cwd=repo)
    assert code == 2
    assert "s3cr3t" not in out + err
    assert ".dramigrate.yaml:1:26: invalid YAML: mapping values are not allowed here" in out + err


def test_file_names_that_are_not_utf8_or_reorder_text_are_reported_in_every_format(tmp_path: Path) -> None:
    """A file named with bytes that are not UTF-8 stopped the whole run with an internal error in the JUnit, SARIF
    and GitHub reports; a right-to-left override in a name printed it reversed (`gpu<RLO>lmay.exe.yaml` showed as
    an .exe)."""
    from conftest import run_dramigrate

    tree = tmp_path / "tree"
    tree.mkdir()
    latin = os.fsdecode(os.fsencode(tree) + b"/caf\xe9.yaml")
    Path(latin).write_text(ONE_GPU_POD.format(name="latin"))
    (tree / "gpu\u202elmay.exe.yaml").write_text(ONE_GPU_POD.format(name="bidi"))
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("junit", "sarif", "github", "markdown")}

    code, out, err = run_dramigrate(
        ["lint", tree, "--format", "text", *(f"--format={f}={p}" for f, p in reports.items())]
    )

    assert code == 1, err  # the error findings, not an internal error
    assert "caf\\xe9.yaml:11:9: error [legacy-device-request]" in out
    assert "gpu\\u202elmay.exe.yaml:11:9: error" in out and "\u202e" not in out
    assert "caf\\xe9.yaml" in reports["junit"].read_text() and "caf\\xe9.yaml" in reports["github"].read_text()
    assert "caf%E9.yaml" in reports["sarif"].read_text()  # the URI of the name's own bytes
    assert "\u202e" not in reports["junit"].read_text() + reports["markdown"].read_text()


def test_a_repository_git_config_runs_nothing_when_its_folder_is_linted(tmp_path: Path) -> None:
    """An unpacked archive or downloaded checkout whose .git/config sets core.fsmonitor: git runs that command when
    it reads the index, and `git check-ignore` (which dramigrate runs to honour .gitignore) reads it."""
    import shutil

    from conftest import run_dramigrate

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (repo / "ignored.yaml").write_text(ONE_GPU_POD.format(name="ignored"))
    (repo / ".gitignore").write_text("ignored.yaml\n")
    subprocess.run(["git", "-C", str(repo), "add", "pod.yaml", ".gitignore"], check=True)
    marker = tmp_path / "ran"
    subprocess.run(["git", "-C", str(repo), "config", "core.fsmonitor", f"touch {marker}; false"], check=True)

    code, out, err = run_dramigrate(["lint", repo])

    assert code == 1, err
    assert not marker.exists()
    assert "pod.yaml:11:" in out and "ignored.yaml" not in out  # .gitignore is still honoured


def test_the_html_report_of_a_fix_names_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    """fix --html hashed each file's name as UTF-8 for its anchor: a name with other bytes ended the run with an
    internal error after the files were written, and no report."""
    from conftest import run_dramigrate

    tree = tmp_path / "tree"
    tree.mkdir()
    Path(os.fsdecode(os.fsencode(tree) + b"/caf\xe9.yaml")).write_text(ONE_GPU_POD.format(name="latin"))
    page = tmp_path / "report.html"

    code, out, err = run_dramigrate(["fix", tree, "--html", page])

    assert code == 0, err
    assert "caf\\xe9.yaml" in page.read_text()


# --- the seventh sweep: process limits and standard streams ---------------------------------------------------


def _run_in(shell: str, args: list[str], cwd: Path, limit_fsize: int | None = None) -> subprocess.CompletedProcess:
    """dramigrate args run by `sh -c shell` ("$@" is the command), with an optional file size limit (RLIMIT_FSIZE)."""
    import resource

    def limit() -> None:
        if limit_fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_fsize, limit_fsize))

    env = {**os.environ, "NO_COLOR": "1"}
    command = ["sh", "-c", shell, "sh", dramigrate_executable(), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=60, preexec_fn=limit, check=False)


def test_an_html_report_past_the_file_size_limit_is_named_and_the_manifests_are_written(tmp_path: Path) -> None:
    """Under a file size limit (ulimit -f) the HTML report's write failed with EFBIG and the run ended in an internal
    error; the report is named as not written (exit 2), the manifests are written, no temp file is left."""
    (tmp_path / "k8s").mkdir()
    pod = tmp_path / "k8s" / "pod.yaml"
    pod.write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "reports").mkdir()

    proc = _run_in('exec "$@"', ["fix", "k8s", "--html", "reports/fix.html"], tmp_path, limit_fsize=6000)

    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "reports/fix.html: cannot write the HTML report: File too large" in err
    assert "internal error" not in err
    assert "resourceClaims" in pod.read_text()
    assert list((tmp_path / "reports").iterdir()) == []


def test_a_closed_standard_output_is_named_and_standard_error_stays_apart(tmp_path: Path) -> None:
    """`dramigrate lint k8s >&-` ended in an internal error (sys.stdout is None); with standard error closed
    (`2>&-`), the messages print() sends there went to standard output, into the JSON report."""
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "k8s" / "bad.yaml").write_text(ONE_GPU_POD.format(name="bad") + "  x: [\n")

    closed = _run_in('exec "$@" >&-', ["lint", "k8s"], tmp_path)
    no_errors = _run_in('exec "$@" 2>&-', ["lint", "--format", "json", "k8s"], tmp_path)

    err = closed.stderr.decode()
    assert closed.returncode == 2 and "internal error" not in err, err
    assert "cannot write to standard output: it was closed when dramigrate started" in err
    assert no_errors.returncode == 2
    report = json.loads(no_errors.stdout)
    assert [e["file"] for e in report["errors"]] == ["k8s/bad.yaml"]


def test_a_run_from_a_removed_folder_is_named_not_an_internal_error(tmp_path: Path) -> None:
    """Run from a folder that was removed (a CI step after a cleanup), every command ended in an internal error
    (FileNotFoundError from getcwd)."""
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "gone").mkdir()

    proc = _run_in('cd gone && rmdir ../gone && exec "$@"', ["lint", str(tmp_path / "pod.yaml")], tmp_path)

    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert "the current folder was removed; run dramigrate from a folder that exists" in err
    assert "internal error" not in err


def test_a_values_file_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """`-f values.yaml` naming a FIFO nobody writes to blocked every command for good (Helm opened it and waited);
    every render reads -f again and fix writes beside it, so it is refused before any work, named."""
    chart = _chart(tmp_path)
    os.mkfifo(tmp_path / "values.yaml")
    started = time.monotonic()

    proc = _run_in('exec "$@"', ["lint", str(chart), "-f", "values.yaml"], tmp_path)

    assert time.monotonic() - started < 20
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert "values.yaml: -f takes a values file, and this is a FIFO (named pipe)" in err


def test_values_from_standard_input_are_refused_before_any_work(tmp_path: Path) -> None:
    """Helm reads `-f -` from standard input; dramigrate rendered the chart and then failed it with `cannot read
    values file -: [Errno 2] No such file or directory`. It is refused at once with what to do instead."""
    chart = _chart(tmp_path)

    proc = _run_in('echo "gpus: 2" | "$@"', ["fix", str(chart), "-f", "-"], tmp_path)

    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "-f - (values from standard input) is not supported" in err and "save them to a file" in err
    assert "Errno" not in err and "Traceback" not in err


def test_limits_set_to_inf_or_a_typo_in_the_environment_keep_their_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DRAMIGRATE_HELM_MEMORY_MB=inf ended every chart run in an internal error (OverflowError), the Helm timeout
    `inf` failed the render, and DRAMIGRATE_PROGRESS_DELAY=abc failed every run (ValueError); each limit not a
    finite positive number keeps its default."""
    _chart(tmp_path)
    _kustomize_tree(tmp_path / "k")
    for name in ("HELM_MEMORY_MB", "HELM_TIMEOUT", "HELM_MAX_DOCUMENTS", "KUSTOMIZE_TIMEOUT", "KUSTOMIZE_MEMORY_MB"):
        monkeypatch.setenv(f"DRAMIGRATE_{name}", "inf")
    monkeypatch.setenv("DRAMIGRATE_GIT_TIMEOUT", "nan")
    monkeypatch.setenv("DRAMIGRATE_PROGRESS_DELAY", "abc")

    proc = _run_in('exec "$@"', ["lint", "."], tmp_path)

    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "internal error" not in out + err
    assert proc.returncode == 1, out + err
    assert "chart/templates/pod.yaml:11:9: error [legacy-device-request]" in out
    assert "k/base/pod.yaml:11:9: error [legacy-device-request]" in out
