"""Workloads that pass their values resources maps through (pattern B), each in a namespace of its own values key, as
jump-cannon's RayCluster (`{{ $computeNamespace }}`) and nightly CronJob (`{{ $performanceNamespace }}`, set inside the
CronJob's `if`): a ResourceClaimTemplate is namespaced and a pod claims only from its own namespace, so the one
claim-template file of the pass-through renders each template in every namespace a workload renders in, each under
the `if` its workload renders in (was: refused, "name different namespaces"). The proof renders a value set with
each namespace key apart, so a template missing from a pod's namespace shows.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.claimnamespaces import NAMESPACES_APART
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def _workload(key: str, namespace: str) -> str:
    """A Deployment under `if .Values.KEY.enabled` taking .Values.KEY.resources, in `namespace`: a values expression,
    or `$ns` set from .Values.KEY.namespace inside the `if` (the same variable in each template)."""
    text = deployment(
        f"{{{{ .Release.Name }}}}-{key}",
        f"""\
      containers:
        - name: {key}
          image: {key}:1
          resources:
            {{{{- toYaml .Values.{key}.resources | nindent 12 }}}}
""",
    )
    text = text.replace("metadata:\n", f"metadata:\n  namespace: {namespace}\n", 1)
    own = f"{{{{- $ns := default .Release.Namespace .Values.{key}.namespace }}}}\n" if "$ns" in namespace else ""
    return f"{{{{- if .Values.{key}.enabled }}}}\n{own}{text}{{{{- end }}}}\n"


VALUES = "".join(
    f'{k}:\n  enabled: true\n  namespace: ""\n  resources:\n    limits:\n      nvidia.com/gpu: {n}\n'
    for k, n in (("a", 1), ("b", 2))
)


def _chart(tmp_path: Path, namespace: str) -> Path:
    files = {"values.yaml": VALUES}
    files |= {f"templates/{k}.yaml": _workload(k, namespace.replace("KEY", k)) for k in ("a", "b")}
    return chart_with(tmp_path, "two", files)


def _rendered(chart: Path, values: Path) -> list[dict]:
    files = (chart / "values-dra.yaml", values)
    return [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]


def _claimed(docs: list[dict]) -> dict[str, tuple[str, int]]:
    """Each Deployment's namespace and the device count of the claim template it names, found in its namespace."""
    templates = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    out = {}
    for d in docs:
        if d["kind"] == "Deployment":
            (claim,) = d["spec"]["template"]["spec"]["resourceClaims"]
            namespace = d["metadata"]["namespace"]
            out[d["metadata"]["name"]] = (
                namespace,
                templates[(namespace, claim["resourceClaimTemplateName"])]["count"],
            )
    return out


def test_workloads_in_namespaces_of_their_own_get_each_claim_template_in_their_namespace(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "{{ default .Release.Namespace .Values.KEY.namespace }}")
    outcome = fix_chart(chart)
    assert any(c.startswith(f"{NAMESPACES_APART} (DRA values") for c in outcome.checked), outcome.checked
    apart = tmp_path / "apart.yaml"
    apart.write_text("a: {namespace: serving}\nb: {namespace: training}\n")
    assert _claimed(_rendered(chart, apart)) == {
        "release-name-a": ("serving", 1),
        "release-name-b": ("training", 2),
    }
    together = tmp_path / "together.yaml"
    together.write_text("a: {namespace: serving}\nb: {namespace: serving}\n")
    docs = _rendered(chart, together)
    names = [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert len(names) == len(set(names)) == 2  # one namespace: each template once, as before
    off = tmp_path / "off.yaml"
    off.write_text("a: {namespace: serving}\nb: {namespace: training, enabled: false}\n")
    docs = _rendered(chart, off)
    assert _claimed(docs) == {"release-name-a": ("serving", 1)}
    assert {d["metadata"]["namespace"] for d in docs if d["kind"] == "ResourceClaimTemplate"} == {"serving"}


def test_one_variable_set_inside_each_workloads_if_is_each_workloads_namespace(tmp_path: Path) -> None:
    """`$ns`, set inside each template's `if .Values.KEY.enabled`: the claim-template file sets it as each template
    does, under the same `if` (was: refused, `$ns` assigned inside an `if`)."""
    chart = _chart(tmp_path, "{{ $ns }}")
    fix_chart(chart)
    text = (chart / "templates/resourceclaimtemplates.yaml").read_text()
    for key in ("a", "b"):
        assert (
            f"{{{{- if .Values.{key}.enabled }}}}{{{{ $ns := default .Release.Namespace .Values.{key}.namespace }}}}"
            "{{ $namespaces = append $namespaces $ns }}{{ end }}\n" in text
        ), text
    apart = tmp_path / "apart.yaml"
    apart.write_text("a: {namespace: serving}\nb: {namespace: training}\n")
    assert _claimed(_rendered(chart, apart)) == {
        "release-name-a": ("serving", 1),
        "release-name-b": ("training", 2),
    }


def test_a_namespace_of_more_than_one_action_is_refused_with_what_to_do(tmp_path: Path) -> None:
    chart = _chart(tmp_path, "{{ .Release.Name }}-{{ .Values.KEY.namespace }}")
    original = {p: p.read_text() for p in chart.rglob("*") if p.is_file()}

    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")

    line = (chart / "templates/a.yaml").read_text().splitlines().index(
        "  namespace: {{ .Release.Name }}-{{ .Values.a.namespace }}"
    ) + 1
    assert not outcome.proven
    assert outcome.manual.startswith(f"templates/a.yaml:{line}: pattern B"), outcome.manual
    assert f"templates/b.yaml:{line}" in outcome.manual and "different namespaces" in outcome.manual
    assert "a ResourceClaimTemplate for each namespace that uses it" in outcome.manual
    assert "--strategy extended-resource" in outcome.manual
    assert {p: p.read_text() for p in chart.rglob("*") if p.is_file()} == original
