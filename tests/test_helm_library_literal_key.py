"""A literal device key (pattern A) in a library chart's define that the chart's only template includes whole
(converged-computing's flux-apps-helm charts: `templates/kubeflow-job.yaml` is `{{ include
"kubeflow-template.pytorch-job" . }}`, and the library, a `file://../kubeflow-template` dependency unpacked in charts/,
writes `nvidia.com/gpu: {{ default 1 .Values.master.gpus }}` in a PyTorchJob). The define renders with the chart's
context, so fix rewrites it in place in the library folder (and in its `file://` source when that folder is there),
with the `dra:` block and the claim templates in the chart whose values feed it, proven by rendering the chart. A
library packed in charts/ (.tgz) stays manual work, named pattern D. A small chart of the test's own; renders are real.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, dramigrate_in_process, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


DEFINE = """\
{{- define "jobs.train" -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: {{ .Values.worker.image }}
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.worker.gpus }}
{{- end }}
"""
INCLUDE = '{{ include "jobs.train" . }}\n'
LIBRARY = {"Chart.yaml": "apiVersion: v2\nname: jobs\nversion: 0.1.0\ntype: library\n", "templates/_train.tpl": DEFINE}
CHART_YAML = (
    "apiVersion: v2\nname: trainer\nversion: 0.1.0\n"
    "dependencies:\n  - name: jobs\n    version: 0.1.0\n    repository: file://../jobs\n"
)
KEY_LINE = DEFINE.splitlines().index("              nvidia.com/gpu: {{ .Values.worker.gpus }}") + 1


def _chart(root: Path, packed: bool = False) -> Path:
    chart = chart_with(root, "trainer", {"values.yaml": "worker:\n  image: trainer:1\n  gpus: 2\n"})
    (chart / "Chart.yaml").write_text(CHART_YAML)
    (chart / "templates" / "job.yaml").write_text(INCLUDE)
    library = chart_with(root / "unpacked", "jobs", LIBRARY)
    (chart / "charts").mkdir()
    if packed:  # as `helm dependency build` leaves it
        with tarfile.open(chart / "charts" / "jobs-0.1.0.tgz", "w:gz") as tar:
            tar.add(library, arcname="jobs")
    else:
        shutil.copytree(library, chart / "charts" / "jobs")
    return chart


def _run(chart: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    return run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), settings, Target.parse("1.34"), "fix")


def _render(chart: Path, *sets: str) -> list[dict[str, Any]]:
    manifests = render_chart(chart, RenderOptions(set_values=sets, kube_version="1.34"))
    return [d for m in manifests for d in yaml.safe_load_all(m.text) if d]


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == "Job")["spec"]["template"]["spec"]


def test_the_library_define_takes_the_switch_and_the_chart_its_values(tmp_path: Path) -> None:
    original = _chart(tmp_path / "original")
    chart = shutil.copytree(original, tmp_path / "fixed" / "trainer")
    outcome = fix_chart(chart)  # was: 'pattern F (another template shape)' for templates/job.yaml, nothing written
    assert {c.rel for c in outcome.changes} == {
        "charts/jobs/templates/_train.tpl",
        "templates/resourceclaimtemplate.yaml",
        "values.yaml",
        "Chart.yaml",
    }
    assert (chart / "templates" / "job.yaml").read_text() == INCLUDE  # the include line as it was
    define = (chart / "charts" / "jobs" / "templates" / "_train.tpl").read_text()
    assert define.startswith('{{- define "jobs.train" -}}\n') and "resourceClaims:" in define
    assert "dra:\n" in (chart / "values.yaml").read_text()  # the chart whose values the define reads
    assert _pod(_render(chart, "dra.enabled=false")) == _pod(_render(original))
    docs = _render(chart)
    pod = _pod(docs)
    claim = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": claim["metadata"]["name"]}]
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    none = _pod(_render(chart, "worker.gpus=0"))  # a count of 0: no claim
    assert not none["containers"][0]["resources"] and "resourceClaims" not in none


def test_the_file_source_of_the_library_gets_the_same_change(tmp_path: Path, run_cli: Any) -> None:
    """`file://../jobs` beside the chart, with charts/jobs built from it: fix on the folder holding both writes the
    define in both, so the next `helm dependency build` keeps it."""
    chart = _chart(tmp_path / "tree")
    source = chart.parent / "jobs"
    shutil.copytree(tmp_path / "tree" / "unpacked" / "jobs", source)
    shutil.rmtree(tmp_path / "tree" / "unpacked")
    code, _, err = run_cli(["fix", chart.parent])
    assert code == 0, err
    written = (chart / "charts" / "jobs" / "templates" / "_train.tpl").read_text()
    assert written != DEFINE and (source / "templates" / "_train.tpl").read_text() == written
    assert "chart-file-source-missing" not in err  # the source folder is there, and written


def test_another_chart_built_on_the_library_renders_as_before(tmp_path: Path, run_cli: Any) -> None:
    """One library folder, two charts built on it (flux-apps-helm's `kubeflow-template`): fix rewrites the define
    for `trainer`, whose values get the `dra:` block; `evaluator`, left alone, has none. With its charts/ copy built
    again from the changed folder, it renders byte for byte as before, with its own values and with the switch set off
    (was: `nil pointer evaluating interface {}.enabled`: the define read `.Values.dra.enabled` bare)."""
    chart = _chart(tmp_path / "tree")
    source = chart.parent / "jobs"
    shutil.copytree(tmp_path / "tree" / "unpacked" / "jobs", source)
    other = chart_with(tmp_path / "elsewhere", "evaluator", {"values.yaml": "worker:\n  image: eval:2\n  gpus: 1\n"})
    (other / "Chart.yaml").write_text(CHART_YAML.replace("trainer", "evaluator").replace("../jobs", "../../tree/jobs"))
    (other / "templates" / "job.yaml").write_text(INCLUDE)
    shutil.copytree(source, other / "charts" / "jobs")
    before = [m.text for m in render_chart(other, RenderOptions(kube_version="1.34"))]
    code, _, err = run_cli(["fix", chart.parent])
    assert code == 0, err
    assert (source / "templates" / "_train.tpl").read_text() != DEFINE
    shutil.rmtree(other / "charts" / "jobs")
    shutil.copytree(source, other / "charts" / "jobs")  # what `helm dependency build` does
    for sets in ((), ("dra.enabled=false",)):
        after = [m.text for m in render_chart(other, RenderOptions(set_values=sets, kube_version="1.34"))]
        assert after == before, sets
    assert _pod(_render(other))["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}  # as it was


def test_the_proof_renders_the_chart_with_only_the_library_rewritten(tmp_path: Path, monkeypatch: Any) -> None:
    """The proof also renders the chart as one without the `dra:` block sees the library (the original with only the
    library's files rewritten): a define reading the switch bare, as fix77a's rewrite wrote it, is not written."""
    import dramigrate.helm.run

    monkeypatch.setattr(dramigrate.helm.run, "library_safe", lambda changes, key: changes)
    outcome = _run(_chart(tmp_path))
    assert not outcome.proven and not outcome.changes
    assert "only the library's files rewritten (a chart built on it without the dra: block)" in outcome.manual
    assert "nil pointer evaluating interface {}.enabled" in outcome.manual


def test_a_library_copy_whose_file_source_is_missing_is_named_in_a_warning(tmp_path: Path) -> None:
    """`file://../jobs` names a folder that is not there (the chart copied out of its repository alone): fix rewrites
    the copy in charts/ only, and says that a dependency build where the folder is would put the old define back."""
    chart = _chart(tmp_path)
    outcome = fix_chart(chart)
    (warning,) = [f for f in outcome.findings if f.rule == "chart-file-source-missing"]
    assert (
        warning.file.endswith("/Chart.yaml")
        and warning.line == CHART_YAML.splitlines().index("    repository: file://../jobs") + 1
    )
    assert "charts/jobs (chart jobs 0.1.0) is built from file://../jobs, which is not there" in warning.message
    assert "write the same change into ../jobs" in warning.message


def test_a_packed_library_stays_manual_work_named_pattern_d(tmp_path: Path) -> None:
    chart = _chart(tmp_path, packed=True)
    outcome = _run(chart)
    assert not outcome.proven and not outcome.changes
    assert outcome.manual.startswith("templates/job.yaml:1: pattern D (library chart jobs 0.1.0, packed in")
    assert (
        f"its define jobs.train (templates/_train.tpl:{KEY_LINE}) writes the device key from .Values.worker.gpus"
        in (outcome.manual)
    )
    finding = next(f for f in outcome.findings if f.rule == "legacy-device-request")
    assert "[chart pattern D (a named helper or library include)]" in finding.message


def test_a_define_included_with_another_context_stays_manual_work_named_pattern_d(tmp_path: Path) -> None:
    """`include "jobs.train" (dict ...)`: the define's `.Values` are what the include hands it, not the chart's."""
    chart = _chart(tmp_path)
    (chart / "templates" / "job.yaml").write_text(
        '{{ include "jobs.train" (dict "Values" .Values "Release" .Release) }}\n'
    )
    outcome = _run(chart)
    assert not outcome.proven and not outcome.changes
    assert outcome.manual.startswith(
        f"charts/jobs/templates/_train.tpl:{KEY_LINE}: pattern D (a named helper or library"
    )
