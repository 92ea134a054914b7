"""fix's proof migrates the render of every value set it derives, and most documents are the same from one value set
to the next: each document is migrated once a chart run (perdocument.py), and the proof's verdict and rewrite are
what migrating each whole render gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from test_helm_idiomatic import RULES, T136, write_chart

from dramigrate import migrate
from dramigrate.config import Settings
from dramigrate.helm import perdocument
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.renderpool import CACHE, RunCache, run_core
from dramigrate.helm.run import run_chart
from dramigrate.migrate import FileResult, Job, run_file

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-app
spec:
  ports:
    - port: 80
"""
# a second pod that asks for a device the values do not change: the same document in every value set's render
SIDECAR_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-warmup
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: warmup:1
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def chart_with_steady_documents(root: Path) -> Path:
    chart = write_chart(root)
    (chart / "templates" / "service.yaml").write_text(SERVICE)
    (chart / "templates" / "warmup.yaml").write_text(SIDECAR_JOB)
    return chart


def fix(chart: Path, monkeypatch: pytest.MonkeyPatch, whole: bool = False) -> tuple[ChartOutcome, Counter[str]]:
    """fix of the chart, with how often the core migrated each text; `whole`: every render migrated whole."""
    migrated: Counter[str] = Counter()

    def counting(job: Job, *args: object) -> FileResult:
        migrated[(job.raw or b"").decode()] += 1
        return run_file(job, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(migrate, "run_file", counting)
        if whole:
            patch.setattr(perdocument, "by_document", lambda *args: None)
        return run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix"), migrated


def test_each_document_is_migrated_once_and_the_proof_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = chart_with_steady_documents(tmp_path / "a")
    outcome, migrated = fix(chart, monkeypatch)
    assert outcome.proven, outcome.report()
    job = next(text for text in migrated if "kind: Job" in text and "kind: Deployment" not in text)
    assert migrated[job] == 1  # the warm-up Job renders alike in every value set
    assert max(migrated.values()) == 1
    whole, _ = fix(chart_with_steady_documents(tmp_path / "b"), monkeypatch, whole=True)
    assert (outcome.proven, outcome.manual, outcome.checked) == (whole.proven, whole.manual, whole.checked)
    assert [(c.rel, c.after) for c in outcome.changes] == [(c.rel, c.after) for c in whole.changes]


DEPLOYMENT = """\
---
# Source: app/templates/{name}.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: app:1
          resources:
            limits:
              nvidia.com/gpu: {count}
"""


def migrated(stream: str, tmp_path: Path) -> tuple[FileResult, FileResult | None]:
    """The proof's migration of a rendered stream, and the same put together from its documents (None: not)."""
    CACHE.append(RunCache(tmp_path))
    try:
        settings = Settings()
        return (
            run_core(stream, "app", RULES, settings, T136, fix=True, objects=True),
            perdocument.by_document(stream, "app", RULES, settings, T136, True),
        )
    finally:
        CACHE.pop()


def whole(stream: str) -> FileResult:
    return run_file(
        Job("app", stream.encode(), True, suppressions=False, helm_render=True, comments=False), RULES, Settings(), T136
    )


def test_documents_put_together_are_the_whole_streams_migration(tmp_path: Path) -> None:
    stream = DEPLOYMENT.format(name="a", count=2) + DEPLOYMENT.format(name="b", count=1).replace("name: app", "name: b")
    result, joined = migrated(stream, tmp_path)
    assert joined is not None
    expected = whole(stream)
    assert result.rewritten == expected.rewritten and result.rewritten is not None
    assert [(f.rule, f.line, f.name, f.fixed) for f in result.findings] == [
        (f.rule, f.line, f.name, f.fixed) for f in expected.findings
    ]
    assert any(f.line > stream.count("\n") // 2 for f in result.findings)  # the second document's, at its own line


def test_two_documents_writing_one_claim_template_are_migrated_whole(tmp_path: Path) -> None:
    """The whole stream's migration writes a ResourceClaimTemplate two pods share once; their documents migrated
    apart would write it twice."""
    stream = DEPLOYMENT.format(name="a", count=1) + DEPLOYMENT.format(name="b", count=1)
    result, joined = migrated(stream, tmp_path)
    assert joined is None
    assert result.rewritten == whole(stream).rewritten
    assert (result.rewritten or "").count("kind: ResourceClaimTemplate") == 1


def test_a_document_nested_past_the_limit_is_the_whole_streams_refusal(tmp_path: Path) -> None:
    """The stream's nesting is checked document by document (each one's own migration) and no longer walked whole:
    a document nested past the limit still refuses the stream as its whole migration does, at the same line."""
    nested = "---\n# Source: app/templates/deep.yaml\napiVersion: v1\nkind: ConfigMap\ndata:\n  x: " + "[" * 120
    stream = DEPLOYMENT.format(name="a", count=2) + nested + "]" * 120 + "\n"
    result, joined = migrated(stream, tmp_path)
    assert joined is None
    expected = whole(stream)
    assert expected.error is not None and "nested more than" in expected.error.message
    assert (result.error.message, result.error.line) == (expected.error.message, expected.error.line)
