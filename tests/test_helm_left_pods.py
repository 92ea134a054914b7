"""The idiomatic rewrite follows the manifest migration (`fix -`) where it leaves a device request as it is: a pod
pinned to a time-sliced product (GFD's -SHARED label value) keeps its device-plugin request, with no DRA branch,
beside a pod the rewrite migrates; a chart whose every request is so gets nothing written and says why. And pods of
one template that the values render in turn (a single-host Deployment, or a LeaderWorkerSet's leader and worker)
each get the claim the migration gives the rendered ones. Small charts shaped like the real ones; renders are real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli, chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart


@pytest.fixture
def run_cli() -> RunCli:
    """The CLI in this process: these tests are about what a run writes and says, not the process boundary."""
    return dramigrate_in_process


def _pods(chart: Path, *sets: str) -> dict[str, Any]:
    """The pod spec of each object of the chart's render, by the object's name."""
    docs = [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]
    out = {}
    for d in docs:
        spec = d.get("spec") or {}
        if "template" in spec:
            out[d["metadata"]["name"]] = spec["template"]["spec"]
        for role in ("leaderTemplate", "workerTemplate"):
            if role in spec.get("leaderWorkerTemplate", {}):
                out[f"{d['metadata']['name']}/{role}"] = spec["leaderWorkerTemplate"][role]["spec"]
    return out


def _claim_specs(chart: Path, *sets: str) -> list[Any]:
    docs = [d for m in render_chart(chart, RenderOptions(set_values=sets)) for d in yaml.safe_load_all(m.text) if d]
    return [d["spec"]["spec"] for d in docs if d["kind"] == "ResourceClaimTemplate"]


# gemma4mtp's benchmark template: a single-host Deployment, or (is_multi_host) a LeaderWorkerSet whose leader tolerates
# the TPU taint itself and whose worker does not; every pod pinned to a TPU topology its values name
TPU_POD = """\
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
        cloud.google.com/gke-tpu-topology: {{{{ .Values.topology | quote }}}}
{tolerations}      containers:
      - name: {name}
        image: vllm
        resources:
          limits:
            google.com/tpu: "{{{{ .Values.chips }}}}"
"""
TOLERATES = '      tolerations:\n      - key: "google.com/tpu"\n        operator: "Exists"\n'
LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: "{{ .Release.Name }}-tpu"
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
%s    workerTemplate:
      spec:
%s"""


def _indented(text: str, by: int) -> str:
    return "".join(" " * by + line if line.strip() else line for line in text.splitlines(True))


