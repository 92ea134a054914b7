"""An umbrella chart whose own templates ask for devices as well as a subchart's (included under an alias): one
fix rewrites each chart by its own pattern and proves them together by rendering the umbrella (was: manual, "the
device requests come from several charts (the chart itself, charts/infer): run fix on each").

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, dra_render

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}-{name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: {name}:1
          resources:
            {resources}
"""
LITERAL = "limits:\n              nvidia.com/gpu: {{ .Values.gpus }}"
PASSED = "{{- toYaml .Values.resources | nindent 12 }}"
UMBRELLA = """\
apiVersion: v2
name: assistant
version: 1.2.0
dependencies:
  - name: infer
    alias: llm
    version: 0.1.0
    repository: file://charts/infer
"""


def _umbrella(root: Path, resources: str, values: str, leaf_values: str) -> Path:
    """root/assistant, whose own Deployment and whose vendored subchart infer (alias llm) render `resources`."""
    umbrella = chart_with(root, "assistant", {"templates/ui.yaml": POD.format(name="ui", resources=resources)})
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    (umbrella / "values.yaml").write_text(values)
    infer = {"values.yaml": leaf_values, "templates/deployment.yaml": POD.format(name="infer", resources=resources)}
    chart_with(umbrella / "charts", "infer", infer)
    return umbrella


def _docs(chart: Path, *sets: str, values: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    options = RenderOptions(values_files=values, set_values=sets)
    return [d for m in render_chart(chart, options) for d in yaml.safe_load_all(m.text) if d]


def _fix(chart: Path, opt_in: bool, values: tuple[Path, ...] = ()) -> ChartOutcome:
    settings = Settings(kube_version="1.36", opt_in=opt_in)
    return run_chart(chart, ChartOptions(values_files=values), load_rules(), settings, Target.parse("1.36"), "fix")


def _asked(docs: list[dict[str, Any]]) -> dict[str, int]:
    """The GPUs each Deployment asks for through its claim template."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    assert "nvidia.com/gpu" not in json.dumps([p["containers"] for p in pods.values()]), pods
    return {name: counts[p["resourceClaims"][0]["resourceClaimTemplateName"]] for name, p in pods.items()}


def test_the_umbrella_and_its_subchart_each_take_a_switch(tmp_path: Path) -> None:
    """A literal device key in the umbrella's own template and in its subchart's (pattern A in both): each chart
    gets its own switch (`dra.enabled`, `llm.dra.enabled` under the alias), the report names both, off renders as
    before, on asks for each pod's GPUs through a claim; the umbrella's version is bumped once."""
    umbrella = _umbrella(tmp_path, LITERAL, "gpus: 1\nllm:\n  gpus: 2\n", "gpus: 0\n")
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=True)
    assert outcome.proven, outcome.report()
    assert "switches dra.enabled, llm.dra.enabled:" in outcome.report(), outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    assert yaml.safe_load((umbrella / "Chart.yaml").read_text())["version"] == "1.2.1"
    on = _docs(umbrella, "dra.enabled=true", "llm.dra.enabled=true")
    assert _asked(on) == {"release-name-ui": 1, "release-name-infer": 2}


def test_the_umbrella_and_its_subchart_both_pass_resources_through(tmp_path: Path) -> None:
    """`toYaml .Values.resources` in the umbrella's own template and in its subchart's (pattern B in both): one
    pass-through of both, the DRA values file puts the umbrella's claim template at the top and the subchart's
    under its alias `llm`, and each pod asks for its own GPUs."""
    umbrella = _umbrella(tmp_path, PASSED, "resources: {}\n", "resources: {}\n")
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("resources:\n  limits: {nvidia.com/gpu: 1}\nllm:\n  resources:\n    limits: {nvidia.com/gpu: 2}\n")
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=False, values=(gpu,))
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    variant = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert variant["resourceClaimTemplates"] and variant["llm"]["resourceClaimTemplates"], variant
    assert _asked(dra_render(umbrella, tmp_path / "gpu-dra.yaml")[0]) == {
        "release-name-ui": 1,
        "release-name-infer": 2,
    }


def test_one_subchart_included_under_two_aliases_takes_a_switch_under_each(tmp_path: Path) -> None:
    """The umbrella includes one subchart twice (`llm` and `embed`, each with its own GPU count): the subchart is
    rewritten once, its switch is set under each alias, and each pod asks for its own count (was: manual, "the
    subchart charts/infer is used under several names")."""
    umbrella = chart_with(tmp_path, "assistant", {"values.yaml": "llm:\n  gpus: 2\nembed:\n  gpus: 1\n"})
    (umbrella / "Chart.yaml").write_text(UMBRELLA + "  - name: infer\n    alias: embed\n    version: 0.1.0\n")
    named = POD.format(name="infer", resources=LITERAL).replace("}}-infer", "}}-{{ .Chart.Name }}")
    chart_with(umbrella / "charts", "infer", {"values.yaml": "gpus: 0\n", "templates/deployment.yaml": named})
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=True)
    assert outcome.proven, outcome.report()
    assert "switches embed.dra.enabled, llm.dra.enabled:" in outcome.report(), outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    on = _docs(umbrella, "llm.dra.enabled=true", "embed.dra.enabled=true")
    assert _asked(on) == {"release-name-llm": 2, "release-name-embed": 1}


def test_a_subchart_of_a_subchart_takes_its_switch_under_both_keys(tmp_path: Path) -> None:
    """The device request comes from charts/platform/charts/infer (the umbrella's subchart has its own subchart):
    the switch is `platform.infer.dra.enabled`, the key path the umbrella's values reach it by (was: manual)."""
    umbrella = chart_with(tmp_path, "assistant", {"values.yaml": "platform:\n  infer:\n    gpus: 2\n"})
    (umbrella / "Chart.yaml").write_text(UMBRELLA.replace("infer", "platform").replace("alias: llm", "alias: platform"))
    platform = chart_with(umbrella / "charts", "platform", {"values.yaml": "{}\n"})
    leaf = {"values.yaml": "gpus: 0\n", "templates/deployment.yaml": POD.format(name="infer", resources=LITERAL)}
    chart_with(platform / "charts", "infer", leaf)
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=True)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    assert _asked(_docs(umbrella, "platform.infer.dra.enabled=true")) == {"release-name-infer": 2}


