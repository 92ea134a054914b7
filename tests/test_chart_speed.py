"""Speed of a chart fix with its proof (issue 7: "fix of a chart with its proof under 5 s"): the proof renders each
value set of the original chart once (plus the second render that finds random fields), and independent renders run
in several Helm workers at once, with the same outcome as one at a time.

Renders are real (the Helm engine embedded in helm-python-sdk); one small pattern-A chart, fixed twice.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_helm_idiomatic import RULES, T136, write_chart

from dramigrate.config import Settings
from dramigrate.helm import sandbox
from dramigrate.helm.run import ChartOptions, ChartOutcome, run_chart


class Recorder:
    """Every render request the chart run sends to a Helm worker, and how many were in flight at most."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.busy = self.most = 0
        self.lock = threading.Lock()
        self.real = sandbox.render_in_child

    def __call__(self, payload: dict[str, Any], timeout: float, memory_mb: int) -> dict[str, Any]:
        with self.lock:
            self.requests.append((payload["chart"], json.dumps(payload["values"], sort_keys=True)))
            self.busy += 1
            self.most = max(self.most, self.busy)
        try:
            return self.real(payload, timeout, memory_mb)
        finally:
            with self.lock:
                self.busy -= 1


def fix(tmp: Path, monkeypatch: pytest.MonkeyPatch, threads: int) -> tuple[ChartOutcome, Recorder]:
    chart = shutil.copytree(write_chart(tmp / "original"), tmp / "fixed" / "app")
    recorder = Recorder()
    with monkeypatch.context() as patch:
        patch.setattr(sandbox, "render_in_child", recorder)
        patch.setattr(sandbox, "render_parallelism", lambda: threads)
        outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    return outcome, recorder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[ChartOutcome, Recorder]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {n: fix(tmp_path_factory.mktemp(f"speed{n}"), monkeypatch, n) for n in (1, 2)}


def test_each_value_set_of_the_original_chart_is_rendered_once_and_once_more_for_random_fields(
    runs: dict[int, tuple[ChartOutcome, Recorder]],
) -> None:
    outcome, recorder = runs[1]
    original = {chart for chart, _ in recorder.requests if chart.endswith("/app") and "rewritten" not in chart}
    assert len(original) == 1  # the private copy of the chart the run checks
    counts = Counter(values for chart, values in recorder.requests if chart in original)
    assert max(counts.values()) <= 2, counts.most_common(3)
    # the proof still renders every value set twice (random values are masked by comparing two renders)
    assert sum(1 for n in counts.values() if n == 2) >= len(outcome.checked)


def test_renders_run_in_parallel_with_the_same_outcome(runs: dict[int, tuple[ChartOutcome, Recorder]]) -> None:
    (serial, one), (parallel, two) = runs[1], runs[2]
    assert one.most == 1 and two.most == 2
    assert [(c.rel, c.after) for c in parallel.changes] == [(c.rel, c.after) for c in serial.changes]
    assert parallel.checked == serial.checked
    assert shown(parallel) == shown(serial)


def shown(outcome: ChartOutcome) -> str:
    """The findings as the JSON report shows them, the chart's temp folder left out."""
    return json.dumps([f.to_json() for f in outcome.findings]).replace(str(outcome.chart), "<chart>")
