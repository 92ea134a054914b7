"""Session 36's red team on Helm charts (issue 11): what session 35 left on this surface (cluster-gated requests
reached through a define, a value or another branch; a chart file's bytes shown as digits), and new shapes. Each
hostile chart is small and checked in-process."""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path

from conftest import chart_with

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart
from dramigrate.rules import load_rules
from dramigrate.versions import Target


def _run(chart: Path, mode: str, options: ChartOptions | None = None) -> ChartOutcome:
    return run_chart(chart, options or ChartOptions(), load_rules(), Settings(), Target.parse("1.34"), mode)


POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: app\n    image: app:1\n"
ON_CLUSTER = 'lookup "v1" "Namespace" "" "kube-system"'

# each template asks for a GPU only where `helm template` cannot see it; the line named is where the request is reached
GATED = {
    # a define of _helpers.tpl writes the key, included under the gate
    "helper.yaml": (
        POD + f'    {{{{- if {ON_CLUSTER} }}}}\n    resources:\n      {{{{- include "g.res" . | nindent 6 }}}}\n'
        "    {{- end }}\n",
        11,
    ),
    # a values map written whole with toYaml under the gate
    "values.yaml": (
        POD
        + "    {{- if .Release.IsUpgrade }}\n    resources: {{- toYaml .Values.res | nindent 6 }}\n    {{- end }}\n",
        10,
    ),
    # a values string run through tpl under the gate
    "tpl.yaml": (
        POD + "    {{- if .Release.IsUpgrade }}\n    {{- tpl .Values.extra . | nindent 4 }}\n    {{- end }}\n",
        10,
    ),
    # the key a dict names, under a gate read from a variable set by lookup
    "variable.yaml": (
        f"{{{{- $on := {ON_CLUSTER} }}}}\n"
        + POD
        + '    {{- if $on }}\n    resources: {{- dict "limits" (dict "nvidia.com/gpu" 1) | toYaml | nindent 6 }}\n'
        "    {{- end }}\n",
        11,
    ),
    # a gate read through a define that reads the cluster
    "define.yaml": (
        POD + '    {{- if include "g.onCluster" . }}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n'
        "    {{- end }}\n",
        12,
    ),
    # the release's name: `helm template`'s default one never takes the branch, any `helm install NAME` does
    "release.yaml": (
        POD
        + '    {{- if ne .Release.Name "release-name" }}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n'
        "    {{- end }}\n",
        12,
    ),
    # a date: the branch renders from some day on
    "clock.yaml": (
        POD
        + '    {{- if gt (now | date "2006" | atoi) 2026 }}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n'
        "    {{- end }}\n",
        12,
    ),
}
HELPERS = (
    '{{- define "g.res" -}}\n{{ include "g.limits" . }}\n{{- end }}\n'
    '{{- define "g.limits" -}}\nlimits:\n  nvidia.com/gpu: 2\n{{- end }}\n'
    f'{{{{- define "g.onCluster" -}}}}{{{{ if {ON_CLUSTER} }}}}yes{{{{ end }}}}{{{{- end }}}}\n'
)
VALUES = "res:\n  limits:\n    nvidia.com/gpu: 1\nextra: |\n  resources:\n    limits:\n      nvidia.com/gpu: 1\n"


