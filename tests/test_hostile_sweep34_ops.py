"""Session 34's red team of writes, metadata, config, CLI and report surfaces (issue 11, items 1, 5, 6, 7): each
attack beside good files, the good files still migrated, the bad one named and left as it was, no traceback.

These tests run as root in CI and here; root's powers are taken away honestly where a case needs a plain user: a
file attribute root cannot override (`chattr +i`/`+a`), a read-only bind mount in a mount namespace of the test's
own (`unshare`), or capabilities dropped from the bounding set of the run (`setpriv`), each skipped where the
machine cannot do it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, base_and_overlay, dramigrate_executable

ENV = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "PYTHONWARNINGS": "ignore"}


def _run(args: list[str], cwd: Path, wrapper: list[str] | None = None) -> tuple[int, str, str]:
    """dramigrate run through wrapper (a command that ends by running its arguments), as text."""
    proc = subprocess.run(
        [*(wrapper or []), dramigrate_executable(), *args], cwd=cwd, env=ENV, capture_output=True, timeout=120
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """tree/good.yaml and tree/sub/bad.yaml, both asking for a GPU."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "sub" / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad"))
    return tree, bad


# Each way a folder keeps fix from making its temp file there or renaming it into place, even for root:
# the wrapper that runs dramigrate, and the words fix's reason holds.
FOLDERS = {
    "immutable": "immutable",
    "append-only": "append-only",
    "read-only-mount": "read-only file system",
    "no-write-bit": "not writable by you",
    "sticky-of-another": "sticky",
}


