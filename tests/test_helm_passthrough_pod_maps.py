"""The pass-through (patterns B and C) in a pod whose containers take different values resources maps: a container
rendered under an `if` of its own inside the pod (h2oGPT's vLLM server, in the h2oGPT pod with `stack.enabled`, else
in a Deployment of its own in the same template), and both maps asking for devices in one pod.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, dra_render, fix_chart, with_original

from dramigrate.helm.render import RenderOptions, render_chart

# the app pod, and the sidecar in it with `stack.enabled`; else the sidecar's own Deployment, in the same file
APP = deployment(
    "{{ .Release.Name }}-app",
    """\
      {{- with .Values.app.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        {{- if .Values.stack.enabled }}
        - name: sidecar
          image: sidecar:1
          resources:
            {{- toYaml .Values.sidecar.resources | nindent 12 }}
        {{- end }}
        - name: app
          image: app:1
          resources:
            {{- toYaml .Values.app.resources | nindent 12 }}
""",
)
SIDECAR = deployment(
    "{{ .Release.Name }}-sidecar",
    """\
      {{- with .Values.sidecar.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: sidecar
          image: sidecar:1
          resources:
            {{- toYaml .Values.sidecar.resources | nindent 12 }}
""",
)
FILES = {
    "values.yaml": "stack:\n  enabled: false\napp:\n  resources: {}\n  tolerations: []\n"
    "sidecar:\n  enabled: false\n  resources: {}\n  tolerations: []\n",
    "templates/deployment.yaml": APP
    + "---\n{{- if and .Values.sidecar.enabled (not .Values.stack.enabled) }}\n"
    + SIDECAR
    + "{{- end }}\n",
}
# the same with the containers as an indentless list (`- name:` at the column of `containers:`)
HEAD, ITEMS = APP.split("containers:\n")
INDENTLESS = {
    **FILES,
    "templates/deployment.yaml": FILES["templates/deployment.yaml"].replace(
        ITEMS, "".join(line[2:] if line.startswith("        ") else line for line in ITEMS.splitlines(True))
    ),
}
SIDECAR_GPUS = "sidecar:\n  enabled: true\n  resources:\n    limits:\n      nvidia.com/gpu: 2\n"


def test_a_container_under_its_own_if_gives_its_pod_no_claims_when_it_is_not_rendered(tmp_path: Path) -> None:
    """The sidecar's GPUs in its own Deployment: the app pod, whose sidecar container renders only with
    `stack.enabled`, gets no claims from the sidecar's map (was: its `resourceClaims` rendered in the app pod too,
    which proof D refused: manual)."""
    chart = chart_with(tmp_path, "stack", FILES)
    values = tmp_path / "gpu.yaml"
    values.write_text(SIDECAR_GPUS)
    fix_chart(chart, values=(values,))
    _, counts, pods = dra_render(chart, tmp_path / "gpu-dra.yaml")
    assert "resourceClaims" not in pods["release-name-app"], pods["release-name-app"]
    sidecar = pods["release-name-sidecar"]
    assert [c["name"] for c in sidecar["resourceClaims"]] == ["gpu"], sidecar
    assert sidecar["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}, sidecar
    assert list(counts.values()) == [2]


@pytest.mark.parametrize("files", [FILES, INDENTLESS], ids=["indented", "indentless"])
def test_two_maps_with_devices_in_one_pod_each_pass_their_claims_through(tmp_path: Path, files: dict[str, str]) -> None:
    """`stack.enabled` with GPUs in both maps: one pod takes both. Each map's `resourceClaims` sibling holds the claim
    its container names (the migration's one claim with a request per container), the pod renders it once, and the
    claim template asks for both counts (was: manual, "one pod takes several values resources maps"); the pod's
    claims go after its containers, an indentless list too."""
    chart = chart_with(tmp_path, "stack", files)
    values = tmp_path / "both.yaml"
    values.write_text(
        "stack:\n  enabled: true\napp:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n" + SIDECAR_GPUS[:-1] + "\n"
    )
    fix_chart(chart, values=(values,))
    out, _, pods = dra_render(chart, tmp_path / "both-dra.yaml")
    pod = pods["release-name-app"]
    assert "release-name-sidecar" not in pods
    (claim,) = pod["resourceClaims"]
    requests = {c["name"]: c["resources"]["claims"] for c in pod["containers"]}
    assert requests == {
        "sidecar": [{"name": claim["name"], "request": "sidecar-gpu"}],
        "app": [{"name": claim["name"], "request": "app-gpu"}],
    }, pod
    (template,) = [d for d in out if d["kind"] == "ResourceClaimTemplate"]
    assert template["metadata"]["name"] == claim["resourceClaimTemplateName"]
    asked = {r["name"]: r["exactly"]["count"] for r in template["spec"]["spec"]["devices"]["requests"]}
    assert asked == {"sidecar-gpu": 2, "app-gpu": 1}, asked
    assert [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu"], pod


# the chart's lists left empty (`tolerations:` with nothing after it, null: h2oGPT's), which a user's later file sets
NULL_LISTS = {
    **FILES,
    "values.yaml": FILES["values.yaml"].replace("  tolerations: []\n", "  tolerations:\n"),
}
POOL = "".join(f"{m}:\n  tolerations: [{{key: pool, operator: Exists}}]\n" for m in ("app", "sidecar"))
BOTH = "stack:\n  enabled: true\napp:\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n" + SIDECAR_GPUS


def _pods(chart: Path, *files: Path) -> dict[str, Any]:
    """Each Deployment's pod spec by name, the chart rendered with `files` in order."""
    given = tuple(x for f in files for x in with_original(f))  # a DRA overlay after its file
    docs = [d for m in render_chart(chart, RenderOptions(values_files=given)) for d in yaml.safe_load_all(m.text) if d]
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}


@pytest.mark.parametrize(
    ("gpus", "pod"), [(SIDECAR_GPUS, "release-name-sidecar"), (BOTH, "release-name-app")], ids=["own pod", "one pod"]
)
def test_empty_tolerations_keys_keep_the_gpu_toleration_after_a_users_list(tmp_path: Path, gpus: str, pod: str) -> None:
    """`tolerations:` left empty in the chart's values: a user's later file that sets the lists keeps the GPU
    toleration in the pod with the GPUs, the sidecar's own and the one pod that takes both maps, once (was: manual,
    the toleration in the DRA values' copy of the list, which the user's list replaced)."""
    chart = chart_with(tmp_path, "stack", NULL_LISTS)
    values = tmp_path / "gpu.yaml"
    values.write_text(gpus)
    fix_chart(chart, values=(values,))
    later = tmp_path / "pool.yaml"
    later.write_text(POOL)

    spec = _pods(chart, tmp_path / "gpu-dra.yaml", later)[pod]
    assert [t["key"] for t in spec["tolerations"]] == ["pool", "nvidia.com/gpu"], spec
    assert [t["key"] for t in _pods(chart, tmp_path / "gpu-dra.yaml")[pod]["tolerations"]] == ["nvidia.com/gpu"]
    assert [t["key"] for t in _pods(chart, values, later)[pod]["tolerations"]] == ["pool"]  # the values as they were
