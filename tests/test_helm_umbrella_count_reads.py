"""An umbrella chart whose subchart reads the device count itself (castai's hosted-model umbrella: its sglang
subchart fails a multi-node render unless `resources.limits."nvidia.com/gpu"` holds the per-node GPU count, read
inside `with .Values.resources`/`with .limits`). The DRA values drop that key, so the subchart's read is assigned
again from `deviceCounts` beside its map (the umbrella's `engine.deviceCounts`), which they set to the count the
claim asks for.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import TOYAML_SERVER, chart_with, dra_render, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

T136 = Target.parse("1.36")

CHECK = """\
{{- define "engine.validate" -}}
{{- $gpu := "" -}}
READ
{{- if not $gpu -}}
{{- fail "multi-node needs resources.limits.\\"nvidia.com/gpu\\" set to the GPUs of each node" -}}
{{- end -}}
{{- end }}
"""
UMBRELLA = """\
apiVersion: v2
name: hosted
version: 1.0.0
dependencies:
  - name: engine
    version: 0.1.0
    repository: file://../engine
"""
NODES = "engine:\n  multiNode: true\n  resources:\n    limits:\n      nvidia.com/gpu: 8\n"
WITHS = "{{- with .Values.resources -}}{{- with .limits -}}"
READ = WITHS + '{{- $gpu = index . "nvidia.com/gpu" -}}{{- end -}}{{- end -}}'
TESTED = WITHS + '{{- if hasKey . "nvidia.com/gpu" -}}{{- $gpu = "set" -}}{{- end -}}{{- end -}}{{- end -}}'


SERVER = TOYAML_SERVER


def umbrella_with(root: Path, read: str) -> tuple[Path, Path]:
    """root/hosted, which takes root/engine (its check reading the count with `read`) from file://../engine, unpacked
    in its charts/ as `helm dependency build` leaves it; and root/nodes.yaml, 8 GPUs on each of its nodes."""
    files = {
        "values.yaml": "multiNode: false\nresources: {}\n",
        "templates/server.yaml": '{{- if .Values.multiNode }}{{ include "engine.validate" . }}{{ end }}\n' + SERVER,
        "templates/_helpers.tpl": CHECK.replace("READ", read),
    }
    engine = chart_with(root, "engine", files)
    umbrella = root / "hosted"
    (umbrella / "charts").mkdir(parents=True)
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text("engine:\n  multiNode: false\n")
    shutil.copytree(engine, umbrella / "charts" / "engine")
    nodes = root / "nodes.yaml"
    nodes.write_text(NODES)
    return umbrella, nodes


def test_a_subcharts_own_count_check_passes_with_the_dra_values(tmp_path: Path) -> None:
    """fix proves the umbrella run and its DRA variant renders the claim for the 8 GPUs through the subchart's check;
    without a count the check still fails (was: manual, "the rewritten chart does not render: ... multi-node needs
    resources.limits")."""
    umbrella, nodes = umbrella_with(tmp_path, READ)
    fix_chart(umbrella, "1.36", (nodes,))
    _, counts, pods = dra_render(umbrella, tmp_path / "nodes-dra.yaml")
    (server,) = pods["release-name-server"]["containers"]
    assert server["resources"] == {"claims": [{"name": "gpu"}]} and list(counts.values()) == [8], (server, counts)
    with pytest.raises(HelmError, match="set to the GPUs of each node"):
        render_chart(umbrella, RenderOptions(set_values=("engine.multiNode=true",)))


def test_a_subcharts_check_fix_cannot_repeat_is_named_by_its_line(tmp_path: Path) -> None:
    """A subchart check that tests the device key inside `with`s of its map (no assignment fix can repeat): the DRA
    values cannot satisfy it, and the manual work names the subchart's line that reads the key (was: only Helm's
    message, the line never named)."""
    umbrella, nodes = umbrella_with(tmp_path, TESTED)
    outcome = run_chart(umbrella, ChartOptions(values_files=(nodes,)), load_rules(), Settings(), T136, "fix")
    assert not outcome.proven
    assert "charts/engine/templates/_helpers.tpl:3 reads " in outcome.manual, outcome.manual
