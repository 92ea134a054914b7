"""Speed of a chart fix with its proof (issue 7: "fix of a chart with its proof under 5 s"): the proof renders each
value set of the original chart once (twice when the chart has random values, to mask them), and independent renders
run in several Helm workers at once, with the same outcome as one at a time.

Renders are real (the Helm engine embedded in helm-python-sdk); one small pattern-A chart, fixed three times.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with
from test_helm_idiomatic import RULES, T136, write_chart

from dramigrate.cli import prestart_for
from dramigrate.config import Settings
from dramigrate.helm import probe as helm_probe
from dramigrate.helm import renderpool, sandbox
from dramigrate.helm import run as helm_run
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart


class Recorder:
    """Every render request the chart run sends to a Helm worker, and how many were in flight at most."""

    def __init__(self, meet: bool = False) -> None:
        self.requests: list[tuple[str, str]] = []
        self.busy = self.most = 0
        self.lock = threading.Condition()
        self.real = sandbox.render_in_child
        self.meet = meet

    def __call__(self, payload: dict[str, Any], timeout: float, memory_mb: int) -> dict[str, Any]:
        with self.lock:
            self.requests.append((payload["chart"], json.dumps(payload["values"], sort_keys=True)))
            self.busy += 1
            self.most = max(self.most, self.busy)
            self.lock.notify_all()
            if self.meet and len(self.requests) <= MEET_WITHIN:
                # the first renders wait for another to start: on a loaded machine two fast renders submitted at once
                # may else never overlap; one worker's renders never meet and the wait runs out
                self.lock.wait_for(lambda: self.most >= 2, timeout=2.0)
        try:
            return self.real(payload, timeout, memory_mb)
        finally:
            with self.lock:
                self.busy -= 1


MEET_WITHIN = 4  # renders that wait for a second one to start (Recorder(meet=True))
SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n  token: {{ randAlphaNum 16 | quote }}\n"


def fix(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, threads: int, random: bool = False
) -> tuple[ChartOutcome, Recorder]:
    chart = shutil.copytree(write_chart(tmp / "original"), tmp / "fixed" / "app")
    if random:
        (chart / "templates" / "secret.yaml").write_text(SECRET)
    recorder = Recorder(meet=threads > 1)
    with monkeypatch.context() as patch:
        patch.setattr(sandbox, "render_in_child", recorder)
        patch.setattr(sandbox, "render_parallelism", lambda: threads)
        patch.setattr(renderpool, "PARALLEL_FROM", 0.0)  # a small chart: parallel from the first batch all the same
        outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    return outcome, recorder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[ChartOutcome, Recorder]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {
            "serial": fix(tmp_path_factory.mktemp("serial"), monkeypatch, 1),
            "parallel": fix(tmp_path_factory.mktemp("parallel"), monkeypatch, 2),
            "random": fix(tmp_path_factory.mktemp("random"), monkeypatch, 1, random=True),
        }


def original_renders(recorder: Recorder) -> Counter[str]:
    """How often each set of values was rendered with the chart the run checks (its private copy)."""
    charts = {chart for chart, _ in recorder.requests if chart.endswith("/app") and "rewritten" not in chart}
    assert len(charts) == 1
    return Counter(values for chart, values in recorder.requests if chart in charts)


def test_each_value_set_of_a_steady_chart_is_rendered_once(runs: dict[str, tuple[ChartOutcome, Recorder]]) -> None:
    """Nothing in the chart renders differently twice: the proof's second render of each value set is left out."""
    outcome, recorder = runs["serial"]
    counts = original_renders(recorder)
    assert set(counts.values()) == {1}, counts.most_common(3)
    assert len(counts) >= len(outcome.checked)


