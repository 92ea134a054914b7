"""Rendering charts with the Helm engine embedded in helm-python-sdk: real renders of tiny charts."""

from __future__ import annotations

import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
import yaml

from dramigrate.helm.render import (
    HelmError,
    RenderedManifest,
    RenderOptions,
    _SetError,
    _SetParser,
    is_chart,
    render_chart,
    split_template_output,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
  namespace: {{ .Release.Namespace }}
spec:
  template:
    spec:
      containers:
        - name: app
          image: app
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""


def write_chart(root: Path, name: str, templates: dict[str, str], values: str = "", chart_yaml: str = "") -> Path:
    chart = root / name
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n{chart_yaml}")
    (chart / "values.yaml").write_text(values)
    for path, text in templates.items():
        (chart / "templates" / path).parent.mkdir(parents=True, exist_ok=True)
        (chart / "templates" / path).write_text(text)
    return chart


def package(chart: Path, destination: Path) -> Path:
    archive = destination / f"{chart.name}-0.1.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(chart, arcname=chart.name)
    return archive


def only(manifests: list[RenderedManifest], kind: str) -> dict:
    documents = [yaml.safe_load(m.text) for m in manifests]
    matches = [d for d in documents if d and d.get("kind") == kind]
    assert len(matches) == 1, documents
    return matches[0]


def gpu_limit(manifests: list[RenderedManifest]) -> object:
    container = only(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return container["resources"]["limits"]["nvidia.com/gpu"]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    values = "resources:\n  limits:\n    nvidia.com/gpu: 1\n"
    return write_chart(tmp_path, "app", {"deployment.yaml": DEPLOYMENT}, values)


# --- values ----------------------------------------------------------------------------------------


def test_renders_chart_defaults_with_source_path(app: Path) -> None:
    manifests = render_chart(app, RenderOptions(release_name="demo", namespace="ml"))
    assert [m.source for m in manifests] == ["app/templates/deployment.yaml"]
    deployment = only(manifests, "Deployment")
    assert deployment["metadata"] == {"name": "demo-app", "namespace": "ml"}
    assert gpu_limit(manifests) == 1


def test_values_files_merge_in_order_and_set_wins(app: Path, tmp_path: Path) -> None:
    first = tmp_path / "first.yaml"
    first.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n    cpu: 1\n")
    second = tmp_path / "second.yaml"
    second.write_text("resources:\n  limits:\n    nvidia.com/gpu: 3\n")
    with_files = RenderOptions(values_files=(first, second))
    manifests = render_chart(app, with_files)
    assert gpu_limit(manifests) == 3
    limits = only(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert limits["limits"]["cpu"] == 1

    with_set = RenderOptions(values_files=(first, second), set_values=(r"resources.limits.nvidia\.com/gpu=4",))
    assert gpu_limit(render_chart(app, with_set)) == 4


def test_set_string_keeps_a_string(app: Path) -> None:
    options = RenderOptions(set_string_values=(r"resources.limits.nvidia\.com/gpu=2",))
    assert gpu_limit(render_chart(app, options)) == "2"


def test_set_edits_a_list_from_a_values_file_like_helm(app: Path, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n")
    options = RenderOptions(values_files=(values,), set_values=("tolerations[0].effect=NoSchedule",))
    pod = only(render_chart(app, options), "Deployment")["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_bad_values_input_is_a_helm_error(app: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("resources: [\n")
    with pytest.raises(HelmError, match="failed to parse .*broken.yaml"):
        render_chart(app, RenderOptions(values_files=(broken,)))
    with pytest.raises(HelmError, match="cannot read values file"):
        render_chart(app, RenderOptions(values_files=(tmp_path / "absent.yaml",)))
    with pytest.raises(HelmError, match='failed parsing --set data: key "resources" has no value'):
        render_chart(app, RenderOptions(set_values=("resources",)))
    with pytest.raises(HelmError, match="release name"):
        render_chart(app, RenderOptions(release_name="Not_Valid"))


SET_EXPRESSIONS = [
    "a=1,b.c=two",
    r"resources.limits.nvidia\.com/gpu=2",
    r"a\.b=c\,d",
    "list={a,b,c}",
    "list={a,b},next=1",
    "a={}",
    "a[1]=x",
    "a[1].b=2,a[0]=z",
    "a[0][1]=x",
    "a[0]",
    "a.",
    "a=",
    "a=1,",
    "n=-0,m=+5,o=007,p=9223372036854775808,q=NULL,r=TRUE,s=False,t=0",
    "a.b=1,a=2",
    "x.y[0]",
    "a",
    "a.b",
    ",a",
    "a={1,2",
    "a={1,2}x",
    "a=1,a.b=2",
    "a[0]=1,a[0][0]=1",
    "a=1,a[0]=1",
    "a[-1]=1",
    "a[x]=1",
    "a[1",
    "a[99999]=1",
    "a[0]x=1",
    ".a=1",
    "a.[0]=1",
    ".".join("k" * 31) + "=1",
    "a=b=c",
    "a=1,,b=2",
    "a=b\\",
    "a\\",
    r"a={x\,y,z}",
    "a={x}y=1",
    "a[0][1].b=1,a[0][0]=2",
    "a[0].b[1]=2,a[0].c=3",
    "a=falſe,b=nuLL,c=1e3,d=0x1F,e= 5",
    "a.b.c=1,a.b.d=2,a.e[2]=x,a.e[0]=y",
]


@pytest.mark.parametrize("expression", SET_EXPRESSIONS)
def test_set_parser_agrees_with_helms_own(expression: str) -> None:
    import helm_python

    for as_string, native in ((False, helm_python.parse_set_string), (True, helm_python.parse_set_string_values)):
        try:
            expected: object = native(expression)
        except helm_python.HelmError as exc:
            expected = f"error: {exc}"
        ours: dict = {}
        try:
            _SetParser(expression, as_string).parse_into(ours)
            actual: object = ours
        except _SetError as exc:
            actual = f"error: {exc}"
        assert actual == expected


# --- charts and dependencies ---------------------------------------------------------------------------

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}\ndata:\n  msg: {{ .Values.msg }}\n"


def test_subcharts_from_folders_and_archives_render(tmp_path: Path) -> None:
    parent = write_chart(tmp_path, "parent", {"cm.yaml": CONFIGMAP}, "msg: parent\nfolder:\n  msg: set-by-parent\n")
    write_chart(parent / "charts", "folder", {"cm.yaml": CONFIGMAP}, "msg: folder\n")
    packed = write_chart(tmp_path / "build", "packed", {"cm.yaml": CONFIGMAP}, "msg: packed\n")
    package(packed, parent / "charts")

    manifests = render_chart(parent, RenderOptions())
    assert [m.source for m in manifests] == [
        "parent/charts/folder/templates/cm.yaml",
        "parent/charts/packed/templates/cm.yaml",
        "parent/templates/cm.yaml",
    ]
    assert [yaml.safe_load(m.text)["data"]["msg"] for m in manifests] == ["set-by-parent", "packed", "parent"]

    archive = package(parent, tmp_path)
    assert is_chart(archive)
    assert render_chart(archive, RenderOptions()) == manifests


def test_declared_dependency_missing_from_charts_is_refused(tmp_path: Path) -> None:
    dependencies = textwrap.dedent("""\
        dependencies:
          - name: present
            version: 0.1.0
            alias: renamed
          - name: absent
            version: 0.1.0
            condition: absent.enabled
        """)
    values = "msg: hi\nabsent:\n  enabled: false\n"
    chart = write_chart(tmp_path, "app", {"cm.yaml": CONFIGMAP}, values, dependencies)
    write_chart(chart / "charts", "present", {"cm.yaml": CONFIGMAP}, "msg: sub\n")
    # The condition is false, yet helm template refuses, as it checks every declared dependency.
    with pytest.raises(HelmError, match=r"`helm dependency build`.*missing in charts/ directory: absent$"):
        render_chart(chart, RenderOptions())

    write_chart(chart / "charts", "absent", {"cm.yaml": CONFIGMAP}, "msg: off\n")
    sources = [m.source for m in render_chart(chart, RenderOptions())]
    assert sources == ["app/charts/renamed/templates/cm.yaml", "app/templates/cm.yaml"]


def test_a_hidden_fail_message_names_the_template_line_that_failed(tmp_path: Path) -> None:
    """A chart's own check that fails with a printf of a value (`fail (printf "... %s" $name)`) is not shown, as it
    quotes a value; the message then quotes the template line that failed, which is the chart's code, so a user
    sees which check it was. A value that holds a secret still never appears."""
    check = (
        "{{- $name := .Values.gpu.resourceName }}\n"
        "{{- if lt (int (index .Values.gpu.limits $name | default 0)) 1 }}"
        '{{ fail (printf "GPU templates require limits.%s >= 1" $name) }}{{ end }}\n'
    )
    values = "gpu:\n  resourceName: s3cr3t-token/gpu\n  limits: {}\n"
    chart = write_chart(tmp_path, "train", {"check.yaml": check}, values)
    with pytest.raises(HelmError) as failed:
        render_chart(chart, RenderOptions())
    message = str(failed.value)
    assert "train/templates/check.yaml:2" in message
    assert "the template line reads: {{- if lt (int (index .Values.gpu.limits $name | default 0)) 1 }}" in message
    assert "s3cr3t" not in message


def test_library_chart_is_not_installable(tmp_path: Path) -> None:
    chart = write_chart(tmp_path, "lib", {"_x.tpl": '{{ define "x" }}x{{ end }}'}, "", "type: library\n")
    with pytest.raises(HelmError, match="library charts are not installable"):
        render_chart(chart, RenderOptions())


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("a: {{ .Values.x | quote\n", r"parse error at \(app/templates/bad.yaml:2\): unclosed action"),
        ('{{ fail "no GPU type" }}\n', r"execution error at \(app/templates/bad.yaml:1:3\): no GPU type"),
        ("{{ .Values.x.y.z }}\n", r"app/templates/bad.yaml:1:10"),
        ("a: [\n", r"YAML parse error on app/templates/bad.yaml"),
        ("just text\n", r"YAML parse error on app/templates/bad.yaml"),
    ],
)
def test_template_errors_are_helms_messages(tmp_path: Path, template: str, message: str) -> None:
    chart = write_chart(tmp_path, "app", {"bad.yaml": template, "good.yaml": CONFIGMAP}, "msg: hi\n")
    with pytest.raises(HelmError, match=message) as caught:
        render_chart(chart, RenderOptions())
    error = caught.value
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_an_integer_from_set_that_helm_reads_as_int64_is_named_in_the_error(tmp_path: Path) -> None:
    """`--set maxWorkers=1` is an int64 for Helm, so `gt .Values.maxWorkers 0` renders (a Ray chart's autoscaler);
    the embedded engine gets values as JSON, a float64, and the comparison fails. The error now names the --set
    integer and --helm-binary (was: Helm's message alone, for a chart helm renders)."""
    template = "{{- if gt .Values.maxWorkers 0 }}\nworkers: {{ .Values.maxWorkers }}\n{{- end }}\n"
    chart = write_chart(tmp_path, "ray", {"workers.yaml": template}, "maxWorkers: 0\n")
    with pytest.raises(HelmError, match="float64 and int") as caught:
        render_chart(chart, RenderOptions(set_values=("image=ray,maxWorkers=1",)))
    assert "--set maxWorkers=1: " in str(caught.value) and "--helm-binary" in str(caught.value), caught.value


def test_missing_chart_is_a_helm_error(tmp_path: Path) -> None:
    with pytest.raises(HelmError, match="no such file"):
        render_chart(tmp_path / "nothing", RenderOptions())


# --- capabilities ---------------------------------------------------------------------------------

CAPABILITIES = """\
kube: {{ .Capabilities.KubeVersion.Version | quote }}
foo: {{ .Capabilities.APIVersions.Has "example.com/v1/Foo" }}
dra: {{ .Capabilities.APIVersions.Has "resource.k8s.io/v1" }}
rct: {{ .Capabilities.APIVersions.Has "resource.k8s.io/v1/ResourceClaimTemplate" }}
"""


def test_capabilities_are_what_the_caller_asked_for(tmp_path: Path) -> None:
    chart = write_chart(tmp_path, "caps", {"caps.yaml": CAPABILITIES})
    asked = RenderOptions(kube_version="1.36", api_versions=("example.com/v1/Foo",))
    [rendered] = render_chart(chart, asked)
    # Helm 4 keeps the version as given (with a "v"); every compiled-in group/version is served.
    assert yaml.safe_load(rendered.text) == {"kube": "v1.36", "foo": True, "dra": True, "rct": False}

    [rendered] = render_chart(chart, RenderOptions(kube_version="v1.33.2", api_versions=("a/v1,example.com/v1/Foo",)))
    assert yaml.safe_load(rendered.text)["kube"] == "v1.33.2"
    assert yaml.safe_load(rendered.text)["foo"] is True

    [rendered] = render_chart(chart, RenderOptions())
    assert yaml.safe_load(rendered.text)["foo"] is False


# --- output like helm template ------------------------------------------------------------------------

MIXED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
---
# a comment-only document is printed by helm too
---

---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
"""
HOOKS = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: "pre-install, pre-upgrade"}
---
apiVersion: v1
kind: Pod
metadata:
  name: test
  annotations: {helm.sh/hook: test}
---
apiVersion: v1
kind: Secret
metadata:
  name: unknown-hook
  annotations: {helm.sh/hook: on-tuesday}
"""


def test_output_order_hooks_and_notes_like_helm_template(tmp_path: Path) -> None:
    templates = {
        "a-mixed.yaml": MIXED,
        "b-service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
        "c-hooks.yaml": HOOKS,
        "d-custom.yaml": "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\n",
        "empty.yaml": "{{- if false }}\nkind: Nothing\n{{- end }}\n",
        "NOTES.txt": "Thanks for installing {{ .Release.Name }}\n",
        "_helpers.tpl": '{{ define "x" }}x{{ end }}',
    }
    chart = write_chart(tmp_path, "app", templates)
    manifests = render_chart(chart, RenderOptions())
    kinds = [(m.source.removeprefix("app/templates/"), (yaml.safe_load(m.text) or {}).get("kind")) for m in manifests]
    assert kinds == [
        ("a-mixed.yaml", "ConfigMap"),
        ("b-service.yaml", "Service"),
        ("a-mixed.yaml", "Deployment"),
        ("a-mixed.yaml", None),  # unknown kinds last, sorted by kind ("" first)
        ("d-custom.yaml", "Foo"),
        ("c-hooks.yaml", "Pod"),  # then hooks, by kind too; the unknown hook is left out
        ("c-hooks.yaml", "Job"),
    ]
    assert all(m.text.endswith("\n") and m.text.strip() for m in manifests)
    # Helm's splitter leaves the "---" after an empty document in the text, and prints it.
    assert manifests[0].text == "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


def test_split_template_output() -> None:
    output = textwrap.dedent("""\
        ---
        # Source: app/templates/service.yaml
        apiVersion: v1
        kind: Service
        ---
        # Source: app/templates/empty.yaml

        ---
        # Source: app/templates/deployment.yaml
        apiVersion: apps/v1
        kind: Deployment

        ---
        # Source: app/templates/hook.yaml
        kind: Job
        """)
    assert split_template_output(output) == [
        RenderedManifest("app/templates/service.yaml", "apiVersion: v1\nkind: Service\n"),
        RenderedManifest("app/templates/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\n"),
        RenderedManifest("app/templates/hook.yaml", "kind: Job\n"),
    ]
    assert split_template_output("") == []


def test_helm_binary_command_and_errors(app: Path, tmp_path: Path) -> None:
    # Not Helm: a stand-in that echoes its arguments, to check the command line and the error path.
    fake = tmp_path / "helm"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "if '--set=fail' in sys.argv:\n"
        "    sys.exit(print('Error: boom in app/templates/x.yaml', file=sys.stderr) or 1)\n"
        "print('---\\n# Source: app/templates/args.yaml\\nargs: ' + json.dumps(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    options = RenderOptions(
        release_name="demo",
        namespace="ml",
        values_files=(Path("v.yaml"),),
        set_values=("a=1",),
        set_string_values=("b=-2",),
        kube_version="1.36",
        api_versions=("example.com/v1/Foo",),
        helm_binary=fake,
    )
    [manifest] = render_chart(app, options)
    assert manifest.source == "app/templates/args.yaml"
    args = yaml.safe_load(manifest.text)["args"]
    chart = Path(args.pop(2))  # helm reads a private copy of the chart (the sandbox), never the folder itself
    assert chart.is_absolute() and chart.name == app.name and chart != app.absolute()
    assert args == [
        "template",
        "demo",
        "--namespace=ml",
        "--values=v.yaml",
        "--set=a=1",
        "--set-string=b=-2",
        "--kube-version=1.36",
        "--api-versions=example.com/v1/Foo",
    ]
    with pytest.raises(HelmError, match="^boom in app/templates/x.yaml$"):
        render_chart(app, RenderOptions(set_values=("fail",), helm_binary=fake))
    with pytest.raises(HelmError, match="cannot run"):
        render_chart(app, RenderOptions(helm_binary=tmp_path / "no-helm"))


def test_is_chart(app: Path, tmp_path: Path) -> None:
    assert is_chart(app)
    assert is_chart(package(app, tmp_path))
    assert not is_chart(app / "templates")
    assert not is_chart(tmp_path / "absent.tgz")
    (tmp_path / "not-a-chart.tgz").write_bytes(b"not gzip")
    assert not is_chart(tmp_path / "not-a-chart.tgz")
    other = tmp_path / "other"
    (other / "x").mkdir(parents=True)
    (other / "x" / "values.yaml").write_text("a: 1\n")
    with tarfile.open(tmp_path / "other.tgz", "w:gz") as tar:
        tar.add(other / "x", arcname="x")
    assert not is_chart(tmp_path / "other.tgz")


# --- the shared corpus ----------------------------------------------------------------------------

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS}")


@needs_corpus
def test_corpus_ollama_gpu_deployment() -> None:
    options = RenderOptions(set_values=("ollama.gpu.enabled=true",), kube_version="1.36")
    manifests = render_chart(CORPUS / "ollama-helm", options)
    assert gpu_limit(manifests) == 1
    assert [m.source for m in manifests if "kind: Deployment" in m.text] == ["ollama/templates/deployment.yaml"]


@needs_corpus
def test_corpus_chart_without_vendored_dependencies_is_refused() -> None:
    with pytest.raises(HelmError, match="helm dependency build.*kube-prometheus-stack, prometheus-adapter"):
        render_chart(CORPUS / "vllm-production-stack" / "helm", RenderOptions())
