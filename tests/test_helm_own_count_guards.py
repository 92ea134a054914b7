"""Pattern A whose request and limit device keys each sit under `if` their own count (`if .Values.resources.requests.
gpu` around `"nvidia.com/gpu": {{ .Values.resources.requests.gpu }}`, the limit the same): the claim's count gate covers
those conditions, the limit is the claim's count, and a request that differs from its limit fails the render with
the DRA switch on. Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import HelmError

DEPLOYMENT = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            requests:
              cpu: {{ .Values.resources.requests.cpu | quote }}
              {{- if .Values.resources.requests.gpu }}
              "nvidia.com/gpu": {{ .Values.resources.requests.gpu }}
              {{- end }}
            limits:
              cpu: {{ .Values.resources.limits.cpu | quote }}
              {{- if .Values.resources.limits.gpu }}
              "nvidia.com/gpu": {{ .Values.resources.limits.gpu }}
              {{- end }}
""",
)
VALUES = "resources:\n  requests: {{cpu: 1, gpu: {request}}}\n  limits: {{cpu: 2, gpu: {limit}}}\n"
ON = "dra: {enabled: true}\n"


def test_keys_under_their_own_counts_take_the_limit_as_the_claim_count(tmp_path: Path) -> None:
    files = {"templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES.format(request=1, limit=1)}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)  # was manual: "the device keys sit under different conditions"
    guards = [
        line for line in (chart / "templates/resourceclaimtemplate.yaml").read_text().splitlines() if "fail" in line
    ]
    assert len(guards) == 2 and all(g.lstrip().startswith('{{- fail "') for g in guards)  # was: after its `if` (350)
    on = tmp_path / "on.yaml"
    on.write_text(VALUES.format(request=3, limit=3) + ON)
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [3] and "nvidia.com/gpu" not in str(pods["server"]["containers"])
    on.write_text(VALUES.format(request="null", limit=0) + ON)
    _, counts, pods = dra_render(chart, on)
    assert not counts and "tolerations" not in pods["server"]  # no device asked for: no claim, no toleration
    on.write_text(VALUES.format(request=2, limit=1) + ON)
    with pytest.raises(HelmError, match="request differs from its limit"):
        dra_render(chart, on)


ACCELERATOR = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              cpu: "2"
              {{- if and .Values.accelerator .Values.accelerator.max }}
              nvidia.com/gpu: '{{ .Values.accelerator.max }}'
              {{- end }}
            requests:
              cpu: "1"
              {{- if and .Values.accelerator .Values.accelerator.min }}
              nvidia.com/gpu: '{{ .Values.accelerator.min }}'
              {{- end }}
""",
)


ALONE = [("{min: '2', max: null}", 2), ("{min: null, max: '3'}", 3), ("null", None)]


@pytest.mark.parametrize(("accelerator", "count"), ALONE)
def test_request_and_limit_under_conditions_of_their_own_claim_what_renders(
    tmp_path: Path, accelerator: str, count: int | None
) -> None:
    """The request under `if and .Values.accelerator .Values.accelerator.min`, the limit under the same with `.max`
    (a model chart's accelerator min/max). Was manual work: "the device keys sit under different conditions". Now
    one claim whose count is what renders, as the migration of each rendering takes it: the limit's, else the
    request's alone; no accelerator renders no claim (and does not read the counts of a missing map)."""
    files = {"templates/deployment.yaml": ACCELERATOR, "values.yaml": "accelerator: {min: '1', max: '1'}\n"}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text(f"accelerator: {accelerator}\n{ON}")
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == ([count] if count else [])
    assert "nvidia.com/gpu" not in str(pods["server"]["containers"])
    assert ("resourceClaims" in pods["server"]) is bool(count)


def test_a_request_alone_under_its_own_count_is_claimed_with_its_count(tmp_path: Path) -> None:
    """With only the request's own `if` true the migration claims the request's count; the DRA branch used to fail
    the render ("differs from its limit") for an unset limit."""
    files = {"templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES.format(request=1, limit=1)}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text(VALUES.format(request=2, limit="null") + ON)
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2] and "nvidia.com/gpu" not in str(pods["server"]["containers"])


BLOCKS = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- if .Values.resources.requests }}
            requests:
              cpu: {{ .Values.resources.requests.cpu | quote }}
              nvidia.com/gpu: {{ .Values.resources.requests.gpu }}
            {{- end }}
            {{- if .Values.resources.limits }}
            limits:
              cpu: {{ .Values.resources.limits.cpu | quote }}
              nvidia.com/gpu: {{ .Values.resources.limits.gpu }}
            {{- end }}
