"""The proof of a chart that writes the time (issue 7 item 3): `{{ now | unixEpoch }}` in a pod annotation. The
fields two renders of the original give differently are masked; a chart that writes the time must have them
masked even when its first two renders fall in one second and a later render (the rewritten chart's) in the
next. The Helm engine is the real one (helm-python-sdk); the test only picks when the first render starts."""

from __future__ import annotations

import time
from pathlib import Path

from test_helm_idiomatic import DEPLOYMENT, RULES, T136, docs, write_chart

from dramigrate.config import Settings
from dramigrate.helm.prove import first_difference, objects
from dramigrate.helm.renderpool import CACHE, RunCache, cached_render, settled
from dramigrate.helm.run import ChartOptions, _volatile, run_chart, write_changes

CLOCKED = DEPLOYMENT.replace(
    "      labels: {app: x}\n",
    "      labels: {app: x}\n      annotations:\n        helm.sh/created: {{ now | unixEpoch | quote }}\n",
)


def _start_of_next_second() -> None:
    time.sleep(1 - time.time() % 1 + 0.01)


def test_renders_in_one_second_still_mask_the_time(tmp_path: Path) -> None:
    """The original's first render at the start of a second: its second render (the proof's) comes after the
    next second starts, so a render of the chart in that later second compares equal, the time masked; before,
    both renders wrote the same epoch, nothing was masked, and the rewritten chart's render failed the proof."""
    chart = write_chart(tmp_path, CLOCKED)
    options = ChartOptions(kube_version="1.36").render()
    CACHE.append(RunCache(chart))
    try:
        cached_render(chart, ChartOptions(kube_version="1.35").render())  # the Helm worker started
        _start_of_next_second()
        first = cached_render(chart, options)
        again = cached_render(chart, options, fresh=True)
    finally:
        settled(CACHE.pop())
    _start_of_next_second()
    later = cached_render(chart, options)  # no run cache: rendered now, in a later second
    ignore = _volatile(first, again)
    before, after = objects(first.stream + first.rest), objects(later.stream + later.rest)
    assert first_difference(before, after, ignore) == ""
    assert ignore and all("helm.sh/created" in str(field) for field in ignore)  # nothing else is left uncompared


def test_chart_writing_the_time_is_fixed(tmp_path: Path) -> None:
    """fix on the chart: proven and written, the annotation still the render's time."""
    chart = write_chart(tmp_path, CLOCKED)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    (pod,) = [d["spec"]["template"] for d in docs(chart) if d["kind"] == "Deployment"]
    assert pod["spec"]["resourceClaims"] and int(pod["metadata"]["annotations"]["helm.sh/created"]) > 0
