"""A render's private copy holds its packed subcharts stored without compression (storedarchives.py): Helm loads the
same files without inflating them at each render. The user's archive is never touched, the render is Helm's own of
the chart as it is, and an archive the stored form would change for Helm (past its bound on one file) stays packed."""

from __future__ import annotations

import gzip
import json
import tarfile
from pathlib import Path

from conftest import TOYAML_SERVER, chart_with, packed_chart

from dramigrate.helm.render import RenderOptions, render_chart, render_native
from dramigrate.helm.sandbox import chart_for_render, shared_copies
from dramigrate.helm.storedarchives import _stored


def test_a_packed_subchart_renders_as_helm_renders_the_chart_and_stays_as_it_is(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "umbrella", {"values.yaml": "server:\n  resources:\n    limits:\n      cpu: 1\n"})
    (chart / "charts").mkdir()
    archive = chart / "charts" / "server-0.1.0.tgz"
    archive.write_bytes(
        packed_chart(
            "server",
            {
                "Chart.yaml": "apiVersion: v2\nname: server\nversion: 0.1.0\n",
                "values.yaml": "resources: {}\n",
                "templates/deployment.yaml": TOYAML_SERVER,
            },
        )
    )
    packed = archive.read_bytes()
    helm = json.loads(json.dumps(render_native(chart, {}, {"name": "release-name"})))  # Helm on the folder itself
    with shared_copies():  # every render reads one private copy, whose archive is stored after the first
        rendered = render_chart(chart, RenderOptions())
        with chart_for_render(chart) as copy:
            held = (copy / "charts" / archive.name).read_bytes()
        assert render_chart(chart, RenderOptions()) == rendered
    assert len(held) > len(packed) and gzip.decompress(held) == gzip.decompress(packed)
    assert {m.source for m in rendered} == {p for p in helm["files"] if helm["files"][p].strip()}
    assert all(m.text.strip() in helm["files"][m.source] for m in rendered)
    assert "cpu: 1" in rendered[0].text
    assert archive.read_bytes() == packed


def test_only_a_single_gzip_member_within_the_bound_is_stored() -> None:
    with_tar = gzip.compress(b"a" * 10_000)
    stored = _stored(with_tar, 1 << 20)
    assert stored is not None and gzip.decompress(stored) == b"a" * 10_000 and len(stored) > len(with_tar)
    assert _stored(stored, 1 << 20) is None  # already stored
    assert _stored(with_tar, 5_000) is None  # stored, past the bound
    assert _stored(with_tar + with_tar, 1 << 20) is None  # two members: left for Helm to read as it does
    assert _stored(b"not gzip", 1 << 20) is None


def test_a_tar_inflates_to_the_same_members(tmp_path: Path) -> None:
    data = packed_chart("c", {"Chart.yaml": "name: c\n", "templates/x.yaml": "a: 1\n" * 2000})
    stored = _stored(data, 1 << 20)
    assert stored is not None
    for blob, name in ((data, "packed.tgz"), (stored, "stored.tgz")):
        (tmp_path / name).write_bytes(blob)
    with tarfile.open(tmp_path / "packed.tgz") as a, tarfile.open(tmp_path / "stored.tgz") as b:
        assert [(m.name, a.extractfile(m).read()) for m in a] == [(m.name, b.extractfile(m).read()) for m in b]  # type: ignore[union-attr]