def test_a_chart_with_random_values_is_rendered_twice_per_value_set(
    runs: dict[str, tuple[ChartOutcome, Recorder]],
) -> None:
    """randAlphaNum: each value set the proof checks is rendered a second time, and the random field is masked."""
    outcome, recorder = runs["random"]
    counts = original_renders(recorder)
    assert max(counts.values()) == 2, counts.most_common(3)  # once, and once more for the random fields
    assert sum(1 for n in counts.values() if n == 2) >= len(outcome.checked)


def test_renders_run_in_parallel_with_the_same_outcome(runs: dict[str, tuple[ChartOutcome, Recorder]]) -> None:
    """Two Helm workers render at once; the rewrite, the value sets proven and the findings are the same."""
    (serial, one), (parallel, two) = runs["serial"], runs["parallel"]
    assert one.most == 1 and two.most == 2
    assert [(c.rel, c.after) for c in parallel.changes] == [(c.rel, c.after) for c in serial.changes]
    assert parallel.checked == serial.checked
    assert shown(parallel) == shown(serial)


def test_the_second_render_of_a_slow_value_set_starts_before_the_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value set that renders slowly (nim-llm's multi-node set generates an RSA key: up to 2 s a render) and has
    random values is rendered a second time as soon as its first render is in, on another Helm worker, so that
    render overlaps the migration of the value sets and the rewritten chart's renders instead of following them."""
    monkeypatch.setattr(renderpool, "AGAIN_FROM", 0.0)  # this small chart renders fast: every render counts as slow
    monkeypatch.setattr(renderpool, "AGAIN_TIMES", 0)
    _, recorder = fix(tmp_path, monkeypatch, 2, random=True)
    seen: set[tuple[str, str]] = set()
    second = rewritten = len(recorder.requests)
    for i, (chart, values) in enumerate(recorder.requests):
        if "rewritten" in chart:
            rewritten = min(rewritten, i)
        elif (chart, values) in seen:
            second = min(second, i)
        seen.add((chart, values))
    assert second < rewritten, recorder.requests


def test_a_chart_that_generates_keys_renders_on_two_workers_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template that generates a key (genPrivateKey: 0.1 to 2 s a render where the others take milliseconds, in
    nim-llm's multi-node secret) makes the run render on two Helm workers from the probe on, so one slow render does
    not hold up the others; here the key's template is off, the renders are fast and would have gone one at a time."""
    chart = shutil.copytree(write_chart(tmp_path / "original"), tmp_path / "fixed" / "app")
    (chart / "templates" / "ssh.yaml").write_text(
        "{{- if .Values.ssh }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: ssh\nstringData:\n"
        '  key: {{ genPrivateKey "rsa" | b64enc | quote }}\n{{- end }}\n'
    )
    recorder = Recorder()
    sandbox.shutdown()  # the workers earlier tests left
    monkeypatch.setattr(sandbox, "render_in_child", recorder)
    monkeypatch.setattr(sandbox, "render_parallelism", lambda: 2)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert recorder.most == 2


def test_a_chart_that_generates_keys_starts_no_helm_worker_with_a_helm_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --helm-binary every render runs that binary: a template that generates a key starts no second bundled
    Helm worker (was: one started for the probe and never used)."""
    chart = chart_with(
        tmp_path,
        "app",
        {
            "templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
            "templates/ssh.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ssh\nstringData:\n"
            '  key: {{ genPrivateKey "rsa" | b64enc | quote }}\n',
        },
    )
    rendered = tmp_path / "out.yaml"  # what `helm template` prints for the chart
    rendered.write_text(
        "---\n# Source: app/templates/pod.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
        "  containers:\n  - name: c\n    image: x\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    )
    helm = tmp_path / "helm"
    helm.write_text(f'#!/bin/sh\n[ "$1" = template ] || exit 3\ncat "{rendered}"\n')
    helm.chmod(0o755)
    sandbox.shutdown()  # the workers earlier tests left
    monkeypatch.setattr(sandbox, "render_parallelism", lambda: 2)
    outcome = run_chart(chart, ChartOptions(helm_binary=helm), RULES, Settings(), T136, "lint")
    assert [f.rule for f in outcome.findings] == ["legacy-device-request"], outcome.report()
    assert sandbox.workers_started() == 0


def test_a_chart_a_library_writes_ends_after_the_users_value_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chart whose template only includes a library's loader (immich, app-template on bjw-s common) is manual work,
    known from the value sets the user gives: the proof's other value sets (the count switched off, a device added)
    are neither rendered nor migrated (immich spent seconds on them), and the message and findings are the ones the
    whole run ends with."""
    from test_helm_media_charts import loader_chart

    def run(folder: str) -> tuple[ChartOutcome, Recorder]:
        recorder = Recorder()
        with monkeypatch.context() as patch:
            patch.setattr(sandbox, "render_in_child", recorder)
            outcome = run_chart(loader_chart(tmp_path / folder), ChartOptions(), RULES, Settings(), T136, "fix")
        return outcome, recorder

    early, recorder = run("early")
    assert "written by the library chart charts/lib" in early.manual, early.report()
    assert not any('"amd.com/gpu": 0' in values for _, values in recorder.requests), recorder.requests
    monkeypatch.setattr(helm_run, "_library_only", lambda *args: "")  # every value set, then the rewrite's refusal
    monkeypatch.setattr(helm_run, "_no_rewrite_shape", lambda *args: "")
    whole, recorder = run("whole")
    assert any('"amd.com/gpu": 0' in values for _, values in recorder.requests), recorder.requests
    assert early.manual == whole.manual
    assert shown(early).replace("early", "whole") == shown(whole)


def shown(outcome: ChartOutcome) -> str:
    """The findings as the JSON report shows them, the chart's temp folder left out."""
    return json.dumps([f.to_json() for f in outcome.findings]).replace(str(outcome.chart), "<chart>")


def test_an_umbrella_fix_parses_each_chart_yaml_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fix of an umbrella asks for its subcharts' names and aliases hundreds of times (0.5 s of YAML parsing on
    a chart of 17 subcharts): each Chart.yaml text is parsed once, and a changed file is read as changed."""
    import yaml
    from test_chart_umbrella import write_umbrella

    from dramigrate.helm.rewrite import _parsed_chart_yaml, chart_name

    _parsed_chart_yaml.cache_clear()  # an earlier test in this process may have parsed the same texts
    umbrella = write_umbrella(tmp_path)
    texts = {(umbrella / "Chart.yaml").read_text(), (umbrella / "charts" / "app" / "Chart.yaml").read_text()}
    parsed: Counter[str] = Counter()
    real = yaml.safe_load

    def counting(text: Any) -> Any:
        if text in texts:
            parsed[text] += 1
        return real(text)

    monkeypatch.setattr(yaml, "safe_load", counting)
    outcome = run_chart(umbrella, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert parsed and max(parsed.values()) == 1, parsed
    (umbrella / "charts" / "app" / "Chart.yaml").write_text("apiVersion: v2\nname: renamed\nversion: 0.1.0\n")
    assert chart_name(umbrella / "charts" / "app") == "renamed"


def test_the_helm_worker_collects_garbage_less_often_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """A render allocates much and keeps little: the worker runs Go's collector at GOGC=400 (a third less CPU a
    render), bounded by GOMEMLIMIT at half the memory limit; a GOGC the user set is kept."""
    environ = Path("/proc/self/environ")
    if not environ.is_file():
        pytest.skip("no /proc here to read a process's environment")

    def worker_env() -> dict[str, str]:
        sandbox.shutdown()
        sandbox.prestart(1024)
        pid = sandbox._workers[-1].process.pid
        for _ in range(100):  # empty until the worker's exec is done
            raw = Path(f"/proc/{pid}/environ").read_bytes()
            if b"GOTRACEBACK=" in raw:
                break
            time.sleep(0.05)
        sandbox.shutdown()
        return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)

    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    env = worker_env()
    assert (env.get("GOGC"), env.get("GOMEMLIMIT")) == ("400", "512MiB")
    monkeypatch.setenv("GOGC", "100")
    assert worker_env()["GOGC"] == "100"


def test_the_render_process_starts_with_the_command_line_when_it_names_a_chart(tmp_path: Path) -> None:
    """`dramigrate fix <chart>` starts its Helm worker before parsing options and importing the commands, so the
    worker's start overlaps them; a run that names no chart, or renders with --helm-binary, starts none."""
    chart = write_chart(tmp_path)
    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\n")
    cases = {
        ("fix", str(chart), "--exit-zero"): 1,
        ("lint", "--values=x.yaml", str(chart)): 1,
        ("lint", str(manifest)): 0,
        ("fix", str(chart), "--helm-binary=/usr/bin/helm"): 0,
        ("rules", "list"): 0,
    }
    for argv, started in cases.items():
        sandbox.shutdown()
        prestart_for(list(argv))
        assert sandbox.workers_started() == started, argv
    sandbox.shutdown()


