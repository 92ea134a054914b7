"""Never crash, never go silent: one file's failure is that file's finding and the run goes on (issue 9 item 1,
issue 11 item 1); the review's R items found on real repositories (reference/semantic-review.md section 4)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import RunCli

from dramigrate import commands, writer
from dramigrate.commands import Options

GOOD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: registry.example/app:1
    resources:
      limits:
        nvidia.com/gpu: 2
"""

# R1: a CRD bundle whose schema has a mapping under the key `kind` and mentions a device (Kueue CRDs).
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: resourceflavors.kueue.x-k8s.io
spec:
  group: kueue.x-k8s.io
  names:
    kind: ResourceFlavor
    plural: resourceflavors
  scope: Cluster
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: quotas such as nvidia.com/gpu
        type: object
        properties:
          kind:
            description: Kind is a string value representing the REST resource this object represents.
            type: string
          spec:
            type: object
"""

# A file that fails inside the pipeline: a pod with a value nested 300 levels deep.
DEEP = GOOD.format(name="deep") + "    env: " + "[" * 300 + "1" + "]" * 300 + "\n"


# A Go template outside a chart that asks for a device.
TEMPLATED = GOOD.format(name="{{ .Values.name }}")


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "a-good.yaml").write_text(GOOD.format(name="a"))
    (folder / "b-crd.yaml").write_text(CRD)
    (folder / "c-deep.yaml").write_text(DEEP)
    (folder / "d-good.yaml").write_text(GOOD.format(name="d"))
    (folder / "e-templated.yaml").write_text(TEMPLATED)
    return folder


def test_folder_run_goes_on_past_a_failing_file_and_a_crd(run_cli: RunCli, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    code, out, err = run_cli(["lint", "--format", "json", folder])
    assert "Traceback" not in out + err and "internal error" not in err
    report = json.loads(out)
    assert code == 2
    by_file = {Path(f["file"]).name: f["rule"] for f in report["findings"]}
    assert by_file["a-good.yaml"] == by_file["d-good.yaml"] == "legacy-device-request"
    assert by_file["e-templated.yaml"] == "templated-device-file"
    assert "b-crd.yaml" not in by_file  # a CRD asks for no device
    failed = [Path(f["file"]).name for f in report["files"]["failed"]]
    assert failed == ["c-deep.yaml"]

    code, _, err = run_cli(["fix", folder])
    assert code == 2 and "Traceback" not in err
    assert "claims:" in (folder / "a-good.yaml").read_text() and "claims:" in (folder / "d-good.yaml").read_text()
    assert (folder / "c-deep.yaml").read_text() == DEEP and (folder / "b-crd.yaml").read_text() == CRD
    assert (folder / "e-templated.yaml").read_text() == TEMPLATED
    assert "failed: 1 file(s)" in err and "c-deep.yaml" in err.split("failed:")[1]
    assert "written: 2 file(s)" in err


def _run(command: str, path: Path) -> tuple[int, dict[str, Any]]:
    """lint or fix in this process (the folder test above goes through the installed entry point): the exit code
    and the JSON report."""
    report = path.parent / f"{path.name}.{command}.json"
    opts = Options([str(path)], format=["json"], output=report)
    code = commands.do_lint(opts, None) if command == "lint" else commands.do_fix(opts)
    return code, json.loads(report.read_text())


def _bug_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A bug met on one file only: detection raises for it."""
    from dramigrate.detect import Detector

    real = Detector.analyze

    def analyze(self: Detector, doc: object) -> object:
        if self.path.endswith(name):
            raise KeyError("spec")
        return real(self, doc)  # type: ignore[arg-type]

    monkeypatch.setattr(Detector, "analyze", analyze)


