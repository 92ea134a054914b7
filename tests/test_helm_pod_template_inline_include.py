"""A generic app chart's pod template written by one named helper (metadata, spec, containers) that the chart's
workloads include on their own `template:` line (`template: {{ include "app.pod" . | nindent 4 }}`, a CronJob's
`jobTemplate.spec.template:` at `nindent 8`), the container's `resources:` the `toYaml` of a values map: the finding
mapped to the `template:` line, which writes none of the pod, read as pattern D, and fix refused ("no `containers:`
above the helper's call site", or "no line of a helper in this chart writes the device key"). It now maps into the
define and takes the pass-through there, the map written on the `resources:` line itself or below it, the define in
any `_`-prefixed file under templates/ (`templates/tpl/_template.pod.yaml`), and every workload that includes it (a
Deployment or StatefulSet picked by a `deployType` switch, a CronJob) gets the pod's claims; so too a define that
writes the pod spec from its first line (`containers:`), included on the pod's `spec:` line, its pod keys after the
containers (above them, the define's `-}}` would no longer trim the newline before `containers:`); and a define given
the root in a dict (`include "app.pod" (dict "root" .)`, `toYaml $root.Values.resources`, its top-level map once read
as a map under a key `Values`). Proven by (L) and (D), and a second fix writes nothing. Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import assert_second_fix_quiet, chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = """\
image: busybox
deployType: Deployment
resources:
  limits:
    cpu: "1"
    nvidia.com/gpu: 1
"""
# the map on the `resources:` line itself (variant 1) or on the line below it (variant 2)
INLINE = "      resources: {{ toYaml .Values.resources | nindent 8 }}\n"
BELOW = "      resources:\n        {{- toYaml .Values.resources | nindent 8 }}\n"
POD = """\
{{- define "app.pod" -}}
metadata:
  labels:
    app: x
spec:
  containers:
    - name: main
      image: {{ .Values.image }}
RESOURCES{{- end }}
"""
WORKLOAD = """\
apiVersion: apps/v1
kind: KIND
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels:
      app: x
  template: {{ include "app.pod" . | nindent 4 }}
"""
SWITCHED = (
    '{{- if eq .Values.deployType "Deployment" }}\n'
    + WORKLOAD.replace("KIND", "Deployment")
    + '{{- else if eq .Values.deployType "StatefulSet" }}\n'
    + WORKLOAD.replace("KIND", "StatefulSet").replace("spec:\n  selector", "spec:\n  serviceName: x\n  selector")
    + "{{- end }}\n"
)
CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ .Release.Name }}-cron
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template: {{ include "app.pod" . | nindent 8 }}
"""
# a define that writes the pod spec from its first line, included on the pod's own `spec:` line
POD_SPEC = """\
{{- define "app.podSpec" -}}
containers:
  - name: main
    image: {{ .Values.image }}
    resources: {{ toYaml .Values.resources | nindent 6 }}
{{- end }}
"""
SPEC_LINE = WORKLOAD.replace("KIND", "Deployment").replace(
    '  template: {{ include "app.pod" . | nindent 4 }}\n',
    '  template:\n    metadata:\n      labels:\n        app: x\n    spec: {{ include "app.podSpec" . | nindent 6 }}\n',
)

# the root given in a dict (`include "app.pod" (dict "root" .)`), the map read as `$root.Values.resources`
IN_DICT = {
    "values.yaml": VALUES,
    "templates/_pod.tpl": POD.replace("-}}\nmetadata:", "-}}\n{{- $root := .root -}}\nmetadata:")
    .replace(".Values.", "$root.Values.")
    .replace("RESOURCES", INLINE.replace(".Values.", "$root.Values.")),
    **{
        rel: text.replace('"app.pod" .', '"app.pod" (dict "root" .)')
        for rel, text in (("templates/workload.yaml", SWITCHED), ("templates/cronjob.yaml", CRONJOB))
    },
}


