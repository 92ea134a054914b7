"""A chart whose objects a packed library writes from values (bjw-s `common` under app-template and the charts built
like it: `templates/common.yaml` only calls the library's loader, the GPU is in
`controllers.<controller>.containers.<container>.resources`). From common 5.0.1 the library renders a pod's
`resourceClaims` from the controller's `pod:` options and passes a container's `resources` through whole, so `fix`
writes a values-only rewrite: no change to the library, one new template for the claim templates, and DRA variants
of the GPU values files; older versions stay manual work, with the library, its version and why.

A tiny library chart of the same shape is packed in the test (no file of the real library); renders are real."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import yaml
from conftest import chart_with, dra_render, fix_chart, packed_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions, ChartOutcome
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

POD_CLAIMS = """\
{{- if ge (.root.Capabilities.KubeVersion.Minor | int) 32 }}
{{- with (include "bjw-s.common.lib.pod.getOption" (dict "ctx" . "option" "resourceClaims")) }}
resourceClaims: {{ . | nindent 2 }}
{{- end }}
{{- end }}
"""
LIBRARY = {
    "common/Chart.yaml": "apiVersion: v2\nname: common\ntype: library\nversion: VERSION\n",
    "common/templates/_loader.tpl": """\
{{- define "bjw-s.common.loader.init" -}}{{- end -}}
{{- define "bjw-s.common.loader.generate" -}}
{{- range $name, $controller := .Values.controllers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $.Release.Name }}-{{ with $.Values.nameOverride }}{{ . }}-{{ end }}{{ $name }}
spec:
  selector:
    matchLabels: {app: {{ $name }}}
  template:
    metadata:
      labels: {app: {{ $name }}}
    spec:
      {{- include "bjw-s.common.lib.pod.spec" (dict "root" $ "controller" $controller) | nindent 6 }}
{{- end }}
{{- end -}}
""",
    "common/templates/lib/pod/_getOption.tpl": """\
{{- define "bjw-s.common.lib.pod.getOption" -}}
{{- $value := dig .option nil (default dict .ctx.root.Values.defaultPodOptions) -}}
{{- with dig .option nil (default dict .ctx.controller.pod) }}{{ $value = . }}{{ end -}}
{{- with $value }}{{ toYaml . }}{{ end -}}
{{- end -}}
""",
    "common/templates/lib/pod/_spec.tpl": """\
{{- define "bjw-s.common.lib.pod.spec" -}}
POD_CLAIMS
{{- with (include "bjw-s.common.lib.pod.getOption" (dict "ctx" . "option" "tolerations")) }}
tolerations: {{ . | nindent 2 }}
{{- end }}
containers:
{{- range $name, $container := .controller.containers }}
  - name: {{ $name }}
    image: {{ $container.image }}
    {{- with $container.resources }}
    resources: {{ toYaml . | nindent 6 }}
    {{- end }}
    {{- with $container.env }}
    env:
      {{- range $k, $v := include "bjw-s.common.lib.container.env" . | fromYaml }}
      - {name: {{ $k }}, value: {{ tpl $v $.root | quote }}}
      {{- end }}
    {{- end }}
{{- end }}
{{- end -}}
""",
    "common/templates/lib/container/_env.tpl": """\
{{- define "bjw-s.common.lib.container.env" -}}
{{- $env := . -}}
{{ toYaml $env }}
{{- end -}}
""",
}
APP = '{{- include "bjw-s.common.loader.init" . }}\n{{ include "bjw-s.common.loader.generate" . }}\n'
VALUES = """\
# Default pod options for every controller
defaultPodOptions: {}
controllers:
  main:
    containers:
      main:
        image: busybox
        resources:
          limits:
            nvidia.com/gpu: 1
  web:
    containers:
      web:
        image: nginx