def test_a_bug_on_one_file_is_that_files_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.yaml").write_text(GOOD.format(name=name))
    _bug_on(monkeypatch, "b.yaml")
    monkeypatch.delenv("DRAMIGRATE_DEBUG", raising=False)
    code = commands.do_fix(Options([str(folder)]))
    err = capsys.readouterr().err
    assert code == 2
    assert "claims:" in (folder / "a.yaml").read_text() and "claims:" in (folder / "c.yaml").read_text()
    assert (folder / "b.yaml").read_text() == GOOD.format(name="b")
    line = next(x for x in err.splitlines() if "[internal-error]" in x)
    assert line.startswith(f"{folder / 'b.yaml'}:") and "DRAMIGRATE_DEBUG=1" in line and "report" in line
    assert "Traceback" not in err

    monkeypatch.setenv("DRAMIGRATE_DEBUG", "1")
    commands.do_lint(Options([str(folder / "b.yaml")]), None)
    assert "Traceback" in capsys.readouterr().err


def test_disk_full_on_one_file_leaves_it_named_and_writes_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.yaml").write_text(GOOD.format(name=name))
    real = writer.write_atomic

    def write_atomic(path: Path, text: str, *args: Any, **kwargs: Any) -> None:
        if path.name == "b.yaml":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text, *args, **kwargs)

    monkeypatch.setattr(writer, "write_atomic", write_atomic)
    code = commands.do_fix(Options([str(folder)], format=["json"], output=tmp_path / "r.json"))
    assert code == 2
    assert (folder / "b.yaml").read_text() == GOOD.format(name="b")
    assert all("claims:" in (folder / f"{n}.yaml").read_text() for n in ("a", "c"))
    files = json.loads((tmp_path / "r.json").read_text())["files"]
    assert sorted(Path(w["file"]).name for w in files["written"]) == ["a.yaml", "c.yaml"]
    assert [Path(w["file"]).name for w in files["notWritten"]] == ["b.yaml"]
    assert "No space left on device" in files["notWritten"][0]["reason"]
    # the findings of the file that was not written are not reported as fixed
    report = json.loads((tmp_path / "r.json").read_text())
    assert not any(f["fixed"] for f in report["findings"] if f["file"].endswith("b.yaml"))


def test_broken_kustomization_leaves_its_folder_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The kustomize pre-pass meets a kustomization that does not parse: that file is named, its folder's files
    are not rewritten (its patches are unknown), and files elsewhere are fixed."""
    base = tmp_path / "repo" / "overlay"
    base.mkdir(parents=True)
    (base / "kustomization.yaml").write_text("resources: [pod.yaml\npatches:\n- path: patch.yaml\n")
    (base / "pod.yaml").write_text(GOOD.format(name="k"))
    (base / "patch.yaml").write_text(GOOD.format(name="k"))
    (tmp_path / "repo" / "other.yaml").write_text(GOOD.format(name="o"))
    code = commands.do_fix(Options([str(tmp_path / "repo")]))
    err = capsys.readouterr().err
    assert code == 2 and "kustomization.yaml" in err.split("failed:")[1]
    assert (base / "patch.yaml").read_text() == GOOD.format(name="k")
    assert (base / "pod.yaml").read_text() == GOOD.format(name="k")
    assert "claims:" in (tmp_path / "repo" / "other.yaml").read_text()


# R4: a Jinja chat template in a ConfigMap block scalar, next to the GPU Deployment that uses it (vLLM).
CHAT_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: chat-template
data:
  template.jinja: |
    {{- bos_token }}
    {%- for message in messages %}
    {{ message['content'] }}
    {%- endfor %}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def test_template_in_a_block_scalar_does_not_make_the_file_templated(tmp_path: Path) -> None:
    f = tmp_path / "vllm.yaml"
    f.write_text(CHAT_TEMPLATE)
    code, report = _run("lint", f)
    assert code == 1
    assert [x["rule"] for x in report["findings"]] == ["legacy-device-request"]
    code, report = _run("fix", f)
    assert code == 0, report
    text = f.read_text()
    assert text.startswith(CHAT_TEMPLATE.split("---")[0])  # the chat template is untouched
    assert "resourceClaimTemplateName" in text and "nvidia.com/gpu: 1" not in text


def test_really_templated_file_asking_for_a_device_fails_lint(tmp_path: Path) -> None:
    f = tmp_path / "job.yaml"
    f.write_text(CHAT_TEMPLATE.split("---\n")[1].replace("name: vllm\nspec", "name: {{ .Values.name }}\nspec"))
    code, report = _run("lint", f)
    (finding,) = report["findings"]
    assert (finding["rule"], finding["severity"], finding["line"]) == ("templated-device-file", "error", 4)
    assert code == 1


# R8: legacy KFServing, always on Knative.
KFSERVING = """\
apiVersion: serving.kubeflow.org/v1beta1
kind: InferenceService
metadata:
  name: flowers