def test_pods_the_values_render_in_turn_each_get_the_claim_and_follow_the_topology(tmp_path: Path) -> None:
    """Was 'needs manual work: 3 pod(s) ask for devices, the migration adds claims to 2' with the LeaderWorkerSet's
    values (its leader and worker got claims that differ only in the toleration the worker lacks), then with the
    claim's CEL selector fixed to the topology of the values fix ran with. Now each pod gets the claim, the worker
    the toleration, and the selector reads the values key that writes the pod's node label."""
    single = TPU_POD.format(tolerations=TOLERATES, name="server")
    leader = _indented(TPU_POD.format(tolerations=TOLERATES, name="leader"), 4)
    worker = _indented(TPU_POD.format(tolerations="", name="worker"), 4)
    template = (
        "{{- if not .Values.multiHost }}\n"
        + deployment('"{{ .Release.Name }}-tpu"', single, "tpu")
        + "{{- else }}\n"
        + LWS % (leader, worker)
        + "{{- end }}\n"
    )
    values = "multiHost: false\nchips: 4\ntopology: 2x2\n"
    chart = chart_with(tmp_path, "tpu", {"templates/server.yaml": template, "values.yaml": values})
    multi = tmp_path / "multihost.yaml"
    multi.write_text("multiHost: true\ntopology: 4x4\n")
    fix_chart(chart, values=(multi,))
    pods = _pods(chart, "multiHost=true", "topology=4x4")
    leader_pod, worker_pod = pods["release-name-tpu/leaderTemplate"], pods["release-name-tpu/workerTemplate"]
    assert leader_pod["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists"}]
    assert worker_pod["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    for pod in (leader_pod, worker_pod, _pods(chart)["release-name-tpu"]):
        assert pod["containers"][0]["resources"] == {"claims": [{"name": "tpu"}]}
    for topology in ("2x2", "4x4"):
        (spec,) = _claim_specs(chart, f"topology={topology}")
        selectors = [s["cel"]["expression"] for s in spec["devices"]["requests"][0]["exactly"]["selectors"]]
        assert any(e.endswith(f"topology == '{topology}'") for e in selectors), selectors


# a Deployment pinned by its values to a time-sliced GPU product: the migration leaves its request as it is
SHARED = deployment(
    "{{ .Release.Name }}-shared",
    """\
      nodeSelector:
        nvidia.com/gpu.product: {{ .Values.shared.product }}
      containers:
        - name: app
          image: app
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.shared.gpus }}
""",
)
# a Deployment asking for whole GPUs: the migration gives it a claim
TRAIN = deployment(
    "{{ .Release.Name }}-train",
    """\
      containers:
        - name: app
          image: app
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.train.gpus }}
""",
)
VALUES = "shared:\n  gpus: 1\n  product: NVIDIA-L40S-SHARED\ntrain:\n  gpus: 2\n"


def test_a_template_whose_one_pod_the_migration_leaves_migrates_the_other(tmp_path: Path) -> None:
    """Was 'needs manual work': the switch gave the shared pod a claim too, which the migration does not. Now the
    shared pod's device key stays as written, on the device plugin with the switch on, and the other gets its
    claim."""
    chart = chart_with(tmp_path, "mixed", {"templates/both.yaml": f"{SHARED}---\n{TRAIN}", "values.yaml": VALUES})
    fix_chart(chart)
    pods = _pods(chart)
    shared, train = pods["release-name-shared"], pods["release-name-train"]
    assert shared["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert "resourceClaims" not in shared
    assert train["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert [s["devices"]["requests"][0]["exactly"]["count"] for s in _claim_specs(chart)] == [2]


def test_a_template_whose_every_pod_the_migration_leaves_is_not_rewritten(tmp_path: Path) -> None:
    """Was 'needs manual work: the migration adds no claim to this template's pods' (a value set with the shared
    count set to null counted as a change of its template): the template stays as it is."""
    files = {"templates/shared.yaml": SHARED, "templates/train.yaml": TRAIN, "values.yaml": VALUES}
    chart = chart_with(tmp_path, "split", files)
    outcome = fix_chart(chart)
    assert "templates/shared.yaml" not in {c.rel for c in outcome.changes}
    assert (chart / "templates/shared.yaml").read_text() == SHARED
    assert "resourceClaims" in _pods(chart)["release-name-train"]
    left = [f for f in outcome.findings if f.rule == "shared-device"]
    assert [(f.name, f.container) for f in left] == [("release-name-shared", "app")]
    assert "left as is" in left[0].message


def test_a_chart_whose_every_request_the_migration_leaves_says_so_and_writes_nothing(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """kishore-insureguard's defaults: each GPU pod pinned to an -SHARED product. fix writes nothing, says there is
    nothing it can migrate and the migration's reason, and exits 0 as for warnings left (no unproven rewrite)."""
    chart = chart_with(tmp_path, "shared", {"templates/shared.yaml": SHARED, "values.yaml": VALUES})
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    code, _, err = run_cli(["fix", str(chart), "--color", "never"])
    assert code == 0, err
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    said = next(line for line in err.splitlines() if "nothing to migrate" in line)
    assert "leaves each of its 1 device request(s) as it is (shared-device: " in said
    assert "a per-pod claim would give each pod a whole device" in said
    assert "chart-rewrite-unproven" not in err and "manual work" not in err
    code, out, _ = run_cli(["lint", str(chart), "--color", "never"])
    assert code == 0 and "[shared-device]" in out


def test_a_product_the_migration_reads_as_shared_with_the_defaults_keeps_the_switch_off(tmp_path: Path) -> None:
    """kishore-insureguard: the chart's default product is time-sliced (-SHARED), the user's values name a whole
    GPU. Was 'needs manual work' (with the defaults the switch took the shared request into a claim, which the
    migration does not). Now the switch is on only while the product label's values key names no shared product:
    with the defaults the pod keeps its device-plugin request, as `fix -` leaves it, with the user's values it
    gets the claim; the proof says why for the defaults."""
    chart = chart_with(tmp_path, "shared", {"templates/shared.yaml": SHARED, "values.yaml": VALUES})
    mine = tmp_path / "mine.yaml"
    mine.write_text("shared:\n  product: NVIDIA-L40S\n")
    outcome = fix_chart(chart, values=(mine,))
    (said,) = [c for c in outcome.checked if c.startswith("default values")]
    assert "shared.product pins the pods to a nvidia.com/gpu.product value the migration reads as shared" in said
    kept = _pods(chart)["release-name-shared"]
    assert kept["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}} and "resourceClaims" not in kept
    assert _claim_specs(chart) == []
    mig = _pods(chart, "shared.product=NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")["release-name-shared"]
    assert "resourceClaims" not in mig
    whole = _pods(chart, "shared.product=NVIDIA-L40S")["release-name-shared"]
    assert whole["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_the_switch_and_its_shared_product_guard_are_written_once(tmp_path: Path) -> None:
    """The rewrite states the switch with the guard once, in a define that says whether DRA is on, which every
    condition of the template and the claim template includes; the guard was repeated in each of them
    (kishore-insureguard: 36 times in its 8 files). The pod keeps its device-plugin request with the defaults and
    gets the claim with the user's values, as before."""
    chart = chart_with(tmp_path, "shared", {"templates/shared.yaml": SHARED, "values.yaml": VALUES})
    mine = tmp_path / "mine.yaml"
    mine.write_text("shared:\n  product: NVIDIA-L40S\n")
    fix_chart(chart, values=(mine,))
    template = (chart / "templates/shared.yaml").read_text()
    written = "".join(p.read_text() for p in (chart / "templates").iterdir())
    assert written.count("regexMatch") == 1 and written.count(".Values.dra.enabled") == 1, written
    assert '(include "shared.draEnabled" .)' in template and "regexMatch" not in template
    assert "resourceClaims" not in _pods(chart)["release-name-shared"]
    assert "resourceClaims" in _pods(chart, "shared.product=NVIDIA-L40S")["release-name-shared"]


@pytest.mark.parametrize("one_template", [True, False])
def test_the_shared_product_guard_keeps_off_only_the_pods_that_select_the_product(
    tmp_path: Path, one_template: bool
) -> None:
    """A pod pinned to the chart's default -SHARED product beside a training pod that selects none; the user's values
    name a whole GPU. Was 'needs manual work' (the guard kept the switch off in every pod, so with the defaults the
    training pod kept its device-plugin request where the migration gives it a claim). Now only the pinned pod's
    switch has the guard, whether the two pods are in one template or two."""
    files = (
        {"templates/both.yaml": f"{SHARED}---\n{TRAIN}"}
        if one_template
        else {"templates/shared.yaml": SHARED, "templates/train.yaml": TRAIN}
    )
    chart = chart_with(tmp_path, "mixed", {**files, "values.yaml": VALUES})
    mine = tmp_path / "mine.yaml"
    mine.write_text("shared:\n  product: NVIDIA-L40S\n")
    fix_chart(chart, values=(mine,))
    pods = _pods(chart)
    shared, train = pods["release-name-shared"], pods["release-name-train"]
    assert shared["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}} and "resourceClaims" not in shared
    assert train["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    assert [s["devices"]["requests"][0]["exactly"]["count"] for s in _claim_specs(chart)] == [2]
    whole = _pods(chart, "shared.product=NVIDIA-L40S")
    assert all(whole[n]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]} for n in whole)
    counts = sorted(s["devices"]["requests"][0]["exactly"]["count"] for s in _claim_specs(chart, "shared.product=x"))
    assert counts == [1, 2]
