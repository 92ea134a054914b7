"""A container's resources map built in template variables (pattern F, helix-sandbox's shape): `$resources` from
`dict`/`merge`, the device entry `dict <name from values> <count from values>` in each vendor's branch, written with
`toYaml $resources`. The idiomatic rewrite edits the map behind the dra.enabled switch and is proven."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: app
          image: app:1
          resources:
            {{- $resources := dict "limits" (dict "memory" "1Gi") }}
            {{- if eq .Values.gpu.vendor "nvidia" }}
            {{- $gpu := dict .Values.gpu.nvidia.resourceName (.Values.gpu.nvidia.count | default 1) }}
            {{- $resources = merge $resources (dict "limits" (merge $resources.limits $gpu)) }}
            {{- else if eq .Values.gpu.vendor "amd" }}
            {{- $gpu := dict .Values.gpu.amd.resourceName 1 }}
            {{- $resources = merge $resources (dict "limits" (merge $resources.limits $gpu)) }}
            {{- end }}
            {{- toYaml $resources | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = """\
gpu:
  # nvidia, amd or none
  vendor: nvidia
  nvidia:
    resourceName: nvidia.com/gpu
    count: 1
  amd:
    resourceName: amd.com/gpu
tolerations: []
"""
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def rendered(chart: Path, values: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=values, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def texts(chart: Path, values: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=values, set_values=sets))]


def pod_and_claim(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    return pod, template["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_a_map_built_in_variables_gets_the_switch(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/deployment.yaml": DEPLOYMENT}
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpu:\n  vendor: amd\n")
    outcome = run_chart(chart, ChartOptions(values_files=(amd,)), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    off = ("dra.enabled=false",)  # the device-plugin request, as before
    for values in ((), (amd,)):
        assert texts(chart, values, off) == texts(original, values)
    # on (the default without --opt-in): the map keeps its memory, the count the knob's, the class the vendor's
    pod, request = pod_and_claim(rendered(chart, sets=("gpu.nvidia.count=3",)))
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 3)
    assert pod["tolerations"] == [TOLERATION]
    pod, request = pod_and_claim(rendered(chart, (amd,)))
    assert (request["deviceClassName"], request["count"]) == ("gpu.amd.com", 1)
    assert pod["tolerations"] == [{**TOLERATION, "key": "amd.com/gpu"}]
    # a toleration the values give already is not written twice (the migration adds none then)
    given = tmp_path / "tolerated.yaml"
    given.write_text(yaml.safe_dump({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}))
    pod, _ = pod_and_claim(rendered(chart, (given,)))
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert not [d for d in rendered(chart, sets=("gpu.vendor=none",)) if d["kind"] == "ResourceClaimTemplate"]


SECTION_DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: app
          image: app:1
          resources:
            {{- if or .Values.resources .Values.gpu.enabled }}
            {{- $resources := .Values.resources | default dict }}
            {{- $limits := $resources.limits | default dict }}
            {{- if and .Values.gpu.enabled (eq .Values.gpu.type "nvidia") }}
            {{- $limits = merge $limits (dict "nvidia.com/gpu" 1) }}
            {{- else if and .Values.gpu.enabled (eq .Values.gpu.type "intel") }}
            {{- $limits = merge $limits (dict "gpu.intel.com/i915" 1) }}
            {{- end }}
            {{- if $limits }}
            limits:
              {{- toYaml $limits | nindent 14 }}
            {{- end }}
            {{- else }}
            {}
            {{- end }}
""",
)


