"""Hostile inputs of the thirteenth sweep (issue 11's checker, inputs not in the repo before): each beside good
files, which are still migrated, while the bad one is named with file:line and left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

LONG = "9" * 5000  # past Python's int-string limit (4300 digits), far past int64


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("count.yaml", ONE_GPU_POD.format(name="p").replace("gpu: 1", f"gpu: {LONG}"), 11),
        ("priority.yaml", ONE_GPU_POD.format(name="p").replace("spec:\n", f"spec:\n  priority: {LONG}\n"), 6),
        (
            "pod.json",
            json.dumps(yaml.safe_load(ONE_GPU_POD.format(name="p")), indent=1).replace(": 1", f": {LONG}"),
            14,
        ),
        ("kustomization.yaml", f"resources:\n- good.yaml\nreplicas:\n- name: good\n  count: {LONG}\n", 5),
    ],
)
def test_an_integer_too_long_for_python_is_named_at_its_line_in_own_words(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    """Python's int() refuses more than 4300 digits: the message was its own hint ("Exceeds the limit (4300
    digits) ... use sys.set_int_max_str_digits()") at line 1, or an internal error for a kustomization."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / name).write_text(text)

    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2, err
    assert f"{name}:{line}:" in err and "an integer of 5,000 digits, too long to read" in err, err
    assert "set_int_max_str_digits" not in err and "internal error" not in err and "Traceback" not in err
    assert (tmp_path / name).read_text() == text
    if name != "kustomization.yaml":  # a kustomization's resources are its own
        assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_a_long_integer_in_a_chart_values_file_or_a_baseline_is_no_internal_error(tmp_path: Path) -> None:
    chart = chart_with(
        tmp_path,
        "app",
        {
            "templates/pod.yaml": ONE_GPU_POD.format(name="{{ .Release.Name }}").replace(
                "gpu: 1", "gpu: {{ .Values.gpus }}"
            ),
            "values.yaml": f"gpus: 1\nunused: {LONG}\n",
        },
    )
    code, out, err = run_dramigrate(["lint", chart], cwd=tmp_path)
    assert code == 1 and "legacy-device-request" in out + err and "internal error" not in out + err, out + err

    (tmp_path / "base.json").write_text('{"version": 1,\n "findings": ' + LONG + "}\n")
    code, _, err = run_dramigrate(["lint", chart, "--baseline", "base.json"], cwd=tmp_path)

    assert code == 2 and "base.json:2:14: the baseline holds an integer of 5,000 digits" in err, err
    assert "set_int_max_str_digits" not in err


@pytest.mark.parametrize("wrap", [False, True])
def test_fix_of_json_on_standard_input_writes_json(wrap: bool) -> None:
    """`kubectl get -o json | dramigrate fix -` wrote the JSON object back as YAML flow text followed by a YAML
    ResourceClaimTemplate (neither JSON nor what the file form gives); a v1 List took a List inside a List."""
    pod = yaml.safe_load(ONE_GPU_POD.format(name="p"))
    given = {"apiVersion": "v1", "kind": "List", "items": [pod]} if wrap else pod

    code, out, err = run_dramigrate(["fix", "-"], stdin=json.dumps(given, indent=4) + "\n")

    assert code == 0, err
    written = json.loads(out)
    assert written["kind"] == "List"
    assert [i["kind"] for i in written["items"]] == ["Pod", "ResourceClaimTemplate"]
    assert (
        written["items"][0]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
        == (written["items"][1]["metadata"]["name"])
    )
    assert out.startswith('{\n    "apiVersion"')  # indented as given


def test_yaml_on_standard_input_that_starts_with_a_flow_mapping_stays_yaml() -> None:
    given = "{apiVersion: v1, kind: Pod, metadata: {name: p}}\n---\n" + ONE_GPU_POD.format(name="q")

    code, out, err = run_dramigrate(["fix", "-"], stdin=given)

    assert code == 0, err
    assert (
        out.startswith("{apiVersion: v1, kind: Pod, metadata: {name: p}}\n---\n")
        and "kind: ResourceClaimTemplate" in out
    )


SHARED_SPEC_LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: a}
  spec:
    selector: {matchLabels: {app: a}}
    template:
      metadata: {labels: {app: a}}
      spec: &pod
        containers:
        - name: c
          image: x
          resources:
            limits:
              nvidia.com/gpu: 1
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: b}
  spec:
    selector: {matchLabels: {app: b}}
    template:
      metadata: {labels: {app: b}}
      spec: *pod
"""


def test_lint_says_what_fix_does_with_pod_templates_sharing_one_spec(tmp_path: Path) -> None:
    """Two workloads whose pod spec is one anchored node: lint called both requests fixable, while fix refused the
    file (rewrite-invalid, nothing written). Both now give the same findings, none fixable, the refusal among them,
    and the findings of the file's other documents."""
    text = SHARED_SPEC_LIST + "---\n" + ONE_GPU_POD.format(name="after")
    (tmp_path / "shared.yaml").write_text(text)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    def findings(command: str) -> list[tuple[str, int, str, bool]]:
        code, out, err = run_dramigrate([command, "shared.yaml", "--format", "json"], cwd=tmp_path)
        assert code == (0 if command == "diff" else 1), err  # diff fails only with --check
        return [
            (f["rule"], f["line"], f["name"], f["fixable"] or f["fixed"] or f["wouldFix"])
            for f in json.loads(out)["findings"]
        ]

    linted = findings("lint")
    assert linted == findings("diff") == findings("fix")
    assert ("rewrite-invalid", 11, "b", False) in linted
    assert {(rule, name) for rule, _, name, _ in linted} >= {("legacy-device-request", n) for n in "ab"}
    assert ("legacy-device-request", 37, "after", False) in linted
    assert not any(fixable for *_, fixable in linted)
    assert (tmp_path / "shared.yaml").read_text() == text


