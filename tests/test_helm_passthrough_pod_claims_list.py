"""A pod that renders its own `resourceClaims:` from a values list not named `resourceClaims` (`extraResourceClaims`)
beside a container's values resources map (pattern B). The pass-through's DRA claims join that list, as the DRA
toleration joins the pod's tolerations list (was: a second `resourceClaims:` key from `.Values.resourceClaims`, and
with the user's own list set Helm kept the last key only, a claim dropped without a word; or, for a list the pod
writes outside any block, no DRA claim in the pod at all). The proof sets each such list to a claim of the user's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

CONTAINERS = """\
      containers:
        - name: infer
          image: infer:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
SHAPES = {
    "with": """\
      {{- with .Values.extraResourceClaims }}
      resourceClaims:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
    "if": """\
      {{- if .Values.extraResourceClaims }}
      resourceClaims:
        {{- toYaml .Values.extraResourceClaims | nindent 8 }}
      {{- end }}
""",
    "bare": """\
      resourceClaims:
        {{- toYaml .Values.extraResourceClaims | nindent 8 }}
""",
    "literal": """\
      resourceClaims:
        - name: scratch
          resourceClaimName: scratch
""",
}
VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\nextraResourceClaims: []\n"
USERS = "extraResourceClaims:\n  - name: nic\n    resourceClaimName: shared-nic\n"


def _pod(chart: Path, *texts: str) -> tuple[dict[str, Any], str]:
    """The Deployment's pod spec and its text, rendered with the values files (text) given."""
    files = []
    for k, text in enumerate(texts):
        files.append(chart.parent / f"given-{k}.yaml")
        files[-1].write_text(text)
    options = RenderOptions(values_files=(chart / "values-dra.yaml", *files), kube_version="1.34")
    (text,) = [m.text for m in render_chart(chart, options) if "kind: Deployment" in m.text]
    return yaml.safe_load(text)["spec"]["template"]["spec"], text


@pytest.mark.parametrize("shape", SHAPES)
def test_the_dra_claim_joins_the_pods_own_claims_list(tmp_path: Path, shape: str) -> None:
    chart = chart_with(tmp_path, "infer", {"values.yaml": VALUES, "templates/infer.yaml": deployment("infer", "")})
    (chart / "templates/infer.yaml").write_text(deployment("infer", SHAPES[shape] + CONTAINERS))
    fix_chart(chart)

    for given in ((), (USERS,)):
        pod, text = _pod(chart, *given)
        assert text.count("resourceClaims:") == 1, text
        names = [c["name"] for c in pod["resourceClaims"]]
        claimed = [c["name"] for c in pod["containers"][0]["resources"]["claims"]]
        assert set(claimed) <= set(names), text
        own = {"literal": ["scratch"]}.get(shape, []) + (["nic"] if given and shape != "literal" else [])
        assert [n for n in names if n not in claimed] == own, text


def test_a_helper_rewrite_joins_the_pods_own_claims_list(tmp_path: Path) -> None:
    """Pattern D (a helper writes the device key) beside the pod's own `podResourceClaims` list: the helper rewrite's
    claim joins that list too (was: a `resourceClaims:` key of its own, which dropped the user's list once set; the
    start code called that proven and wrote it)."""
    helper = '{{- define "infer.devices" -}}\nnvidia.com/gpu: {{ .Values.gpus }}\n{{- end }}\n'
    limits = 'limits:\n              {{- include "infer.devices" . | nindent 14 }}'
    pod = SHAPES["with"].replace("extraResourceClaims", "podResourceClaims") + CONTAINERS.replace(
        "{{- toYaml .Values.resources | nindent 12 }}", limits
    )
    files = {
        "values.yaml": "gpus: 1\npodResourceClaims: []\n",
        "templates/_helpers.tpl": helper,
        "templates/infer.yaml": deployment("infer", pod),
    }
    chart = chart_with(tmp_path, "infer", files)
    fix_chart(chart)

    given = chart.parent / "given.yaml"
    given.write_text(USERS.replace("extraResourceClaims", "podResourceClaims"))
    (text,) = [
        m.text
        for m in render_chart(chart, RenderOptions(values_files=(given,), kube_version="1.34"))
        if "kind: Deployment" in m.text
    ]
    pod_spec = yaml.safe_load(text)["spec"]["template"]["spec"]
    assert text.count("resourceClaims:") == 1, text
    assert [c["name"] for c in pod_spec["resourceClaims"]] == ["nic", "gpu"], text
    assert pod_spec["containers"][0]["resources"]["claims"] == [{"name": "gpu"}], text