def test_a_limits_section_built_in_a_variable_gets_the_switch(tmp_path: Path) -> None:
    """tvarr's shape: `limits:` written from `$limits`, the template's own `merge $limits (dict "<name>" 1)` chosen
    by gpu.type; every name the template can add is switched, not only the one the user's values render."""
    values = "resources: {}\ngpu:\n  enabled: false\n  type: nvidia\n"
    original = chart_with(
        tmp_path / "original", "app", {"values.yaml": values, "templates/app.yaml": SECTION_DEPLOYMENT}
    )
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    nvidia = tmp_path / "nvidia.yaml"
    nvidia.write_text("gpu:\n  enabled: true\nresources:\n  limits:\n    memory: 1Gi\n")
    opts = ChartOptions(values_files=(nvidia,))
    outcome = run_chart(chart, opts, load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for values_files in ((), (nvidia,)):
        assert texts(chart, values_files, ("dra.enabled=false",)) == texts(original, values_files)
    pod, request = pod_and_claim(rendered(chart, (nvidia,)))
    assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 1)
    pod, request = pod_and_claim(rendered(chart, sets=("gpu.enabled=true", "gpu.type=intel")))
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}  # the emptied limits: goes
    assert request["deviceClassName"] == "gpu.intel.com"


# the device entry merged into `$limits` (its name `(.Values.gpu.resource | default "nvidia.com/gpu")`, or amd's
# literal one), then `$res := deepCopy (dict "limits" $limits) | mergeOverwrite .Values.resources` written with toYaml,
# all inside `if .Values.resources`; the line before `containers:` ends in a blank
FOLDED_DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
      {{- with .Values.nodeSelector }}
      nodeSelector: {{ toYaml . | nindent 8 }}
      {{- end }} 
      containers:
        - name: app
          image: app:1
          {{- if .Values.resources }}
          resources:
            {{- $limits := default dict .Values.resources.limits }}
            {{- if .Values.gpu.enabled }}
              {{- if eq .Values.gpu.type "nvidia" }}
                {{- $gpu := dict (.Values.gpu.resource | default "nvidia.com/gpu") (.Values.gpu.number | default 1) }}
                {{- $limits = merge $limits $gpu }}
              {{- else if eq .Values.gpu.type "amd" }}
                {{- $limits = merge $limits (dict "amd.com/gpu" (.Values.gpu.number | default 1)) }}
              {{- end }}
            {{- end }}
            {{- $res := deepCopy (dict "limits" $limits) | mergeOverwrite .Values.resources }}
            {{- toYaml $res | nindent 12 }}
          {{- end }}
