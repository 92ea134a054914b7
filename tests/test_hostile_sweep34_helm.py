"""Session 34's red team on Helm charts (issue 11 item 3, the Helm sandbox): each hostile chart beside good charts and
manifests, run through lint, diff and fix in every report format as the issue's checker runs them. The good ones are
still migrated, the bad one named and left as it was, and nothing from outside the chart reaches any output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import GPU_POD_TEMPLATE, ONE_GPU_POD, chart_with, run_dramigrate

TOKEN = "Z2hzX3MzY3IzdHRva2Vu"  # stands in for the CI checkout token actions/checkout keeps in .git/config
FORMATS = ["text", "json", "github", "sarif"]


def _git_with_token(folder: Path) -> None:
    """folder as a git checkout whose .git/config holds a token, as actions/checkout leaves it."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(
        ["git", "-C", str(folder), "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}"],
        check=True,
    )


# a pod named after the token and a count that quotes it: each reaches a finding's message when rendered
READS_GIT_CONFIG = ONE_GPU_POD.format(
    name='{{ regexFind "basic [A-Za-z0-9=]+" (.Files.Get ".git/config") | replace " " "-" | lower }}'
) + (
    "  - name: quoted\n    image: app:1\n    resources:\n      limits:\n"
    '        nvidia.com/gpu: {{ regexFind "basic [A-Za-z0-9=]+" (.Files.Get ".git/config") | quote }}\n'
)


