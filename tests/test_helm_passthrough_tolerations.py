"""The device toleration of the pass-through rewrite (patterns B and C) when the pod's tolerations come from a values
list that is not beside its resources map (a validated-patterns vLLM InferenceService: `predictor.resources` and
`vllmInferenceService.tolerations`): found by rendering with a marker in each values list, never by key names.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import chart_with, deployment, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")

# the pod reads its tolerations from the top-level list, its resources from `server.resources`
SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      tolerations:
        {{- toYaml .Values.tolerations | nindent 8 }}
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.server.resources | nindent 12 }}
""",
)
VALUES = """\
tolerations:
  - key: dedicated
    operator: Exists
server:
  resources:
    limits:
      nvidia.com/gpu: 1
"""
# another object renders the same list (an accelerator profile of a dashboard)
PROFILE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-profile
data:
  tolerations: {{ toJson .Values.tolerations | quote }}
"""


def _fixed(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    chart = chart_with(tmp_path, "server", files)
    before = render_chart(chart, RenderOptions())[0].text
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    after = render_chart(chart, RenderOptions())[0].text
    assert after.replace("0.1.1", "0.1.0") == before  # the values as they were: byte-identical
    return chart, (chart / "templates" / "server.yaml").read_text()


def test_the_device_toleration_joins_the_values_list_the_pod_reads(tmp_path: Path) -> None:
    """The pod renders `.Values.tolerations`, not a list beside its map: the DRA values carry the device toleration
    beside the map (`server.resourceTolerations`), which the pod's `toYaml` line joins to its list, so a later values
    file of the user's that sets `tolerations` keeps it (was: a toleration beside the map that nothing rendered,
    manual; then the list whole in the DRA values, which a later file replaced)."""
    chart, template = _fixed(tmp_path, {"values.yaml": VALUES, "templates/server.yaml": SERVER})
    _, _, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"], pod
    assert pod["resourceClaims"] and pod["containers"][0]["resources"]["claims"], pod
    assert "(concat (.Values.tolerations | default list)" in template
    dra = yaml.safe_load((chart / "values-dra.yaml").read_text())
    assert "tolerations" not in dra and [t["key"] for t in dra["server"]["resourceTolerations"]] == ["nvidia.com/gpu"]


def test_a_values_list_another_object_renders_too_takes_the_device_toleration_in_the_pod_only(tmp_path: Path) -> None:
    """A ConfigMap renders the same `.Values.tolerations`: the list stays as it is and the pod's line joins it with
    the DRA values' `server.resourceTolerations`, so only the pod tolerates the device (was: nothing rendered the added
    toleration, manual)."""
    files = {"values.yaml": VALUES, "templates/server.yaml": SERVER, "templates/profile.yaml": PROFILE}
    chart, template = _fixed(tmp_path, files)
    docs, _, pods = dra_render(chart, chart / "values-dra.yaml")
    (pod,) = pods.values()
    assert [t["key"] for t in pod["tolerations"]] == ["dedicated", "nvidia.com/gpu"], pod
    (profile,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert profile["data"]["tolerations"] == '[{"key":"dedicated","operator":"Exists"}]'
    assert ".Values.server.resourceTolerations" in template


WITH_TOLERATIONS = SERVER.replace(
    "      tolerations:\n        {{- toYaml .Values.tolerations | nindent 8 }}\n",
    "      {{- with .Values.tolerations }}\n      tolerations:\n"
    "        {{- toYaml . | nindent 8 }}\n      {{- end }}\n",
)
# a pod without devices that renders the same list
WEB = WITH_TOLERATIONS.replace("-server", "-web").replace(".Values.server.resources", ".Values.web.resources")


def test_a_values_list_under_with_that_another_pod_renders_takes_the_device_toleration_once(tmp_path: Path) -> None:
    """Both pods render `{{- with .Values.tolerations }}`: the GPU pod's `with` joins that list with the DRA values'
    `server.resourceTolerations`, so a user's own tolerations stay beside the device's and the pod has one
    `tolerations:` key (was: a second `tolerations:` block beside the first, which replaced it or clashed with it)."""
    values = VALUES + "web:\n  resources:\n    limits:\n      cpu: 1\n"
    files = {"values.yaml": values, "templates/server.yaml": WITH_TOLERATIONS, "templates/web.yaml": WEB}
    chart, template = _fixed(tmp_path, files)
    assert template.count("tolerations:") == 1, template
    own = tmp_path / "own.yaml"
    own.write_text("tolerations:\n  - key: dedicated\n    operator: Exists\n")
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(chart / "values-dra.yaml", own)))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    assert [t["key"] for t in pods["release-name-server"]["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    assert [t["key"] for t in pods["release-name-web"]["tolerations"]] == ["dedicated"]


# fauxpilot's shape: the GPU pod takes the top-level `resources` map, so the key beside it is the chart's own
# top-level `tolerations` list, which a proxy pod without devices renders too
TOP = WITH_TOLERATIONS.replace(".Values.server.resources", ".Values.resources")
PROXY = WITH_TOLERATIONS.replace("-server", "-proxy").replace(
    "          resources:\n            {{- toYaml .Values.server.resources | nindent 12 }}\n", ""
)
TOP_VALUES = "tolerations: []\nresources:\n  limits:\n    nvidia.com/gpu: 1\n"


def test_the_tolerations_list_beside_a_top_level_map_that_a_pod_without_devices_renders_stays_its_own(
    tmp_path: Path,
) -> None:
    """`resources` and `tolerations` at the top of the values, both pods under `with .Values.tolerations`: the
    device toleration goes under a key of its own that only the GPU pod's `with` joins, so the proxy tolerates
    nothing new and a user's tolerations reach both pods (was: the DRA values set `tolerations` itself, the proxy
    took the device toleration, the proof failed and fix wrote nothing)."""
    files = {"values.yaml": TOP_VALUES, "templates/server.yaml": TOP, "templates/proxy.yaml": PROXY}
    chart, template = _fixed(tmp_path, files)
    assert template.count("tolerations:") == 1, template
    _, _, pods = dra_render(chart, chart / "values-dra.yaml")
    assert [t["key"] for t in pods["release-name-server"]["tolerations"]] == ["nvidia.com/gpu"], pods
    assert "tolerations" not in pods["release-name-proxy"], pods
    own = tmp_path / "own.yaml"
    own.write_text("tolerations:\n  - key: dedicated\n    operator: Exists\n")
    docs = [
        d
        for m in render_chart(chart, RenderOptions(values_files=(chart / "values-dra.yaml", own)))
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    assert [t["key"] for t in pods["release-name-server"]["tolerations"]] == ["dedicated", "nvidia.com/gpu"]
    assert [t["key"] for t in pods["release-name-proxy"]["tolerations"]] == ["dedicated"]


def test_a_values_file_that_tolerates_the_taint_itself_gets_no_second_toleration(tmp_path: Path) -> None:
    """fauxpilot's shape with the user's GPU values tolerating the device taint themselves (a user's GPU values often
    do): the migration adds no toleration there, but the file's DRA variant left values-dra.yaml's
    `resourceTolerations` in place, the GPU pod got a second toleration and fix refused the chart. The variant now
    empties that key."""
    chart = chart_with(tmp_path, "server", {"values.yaml": TOP_VALUES, "templates/server.yaml": TOP})
    (chart / "templates" / "proxy.yaml").write_text(PROXY)
    mine = tmp_path / "gpu.yaml"
    mine.write_text(
        "resources:\n  limits:\n    nvidia.com/gpu: 2\ntolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n"
    )
    outcome = run_chart(chart, ChartOptions(values_files=(mine,)), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    docs = [
        d
        for m in render_chart(
            chart, RenderOptions(values_files=(chart / "values-dra.yaml", mine, tmp_path / "gpu-dra.yaml"))
        )
        for d in yaml.safe_load_all(m.text)
        if d
    ]
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    assert pods["release-name-server"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert pods["release-name-server"]["resourceClaims"], pods
