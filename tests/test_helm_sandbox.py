"""The Helm sandbox (issue 11 item 3): hostile charts, built in temp folders, rendered by the real Helm engine.

A chart must not leak what its symlinks point to, Helm's messages must not quote chart files, a chart that
loops or recurses ends its render process (not dramigrate), and every other file of the run is still processed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, RunCli, dramigrate_executable

SECRET = "s3cr3t-token-9f8e7d"  # stands in for a CI token in .git/config or an environment variable

CHART_YAML = "apiVersion: v2\nname: {name}\nversion: 0.1.0\n"
GPU_POD_TEMPLATE = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-gpu
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
"""


def make_chart(root: Path, name: str, templates: dict[str, str], files: dict[str, str] | None = None) -> Path:
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(CHART_YAML.format(name=name))
    (chart / "values.yaml").write_text("gpus: 1\n")
    (chart / "templates" / "pod.yaml").write_text(GPU_POD_TEMPLATE)
    for rel, text in templates.items():
        (chart / "templates" / rel).write_text(text)
    for rel, text in (files or {}).items():
        (chart / rel).parent.mkdir(parents=True, exist_ok=True)
        (chart / rel).write_text(text)
    return chart


def outputs(tmp: Path, run_cli: RunCli, *args: str | Path) -> tuple[int, str, dict[str, object]]:
    """One lint run: exit code, everything printed or written (text, JSON, SARIF), and the JSON report."""
    code, out, err = run_cli(
        ["lint", *args, "--format", "json", "--format", f"sarif={tmp / 'r.sarif'}", "--format", f"text={tmp / 'r.txt'}"]
    )
    everything = out + err + (tmp / "r.sarif").read_text() + (tmp / "r.txt").read_text()
    return code, everything, json.loads(out)


def test_symlinks_out_of_the_chart_are_refused_by_name(tmp_path: Path, run_cli: RunCli) -> None:
    outside = tmp_path / "repo" / ".git"
    outside.mkdir(parents=True)
    (outside / "config").write_text(f'[http]\n\textraheader = "AUTHORIZATION: basic {SECRET}"\n')
    charts = tmp_path / "repo" / "charts"
    leaky = make_chart(charts, "leaky", {"cm.yaml": 'a: {{ fail (.Files.Get "files/token") }}\n'})
    (leaky / "files").mkdir()
    (leaky / "files" / "token").symlink_to("../../../.git/config")
    linked = make_chart(charts, "linked", {})
    (linked / "templates" / "env.yaml").symlink_to(outside / "config")
    good = tmp_path / "repo" / "pod.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))

    code, everything, report = outputs(tmp_path, run_cli, leaky, linked, good)

    assert code == 2
    assert SECRET not in everything and "extraheader" not in everything
    refused = {e["file"]: e["message"] for e in report["errors"] if e["rule"] == "chart-symlink-outside"}
    assert set(refused) == {str(leaky), str(linked)}
    assert "files/token -> ../../../.git/config" in refused[str(leaky)]
    assert "templates/env.yaml" in refused[str(linked)]
    # the other file of the run is still migrated
    assert any(f["file"] == str(good) and f["rule"] == "legacy-device-request" for f in report["findings"])


def test_helm_messages_never_quote_chart_files(tmp_path: Path, run_cli: RunCli) -> None:
    files = {"files/data.txt": f"token: {SECRET}\n{{{{ {SECRET.replace('-', '_')} }}}}\n"}
    charts = [
        make_chart(tmp_path, "failing", {"cm.yaml": 'a: {{ fail (.Files.Get "files/data.txt") }}\n'}, files),
        make_chart(tmp_path, "tpl", {"cm.yaml": 'a: {{ tpl (.Files.Get "files/data.txt") . }}\n'}, files),
        make_chart(tmp_path, "include", {"cm.yaml": 'a: {{ include (.Files.Get "files/data.txt") . }}\n'}, files),
        make_chart(tmp_path, "required", {"cm.yaml": 'a: {{ required (.Files.Get "files/data.txt") .Values.x }}\n'}),
        make_chart(tmp_path, "literal", {"cm.yaml": 'a: {{ fail "set gpuType" }}\n'}),
    ]
    (charts[3] / "files").mkdir()
    (charts[3] / "files" / "data.txt").write_text(files["files/data.txt"])

    code, everything, report = outputs(tmp_path, run_cli, *charts)

    assert code == 2
    assert SECRET not in everything and SECRET.replace("-", "_") not in everything
    errors = {e["file"]: e["message"] for e in report["errors"]}
    for chart in charts[:4]:
        assert f"{chart.name}/templates/cm.yaml:1:" in errors[str(chart)]  # the template location is kept
    assert "set gpuType" in errors[str(charts[4])]  # a literal message of the template is Helm's own