""",
)


def test_a_map_folded_from_a_built_limits_variable_gets_the_switch(tmp_path: Path) -> None:
    """Was: manual, 'pattern F (another template shape)': the map written is `$res`, made of `$limits`, whose device
    entry's name is a parenthesised values expression; and the map is written inside `if .Values.resources`, so the
    DRA variables the pod's claim reads are set at the pod's depth (after `containers:`, its line end trimmed only)."""
    values = "resources:\n  requests: {}\ngpu:\n  enabled: false\n  type: nvidia\n  resource: nvidia.com/gpu\n"
    original = chart_with(
        tmp_path / "original", "app", {"values.yaml": values, "templates/app.yaml": FOLDED_DEPLOYMENT}
    )
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    nvidia = tmp_path / "nvidia.yaml"
    nvidia.write_text("gpu:\n  enabled: true\n  number: 2\n")
    outcome = run_chart(
        chart, ChartOptions(values_files=(nvidia,)), load_rules(), Settings(), Target.parse("1.36"), "fix"
    )
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    for values_files in ((), (nvidia,)):
        assert texts(chart, values_files, ("dra.enabled=false",)) == texts(original, values_files)
    pod, request = pod_and_claim(rendered(chart, (nvidia,)))
    assert pod["containers"][0]["resources"] == {"requests": {}, "claims": [{"name": "gpu"}]}
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 2)
    pod, request = pod_and_claim(rendered(chart, sets=("gpu.enabled=true", "gpu.type=amd")))
    assert (request["deviceClassName"], request["count"]) == ("gpu.amd.com", 1)


def test_a_device_name_from_values_the_rewrite_does_not_take_fails_the_dra_branch(tmp_path: Path) -> None:
    """Was: a device name set in values that the rewrite does not migrate (`gpu.resource=nvidia.com/mig-1g.5gb`, the
    rewrite taking nvidia.com/gpu and amd.com/gpu) stayed in the map with dra.enabled=true: the pod asked its device
    plugin for it and got no claim, without a word. Now that render fails and says what the claim takes; with the
    switch off the chart renders as before, and a plain extended resource beside the GPU still renders."""
    values = "resources:\n  requests: {}\ngpu:\n  enabled: true\n  type: nvidia\n  resource: nvidia.com/gpu\n"
    original = chart_with(
        tmp_path / "original", "app", {"values.yaml": values, "templates/app.yaml": FOLDED_DEPLOYMENT}
    )
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    guard = [line.strip() for line in (chart / "templates/app.yaml").read_text().splitlines() if "fail " in line]
    assert guard and all(line.startswith('{{- fail "') for line in guard)  # was: after range and if (400+ characters)
    mig = ("gpu.resource=nvidia.com/mig-1g.5gb",)
    assert texts(chart, sets=(*mig, "dra.enabled=false")) == texts(original, sets=mig)
    with pytest.raises(HelmError, match="does not take \\(it takes nvidia.com/gpu, amd.com/gpu\\)"):
        rendered(chart, sets=mig)
    pod, request = pod_and_claim(rendered(chart, sets=("resources.limits.hugepages-2Mi=1Gi",)))
    assert pod["containers"][0]["resources"]["limits"] == {"hugepages-2Mi": "1Gi"}


def test_a_map_built_in_variables_fails_clearly_below_kubernetes_1_34(tmp_path: Path) -> None:
    """The map-built rewrite rendered its ResourceClaimTemplate on any cluster: on Kubernetes 1.30 the switch on gave
    resource.k8s.io/v1 objects the API server does not serve, where the other rewrites fail the render with what to
    do (the Capabilities check issue 7 asks for)."""
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/deployment.yaml": DEPLOYMENT})
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    with pytest.raises(HelmError, match=r"DRA ResourceClaims need Kubernetes 1\.34\+ .*set dra\.enabled=false"):
        render_chart(chart, RenderOptions(kube_version="1.30"))
    older = render_chart(chart, RenderOptions(kube_version="1.30", set_values=("dra.enabled=false",)))
    assert "nvidia.com/gpu: 1" in older[0].text  # the way back renders on the old cluster
    assert any("ResourceClaimTemplate" in m.text for m in render_chart(chart, RenderOptions(kube_version="1.34")))


def test_two_templates_building_their_maps_alike_share_one_claim_spec(tmp_path: Path) -> None:
    """Two Deployments building their resources maps the same way (tonic's two ML workers): the claim spec is written
    once, in templates/_dra.tpl, and both claim templates read it with their own counts (was: a define per template,
    the same text twice)."""
    worker = DEPLOYMENT.replace("-app", "-worker").replace(".Values.gpu.", ".Values.worker.gpu.")
    files = {
        "values.yaml": VALUES + "worker:\n" + "".join(f"  {line}\n" for line in VALUES.splitlines()[:-1]),
        "templates/deployment.yaml": DEPLOYMENT,
        "templates/worker.yaml": worker,
    }
    chart = chart_with(tmp_path, "app", files)
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    every = "".join(p.read_text() for p in (chart / "templates").iterdir())
    shared = (chart / "templates/_dra.tpl").read_text()
    assert "devices:" in shared
    assert every.count("devices:") == shared.count("devices:")  # the spec, once per vendor branch, in _dra.tpl only
    docs = rendered(chart, sets=("gpu.nvidia.count=3", "worker.gpu.nvidia.count=2"))
    templates = {d["metadata"]["name"]: d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"}
    counts = {}
    for d in docs:
        if d["kind"] == "Deployment":
            (claim,) = d["spec"]["template"]["spec"]["resourceClaims"]
            request = templates[claim["resourceClaimTemplateName"]]["devices"]["requests"][0]["exactly"]
            counts[d["metadata"]["name"]] = request["count"]
    assert counts == {"release-name-app": 3, "release-name-worker": 2}