@pytest.mark.parametrize("form", FORMATS)
def test_a_chart_at_the_root_of_a_checkout_never_shows_its_git_config(tmp_path: Path, form: str) -> None:
    """A repository whose root is a chart (Chart.yaml at the top, no .helmignore) had its .git folder loaded into
    the chart's files, as Helm loads every file of a chart folder: a template naming a pod or writing a device count
    from `.Files.Get ".git/config"` put the checkout token into lint's findings (`Pod/basic-z2hz...`, `nvidia.com/gpu:
    "basic Z2hz..." is not an integer device count`), in the GitHub annotations of a public CI log. dramigrate
    never reads a .git folder as input; Helm no longer sees one either."""
    chart = chart_with(tmp_path, "repo", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": READS_GIT_CONFIG})
    _git_with_token(chart)

    code, out, err = run_dramigrate(["lint", ".", "--format", form], cwd=chart)

    assert TOKEN.lower() not in (out + err).lower()
    assert "Traceback" not in err
    assert "legacy-device-request" in out + err  # the chart is still checked


def test_a_vendored_chart_holding_a_clones_git_folder_never_shows_it(tmp_path: Path) -> None:
    """The same through a chart cloned into the tree (a clone's .git/config keeps the token of a URL it was cloned
    with), beside a good chart and a good manifest, which fix still migrates."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    chart_with(tree, "goodchart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    bad = chart_with(tree, "vendored", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": READS_GIT_CONFIG})
    _git_with_token(bad)

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, ".", "--format", "json"], cwd=tree)
        assert TOKEN.lower() not in (out + err).lower(), command
        assert "Traceback" not in err
        json.loads(out)
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    assert "dra" in (tree / "goodchart" / "values.yaml").read_text()


def _peak_rss_mib(args: list[str], cwd: Path) -> tuple[int, str, str, int]:
    """Run dramigrate with args; (exit code, stdout, stderr, the peak RSS of dramigrate's own process in MiB)."""
    import os
    import threading
    import time

    from conftest import dramigrate_executable

    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    process = subprocess.Popen(
        [dramigrate_executable(), *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    peak = [0]

    def watch() -> None:
        while process.poll() is None:
            try:
                status = Path(f"/proc/{process.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak[0] = max(peak[0], int(line.split()[1]) >> 10)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = process.communicate(timeout=120)
    watcher.join()
    return process.returncode, out.decode(), err.decode(), peak[0]


def _header_bomb(kind: bytes, mib: int) -> bytes:
    """A packed chart `sub/` of under half a MiB whose first tar header is a GNU long name or link, or a pax header,
    announcing `mib` MiB of header text: a gzip stream of several members, each inflating one MiB."""
    import gzip
    import tarfile

    def header(name: str, size: int, kind: bytes) -> bytes:
        info = {"name": name, "mode": 0o644, "uid": 0, "gid": 0, "size": size, "mtime": 0, "type": kind}
        info |= {"linkname": "", "uname": "", "gname": "", "devmajor": 0, "devminor": 0, "magic": tarfile.GNU_MAGIC}
        return tarfile.TarInfo._create_header(info, tarfile.GNU_FORMAT, "utf-8", "surrogateescape")  # type: ignore[attr-defined]

    chart = b"apiVersion: v2\nname: sub\nversion: 0.1.0\n"
    tail = header("sub/Chart.yaml", len(chart), tarfile.REGTYPE) + chart.ljust(512, b"\0") + b"\0" * 1024
    one_mib = gzip.compress(b"a" * (1 << 20), mtime=0)
    return gzip.compress(header("././@LongLink", mib << 20, kind), mtime=0) + one_mib * mib + gzip.compress(tail)


@pytest.mark.parametrize("kind", [b"L", b"K", b"x"], ids=["gnu-long-name", "gnu-long-link", "pax"])
def test_a_packed_subchart_with_a_huge_tar_header_is_refused_without_reading_it(tmp_path: Path, kind: bytes) -> None:
    """A 400 KB charts/sub-0.1.0.tgz whose first header announces 400 MiB of long name (or pax records) had
    dramigrate's own process read the whole header into memory, in every archive it opens (the values check, the
    schema check, ...): 1.3 GB of RSS for 600 KB, seconds per hundred MiB, 30 s for a pax one; Helm's reader (Go's
    archive/tar) refuses such a header past 1 MiB, `header field too long`. Python's tarfile now does too."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    chart_with(tree, "goodchart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    bad = chart_with(tree, "bad", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    (bad / "charts").mkdir()
    (bad / "charts" / "sub-0.1.0.tgz").write_bytes(_header_bomb(kind, 400))
    before = {p: p.read_bytes() for p in bad.rglob("*") if p.is_file()}

    code, out, err, peak = _peak_rss_mib(["fix", ".", "--format", "json"], tree)

    assert peak < 300, f"{peak} MiB"
    assert code == 2 and "Traceback" not in err
    assert [e["file"] for e in json.loads(out)["errors"]] == ["bad"]
    assert {p: p.read_bytes() for p in bad.rglob("*") if p.is_file()} == before
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    assert "dra" in (tree / "goodchart" / "values.yaml").read_text()


def test_a_packed_chart_named_on_the_command_line_with_a_huge_tar_header_is_refused(tmp_path: Path) -> None:
    """The same archive named as a chart (`dramigrate lint chart.tgz`): a 1.5 MB one grew dramigrate to 9 GB and
    ran past two minutes."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "bad.tgz").write_bytes(_header_bomb(b"L", 400))

    code, out, err, peak = _peak_rss_mib(["lint", "bad.tgz", "good.yaml", "--format", "json"], tmp_path)

    assert peak < 300, f"{peak} MiB"
    assert "Traceback" not in err
    report = json.loads(out)
    assert [f["file"] for f in report["findings"] if f["rule"] == "legacy-device-request"] == ["good.yaml"]


def test_a_chart_rendering_thousands_of_device_requests_under_the_document_limit_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `range until` of GPU pods, under the 5,000-document limit: each device request is migrated in every render
    of the proof (tens of milliseconds each), so 4,000 of them held diff for 200 s and lint for 18 s before saying
    anything (500 of them: diff 20 s), where a `range` of as many ConfigMaps takes seconds. Such a chart is refused
    at its first render, named, and the good chart and manifest beside it are still migrated. The limit (500 device
    documents) is set to 20 here, and the chart renders 40: the same refusal, at a fiftieth of the rendering."""
    monkeypatch.setenv("DRAMIGRATE_HELM_MAX_DEVICE_DOCUMENTS", "20")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    chart_with(tree, "goodchart", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD_TEMPLATE})
    loop = (
        "{{- range $i := until 40 }}\n---\n"
        + GPU_POD_TEMPLATE.replace("-pod", "-pod{{ $i }}")
        .replace(".Values", "$.Values")
        .replace(".Release", "$.Release")
        + "{{- end }}\n"
    )
    chart_with(tree, "bad", {"values.yaml": "gpus: 1\n", "templates/pods.yaml": loop})

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, ".", "--format", "json"], cwd=tree, timeout=60)
        report = json.loads(out)
        assert code == 2, err
        [error] = report["errors"]
        assert error["file"] == "bad" and error["rule"] == "chart-render-limit", error
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    assert "dra" in (tree / "goodchart" / "values.yaml").read_text()
    assert "dra" not in (tree / "bad" / "values.yaml").read_text()


# `helm template` as it prints a chart whose templates hold no template expression: each template under its own
# `# Source:` comment, its text as it is
PRINTS_TEMPLATES = """#!{python}
import pathlib, sys
chart = pathlib.Path(sys.argv[3])
for path in sorted((chart / "templates").glob("*.yaml")):
    sys.stdout.write(f"---\\n# Source: {{chart.name}}/templates/{{path.name}}\\n{{path.read_text()}}")
"""


@pytest.mark.parametrize("target", ["../../../fifo.yaml", "../../../outside.yaml"])
def test_a_source_comment_a_template_writes_never_leads_dramigrate_out_of_the_chart(
    tmp_path: Path, target: str
) -> None:
    """With --helm-binary the render is read back by its `# Source:` comments, and a template may write such a line
    itself: `# Source: bad/templates/../../../fifo.yaml` made dramigrate open a file outside the chart to place its
    findings, and name it as their file (`bad/templates/../../../outside.yaml:11:9`). A FIFO there held lint for
    ever; /dev/zero grew it to 12 GB. Helm never
    names a template with `..`: such a line is the text of the template that wrote it, and the device request
    after it that template's."""
    import os
    import sys

    tree = tmp_path / "tree"
    tree.mkdir()
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "outside.yaml").write_text(ONE_GPU_POD.format(name="outside"))
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    pods = f"{ONE_GPU_POD.format(name='bad')}---\n# Source: bad/templates/{target}\n{ONE_GPU_POD.format(name='after')}"
    chart_with(tree, "bad", {"templates/pod.yaml": pods})
    helm = tmp_path / "helm"
    helm.write_text(PRINTS_TEMPLATES.format(python=sys.executable))
    helm.chmod(0o755)

    code, out, err = run_dramigrate(["lint", ".", "--helm-binary", helm, "--format", "json"], cwd=tree, timeout=60)

    report = json.loads(out)
    assert "Traceback" not in err
    requests = [(f["file"], f["line"]) for f in report["findings"] if f["rule"] == "legacy-device-request"]
    assert requests == [("bad/templates/pod.yaml", 11), ("bad/templates/pod.yaml", 24), ("good.yaml", 11)], requests
    assert ".." not in out


def test_a_chart_file_hard_linked_to_its_git_config_is_refused(tmp_path: Path) -> None:
    """With .git left out of what Helm reads, a chart file hard-linked to .git/config still carried the token to
    `.Files.Get`: the copy counted the link's other name inside .git as a name inside the chart. A file hard-linked
    to one Helm does not read is a file linked outside the chart, refused by name."""
    import os

    template = ONE_GPU_POD.format(name="p").replace(
        "nvidia.com/gpu: 1", 'nvidia.com/gpu: {{ regexFind "basic [A-Za-z0-9=]+" (.Files.Get "files/cfg") | quote }}'
    )
    chart = chart_with(tmp_path, "repo", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": template})
    _git_with_token(chart)
    (chart / "files").mkdir()
    os.link(chart / ".git" / "config", chart / "files" / "cfg")

    code, out, err = run_dramigrate(["lint", ".", "--format", "json"], cwd=chart)

    assert TOKEN.lower() not in (out + err).lower()
    [error] = json.loads(out)["errors"]
    assert "files/cfg (hard-linked to a file outside the chart)" in error["message"]
