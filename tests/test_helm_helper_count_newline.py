"""Pattern A whose count is a helper's output (`nvidia.com/gpu: {{ include "x.gpus" . }}`) from a define that ends
in a newline (`{{ .Values.gpus }}` then `{{ end }}`, no dash): YAML reads the rendered `2` and the migration claims
2 GPUs, while `int` of "2\\n" is 0. The DRA branch's gate and the claim's count read the helper's output trimmed.
Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

HELPERS = '{{- define "srv.gpus" -}}\n{{ .Values.gpus }}\n{{ end }}\n'
DEPLOYMENT = deployment(
    "server",
    """\
      containers:
        - name: server
          image: vllm
          resources:
            limits:
              nvidia.com/gpu: {{ include "srv.gpus" . }}
""",
)


def test_a_helper_count_ending_in_a_newline_is_the_claims_count(tmp_path: Path) -> None:
    files = {"templates/d.yaml": DEPLOYMENT, "templates/_helpers.tpl": HELPERS, "values.yaml": "gpus: 2\n"}
    chart = chart_with(tmp_path, "srv", files)
    fix_chart(chart)  # was manual: the DRA branch rendered no claim (`gt (int "2\n") 0` is false)
    on = tmp_path / "on.yaml"
    on.write_text("gpus: 3\n")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [3]
    assert pods["server"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