def _packed(name: str, template: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, text in {
            "Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n",
            "templates/p.yaml": template,
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_cluster_gated_requests_reached_through_defines_values_variables_and_packed_subcharts(tmp_path: Path) -> None:
    """Session 35 caught a cluster-gated request only as a literal key line of a template right under the gate: lint
    exited 0 when the gate's branch reached the key through a `_helpers.tpl` define, a values map (`toYaml`), a
    values string (`tpl`), a `dict`, or when the gate read the cluster through a variable, a define or the clock, or
    sat in a packed subchart; each of these charts gives the pod a GPU on `helm install`. A request in the other
    branch of a gate whose rendered branch asks for one was passed over as covered (fix then said the chart was
    migrated, leaving 8 device-plugin GPUs for the cluster). A gate that is true here (jupyterhub's hook, whose
    `lookup` is empty outside a cluster) is not named: its branch rendered."""
    files = {f"templates/{name}": text for name, (text, _) in GATED.items()}
    files |= {"templates/_helpers.tpl": HELPERS, "values.yaml": VALUES}
    files["templates/other.yaml"] = (
        POD.format(name="other") + f"    resources:\n      limits:\n    {{{{- if {ON_CLUSTER} }}}}\n"
        "        nvidia.com/gpu: 8\n    {{- else }}\n        nvidia.com/gpu: 1\n    {{- end }}\n"
    )
    files["templates/runs.yaml"] = (
        POD.format(name="runs")
        + f"    {{{{- if not ({ON_CLUSTER}) }}}}\n    resources: {{{{- toYaml .Values.res | nindent 6 }}}}\n"
        "    {{- end }}\n"
    )
    files = {k: v.replace("{name}", Path(k).stem) for k, v in files.items()}
    chart = chart_with(tmp_path, "g", files)
    (chart / "charts").mkdir()
    sub = (
        POD.format(name="sub")
        + f"    {{{{- if {ON_CLUSTER} }}}}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
        + "    {{- end }}\n"
    )
    (chart / "charts" / "sub-0.1.0.tgz").write_bytes(_packed("sub", sub))

    outcome = _run(chart, "lint")

    gated = {(f.file.rsplit("/", 1)[-1], f.line) for f in outcome.findings if "only on a cluster" in f.message}
    wanted = {(name, line) for name, (_, line) in GATED.items()} | {("other.yaml", 12), ("p.yaml", 12)}
    assert wanted <= gated, sorted(wanted - gated)
    assert not {name for name, _ in gated} - {name for name, _ in wanted}, gated
    served = [f for f in outcome.findings if f.file.endswith("runs.yaml")]
    assert [f.name for f in served if f.rule == "legacy-device-request"] == ["runs"]


def _shown(outcome: ChartOutcome) -> str:
    """Everything a report of the outcome can print: its findings in JSON, the claim templates, its messages."""
    parts = [json.dumps([f.to_json() for f in outcome.findings]), json.dumps(outcome.templates)]
    return "\n".join([*parts, outcome.manual, outcome.left, outcome.usage, str(outcome.error or "")])


# a pod named from a chart file's bytes, one decimal number a byte, and a device count that is one of them
BYTES_POD = """\
{{- $b := printf "%v" (.Files.GetBytes "gha-creds-1.json") | trimAll "[]" | replace " " "-" }}
apiVersion: v1
kind: Pod
metadata:
  name: p-{{ $b }}
spec:
  containers:
  - name: c-{{ $b }}
    image: app:1
    resources:
      limits:
        nvidia.com/gpu: {{ index (.Files.GetBytes "gha-creds-1.json") 0 }}
        amd.com/gpu: {{ .Values.fpgas }}
"""


def test_a_chart_file_shown_as_numbers_is_hidden(tmp_path: Path) -> None:
    """Words of a chart file were hidden from every report, numbers never: a template writing a pod's and a
    container's name from `printf "%v" (.Files.GetBytes "gha-creds-1.json")` showed the file one decimal number a
    byte (`Pod/p-121-97-50-57-90`), and a count `index (.Files.GetBytes ...) 0` showed its first byte. A value that
    changes when the chart's data files change is now hidden, numbers too; a count from values is still shown."""
    chart = chart_with(tmp_path, "ws", {"values.yaml": "fpgas: 3\n", "templates/pod.yaml": BYTES_POD})
    (chart / "gha-creds-1.json").write_text("ya29Z")
    secret = "-".join(str(b) for b in b"ya29Z")

    outcome = _run(chart, "lint")

    shown = _shown(outcome)
    assert secret not in shown and "97-50" not in shown
    counts = [f.message for f in outcome.findings if f.rule == "legacy-device-request"]
    assert counts and not [m for m in counts if "gpu: 121" in m or " 121 " in m], counts
    assert any("amd.com/gpu: 3 " in m for m in counts), counts


def test_a_subchart_held_twice_whose_packed_copy_asks_for_a_gpu_fails_lint(tmp_path: Path) -> None:
    """charts/ holding a subchart unpacked (no device) and packed (a GPU pod), of one name and version: Helm renders
    one copy or the other at random, so lint exited 0 on the runs whose render took the folder while `helm install`
    may take the archive (fix already refused such a chart). The copy that asks for a device is now named: lint fails
    whichever copy the render took (without the fix, on about half the runs)."""
    sub = {"Chart.yaml": "apiVersion: v2\nname: gsub\nversion: 0.1.0\n", "templates/p.yaml": POD.format(name="sub")}
    chart = chart_with(tmp_path, "tw", {})
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: tw\nversion: 0.1.0\ndependencies:\n- name: gsub\n  version: 0.1.0\n"
    )
    folder = chart / "charts" / "gsub" / "templates"
    folder.mkdir(parents=True)
    (folder.parent / "Chart.yaml").write_text(sub["Chart.yaml"])
    (folder / "p.yaml").write_text(sub["templates/p.yaml"])
    gpu = sub["templates/p.yaml"] + "    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    (chart / "charts" / "gsub-0.1.0.tgz").write_bytes(_packed("gsub", gpu))

    outcome = _run(chart, "lint")

    # the render that took the archive names its request as any; the one that took the folder, the archive's twin
    named = [f for f in outcome.findings if f.rule == "legacy-device-request" and f.severity == "error"]
    assert named and named[0].resource == "nvidia.com/gpu", outcome.findings


def test_a_chain_of_defines_and_variables_under_a_gate_is_read_in_linear_time(tmp_path: Path) -> None:
    """The reading of cluster-gated branches followed defines and variables to a fixed point, a pass each: a chain
    of 3,000 defines, each including the next and the last reading `lookup`, held lint past two minutes (43 s of CPU
    then stopped). Each define and each variable is now read once; the request at the chain's end is still named."""
    from dramigrate.helm.clustergated import cluster_gated

    n = 600
    chain = [f'{{{{- define "d{i}" -}}}}{{{{ include "d{i + 1}" . }}}}{{{{- end }}}}' for i in range(n)]
    chain.append(f'{{{{- define "d{n}" -}}}}{{{{ if {ON_CLUSTER} }}}}y{{{{ end }}}}{{{{- end }}}}')
    variables = [f"{{{{- $v{i + 1} := $v{i} }}}}" for i in range(n)]
    pod = (
        f"{{{{- $v0 := {ON_CLUSTER} }}}}\n"
        + "\n".join(variables)
        + "\n"
        + POD.format(name="p")
        + '    {{- if and $v600 (include "d0" .) }}\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n'
        "    {{- end }}\n"
    )
    chart = chart_with(tmp_path, "chain", {"templates/_helpers.tpl": "\n".join(chain), "templates/pod.yaml": pod})

    started = time.process_time()
    found = cluster_gated(chart, "chain", [], load_rules())

    assert time.process_time() - started < 0.5
    assert [(f.line, f.resource) for f in found] == [(n + 13, "nvidia.com/gpu")]


def test_a_gpu_pod_in_the_crds_folder_fails_lint(tmp_path: Path) -> None:
    """`helm install` creates every object of a chart's crds/ files (its subcharts' too) as it is, with no check of
    its kind; `helm template` leaves them out, and so did dramigrate: a GPU Pod in crds/ linted clean. Its request is
    now a legacy-device-request at its own line, which fix leaves (a crds/ file is not a template)."""
    gpu = POD.format(name="p") + "    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    chart = chart_with(tmp_path, "crd", {"crds/pod.yaml": gpu})
    (chart / "charts").mkdir()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for rel, text in {"Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n", "crds/pod.yaml": gpu}.items():
            info = tarfile.TarInfo(f"sub/{rel}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    (chart / "charts" / "sub-0.1.0.tgz").write_bytes(archive.getvalue())

    outcome = _run(chart, "lint")

    found = sorted((f.file.split("/crd/", 1)[1], f.line, f.fixable) for f in outcome.findings)
    assert found == [("charts/sub-0.1.0.tgz/sub/crds/pod.yaml", 11, False), ("crds/pod.yaml", 11, False)], found