def test_charts_past_the_render_limits_are_bad_input(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRAMIGRATE_HELM_TIMEOUT", "2")
    slow = make_chart(
        tmp_path, "slow", {"loop.yaml": "{{ range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}\n"}
    )
    hungry = make_chart(tmp_path, "hungry", {"loop.yaml": "{{ range until 500000000 }}{{ end }}\n"})
    recursive = make_chart(
        tmp_path,
        "recursive",
        {"r.yaml": '{{ define "r" }}{{ tpl "{{ include \\"r\\" . }}" . }}{{ end }}{{ include "r" . }}\n'},
    )
    fine = make_chart(tmp_path, "fine", {})  # rendered by a new render process after the others were killed
    good = tmp_path / "pod.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))

    started = time.monotonic()
    code, everything, report = outputs(tmp_path, run_cli, slow, hungry, recursive, fine, good)
    elapsed = time.monotonic() - started

    assert code == 2 and "Traceback" not in everything
    limited = {e["file"]: e["message"] for e in report["errors"] if e["rule"] == "chart-render-limit"}
    assert set(limited) == {str(slow), str(hungry), str(recursive)}
    assert "2 s" in limited[str(slow)]
    for ok in (good, fine / "templates" / "pod.yaml"):
        assert any(f["file"] == str(ok) and f["rule"] == "legacy-device-request" for f in report["findings"]), ok
    assert elapsed < 40  # minutes before the limits; 3 renders of 2 s at most, on a busy machine


def test_the_render_process_dies_with_dramigrate(tmp_path: Path) -> None:
    slow = make_chart(
        tmp_path, "slow", {"loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}\n"}
    )
    env = {**os.environ, "DRAMIGRATE_HELM_TIMEOUT": "120"}
    parent = subprocess.Popen(
        [dramigrate_executable(), "lint", str(slow)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        children: list[int] = []
        for _ in range(100):
            time.sleep(0.1)
            children = _children(parent.pid)
            if children:
                break
        assert children, "the chart is rendered in a child process"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    for _ in range(50):
        if not any(_alive(pid) for pid in children):
            break
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in children)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        pytest.skip("needs /proc/PID/task/PID/children (Linux)")
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class _Zeros:
    """A file object of `size` zero bytes, read in chunks (a bomb that compresses to almost nothing)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


def _archive(path: Path, members: list[tuple[tarfile.TarInfo, object]]) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for info, data in members:
            tar.addfile(info, data)  # type: ignore[arg-type]
    return path


def _file(name: str, size: int = 0, text: str = "") -> tuple[tarfile.TarInfo, object]:
    info = tarfile.TarInfo(name)
    raw = text.encode()
    info.size = len(raw) if text else size
    return info, (_Zeros(size) if not text else io.BytesIO(raw))


def test_packaged_charts_are_unpacked_within_bounds(tmp_path: Path, run_cli: RunCli) -> None:
    def chart() -> list[tuple[tarfile.TarInfo, object]]:
        return [
            _file("app/Chart.yaml", text=CHART_YAML.format(name="app")),
            _file("app/templates/pod.yaml", text=GPU_POD_TEMPLATE),
        ]

    link = tarfile.TarInfo("app/files/passwd")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    archives = {
        "big": _archive(tmp_path / "big-0.1.0.tgz", [*chart(), _file("app/files/zeros", 6 << 20)]),
        "many": _archive(tmp_path / "many-0.1.0.tgz", [*chart(), *(_file(f"app/files/{i}") for i in range(10_001))]),
        "escape": _archive(tmp_path / "escape-0.1.0.tgz", [*chart(), _file("app/../../escaped.txt", text="x")]),
        "link": _archive(tmp_path / "link-0.1.0.tgz", [*chart(), (link, None)]),
    }
    code, everything, report = outputs(tmp_path, run_cli, *archives.values())

    assert code == 2
    refused = {e["file"]: e["message"] for e in report["errors"] if e["rule"] == "chart-archive-limit"}
    assert set(refused) == {str(p) for p in archives.values()}
    assert "5 MiB" in refused[str(archives["big"])] and "10000 members" in refused[str(archives["many"])]
    assert "outside" in refused[str(archives["escape"])] and "link" in refused[str(archives["link"])]
    assert "root:x:0" not in everything


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_diff_writes_nothing_and_fix_refuses_a_templates_link_out_of_the_chart(tmp_path: Path, run_cli: RunCli) -> None:
    outside = tmp_path / "elsewhere" / "templates"
    outside.mkdir(parents=True)
    (outside / "pod.yaml").write_text(GPU_POD_TEMPLATE)
    linked = make_chart(tmp_path / "charts", "linked", {})
    for template in (linked / "templates").iterdir():
        template.unlink()
    (linked / "templates").rmdir()
    (linked / "templates").symlink_to(outside)
    # a link that stays inside the chart, written as an absolute path: the proof's copy must not write through it
    inner = make_chart(tmp_path / "charts", "inner", {})
    (inner / "shared").mkdir()
    (inner / "templates" / "pod.yaml").rename(inner / "shared" / "pod.yaml")
    (inner / "templates" / "pod.yaml").symlink_to((inner / "shared" / "pod.yaml").absolute())
    before = _snapshot(tmp_path)

    code, out, err = run_cli(["diff", linked, inner])
    assert _snapshot(tmp_path) == before
    assert "chart-symlink-outside" in out + err and code == 2
    assert "+++ " in out and "inner/templates/pod.yaml" in out  # the inner chart's rewrite is shown, not written

    code, out, err = run_cli(["fix", linked])
    assert code == 2 and "chart-symlink-outside" in out + err and "templates ->" in out + err
    assert _snapshot(tmp_path) == before


def test_an_external_helm_gets_the_time_limit(tmp_path: Path) -> None:
    from dramigrate.helm.render import RenderLimit, RenderOptions, render_chart

    chart = make_chart(tmp_path, "app", {})
    fake = tmp_path / "helm"
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    fake.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(RenderLimit, match="longer than 1 s"):
        render_chart(chart, RenderOptions(helm_binary=fake, timeout=1))
    assert time.monotonic() - started < 10


def test_an_external_helm_message_that_echoes_a_chart_file_is_not_shown(tmp_path: Path, run_cli: RunCli) -> None:
    chart = make_chart(tmp_path, "app", {}, {"files/token": f"{SECRET}\n"})
    fake = tmp_path / "helm"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"sys.stderr.write('Error: app/templates/pod.yaml:3:1: improper constraint: {SECRET}\\n')\nsys.exit(1)\n"
    )
    fake.chmod(0o755)
    code, out, err = run_cli(["lint", chart, "--helm-binary", fake, "--format", "json"])
    assert code == 2 and SECRET not in out + err
    assert "app/templates/pod.yaml:3:1" in json.loads(out)["errors"][0]["message"]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit", "markdown"])
def test_a_refused_chart_is_counted_once_as_bad_input(tmp_path: Path, fmt: str) -> None:
    """A chart dramigrate does not render (here a symlink out of it) was both bad input and an error finding with
    the same message: every format said it twice, and the summary counted it in `errors` and in `badInput`. It is
    bad input once, named with its rule, and the summary's errors are those of the files checked."""
    from conftest import run_dramigrate

    chart = make_chart(tmp_path, "linked", {})
    (chart / "templates" / "env.yaml").symlink_to("/etc/hostname")
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="good"))
    said = "not rendered: symlink(s) leave the chart: templates/env.yaml"

    code, out, err = run_dramigrate(["lint", "linked", "pod.yaml", "--format", fmt], cwd=tmp_path)

    assert code == 2, err
    # text and JSON: the bad input and the list of failed files; JUnit: the error's message attribute and its text
    assert out.count(said) == (2 if fmt in ("text", "json", "junit") else 1), out
    assert "chart-symlink-outside" in out
    if fmt == "json":
        report = json.loads(out)
        assert [(e["file"], e["rule"]) for e in report["errors"]] == [("linked", "chart-symlink-outside")]
        assert [f["rule"] for f in report["findings"] if f["severity"] == "error"] == ["legacy-device-request"]
        assert (report["summary"]["errors"], report["summary"]["badInput"]) == (1, 1)
    if fmt in ("text", "markdown"):
        assert "1 error(s)" in out and "1 file(s) with bad input" in out, out