spec:
  predictor:
    tensorflow:
      storageUri: gs://kfserving-samples/models/tensorflow/flowers
      resources:
        limits:
          nvidia.com/gpu: 1
---
apiVersion: serving.kubeflow.org/v1alpha2
kind: InferenceService
metadata:
  name: custom
spec:
  default:
    predictor:
      custom:
        container:
          image: registry.example/model:1
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def test_kfserving_inference_service_is_reported_like_serverless_kserve(tmp_path: Path) -> None:
    f = tmp_path / "kfs.yaml"
    f.write_text(KFSERVING)
    _, report = _run("lint", f)
    findings = report["findings"]
    assert [x["rule"] for x in findings] == ["report-only-kind", "report-only-kind"]
    assert all("Knative" in x["message"] for x in findings)
    _run("fix", f)
    assert f.read_text() == KFSERVING


# R2: envsubst placeholders in the workload name (TPU recipe JobSets launched with `envsubst | kubectl apply`).
JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ${JOB_NAME}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: maxtext:1
              resources:
                limits:
                  google.com/tpu: 4
"""

# R3: a generateName-only Job (Kueue samples).
GENERATED = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: team-a
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: dummy
        image: busybox
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def _fixed(tmp_path: Path, name: str, text: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """fix one file: (its findings from the JSON report, its documents after the fix)."""
    f = tmp_path / name
    f.write_text(text)
    code, report = _run("fix", f)
    assert code == 0, report
    return report["findings"], list(yaml.safe_load_all(f.read_text()))


def test_placeholder_name_stays_in_the_template_name(tmp_path: Path) -> None:
    findings, (jobset, rct) = _fixed(tmp_path, "jobset.yaml", JOBSET)
    name = rct["metadata"]["name"]
    assert name.startswith("${JOB_NAME}-workers-")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == name
    (info,) = [f for f in findings if f["rule"] == "placeholder-name"]
    assert info["severity"] == "info" and info["line"] == 4


def test_generate_name_only_workload_is_migrated(tmp_path: Path) -> None:
    findings, (job, rct) = _fixed(tmp_path, "job.yaml", GENERATED)
    assert rct["metadata"]["name"].startswith("sample-job-") and rct["metadata"]["namespace"] == "team-a"
    assert job["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == rct["metadata"]["name"]
    assert job["metadata"] == {"generateName": "sample-job-", "namespace": "team-a"}
    (info,) = [f for f in findings if f["rule"] == "generate-name-template"]
    assert info["severity"] == "info" and "shares" in info["message"]


# R5: the comment of a removed device line whose count is quoted.
QUOTED = """\
apiVersion: v1
kind: Pod
metadata:
  name: tpu
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        cpu: "8"
        google.com/tpu: "4"  # chips of one v5e host
"""

# R6: a pod spec indented irregularly (a TPU serving file): only the lines the edit changes move.
IRREGULAR = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: serve
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
                 containers:
                 - name: server
                   image: server:1   # pinned
                   args: ["--port", "8000"]  # the port
                   resources:
                       limits:
                            google.com/tpu: 4
                 nodeSelector:
                        cloud.google.com/gke-nodepool: tpu-pool   # the pool
"""


def test_comment_of_a_removed_quoted_count_is_kept(tmp_path: Path) -> None:
    _, (pod, _) = _fixed(tmp_path, "pod.yaml", QUOTED)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "8"}
    assert "# chips of one v5e host" in (tmp_path / "pod.yaml").read_text()


def test_irregularly_indented_pod_spec_is_edited_in_place(tmp_path: Path) -> None:
    _, (jobset, _) = _fixed(tmp_path, "serve.yaml", IRREGULAR)
    text = (tmp_path / "serve.yaml").read_text()
    removed = {"                       limits:\n", "                            google.com/tpu: 4\n"}
    for line in IRREGULAR.splitlines(keepends=True):
        assert line in removed or line in text, f"changed although untouched: {line!r}"
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "tpu"}]}


