"""Session 35's red team on Helm charts (issue 11 item 3, the Helm sandbox): what session 34 left on this surface,
and new shapes. Each hostile chart is small and checked in-process where the process boundary is not what is
tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target

SECRET = "ya29Zk3yQWxSecret"  # stands in for what a CI step writes at the workspace root (gha-creds-*.json)


def _run(chart: Path, mode: str, options: ChartOptions | None = None) -> ChartOutcome:
    return run_chart(chart, options or ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), mode)


def _shown(outcome: ChartOutcome) -> str:
    """Everything a report of the outcome can print: its findings in JSON, its error and its messages."""
    parts = [json.dumps([f.to_json() for f in outcome.findings]), json.dumps(outcome.templates)]
    parts += [outcome.manual, outcome.left, outcome.usage]
    return "\n".join([*parts, str(outcome.error or "")])


# a pod whose namespace, name, container, device key and a count are rendered from a file of the chart: a chart at
# the root of a workspace reads what CI steps wrote there
READS_A_FILE = """\
{{- $s := regexFind "ya29[A-Za-z0-9]+" (.Files.Get "gha-creds-1.json") }}
apiVersion: v1
kind: Pod
metadata:
  name: p-{{ $s | lower }}
  namespace: {{ $s | lower }}
spec:
  containers:
  - name: c-{{ $s | lower }}
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: 1
        gpu.intel.com/{{ $s }}: 1
  - name: counted
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ $s | quote }}
---
apiVersion: v1
kind: Pod
metadata:
  name: q-{{ $s | lower }}
spec:
  containers:
  - name: d-{{ $s | lower }}
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: 1
"""


@pytest.fixture(scope="module")
def reads_a_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chart = chart_with(tmp_path_factory.mktemp("creds"), "ws", {"templates/pod.yaml": READS_A_FILE})
    (chart / "gha-creds-1.json").write_text(json.dumps({"access_token": SECRET}))
    return chart


@pytest.mark.parametrize("mode", ["lint", "diff"])
def test_text_of_a_chart_file_rendered_into_names_and_counts_is_never_shown(reads_a_file: Path, mode: str) -> None:
    """A template naming a pod, its namespace, a container and a device key, and writing a device count, from a
    chart file had that file's text in the findings (`Pod/p-ya29...`, `container c-ya29...`,
    `gpu.intel.com/ya29... is an extended resource`, `nvidia.com/gpu: "ya29..." is not an integer device count`) in
    every report format, and `fit` printed the claim templates made for them (`p-ya29...-62503490`). Those names
    are now shown only when their words are the chart's own (its templates, values, Chart.yaml, the release); the
    findings are still there, at their template lines."""
    outcome = _run(reads_a_file, mode)

    assert outcome.templates or mode == "lint"
    assert SECRET.lower() not in _shown(outcome).lower()
    rules = {f.rule for f in outcome.findings}
    assert {"legacy-device-request", "invalid-count"} <= rules, rules
    assert all(f.file == f"{reads_a_file}/templates/pod.yaml" and f.line for f in outcome.findings if f.resource)


def test_names_the_chart_writes_itself_are_still_shown(tmp_path: Path) -> None:
    """A pod named from the release, the chart's name and a range index keeps its name in the findings, and so does
    a container named from a value with the index written on (`worker0`: a word of the chart and a number; one pod
    of 2,000 such containers had each hidden) and a value's word ending in a number (`gpt2`)."""
    template = (
        "{{- range $i := until 2 }}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n"
        "  name: {{ $.Release.Name }}-{{ $.Chart.Name }}-{{ $i }}\nspec:\n  containers:\n"
        "  - name: {{ $.Values.container }}{{ $i }}\n    image: app:1\n    resources:\n      limits:\n"
        "        nvidia.com/gpu: 1\n{{- end }}\n"
    )
    chart = chart_with(tmp_path, "trainer", {"values.yaml": "container: gpt2-worker\n", "templates/pod.yaml": template})

    outcome = _run(chart, "lint", ChartOptions(release="nightly"))

    assert {(f.name, f.container) for f in outcome.findings} == {
        ("nightly-trainer-0", "gpt2-worker0"),
        ("nightly-trainer-1", "gpt2-worker1"),
    }


