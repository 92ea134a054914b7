"""Pattern A in a pod whose literal tolerations list sits inside the pod's own `if` block, together with other pod
keys (a chart that tolerates its dedicated pool's taints only for one workload class). The DRA toleration goes at
that list's end when the block renders, and into a list of its own when it does not: never a second
`tolerations:` key, never a pod without it. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

DEPLOYMENT = deployment(
    "svc",
    """\
      {{- if and (eq .Values.kind "batch") (gt (int .Values.gpu) 0) }}
      # batch pods run on the dedicated pool
      tolerations:
        - key: pool/dedicated
          operator: Exists
        {{- if .Values.spill }}
        - key: pool/shared
          operator: Exists
        {{- end }}
      nodeSelector:
        pool: dedicated
      {{- end }}
      containers:
        - name: svc
          image: svc
          resources:
            limits:
              memory: 1Gi
              {{- if gt (int .Values.gpu) 0 }}
              nvidia.com/gpu: {{ .Values.gpu }}
              {{- end }}
""",
)
VALUES = "kind: web\ngpu: 0\nspill: true\n"


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("podif")
    chart = chart_with(root, "svc", {"templates/d.yaml": DEPLOYMENT, "values.yaml": VALUES})
    batch = root / "batch.yaml"
    batch.write_text("kind: batch\ngpu: 2\n")
    # was: manual, "templates/d.yaml:12: pattern F: the pod's tolerations have a shape the rewrite does not merge into"
    return chart, fix_chart(chart, values=(batch,))


def tolerated(chart: Path, values: str) -> list[str]:
    on = chart.parent / "on.yaml"
    on.write_text(f"dra: {{enabled: true}}\n{values}")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2]
    assert "nvidia.com/gpu" not in str(pods["svc"]["containers"][0]["resources"])
    return [t["key"] for t in pods["svc"].get("tolerations") or []]


def test_the_toleration_goes_at_the_end_of_the_pods_own_list(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    assert tolerated(chart, "kind: batch\ngpu: 2\n") == ["pool/dedicated", "pool/shared", "nvidia.com/gpu"]
    assert tolerated(chart, "kind: batch\ngpu: 2\nspill: false\n") == ["pool/dedicated", "nvidia.com/gpu"]


def test_a_pod_outside_the_block_gets_a_list_of_its_own(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    text = (chart / "templates" / "d.yaml").read_text()
    assert text.count("tolerations:") == 2
    assert tolerated(chart, "kind: web\ngpu: 2\n") == ["nvidia.com/gpu"]


def test_the_switch_off_keeps_the_pods_own_list(fixed: tuple[Path, Any]) -> None:
    chart, _ = fixed
    off = chart.parent / "off.yaml"
    off.write_text("dra: {enabled: false}\nkind: batch\ngpu: 2\n")
    _, counts, pods = dra_render(chart, off)
    assert counts == {}
    assert [t["key"] for t in pods["svc"]["tolerations"]] == ["pool/dedicated", "pool/shared"]