""",
)


def test_whole_request_and_limit_blocks_under_their_own_ifs_keep_the_toleration_of_a_zero_count(
    tmp_path: Path,
) -> None:
    """`requests:` under `if .Values.resources.requests`, `limits:` under its own: a count of 0 still renders the key,
    and the migration adds the toleration for it (a pod of count 0 keeps it); the DRA branch gated the toleration
    by the count, so the proof's count-0 render differed and fix was refused with a message of `<not shown>`s."""
    files = {"templates/deployment.yaml": BLOCKS, "values.yaml": VALUES.format(request=1, limit=1)}
    chart = chart_with(tmp_path, "server", files)
    fix_chart(chart)
    on = tmp_path / "on.yaml"
    on.write_text(VALUES.format(request=0, limit=0) + ON)
    _, counts, pods = dra_render(chart, on)
    assert not counts and pods["server"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    on.write_text("resources: {requests: null, limits: null}\n" + ON)
    _, counts, pods = dra_render(chart, on)
    assert not counts and "tolerations" not in pods["server"]  # no key renders: no toleration
    on.write_text(VALUES.format(request=2, limit=2) + ON)
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [2] and "nvidia.com/gpu" not in str(pods["server"]["containers"])


INDEXED = deployment(
    "server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- if .Values.gpu.enabled }}
            limits:
              nvidia.com/gpu: {{ index .Values.gpu.resources.limits "nvidia.com/gpu" }}
            requests:
              nvidia.com/gpu: {{ index .Values.gpu.resources.requests "nvidia.com/gpu" }}
            {{- end }}
            {{- toYaml .Values.resources | nindent 12 }}
""",
)
INDEXED_VALUES = (
    "gpu:\n  enabled: {enabled}\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"
    "    requests:\n      nvidia.com/gpu: 1\nresources:\n  limits:\n    memory: 8Gi\n"
)


def test_a_request_unset_under_its_limit_fails_the_dra_render_as_the_api_server_refuses_the_original(
    tmp_path: Path,
) -> None:
    """testifysec's ollama chart: with the request unset the original renders `nvidia.com/gpu:` (no count), which
    the migration leaves as it is and the API server rejects; the rewrite's DRA branch fails that render with its
    request-unlike-limit message, and the proof takes that as the same refusal (was manual: "the rewritten chart
    does not render")."""
    files = {"templates/deployment.yaml": INDEXED, "values.yaml": INDEXED_VALUES.format(enabled="false")}
    chart = chart_with(tmp_path, "server", files)
    on_gpu = tmp_path / "gpu.yaml"
    on_gpu.write_text("gpu:\n  enabled: true\n")
    outcome = fix_chart(chart, values=(on_gpu,))
    assert any("unset (the limit alone asks for the device)" in c and "render fails" in c for c in outcome.checked)
    on = tmp_path / "on.yaml"
    on.write_text(INDEXED_VALUES.format(enabled="true") + ON)
    _, counts, pods = dra_render(chart, on)
    assert list(counts.values()) == [1] and "nvidia.com/gpu" not in str(pods["server"]["containers"])
    unlike = "gpu:\n  enabled: true\n  resources:\n    limits: {nvidia.com/gpu: 1}\n    requests: {nvidia.com/gpu: 2}\n"
    on.write_text(unlike + ON)
    with pytest.raises(HelmError, match="request differs from its limit"):
        dra_render(chart, on)
