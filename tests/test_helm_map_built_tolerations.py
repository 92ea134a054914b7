"""A pod whose map is built in variables (pattern F) and that writes its own tolerations in a form that reads no
values list alone (suse-pytorch's shape: `{{- if or <gpu on> .Values.tolerations }} tolerations:`, its own GPU
toleration under an `if` written over several lines, then the values list). The DRA branch wrote a second
`tolerations:` key into the pod: Helm keeps the last one, so the proof read the render as the migration's while
strict readers refuse it. The DRA toleration now goes into the chart's own list, after the chart's entries and the
values', for the device resources the chart does not tolerate itself."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, fix_chart
from test_helm_map_built import DEPLOYMENT, VALUES

from dramigrate.helm.prove import repeated_keys
from dramigrate.helm.render import RenderOptions, render_chart

OWN = """\
      {{- if or (ne .Values.gpu.vendor "none") .Values.tolerations }}
      tolerations:
        {{- if and (ne .Values.gpu.vendor "none")
              (eq .Values.gpu.vendor "nvidia") }}
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
        {{- end }}
        {{- with .Values.tolerations }}
          {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
"""
VALUES_TOLERATIONS = "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n"


def _pod(chart: Path, *sets: str) -> tuple[dict[str, Any], str]:
    """The Deployment's pod spec and the rendered stream."""
    stream = "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(set_values=sets)))
    (deployment,) = [d for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"], stream


def _keys(pod: dict[str, Any]) -> list[str]:
    return [t["key"] for t in pod.get("tolerations") or []]


def _charts(root: Path) -> tuple[Path, Path]:
    deployment = DEPLOYMENT.replace(VALUES_TOLERATIONS + "      {{- end }}\n", OWN)
    original = chart_with(root / "original", "app", {"values.yaml": VALUES, "templates/app.yaml": deployment})
    return original, shutil.copytree(original, root / "fixed" / "app")


def test_the_dra_toleration_joins_the_pods_own_list(tmp_path: Path) -> None:
    original, chart = _charts(tmp_path)

    fix_chart(chart)

    user = ("tolerations[0].key=spot", "tolerations[0].operator=Exists")
    for sets, keys in (
        ((), ["nvidia.com/gpu"]),  # the chart tolerates nvidia.com/gpu itself: no second entry
        (("gpu.vendor=amd",), ["amd.com/gpu"]),
        (("gpu.vendor=amd", *user), ["spot", "amd.com/gpu"]),  # appended after the values' list, as the migration
    ):
        pod, stream = _pod(chart, "dra.enabled=true", *sets)
        assert repeated_keys(stream) == [], sets
        assert _keys(pod) == keys, sets
        assert pod["resourceClaims"] and pod["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}
    assert _pod(chart, "dra.enabled=false", *user) == _pod(original, *user)


def test_a_resource_the_chart_tolerates_in_another_value_set_gets_no_second_toleration(tmp_path: Path) -> None:
    """Fixed with an AMD values file, the reference render asks for amd.com/gpu only; the chart's defaults render
    nvidia.com/gpu with the chart's own toleration of it, so the DRA branch adds none for nvidia.com/gpu (it added a
    second, identical entry, and the proof of the defaults failed)."""
    _, chart = _charts(tmp_path)
    amd = tmp_path / "amd.yaml"
    amd.write_text("gpu:\n  vendor: amd\n")

    fix_chart(chart, values=(amd,))

    assert _keys(_pod(chart, "dra.enabled=true")[0]) == ["nvidia.com/gpu"]
    assert _keys(_pod(chart, "dra.enabled=true", "gpu.vendor=amd")[0]) == ["amd.com/gpu"]


def test_a_values_list_that_tolerates_the_device_gets_no_second_toleration(tmp_path: Path) -> None:
    """The user's values list, written by the chart's `with .Values.tolerations` inside the pod's own list, tolerates
    amd.com/gpu already (an AMD values file): the migration adds no toleration, so neither may the DRA branch. It
    added a second, identical entry, the proof failed and fix wrote nothing for the chart."""
    original, chart = _charts(tmp_path)
    amd = tmp_path / "amd.yaml"
    amd.write_text(
        "gpu:\n  vendor: amd\ntolerations:\n  - key: amd.com/gpu\n    operator: Exists\n    effect: NoSchedule\n"
    )

    fix_chart(chart, values=(amd,))

    amd_sets = ("gpu.vendor=amd", "tolerations[0].key=amd.com/gpu", "tolerations[0].operator=Exists")
    pod, stream = _pod(chart, "dra.enabled=true", *amd_sets)
    assert repeated_keys(stream) == []
    assert _keys(pod) == ["amd.com/gpu"] and pod["resourceClaims"]
    spot = ("gpu.vendor=amd", "tolerations[0].key=spot", "tolerations[0].operator=Exists")
    assert _keys(_pod(chart, "dra.enabled=true", *spot)[0]) == ["spot", "amd.com/gpu"]
    assert _pod(chart, "dra.enabled=false", *amd_sets) == _pod(original, *amd_sets)