GPU_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-top\nspec:\n  containers:\n  - name: app\n"
    "    image: app:1\n    resources:\n      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n"
)


# a ResourceQuota counting GPUs from a chart file: its finding quoted the count unquoted
QUOTA_FROM_A_FILE = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
spec:
  hard:
    requests.nvidia.com/gpu: {{ regexFind "ya29[A-Za-z0-9]+" (.Files.Get "gha-creds-1.json") | quote }}
"""


@pytest.mark.parametrize("mode", ["lint", "diff"])
def test_a_value_a_message_quotes_without_quotes_is_not_shown_either(tmp_path: Path, mode: str) -> None:
    """`quota requests.nvidia.com/gpu: ya29... is not an integer device count`: a count a message gives without
    quotes came through, and diff repeated it in why the chart needs manual work. Each string of the objects the
    findings are about is now hidden wherever a message gives it, when its words are not the chart's own."""
    chart = chart_with(tmp_path, "ws", {"templates/quota.yaml": QUOTA_FROM_A_FILE, "templates/pod.yaml": GPU_POD})
    (chart / "values.yaml").write_text("gpus: 1\n")
    (chart / "gha-creds-1.json").write_text(json.dumps({"access_token": SECRET}))

    outcome = _run(chart, mode)

    assert SECRET not in _shown(outcome)
    [quota] = [f for f in outcome.findings if f.kind == "ResourceQuota"]
    assert quota.rule == "invalid-count" and "requests.nvidia.com/gpu" in quota.message


@pytest.mark.parametrize("name", ["../evil", "team/trainer"])
def test_a_chart_name_helm_refuses_is_named_with_what_is_wrong(tmp_path: Path, name: str) -> None:
    """A Chart.yaml whose name is a path (`../evil`) is refused by Helm before any template runs, `chart.metadata.name
    "../evil" is invalid`; dramigrate said only "the chart does not render; Helm's message is not shown", as the
    name is not in the chart's templates. A Chart.yaml is the chart's own metadata, which no template writes: its
    text may be quoted, with what Helm asks of it."""
    chart = chart_with(tmp_path, "c", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD})
    (chart / "Chart.yaml").write_text(f'apiVersion: v2\nname: "{name}"\nversion: 0.1.0\n')

    outcome = _run(chart, "lint")

    assert outcome.error is not None
    assert f'chart.metadata.name "{name}" is invalid' in outcome.error.message
    assert "Chart.yaml: Helm takes a chart's name as a folder name, so it may not hold `/`" in outcome.error.message