def test_a_chart_template_that_renders_an_alias_bomb_is_named_not_expanded(tmp_path: Path) -> None:
    """A static template holding nine aliases of nine aliases (9**9 values once expanded): lint took 3 s, but diff
    and fix ran past 3 minutes expanding it in the proof's comparison of renders. The chart is bad input, nothing
    of it is said to be fixed, and the manifest beside it is migrated."""
    bomb = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
    )
    template = ONE_GPU_POD.format(name="{{ .Release.Name }}").replace("gpu: 1", "gpu: {{ .Values.gpus }}")
    chart_with(
        tmp_path, "app", {"templates/pod.yaml": template, "templates/bomb.yaml": bomb, "values.yaml": "gpus: 1\n"}
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path, timeout=60)

    assert code == 2, err
    assert "bad input app: a rendered document expands past 2,000,000 values through its YAML aliases" in err, err
    assert not [line for line in (out + err).splitlines() if line.startswith("app/") and "(fixed)" in line]
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()
    assert "{{ .Values.gpus }}" in (tmp_path / "app" / "templates" / "pod.yaml").read_text()


@pytest.mark.parametrize(
    ("rel", "data"),
    [
        ("Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n".encode("utf-16")),  # Helm reads it
        (
            "templates/pod.yaml",
            ONE_GPU_POD.format(name="{{ .Release.Name }}").replace("app:1", "caf\xe9").encode("latin-1"),
        ),
    ],
)
def test_a_chart_file_that_is_not_utf8_is_named_not_an_internal_error(tmp_path: Path, rel: str, data: bytes) -> None:
    chart = chart_with(tmp_path, "app", {"templates/pod.yaml": ONE_GPU_POD.format(name="{{ .Release.Name }}")})
    (chart / rel).write_bytes(data)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2, err
    assert f"bad input app/{rel}: not UTF-8" in err and "internal error" not in out + err, err
    assert (chart / rel).read_bytes() == data
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_a_nul_byte_is_named_at_its_line(tmp_path: Path) -> None:
    """The message named the file only; in a 30 MB manifest the user could not find the byte."""
    text = ONE_GPU_POD.format(name="p").replace("image: app:1", "image: app\0:1")
    (tmp_path / "nul.yaml").write_text(text)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2 and "nul.yaml:8:15: file contains NUL bytes" in err, err
    assert (tmp_path / "nul.yaml").read_text() == text
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_a_long_integer_in_pyproject_settings_is_named_at_its_line(tmp_path: Path) -> None:
    """tomllib's int() raised Python's ValueError: `internal error: ValueError: Exceeds the limit (4300 digits)`."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(f"[tool.dramigrate]\nmax-file-size = {LONG}\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["lint", "."], cwd=tmp_path)

    assert code == 2 and "pyproject.toml:2:17: invalid TOML: an integer of 5,000 digits" in err, err
    assert "internal error" not in err and "set_int_max_str_digits" not in err


@pytest.mark.parametrize(
    ("padding", "message"),
    [
        ("  annotations:\n    a: " + "x" * (5 << 20) + "\n", "this document is 5.0 MiB, larger than any object"),
        (
            "  annotations: {" + ", ".join(f"k{i}: v" for i in range(25_000)) + "}\n",
            "this document holds more than 20,000 values",
        ),
    ],
)
def test_lint_says_fix_will_not_rewrite_a_workload_past_its_limits(tmp_path: Path, padding: str, message: str) -> None:
    """A GPU workload fix refuses to rewrite (larger than Kubernetes stores, or more values than fix rewrites in
    time) was `(fixable)` for lint, exit 1, while fix named it as bad input, exit 2."""
    (tmp_path / "big.yaml").write_text(
        ONE_GPU_POD.format(name="big").replace("  name: big\n", "  name: big\n" + padding)
    )

    for command in ("lint", "fix"):
        code, out, err = run_dramigrate([command, "big.yaml"], cwd=tmp_path)

        assert code == 2, out + err
        assert f"big.yaml:1: {message}" in out + err and "(fixable)" not in out + err


def test_a_file_not_written_lists_nothing_as_fixed(tmp_path: Path) -> None:
    """A file whose second document is bad input (a GPU Job without a name) was not written, yet fix printed
    `fixed bad.yaml: ...` for each change of its first document."""
    job = ONE_GPU_POD.format(name="x").replace("kind: Pod\nmetadata:\n  name: x\n", "kind: Pod\nmetadata: {}\n")
    text = ONE_GPU_POD.format(name="first") + "---\n" + job
    (tmp_path / "bad.yaml").write_text(text)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", "."], cwd=tmp_path)

    assert code == 2 and "bad input bad.yaml:" in err and "fixed good.yaml" in err, err
    assert "fixed bad.yaml" not in err
    assert (tmp_path / "bad.yaml").read_text() == text
