"""A chart that writes a random password (`randAlphaNum 16` in a Secret: charts26's danchev unsloth) is compared after
rendering the original twice and masking what differs. The proof asks for those second renders from several render
threads at once; the first thread to ask marked the chart steady before it had read its files, so a thread asking
meanwhile got the first render back as the second: nothing was masked, and the chart was refused at random
("secret.yaml:13: 'JUPYTER_PASSWORD: ...' became ..."). The more files a chart holds, the longer that window."""

from __future__ import annotations

import threading
from pathlib import Path

from conftest import chart_with

from dramigrate.helm.outcome import ChartOptions, _volatile
from dramigrate.helm.renderpool import CACHE, Render, RunCache, cached_render, settled
from dramigrate.helm.sandbox import shared_copies

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-login
data:
  password: {{ randAlphaNum 16 | b64enc | quote }}
"""


def test_second_renders_asked_from_two_threads_at_once_both_differ_from_the_first(tmp_path: Path) -> None:
    files = {"templates/secret.yaml": SECRET} | {f"files/{i % 10}/note-{i}.txt": "a note\n" for i in range(300)}
    chart = chart_with(tmp_path, "login", files)
    options = ChartOptions(kube_version="1.36").render()
    again: list[Render] = []
    start = threading.Barrier(2)

    def second() -> None:
        start.wait()
        again.append(cached_render(chart, options, fresh=True))

    with shared_copies():
        CACHE.append(RunCache(chart))
        try:
            first = cached_render(chart, options)
            threads = [threading.Thread(target=second) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            settled(CACHE.pop())

    assert len(again) == 2
    for render in again:
        assert render.rest != first.rest  # was: the first render itself, for one of the two threads
        assert any("password" in field for field in _volatile(first, render))  # the password is not compared


def test_a_chart_run_ends_when_a_second_render_was_started_but_not_begun(tmp_path: Path) -> None:
    """The proof starts the other value sets' second renders once one differs (renderpool.Again); one still queued
    when the proof ends is dropped. Was: `dramigrate fix` of such a chart (a PyTorchJob chart, at random, 6 of 6
    runs on a loaded machine) hung for good at the end of its run, waiting for the dropped render. A render that
    began is still waited for, so none outlives its run."""
    from concurrent.futures import Future

    dropped: Future[Render] = Future()
    begun: Future[Render] = Future()
    cache = RunCache(tmp_path, again={("dropped",): dropped, ("begun",): begun}, claimed={("begun",)})
    ended = threading.Event()
    waiting = threading.Thread(target=lambda: (settled(cache), ended.set()), daemon=True)
    waiting.start()
    assert not ended.wait(1), "the run ended before the render that began"
    begun.set_result(Render([], ""))
    assert ended.wait(10), "the run never ended: it waited for the second render it dropped"
    assert dropped.cancelled()