@pytest.fixture
def shut(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path, list[str], str]]:
    """A tree whose sub/ folder fix cannot write in, how (request.param), the wrapper that runs dramigrate so, and
    what fix's reason says; the folder opened again after the test so that it can be removed."""
    how = request.param
    tree, bad = _tree(tmp_path)
    sub = bad.parent
    wrapper: list[str] = []
    undo: list[str] = []
    chattr = shutil.which("chattr")
    if how in ("immutable", "append-only"):
        flag = "+i" if how == "immutable" else "+a"
        if chattr is None or subprocess.run([chattr, flag, sub], capture_output=True, check=False).returncode:
            pytest.skip("chattr cannot set folder attributes here (not root, or a file system without them)")
        undo = [chattr, flag.replace("+", "-"), str(sub)]
    elif how == "read-only-mount":
        unshare = shutil.which("unshare")
        ok = unshare and not subprocess.run([unshare, "-rm", "true"], capture_output=True, check=False).returncode
        if not ok:
            pytest.skip("no mount namespace of the test's own here (unshare -rm)")
        script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 99; shift; exec "$@"'
        wrapper = [str(unshare), "-rm", "sh", "-c", script, "sh", str(sub)]
    else:
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to run dramigrate without root's overrides")
        # root without the capabilities that let it write any folder or replace any file in a sticky one: as a
        # plain user runs (the files stay root's, so the run's own ownership rules do not change)
        wrapper = [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner"]
        if how == "no-write-bit":
            sub.chmod(0o555)
        else:  # a shared folder (mode 1777) of another user, holding that user's file
            os.chown(sub, 65534, 65534)
            os.chown(bad, 65534, 65534)
            sub.chmod(0o1777)
    try:
        yield tree, bad, wrapper, FOLDERS[how]
    finally:
        if undo:
            subprocess.run(undo, check=True)
        sub.chmod(0o755)


@pytest.mark.parametrize("shut", list(FOLDERS), indirect=True)
def test_a_folder_fix_cannot_write_in_is_said_by_lint_and_diff_and_refused_by_name(
    shut: tuple[Path, Path, list[str], str],
) -> None:
    """A manifest in a folder where no temp file can be made or renamed into place (immutable or append-only, on a
    read-only mount, without the write bit, or a sticky folder of another user holding that user's file) was
    called `(fixable)` by lint and diff; fix then failed on it mid-run with `Operation not permitted:
    sub/.bad.yaml.12345.0c79a371.dramigrate`, a temporary name of its own, and in an append-only or sticky folder
    left that temp file behind for good. lint and diff now say "fix would not write sub/bad.yaml: why" as for a
    read-only file, fix refuses it by name before writing anything there, and the good file is still migrated."""
    tree, bad, wrapper, said = shut
    before = bad.read_bytes()
    force = ["--force"] if said == "sticky" else []  # another user's file, which --force is for

    code, out, err = _run(["lint", "."], tree, wrapper)
    lines = [line for line in out.splitlines() if line.startswith("sub/bad.yaml:") and "legacy-device" in line]
    assert lines and all("(fixable)" not in line for line in lines), out + err
    assert all(f"fix would not write sub/bad.yaml: {said}" in line or said in line for line in lines), out
    code, out, err = _run(["diff", "."], tree, wrapper)
    assert "sub/bad.yaml" not in "".join(line for line in out.splitlines() if line.startswith("+++")), out
    assert code == 2 and "Traceback" not in err, err
    code, out, err = _run(["fix", ".", "--format", "json", *force], tree, wrapper)

    assert code == 2 and "Traceback" not in err, err
    report = json.loads(out)
    [error] = [e for e in report["errors"] if e["file"] == "sub/bad.yaml"]
    assert said in error["message"] and ".dramigrate" not in error["message"], error
    assert bad.read_bytes() == before
    assert sorted(p.name for p in bad.parent.iterdir()) == ["bad.yaml"]  # no temp file left in the folder
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def _blocked_reading_stdin(pid: int) -> bool:
    """The process's main thread waits in read(0, ...) (Linux's /proc/PID/syscall: number 0 = read, then fd 0)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and int(fields[1], 16) == 0


# A kubectl that says it started, then builds for a minute: a long kustomize build under way when the stop comes.
SLOW_KUBECTL = '#!/bin/sh\ntouch "$STARTED"\nsleep 60\n'


@pytest.mark.parametrize("where", ["reading-stdin", "building-a-kustomization"])
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_stop_before_fix_writes_anything_is_said_on_stderr(tmp_path: Path, signal_name: str, where: str) -> None:
    """A CI job cancelled while fix was still reading its input (standard input, a kustomize build) ended with
    nothing on standard error: SIGTERM killed the process (a shell's 143, no word), SIGINT ended it with 130 and
    no word. The log of the cancelled job did not say whether anything had been written. fix now says what stopped
    it and that no file was written, and exits 128 + the signal; the files are as they were."""
    import signal
    import time

    if not Path("/proc/self/syscall").exists() and where == "reading-stdin":
        pytest.skip("no /proc/PID/syscall to see the run wait on standard input")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    args = ["fix", "."]
    env = dict(ENV)
    started = tmp_path / "started"
    if where == "reading-stdin":
        args.append("-")
    else:
        base_and_overlay(tree, "resources:\n- ../base\n")
        kubectl = tmp_path / "kubectl"
        kubectl.write_text(SLOW_KUBECTL)
        kubectl.chmod(0o755)
        args += ["--kustomize-binary", str(kubectl)]
        env["STARTED"] = str(started)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    process = subprocess.Popen(
        [dramigrate_executable(), *args],
        cwd=tree,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if _blocked_reading_stdin(process.pid) if where == "reading-stdin" else started.exists():
                break
            time.sleep(0.02)
        time.sleep(0.2)
        process.send_signal(getattr(signal, signal_name))
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    text = err.decode()

    assert process.returncode == 128 + getattr(signal, signal_name), (process.returncode, text)
    assert "Traceback" not in text
    assert f"stopped ({'SIGTERM' if signal_name == 'SIGTERM' else 'Ctrl-C'})" in text, text
    assert "no file was written" in text, text
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(("command", "signal_name"), [("fix", "SIGTERM"), ("fix", "SIGINT"), ("diff", "SIGINT")])
def test_a_stop_during_a_kustomize_build_ends_the_run_at_once(tmp_path: Path, command: str, signal_name: str) -> None:
    """A stop (a CI job cancelled, Ctrl-C) while `kubectl kustomize` built an overlay ended the run only when the
    build did, or at the build's 30 s time limit: Python's exit waited for the thread waiting on the program. A
    runner that gives a cancelled job a few seconds before SIGKILL got no report. The programs dramigrate started
    are now ended with the run, which ends within seconds of the stop, and none of them is left running."""
    import signal
    import time

    from conftest import processes_left

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    base_and_overlay(tree, "resources:\n- ../base\n")
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(SLOW_KUBECTL)
    kubectl.chmod(0o755)
    started = tmp_path / "started"
    marker = f"DRAMIGRATE_TEST_STOP={tmp_path}"  # the whole path: parallel runs of the suite share the test names
    env = {**ENV, "STARTED": str(started), marker.split("=")[0]: marker.split("=")[1]}
    process = subprocess.Popen(
        [dramigrate_executable(), command, ".", "--kustomize-binary", str(kubectl)],
        cwd=tree,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        assert started.exists(), "the kustomize build never started"
        process.send_signal(getattr(signal, signal_name))
        stopped_at = time.monotonic()
        process.communicate(timeout=60)
        took = time.monotonic() - stopped_at
    finally:
        if process.poll() is None:
            process.kill()

    assert took < 10, f"the run ended {took:.1f} s after the stop"
    assert process.returncode == 128 + getattr(signal, signal_name)
    assert processes_left(marker) == []


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("form", ["yaml", "json"])
def test_utf16_or_32_on_standard_input_comes_back_in_its_own_encoding(encoding: str, form: str) -> None:
    """`fix -` given a UTF-16 or UTF-32 manifest with its byte-order mark wrote the rewrite to standard output as
    UTF-8 with a UTF-8 byte-order mark: a pipeline (a tool that writes what it read back to the file) got another
    encoding than it gave, while a file of the same bytes is written back in its own. The rewrite now comes back in
    the encoding it came in, with its byte-order mark."""
    import yaml

    text = ONE_GPU_POD.format(name="pod")
    if form == "json":
        text = json.dumps(yaml.safe_load(text), indent=2) + "\n"
    given = ("\ufeff" + text).encode(encoding)

    proc = subprocess.run(
        [dramigrate_executable(), "fix", "-"], input=given, env=ENV, capture_output=True, timeout=120, check=False
    )

    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.startswith("\ufeff".encode(encoding)), proc.stdout[:8]
    back = proc.stdout.decode(encoding).removeprefix("\ufeff")
    assert "resourceClaimTemplateName" in back
    data = json.loads(back) if form == "json" else list(yaml.safe_load_all(back))
    assert data


def test_a_rewrite_keeps_the_files_chattr_attributes(tmp_path: Path) -> None:
    """A rewrite replaced the file with a new one that had none of the original's file attributes (`chattr +S`
    synchronous writes, `+d` left out of dump backups, `+A` no access times): the owner, mode, extended attributes
    and ACLs were kept, these were dropped without a word. They are kept as the rest of the file's metadata is."""
    chattr, lsattr = shutil.which("chattr"), shutil.which("lsattr")
    tree = tmp_path / "tree"
    tree.mkdir()
    pod = tree / "pod.yaml"
    pod.write_text(ONE_GPU_POD.format(name="pod"))
    if chattr is None or lsattr is None or subprocess.run([chattr, "+SdA", pod], capture_output=True).returncode:
        pytest.skip("chattr cannot set file attributes here (not root, or a file system without them)")

    def attributes() -> str:
        return subprocess.run([lsattr, pod], capture_output=True, text=True, check=True).stdout.split()[0]

    before = attributes()

    code, _, err = _run(["fix", "."], tree)

    assert code == 0, err
    assert "resourceClaimTemplateName" in pod.read_text()
    assert attributes() == before


@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_noncharacter_in_a_file_name_or_a_value_leaves_the_junit_report_readable(
    tmp_path: Path, command: str
) -> None:
    """A file named with U+FFFE or U+FFFF (a Unicode noncharacter, which Linux allows in a name and XML 1.0 does
    not allow anywhere, even escaped), or a manifest holding one, made the JUnit report unreadable as XML: GitLab
    dropped the whole test report of the pull request, every other file's findings with it. The character is shown
    as \\ufffe, as control characters are, and the report parses, naming each file."""
    from xml.etree import ElementTree

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "named\ufffe.yaml").write_text(ONE_GPU_POD.format(name="named"))
    (tree / "held.yaml").write_text(ONE_GPU_POD.format(name="held").replace("image: app:1", 'image: "app\\uffff:1"'))

    code, out, err = _run([command, ".", "--format", "junit"], tree)

    assert "Traceback" not in err
    root = ElementTree.fromstring(out.encode())
    names = {case.get("name") for case in root.iter("testcase")}
    assert {"good.yaml", "named\\ufffe.yaml"} <= names, names
    if command == "fix":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def _fix_cpu_seconds(tree: Path) -> float:
    """CPU time (user + system, the run and its children) of `fix .` in tree."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code, _, err = _run(["fix", ".", "-q", "--format", "json"], tree)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert code == 0, err[-2000:]
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_fix_of_device_files_among_many_files_of_one_folder_takes_as_long_as_apart(tmp_path: Path) -> None:
    """Before each write, fix listed the file's whole folder to remove temp files a killed run had left beside that
    file: quadratic in a flat folder of generated manifests (8,000 device files in one folder: fix took 261 s, 121 s
    of CPU, where lint takes about one). Here 300 device files among 20,000 other manifests in one folder, against
    the same files with the device files in a folder of their own: the same walk, the same writes."""
    devices, others = 300, 20_000
    plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {}\n"
    flat, apart = tmp_path / "flat", tmp_path / "apart"
    for device_folder, other_folder in ((flat, flat), (apart / "gpu", apart / "config")):
        for folder in (device_folder, other_folder):
            folder.mkdir(parents=True, exist_ok=True)
        for i in range(devices):
            (device_folder / f"p{i}.yaml").write_text(ONE_GPU_POD.format(name=f"p{i}"))
        for i in range(others):
            (other_folder / f"c{i}.yaml").write_text(plain)

    in_one = _fix_cpu_seconds(flat)
    in_two = _fix_cpu_seconds(apart)

    assert all("resourceClaimTemplateName" in (flat / f"p{i}.yaml").read_text() for i in range(devices))
    assert in_one < 1.5 * in_two, f"in one folder {in_one:.1f} s of CPU, apart {in_two:.1f} s"
