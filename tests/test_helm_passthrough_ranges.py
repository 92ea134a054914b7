"""The pass-through (patterns B and C) for resources maps reached through `range` variables and merged with
`mergeOverwrite` (NVIDIA's microservice charts: `toYaml (mergeOverwrite $container.resources (default dict
$topValues.resources))` inside ranges over `applicationSpecs` and their `containers`).

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()
T136 = Target.parse("1.36")

# one Deployment per application, one container per entry of its `containers` map; a container's resources are its
# own map merged with the chart-wide `resources` (which overwrite), or the chart-wide map alone
APPS = """\
{{- $topValues := .Values }}
{{- range $appname, $appData := $topValues.applicationSpecs }}
{{- $containers := $appData.containers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $appname }}
spec:
  selector:
    matchLabels: {app: {{ $appname }}}
  template:
    metadata:
      labels: {app: {{ $appname }}}
    spec:
      containers:
      {{- range $containerName, $container := $containers }}
        - name: {{ $containerName }}
          image: {{ $container.image }}
          {{- if $container.resources }}
          resources:
          {{- toYaml ( mergeOverwrite $container.resources ( default dict $topValues.resources ) ) | nindent 12 }}
          {{- else if $topValues.resources }}
          resources:
          {{- toYaml $topValues.resources | nindent 12 }}
          {{- end }}
      {{- end }}
{{- end }}
"""
VALUES = """\
resources: {}
applicationSpecs:
  server:
    containers:
      main:
        image: server:1
        resources:
          limits:
            cpu: 1
            nvidia.com/gpu: 1
      sidecar:
        image: sidecar:1
  web:
    containers:
      web:
        image: web:1
        resources:
          limits:
            cpu: 1
"""


NO_GPU = VALUES.replace("            nvidia.com/gpu: 1\n", "")
WEB_GPU = """\
applicationSpecs:
  web:
    containers:
      web:
        resources:
          limits:
            nvidia.com/gpu: 2
"""


@pytest.mark.parametrize(
    ("values", "gpu", "claimed"),
    [
        (VALUES, None, {"server"}),  # the chart's defaults ask in one container's own map
        (NO_GPU, WEB_GPU, {"web"}),  # a -f file asks in another application's container map
    ],
)
def test_a_container_map_merged_in_ranges_gets_its_claims_on_its_pod(
    tmp_path: Path, values: str, gpu: str | None, claimed: set[str]
) -> None:
    """The device key is in a container's own map, reached through two `range` variables and merged with the
    chart-wide map: fix puts `resourceClaims` beside that map and renders it into the pod of that container only,
    proven (L) and (D) (was: pattern F, manual)."""
    chart = chart_with(tmp_path, "apps", {"values.yaml": values, "templates/apps.yaml": APPS})
    files: tuple[Path, ...] = ()
    if gpu:
        (tmp_path / "gpu.yaml").write_text(gpu)
        files = (tmp_path / "gpu.yaml",)
    outcome = run_chart(chart, ChartOptions(values_files=files), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml" if gpu else chart / "values-dra.yaml")
    assert {n.removeprefix("release-name-") for n, pod in pods.items() if pod.get("resourceClaims")} == claimed
    assert list(counts.values()) == [2 if gpu else 1]


LEAF_VALUES = """\
resources: {}
applicationSpecs:
  server:
    containers:
      main:
        image: server:1
        resources:
          limits:
            nvidia.com/gpu: 1
"""
UMBRELLA_LIMITS = """\
apps:
  applicationSpecs:
    server:
      containers:
        main:
          resources:
            limits:
              cpu: 2
              nvidia.com/gpu: 1
"""


def umbrella(root: Path, values: str) -> Path:
    """An umbrella whose `apps` subchart (a folder in charts/) has the ranges above; the umbrella's values ask."""
    leaf = {"Chart.yaml": "apiVersion: v2\nname: apps\nversion: 0.1.0\n", "values.yaml": LEAF_VALUES}
    files = {f"charts/apps/{k}": v for k, v in {**leaf, "templates/apps.yaml": APPS}.items()}
    return chart_with(root, "suite", {"values.yaml": values, **files})