def _files(resources: str, helper: str = "templates/_pod.tpl", shared: bool = False) -> dict[str, str]:
    workloads = (
        {"templates/workload.yaml": SWITCHED, "templates/cronjob.yaml": CRONJOB}
        if shared
        else {"templates/deployment.yaml": WORKLOAD.replace("KIND", "Deployment")}
    )
    return {"values.yaml": VALUES, helper: POD.replace("RESOURCES", resources), **workloads}


def _pods(chart: Path, *files: Path) -> dict[tuple[str, str], Any]:
    """Each rendered workload's pod spec, and each ResourceClaimTemplate, by kind and name."""
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=files))]
    docs = [d for t in texts for d in yaml.safe_load_all(t) if d]
    out = {}
    for d in docs:
        template = d["spec"]["jobTemplate"]["spec"]["template"] if d["kind"] == "CronJob" else d["spec"].get("template")
        out[d["kind"], d["metadata"]["name"]] = template["spec"] if template else d["spec"]
    return out


CASES = [
    (_files(INLINE), ()),
    (_files(BELOW), ()),
    (_files(INLINE, "templates/tpl/_template.pod.yaml", shared=True), ("Deployment", "CronJob")),
    ({"values.yaml": VALUES, "templates/_pod.tpl": POD_SPEC, "templates/deployment.yaml": SPEC_LINE}, ()),
    (IN_DICT, ("Deployment", "CronJob")),
]


@pytest.mark.parametrize(
    ("files", "kinds"),
    CASES,
    ids=[
        "map-on-resources-line",
        "map-below-resources",
        "tpl-file-shared-by-cronjob",
        "pod-spec-on-spec-line",
        "root-in-dict",
    ],
)
def test_a_pod_template_helper_on_the_template_line_takes_the_pass_through(
    tmp_path: Path, files: dict[str, str], kinds: tuple[str, ...]
) -> None:
    """Was refused as pattern D at the workload's `template:` (or the pod's `spec:`) line."""
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _pods(chart) == _pods(original)  # the defaults render as before
    dra = chart / "values-dra.yaml"
    (tmp_path / "sts.yaml").write_text("deployType: StatefulSet\n")  # the switch's other workload, DRA values last
    renders = [_pods(chart, dra)] + ([_pods(chart, tmp_path / "sts.yaml", dra)] if kinds else [])
    seen = set()
    for pods in renders:
        for (kind, _), pod in pods.items():
            if kind == "ResourceClaimTemplate":
                continue
            seen.add(kind)
            assert pod["containers"][0]["resources"] == {"limits": {"cpu": "1"}, "claims": [{"name": "gpu"}]}
            (claim,) = pod["resourceClaims"]
            assert ("ResourceClaimTemplate", claim["resourceClaimTemplateName"]) in pods
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert seen == ({*kinds, "StatefulSet"} if kinds else {"Deployment"})
    assert_second_fix_quiet(chart)


def test_lint_points_at_the_helpers_resources_line_and_each_include(tmp_path: Path) -> None:
    """Was the workload's `template:` line, pattern D, which writes none of the pod."""
    files = _files(INLINE, "templates/tpl/_template.pod.yaml", shared=True)
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "lint")
    requests = [f for f in outcome.findings if f.rule == "legacy-device-request"]
    resources = POD.replace("RESOURCES", INLINE).splitlines().index(INLINE.rstrip("\n")) + 1
    assert {(Path(f.file).name, f.line) for f in requests} == {("_template.pod.yaml", resources)}
    assert all("[chart pattern B " in f.message for f in requests)
    includes = {(Path(r.file).name, r.line) for f in requests for r in f.related if "includes" in r.note}
    template_line = next(i for i, line in enumerate(SWITCHED.splitlines(), 1) if "include" in line)
    assert includes == {("workload.yaml", template_line), ("cronjob.yaml", CRONJOB.count("\n"))}
