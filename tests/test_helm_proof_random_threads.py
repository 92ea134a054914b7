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