@pytest.mark.parametrize("where", ["file URL", "relative path", "absolute path"])
def test_a_values_schema_never_reads_a_file_outside_the_chart(tmp_path: Path, run_cli: RunCli, where: str) -> None:
    """Helm's schema loader read whatever a values.schema.json `$ref` named on the machine (a `file://` URL, or a path
    leading out of the chart): whether the chart then rendered told a pull request's author something of a file such
    as ~/.docker/config.json. Such a reference is dropped (never read: that part of the values goes unchecked); one
    inside the chart still applies."""
    outside = tmp_path / "outside.json"
    outside.write_text('{"type": "string"}')  # read, it would refuse the chart's `gpus: 1`
    ref = {
        "file URL": outside.as_uri(),
        "relative path": "../" * 12 + str(outside).lstrip("/"),
        "absolute path": str(outside),
    }[where]
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"gpus": {"$ref": ref}}}
    leaky = make_chart(tmp_path, "leaky", {}, {"values.schema.json": json.dumps(schema)})
    strict = make_chart(
        tmp_path,
        "strict",
        {},
        {
            "values.schema.json": json.dumps({"properties": {"gpus": {"$ref": "defs.json"}}}),
            "defs.json": outside.read_text(),
        },
    )
    good = tmp_path / "pod.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))

    code, everything, report = outputs(tmp_path, run_cli, leaky, strict, good)

    assert code == 2 and "Traceback" not in everything
    rules = {(f["file"], f["rule"]) for f in report["findings"]}
    assert (str(leaky / "templates" / "pod.yaml"), "legacy-device-request") in rules  # rendered, the ref not read
    assert (str(good), "legacy-device-request") in rules
    assert [e["file"] for e in report["errors"]] == [str(strict)]  # the chart's own schema still applies
    assert json.loads((leaky / "values.schema.json").read_text()) == schema  # the chart itself is not changed
