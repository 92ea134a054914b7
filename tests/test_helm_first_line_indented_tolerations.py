"""A chart that tolerates the GPU's taint itself, then appends the values' tolerations with `  {{ toYaml . | indent 6
}}` (aws-samples' triton LWS chart): `indent` does not add the two blanks before the action to an item's later lines,
so a user's item of several lines ends the list there. The rewrite's DRA entry (the EFA NIC's toleration) after it
did not parse: with a user's list tolerating the GPU's taint and the switch on, Helm failed ("YAML parse error"), and
the proof, which counted the chart's own GPU entry as the user's, refused the chart. The DRA branch now writes the
user's list whole; with the switch off it renders as before, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

LWS = deployment(
    "server",
    """\
      containers:
      - name: server
        image: triton
        resources:
          limits:
            nvidia.com/gpu: {{ .Values.gpus }}
            vpc.amazonaws.com/efa: {{ .Values.efa }}
      tolerations:
      - effect: NoSchedule
        key: nvidia.com/gpu
        operator: Exists
  {{-   with .Values.kubernetes }}
  {{-     with .tolerations }}
  {{        toYaml . | indent 4 }}
  {{-     end }}
  {{-   end }}
      volumes:
      - name: shm
        emptyDir: {}
""",
)
VALUES = "gpus: 4\nefa: 1\nkubernetes:\n  tolerations: []\n"
USERS = "kubernetes:\n  tolerations:\n  - key: example.com/pool\n    operator: Exists\n    effect: NoSchedule\n"


def _pod(chart: Path, files: tuple[Path, ...], sets: tuple[str, ...] = ()) -> dict[str, Any]:
    stream = "".join(
        f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=files, set_values=sets))
    )
    (server,) = [d for d in yaml.safe_load_all(stream) if d and d.get("kind") == "Deployment"]
    return server["spec"]["template"]["spec"]


def test_the_dra_branch_writes_a_users_list_of_several_lines_whole(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "lws", {"templates/d.yaml": LWS, "values.yaml": VALUES})
    users = tmp_path / "users.yaml"
    users.write_text(USERS)

    fix_chart(chart)  # was: refused ("with every tolerations list ... the rewritten chart does not render")

    pod = _pod(chart, (users,), ("dra.enabled=true",))  # was: YAML parse error
    assert pod["resourceClaims"]
    assert pod["tolerations"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "example.com/pool", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "vpc.amazonaws.com/efa", "operator": "Exists", "effect": "NoSchedule"},
    ]
    off = _pod(chart, (users,), ("dra.enabled=false",))  # as the original renders it: the item's later lines outside
    assert off["tolerations"][1] == {"effect": "NoSchedule"} and off["key"] == "example.com/pool"
