"""How many Helm renders fix's proof makes: a chart is rendered a second time with a value set's values only where two
renders may differ (random values, masked in the comparison), and only when the comparison needs it."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_helm_idiomatic import RULES, T136, docs, write_chart

from dramigrate.config import Settings
from dramigrate.helm import renderpool
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.renderpool import _steady_bytes, render_key
from dramigrate.helm.run import run_chart, write_changes

# a real call of `keys` (Go map order), sorted: steady, but only a reader of Sprig could tell
SORTED_KEYS = (
    '{{- define "app.fullname" -}}\n{{ .Release.Name }}-{{ .Chart.Name }}\n{{- end }}\n'
    '{{- define "app.labels" -}}\n{{- range (keys .Values.extraLabels | sortAlpha) }}\n'
    "{{ . }}: {{ index $.Values.extraLabels . | quote }}\n{{- end }}\n{{- end }}\n"
)
RANDOM_SUFFIX = (
    '{{- define "app.fullname" -}}\n{{- if not .Values.releaseSuffix -}}\n'
    '{{- $_ := set .Values "releaseSuffix" (randAlphaNum 5 | lower) -}}\n{{- end -}}\n'
    "{{ .Release.Name }}-job-{{ .Values.releaseSuffix }}\n{{- end }}\n"
)


@pytest.mark.parametrize(
    "text",
    [
        '{{- fail "extract.agent.qualities values must be between 1 and 95" -}}',  # groundx
        "{{- /* `default false` keeps this valid TOML when the keys are absent */ -}}",  # deepgram
        "{{ printf `now %s` .Values.x }}",
    ],
)
def test_words_in_messages_and_comments_call_nothing(text: str) -> None:
    assert _steady_bytes(text.encode())


@pytest.mark.parametrize(
    "text",
    [
        '{{ keys .Values.x | join "," }}',
        '{{ now | date "2006" }}',
        '{{ tpl "{{ now }}" . }}',
        '{{ tpl (print "{{ " "now" " }}") . }}',  # a literal given to tpl is template text
        "{{ randAlphaNum 5 }}",
    ],
)
def test_calls_still_make_a_chart_unsteady(text: str) -> None:
    assert not _steady_bytes(text.encode())


def fix_counting_renders(chart: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ChartOutcome, Counter[Any]]:
    """fix of the chart, with how often each (values, options) of the chart itself was rendered."""
    counted: Counter[Any] = Counter()
    render = renderpool._render_uncached

    def counting(root: Path, options: Any) -> Any:
        if root == chart:
            counted[render_key(options)] += 1
        return render(root, options)

    monkeypatch.setattr(renderpool, "_render_uncached", counting)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    return outcome, counted


def test_a_chart_that_renders_steadily_is_rendered_once_per_value_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chart that may render differently twice (a helper of it calls `keys`) but renders its value sets steadily:
    the proof compares without a second render of each (was: every value set rendered twice, deepgram's 20 of 119
    renders)."""
    chart = write_chart(tmp_path, values="image: app:1\nnumGpus: 1\ntolerations: []\nextraLabels: {b: '2', a: '1'}\n")
    (chart / "templates" / "_helpers.tpl").write_text(SORTED_KEYS)
    assert not _steady_bytes(SORTED_KEYS.encode())
    monkeypatch.setattr(renderpool, "AGAIN_FROM", float("inf"))  # no second render started early for a slow first
    outcome, counted = fix_counting_renders(chart, monkeypatch)
    assert outcome.proven, outcome.report()
    assert len(counted) > 3 and max(counted.values()) == 1, counted


def test_random_values_are_still_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chart that names its workload with a random suffix: every value set's second render is read, and the
    proof holds with the suffix masked, as before."""
    chart = write_chart(tmp_path)
    (chart / "templates" / "_helpers.tpl").write_text(RANDOM_SUFFIX)
    pristine = shutil.copytree(chart, tmp_path / "pristine")
    outcome, counted = fix_counting_renders(chart, monkeypatch)
    assert outcome.proven, outcome.report()
    assert sum(n == 2 for n in counted.values()) >= 3, counted  # the value sets compared: each rendered twice
    write_changes(outcome)
    pod = next(d for d in docs(chart) if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], pod
    assert (pristine / "values.yaml").read_text() != (chart / "values.yaml").read_text()
