"""A pod that writes `tolerations:` twice, each in a `with` of the values list of its own (comfyui's chart: above its
containers and again after its volumes): where the list is set, the render has the key twice and the later one is the
pod's list. The rewrite put the DRA toleration into the first, which the later one hid, so with a user's list the
pod had no device toleration and fix refused the chart ("with every tolerations list of the values set ... renders
differently from the migrated original rendering"). The DRA entry now goes into the later key; keys in an `if` and
its `else` keep the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.tolerationedits import last_written_first

SERVER = deployment(
    "server",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: server
          image: server:1
          env:
            {{- if .Values.debug }}
            - name: DEBUG
              value: "1"
            {{- else }}
            - name: QUIET
              value: "1"
            {{- end }}
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
      volumes:
        - name: cache
          emptyDir: {}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = "gpus: 1\ndebug: false\ntolerations: []\n"
USERS = "tolerations:\n  - key: example.com/pool\n    operator: Exists\n    effect: NoSchedule\n"


def _pod(chart: Path, files: tuple[Path, ...] = (), sets: tuple[str, ...] = ()) -> dict[str, Any]:
    stream = "".join(
        f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=files, set_values=sets))
    )
    (server,) = [d for d in yaml.safe_load_all(stream) if d and d.get("kind") == "Deployment"]
    return server["spec"]["template"]["spec"]


def test_the_dra_toleration_goes_into_the_later_of_two_tolerations_keys(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "twice", {"templates/d.yaml": SERVER, "values.yaml": VALUES})
    users = tmp_path / "users.yaml"
    users.write_text(USERS)

    fix_chart(chart)  # was: refused (the DRA toleration in the key the later one hides)

    pod = _pod(chart, (users,), ("dra.enabled=true",))
    assert [t["key"] for t in pod["tolerations"]] == ["example.com/pool", "nvidia.com/gpu"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert [t["key"] for t in _pod(chart, (), ("dra.enabled=true",))["tolerations"]] == ["nvidia.com/gpu"]
    assert [t["key"] for t in _pod(chart, (users,), ("dra.enabled=false",))["tolerations"]] == ["example.com/pool"]


def test_keys_in_an_if_and_its_else_keep_their_order() -> None:
    lines = [
        "{{- if .Values.spot }}",
        "tolerations:",
        "  - key: spot",
        "{{- else }}",
        "tolerations:",
        "  - key: regular",
        "{{- end }}",
    ]
    assert last_written_first(lines, [1, 4]) == [1, 4]
    blocks = ["{{- with .Values.a }}", "tolerations: {{ toYaml . }}", "{{- end }}", "tolerations:", "  - key: b"]
    assert last_written_first(blocks, [1, 3]) == [3, 1]