"""


def _packed(version: str, pod_claims: bool) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in LIBRARY.items():
            data = text.replace("VERSION", version).replace("POD_CLAIMS\n", POD_CLAIMS if pod_claims else "").encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _app(root: Path, version: str = "5.0.1", values: str = VALUES, files: dict[str, str] | None = None) -> Path:
    chart = chart_with(root, "app", {"templates/common.yaml": APP, "values.yaml": values, **(files or {})})
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: common\n"
        f"    version: {version}\n    repository: https://bjw-s-labs.github.io/helm-charts\n"
    )
    (chart / "charts").mkdir()
    (chart / f"charts/common-{version}.tgz").write_bytes(_packed(version, version >= "5"))
    return chart


def _fix(chart: Path, *values: Path) -> ChartOutcome:
    settings = Settings(kube_version="1.34")
    options = ChartOptions(kube_version="1.34", values_files=values)
    return run_chart(chart, options, load_rules(), settings, Target.parse("1.34"), "fix")


def test_a_gpu_in_the_defaults_of_a_bjws_chart_gets_values_dra_yaml_in_the_library_places(tmp_path: Path) -> None:
    chart = _app(tmp_path)
    library = (chart / "charts/common-5.0.1.tgz").read_bytes()
    outcome = fix_chart(chart)  # was: manual, 'that values-only migration is not automated yet'
    assert "default values (DRA values: values-dra.yaml)" in outcome.checked, outcome.checked
    assert (chart / "charts/common-5.0.1.tgz").read_bytes() == library  # the library is left as it is
    assert (chart / "templates/common.yaml").read_text() == APP
    assert "kind: ResourceClaimTemplate" in (chart / "templates/resourceclaimtemplates.yaml").read_text()
    overlay = yaml.safe_load((chart / "values-dra.yaml").read_text())
    main = overlay["controllers"]["main"]
    assert main["containers"]["main"]["resources"]["limits"] is None  # Helm deletes the chart's default
    assert main["containers"]["main"]["resources"]["claims"] == [{"name": "gpu"}]
    claim = main["pod"]["resourceClaims"][0]
    assert claim["name"] == "gpu" and claim["resourceClaimTemplateName"] in overlay["resourceClaimTemplates"]
    assert claim["resourceClaimTemplateName"].startswith("app-main-gpu-")  # the chart and its controller
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in main["pod"]["tolerations"]
    assert "web" not in overlay["controllers"]  # a controller without a device gets nothing
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1]
    assert pods["release-name-main"]["resourceClaims"] == [claim]
    assert "resourceClaims" not in pods["release-name-web"]


def test_a_gpu_values_file_gets_its_dra_variant_with_the_default_tolerations_kept(tmp_path: Path) -> None:
    values = VALUES.replace("            nvidia.com/gpu: 1\n", "            cpu: 1\n").replace(
        "defaultPodOptions: {}", "defaultPodOptions:\n  tolerations:\n    - {key: spot, operator: Exists}"
    )
    gpu = "controllers:\n  main:\n    containers:\n      main:\n        resources:\n          limits:\n"
    gpu += "            nvidia.com/gpu: 2  # two cards\n"
    chart = _app(tmp_path, values=values, files={"ci/gpu-values.yaml": gpu})
    outcome = _fix(chart, chart / "ci/gpu-values.yaml")  # was: manual, 'values-only migration is not automated yet'
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    variant = yaml.safe_load((chart / "ci/gpu-values-dra.yaml").read_text())
    pod = variant["controllers"]["main"]["pod"]
    assert pod["tolerations"][0] == {"key": "spot", "operator": "Exists"}  # the defaults' list, kept in front
    # the device key replaced in the file (a null would stay: Helm deletes only chart-default keys)
    assert variant["controllers"]["main"]["containers"]["main"]["resources"] == {"claims": [{"name": "gpu"}]}
    _, counts, pods = dra_render(chart, chart / "ci/gpu-values-dra.yaml")
    assert list(counts.values()) == [2]
    assert pods["release-name-main"]["tolerations"] == pod["tolerations"]
    assert pods["release-name-web"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert not (chart / "values-dra.yaml").exists()  # the defaults ask for no device


def test_a_bjws_library_unpacked_in_charts_gets_the_same_values_only_rewrite(tmp_path: Path) -> None:
    chart = _app(tmp_path)
    with tarfile.open(chart / "charts/common-5.0.1.tgz") as tar:
        tar.extractall(chart / "charts", filter="data")
    (chart / "charts/common-5.0.1.tgz").unlink()
    library = {p: p.read_text() for p in (chart / "charts").rglob("*.tpl")}
    # was: manual, 'no line of a helper in this chart writes the device key, ...'
    outcome = fix_chart(chart)
    assert "default values (DRA values: values-dra.yaml)" in outcome.checked, outcome.checked
    assert {p: p.read_text() for p in (chart / "charts").rglob("*.tpl")} == library
    _, counts, pods = dra_render(chart, chart / "values-dra.yaml")
    assert list(counts.values()) == [1] and pods["release-name-main"]["resourceClaims"]


def test_an_older_bjws_library_is_manual_work_naming_its_version_and_the_first_that_renders_claims(
    tmp_path: Path,
) -> None:
    outcome = _fix(_app(tmp_path, version="4.1.1"))
    assert not outcome.changes
    # was: 'the library has no values place for the resourceClaims of a pod ...', without the version it needs
    assert "pattern D (library chart common 4.1.1, packed in charts/common-4.1.1.tgz)" in outcome.manual, outcome.manual
    assert "common 4.1.1 renders no resourceClaims of a pod from values" in outcome.manual
    assert "update the dependency to common 5.0.1 or later" in outcome.manual


def test_claims_every_pod_takes_from_the_defaults_leave_the_chart_manual_with_the_reason(tmp_path: Path) -> None:
    claims = "defaultPodOptions:\n  resourceClaims:\n    - {name: shared, resourceClaimName: shared}"
    outcome = _fix(_app(tmp_path, values=VALUES.replace("defaultPodOptions: {}", claims)))
    assert not outcome.changes and not (tmp_path / "app/values-dra.yaml").exists()
    assert "common 5.0.1 has values places for it" in outcome.manual, outcome.manual
    # was: 'that values-only migration is not automated yet', with no reason
    assert "defaultPodOptions.resourceClaims names claims every pod takes" in outcome.manual
    assert outcome.findings and sum(f.rule == "chart-rewrite-unproven" for f in outcome.findings) == 1


# a chart that renders the library once per component, the component's values merged over the chart's own
COMPONENT = """\
{{- if .Values.NAME.enabled }}
{{- $ctx := deepCopy . -}}
{{- $_ := get .Values "NAME" | mergeOverwrite $ctx.Values -}}
{{- include "bjw-s.common.loader.generate" $ctx }}
{{- end }}
"""
COMPONENTS = """\
controllers: {}
server:
  enabled: true
  nameOverride: server
  controllers:
    main:
      containers:
        main:
          image: busybox
          env:
            # a value the library renders with tpl, long enough that toYaml writes it over two lines
            WORKER_URL: '{{ printf "http://%s-worker-of-the-components-chart:3003/api" .Release.Name }}'
