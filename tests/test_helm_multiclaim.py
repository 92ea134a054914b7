"""A pod asking for two device kinds with literal keys (pattern A: a GPU and EFA interfaces in one container, the
shape of AWS's multi-node Triton LeaderWorkerSet). The manifest migration gives such a pod one claim with a request
for each while they add up to 32 devices at most, and a claim for each kind above that (the scheduler allocates at most
32 devices to one claim); a count of 0 drops only that kind's request or claim. The rewritten chart follows the same
shapes, each claim guarded by its own count (was: "the migration gives this pod several claims; fix it by hand", and
with the EFA count 0 in the user's values a rewrite that rendered differently from the migration once it was above
0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.prove import without_api_defaults
from dramigrate.helm.render import RenderOptions, render_chart

POD = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
        - name: worker
          image: worker:1
          resources:
            limits:
              memory: 1Gi
              nvidia.com/gpu: {{ .Values.gpuPerNode }}
              vpc.amazonaws.com/efa: {{ .Values.efa }}
            requests:
              memory: 1Gi
              nvidia.com/gpu: {{ .Values.gpuPerNode }}
              vpc.amazonaws.com/efa: {{ .Values.efa }}
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
""",
)
FILES = {"values.yaml": "gpuPerNode: 8\n# EFA interfaces per pod (0: none)\nefa: 32\n", "templates/worker.yaml": POD}


def _charts(root: Path, files: dict[str, str] = FILES) -> tuple[Path, Path]:
    """The chart to fix and an untouched copy."""
    return chart_with(root / "fixed", "triton", files), chart_with(root / "original", "triton", files)


def _render(chart: Path, values: tuple[Path, ...], sets: tuple[str, ...]) -> tuple[str, str]:
    """The render as one stream, or Helm's error."""
    try:
        options = RenderOptions(values_files=values, set_values=sets, kube_version="1.34")
        return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options)), ""
    except Exception as exc:  # noqa: BLE001 - the render's error is what the test compares
        return "", str(exc)


def _claims(stream: str) -> tuple[Any, ...]:
    """The pod's claims (name -> the requests of its ResourceClaimTemplate), the container's claim names, its device
    keys and the pod's tolerations: what the migration decides, without the template names (a hash of each spec) and
    the API's defaults (the migration spells out `allocationMode: ExactCount`, the chart leaves it to the API)."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    templates = {
        d["metadata"]["name"]: without_api_defaults(d["spec"]["spec"])
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    (pod,) = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    claims = {c["name"]: templates[c["resourceClaimTemplateName"]] for c in pod.get("resourceClaims", [])}
    resources = pod["containers"][0]["resources"]
    keys = sorted(k for section in ("limits", "requests") for k in resources.get(section) or {} if "/" in k)
    return claims, [c["name"] for c in resources.get("claims", [])], keys, pod.get("tolerations")


def _migrated(original: Path, values: tuple[Path, ...], sets: tuple[str, ...]) -> str:
    stream, error = _render(original, values, sets)
    assert not error, error
    code, out, err = dramigrate_in_process(["fix", "-"], stdin=stream)
    assert code == 0, err
    return out


def test_gpu_and_efa_get_the_migrations_claims_for_each_count(tmp_path: Path) -> None:
    chart, original = (
        chart_with(tmp_path / "fixed", "triton", FILES),
        chart_with(tmp_path / "original", "triton", FILES),
    )
    fix_chart(chart)

    shapes = set()
    for sets in ((), ("efa=0",), ("gpuPerNode=4", "efa=4"), ("gpuPerNode=0",), ("gpuPerNode=4", "efa=30")):
        rewritten, error = _render(chart, (), sets)
        assert not error, error
        migrated = _claims(_migrated(original, (), sets))
        assert _claims(rewritten) == migrated, sets
        shapes.add(tuple(migrated[1]))
        assert _render(chart, (), (*sets, "dra.enabled=false")) == _render(original, (), sets)
    assert shapes == {("gpu", "efa"), ("gpu",), ("gpu-efa",), ("efa",)}  # a claim each, one of both, one kind alone


def test_efa_off_in_the_users_values_still_rewrites_its_claim(tmp_path: Path) -> None:
    """The rewrite is read from the user's values, where the EFA count is 0 (the migration claims only the GPU): the
    EFA request comes from the migration of the pod with one interface, so the chart's defaults claim both."""
    chart, original = (
        chart_with(tmp_path / "fixed", "triton", FILES),
        chart_with(tmp_path / "original", "triton", FILES),
    )
    no_efa = tmp_path / "no-efa.yaml"
    no_efa.write_text("gpuPerNode: 4\nefa: 0\n")
    fix_chart(chart, values=(no_efa,))

    for values in ((no_efa,), ()):
        rewritten, error = _render(chart, values, ())
        assert not error, error
        assert _claims(rewritten) == _claims(_migrated(original, values, ())), values


