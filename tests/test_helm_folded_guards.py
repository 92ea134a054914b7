"""The `if not .Values.dra.enabled` guards the rewrite puts around device keys, folded where the chart holds the key
under an `if` of its own or one branch per vendor (transcript-create's worker: `if .Values.worker.gpu.enabled`, then
`if eq .Values.worker.gpu.type "nvidia"` / `else if ... "amd"`, in requests and in limits): the chart's own `if`
takes the switch, `and .Values.gpu.enabled (not .Values.dra.enabled)`, instead of a guard in each branch (was:
eight more lines in the template). Renders are real; the proof holds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

WORKER = deployment(
    "worker",
    """\
      containers:
        - name: worker
          image: example/worker
          resources:
            requests:
              cpu: 1
              {{- if .Values.gpu.enabled }}
              {{- if eq .Values.gpu.type "nvidia" }}
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- else if eq .Values.gpu.type "amd" }}
              amd.com/gpu: {{ .Values.gpu.count }}
              {{- end }}
              {{- end }}
            limits:
              cpu: 2
              {{- if .Values.gpu.enabled }}
              {{- if eq .Values.gpu.type "nvidia" }}
              nvidia.com/gpu: {{ .Values.gpu.count }}
              {{- else if eq .Values.gpu.type "amd" }}
              amd.com/gpu: {{ .Values.gpu.count }}
              {{- end }}
              {{- end }}
""",
)
VALUES = "gpu:\n  enabled: true\n  type: nvidia\n  count: 1\n"


def _texts(chart: Path, sets: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(set_values=sets))]


def test_the_chart_own_if_takes_the_switch_instead_of_a_guard_per_branch(tmp_path: Path) -> None:
    original = chart_with(tmp_path / "original", "worker", {"templates/worker.yaml": WORKER, "values.yaml": VALUES})
    chart = shutil.copytree(original, tmp_path / "fixed" / "worker")
    fix_chart(chart)
    written = (chart / "templates/worker.yaml").read_text()
    assert not re.search(r"\{\{- if not \.Values\.dra\.enabled \}\}", written)
    assert written.count("{{- if and .Values.gpu.enabled (not .Values.dra.enabled) }}") == 2
    for sets in ((), ("gpu.type=amd",), ("gpu.enabled=false",)):
        assert _texts(chart, ("dra.enabled=false", *sets)) == _texts(original, sets)
        on = "".join(text for _, text in _texts(chart, sets))
        assert "nvidia.com/gpu:" not in on and "amd.com/gpu:" not in on


def _server(count: str) -> str:
    return deployment(
        "server",
        f"""\
      containers:
        - name: server
          image: example/server
          resources:
            limits:
              nvidia.com/gpu: {count}
""",
    )


def test_the_container_claims_and_its_device_key_are_one_if_else(tmp_path: Path) -> None:
    """A container whose `resources:` holds only the device key got its claims under one `if` and the key under
    another, `if not .Values.dra.enabled`, four lines of actions; now one chain of three: `else` where the claims'
    condition is the switch alone (a literal count), `else if not` the switch where it also reads the count (a count of
    0 renders neither). Renders with the switch off stay the chart's."""
    files = {
        "templates/server.yaml": _server("{{ .Values.gpus }}"),
        "templates/sidecar.yaml": _server("1").replace("server", "sidecar"),
        "values.yaml": "gpus: 2\n",
    }
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    fix_chart(chart)
    server, sidecar = ((chart / "templates" / f"{n}.yaml").read_text() for n in ("server", "sidecar"))
    assert "{{- if not .Values.dra.enabled }}" not in server + sidecar
    assert re.search(r"claims:\n +- name: gpu\n +\{\{- else if not \.Values\.dra\.enabled \}\}\n +limits:", server)
    assert re.search(r"claims:\n +- name: gpu\n +\{\{- else \}\}\n +limits:", sidecar)
    for sets in ((), ("gpus=0",), ("gpus=3",)):
        assert _texts(chart, ("dra.enabled=false", *sets)) == _texts(original, sets)
    for sets, claimed in (((), 2), (("gpus=0",), 0)):
        docs = [yaml.safe_load(text) for _, text in _texts(chart, sets)]
        pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
        assert all("limits" not in (p["containers"][0]["resources"] or {}) for p in pods.values()), sets
        assert bool(pods["server"].get("resourceClaims")) == bool(claimed), sets
        assert pods["sidecar"]["resourceClaims"], sets
