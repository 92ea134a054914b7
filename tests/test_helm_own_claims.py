"""A pod's own claims (in the template, or from values) beside the idiomatic rewrite's claim: the rewrite's claim takes
a name they leave free, as the migration does (`gpu`, else `gpu-2`...), and joins the pod's and the container's own
lists (a second `claims:` key in one container is invalid). Renders are real (the Helm engine in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

# the pod's own claim, written by the template, named as the migration names its GPU claim
LITERAL = deployment(
    "infer",
    """\
      resourceClaims:
        - name: gpu
          resourceClaimName: shared-nic
      containers:
        - name: infer
          image: infer:1
          resources:
            claims:
              - name: gpu
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
)

# the pod's claims and the container's from values lists
FROM_VALUES = deployment(
    "infer",
    """\
      {{- with .Values.resourceClaims }}
      resourceClaims:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: infer
          image: infer:1
          resources:
            {{- with .Values.claims }}
            claims:
              {{- toYaml . | nindent 14 }}
            {{- end }}
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
""",
)
USERS_GPU = "resourceClaims:\n  - name: gpu\n    resourceClaimName: shared-nic\nclaims:\n  - name: gpu\n"


def _pod(chart: Path, values: str) -> dict[str, Any]:
    """The Deployment's pod spec rendered with `values` (text)."""
    file = chart.parent / "given.yaml"
    file.write_text(values)
    docs = [d for m in render_chart(chart, RenderOptions(values_files=(file,))) for d in _docs(m.text)]
    return next(d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment")


def _docs(text: str) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(text) if d]


def test_a_claim_the_template_names_gpu_gets_the_dra_claim_beside_it_as_gpu_2(tmp_path: Path) -> None:
    """Was manual: 'the migration gives this pod several claims' (the pod's own counted as the migration's)."""
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": LITERAL, "values.yaml": "gpus: 1\n"})
    fix_chart(chart)
    pod = _pod(chart, "gpus: 2\n")
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu", "gpu-2"]
    assert pod["resourceClaims"][0] == {"name": "gpu", "resourceClaimName": "shared-nic"}
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}, {"name": "gpu-2"}]}
    off = _pod(chart, "dra: {enabled: false}\n")
    assert off["containers"][0]["resources"] == {"claims": [{"name": "gpu"}], "limits": {"nvidia.com/gpu": 1}}


def test_a_users_claim_from_values_named_gpu_leaves_the_dra_claim_another_name(tmp_path: Path) -> None:
    """The values lists empty by default: was, the DRA claim was `gpu` whatever the user's claims, so a user's claim
    named `gpu` gave the pod two claims of one name and the container two `claims:` keys. The proof now renders
    claims named as the migration names its own in each resourceClaims value."""
    values = "gpus: 1\nresourceClaims: []\nclaims: []\n"
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": FROM_VALUES, "values.yaml": values})
    outcome = fix_chart(chart)
    assert any(c.startswith("every resourceClaims list of the values set to claims named") for c in outcome.checked)
    pod = _pod(chart, USERS_GPU)
    assert pod["resourceClaims"][0] == {"name": "gpu", "resourceClaimName": "shared-nic"}
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu", "gpu-2"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}, {"name": "gpu-2"}]}
    taken = "resourceClaims:\n  - {name: gpu, resourceClaimName: a}\n  - {name: gpu-2, resourceClaimName: b}\n"
    assert [c["name"] for c in _pod(chart, taken)["resourceClaims"]] == ["gpu", "gpu-2", "gpu-3"]
    assert [c["name"] for c in _pod(chart, "gpus: 1\n")["resourceClaims"]] == ["gpu"]


def test_a_users_claim_named_gpu_in_the_default_values_is_taken(tmp_path: Path) -> None:
    """Was manual: 'the migration gives this pod several claims'."""
    values = "gpus: 1\n" + USERS_GPU
    chart = chart_with(tmp_path, "infer", {"templates/infer.yaml": FROM_VALUES, "values.yaml": values})
    fix_chart(chart)
    pod = _pod(chart, "")
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu", "gpu-2"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}, {"name": "gpu-2"}]}
    assert [c["name"] for c in _pod(chart, "resourceClaims: []\nclaims: []\n")["resourceClaims"]] == ["gpu"]