def test_more_than_32_interfaces_fail_the_render_where_the_migration_refuses(tmp_path: Path) -> None:
    chart, original = (
        chart_with(tmp_path / "fixed", "triton", FILES),
        chart_with(tmp_path / "original", "triton", FILES),
    )
    fix_chart(chart)

    stream, error = _render(original, (), ("efa=33",))
    code, out, err = dramigrate_in_process(["fix", "-"], stdin=stream)
    assert "at most 32 per claim" in err and _claims(out) == _claims(stream)  # the migration leaves the pod as it is
    _, error = _render(chart, (), ("efa=33",))
    assert "more than 32 devices of one kind" in error and "dra.enabled=false" in error
    assert _render(chart, (), ("efa=33", "dra.enabled=false")) == (stream, "")


def test_efa_key_under_its_own_switch(tmp_path: Path) -> None:
    """The EFA key inside `if .Values.efa.enabled` (the pod asks for the interfaces only while it is on): switched
    off, the migration claims the GPU alone and adds no EFA toleration, and so does the rewritten chart (was: the one
    claim still named `gpu-efa`, with an EFA request and toleration)."""
    switched = POD.replace(
        "              vpc.amazonaws.com/efa: {{ .Values.efa }}\n",
        "              {{- if .Values.efaEnabled }}\n              vpc.amazonaws.com/efa: {{ .Values.efa }}\n"
        "              {{- end }}\n",
    )
    files = {**FILES, "templates/worker.yaml": switched, "values.yaml": FILES["values.yaml"] + "efaEnabled: true\n"}
    chart, original = (
        chart_with(tmp_path / "fixed", "triton", files),
        chart_with(tmp_path / "original", "triton", files),
    )
    fix_chart(chart)

    for sets in ((), ("efaEnabled=false",), ("efa=4", "efaEnabled=false"), ("efa=4",)):
        rewritten, error = _render(chart, (), sets)
        assert not error, error
        assert _claims(rewritten) == _claims(_migrated(original, (), sets)), sets
    claims, _, _, tolerations = _claims(_render(chart, (), ("efaEnabled=false",))[0])
    assert list(claims) == ["gpu"] and [t["key"] for t in tolerations] == ["nvidia.com/gpu"]


def test_literal_efa_count_beside_the_gpu_count(tmp_path: Path) -> None:
    """`vpc.amazonaws.com/efa: 32` written in the template (a p5 node's interfaces) beside the GPU count from values:
    the EFA claim and toleration always render with the switch on, the GPU's follow its count (was: the GPU toleration
    stayed with the GPU count unset, where the migration adds none: the chart was refused)."""
    literal = POD.replace("vpc.amazonaws.com/efa: {{ .Values.efa }}", "vpc.amazonaws.com/efa: 32")
    literal = literal[: literal.index("      tolerations:")]  # the tolerations are the migration's
    chart, original = _charts(tmp_path, {**FILES, "templates/worker.yaml": literal})
    fix_chart(chart)

    for sets in ((), ("gpuPerNode=0",)):
        rewritten, error = _render(chart, (), sets)
        assert not error, error
        assert _claims(rewritten) == _claims(_migrated(original, (), sets)), sets
    _, _, _, tolerations = _claims(_render(chart, (), ("gpuPerNode=null",))[0])  # no GPU asked for: no toleration
    assert tolerations == [{"key": "vpc.amazonaws.com/efa", "operator": "Exists", "effect": "NoSchedule"}]
