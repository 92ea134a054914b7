"""The pass-through rewrite (patterns B and C) with a values file of the user's given after the DRA values file. Users
install with their own pool or tolerations file beside the chart's (`-f gpu-dra.yaml -f pool.yaml`), one `fix` was
never told about. Helm replaces lists, so the GPU toleration the DRA file put in the chart's `tolerations` list went
with the user's list (the pod had its claims but stayed Pending on the GPU nodes' taint); and a later file that put
the device key back into `resources` gave a container asking for the device twice, through the device plugin and
its claim, without a word. The toleration is now the template's (under a key of its own, added unless the pod's list
tolerates the taint already), and the template fails on a device key beside the claims; the proof renders both.

Renders are real (the Helm engine embedded in helm-python-sdk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import HelmError, RenderOptions, render_chart
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)
VALUES = "resources: {}\ntolerations: []\n"
GPU = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
GPU_TOLERATION = "  - key: nvidia.com/gpu\n    operator: Exists\n    effect: NoSchedule\n"
POOL = "tolerations:\n  - key: pool\n    operator: Exists\n"


def _chart(tmp_path: Path, gpu: str, template: str = SERVER) -> tuple[Path, Path]:
    """A chart passing `resources` through, fixed with the values file `gpu`; (chart, the values file)."""
    chart = chart_with(tmp_path, "server", {"values.yaml": VALUES, "templates/server.yaml": template})
    values = tmp_path / "gpu.yaml"
    values.write_text(gpu)
    return chart, values


def _pod(chart: Path, *files: Path | str) -> dict[str, Any]:
    """The Deployment's pod spec rendered with `files` in order (a text: a values file of the user's with it)."""
    paths = []
    for i, f in enumerate(files):
        if isinstance(f, str):
            path = chart.parent / f"mine-{i}.yaml"
            path.write_text(f)
            f = path
        paths.append(f)
    docs = [yaml.safe_load(m.text) for m in render_chart(chart, RenderOptions(values_files=tuple(paths)))]
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d and d["kind"] == "Deployment"]
    return pod


def _keys(pod: dict[str, Any]) -> list[str]:
    return [t.get("key", "") for t in pod.get("tolerations") or []]


def test_a_tolerations_file_given_after_the_dra_file_keeps_the_gpu_toleration(tmp_path: Path) -> None:
    """`-f gpu-dra.yaml -f pool.yaml`: the pod keeps the GPU toleration beside the user's own (was: the user's list
    replaced the DRA file's, and the pod with claims did not tolerate the GPU nodes' taint); a list that tolerates
    every taint already gets no second one, as the migration adds none."""
    chart, gpu = _chart(tmp_path, GPU)
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    pod = _pod(chart, dra, POOL)
    assert pod["resourceClaims"] and pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert _keys(pod) == ["pool", "nvidia.com/gpu"]
    assert pod["tolerations"][1] == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert _pod(chart, dra, "tolerations:\n  - operator: Exists\n")["tolerations"] == [{"operator": "Exists"}]
    assert "tolerations" not in _pod(chart, gpu)  # the values as they were: as before
    assert _keys(_pod(chart, gpu, POOL)) == ["pool"]


def test_a_tolerations_list_under_its_own_if_keeps_the_gpu_toleration_after_a_users_list(tmp_path: Path) -> None:
    """`{{- if .Values.tolerations }}`, `tolerations:` then `{{- toYaml .Values.tolerations | nindent 8 }}`: the `if`
    takes the DRA key too and the list joins it, so the pod tolerates the GPU taint with an empty list of its own and
    after a user's list (was: the DRA file's copy of the list, which the user's replaced)."""
    read = "        {{- toYaml .Values.tolerations | nindent 8 }}\n"
    template = SERVER.replace(
        "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n",
        "      {{- if .Values.tolerations }}\n      tolerations:\n" + read,
    )
    chart, gpu = _chart(tmp_path, GPU, template)
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    assert _keys(_pod(chart, dra)) == ["nvidia.com/gpu"]
    assert _keys(_pod(chart, dra, POOL)) == ["pool", "nvidia.com/gpu"]
    assert "tolerations" not in _pod(chart, gpu)