def test_an_umbrella_asking_through_a_leaf_with_ranges_gets_the_leaf_rewritten(tmp_path: Path) -> None:
    """The umbrella's values give the leaf's container its device: the leaf gets the gathered `resourceClaims`, the
    umbrella's values-dra.yaml the claims, proven (L) and (D)."""
    chart = umbrella(tmp_path, UMBRELLA_LIMITS)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert "$container.resourceClaims" in (chart / "charts/apps/templates/apps.yaml").read_text()
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert [n for n, pod in pods.items() if pod.get("resourceClaims")] == ["release-name-server"]
    assert list(counts.values()) == [1]


UMBRELLA_REQUESTS = UMBRELLA_LIMITS.replace(
    "          resources:\n",
    "          resources:\n            requests:\n              cpu: 1\n              nvidia.com/gpu: 1\n",
)


def _main_resources(pods: dict[str, Any]) -> dict[str, Any]:
    return pods["release-name-server"]["containers"][0]["resources"]


@pytest.mark.parametrize("limit", [2, 4])
def test_an_umbrella_device_request_its_leaf_does_not_set_is_dropped_by_the_leafs_template(
    tmp_path: Path, limit: int
) -> None:
    """The umbrella's values.yaml alone sets a device request under the leaf's values, which sets only the limit:
    values-dra.yaml's null for it reaches the leaf (Helm keeps a null for a key the leaf's own values.yaml does not
    set), so the leaf's template deletes null keys before it writes the map; proven (L) and (D), the DRA render has
    no device key left and keeps the cpu request, and the leaf installed alone with a limit its user sets renders as
    before (its values.yaml is not given the request). Was: manual work, naming the null Helm keeps."""
    chart = umbrella(tmp_path, UMBRELLA_REQUESTS)
    leaf = chart / "charts/apps"
    key = "applicationSpecs.server.containers.main.resources.limits.nvidia\\.com/gpu"
    alone = RenderOptions(set_values=(f"{key}={limit}",))
    before = render_chart(leaf, alone)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert render_chart(leaf, alone) == before
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert _main_resources(pods) == {"limits": {"cpu": 2}, "requests": {"cpu": 1}, "claims": [{"name": "gpu"}]}
    assert list(counts.values()) == [1]


def test_an_umbrella_device_key_its_leaf_has_no_limit_for_is_dropped_by_the_leafs_template(tmp_path: Path) -> None:
    """The leaf's values.yaml sets no device key at all: the umbrella's values-dra.yaml nulls both, Helm keeps both
    nulls in the leaf's values, and the leaf's template deletes them; the cpu request beside them stays."""
    chart = umbrella(tmp_path, UMBRELLA_REQUESTS)
    leaf = chart / "charts/apps/values.yaml"
    leaf.write_text(leaf.read_text().replace("nvidia.com/gpu: 1", "cpu: 1"))
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, _, pods = dra_render(chart, chart / "values-dra.yaml")
    assert "nvidia.com/gpu" not in str(_main_resources(pods))
    assert _main_resources(pods)["requests"] == {"cpu": 1}


# one Deployment per entry of a values list (llama-swap style model lists); a GPU model and a CPU model
MODELS = """\
{{- range $model := .Values.models }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ $model.name }}
spec:
  selector:
    matchLabels: {app: {{ $model.name }}}
  template:
    metadata:
      labels: {app: {{ $model.name }}}
    spec:
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml $model.resources | nindent 12 }}
{{- end }}
"""
MODEL_VALUES = """\
models:
  - name: big
    resources:
      requests:
        nvidia.com/gpu: 1
      limits:
        nvidia.com/gpu: 1
  - name: small
    resources:
      limits:
        cpu: 2
"""


def test_a_map_in_an_item_of_a_values_list_gets_a_values_file_holding_the_whole_list(tmp_path: Path) -> None:
    """The device key is in an item of a values list: values-dra.yaml gives the list whole (Helm replaces lists),
    its device keys dropped and claims added, and only the GPU model's pod gets claims (was: internal error,
    IndexError in the values overlay)."""
    chart = chart_with(tmp_path, "models", {"values.yaml": MODEL_VALUES, "templates/models.yaml": MODELS})
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert [n for n, pod in pods.items() if pod.get("resourceClaims")] == ["release-name-big"]
    assert list(counts.values()) == [1]
