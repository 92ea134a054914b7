"""Shared fixtures: the public corpus beside the repo, and the installed `dramigrate` entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Input generation is timed by the wall clock: on a loaded machine (CI runners, two cores shared) a strategy that
# is fast alone trips the too_slow health check, a failure that says nothing about dramigrate. Tests that mean a
# deadline set their own.
settings.register_profile("dramigrate", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dramigrate")

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
CORPUS_MISSING = "../shared/corpus is not beside the repo (it exists only in the dramigrate workspace and CI)"

RunCli = Callable[..., tuple[int, str, str]]

# One Pod asking for one GPU; `.format(name=...)` names it.
ONE_GPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: 1
"""

# A chart template: one Pod asking for `.Values.gpus` GPUs, none when it is 0 or unset.
GPU_POD_TEMPLATE = """\
{{- if .Values.gpus }}
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-pod
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ .Values.gpus }}
{{- end }}
"""

DEPLOYMENT_HEAD = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {app}}}
  template:
    metadata:
      labels: {{app: {app}}}
    spec:
"""


def deployment(name: str, pod_spec: str, app: str = "") -> str:
    """A Deployment (a manifest or a chart template) named name, labelled `{app: APP}` for its selector (app: the
    name without a leading `{{ .Release.Name }}-`), whose pod spec is pod_spec: the text under the pod's `spec:`,
    written as it stands in the file (six spaces in) and taken as it is, with anything after it."""
    return DEPLOYMENT_HEAD.format(name=name, app=app or name.removeprefix("{{ .Release.Name }}-")) + pod_spec


# A chart template whose one Deployment passes the values `resources` map through (pattern B).
TOYAML_SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
        - name: server
          image: server:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
)


def dramigrate_executable() -> str:
    """The console script installed next to the running interpreter (the venv's bin/), else the one on PATH."""
    beside = Path(sys.executable).parent / "dramigrate"
    if beside.is_file():
        return str(beside)
    found = shutil.which("dramigrate")
    if found is None:
        pytest.fail("the dramigrate entry point is not installed: pip install -e '.[test]'")
    return found


def run_dramigrate(
    args: Sequence[str | os.PathLike[str]],
    stdin: str | bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 120,
) -> tuple[int, str, str]:
    """Run the installed `dramigrate` with args; (exit code, stdout, stderr) as text."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [dramigrate_executable(), *map(str, args)],
        input=data if data is not None else b"",
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )
    return (
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def dramigrate_in_process(
    args: Sequence[str | os.PathLike[str]],
    stdin: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 120,
) -> tuple[int, str, str]:
    """dramigrate ARGS run in this process through the CLI's own code, as run_dramigrate runs it: (exit code, stdout,
    stderr). For a test whose point is not the process boundary: a process's start (the interpreter and dramigrate's
    imports) is half a second of CPU a call. An exception the CLI lets out is raised here (the subprocess would print
    a traceback and exit 1). timeout: taken for run_dramigrate's signature, not enforced."""
    from typer.testing import CliRunner

    from dramigrate.cli import app

    env = {"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "PYTHONWARNINGS": "ignore"}
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(app, [str(a) for a in args], input=stdin, env=env)
    finally:
        os.chdir(here)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    return CORPUS


@pytest.fixture(scope="session")
def run_cli() -> RunCli:
    """run_cli(args, stdin=None, cwd=None) -> (exit code, stdout, stderr) through the installed entry point."""
    return run_dramigrate


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds marker (a variable a test sets for the run it starts)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in env and state != "Z":
            found.append(int(pid))
    return found


def processes_left(marker: str, seconds: float = 10.0) -> list[int]:
    """processes_with(marker) once they are gone, or when seconds have passed (a killed parent's children take a
    moment to be reaped)."""
    deadline = time.monotonic() + seconds
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def chart_with(root: Path, name: str, files: dict[str, str], version: str = "0.1.0") -> Path:
    """A chart folder root/name: Chart.yaml, an empty templates/, and files (path in the chart -> text)."""
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    for rel, text in files.items():
        (chart / rel).parent.mkdir(parents=True, exist_ok=True)
        (chart / rel).write_text(text)
    return chart


def packed_chart(top: str, files: dict[str, str]) -> bytes:
    """A chart archive as `helm package` writes it: files (path in the chart -> text) under the folder `top`."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def repository_with_config(root: Path, config: str) -> Path:
    """root/repo: a repository (a .git folder) with one GPU pod and the .dramigrate.yaml given; returns it."""
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (repo / ".dramigrate.yaml").write_text(config)
    return repo


def base_and_overlay(root: Path, overlay_kustomization: str) -> Path:
    """A kustomize tree: root/base with one GPU pod, and root/overlay whose kustomization.yaml is the text given;
    returns the overlay folder."""
    base = root / "base"
    base.mkdir(parents=True)
    (base / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (base / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    overlay = root / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(overlay_kustomization)
    return overlay


def overlay_with_alias_bomb(root: Path) -> Path:
    """A kustomize tree whose overlay patch holds a YAML alias bomb (kustomize itself runs for minutes and grows to
    gigabytes building it), and a good GPU manifest beside it."""
    overlay = base_and_overlay(root, "resources:\n- ../base\npatches:\n- path: patch.yaml\n")
    bomb = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
    )
    (overlay / "patch.yaml").write_text(
        bomb + "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\n  annotations: {x: *a8}\n"
    )
    (root / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    return root


def with_original(values: Path) -> tuple[Path, ...]:
    """A values file as a user gives it: a DRA overlay fix wrote (`gpu-dra.yaml`, its header says "give it after")
    after the file it stands for (`gpu.yaml`), any other file alone."""
    original = values.with_name(values.name.removesuffix("-dra.yaml") + ".yaml")
    head = "".join(values.read_text().splitlines(True)[:2]) if values.is_file() else ""
    return (original, values) if values.name.endswith("-dra.yaml") and "give it after" in head else (values,)


def dra_render(chart: Path, values: Path) -> tuple[list[Any], dict[str, int], dict[str, Any]]:
    """A chart rendered with one values file (a DRA overlay after its file): its documents, each
    ResourceClaimTemplate's device count by name, and each Deployment's pod spec by name."""
    import yaml

    from dramigrate.helm.render import RenderOptions, render_chart

    files = with_original(values)
    out = [d for m in render_chart(chart, RenderOptions(values_files=files)) for d in yaml.safe_load_all(m.text) if d]
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in out
        if d["kind"] == "ResourceClaimTemplate"
    }
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"}
    return out, counts, pods


def assert_second_fix_quiet(chart: Path, *args: str) -> None:
    """`dramigrate fix CHART ARGS` run again on a chart fix rewrote (a pre-commit fix hook on the next commit) exits 0,
    says no manual work and writes nothing, in the chart or beside it (its -dra.yaml files)."""
    top = chart.parent
    before = {p: p.read_bytes() for p in top.rglob("*") if p.is_file()}
    code, _, err = dramigrate_in_process(["fix", chart, *args], cwd=top)
    assert code == 0 and "manual" not in err, err
    assert {p: p.read_bytes() for p in top.rglob("*") if p.is_file()} == before


def fix_chart(chart: Path, kube: str = "1.34", values: tuple[Path, ...] = ()) -> Any:
    """Fix a chart in place as `dramigrate fix` does (idiomatic rewrite, proven; with `-f values`) and return the
    outcome."""
    from dramigrate.config import Settings
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart, write_changes
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    settings = Settings(kube_version=kube)
    options = ChartOptions(values_files=values, kube_version=kube)
    outcome = run_chart(chart, options, load_rules(), settings, Target.parse(kube), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    return outcome


def claimed_counts(rendered: list[dict[str, Any]], kind: str = "Deployment") -> dict[str, int | None]:
    """Each workload of `kind`'s claimed device count (None: no claim), asserting no device-plugin request is left
    and every ResourceClaimTemplate rendered is one a pod names (a chart whose count is per `range` item)."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in rendered
        if d["kind"] == "ResourceClaimTemplate"
    }
    out: dict[str, int | None] = {}
    for d in rendered:
        if d["kind"] == kind:
            spec = d["spec"]["template"]["spec"]
            for c in spec["containers"]:
                assert not any("nvidia.com" in k for s in c["resources"].values() if isinstance(s, dict) for k in s)
            name = spec["resourceClaims"][0]["resourceClaimTemplateName"] if "resourceClaims" in spec else None
            out[d["metadata"]["name"]] = counts.pop(name) if name else None
    assert not counts, f"claim templates no pod uses: {counts}"
    return out