def test_a_tolerations_key_left_empty_keeps_the_gpu_toleration_after_a_users_list(tmp_path: Path) -> None:
    """The chart's values leave `tolerations:` empty (null, not `[]`: h2oGPT's): a user's later list keeps the GPU
    toleration beside theirs (was: manual, the toleration only in the DRA values' copy of the list, which the user's
    list replaced)."""
    chart, gpu = _chart(tmp_path, GPU)
    (chart / "values.yaml").write_text(VALUES.replace("tolerations: []", "tolerations:"))
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    assert _keys(_pod(chart, dra)) == ["nvidia.com/gpu"]
    assert _keys(_pod(chart, dra, POOL)) == ["pool", "nvidia.com/gpu"]
    assert "tolerations" not in _pod(chart, gpu)


def test_a_gpu_file_that_tolerates_the_taint_itself_still_gets_it_after_a_users_list(tmp_path: Path) -> None:
    """gpu.yaml tolerates the GPU taint itself, so the migration added no toleration and the rewrite wrote none: a
    later list of the user's lost it. The DRA file now carries the device's toleration, which the pod adds only when
    its list does not tolerate the taint."""
    chart, gpu = _chart(tmp_path, GPU + "tolerations:\n" + GPU_TOLERATION)
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    assert _pod(chart, dra)["tolerations"] == _pod(chart, gpu)["tolerations"]  # one, the file's own
    assert _keys(_pod(chart, dra, POOL)) == ["pool", "nvidia.com/gpu"]