def test_each_versions_schema_definitions_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proof D validates a dozen kinds for Kubernetes 1.34 and 1.36: the 1.5 MB of definitions every kind's schema
    refers to are read once per version, not once per kind (two thirds of jupyterhub's validation time); errors are
    found as before."""
    import kubernetes_validate.utils

    from dramigrate import validate

    read: Counter[str] = Counter()
    real = kubernetes_validate.utils.schema_contents

    def counting(filename: str, version: str) -> Any:
        if filename.endswith("/_definitions.json"):
            read[filename] += 1
        return real(filename, version)

    monkeypatch.setattr(kubernetes_validate.utils, "schema_contents", counting)
    validate._validator.cache_clear()  # earlier tests in this process built validators already
    validate._definitions.cache_clear()
    kinds = ("Pod", "Service", "ConfigMap", "Secret", "ServiceAccount")
    for version in ("1.34", "1.36"):
        for kind in kinds:
            assert validate.schema_errors({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}}, version) == []
        bad = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x"},
            "spec": {"containers": [{"name": "a", "x": 1}]},
        }
        assert validate.schema_errors(bad, version) == [
            "spec.containers.0: Additional properties are not allowed ('x' was unexpected)"
        ]
    assert sorted(read.values()) == [1, 1], read


def test_fix_loads_the_html_page_engine_only_for_html() -> None:
    """fix and diff take the changed files' record from the HTML report module: jinja2, which only the page needs,
    is loaded when the page is written (--html), not on every run (60 ms of a chart fix)."""
    import subprocess
    import sys

    code = "import sys, dramigrate.report.html; print('jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def validated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the objects validated from now on, each time one is (none remembered from before)."""
    from dramigrate import validate

    checked: list[str] = []
    real = validate.schema_errors

    def counting(obj: dict[str, Any], version: str) -> list[str]:
        checked.append(obj["metadata"]["name"])
        return real(obj, version)

    monkeypatch.setattr(validate, "schema_errors", counting)
    monkeypatch.setattr(validate, "_CHECKED", {})
    return checked


def test_the_original_render_is_validated_only_when_the_rewritten_one_has_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Proof D leaves out schema errors the original chart has too; it validates the original render's objects only
    when the rewritten render has an error to excuse (it validated both for every value set)."""
    from dramigrate.helm import prove

    checked = validated(monkeypatch)
    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: a\n"
    pod += "    image: b\n{extra}"
    valid, original = pod.format(name="rewritten", extra=""), pod.format(name="original", extra="")
    assert prove.strict_errors(valid, ("1.34",), original) == ""
    assert checked == ["rewritten"]
    slip = "    readinessProbe:\n      initialDelay: 15\n"  # the chart's own slip, before and after the rewrite
    same = pod.format(name="same", extra=slip)
    assert prove.strict_errors(same, ("1.34",), same) == ""
    assert "initialDelay" in prove.strict_errors(same, ("1.34",), valid)


def test_an_object_the_original_render_holds_as_it_is_is_not_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proof D validates only the objects the rewrite changed: one the original render holds as it is (its kind,
    name and every field alike) can only have the original's errors, which the proof leaves out; a changed one is
    validated, and its new error found."""
    from dramigrate.helm import prove

    checked = validated(monkeypatch)
    pod = "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: a\n    image: b\n"
    slip = "    readinessProbe:\n      initialDelay: 15\n"  # the chart's own slip
    kept, changed = pod.format(name="kept") + slip, pod.format(name="changed")
    before = kept + changed
    assert prove.strict_errors(kept + changed.replace("image: b", "image: c"), ("1.34", "1.36"), before) == ""
    assert checked == ["changed", "changed"]  # once for each version
    broken = changed + "    ports: 80\n"  # a field the rewrite got wrong
    assert "ports" in prove.strict_errors(kept + broken, ("1.34",), before)


SERVICES = """\
{{- range $name, $svc := .Values.services }}
{{- if $svc.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
spec:
  replicas: {{ $svc.replicas }}
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: app
          image: app
          resources:
            limits:
              cpu: {{ $svc.cpus }}
{{- end }}
{{- end }}
{{- if .Values.worker.enabled }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
        - name: worker
          image: worker
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.worker.gpus }}
{{- end }}
"""


def probed(chart: Path, monkeypatch: pytest.MonkeyPatch, group: int) -> tuple[ChartOutcome, int]:
    """A lint run of the chart with PROBE_GROUP keys to a probe render, and how many renders the probe spent."""
    probes: list[dict[str, Any]] = []
    real = helm_probe.probe_renders

    def counted(*args: Any) -> list[Any]:
        probes.extend(args[2])  # the changed value sets, one render each
        return real(*args)

    with monkeypatch.context() as patch:
        patch.setattr(helm_probe, "probe_renders", counted)
        patch.setattr(helm_probe, "PROBE_GROUP", group, raising=False)
        outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "lint")
    return outcome, len(probes)


