"""Rewrites the proof called proven while the rewritten chart, with the DRA switch on, was wrong for values a user
could pass; each is now refused (nothing written) with the reason. Renders are real.

- Two workloads of one name in two templates (a Deployment and a warm-up Job, `{{ .Release.Name }}-app`) asking for
  the same devices through variables of their own: each template rendered the same ResourceClaimTemplate, and Helm
  fails the install on the second (`already exists`); the proof reads claim templates alike as one. (Read from
  values, the two now share one claim template.)
- A helper's device key named from values (`{{ $gpuType }}: N`) rewritten for nvidia.com/gpu: another device the
  migration takes stayed a device-plugin request with the switch on.
- A pod whose tolerations a helper writes from a values list the chart's values leave unset: a user's own list made
  the pod's `tolerations:` twice, and Helm kept the DRA branch's, dropping the user's; the proof set only the
  tolerations lists the values have."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
      {pod_head}containers:
        - name: server
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: server:1
          resources:
            limits:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
"""
SCHEDULING = """\
{{- define "app.scheduling" -}}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
"""


def _fix(chart: Path) -> object:
    return run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), "fix")


def test_two_workloads_of_one_name_would_render_their_claim_template_twice(tmp_path: Path) -> None:
    """Each template reads the count through a variable of its own (`$gpus`), so each keeps its claim template:
    both render under the one name."""
    name = "{{ .Release.Name }}-app"
    read, gpus = "{{ $gpus }}", "{{ .Values.gpus }}"
    files = {
        "templates/deployment.yaml": "{{- $gpus := .Values.gpus }}\n"
        + deployment(name, POD.format(pod_head="").replace(gpus, read)),
        "templates/job.yaml": "{{- $gpus := .Values.gpus }}\n" + JOB.format(name=name).replace(gpus, read),
        "values.yaml": "gpus: 1\n",
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    assert not outcome.proven  # was: proven, and `helm install` failed on the second
    why = outcome.manual
    assert "ResourceClaimTemplate release-name-app-" in why and "is rendered 2 times" in why
    assert "Deployment/release-name-app (app/templates/deployment.yaml)" in why and "Job/release-name-app" in why
    files["templates/job.yaml"] = files["templates/job.yaml"].replace(name, name + "-warmup")  # named apart: proven
    assert _fix(chart_with(tmp_path / "apart", "app", files)).proven


def test_two_workloads_of_one_name_asking_alike_share_their_claim_template(tmp_path: Path) -> None:
    """The same two workloads reading the count from values: their claim templates are alike, so the chart writes
    one (sharedtemplate.py), rendered once and named by both pods."""
    name = "{{ .Release.Name }}-app"
    files = {
        "templates/deployment.yaml": deployment(name, POD.format(pod_head="")),
        "templates/job.yaml": JOB.format(name=name),
        "values.yaml": "gpus: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text("dra: {enabled: true}\n")
    docs = dra_render(chart, on)[0]
    (template,) = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert template.startswith("release-name-app-")
    pods = {d["kind"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] in ("Deployment", "Job")}
    named = {kind: pod["resourceClaims"][0]["resourceClaimTemplateName"] for kind, pod in pods.items()}
    assert named == {"Deployment": template, "Job": template}


def test_tolerations_a_helper_writes_from_an_unset_values_list(tmp_path: Path) -> None:
    head = '{{- include "app.scheduling" . | nindent 6 }}\n      '
    files = {
        "templates/_helpers.tpl": SCHEDULING,
        "templates/deployment.yaml": deployment("server", POD.format(pod_head=head)),
        "values.yaml": "gpus: 1\n",  # no `tolerations:`
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    # once proven while a user's tolerations were dropped with the switch on, then refused (the key written twice);
    # now the device toleration joins the helper's list, proven with a user's list set (example.com/dedicated)
    assert outcome.proven, outcome.report()
    assert "every tolerations list of the values set to [example.com/dedicated]" in outcome.report()


NAMED_HELPER = """\
{{- define "app.resources" -}}
limits:
  memory: 1Gi
  {{- $gpuType := default "nvidia.com/gpu" .Values.gpuType }}
  {{ $gpuType }}: {{ .Values.gpus }}
{{- end }}
"""
HELPER_POD = """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- include "app.resources" . | nindent 12 }}
"""


def test_a_helper_key_named_from_values_refuses_another_device_with_the_switch_on(tmp_path: Path) -> None:
    """vLLM production-stack's `{{ $gpuType }}: N` (`requestGPUType`, default nvidia.com/gpu): the helper rewrite takes
    nvidia.com/gpu; a user's `amd.com/gpu` stayed a device-plugin request with the switch on (no claim), where the
    migration claims it. Now that render fails and says how to keep the device plugin; a resource no rule pack
    migrates stays as it was, as the migration leaves it."""
    files = {
        "templates/_helpers.tpl": NAMED_HELPER,
        "templates/deployment.yaml": deployment("server", HELPER_POD),
        "values.yaml": "gpus: 1\n",
    }
    chart = chart_with(tmp_path, "app", files)
    fix_chart(chart)
    with pytest.raises(HelmError, match="does not take .*set dra.enabled=false"):
        dra_render(chart, _values(tmp_path, "gpuType: amd.com/gpu\ngpus: 1\n"))
    _, counts, pods = dra_render(chart, _values(tmp_path, "gpuType: example.com/fpga\ngpus: 1\n"))
    assert not counts and pods["server"]["containers"][0]["resources"]["limits"]["example.com/fpga"] == 1
    _, counts, pods = dra_render(chart, _values(tmp_path, "gpuType: amd.com/gpu\ngpus: 1\ndra: {enabled: false}\n"))
    assert pods["server"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] == 1
    _, counts, _ = dra_render(chart, _values(tmp_path, "gpus: 2\n"))
    assert list(counts.values()) == [2]


def _values(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "given.yaml"
    path.write_text(text)
    return path


def test_a_generate_name_workload_is_named_by_its_prefix_where_its_claim_template_is_rendered_twice(
    tmp_path: Path,
) -> None:
    """A Job with only `generateName: <release>-app-` names its claim template from the prefix, as the Deployment
    `<release>-app` beside it does: the reason names the Job by that prefix (was `Job/None`). Each template reads the
    count through a variable of its own, so each keeps its claim template (read from values, they would share one)."""
    read, gpus = "{{ $gpus }}", "{{ .Values.gpus }}"
    job = JOB.format(name="{{ .Release.Name }}-app-").replace("  name:", "  generateName:").replace(gpus, read)
    files = {
        "templates/deployment.yaml": "{{- $gpus := .Values.gpus }}\n"
        + deployment("{{ .Release.Name }}-app", POD.format(pod_head="").replace(gpus, read)),
        "templates/job.yaml": "{{- $gpus := .Values.gpus }}\n" + job,
        "values.yaml": "gpus: 1\n",
    }
    outcome = _fix(chart_with(tmp_path, "app", files))
    assert not outcome.proven
    assert "is rendered 2 times" in outcome.manual, outcome.manual
    assert "Job/release-name-app- (app/templates/job.yaml)" in outcome.manual, outcome.manual
