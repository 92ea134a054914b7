"""A proof starts the renders it compares next (renderpool.start_renders) so that its comparisons overlap them: the
pass-through proof's switch-off and DRA renders of every value set, and its later values files. A started render is
the one the proof reads (rendered once, whichever chart folder: a rewritten copy too), and a run that ends before
reading one still ends, with no render left running."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with

from dramigrate.helm import sandbox
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.renderpool import CACHE, RunCache, cached_render, settled, start_renders
from dramigrate.helm.sandbox import render_parallelism, shared_copies

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Values.name }}
data:
  replicas: {{ .Values.replicas | quote }}
"""

pytestmark = pytest.mark.skipif(render_parallelism() < 2, reason="renders are started ahead only on two cores")


def counted_renders(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """The render requests the Helm workers get from now on."""
    asked: list[dict[str, object]] = []
    real = sandbox.render_in_child

    def counting(payload: dict[str, object], timeout: float, memory_mb: int) -> dict[str, object]:
        asked.append(payload)
        return real(payload, timeout, memory_mb)

    monkeypatch.setattr(sandbox, "render_in_child", counting)
    return asked


def value_sets(tmp_path: Path, count: int) -> list[object]:
    files = []
    for i in range(count):
        values = tmp_path / f"values-{i}.yaml"
        values.write_text(f"name: set{i}\nreplicas: {i}\n")
        files.append(ChartOptions(values_files=(values,)).render())
    return files


def test_a_started_render_is_the_one_read_and_rendered_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chart = chart_with(tmp_path, "app", {"templates/cm.yaml": CONFIGMAP})
    copy = chart_with(tmp_path / "rewritten", "app", {"templates/cm.yaml": CONFIGMAP})  # another folder: not cached
    options = value_sets(tmp_path, 3)
    asked = counted_renders(monkeypatch)
    with shared_copies():
        CACHE.append(RunCache(chart))
        try:
            start_renders(copy, options)
            renders = [cached_render(copy, o) for o in options]
        finally:
            settled(CACHE.pop())
    assert len(asked) == 3  # one render each: the started one, not a second one where it is read
    for i, render in enumerate(renders):
        assert f"-set{i}\n" in render.rest and f'replicas: "{i}"' in render.rest


def test_a_run_that_reads_no_started_render_ends_with_none_running(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"templates/cm.yaml": CONFIGMAP})
    options = value_sets(tmp_path, 6)
    with shared_copies():
        cache = RunCache(chart)
        CACHE.append(cache)
        try:
            start_renders(chart, options)  # a proof that fails on its first comparison reads none of them
        finally:
            settled(CACHE.pop())
    assert len(cache.started) == 6
    assert all(f.done() for f in cache.started.values())  # rendered to the end or dropped before it began
