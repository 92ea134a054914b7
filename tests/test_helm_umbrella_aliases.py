"""An umbrella chart that uses one subchart several times under aliases (speechmatics' sm-realtime: its sm-gpu chart
six times, one per recipe), each alias given GPUs through the subchart's values resources map (pattern B/C). Each
alias renders its own copy of the subchart's templates, the new claim-template file too: the claim templates are
named after the alias, else the copies render one name several times. The subchart writes its tolerations item by
item (`range $t := .`, `- key: {{ $t.key }}` ...): the DRA toleration joins that list, not a second `tolerations:`
key beside it.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

SERVER = deployment(
    "{{ .Release.Name }}-{{ .Chart.Name }}",
    """\
      {{- with .Values.server.tolerations }}
      tolerations:
      {{- range $t := . }}
        - key: {{ $t.key }}
          operator: {{ $t.operator }}
          {{- with $t.value }}
          value: {{ . }}
          {{- end }}
          effect: {{ $t.effect }}
      {{- end }}
      {{- end }}
      containers:
        - name: server
          image: server:1
          {{- with .Values.server.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
""",
    app="{{ .Chart.Name }}",
)
SUBCHART_VALUES = """\
server:
  tolerations:
    - key: sku
      operator: Equal
      value: gpu
      effect: NoSchedule
  resources:
    limits:
      memory: 1Gi
"""
UMBRELLA = """\
apiVersion: v2
name: realtime
version: 1.0.0
dependencies:
  - name: gpu
    version: 0.1.0
    repository: file://../gpu
    alias: recipe1
  - name: gpu
    version: 0.1.0
    repository: file://../gpu
    alias: recipe2
"""
GPUS = """\
recipe1:
  server:
    resources:
      limits:
        memory: 1Gi
        nvidia.com/gpu: 1
recipe2:
  server:
    resources:
      limits:
        memory: 1Gi
        nvidia.com/gpu: 2
"""


def test_each_alias_of_a_subchart_gets_claim_templates_of_its_own(tmp_path: Path) -> None:
    """Was: manual, first "`tolerations:` is written twice in one mapping", then "ResourceClaimTemplate
    release-name-server-gpu-... is rendered 2 times"."""
    sub = chart_with(tmp_path / "src", "gpu", {"values.yaml": SUBCHART_VALUES, "templates/server.yaml": SERVER})
    umbrella = tmp_path / "realtime"
    (umbrella / "charts").mkdir(parents=True)
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text("{}\n")
    shutil.copytree(sub, umbrella / "charts" / "gpu")
    original = shutil.copytree(umbrella, tmp_path / "original")
    gpus = tmp_path / "gpus.yaml"
    gpus.write_text(GPUS)

    outcome = fix_chart(umbrella, "1.36", (gpus,))
    assert outcome.proven, outcome.report()

    def render(root: Path) -> list[str]:
        return [m.text for m in render_chart(root, RenderOptions(values_files=(gpus,)))]

    assert render(umbrella) == render(original)  # the device-plugin values render as before
    docs, counts, pods = dra_render(umbrella, tmp_path / "gpus-dra.yaml")
    assert len(counts) == 2 and sorted(counts.values()) == [1, 2], counts  # one template each, two names
    for alias, count in (("recipe1", 1), ("recipe2", 2)):
        pod = pods[f"release-name-{alias}"]
        (claim,) = pod["resourceClaims"]
        assert counts[claim["resourceClaimTemplateName"]] == count, (alias, claim, counts)
        assert pod["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}, "claims": [{"name": "gpu"}]}
        assert [t["key"] for t in pod["tolerations"]] == ["sku", "nvidia.com/gpu"], pod["tolerations"]