# R7: device requests held in strings (Argo workflows, benchmark templates in ConfigMaps).
ARGO = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: train-
spec:
  entrypoint: main
  templates:
  - name: main
    podSpecPatch: '{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":2}}}]}'
    container:
      image: trainer:1
  - name: launch
    resource:
      action: create
      manifest: |
        apiVersion: batch/v1
        kind: Job
        metadata:
          generateName: bench-
        spec:
          template:
            spec:
              containers:
              - name: b
                image: bench
                resources:
                  limits:
                    amd.com/gpu: 1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: templates
data:
  readme: "jobs here ask for nvidia.com/gpu: see the templates"
  mpijob.yaml: |
    apiVersion: kubeflow.org/v2beta1
    kind: MPIJob
    metadata:
      name: {{ .Name }}
    spec:
      mpiReplicaSpecs:
        Worker:
          template:
            spec:
              containers:
              - name: w
                resources:
                  limits:
                    nvidia.com/gpu: {{ .GPUs }}
"""


def test_device_requests_inside_strings_are_warned_with_their_line(tmp_path: Path) -> None:
    f = tmp_path / "wf.yaml"
    f.write_text(ARGO)
    _, report = _run("lint", f)
    found = [(x["line"], x["resource"]) for x in report["findings"] if x["rule"] == "embedded-device-request"]
    lines = ARGO.splitlines()
    assert [lines[n - 1].strip() for n, _ in found] == [
        lines[8].strip(),  # the JSON podSpecPatch: its own line
        "amd.com/gpu: 1",  # inside a block scalar: the line of the request itself
        "nvidia.com/gpu: {{ .GPUs }}",
    ]
    assert [r for _, r in found] == ["nvidia.com/gpu", "amd.com/gpu", "nvidia.com/gpu"]
    assert all(x["severity"] == "warning" for x in report["findings"])
    _run("fix", f)
    assert f.read_text() == ARGO  # never rewritten inside a string


def test_pod_asking_for_more_devices_than_one_claim_can_hold_is_left_alone(run_cli: RunCli, tmp_path: Path) -> None:
    # The scheduler's allocator refuses a claim with more than 32 devices (AllocationResultsMaxSize): a container
    # asking for 40 GPUs would become a claim of 40 that never schedules, so fix refuses and says why.
    pod = tmp_path / "big.yaml"
    text = GOOD.format(name="big").replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 40")
    pod.write_text(text)
    code, out, _ = run_cli(["fix", "--format", "json", pod])
    report = json.loads(out)
    refused = [f for f in report["findings"] if f["rule"] == "rewrite-invalid"]
    assert code != 0 and pod.read_text() == text
    assert len(refused) == 1 and "40 devices" in refused[0]["message"] and "at most 32" in refused[0]["message"]


def test_containers_over_the_claim_limit_together_get_one_claim_each(run_cli: RunCli, tmp_path: Path) -> None:
    # Two containers of 20 GPUs: 40 in one claim would never schedule, but nothing ties one container's GPUs to the
    # other's, so each gets a claim of its own.
    pod = tmp_path / "big.yaml"
    text = GOOD.format(name="big").replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 20")
    text += text[text.index("  - name:") :].replace("name: app", "name: second", 1)
    pod.write_text(text)
    code, out, _ = run_cli(["fix", pod])
    assert code == 0, out
    docs = list(yaml.safe_load_all(pod.read_text()))
    templates = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    counts = [[r["exactly"]["count"] for r in t["spec"]["spec"]["devices"]["requests"]] for t in templates]
    assert sorted(counts) == [[20], [20]]
    pod_spec = docs[0]["spec"]
    names = {c["name"]: [e["name"] for e in c["resources"]["claims"]] for c in pod_spec["containers"]}
    assert len(set(names["app"] + names["second"])) == 2, names
    assert {c["name"] for c in pod_spec["resourceClaims"]} == set(names["app"] + names["second"])