worker:
  enabled: true
  nameOverride: worker
  controllers:
    main:
      containers:
        main:
          image: busybox
"""


def test_a_chart_rendering_the_library_per_component_gets_the_dra_values_under_the_component(tmp_path: Path) -> None:
    files = {f"templates/{name}.yaml": COMPONENT.replace("NAME", name) for name in ("server", "worker")}
    gpu = "worker:\n  controllers:\n    main:\n      containers:\n        main:\n          resources:\n"
    gpu += "            limits:\n              nvidia.com/gpu: 1\n"
    chart = _app(tmp_path, values=COMPONENTS, files={**files, "gpu.yaml": gpu})
    (chart / "templates/common.yaml").unlink()
    # was: manual, 'pattern F (another template shape): the objects are written by the library chart ...'
    outcome = _fix(chart, chart / "gpu.yaml")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    variant = yaml.safe_load((chart / "gpu-dra.yaml").read_text())
    worker = variant["worker"]["controllers"]["main"]
    resources = worker["containers"]["main"]["resources"]
    assert resources["claims"] == [{"name": "gpu"}] and not resources.get("limits")  # given after gpu.yaml
    claim = worker["pod"]["resourceClaims"][0]
    assert claim["resourceClaimTemplateName"].startswith("app-worker-main-gpu-")  # the component in the name
    assert list(variant) == ["worker", "resourceClaimTemplates"]  # nothing at the top level the server would take
    _, counts, pods = dra_render(chart, chart / "gpu-dra.yaml")
    assert list(counts.values()) == [1]
    assert pods["release-name-worker-main"]["resourceClaims"] == [claim]
    assert "resourceClaims" not in pods["release-name-server-main"]
    env = pods["release-name-server-main"]["containers"][0]["env"]
    assert env == [{"name": "WORKER_URL", "value": "http://release-name-worker-of-the-components-chart:3003/api"}]


def test_an_umbrella_over_an_app_template_fork_holding_its_renamed_library_gets_the_values_only_rewrite(
    tmp_path: Path,
) -> None:
    """An umbrella whose subchart (an app-template fork, under an alias) holds bjw-s common renamed and versioned as
    its own fork, unpacked beside its archive; the library renders the pod's resourceClaims option whatever its
    version says, and ranges over its controllers with `keys`, unsorted (documents in random order)."""
    umbrella = chart_with(
        tmp_path, "umbrella", {"values.yaml": "# the workload, filled by the orchestrator\nserving: {}\n"}
    )
    (umbrella / "Chart.yaml").write_text(
        "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n  - name: app\n    version: 0.1.0\n"
        "    repository: file://../app\n    alias: serving\n"
    )
    app = _app(umbrella / "charts", version="4.6.2", values="controllers: {}\n")
    fork = app / "charts/common-4.6.2.tgz"
    with tarfile.open(fork) as tar:
        tar.extractall(app / "charts", filter="data")
    spec = LIBRARY["common/templates/lib/pod/_spec.tpl"].replace("POD_CLAIMS\n", POD_CLAIMS)
    (app / "charts/common/templates/lib/pod/_spec.tpl").write_text(spec)  # the fork renders it before 5.0.1
    loader = app / "charts/common/templates/_loader.tpl"
    loader.write_text(
        loader.read_text().replace(
            "{{- range $name, $controller := .Values.controllers }}",
            "{{- range $name := keys .Values.controllers }}{{ $controller := get $.Values.controllers $name }}",
        )
    )
    meta = app / "charts/common/Chart.yaml"
    meta.write_text(meta.read_text().replace("name: common", "name: fork-common"))
    (app / "charts/common").rename(app / "charts/fork-common")
    fork.unlink()
    with tarfile.open(app / "charts/fork-common-4.6.2.tgz", "w:gz") as tar:  # packed beside it, the same files
        tar.add(app / "charts/fork-common", "fork-common")
    (app / "Chart.yaml").write_text((app / "Chart.yaml").read_text().replace("- name: common", "- name: fork-common"))
    gpu = "serving:\n  controllers:\n"
    gpu += "".join(
        f"    {name}:\n      containers:\n        {name}:\n          image: busybox\n" for name in ("a", "b", "c")
    )
    gpu += "          resources:\n            limits:\n              nvidia.com/gpu: 1\n"
    (umbrella / "gpu.yaml").write_text(gpu)
    # was: manual, 'pattern D (a named helper or library include): the objects are written by the library chart ...'
    outcome = _fix(umbrella, umbrella / "gpu.yaml")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    variant = yaml.safe_load((umbrella / "gpu-dra.yaml").read_text())
    pod = variant["serving"]["controllers"]["c"]["pod"]
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"].startswith("umbrella-serving-c-gpu-")
    assert not (app / "templates/resourceclaimtemplates.yaml").exists()  # the umbrella renders the claim templates
    _, counts, pods = dra_render(umbrella, umbrella / "gpu-dra.yaml")
    assert list(counts.values()) == [1]
    assert pods["release-name-c"]["resourceClaims"] == pod["resourceClaims"]
    assert "resourceClaims" not in pods["release-name-a"]


def test_proof_l_takes_a_template_s_documents_in_another_order_only_from_a_chart_that_ranges_over_unsorted_keys(
    tmp_path: Path,
) -> None:
    from dramigrate.helm.prove import same_text
    from dramigrate.helm.render import RenderedManifest
    from dramigrate.helm.renderpool import orders_at_random

    ab = [
        RenderedManifest("app/templates/common.yaml", "kind: A\n"),
        RenderedManifest("app/templates/common.yaml", "kind: B\n"),
    ]
    ba = list(reversed(ab))
    assert same_text(ab, ab, ba)  # byte for byte, the order counts
    assert same_text(ab, ab, ba, unordered=True) == ""
    assert same_text(ab, ab, [ab[0], RenderedManifest(ab[1].source, "kind: C\n")], unordered=True)  # a changed one
    loader = "{{- range $name := keys .Values.controllers }}\n---\nkind: {{ $name }}\n{{- end }}\n"
    assert orders_at_random(chart_with(tmp_path, "unsorted", {"templates/_loader.tpl": loader}))
    sorted_loader = loader.replace("keys .Values.controllers", "keys .Values.controllers | sortAlpha")
    assert not orders_at_random(chart_with(tmp_path, "sorted", {"templates/_loader.tpl": sorted_loader}))
    # a library packed in charts/ (bjw-s common 4.4.0 under yukariin's ollama chart): its loader ranges over keys
    # unsorted, and the chart's proof L failed at random, its two controllers' objects rendered in another order
    app = chart_with(tmp_path, "app", {})
    library = {"Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n", "templates/_l.tpl": loader}
    (app / "charts").mkdir()
    (app / "charts/lib-1.0.0.tgz").write_bytes(packed_chart("lib", library))
    assert orders_at_random(app)