def test_a_packed_subchart_past_dramigrates_member_bound_is_checked_alike_by_lint_diff_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Helm renders a packed subchart of any number of files; dramigrate unpacks one of at most 10,000 (here 30).
    lint reported the chart's device request as fixable, but diff and fix called the whole chart bad input (`the
    archive has more than 10000 members`), from a step that only looks for subcharts the proof's renders may leave
    out. Such a subchart is now never left out, and the three commands agree: the request is fixable and fixed."""
    from conftest import packed_chart

    from dramigrate.helm import sandbox

    monkeypatch.setattr(sandbox, "MAX_MEMBERS", 30)
    sub = {"Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n", "templates/cm.yaml": "kind: ConfigMap\n"}
    sub |= {f"files/f{i}.txt": "" for i in range(31)}
    chart = chart_with(tmp_path, "top", {"values.yaml": "gpus: 1\n", "templates/pod.yaml": GPU_POD})
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n"
    )
    (chart / "charts").mkdir()
    (chart / "charts" / "sub-0.1.0.tgz").write_bytes(packed_chart("sub", sub))

    for mode in ("lint", "diff", "fix"):
        outcome = _run(chart, mode)
        assert outcome.error is None, (mode, outcome.error)
        [request] = [f for f in outcome.findings if f.rule == "legacy-device-request"]
        assert request.fixable, mode
    assert outcome.proven


def test_a_device_key_spelled_with_yaml_escapes_is_still_found(tmp_path: Path) -> None:
    """`resources: {"\\u006cimits": {"nvidia.com/gpu": 1}}` is `limits` for Helm, kubectl and the API server: a
    pod with a GPU. A render's documents go to the core only when their text holds a word such as `limits`, so the
    chart linted clean (exit 0) while the same text as a manifest was an error. A document holding an escape that
    can spell a letter is now the core's to read."""
    pod = GPU_POD.replace("      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n", "")
    pod = pod.replace("    resources:\n", '    resources: {"\\u006cimits": {"nvidia.com\\x2Fgpu": 1}}\n')
    chart = chart_with(tmp_path, "esc", {"templates/pod.yaml": pod})

    outcome = _run(chart, "lint")

    assert [f.rule for f in outcome.findings] == ["legacy-device-request"]


def test_a_render_of_thousands_of_documents_is_split_in_one_pass() -> None:
    """Each render's documents were split into those the core reads and the others by asking, for each document,
    whether it was `not in` the first list: comparisons quadratic in the documents, 5.5 million of them for the
    proof of a chart of 1,000 CPU-only pods (9 s of a 40 s diff at 4,000)."""
    import time

    from dramigrate.helm.render import RenderedManifest
    from dramigrate.helm.renderpool import split_relevant

    manifests = [RenderedManifest("c/templates/pods.yaml", f"kind: Pod\nlimits: {i}\n") for i in range(5000)]
    manifests.append(RenderedManifest("c/templates/cm.yaml", "kind: ConfigMap\n"))

    started = time.process_time()
    relevant, others = split_relevant(manifests)

    assert time.process_time() - started < 0.5
    assert relevant == manifests[:-1] and others == manifests[-1:]


def test_the_chart_time_limit_counts_dramigrates_own_work_on_the_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-chart time limit counted only the CPU time of the renders: a chart rendering 4,000 CPU-only pods beside
    one GPU pod renders in a few seconds, but parsing, migrating and comparing those documents in each of the proof's
    renders took diff 40 s (100 s on a loaded machine) with no limit in sight. The limit now bounds the whole work on
    the chart, its renders' CPU and dramigrate's own; the chart is refused by name. (Here 150 pods and a limit of
    0.2 s, the renders taking well under it; the wall clock left out.)"""
    from dramigrate.helm import sandbox

    pods = (
        "{{- range $i := until 150 }}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: cpu-{{ $i }}\nspec:\n"
        "  containers:\n  - name: app\n    image: app:1\n    resources:\n      limits:\n        cpu: 1\n"
        "{{- end }}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu\nspec:\n  containers:\n  - name: app\n"
        "    image: app:1\n    resources:\n      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n"
    )
    chart = chart_with(tmp_path, "many", {"values.yaml": "gpus: 1\n", "templates/pods.yaml": pods})
    monkeypatch.setenv("DRAMIGRATE_HELM_CHART_TIMEOUT", "0.2")
    monkeypatch.setattr(sandbox, "CHART_WALL_FACTOR", 1000)  # only CPU time: a loaded machine changes nothing
    monkeypatch.setattr(sandbox, "_slow_charts", sandbox.SlowBudget(sandbox.CHART_QUICK_SHARE))

    outcome = _run(chart, "diff")

    assert outcome.error is not None and outcome.error.rule == "chart-render-limit", outcome.error
    assert outcome.error.file == str(chart)
    assert "checking the chart took longer than 0.2 s of CPU time in all" in outcome.error.message
    assert not outcome.changes


def test_an_object_whose_kind_is_a_list_does_not_stop_the_hiding(tmp_path: Path) -> None:
    """The objects a chart's findings are about were matched by their (kind, name) as the YAML holds them: a
    document with `kind: [Pod]` (an unknown-kind finding) made that pair unhashable, and the chart ended in an
    internal error where it was checked before."""
    odd = "apiVersion: v1\nkind: [Pod]\nmetadata:\n  name: {a: b}\nspec:\n" + GPU_POD.split("spec:\n", 1)[1]
    chart = chart_with(tmp_path, "odd", {"templates/odd.yaml": odd, "templates/pod.yaml": GPU_POD})
    (chart / "values.yaml").write_text("gpus: 1\n")

    outcome = _run(chart, "lint")

    assert outcome.error is None
    assert sorted(f.rule for f in outcome.findings) == ["legacy-device-request", "unknown-kind"]


def _zeros_member_archive(mib: int) -> bytes:
    """A packed chart of about mib KiB whose first member is mib MiB of zeros: a gzip stream of members, each one
    MiB of zeros, after the member's header."""
    import gzip
    import tarfile

    info = tarfile.TarInfo("sub/files/zeros")
    info.size = mib << 20
    chart = tarfile.TarInfo("sub/Chart.yaml")
    text = b"apiVersion: v2\nname: sub\nversion: 0.1.0\n"
    chart.size = len(text)
    one_mib = gzip.compress(b"\0" * (1 << 20), mtime=0)
    tail = chart.tobuf(tarfile.GNU_FORMAT) + text.ljust(512, b"\0") + b"\0" * 1024
    return gzip.compress(info.tobuf(tarfile.GNU_FORMAT), mtime=0) + one_mib * mib + gzip.compress(tail, mtime=0)


@pytest.mark.parametrize("where", ["files/bomb.tgz", "charts/sub-0.1.0.tgz"])
def test_reading_a_charts_words_never_unpacks_an_archive_past_its_budget(tmp_path: Path, where: str) -> None:
    """The words a chart's own code may write (the hiding's allow list) are read from its packed subcharts too: an
    archive of 1 MiB holding one member of 1 GiB of zeros was unpacked to skip that member, a second of CPU per
    GiB, for any *.tgz of the chart (a 5 MiB one, Helm's bound on a chart file, is 5 GiB; a chart may hold
    twenty). Only charts/ archives are read now, and none past the member that would take it over the budget."""
    import time

    from dramigrate.helm.sandbox import chart_words

    chart = chart_with(tmp_path, "c", {"templates/pod.yaml": GPU_POD})
    (chart / where).parent.mkdir(exist_ok=True)
    (chart / where).write_bytes(_zeros_member_archive(1024))

    started = time.process_time()
    words = chart_words(chart)

    assert time.process_time() - started < 0.5
    assert "Release" in words


@pytest.mark.parametrize(
    "condition",
    ['lookup "v1" "Namespace" "" "kube-system"', '.Capabilities.APIVersions.Has "nvidia.com/v1"', ".Release.IsUpgrade"],
)
def test_a_device_request_that_renders_only_on_a_cluster_fails_lint(tmp_path: Path, condition: str) -> None:
    """`helm template`, as dramigrate renders, gives `lookup` nothing, the capabilities of no cluster and a first
    install: a GPU request inside `{{- if lookup "v1" "Namespace" "" "kube-system" }}` (true on every cluster), or
    behind a GPU operator's API or an upgrade, never rendered, and lint exited 0 on a chart whose `helm install`
    gives the pod a GPU. Such a key is now a legacy-device-request at its template line; a request the same kind of
    condition lets render is reported once, as before."""
    gated = GPU_POD.replace("    resources:\n", f"    {{{{- if {condition} }}}}\n    resources:\n") + "    {{- end }}\n"
    rendered = GPU_POD.replace("-top", "-served").replace(
        "    resources:\n", '    {{- if .Capabilities.APIVersions.Has "v1" }}\n    resources:\n'
    )
    files = {
        "values.yaml": "gpus: 1\n",
        "templates/gated.yaml": gated,
        "templates/served.yaml": rendered + "    {{- end }}\n",
    }
    chart = chart_with(tmp_path, "gated", files)

    outcome = _run(chart, "lint")

    requests = sorted(
        (Path(f.file).name, f.line, f.fixable) for f in outcome.findings if f.rule == "legacy-device-request"
    )
    assert requests == [("gated.yaml", 12, False), ("served.yaml", 12, True)], requests