def test_a_later_file_that_sets_the_device_key_again_fails_the_render_by_name(tmp_path: Path) -> None:
    """`-f gpu-dra.yaml -f gpu.yaml` (or a user's file that sets `resources.limits`): the container got its claim
    and the device-plugin request both, a second device for nothing; now the render fails and names the key."""
    chart, gpu = _chart(tmp_path, GPU)
    fix_chart(chart, values=(gpu,))

    with pytest.raises(HelmError) as failed:
        _pod(chart, tmp_path / "gpu-dra.yaml", gpu)
    assert "remove nvidia.com/gpu from resources (set after the -dra.yaml values)" in str(failed.value)
    assert "would ask for it twice" in str(failed.value)
    assert _pod(chart, gpu)["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    # a user's own claim beside the device, without the DRA values: renders as with the chart before the fix
    own = GPU + "  claims:\n    - name: nic\nresourceClaims:\n  - name: nic\n    resourceClaimName: my-nic\n"
    mine = {"limits": {"nvidia.com/gpu": 1}, "claims": [{"name": "nic"}]}
    assert _pod(chart, own)["containers"][0]["resources"] == mine


def test_the_proof_renders_a_later_tolerations_file_and_a_later_device_key(tmp_path: Path) -> None:
    """The proof names both value sets: a later file setting every tolerations list, and one setting the device key
    again (which must fail)."""
    chart, gpu = _chart(tmp_path, GPU)
    outcome = fix_chart(chart, values=(gpu,))
    checked = " / ".join(outcome.checked)
    assert "after the DRA values that sets every tolerations list" in checked
    assert "after the DRA values that sets the device keys again (fails:" in checked


# the pod's tolerations written by a helper: the template cannot join a list to them
HELPER = """\
{{- define "server.tolerations" -}}
tolerations:
  {{- toYaml .Values.tolerations | nindent 2 }}
{{- end }}
"""
WITH_LIST = (
    "      {{- with .Values.tolerations }}\n      tolerations:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"
)
HELPED = SERVER.replace(WITH_LIST, '      {{- include "server.tolerations" . | nindent 6 }}\n')


def test_a_toleration_a_later_tolerations_file_would_drop_is_said(tmp_path: Path) -> None:
    """A helper writes the pod's tolerations from the values list, so the GPU toleration can only go into that list,
    which a later file of the user's replaces: the report says so, naming the list (was: the proof said nothing of
    it, and the pods stayed Pending on the GPU taint once a user gave their own tolerations)."""
    chart, gpu = _chart(tmp_path, GPU, HELPED)
    (chart / "templates" / "_helpers.tpl").write_text(HELPER)
    options = ChartOptions(values_files=(gpu,), kube_version="1.34")

    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")

    assert outcome.proven, outcome.report()
    said = [c for c in outcome.checked if "sets every tolerations list" in c]
    assert said == [
        "a values file of yours after the DRA values that sets every tolerations list: not kept (the GPU toleration "
        "is in the DRA values' tolerations)"
    ]


RANGED = SERVER.replace(
    WITH_LIST,
    "      tolerations:\n      {{- range .Values.tolerations }}\n"
    "        - {{ toYaml . | nindent 10 | trim }}\n      {{- end }}\n",
)


def test_a_users_own_gpu_toleration_in_a_list_no_line_joins_is_said_not_refused(tmp_path: Path) -> None:
    """gpu.yaml tolerates the GPU taint itself and the pod writes its list item by item (`range`), a shape the
    template cannot join a list to: the chart is rewritten and the report says a later list drops the toleration, as
    with a helper's list (was: manual, fix wrote nothing for a chart whose rewrite is otherwise proven)."""
    chart, gpu = _chart(tmp_path, GPU + "tolerations:\n" + GPU_TOLERATION, RANGED)
    options = ChartOptions(values_files=(gpu,), kube_version="1.34")

    outcome = run_chart(chart, options, load_rules(), Settings(kube_version="1.34"), Target.parse("1.34"), "fix")

    assert outcome.proven, outcome.report()
    assert [c for c in outcome.checked if "sets every tolerations list" in c] == [
        "a values file of yours after the DRA values that sets every tolerations list: not kept (the GPU toleration "
        "is in the DRA values' tolerations)"
    ]


# a group of workers ranged over, each item merged over the primary worker's values (dask's additional worker groups),
# writing its list as `. | toYaml`
GROUPS = """\
{{- range .Values.groups }}
{{- $worker := merge . $.Values.worker }}
---
""" + deployment(
    "{{ $.Release.Name }}-{{ $worker.name }}",
    """\
      containers:
        - name: worker
          image: worker:1
          {{- with $worker.resources }}
          resources:
            {{- . | toYaml | nindent 12 }}
          {{- end }}
      {{- with $worker.tolerations }}
      tolerations:
        {{- . | toYaml | nindent 8 }}
      {{- end }}
{{- end }}
""",
    app="worker",
)


def test_a_group_merged_over_the_workers_values_keeps_the_gpu_toleration_after_a_users_list(tmp_path: Path) -> None:
    """A GPU group merged over `worker` (`merge . $.Values.worker`) renders `worker.tolerations` when it has none of
    its own: a later file setting that list keeps the GPU toleration beside it (was: manual, the DRA values put the
    toleration in the group's own list, which hid the user's list from the merge)."""
    chart = chart_with(
        tmp_path, "workers", {"values.yaml": "worker:\n  tolerations: []\ngroups: []\n", "templates/w.yaml": GROUPS}
    )
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("groups:\n  - name: gpu\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n")
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    assert _keys(_pod(chart, dra)) == ["nvidia.com/gpu"]
    assert _keys(_pod(chart, dra, "worker:\n  tolerations:\n    - key: pool\n")) == ["pool", "nvidia.com/gpu"]
    assert "tolerations" not in _pod(chart, gpu)


# a module's own list, else the chart's (weaviate's modules), read through `index`
MODULE = '{{- $module := index .Values "modules" "reranker" }}\n' + deployment(
    "{{ .Release.Name }}-reranker",
    """\
      containers:
        - name: reranker
          image: reranker:1
          resources:
{{ index $module "resources" | toYaml | indent 12 }}
      {{- with index $module "tolerations" | default .Values.tolerations }}
      tolerations:
        {{ toYaml . | nindent 8 }}
      {{- end }}
""",
)


def test_a_modules_list_defaulting_to_the_charts_joins_the_gpu_toleration(tmp_path: Path) -> None:
    """`with index $module "tolerations" | default .Values.tolerations`: a later file that sets both lists keeps the
    GPU toleration in the one list the pod renders (was: manual, the rewrite wrote a second `tolerations:` key into
    the pod beside the chart's, an invalid render once the user's list is set)."""
    values = "tolerations: []\nmodules:\n  reranker:\n    tolerations: []\n    resources: {}\n"
    chart = chart_with(tmp_path, "modules", {"values.yaml": values, "templates/m.yaml": MODULE})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text("modules:\n  reranker:\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n")
    fix_chart(chart, values=(gpu,))
    dra = tmp_path / "gpu-dra.yaml"

    assert _keys(_pod(chart, dra)) == ["nvidia.com/gpu"]
    mine = "tolerations:\n  - key: pool\nmodules:\n  reranker:\n    tolerations:\n      - key: mine\n"
    assert _keys(_pod(chart, dra, mine)) == ["mine", "nvidia.com/gpu"]
    assert _keys(_pod(chart, dra, "tolerations:\n  - key: pool\n")) == ["pool", "nvidia.com/gpu"]
    assert "tolerations" not in _pod(chart, gpu)
