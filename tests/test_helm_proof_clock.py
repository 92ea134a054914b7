"""The proof of a chart that writes the time (issue 7 item 3): `{{ now | unixEpoch }}` in a pod annotation. The
fields two renders of the original give differently are masked; a chart that writes the time must have them
masked even when its first two renders fall in one second and a later render (the rewritten chart's) in the
next. The Helm engine is the real one (helm-python-sdk); the test only picks when the first render starts."""

from __future__ import annotations

import time
from pathlib import Path

from test_helm_idiomatic import DEPLOYMENT, RULES, T136, docs, write_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, _volatile
from dramigrate.helm.prove import first_difference, objects
from dramigrate.helm.renderpool import CACHE, RunCache, cached_render, render_later, settled
from dramigrate.helm.run import run_chart, write_changes

CLOCKED = DEPLOYMENT.replace(
    "      labels: {app: x}\n",
    "      labels: {app: x}\n      annotations:\n        helm.sh/created: {{ now | unixEpoch | quote }}\n",
)


def _start_of_next_second() -> None:
    time.sleep(1 - time.time() % 1 + 0.01)


# the time in steps of two seconds (as `now | date "15:04"` steps by the minute): two renders a second apart can
# write the same step, and a third, later one the next
STEPPED = CLOCKED.replace("now | unixEpoch", "div (now | unixEpoch) 2")


def _start_of_next_step() -> None:
    time.sleep(2 - time.time() % 2 + 0.01)


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


def test_a_time_coarser_than_the_second_is_masked_by_a_render_after_the_rewritten_ones(tmp_path: Path) -> None:
    """A chart that writes the time in steps coarser than a second: the original's two renders fall in one step and
    mask nothing, the rewritten chart's render in the next step differs (the proof failed by chance, once a minute
    for `date "15:04"`). A third render of the original made after it (render_later) is in that next step too: the
    field differs there and is masked; a steady chart gets no third render."""
    chart = write_chart(tmp_path, STEPPED)
    options = ChartOptions(kube_version="1.36").render()
    CACHE.append(RunCache(chart))
    try:
        cached_render(chart, ChartOptions(kube_version="1.35").render())  # the Helm worker started
        _start_of_next_step()
        first = cached_render(chart, options)
        again = cached_render(chart, options, fresh=True)
        _start_of_next_step()
        CACHE.append(RunCache(chart))
        new = cached_render(chart, options)  # another run's: rendered now, in the next step
        settled(CACHE.pop())
        later = render_later(chart, options)
    finally:
        settled(CACHE.pop())
    assert later is not None
    before, after = objects(first.stream + first.rest), objects(new.stream + new.rest)
    if not _volatile(first, again):  # the two in one step (unless a loaded machine rendered the first past it)
        assert "helm.sh/created" in first_difference(before, after, set())  # what failed the proof before
    ignore = _volatile(first, later)
    assert first_difference(before, after, ignore) == ""
    assert ignore and all("helm.sh/created" in str(field) for field in ignore)
    steady = write_chart(tmp_path / "steady", DEPLOYMENT)
    CACHE.append(RunCache(steady))
    try:
        cached_render(steady, options)
        assert render_later(steady, options) is None
    finally:
        settled(CACHE.pop())
