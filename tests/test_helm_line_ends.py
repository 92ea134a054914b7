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
