"""A chart whose values.yaml has CRLF line ends (as hpe-vulnerability-analysis ships it): fix writes the
pass-through rewrite and the file keeps its line ends.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

CRLF_VALUES = "# the server\r\nresources:\r\n  limits:\r\n    cpu: 2\r\n    nvidia.com/gpu: 1\r\n"


def test_fix_writes_a_values_file_with_crlf_line_ends_and_keeps_them(tmp_path: Path) -> None:
    """The rewrite reads values.yaml with LF line ends; the write compared those with the CRLF bytes on disk and
    refused its own change ("file changed since it was read"), so fix wrote nothing. Now the change is written,
    in CRLF like the rest of the file, and the DRA values render the claim."""
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": TOYAML_SERVER})
    (chart / "values.yaml").write_bytes(CRLF_VALUES.encode())
    fix_chart(chart, kube="1.36")
    written = (chart / "values.yaml").read_bytes()
    assert written.startswith(CRLF_VALUES.encode()) and written != CRLF_VALUES.encode(), written
    assert written.count(b"\n") == written.count(b"\r\n"), written
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert list(counts.values()) == [1] and pod["resourceClaims"], pod


def test_fix_keeps_the_lone_cr_line_ends_of_an_old_mac_chart(tmp_path: Path) -> None:
    """A template and values.yaml whose lines end in CR alone (old Mac): the rewrite reads them with LF line ends
    and the write compared those with the bytes on disk and refused its own change, or wrote LF. Now both are
    written with CR line ends only, and the DRA values render the claim."""
    chart = chart_with(tmp_path, "server", {})
    for rel, text in {"templates/server.yaml": TOYAML_SERVER, "values.yaml": CRLF_VALUES.replace("\r\n", "\n")}.items():
        (chart / rel).write_bytes(text.replace("\n", "\r").encode())
    fix_chart(chart, kube="1.36")
    for rel in ("templates/server.yaml", "values.yaml"):
        written = (chart / rel).read_bytes()
        assert b"\n" not in written and written.count(b"\r") > 2, (rel, written)
    template = (chart / "templates/server.yaml").read_bytes().decode()
    assert "resourceClaims:" in template and template.startswith(TOYAML_SERVER.splitlines()[0] + "\r"), template
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert list(counts.values()) == [1] and pod["resourceClaims"], pod


def test_fix_keeps_each_line_end_of_a_template_that_mixes_them(tmp_path: Path) -> None:
    """A template whose first lines end in CRLF and the rest in LF (edited on two systems): each line fix keeps
    ends as it did (was: every line rewritten to LF, a diff of the whole file); the lines fix adds take the most
    common end."""
    lines = TOYAML_SERVER.splitlines(keepends=True)
    mixed = "".join(line.replace("\n", "\r\n") for line in lines[:4]) + "".join(lines[4:])
    chart = chart_with(tmp_path, "server", {"values.yaml": CRLF_VALUES.replace("\r\n", "\n")})
    (chart / "templates/server.yaml").write_bytes(mixed.encode())
    fix_chart(chart, kube="1.36")
    written = (chart / "templates/server.yaml").read_bytes().decode()
    assert written.startswith("".join(lines[:4]).replace("\n", "\r\n")), written
    assert written.count("\r\n") == 4 and "resourceClaims:\n" in written, written
