"""A chart whose only template includes the defines of a subchart it pulls from its own repository (`file://../..`)
and whose pod define writes the container's resources whole from a values map but no pod resourceClaims: the
rewrite changes only the chart's own templates, so it is manual work. The message said only that the library has
"no place for the DRA claim"; it now says where each change by hand goes: the library's pod define and line, the
values map, the dependency's source, then the chart's values and its ResourceClaimTemplate."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD_DEFINE = (
    '{{- define "base.deployment" -}}\n'
    + deployment(
        "{{ .Release.Name }}",
        """\
      containers:
        - name: app
          image: app:1
          {{- with .Values.deployment.container.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
""",
        app="x",
    )
    + '{{- end }}\n{{- define "base.template" -}}\n{{ include "base.deployment" . }}\n{{- end }}\n'
)
RESOURCES_LINE = POD_DEFINE.splitlines().index("          resources:") + 1


def test_a_library_pod_without_claims_says_where_each_change_goes(tmp_path: Path) -> None:
    values = "deployment:\n  container:\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    chart = chart_with(
        tmp_path, "app", {"templates/app.yaml": '{{ include "base.template" . }}\n', "values.yaml": values}
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: base\n  version: 1.0.0\n"
        "  repository: file://../base\n"
    )
    chart_with(chart / "charts", "base", {"templates/deployment.yaml": POD_DEFINE}, version="1.0.0")

    outcome = run_chart(chart, ChartOptions(kube_version="1.34"), load_rules(), Settings(), Target.parse("1.34"), "fix")

    assert not outcome.changes
    for said in (
        "define base.deployment (charts/base/templates/deployment.yaml:1) writes the pod",
        f"resources whole from deployment.container.resources (line {RESOURCES_LINE})",
        "in the library's source (file://../base), render the pod's resourceClaims",
        "`helm dependency update`",
        "drop the device key from deployment.container.resources",
        "add the ResourceClaimTemplate in a template of the chart",
    ):
        assert said in outcome.manual, outcome.manual