def test_values_keys_that_drive_no_device_are_probed_a_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groundx renders in 0.35 s and has many number and boolean values (each service's `enabled`, replicas, cpus):
    its lint probed 40 keys one render each (17 s of a 25 s fix). Now the keys that name no device are changed
    several at a time, a group halved only when its render asks for other devices: far fewer renders, and the same
    value sets proven as when each key is probed alone (the count, its switch)."""
    services = "".join(f"  s{i}:\n    enabled: true\n    replicas: 1\n    cpus: 2\n" for i in range(12))
    values = f"worker:\n  enabled: true\n  gpus: 2\nservices:\n{services}"
    chart = chart_with(tmp_path, "many", {"templates/d.yaml": SERVICES, "values.yaml": values})

    alone, singly = probed(chart, monkeypatch, 1)
    grouped, renders = probed(chart, monkeypatch, helm_probe.PROBE_GROUP)
    assert shown(grouped) == shown(alone)
    assert "worker.gpus: 2 sets this device count" in shown(grouped)
    assert "worker.enabled: true keeps this device request" in shown(grouped)
    assert renders * 2 < singly, (renders, singly)


STRICT = """\
{{- range $name, $on := .Values.features }}
{{- if not $on }}{{ fail (printf "feature %s is required" $name) }}{{ end }}
{{- end }}
apiVersion: v1
kind: Pod
metadata:
  name: worker
spec:
  containers:
    - name: worker
      image: worker
      resources:
        limits:
          nvidia.com/gpu: {{ .Values.gpus }}
"""


def test_keys_that_fail_the_chart_cost_a_probe_group_one_render_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chart that fails when any feature is turned off: every group of such keys fails to render. Halving each
    failed group until its keys were alone cost 15 renders for 8 keys, almost twice probing each alone; a group that
    does not render is split into its keys, one render more than probing them alone."""
    features = "".join(f"  f{i}: true\n" for i in range(16))
    chart = chart_with(
        tmp_path, "strict", {"templates/p.yaml": STRICT, "values.yaml": f"gpus: 1\nfeatures:\n{features}"}
    )
    alone, singly = probed(chart, monkeypatch, 1)
    grouped, renders = probed(chart, monkeypatch, helm_probe.PROBE_GROUP)
    assert shown(grouped) == shown(alone)
    assert renders <= singly + -(-singly // helm_probe.PROBE_GROUP), (renders, singly)


# one Deployment per service, each passing its own values `resources` map through (pattern B); a service with
# `enabled: false` renders none
SERVICE_MAPS = """\
{{- range $name, $svc := .Values.services }}
{{- if ne $svc.enabled false }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}-inference
spec:
  replicas: {{ $svc.replicas }}
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      containers:
        - name: {{ $name }}-inference
          image: app
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
{{- end }}
{{- end }}
"""


def service_maps(tmp_path: Path) -> Path:
    gpu = "      limits:\n        nvidia.com/gpu: 1\n      requests:\n        nvidia.com/gpu: 1\n"
    switch = {"layout": "", "ranker": "    enabled: true\n", "summary": ""}  # only the ranker has a switch
    services = "".join(
        f"  {name}:\n{enabled}    replicas: 1\n    resources:\n{gpu}" for name, enabled in switch.items()
    )
    return chart_with(tmp_path, "maps", {"templates/d.yaml": SERVICE_MAPS, "values.yaml": f"services:\n{services}"})


def test_the_device_keys_of_several_maps_are_probed_in_one_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groundx has a device count in the limits and in the requests of each inference service's map: each of those
    keys was probed in a render of its own. Now they are changed together, each to a count of its own (one more,
    then 100 apart), and each request that follows is read off as following the key whose count it took: one
    render for them all, the same values keys found as probing each alone."""
    chart = service_maps(tmp_path)
    alone, _ = probed(chart, monkeypatch, 1)
    probes: list[dict[str, Any]] = []
    real = helm_probe.probe_renders

    def counted(*args: Any) -> list[Any]:
        probes.extend(args[2])
        return real(*args)

    monkeypatch.setattr(helm_probe, "probe_renders", counted)
    together = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "lint")
    assert shown(together) == shown(alone)
    assert 'services.layout.resources.limits[\\"nvidia.com/gpu\\"]: 1 sets this device count' in shown(together)
    keys = [(s, svc, part) for s in ("layout", "ranker", "summary") for svc in [s] for part in ("limits", "requests")]
    changing = [v for v in probes if any(v["services"][s]["resources"][p]["nvidia.com/gpu"] != 1 for s, _, p in keys)]
    assert len(changing) < len(keys), changing


def test_a_probe_group_that_turns_a_workload_off_finds_its_switch_in_one_more_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group of values keys whose render loses the `ranker-inference` Deployment was halved until its switch was
    alone (three rounds of two renders for a group of eight). Now the key that shares the most words with what
    changed (`services.ranker.enabled`) is tried alone beside the rest of the group: one round, the same keys found."""
    chart = service_maps(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(helm_probe, "likely_leaf", lambda *args: None)  # halving only, as before
        halved, halving = probed(chart, monkeypatch, helm_probe.PROBE_GROUP)
    guessed, renders = probed(chart, monkeypatch, helm_probe.PROBE_GROUP)
    assert shown(guessed) == shown(halved)
    assert "services.ranker.enabled: true keeps this device request" in shown(guessed)
    assert renders < halving, (renders, halving)


def test_a_proofs_migrations_read_the_renders_without_ruamels_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proof migrates every value set's render and reads each migration as objects only. Helm's renders hold
    comments and blank lines (a template's own, the `# Source:` line), and such a document went to ruamel's
    pure-Python parser, most of a proof's migration time; now it is composed from libyaml's events, its comments
    left out. Only the base render, whose findings fix reports at their template lines, is still parsed by ruamel
    (its one Deployment). The outcome is the same: proven, with the same rewrite as a chart without the comments."""
    from ruamel.yaml.main import YAML
    from test_helm_idiomatic import DEPLOYMENT

    commented = DEPLOYMENT.replace("    spec:\n", "    spec:\n      # the model server\n\n      \n")
    plain = run_chart(write_chart(tmp_path / "plain"), ChartOptions(), RULES, Settings(), T136, "fix")
    parsed: list[str] = []
    real = YAML.load

    def load(self: YAML, stream: Any) -> Any:
        parsed.append(stream if isinstance(stream, str) else "")
        return real(self, stream)

    monkeypatch.setattr(YAML, "load", load)
    chart = write_chart(tmp_path / "commented", commented)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert len(outcome.checked) > 3  # value sets migrated: each was parsed by ruamel
    assert [p.splitlines()[0] for p in parsed if "kind: Deployment" in p] == ["# Source: app/templates/deployment.yaml"]
    assert [(c.rel, c.after.replace("      # the model server\n\n      \n", "")) for c in outcome.changes] == [
        (c.rel, c.after) for c in plain.changes
    ]


def test_an_object_is_validated_once_per_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proof migrates a dozen value sets whose pod specs and claim templates are mostly the same, and the strict
    schema's walk of each was a fifth of the migration time: an object equal to one checked before (its keys in the
    same order) takes that one's errors, another is checked; a caller that extends the errors
    (claim_template_errors) changes nothing for the next."""
    from dramigrate import validate

    walked: list[str] = []
    real = validate._schema_errors

    def counting(obj: dict[str, Any], version: str) -> list[str]:
        walked.append(version)
        return real(obj, version)

    monkeypatch.setattr(validate, "_schema_errors", counting)
    monkeypatch.setattr(validate, "_CHECKED", {})

    def pod(*extra: str) -> dict[str, Any]:
        container = {"name": "a", "image": "b", **{key: 1 for key in extra}}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [container]}}

    first = validate.schema_errors(pod("x", "y"), "1.34")
    assert first == ["spec.containers.0: Additional properties are not allowed ('x', 'y' were unexpected)"]
    first.append("the caller's own")
    assert validate.schema_errors(pod("x", "y"), "1.34") == real(pod("x", "y"), "1.34")
    assert validate.schema_errors(pod("z"), "1.34") == real(pod("z"), "1.34") != first
    validate.schema_errors(pod("x", "y"), "1.36")
    assert walked == ["1.34", "1.34", "1.36"]  # x-y once, z, and x-y for 1.36


def test_the_tolerations_of_a_render_are_read_with_the_c_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proof asks, for each value set that gives the pods a tolerations list, whether the render carries it, and
    reads the user's render again each time: PyYAML's Python parser did (4% of oci-gpu-scanner's fix); the C loader
    reads each document once. The lists are the same, and a render that does not parse still carries nothing."""
    import yaml

    from dramigrate.helm.passthroughproof import _tolerations_lists

    def python_parser(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("PyYAML's Python parser")

    pod = "---\n# Source: app/templates/{0}.yaml\nkind: Pod\nmetadata:\n  name: {0}\nspec:\n  tolerations:\n{1}"
    stream = pod.format("a", "  - key: gpu\n    operator: Exists\n") + pod.format("b", "  - {key: x, value: 'y'}\n")
    expected = [[{"key": "gpu", "operator": "Exists"}], [{"key": "x", "value": "y"}]]
    assert list(yaml.safe_load_all(stream))[0]["spec"]["tolerations"] == expected[0]
    monkeypatch.setattr(yaml, "safe_load_all", python_parser)
    assert _tolerations_lists(stream) == expected
    assert _tolerations_lists(stream + "---\nkind: [\n") is None