def test_a_literal_key_in_the_umbrella_beside_a_map_its_subchart_passes_through(tmp_path: Path) -> None:
    """The umbrella's own template writes the device key (A), its subchart passes `resources` through (B): the
    umbrella's template takes `dra.enabled`, the subchart the pass-through with its claims under `llm` in the DRA
    values file, proven together; the report names the switch (was: manual, "the device requests come from several
    charts")."""
    umbrella = _umbrella(tmp_path, LITERAL, "gpus: 1\n", "resources: {}\n")
    (umbrella / "charts" / "infer" / "templates" / "deployment.yaml").write_text(
        POD.format(name="infer", resources=PASSED)
    )
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("llm:\n  resources:\n    limits: {nvidia.com/gpu: 2}\n")
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=True, values=(gpu,))
    assert outcome.proven, outcome.report()
    assert "switch dra.enabled: off by default" in outcome.report(), outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    variant = yaml.safe_load((tmp_path / "gpu-dra.yaml").read_text())
    assert list(variant) == ["llm"] and variant["llm"]["resourceClaimTemplates"], variant
    on = _docs(umbrella, "dra.enabled=true", values=(tmp_path / "gpu-dra.yaml",))
    assert _asked(on) == {"release-name-ui": 1, "release-name-infer": 2}


def test_a_map_a_subchart_of_a_subchart_passes_through_gets_its_claims_under_both_keys(tmp_path: Path) -> None:
    """charts/platform/charts/infer passes `resources` through and the umbrella's values.yaml asks for its GPUs
    under `platform.infer`: values-dra.yaml puts the claims there too (was: manual, "the subchart
    charts/platform/charts/infer is used under several names ()")."""
    values = "platform:\n  infer:\n    resources:\n      limits: {nvidia.com/gpu: 2}\n"
    umbrella = chart_with(tmp_path, "assistant", {"values.yaml": values})
    (umbrella / "Chart.yaml").write_text(UMBRELLA.replace("infer", "platform").replace("alias: llm", "alias: platform"))
    platform = chart_with(umbrella / "charts", "platform", {"values.yaml": "{}\n"})
    leaf = {"values.yaml": "resources: {}\n", "templates/deployment.yaml": POD.format(name="infer", resources=PASSED)}
    chart_with(platform / "charts", "infer", leaf)
    before = _docs(umbrella)
    outcome = _fix(umbrella, opt_in=False)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    overlay = yaml.safe_load((umbrella / "values-dra.yaml").read_text())
    assert overlay["platform"]["infer"]["resourceClaimTemplates"], overlay
    assert _asked(_docs(umbrella, values=(umbrella / "values-dra.yaml",))) == {"release-name-infer": 2}
