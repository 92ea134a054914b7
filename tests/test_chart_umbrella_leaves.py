"""An umbrella chart whose device requests come from several subcharts, each with a literal device key and a
values count (pattern A): one fix rewrites every leaf behind its own `<subchart>.dra.enabled` and proves them
together by rendering the umbrella.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

LEAF = """\
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
            limits:
              {device}
"""
GPU = "nvidia.com/gpu: {{ .Values.gpus }}"
UMBRELLA = """\
apiVersion: v2
name: assistant
version: 1.2.0
dependencies:
  - name: embed
    version: 0.1.0
    repository: file://charts/embed
  - name: infer
    version: 0.1.0
    repository: file://charts/infer
"""


def _umbrella(root: Path, infer_device: str = GPU) -> Path:
    """root/assistant with two vendored leaves, embed and infer, whose GPU counts the umbrella's values set."""
    umbrella = chart_with(root, "assistant", {"values.yaml": "embed:\n  gpus: 1\ninfer:\n  gpus: 2\n"})
    (umbrella / "Chart.yaml").write_text(UMBRELLA)
    for name, device in (("embed", GPU), ("infer", infer_device)):
        template = LEAF.format(name=name, device=device)
        chart_with(umbrella / "charts", name, {"values.yaml": "gpus: 0\n", "templates/deployment.yaml": template})
    return umbrella


def _docs(chart: Path, *sets: str) -> list[dict[str, Any]]:
    manifests = render_chart(chart, RenderOptions(set_values=sets))
    return [d for m in manifests for d in yaml.safe_load_all(m.text) if d]


def _fix(chart: Path) -> Any:
    settings = Settings(kube_version="1.36", opt_in=True)
    return run_chart(chart, ChartOptions(), load_rules(), settings, Target.parse("1.36"), "fix")


def test_every_leaf_of_an_umbrella_is_rewritten_and_proven_in_one_run(tmp_path: Path) -> None:
    """Was: manual, "the device requests come from several charts (charts/embed, charts/infer): run fix on each".
    Now both leaves take the switch; off, the umbrella renders as before; on, each pod asks for its GPUs through a
    claim; the umbrella's version is bumped once."""
    umbrella = _umbrella(tmp_path)
    before = _docs(umbrella)
    outcome = _fix(umbrella)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _docs(umbrella) == before
    assert yaml.safe_load((umbrella / "Chart.yaml").read_text())["version"] == "1.2.1"
    on = _docs(umbrella, "embed.dra.enabled=true", "infer.dra.enabled=true")
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in on if d["kind"] == "Deployment"}
    assert "nvidia.com/gpu" not in str([p["containers"] for p in pods.values()]), pods
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in on
        if d["kind"] == "ResourceClaimTemplate"
    }
    asked = {name: counts[pod["resourceClaims"][0]["resourceClaimTemplateName"]] for name, pod in pods.items()}
    assert asked == {"release-name-embed": 1, "release-name-infer": 2}, asked


def test_a_leaf_the_rewrite_does_not_take_is_named(tmp_path: Path) -> None:
    """One leaf writes its device key from a range, in an `if` of its own (a shape keyedmap.py does not take): fix
    names that subchart and its line, and writes nothing (was: "run fix on each", though fix on that leaf would not
    do it either)."""
    ranged = (
        "{{- range $k, $v := .Values.devices }}\n              {{- if $v }}\n              {{ $k }}: {{ $v }}\n"
        "              {{- end }}\n              {{- end }}"
    )
    umbrella = _umbrella(tmp_path, ranged)
    (umbrella / "values.yaml").write_text("embed:\n  gpus: 1\ninfer:\n  devices:\n    nvidia.com/gpu: 2\n")
    outcome = _fix(umbrella)
    assert not outcome.proven and not outcome.changes
    assert outcome.manual.startswith("charts/infer: templates/deployment.yaml:"), outcome.manual


def test_a_subchart_the_values_leave_off_is_rewritten_beside_the_one_they_turn_on(tmp_path: Path) -> None:
    """peoplemesh: the user's values turn on the leaf with a literal key (embed) and leave off, by its dependency
    condition, a leaf that passes its values resources map through (serve), which the proof turns on. Was manual
    work ("with serve.enabled flipped to true and the DRA switch on, the rewritten chart renders differently from
    the migrated original rendering": serve's pod kept its device-plugin request); now serve takes the pass-through
    too, values-dra.yaml migrates its map for when it is turned on, and both renders prove."""
    umbrella = _umbrella(tmp_path)
    chart = yaml.safe_load(UMBRELLA)
    chart["dependencies"][1] = {"name": "serve", "version": "0.1.0", "repository": "file://charts/serve"}
    chart["dependencies"][1]["condition"] = "serve.enabled"
    (umbrella / "Chart.yaml").write_text(yaml.safe_dump(chart, sort_keys=False))
    (umbrella / "charts" / "infer").rename(umbrella / "charts" / "serve")
    serve = umbrella / "charts" / "serve"
    (serve / "Chart.yaml").write_text((serve / "Chart.yaml").read_text().replace("infer", "serve"))
    template = LEAF.format(name="serve", device="").replace(
        "          resources:\n            limits:\n              \n",
        "          resources:\n            {{- toYaml .Values.resources | nindent 12 }}\n",
    )
    (serve / "templates" / "deployment.yaml").write_text(template)
    (serve / "values.yaml").write_text("resources: {}\n")
    values = "embed:\n  gpus: 1\nserve:\n  enabled: false\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n"
    (umbrella / "values.yaml").write_text(values)
    before, served = _docs(umbrella), _docs(umbrella, "serve.enabled=true")
    outcome = _fix(umbrella)
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert (_docs(umbrella), _docs(umbrella, "serve.enabled=true")) == (before, served)
    dra = RenderOptions(values_files=(umbrella / "values-dra.yaml",), set_values=("serve.enabled=true",))
    on = [d for m in render_chart(umbrella, dra) for d in yaml.safe_load_all(m.text) if d]
    pod = next(d for d in on if d["metadata"]["name"] == "release-name-serve")["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    (claim,) = pod["resourceClaims"]
    spec = next(d for d in on if d["metadata"]["name"] == claim["resourceClaimTemplateName"])["spec"]["spec"]
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2
